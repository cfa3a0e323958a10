"""What a user reads matches what the program does: the isletune binary as a user runs it.

- Every --help ends with the exit-code table, and that table is exactly the one of
  src/common/exit_codes.hpp, which is the only place exit codes are written in the code.
- No help text claims that a family of the space cannot be built.
- `report --json` and `space --json` parse back and agree with the text output.
- `report` and `isletune-analyze summary` agree on one trace (cache hits, migrants,
  measured evaluations, generations, best).
- `report --top K` lists the K fastest distinct settings; bad K is one sentence, exit 2.
- The progress line shows the share of the budget spent and an ETA.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("ISLETUNE_SOURCE", Path(__file__).resolve().parents[2]))
BIN = os.environ.get("ISLETUNE_BIN", str(SOURCE / "build" / "bin" / "isletune"))
DATA = SOURCE / "tests" / "data"
REAL_RUN = SOURCE / "docs" / "data" / "h200-x2-star2d2r"  # 2 x H200, cache hits and migrants
COMMANDS = ("run", "resume", "space", "report", "export", "measure")

if not Path(BIN).is_file():
    pytest.skip(f"{BIN} is not built", allow_module_level=True)


def isletune(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300, **kw)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def analyze(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SOURCE / "analysis"))
    proc = subprocess.run([sys.executable, "-m", "isletune_analysis", *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def exit_code_table() -> dict[int, str]:
    """{code: meaning} as src/common/exit_codes.hpp declares them."""
    text = (SOURCE / "src" / "common" / "exit_codes.hpp").read_text()
    values = {m[1]: int(m[2]) for m in re.finditer(r"(kExit\w+) = (\d+)", text)}
    table = re.search(r"kExitCodes\[\] = \{(.*?)\n\};", text, re.S)[1]
    entries = re.findall(r"\{(kExit\w+),\s*((?:\"[^\"]*\"\s*)+)\}", table)
    return {values[name]: "".join(re.findall(r"\"([^\"]*)\"", meaning))
            for name, meaning in entries}


def listed_exit_codes(help_text: str) -> dict[int, str]:
    """The `exit codes:` block at the end of a --help text."""
    assert "\nexit codes:\n" in help_text, help_text
    block = help_text.split("\nexit codes:\n", 1)[1]
    return {int(m[1]): m[2] for m in re.finditer(r"^  (\d+)  (.*)$", block, re.M)}


# --- help texts ----------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_lists_exactly_the_exit_codes_of_the_code(command):
    table = exit_code_table()
    assert sorted(table) == [0, 1, 2, 3]
    proc = isletune(command, "--help")
    assert proc.stdout.startswith(f"usage: isletune {command}")
    assert listed_exit_codes(proc.stdout) == table


def test_main_help_lists_every_command_and_the_exit_codes():
    out = isletune("--help").stdout
    for command in COMMANDS:
        assert re.search(rf"^  {command} ", out, re.M), command
    assert listed_exit_codes(out) == exit_code_table()
    unknown = isletune("frobnicate", check=False)
    assert unknown.returncode == 2
    assert all(c in unknown.stderr for c in COMMANDS)


def test_exit_codes_are_written_only_in_their_home():
    """No literal exit status in the code paths that end the program: they use the
    names of exit_codes.hpp (so the table the help prints is the one the code uses)."""
    literal = re.compile(r"return [1-9];|exit_code = \d|abort\(\d|std::exit\([1-9]\)")
    files = [*(SOURCE / "src" / "cli").glob("*.cpp"), SOURCE / "src" / "run" / "rank_run.cpp"]
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert not literal.search(line), f"{path}:{number}: {line.strip()}"


def test_no_help_claims_an_unsupported_family():
    """The CUDA code generator builds every valid setting (`measure` draws from the whole
    space with cuda); no help text may say otherwise."""
    negative = re.compile(r"not implement|does not build|cannot build|not yet|unsupported|"
                          r"part-2 parameter", re.I)
    for command in COMMANDS:
        text = isletune(command, "--help").stdout
        assert not negative.search(text), f"{command} --help: {negative.search(text)[0]}"
    measure = isletune("measure", "--help").stdout
    assert "With cuda every valid setting" in measure
    for family in ("streaming", "retiming", "prefetch", "merging", "temporal"):
        assert family in measure, family


# --- --json --------------------------------------------------------------------------


def test_space_json_parses_back_and_agrees_with_the_text():
    config = str(SOURCE / "config" / "examples" / "replay-star2d1r.yaml")
    doc = json.loads(isletune("space", config, "--json").stdout)
    text = isletune("space", config).stdout
    assert doc["stencil"]["name"] == "star2d1r" and doc["grid"][:2] == [4096, 4096]
    assert len(doc["parameters"]) == 18 and doc["constraints"]
    assert sum(o["valid_settings"] for o in doc["ocs"]) == doc["size"]["valid_settings"]
    assert sum(o["distinct_kernels"] for o in doc["ocs"]) == doc["size"]["distinct_kernels"]
    size = re.search(r"space size: ~?([\d.e+]+) valid settings, ~?([\d.e+]+) distinct kernels "
                     r"in (\d+) OCs", text)
    assert float(size[1]) == pytest.approx(doc["size"]["valid_settings"], rel=1e-5)
    assert float(size[2]) == pytest.approx(doc["size"]["distinct_kernels"], rel=1e-5)
    assert int(size[3]) == doc["size"]["ocs"] == len(doc["ocs"])
    for oc in doc["ocs"]:
        assert re.search(rf"^\s+{oc['oc']} {re.escape(oc['name'])}\s+~?{oc['valid_settings']:.0f}"
                         rf"\s+~?{oc['distinct_kernels']:.0f}$", text, re.M), oc


def test_report_json_parses_back_and_agrees_with_the_text():
    doc = json.loads(isletune("report", str(REAL_RUN), "--json", "--top", "3").stdout)
    text = isletune("report", str(REAL_RUN)).stdout
    ev = doc["evaluations"]
    assert f"evaluations: {ev['measured']} measured, {ev['cache_hits']} cache hits, " \
           f"{ev['migrants']} migrants" in text
    assert doc["result"]["stop_reason"] == "mcr"
    assert f"after {doc['result']['generations']} generations" in text
    assert [g["generation"] for g in doc["generations"]] == list(range(doc["last_generation"] + 1))
    assert sum(g["cache_hits"] for g in doc["generations"]) == ev["cache_hits"]
    top = doc["top"]
    assert len(top) == 3 and [t["median_ms"] for t in top] == sorted(t["median_ms"] for t in top)
    assert top[0]["median_ms"] == pytest.approx(doc["result"]["best"]["median_ms"])


def test_report_top_k_and_failure_messages():
    dataset = str(DATA / "synthetic-star2d1r.h5")  # failures of every status
    doc = json.loads(isletune("report", dataset, "--json", "--top", "5").stdout)
    assert len(doc["top"]) == 5 and len({t["key"] for t in doc["top"]}) == 5
    failed = {f["status"]: f for f in doc["failures"]}
    assert set(failed) == set(doc["evaluations"]["by_status"]) - {"ok"}
    for f in failed.values():
        assert f["count"] == doc["evaluations"]["by_status"][f["status"]]
        assert 1 <= len(f["messages"]) <= 3
        assert sum(m["count"] for m in f["messages"]) <= f["count"]
        assert all(m["message"] for m in f["messages"])
    text = isletune("report", dataset, "--top", "5").stdout
    assert "top 5 distinct verified settings:" in text
    assert re.search(r"^\s+\d+ x \S", text, re.M)  # a failure message with its count
    for bad in ("0", "-1", "x"):
        proc = isletune("report", dataset, "--top", bad, check=False)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--top" in proc.stderr


# --- report and summary on one trace -------------------------------------------------


def summary_csv(trace: str) -> tuple[dict, list[dict]]:
    blocks = [b for b in analyze("summary", "--csv", trace).stdout.strip().split("\n\n")]
    run = next(csv.DictReader(io.StringIO(blocks[0])))
    islands = list(csv.DictReader(io.StringIO(blocks[1])))
    return run, islands


def _mpirun() -> list[str]:
    exe = os.environ.get("MPIEXEC") or shutil.which("mpirun") or "mpirun"
    cmd = [exe, "-q", "--oversubscribe", "-np", "2"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory) -> Path:
    """A fresh 2-rank replay run on the real H200 dataset with a time budget."""
    base = tmp_path_factory.mktemp("replay")
    config = base / "replay.yaml"
    config.write_text(
        "stencil: star2d1r\ngrid: [4096, 4096]\n"
        "space:\n  streaming: {values: [0]}\n  tdeg: {values: [1]}\n"
        "  tbx: {values: [8, 16, 32, 64, 128, 256, 512]}\n"
        "  tby: {values: [1, 2, 4, 8, 16, 32, 64]}\n"
        "  mfx: {values: [1, 2, 4, 8]}\n  mfy: {values: [1, 2, 4, 8]}\n"
        "  ufx: {values: [1, 2, 4]}\n  ufy: {values: [1, 2, 4]}\n"
        f"evaluator: {{backend: replay, dataset: {DATA / 'h200-star2d1r.h5'}}}\n"
        "budget: {time_budget_s: 30, max_generations: 60}\nseed: 5\n")
    out = base / "run"
    proc = subprocess.run([*_mpirun(), BIN, "run", str(config), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (base / "stdout.txt").write_text(proc.stdout)
    return out


@pytest.mark.parametrize("which", ["real", "replay"])
def test_report_and_summary_agree_on_one_trace(which, replay_run):
    trace = str(REAL_RUN if which == "real" else replay_run)
    doc = json.loads(isletune("report", trace, "--json").stdout)
    run, islands = summary_csv(trace)
    ev = doc["evaluations"]
    assert int(run["evaluations"]) == ev["measured"]
    assert sum(int(i["cached"]) for i in islands) == ev["cache_hits"]
    assert sum(int(i["migrants"]) for i in islands) == ev["migrants"]
    assert sum(int(i["measured"]) for i in islands) == ev["measured"]
    assert {int(i["generations"]) for i in islands} == {doc["result"]["generations"]}
    assert doc["last_generation"] == doc["result"]["generations"]
    assert float(run["best_ms"]) == pytest.approx(doc["result"]["best"]["median_ms"], rel=1e-12)
    assert run["stop_reason"] == doc["result"]["stop_reason"]
    assert ev["cache_hits"] > 0  # the comparison covers cache hits
    # Each rank's time: the same measurements, generations and waiting as the summary's
    # islands, its clock the end of its last generation; the text prints the same rows.
    by_rank = {int(i["rank"]): i for i in islands}
    assert [r["rank"] for r in doc["ranks"]] == sorted(by_rank) and len(by_rank) == 2
    text = isletune("report", trace).stdout
    for r in doc["ranks"]:
        i = by_rank[r["rank"]]
        assert r["measured"] == int(i["measured"])
        assert r["generations"] == int(i["generations"])
        assert r["wait_s"] == pytest.approx(float(i["wait_s"]), rel=1e-4, abs=1e-4)
        assert r["clock_s"] >= float(i["wall_s"]) - 1e-4
        assert r["compile_s"] > 0
        assert r["fills"] == int(i["fills"]) == 0  # none without drift, nor in older traces
        assert re.search(rf"^\s+{r['rank']}\s+{r['generations']}\s+{r['measured']}\s+"
                         rf"{r['fills']}\s+{r['compile_s']:.1f}\s+{r['wait_s']:.1f}\s+{r['clock_s']:.1f}\s+\d+%$",
                         text, re.M), text


def test_progress_line_shows_budget_share_and_eta(replay_run):
    lines = [l for l in (replay_run.parent / "stdout.txt").read_text().splitlines()
             if l.startswith("gen ")]
    assert len(lines) >= 3
    assert re.search(r"\(\d+% of budget\)$", lines[0]), lines[0]
    shares = [int(re.search(r"\((\d+)% of budget", l)[1]) for l in lines]
    assert shares == sorted(shares) and shares[-1] == 100
    assert all(re.search(r"% of budget, ETA (\d+m\d\ds|\d+s)\)$", l) for l in lines[1:-1]), lines

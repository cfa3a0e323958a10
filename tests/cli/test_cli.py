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
    # 18 base parameters and the tensor-core family's 5 (mma, mma_nb, mma_warps, mma_creg,
    # mma_minb)
    assert len(doc["parameters"]) == 23 and doc["constraints"]
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


@pytest.mark.parametrize("spread", [0.01, 0])
def test_report_counts_kernels_timed_in_full_raced_and_settled(tmp_path, spread):
    """evaluator.settle_spread in a replayed run of a recording that names its compile threads
    (kernels wait for the GPU): with 0.01 some kernels settle, each answering with its first 5
    recorded runs; with 0 none. The report's counts add up to the verified kernels."""
    config = tmp_path / "settle.yaml"
    config.write_text(
        "stencil: star3d2r\ngrid: [512, 512, 512]\nseed: 2\n"
        "budget: {time_budget_s: 15}\n"
        f"evaluator: {{backend: replay, dataset: {DATA / 'h100-full-star3d2r-512.h5'}, "
        f"settle_spread: {spread}}}\n")
    out = tmp_path / "run"
    isletune("run", str(config), "--out", str(out))
    doc = json.loads(isletune("report", str(out), "--json").stdout)
    t = doc["evaluations"]["timing"]
    assert t["runs"] == 10 and t["other"] == 0
    assert t["full"] + t["raced"] + t["settled"] == doc["evaluations"]["by_status"]["ok"]
    assert (t["settled"] > 0) == (spread > 0) and t["raced"] > 0 and t["full"] > 0
    text = isletune("report", str(out)).stdout
    assert f"timed: {t['full']} with all 10 runs, {t['raced']} raced, {t['settled']} settled " \
           "(5 runs)" in text


def test_compile_scale_scales_every_replayed_compile(tmp_path):
    """evaluator.compile_scale in a replayed run, as a user calibrates replay to a host that
    compiles faster: every measured row's compile_ms is the recording's times the scale, its
    GPU costs as recorded."""
    sys.path.insert(0, str(SOURCE / "analysis"))
    from isletune_analysis import load_trace
    dataset = DATA / "h100-full-star3d2r-512.h5"
    config = tmp_path / "scaled.yaml"
    config.write_text(
        "stencil: star3d2r\ngrid: [512, 512, 512]\nseed: 3\n"
        "budget: {max_evaluations: 60}\n"
        f"evaluator: {{backend: replay, dataset: {dataset}, compile_scale: 0.25}}\n")
    out = tmp_path / "run"
    isletune("run", str(config), "--out", str(out))
    recorded: dict[str, set[tuple[float, float]]] = {}
    for row in load_trace(dataset).evaluations:
        recorded.setdefault(row["key"], set()).add((row["compile_ms"], row["verify_ms"]))
    rows = [r for r in load_trace(out).evaluations if not r["cached"] and not r["migrant"]]
    matched = [r for r in rows if r["key"] in recorded]
    assert len(matched) >= 20, (len(rows), len(matched))
    for r in matched:
        assert any(r["compile_ms"] == pytest.approx(0.25 * c, rel=1e-12)
                   and r["verify_ms"] == pytest.approx(v, rel=1e-12)
                   for c, v in recorded[r["key"]]), r["key"]


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
    # islands, its clock the end of its last generation; the text prints the same rows, a
    # replayed run's waiting share as `-` with a line saying why (its waits are host seconds,
    # no share of its simulated clock).
    by_rank = {int(i["rank"]): i for i in islands}
    assert [r["rank"] for r in doc["ranks"]] == sorted(by_rank) and len(by_rank) == 2
    text = isletune("report", trace).stdout
    assert ("(replayed: wait s are this host's seconds" in text) == (which == "replay"), text
    for r in doc["ranks"]:
        i = by_rank[r["rank"]]
        assert r["measured"] == int(i["measured"])
        assert r["generations"] == int(i["generations"])
        assert r["wait_s"] == pytest.approx(float(i["wait_s"]), rel=1e-4, abs=1e-4)
        assert r["clock_s"] >= float(i["wall_s"]) - 1e-4
        assert r["compile_s"] > 0
        assert r["fills"] == int(i["fills"]) == 0  # none without drift, nor in older traces
        assert r["restarts"] == int(i["restarts"])
        assert re.search(rf"^\s+{r['rank']}\s+{r['generations']}\s+{r['restarts']}\s+{r['measured']}\s+"
                         rf"{r['fills']}\s+{r['compile_s']:.1f}\s+{r['wait_s']:.1f}\s+{r['clock_s']:.1f}\s+"
                         + (r"-" if which == "replay" else r"\d+%")
                         + rf"\s+{100 * r['gpu_busy']:.0f}%\s+{r['compile_threads']}\s+"
                         rf"{100 * r['compile_threads_busy']:.0f}%\s+{r['queue_depth']:.1f}$",
                         text, re.M), text
        # Where the GPU measured, by tenth of the clock: each tenth a share, their mean the
        # rank's GPU busy when every new measurement has its span on the GPU (a replayed run);
        # the committed GPU trace predates the spans: no tenths, no line.
        check_tenths(r, text, which, "gpu_busy_by_tenth", "gpu_busy", 100,
                     rf"^rank {r['rank']} GPU busy by tenth of its clock \(%\):", most=1 + 1e-9)
        # Settings queued by tenth: their mean is the rank's queue depth (Little's law over
        # each measurement's submit to finish), so a tenth whose GPU waited tells a full queue
        # (the compiles) from a shallow one (the island proposed too little).
        check_tenths(r, text, which, "queue_by_tenth", "queue_depth", 1,
                     rf"^rank {r['rank']} settings queued by tenth \(mean\):")


def check_tenths(r, text, which, key, whole, scale, head, most=float("inf")):
    """A rank's `key` (ten parts of its clock, each at most `most`, printed times `scale` after
    `head`): their mean is the rank's `whole` in a replayed run; zeros and no line for the GPU
    trace without spans."""
    parts = r[key]
    assert len(parts) == 10 and all(0 <= p <= most for p in parts), parts
    if which == "replay":
        assert r[whole] > 0
        assert sum(parts) / 10 == pytest.approx(r[whole], rel=1e-9)
        line = head + "".join(rf"\s+{scale * p:.0f}" for p in parts) + "$"
        assert re.search(line, text, re.M), text
    else:
        assert parts == [0] * 10
        assert not re.search(head, text, re.M), text


def test_progress_line_shows_budget_share_and_eta(replay_run):
    lines = [l for l in (replay_run.parent / "stdout.txt").read_text().splitlines()
             if l.startswith("gen ")]
    assert len(lines) >= 3
    assert re.search(r"\(\d+% of budget\)$", lines[0]), lines[0]
    shares = [int(re.search(r"\((\d+)% of budget", l)[1]) for l in lines]
    assert shares == sorted(shares) and shares[-1] == 100
    assert all(re.search(r"% of budget, ETA (\d+m\d\ds|\d+s)\)$", l) for l in lines[1:-1]), lines


# --- replay: the recording GPU, and saying it was replayed ----------------------------


def test_replayed_run_reports_the_recording_gpus_copy_share(replay_run):
    """Replay answers with the H200's limits as the dataset records them (4214 GB/s, not the
    H100 default of 3000): the run's one-step kernels reach about 93 % of the H200's copy
    roofline, as `report` of the dataset itself says, not 131 %."""
    dataset = json.loads(isletune("report", str(DATA / "h200-star2d1r.h5"), "--json").stdout)
    doc = json.loads(isletune("report", str(replay_run), "--json").stdout)
    assert doc["gpu"] == dataset["gpu"] == "NVIDIA H200"
    bandwidth = dataset["copy_bandwidth_gbs"]
    assert bandwidth == pytest.approx(4214, abs=1) and doc["copy_bandwidth_gbs"] == bandwidth
    best = doc["result"]["best"]
    roof_ms = 4096 * 4096 * 16 / (bandwidth * 1e9) * 1e3
    assert best["copy_roofline_ms"] == pytest.approx(roof_ms, rel=1e-9)
    assert best["copy_share"] == pytest.approx(roof_ms / best["median_ms"], rel=1e-9)
    assert 0.88 <= best["copy_share"] <= 0.94  # tdeg 1: below the roofline
    assert dataset["result"]["best"]["copy_share"] == pytest.approx(0.933, abs=0.001)
    text = isletune("report", str(replay_run)).stdout
    assert f"copy roofline: {100 * best['copy_share']:.0f}% (copy {bandwidth:.0f} GB/s)" in text
    lines = [l for l in (replay_run.parent / "stdout.txt").read_text().splitlines()
             if l.startswith("gen ")]
    assert f"{100 * best['copy_share']:.0f}% copy)" in lines[-1], lines[-1]
    first = (replay_run.parent / "stdout.txt").read_text().splitlines()[0]
    assert "recorded on NVIDIA H200 (4214 GB/s copy, 60 MiB L2)" in first, first


def test_every_output_of_a_replayed_run_says_it_was_replayed(replay_run, tmp_path):
    label = f"replayed from {DATA / 'h200-star2d1r.h5'}, clock simulated"
    doc = json.loads(isletune("report", str(replay_run), "--json").stdout)
    assert doc["replayed"] == {"dataset": str(DATA / "h200-star2d1r.h5"),
                               "clock": "simulated", "label": label}
    assert label in isletune("report", str(replay_run)).stdout
    run, _ = summary_csv(str(replay_run))
    assert run["replayed"] == label
    assert f"replayed     {label}" in analyze("summary", str(replay_run)).stdout
    cu = tmp_path / "best.cu"
    isletune("export", str(replay_run), "--best", "-o", str(cu))
    header = cu.read_text().split("#include", 1)[0]
    assert f"on NVIDIA H200 ({label})." in header, header
    # A trace measured on the GPU says nothing of the kind.
    real = json.loads(isletune("report", str(REAL_RUN), "--json").stdout)
    assert real["replayed"] is None
    assert "replayed" not in isletune("report", str(REAL_RUN)).stdout
    assert analyze("summary", "--csv", str(REAL_RUN)).stdout.split("\n")[1].endswith(",")


def test_a_missing_naive_baseline_names_the_setting_and_why(replay_run):
    """The H200 dataset holds no row of the naive setting: every output says so, and the
    progress line prints the reason where the speed-up would be."""
    naive = ("naive setting (streaming=0 merge=none tdeg=1 tbx=32 tby=8 mfx=1 mfy=1 ufx=1 "
             "ufy=1 use_shared=0 use_constant=0) not measured: ")
    why = f"{naive}its replay dataset {DATA / 'h200-star2d1r.h5'} has no row of it"
    doc = json.loads(isletune("report", str(replay_run), "--json").stdout)
    assert doc["naive"] == {"median_ms": None, "missing": why}
    assert doc["result"]["best"]["vs_naive"] is None
    assert f"vs naive: {why};" in isletune("report", str(replay_run)).stdout
    dataset = json.loads(isletune("report", str(DATA / "h200-star2d1r.h5"), "--json").stdout)
    assert dataset["naive"]["missing"] == f"{naive}this dataset has no row of it"
    lines = [l for l in (replay_run.parent / "stdout.txt").read_text().splitlines()
             if l.startswith("gen ")]
    assert all("GCells/s (naive not in the replay dataset, " in l for l in lines), lines[0]


def test_report_json_carries_the_speedup_over_naive():
    """A trace with the naive setting measured: JSON and text print the same speed-up."""
    doc = json.loads(isletune("report", str(REAL_RUN), "--json").stdout)
    text = isletune("report", str(REAL_RUN)).stdout
    best = doc["result"]["best"]
    if doc["naive"]["median_ms"] is None:
        pytest.fail(f"{REAL_RUN}: naive not measured: {doc['naive']['missing']}")
    assert best["vs_naive"] == pytest.approx(doc["naive"]["median_ms"] / best["median_ms"])
    assert f"vs naive: {best['vs_naive']:.2f}x (naive {doc['naive']['median_ms']:.5f} ms)" in text


# --- messages ------------------------------------------------------------------------


def test_space_refuses_a_replay_dataset_of_another_problem(tmp_path):
    """`space` checks a replay config's dataset as `run` does, and shows its GPU's space."""
    dataset = DATA / "h200-star2d1r.h5"
    other = tmp_path / "other.yaml"
    other.write_text(f"stencil: star2d2r\ngrid: [4096, 4096]\n"
                     f"evaluator: {{backend: replay, dataset: {dataset}}}\n")
    proc = isletune("space", str(other), check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "holds times of star2d1r on 4096x4096" in proc.stderr
    same = tmp_path / "same.yaml"
    same.write_text(f"stencil: star2d1r\ngrid: [4096, 4096]\n"
                    f"evaluator: {{backend: replay, dataset: {dataset}}}\n")
    assert "limits: NVIDIA H200\n" in isletune("space", str(same)).stdout.split("\n", 1)[0] + "\n"
    assert json.loads(isletune("space", str(same), "--json").stdout)["limits"] == "NVIDIA H200"
    missing = tmp_path / "missing.yaml"
    missing.write_text("stencil: star2d1r\ngrid: [4096, 4096]\n"
                       f"evaluator: {{backend: replay, dataset: {tmp_path / 'none.h5'}}}\n")
    proc = isletune("space", str(missing), check=False)
    assert proc.returncode == 2 and "none.h5, which is not a file" in proc.stderr


def test_messages_say_why_a_write_failed_and_name_their_command_once(tmp_path):
    dataset = str(DATA / "h200-star2d1r.h5")
    proc = isletune("export", dataset, "--best", "-o", str(tmp_path / "missing" / "x.cu"),
                    check=False)
    assert proc.returncode == 2 and "(No such file or directory)" in proc.stderr, proc.stderr
    for args in (["export", dataset, "--best"], ["export", dataset],
                 ["measure", str(SOURCE / "config" / "examples" / "replay-star2d1r.yaml")]):
        proc = isletune(*args, check=False)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(f"isletune {args[0]}: "), proc.stderr
        assert proc.stderr.count("isletune") == 1 + proc.stderr.count("usage: isletune"), \
            proc.stderr


def test_version_is_git_describe_in_every_output(replay_run):
    version = isletune("--version").stdout.strip()
    assert re.fullmatch(r"isletune \d+\.\d+\.\d+(-\S+)?", version), version
    inside = subprocess.run(["git", "-C", str(SOURCE), "rev-parse", "--git-dir"],
                            capture_output=True, text=True)
    if inside.returncode == 0:  # a git checkout: the version names a commit of it
        built = re.search(r"-g([0-9a-f]{7,40})(-dirty)?$", version)
        assert built, version
        known = subprocess.run(["git", "-C", str(SOURCE), "cat-file", "-e",
                                built[1] + "^{commit}"], capture_output=True)
        assert known.returncode == 0, f"{version}: no commit {built[1]} in {SOURCE}"
    import h5py
    with h5py.File(replay_run / "trace.h5") as f:
        stored = f.attrs["isletune_version"]
    stored = stored.decode() if isinstance(stored, bytes) else str(stored)
    assert stored == version.split(" ", 1)[1]


def test_an_input_error_under_mpirun_is_one_sentence(tmp_path):
    """`mpirun -q` (as every launch of the project): the rank's sentence, no Open MPI footer."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("stencil: star2d1r\ngrid: [4096, 4096]\nbogus: 1\n")
    proc = subprocess.run([*_mpirun(), BIN, "run", str(bad), "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("isletune run: ") and "bogus (line 3)" in proc.stderr


def test_progress_line_keeps_the_speedup_over_naive_after_a_resume(tmp_path):
    """The naive setting is measured in generation 0: after a stop by signal and a resume,
    the progress line still prints the speed-up over it (not "naive not measured yet")."""
    import signal
    import time
    config = tmp_path / "synthetic.yaml"
    config.write_text(
        "stencil: star2d1r\ngrid: [4096, 4096]\n"
        "space:\n  streaming: {values: [0]}\n  tdeg: {values: [1]}\n"
        "  tbx: {values: [8, 32, 64, 128, 256]}\n  tby: {values: [1, 2, 4, 8, 16, 32]}\n"
        "  mfx: {values: [1, 2, 4]}\n  mfy: {values: [1, 2, 4]}\n"
        "  ufx: {values: [1, 2]}\n  ufy: {values: [1, 2]}\n"
        f"evaluator: {{backend: replay, dataset: {DATA / 'synthetic-star2d1r.h5'}}}\n"
        "ga: {mcr_threshold: 1.0}\nbudget: {max_generations: 30}\nseed: 3\n")
    out = tmp_path / "run"
    env = dict(os.environ, ISLETUNE_REPLAY_DELAY_S="0.2")
    mpirun = subprocess.Popen([*_mpirun(), BIN, "run", str(config), "--out", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = []
    deadline = time.monotonic() + 120
    for line in mpirun.stdout:
        first.append(line)
        if line.startswith("gen    2 ") or time.monotonic() > deadline:
            break
    mpirun.send_signal(signal.SIGUSR1)
    rest, err = mpirun.communicate(timeout=120)
    assert mpirun.returncode == 0, err
    gens = [l for l in first + rest.splitlines(True) if l.startswith("gen ")]
    assert re.search(r"GCells/s \(\d+\.\d\dx naive, \d+% copy\)", gens[0]), gens[0]
    resumed = subprocess.run([*_mpirun(), BIN, "resume", str(out)], capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    after = [l for l in resumed.stdout.splitlines() if l.startswith("gen ")]
    assert after, resumed.stdout
    assert all(re.search(r"GCells/s \(\d+\.\d\dx naive, \d+% copy\)", l) for l in after), after

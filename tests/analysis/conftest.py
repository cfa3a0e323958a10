"""Fixtures of the analysis tests: synthetic traces (tracegen) and real replay runs.

Real runs use the isletune binary named by $ISLETUNE_BIN (ctest passes
${CMAKE_BINARY_DIR}/bin/isletune) under mpirun on the replay dataset in tests/data; when
the binary is missing those tests are skipped with that reason. A session whose every
test was skipped exits with 77 so that ctest reports it as skipped, never as passed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "analysis"))
sys.path.insert(0, str(HERE))

import tracegen  # noqa: E402

DATA = Path(os.environ.get("ISLETUNE_TEST_DATA", ROOT / "tests" / "data"))
DATASET = DATA / "synthetic-star2d1r.h5"
CONFIG_TEMPLATE = HERE / "replay-star2d1r.yaml"
# Real H200 replay dataset (isletune measure, 4000 settings) and the committed real CUDA
# trace of docs/data (2 ranks on 2 x H200).
H200_DATASET = DATA / "h200-star2d1r.h5"
REAL_RUNS = (ROOT / "docs" / "data" / "h200-x2-star2d2r",)
EXAMPLE_CONFIG = ROOT / "analysis" / "examples" / "compare-strategies.yaml"


def analyze(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs `python3 -m isletune_analysis ARGS` as a user would; returns the process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "analysis"))
    return subprocess.run([sys.executable, "-m", "isletune_analysis", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="session")
def synthetic_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Synthetic run directories: two island-ga seeds, a global-ga run, a killed run of an
    older writer (no commit marker, rows past the last generation), and a run killed
    during a flush (rows past the commit marker)."""
    base = tmp_path_factory.mktemp("synthetic")
    return {
        "a": tracegen.write_run(base / "a", ranks=2, seed=1).parent,
        "b": tracegen.write_run(base / "b", ranks=2, seed=2).parent,
        "global": tracegen.write_run(base / "g", ranks=1, seed=3, strategy="global-ga",
                                     clock_scale=1.5).parent,
        "killed": tracegen.write_run(base / "k", ranks=3, seed=4, result=False, missing_rank=1,
                                     extra_evaluations=3, marker=False).parent,
        "torn": tracegen.write_run(base / "t", ranks=2, seed=5, result=False,
                                   uncommitted=5).parent,
    }


def _mpirun() -> list[str]:
    """mpirun with --oversubscribe, and --allow-run-as-root only when running as root."""
    exe = os.environ.get("MPIEXEC") or shutil.which("mpirun") or "mpirun"
    cmd = [exe, "-q", "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def isletune_binary() -> Path | None:
    """The isletune binary from $ISLETUNE_BIN, if it exists."""
    value = os.environ.get("ISLETUNE_BIN")
    if value and Path(value).is_file() and os.access(value, os.X_OK):
        return Path(value)
    return None


@pytest.fixture(scope="session")
def replay_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, int], Path]:
    """Real replay runs {(ranks, seed): run dir}: 1 and 2 ranks, seeds 1 and 2."""
    binary = isletune_binary()
    if binary is None:
        pytest.skip(f"isletune binary not found (ISLETUNE_BIN={os.environ.get('ISLETUNE_BIN')!r}); "
                    "real replay traces cannot be produced")
    if not DATASET.exists():
        pytest.skip(f"replay dataset {DATASET} is missing")
    base = tmp_path_factory.mktemp("replay")
    config = base / "config.yaml"
    config.write_text(CONFIG_TEMPLATE.read_text().replace("@DATASET@", str(DATASET)))
    runs = {}
    for ranks in (1, 2):
        for seed in (1, 2):
            out = base / f"np{ranks}-seed{seed}"
            cmd = _mpirun() + ["-np", str(ranks), str(binary), "run", str(config), "--backend",
                               "replay", "--out", str(out), "--seed", str(seed)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
            assert (out / "trace.h5").exists(), f"{out} holds no trace.h5"
            runs[(ranks, seed)] = out
    return runs


def _run_isletune(config: Path, out: Path, ranks: int, seed: int) -> Path:
    """`mpirun -np RANKS isletune run CONFIG --out OUT --seed SEED`; asserts it succeeded."""
    binary = isletune_binary()
    cmd = _mpirun() + ["-np", str(ranks), str(binary), "run", str(config), "--backend", "replay",
                       "--out", str(out), "--seed", str(seed)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    assert (out / "trace.h5").exists(), f"{out} holds no trace.h5"
    return out


@pytest.fixture(scope="session")
def h200_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real replay runs on the real H200 dataset tests/data/h200-star2d1r.h5, from the
    committed example analysis/examples/compare-strategies.yaml: "island-ga" (2 ranks,
    seed 1, as committed) and "exhaustive" (1 rank, sampled-random over a sample of every
    recorded setting, so it measures the whole dataset)."""
    if isletune_binary() is None:
        pytest.skip(f"isletune binary not found (ISLETUNE_BIN={os.environ.get('ISLETUNE_BIN')!r}); "
                    "real replay traces cannot be produced")
    if not H200_DATASET.exists():
        pytest.skip(f"replay dataset {H200_DATASET} is missing")
    base = tmp_path_factory.mktemp("h200")
    text = EXAMPLE_CONFIG.read_text()
    dataset_line = "  dataset: ../../tests/data/h200-star2d1r.h5"
    assert dataset_line in text, f"{EXAMPLE_CONFIG} no longer names the H200 dataset"
    text = text.replace(dataset_line, f"  dataset: {H200_DATASET}")
    for line in ("strategy: island-ga", "budget: {time_budget_s: 20, max_generations: 200}"):
        assert line in text, f"{EXAMPLE_CONFIG} no longer has the line {line!r}"
    ga = base / "island-ga.yaml"
    ga.write_text(text)
    exhaustive = base / "exhaustive.yaml"
    exhaustive.write_text(
        text.replace("strategy: island-ga", "strategy: sampled-random")
        .replace("budget: {time_budget_s: 20, max_generations: 200}", "budget: {max_generations: 1000}")
        + "sampler: {predictor: uniform, sample_ratio: 1, max_samples: 8192}\n")
    return {"island-ga": _run_isletune(ga, base / "island-ga", 2, 1),
            "exhaustive": _run_isletune(exhaustive, base / "exhaustive", 1, 1)}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Exit 77 (ctest SKIP_RETURN_CODE) when tests were collected and every one skipped."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    stats = reporter.stats
    if stats.get("skipped") and not stats.get("passed") and not stats.get("failed"):
        session.exitstatus = 77

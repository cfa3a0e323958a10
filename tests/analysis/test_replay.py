"""The analysis on real traces: `isletune run --backend replay` under mpirun (1 and 2
ranks, two seeds) on the tests/data dataset. Skipped, with the reason, when the isletune
binary is missing."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rawread
from conftest import analyze
from isletune_analysis import load_trace


def test_loader_returns_every_evaluation_of_real_runs(replay_runs):
    for run in replay_runs.values():
        trace = load_trace(run)
        raw = rawread.rank_tables(run)
        assert {r.rank: len(r.evaluations) for r in trace.ranks} == {k: len(v) for k, v in raw.items()}
        assert trace.result is not None, f"{run}: finished run without /result"


def test_summary_matches_raw_best_on_real_run(replay_runs):
    run = replay_runs[(2, 1)]
    proc = analyze("summary", "--csv", str(run))
    assert proc.returncode == 0, proc.stderr
    runs, islands = rawread.parse_csv(proc.stdout)
    best = rawread.ok_times(rawread.all_rows(run)).min()
    assert float(runs[0]["best_ms"]) == pytest.approx(best, rel=1e-9)
    assert len(islands) == 2


@pytest.mark.parametrize("command", ["convergence", "diversity", "ocs", "params"])
def test_each_plot_command_runs_on_real_run(replay_runs, tmp_path, command):
    proc = analyze(command, "--outdir", str(tmp_path), str(replay_runs[(2, 2)]))
    assert proc.returncode == 0, proc.stderr
    figure = tmp_path / f"{command}.png"
    assert figure.exists() and figure.stat().st_size > 10_000


@pytest.mark.parametrize("by,groups", [("rank-count", {"1", "2"}), ("seed", {"1", "2"})])
def test_compare_groups_real_runs(replay_runs, tmp_path, by, groups):
    runs = [str(r) for r in replay_runs.values()]
    proc = analyze("compare", "--csv", "--by", by, "--outdir", str(tmp_path), *runs)
    assert proc.returncode == 0, proc.stderr
    _, finals = rawread.parse_csv(proc.stdout)
    assert {r["group"] for r in finals} == groups
    for r in finals:
        assert int(r["runs"]) == 2
    assert (tmp_path / "compare.png").stat().st_size > 10_000


def test_export_kt_of_real_run_has_every_measured_setting(replay_runs, tmp_path):
    run = replay_runs[(2, 1)]
    out = tmp_path / "kt.json"
    assert analyze("export-kt", str(run), "-o", str(out)).returncode == 0
    doc = json.loads(out.read_text())
    meas = rawread.measured(rawread.all_rows(run))
    assert len(doc["cache"]) == len({tuple(v) for v in meas["values"].tolist()})
    best = rawread.ok_times(meas).min()
    assert min(e["time"] for e in doc["cache"].values() if not isinstance(e["time"], str)) \
        == pytest.approx(best, rel=1e-12)
    assert np.all([len(k.split(",")) == 18 for k in doc["cache"]])

"""Every subcommand on synthetic traces: its printed numbers equal values computed here
from the raw rank files, and its figure is written and non-empty."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rawread
from conftest import DATA, analyze

STATUS = ("ok", "invalid", "compile_error", "launch_error", "wrong_result", "crashed", "timeout")


def _figure_ok(path):
    assert path.exists() and path.stat().st_size > 10_000, f"{path} missing or tiny"


def test_summary_best_and_status_counts_match_raw(synthetic_runs):
    run = synthetic_runs["a"]
    proc = analyze("summary", "--csv", str(run))
    assert proc.returncode == 0, proc.stderr
    runs, islands = rawread.parse_csv(proc.stdout)
    rows = rawread.all_rows(run)
    meas = rawread.measured(rows)
    assert float(runs[0]["best_ms"]) == pytest.approx(rawread.ok_times(rows).min(), rel=1e-6)
    assert float(runs[0]["gcells_per_s"]) == pytest.approx(
        256 * 256 / (rawread.ok_times(rows).min() * 1e-3) / 1e9, rel=1e-5)
    for code, name in enumerate(STATUS):
        assert int(runs[0][name]) == int(np.count_nonzero(meas["status"] == code)), name
    assert runs[0]["stop_reason"] == "max_generations"
    raw = rawread.rank_tables(run)
    for isl in islands:
        r = raw[int(isl["rank"])]
        assert int(isl["measured"]) == len(rawread.measured(r))
        assert float(isl["best_ms"]) == pytest.approx(rawread.ok_times(r).min(), rel=1e-6)


def test_convergence_final_best_and_figures(synthetic_runs, tmp_path):
    run = synthetic_runs["a"]
    proc = analyze("convergence", "--csv", "--outdir", str(tmp_path), str(run))
    assert proc.returncode == 0, proc.stderr
    (rows,) = rawread.parse_csv(proc.stdout)
    overall = [r for r in rows if r["series"] == "overall"]
    meas = rawread.measured(rawread.all_rows(run))
    order = np.argsort(meas["wall_s"], kind="stable")
    t = np.where(meas["status"][order] == 0, meas["median_ms"][order], np.inf)
    running = np.minimum.accumulate(t)
    improve = np.flatnonzero(np.diff(np.concatenate([[np.inf], running])) < 0)
    assert [int(r["evaluations"]) for r in overall] == list(improve + 1)
    np.testing.assert_allclose([float(r["best_ms"]) for r in overall], running[improve], rtol=1e-6)
    # Island curves are non-increasing.
    for series in {r["series"] for r in rows}:
        best = [float(r["best_ms"]) for r in rows if r["series"] == series]
        assert all(a > b for a, b in zip(best, best[1:]))
    _figure_ok(tmp_path / "convergence.png")
    proc = analyze("convergence", "--format", "svg", "-o", str(tmp_path / "c.svg"), str(run))
    assert proc.returncode == 0 and (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")


def test_diversity_rows_equal_generations_tables(synthetic_runs, tmp_path):
    run = synthetic_runs["b"]
    proc = analyze("diversity", "--csv", "--outdir", str(tmp_path), str(run))
    assert proc.returncode == 0, proc.stderr
    (rows,) = rawread.parse_csv(proc.stdout)
    gens = rawread.rank_tables(run, "generations")
    expected = [(rank, int(g["generation"]), float(g["mcr"]), int(g["unique_genomes"]))
                for rank in sorted(gens) for g in gens[rank]]
    got = [(int(r["rank"]), int(r["generation"]), float(r["mcr"]), int(r["unique_genomes"]))
           for r in rows]
    assert got == expected
    _figure_ok(tmp_path / "diversity.png")


def _oc(v):
    return ((((v[0] * 3 + v[1]) * 2 + v[2]) * 2 + v[3]) * 2 + int(v[4] > 1))


def test_ocs_counts_and_best_match_raw(synthetic_runs, tmp_path):
    run = synthetic_runs["a"]
    proc = analyze("ocs", "--csv", "--outdir", str(tmp_path), str(run))
    assert proc.returncode == 0, proc.stderr
    (rows,) = rawread.parse_csv(proc.stdout)
    meas = rawread.measured(rawread.all_rows(run))
    ids = np.array([_oc(v) for v in meas["values"]])
    assert sorted(int(r["oc"]) for r in rows) == sorted(set(ids.tolist()))
    for r in rows:
        sel = meas[ids == int(r["oc"])]
        assert int(r["evaluated"]) == len(sel)
        t = rawread.ok_times(sel)
        assert int(r["ok"]) == len(t)
        if len(t):
            assert float(r["min_ms"]) == pytest.approx(t.min(), rel=1e-6)
            assert float(r["median_ms"]) == pytest.approx(np.median(t), rel=1e-6)
    _figure_ok(tmp_path / "ocs.png")


def test_params_frequencies_match_raw(synthetic_runs, tmp_path):
    run = synthetic_runs["a"]
    k = 7
    proc = analyze("params", "--csv", "--top", str(k), "--outdir", str(tmp_path), str(run))
    assert proc.returncode == 0, proc.stderr
    (rows,) = rawread.parse_csv(proc.stdout)
    meas = rawread.measured(rawread.all_rows(run))
    best = {}
    for row in meas:
        key = row["key"].decode()
        t = row["median_ms"] if row["status"] == 0 else np.inf
        best[key] = (row["values"], min(t, best.get(key, (None, np.inf))[1]))
    ranked = sorted(best.values(), key=lambda x: x[1])[:k]
    for name, col in (("tbx", 7), ("streaming", 0), ("merge", 1)):
        for r in (r for r in rows if r["parameter"] == name):
            v = int(r["value"])
            assert int(r["all"]) == sum(1 for vals, _ in best.values() if vals[col] == v)
            assert int(r["top"]) == sum(1 for vals, _ in ranked if vals[col] == v)
    _figure_ok(tmp_path / "params.png")


def test_compare_by_strategy_final_bests_and_speedup(synthetic_runs, tmp_path):
    runs = [synthetic_runs[k] for k in ("a", "b", "global")]
    proc = analyze("compare", "--csv", "--by", "strategy", "--baseline", "global-ga",
                   "--outdir", str(tmp_path), *map(str, runs))
    assert proc.returncode == 0, proc.stderr
    curve, finals = rawread.parse_csv(proc.stdout)
    final = {r["group"]: r for r in finals}
    island = [rawread.ok_times(rawread.all_rows(r)).min() for r in runs[:2]]
    glob = rawread.ok_times(rawread.all_rows(runs[2])).min()
    assert int(final["island-ga"]["runs"]) == 2
    assert float(final["island-ga"]["median_ms"]) == pytest.approx(np.median(island), rel=1e-6)
    assert float(final["global-ga"]["speedup"]) == pytest.approx(1.0)
    assert float(final["island-ga"]["speedup"]) == pytest.approx(glob / np.median(island), rel=1e-6)
    # Iso-time curve: the median at each checkpoint never increases with time.
    med = [float(r["median_ms"]) for r in curve if r["group"] == "island-ga"]
    med = [m for m in med if np.isfinite(m)]
    assert med and all(a >= b for a, b in zip(med, med[1:]))
    _figure_ok(tmp_path / "compare.png")


def test_compare_unknown_baseline_is_exit_2(synthetic_runs):
    proc = analyze("compare", "--no-plot", "--baseline", "nope", str(synthetic_runs["a"]))
    assert proc.returncode == 2 and "nope" in proc.stderr


def test_export_kt_cache_follows_kernel_tuner_layout(tmp_path):
    # A dataset the C++ writer recorded (every status): export-kt runs `isletune export`.
    run = DATA / "synthetic-star2d1r.h5"
    out = tmp_path / "cache.json"
    proc = analyze("export-kt", "--csv", str(run), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["tune_params_keys"] == list(doc["tune_params"].keys())
    assert len(doc["tune_params_keys"]) == 18 and doc["objective"] == "time"
    meas = rawread.measured(rawread.all_rows(run))
    keys = {",".join(str(int(x)) for x in v) for v in meas["values"]}
    assert set(doc["cache"]) == keys
    for row in meas:
        entry = doc["cache"][",".join(str(int(x)) for x in row["values"])]
        assert [entry[n] for n in doc["tune_params_keys"]] == [int(x) for x in row["values"]]
        for name, value in zip(doc["tune_params_keys"], row["values"]):
            assert int(value) in doc["tune_params"][name]
        if row["status"] == 0:
            assert isinstance(entry["time"], float) and entry["time"] <= row["median_ms"] + 1e-12
        else:
            same = meas[[bytes(k) == bytes(row["key"]) for k in meas["key"]]]
            if not np.any(same["status"] == 0):
                assert entry["time"] in ("InvalidConfig", "CompilationFailedConfig",
                                         "RuntimeFailedConfig")
                assert entry["__error__"] == entry["time"]
        for field in ("compile_time", "verification_time", "benchmark_time", "strategy_time",
                      "framework_time", "timestamp"):
            assert field in entry


def test_compare_until_leaves_out_later_measurements_and_gives_intervals(synthetic_runs):
    runs = [synthetic_runs[k] for k in ("a", "b", "global")]
    rows = [rawread.all_rows(r) for r in runs]
    until = float(np.median([np.median(r["wall_s"]) for r in rows]))
    proc = analyze("compare", "--csv", "--no-plot", "--by", "strategy", "--baseline",
                   "global-ga", "--until", repr(until), *map(str, runs))
    assert proc.returncode == 0, proc.stderr
    _, finals = rawread.parse_csv(proc.stdout)
    final = {r["group"]: r for r in finals}

    def best_by(r):
        m = rawread.measured(r)
        m = m[m["wall_s"] <= until]
        return rawread.ok_times(m).min()

    island = [best_by(r) for r in rows[:2]]
    assert float(final["island-ga"]["median_ms"]) == pytest.approx(np.median(island), rel=1e-6)
    assert float(final["global-ga"]["median_ms"]) == pytest.approx(best_by(rows[2]), rel=1e-6)
    # Two runs: a bootstrap interval around their median; one run: none.
    lo, hi = float(final["island-ga"]["ci_low_ms"]), float(final["island-ga"]["ci_high_ms"])
    assert min(island) <= lo <= np.median(island) <= hi <= max(island)
    assert final["global-ga"]["ci_low_ms"] == "nan"
    assert 0.0 <= float(final["island-ga"]["p_vs_baseline"]) <= 1.0


def test_compare_uses_the_common_time_budget(synthetic_runs):
    from isletune_analysis import compute, load_trace

    traces = [load_trace(synthetic_runs[k]) for k in ("a", "b")]
    assert compute.horizon(traces)[1] == "the latest run's end"  # no budget configured
    for t in traces:
        t.config["budget"] = {"time_budget_s": 1.25}
    assert compute.horizon(traces) == (1.25, "the runs' common time_budget_s")
    data = compute.compare(traces, "seed")
    assert data["time_s"][-1] == pytest.approx(1.25)


def test_mcr_threshold_is_the_configs_else_the_code_default(synthetic_runs):
    from isletune_analysis import compute, load_trace

    trace = load_trace(synthetic_runs["a"])
    assert compute.mcr_threshold(trace) == 0.5  # tracegen's config says 0.5 (PyYAML read)
    trace.config.pop("ga")
    assert compute.mcr_threshold(trace) == compute.DEFAULT_MCR_THRESHOLD == 0.9


def test_evaluations_df_is_a_dataframe_of_every_row(synthetic_runs):
    import pandas as pd
    from isletune_analysis import load_trace

    run = synthetic_runs["a"]
    df = load_trace(run).evaluations_df()
    raw = rawread.all_rows(run)
    assert isinstance(df, pd.DataFrame) and len(df) == len(raw)
    for name in rawread.PARAMS + ("median_ms", "wall_s", "status", "ok", "measured", "key"):
        assert name in df.columns, name
    assert set(df["merge"].astype(str)) <= {"none", "block", "cyclic"}
    assert int(df["measured"].sum()) == len(rawread.measured(raw))
    assert df[df["ok"]]["median_ms"].min() == pytest.approx(rawread.ok_times(raw).min())
    assert int((df["status"] == "ok").sum()) == int(np.count_nonzero(raw["status"] == 0))


def test_missing_module_is_one_sentence(tmp_path):
    # A Python without h5py: a stub package that fails to import stands in for it.
    stub = tmp_path / "h5py"
    stub.mkdir()
    (stub / "__init__.py").write_text("raise ImportError('stub', name='h5py')\n")
    import os
    import subprocess
    import sys

    from conftest import ROOT
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT / 'analysis'}")
    proc = subprocess.run([sys.executable, "-m", "isletune_analysis", "summary", "x"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "h5py" in proc.stderr and "Traceback" not in proc.stderr


def test_package_installs_with_pip_and_runs_as_isletune_analyze(tmp_path):
    """analysis/pyproject.toml: `pip install ./analysis` (offline, dependencies from the
    system) gives the `isletune-analyze` command."""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import ROOT
    src = tmp_path / "src"
    shutil.copytree(ROOT / "analysis", src, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(target),
                           str(src)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "No module named pip" in proc.stderr:
        pytest.skip("pip is not installed")
    assert proc.returncode == 0, proc.stderr
    env = dict(os.environ, PYTHONPATH=str(target))
    run = subprocess.run([str(target / "bin" / "isletune-analyze"), "summary",
                          str(DATA / "h200-star2d1r.h5")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "star2d1r" in run.stdout

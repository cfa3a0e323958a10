"""The analysis on real traces: `isletune run --backend replay` under mpirun (1 and 2
ranks, two seeds) on the synthetic tests/data dataset, and runs on the real H200 dataset
tests/data/h200-star2d1r.h5 checked against plain h5py readings of that dataset. Skipped,
with the reason, when the isletune binary is missing."""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest

import rawread
from conftest import H200_DATASET, analyze
from isletune_analysis import compute, load_trace


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
    with h5py.File(run / "trace.h5", "r") as f:
        recorded = len(f["space/parameters"])  # 18 base + the tensor-core family's 5
    assert recorded == 23
    assert np.all([len(k.split(",")) == recorded for k in doc["cache"]])


def test_parameter_names_neutral_values_and_oc_table_come_from_the_trace(replay_runs, tmp_path):
    """A trace the current binary wrote records its parameters (with neutral values) and the
    OC table; the loader uses those, not a copy: with /space/parameters in another order plus
    a parameter the analysis has never heard of, the OC names changed and the legacy flag
    columns zeroed, the values still land under the right names, the new parameter reads its
    recorded neutral value, the OC names are the file's and each setting's OC is the one whose
    rule it meets."""
    original = replay_runs[(1, 1)]
    with h5py.File(original / "trace.h5", "r") as f:
        params = f["space/parameters"]
        rows, neutral = params[()], [int(v) for v in params.attrs["neutral"]]
        ocs = f["space/ocs"][()]
        # No OC 17; the tensor-core family's OC 49 after the flag OCs.
        assert len(ocs) == 30 and params.attrs.get("neutral") is not None
        assert "rule" in ocs.dtype.names
        assert ocs["rule"][-2].decode() == "streaming=1,merge=2,retiming=1,prefetch=1,tdeg>1"
        assert ocs["rule"][-1].decode() == "streaming=0,mma=1,tdeg=1"
    names = [n.decode() for n in rows["name"]]
    before = load_trace(original)
    assert before.schema.source == {"parameters": "trace", "neutral": "trace", "ocs": "trace"}
    assert list(before.schema.names) == names
    assert dict(zip(names, neutral))["tdeg"] == 1 and dict(zip(names, neutral))["sd"] == 0
    assert [before.schema.oc_name(int(r["oc"])) for r in ocs] == [n.decode() for n in ocs["name"]]

    run = tmp_path / "reordered"
    shutil.copytree(original, run)
    with h5py.File(run / "trace.h5", "r+") as f:
        order = list(reversed(range(len(rows))))
        extra = np.zeros(1, rows.dtype)
        extra[0] = ("fresh_param", "int", np.asarray([7, 8], "i4"))
        del f["space/parameters"]
        d = f.create_dataset("space/parameters", data=np.concatenate([rows[order], extra]))
        d.attrs["neutral"] = np.asarray([neutral[i] for i in order] + [7], "i4")
        renamed = ocs.copy()
        renamed["name"] = [b"oc-" + n for n in ocs["name"]]
        for flag in ("streaming", "merge", "retiming", "prefetch", "temporal"):
            renamed[flag] = 0  # the rule decides, not the flags
        del f["space/ocs"]
        f.create_dataset("space/ocs", data=renamed)
    after = load_trace(run)
    assert list(after.schema.names) == [names[i] for i in order] + ["fresh_param"]
    b, a = before.evaluations["values"], after.evaluations["values"]
    for j, name in enumerate(names):
        np.testing.assert_array_equal(a[:, after.schema.index(name)], b[:, j], err_msg=name)
    assert np.all(a[:, after.schema.index("fresh_param")] == 7)
    assert after.parameters["fresh_param"] == [7, 8]
    assert "fresh_param" in after.evaluations_df().columns
    old, new = compute.ocs(before)["rows"], compute.ocs(after)["rows"]
    assert [r["oc"] for r in new] == [r["oc"] for r in old] and new
    assert [r["name"] for r in new] == ["oc-" + r["name"] for r in old]
    assert [r["evaluated"] for r in new] == [r["evaluated"] for r in old]


# --- Real H200 measurements: tests/data/h200-star2d1r.h5 (4000 settings of star2d1r) ---

def _oc(values: np.ndarray) -> np.ndarray:
    """OC id of each setting row, as src/space/space.hpp numbers them."""
    v = values.astype(np.int64)
    return (((v[:, 0] * 3 + v[:, 1]) * 2 + v[:, 2]) * 2 + v[:, 3]) * 2 + (v[:, 4] > 1)


def _dataset_rows() -> np.ndarray:
    """The H200 dataset's committed evaluation rows, read with plain h5py."""
    return np.concatenate(list(rawread.rank_tables(H200_DATASET).values()))


def test_exhaustive_summary_best_is_the_h200_dataset_minimum(h200_runs):
    data = _dataset_rows()
    ok = data["status"] == 0
    fastest = data["median_ms"][ok].min()
    proc = analyze("summary", "--csv", str(h200_runs["exhaustive"]))
    assert proc.returncode == 0, proc.stderr
    runs, islands = rawread.parse_csv(proc.stdout)
    assert float(runs[0]["best_ms"]) == fastest
    assert runs[0]["best_key"] == data["key"][ok][np.argmin(data["median_ms"][ok])].decode()
    assert int(islands[0]["measured"]) == len(data) == 4000
    assert "NVIDIA H200" in islands[0]["gpu"]


def test_replayed_times_are_the_recorded_h200_times(h200_runs):
    data = _dataset_rows()
    recorded = {k.decode(): t for k, t, s in zip(data["key"], data["median_ms"], data["status"])
                if s == 0}
    rows = rawread.measured(rawread.all_rows(h200_runs["island-ga"]))
    ok = rows[rows["status"] == 0]
    assert len(ok) > 50
    assert all(recorded[k.decode()] == t for k, t in zip(ok["key"], ok["median_ms"]))
    # Settings the GA proposes outside the recording come back invalid, never timed.
    assert all(k.decode() not in recorded for k in rows["key"][rows["status"] != 0])


def test_convergence_on_h200_is_monotone_and_ends_at_the_best(h200_runs):
    run = h200_runs["island-ga"]
    proc = analyze("convergence", "--csv", "--no-plot", str(run))
    assert proc.returncode == 0, proc.stderr
    (points,) = rawread.parse_csv(proc.stdout)
    series = {p["series"] for p in points}
    assert series == {"island 0", "island 1", "overall"}
    for name in series:
        pts = [p for p in points if p["series"] == name]
        best = [float(p["best_ms"]) for p in pts]
        clock = [float(p["wall_s"]) for p in pts]
        evals = [int(p["evaluations"]) for p in pts]
        assert all(b < a for a, b in zip(best, best[1:])), f"{name}: best-so-far rose: {best}"
        assert all(b >= a for a, b in zip(clock, clock[1:])) and evals == sorted(evals)
    overall = [float(p["best_ms"]) for p in points if p["series"] == "overall"]
    assert overall[-1] == rawread.ok_times(rawread.measured(rawread.all_rows(run))).min()
    assert overall[-1] >= _dataset_rows()["median_ms"].min()


def test_ocs_on_h200_match_an_independent_count(h200_runs, tmp_path):
    data = _dataset_rows()
    proc = analyze("ocs", "--csv", "--outdir", str(tmp_path), str(h200_runs["exhaustive"]))
    assert proc.returncode == 0, proc.stderr
    (rows,) = rawread.parse_csv(proc.stdout)
    oc = _oc(data["values"])
    assert {int(r["oc"]) for r in rows} == set(oc.tolist()) == {0, 8, 16}
    for r in rows:
        mine = data[oc == int(r["oc"])]
        times = mine["median_ms"][mine["status"] == 0]
        assert int(r["evaluated"]) == len(mine) and int(r["ok"]) == len(times)
        assert float(r["min_ms"]) == times.min() and float(r["max_ms"]) == times.max()
        assert float(r["median_ms"]) == pytest.approx(np.median(times), rel=1e-12)
    with h5py.File(h200_runs["exhaustive"] / "trace.h5", "r") as f:  # the binary's OC table
        names = {int(r["oc"]): r["name"].decode() for r in f["space/ocs"][()]}
    assert {r["name"] for r in rows} == {names[0], names[8], names[16]}
    assert names[0] == "tile" and names[16] == "tile+cyclic"
    assert (tmp_path / "ocs.png").stat().st_size > 10_000


def test_params_on_h200_match_an_independent_count(h200_runs, tmp_path):
    data = _dataset_rows()
    proc = analyze("params", "--csv", "--top", "40", "--outdir", str(tmp_path),
                   str(h200_runs["exhaustive"]))
    assert proc.returncode == 0, proc.stderr
    (rows,) = rawread.parse_csv(proc.stdout)
    names = list(rawread.PARAMS)
    top = data["values"][np.argsort(data["median_ms"], kind="stable")[:40]]
    checked = 0
    for r in rows:
        if r["parameter"] not in names:  # a family's own, which the dataset predates: neutral
            assert r["parameter"].startswith("mma") and int(r["all"]) == 4000, r
            continue
        i, v = names.index(r["parameter"]), int(r["value"])
        assert int(r["all"]) == np.count_nonzero(data["values"][:, i] == v), r
        assert int(r["top"]) == np.count_nonzero(top[:, i] == v), r
        checked += 1
    assert checked >= 18
    # tbx: every recorded value is listed, and the counts add up to the 4000 settings.
    tbx = [r for r in rows if r["parameter"] == "tbx"]
    assert sum(int(r["all"]) for r in tbx) == 4000 and sum(int(r["top"]) for r in tbx) == 40
    assert (tmp_path / "params.png").stat().st_size > 10_000

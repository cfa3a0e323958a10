"""Loader: every row of every rank file, same values as a plain h5py reading, partial runs
analysed as far as they go, unusable files named in one sentence (exit code 2)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import rawread
from conftest import DATASET, REAL_RUNS, analyze
from isletune_analysis import TraceError, load_trace


def test_loader_returns_every_row_of_each_rank_file(synthetic_runs):
    for run in synthetic_runs.values():
        trace = load_trace(run)
        raw = rawread.rank_tables(run)
        assert {r.rank: len(r.evaluations) for r in trace.ranks} == {k: len(v) for k, v in raw.items()}


def test_loaded_rows_equal_raw_rows(synthetic_runs):
    run = synthetic_runs["a"]
    trace = load_trace(run / "trace.h5")
    for rank in trace.ranks:
        raw = rawread.rank_tables(run)[rank.rank]
        ev = rank.evaluations
        assert list(ev["key"]) == [k.decode() for k in raw["key"]]
        np.testing.assert_array_equal(ev["status"], raw["status"])
        np.testing.assert_array_equal(ev["values"], raw["values"])
        np.testing.assert_allclose(ev["median_ms"], raw["median_ms"], equal_nan=True)
        assert [len(t) for t in ev["times_ms"]] == [len(t) for t in raw["times_ms"]]
        np.testing.assert_array_equal(ev["migrant"], raw["migrant"] == 1)
        assert len(rank.generations) == len(rawread.rank_tables(run, "generations")[rank.rank])


def test_killed_run_is_analysed_as_far_as_it_goes(synthetic_runs):
    trace = load_trace(synthetic_runs["killed"])
    assert [r.rank for r in trace.ranks] == [0, 2]
    assert trace.result is None
    text = "\n".join(trace.warnings)
    assert "rank-0001.h5 is missing" in text
    assert "no /result" in text
    assert "cut short" in text
    # Every row that is there is loaded, including the rows past the last generation.
    raw = rawread.rank_tables(synthetic_runs["killed"])
    assert len(trace.evaluations) == sum(len(v) for v in raw.values())


def test_rows_past_the_commit_marker_are_left_out_with_a_warning(synthetic_runs):
    run = synthetic_runs["torn"]
    trace = load_trace(run)
    for rank in trace.ranks:
        with h5py.File(run / f"rank-{rank.rank:04d}.h5", "r") as f:
            marker = [int(n) for n in f.attrs["committed"]]
            stored = [f[t].shape[0] for t in rawread.TABLES]
        assert stored[0] == marker[0] + 5 and stored[1] == marker[1] + 1
        loaded = [len(rank.evaluations), len(rank.generations), len(rank.migrations)]
        assert loaded == marker
        # The torn generation's rows (time 1e-6 ms) are nowhere in what was loaded.
        assert np.nanmin(rank.evaluations["median_ms"]) > 1e-3
        assert rank.generations["generation"].max() == rank.evaluations["generation"].max()
    text = "\n".join(trace.warnings)
    assert text.count("5 rows past the committed") == 2
    assert text.count("generations has 1 rows past the committed") == 2
    assert "cut short" not in text


def test_rows_past_the_commit_marker_change_no_command_output(synthetic_runs):
    run = synthetic_runs["torn"]
    proc = analyze("summary", "--csv", str(run))
    assert proc.returncode == 0, proc.stderr
    assert "rows past the committed" in proc.stderr
    runs, islands = rawread.parse_csv(proc.stdout)
    committed = np.concatenate(list(rawread.rank_tables(run).values()))
    assert float(runs[0]["best_ms"]) == pytest.approx(rawread.ok_times(committed).min(), rel=1e-12)
    assert sum(int(i["measured"]) for i in islands) == len(rawread.measured(committed))


def test_file_without_commit_marker_reads_every_row(synthetic_runs):
    run = synthetic_runs["killed"]
    every = rawread.rank_tables(run, committed=False)
    assert {k: len(v) for k, v in every.items()} == {k: len(v) for k, v in rawread.rank_tables(run).items()}
    trace = load_trace(run)
    assert {r.rank: len(r.evaluations) for r in trace.ranks} == {k: len(v) for k, v in every.items()}
    assert not any("committed" in w for w in trace.warnings)


def test_real_writer_traces_carry_the_marker_and_load_whole():
    for run in REAL_RUNS:
        if not (run / "trace.h5").exists():
            pytest.skip(f"real CUDA trace {run} is not present")
        trace = load_trace(run)
        for rank in trace.ranks:
            with h5py.File(run / f"rank-{rank.rank:04d}.h5", "r") as f:
                marker = [int(n) for n in f.attrs["committed"]]
            assert [len(rank.evaluations), len(rank.generations), len(rank.migrations)] == marker
        assert not trace.warnings


def test_killed_run_commands_warn_and_succeed(synthetic_runs):
    proc = analyze("summary", str(synthetic_runs["killed"]))
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "unfinished" in proc.stdout


def test_dataset_file_loads_every_row():
    trace = load_trace(DATASET)
    assert trace.kind == "dataset"
    raw = rawread.rank_tables(DATASET)
    assert len(trace.evaluations) == sum(len(v) for v in raw.values())
    assert not any("no /result" in w for w in trace.warnings)


def test_file_written_before_the_oc_table_uses_the_legacy_fallback():
    """The committed dataset predates /space/ocs and the `neutral` attribute: its parameter
    names come from the file, neutral values and OC table from the LEGACY_* fallback."""
    from isletune_analysis import compute
    from isletune_analysis.trace import LEGACY_PARAM_NAMES, LEGACY_SCHEMA
    with h5py.File(DATASET, "r") as f:
        assert "ocs" not in f["space"] and "neutral" not in f["space/parameters"].attrs
    trace = load_trace(DATASET)
    assert trace.schema.source == {"parameters": "trace", "neutral": "legacy", "ocs": "legacy"}
    assert trace.schema.names == LEGACY_PARAM_NAMES
    assert trace.schema.neutral == LEGACY_SCHEMA.neutral
    assert {r["name"] for r in compute.ocs(trace)["rows"]} == {"plain", "block", "cyclic"}


def test_oc_table_without_rule_column_reads_the_rule_of_its_flags():
    """A dataset written before /space/ocs had a rule column (48 flag rows): each row's rule
    is its flags' and every setting's OC is the row its flags name, as the formula oc.hpp had
    then (((streaming * 3 + merge) * 2 + retiming) * 2 + prefetch) * 2 + tdeg > 1."""
    from isletune_analysis.trace import flag_rule
    path = DATASET.parent / "h100-full-star3d2r-512.h5"
    with h5py.File(path, "r") as f:
        assert "rule" not in f["space/ocs"].dtype.names and len(f["space/ocs"]) == 48
    trace = load_trace(path)
    assert trace.schema.source["ocs"] == "trace"
    assert trace.schema.ocs[17]["rule"] == "streaming=0,merge=2,retiming=0,prefetch=0,tdeg>1"
    assert all(r["rule"] == flag_rule(r) for r in trace.schema.ocs)
    v = trace.evaluations["values"].astype(np.int64)
    formula = (((v[:, 0] * 3 + v[:, 1]) * 2 + v[:, 2]) * 2 + v[:, 3]) * 2 + (v[:, 4] > 1)
    np.testing.assert_array_equal(trace.schema.oc_of(v), formula)


def test_a_rule_naming_a_parameter_the_trace_lacks_reads_its_neutral_value():
    """A family's own parameter (here `layout`) that a trace does not record counts as 0, its
    neutral value: an OC that needs layout=1 holds no setting of the trace, one with layout=0
    holds those its other values match."""
    from dataclasses import replace
    trace = load_trace(DATASET)
    rows = ({"oc": 0, "name": "plain", "rule": "streaming=0,layout=0,tdeg=1"},
            {"oc": 48, "name": "swizzled", "rule": "streaming=0,layout=1,tdeg=1"})
    schema = replace(trace.schema, ocs=rows)
    v = trace.evaluations["values"]
    ids = schema.oc_of(v)
    plain = (v[:, schema.index("streaming")] == 0) & (v[:, schema.index("tdeg")] == 1)
    np.testing.assert_array_equal(ids, np.where(plain, 0, -1))
    assert plain.any()


def test_a_selector_some_rules_name_is_neutral_in_the_rules_that_do_not_name_it():
    """A family selected by a parameter of its own (tests/axis: the template's tpl_on) names it
    in its OC's rule; the tiled OC 0 beside it does not, and holds it neutral: a setting with
    tpl_on=1 and OC 0's other values is the template's (48), not OC 0's, though OC 0 comes
    first and its rule names nothing tpl_on=1 contradicts."""
    from dataclasses import replace
    trace = load_trace(DATASET)
    rows = ({"oc": 0, "name": "tile", "rule": "streaming=0,merge=0,retiming=0,prefetch=0,tdeg=1"},
            {"oc": 48, "name": "template",
             "rule": "streaming=0,merge=0,retiming=0,prefetch=0,tpl_on=1,tdeg=1"})
    schema = replace(trace.schema, names=trace.schema.names + ("tpl_on",),
                     neutral=trace.schema.neutral + (0,), ocs=rows)
    v = trace.evaluations["values"].astype(np.int64)
    on = (np.arange(len(v)) % 2).reshape(-1, 1)
    ids = schema.oc_of(np.hstack([v, on]))
    s = schema.index
    tile = (v[:, s("streaming")] == 0) & (v[:, s("merge")] == 0) & (v[:, s("retiming")] == 0) \
        & (v[:, s("prefetch")] == 0) & (v[:, s("tdeg")] == 1)
    assert tile.any() and (tile & (on[:, 0] == 1)).any()
    np.testing.assert_array_equal(ids, np.where(tile, np.where(on[:, 0] == 1, 48, 0), -1))


def test_values_columns_are_mapped_by_name_and_a_missing_parameter_reads_neutral(tmp_path):
    """A dataset recorded before use_constant existed, its columns stored in another order."""
    copy = tmp_path / "old.h5"
    copy.write_bytes(DATASET.read_bytes())
    with h5py.File(copy, "r+") as f:
        g = f["ranks/0000"]
        ev = g["evaluations"]
        old = ev[()]
        attrs = {k: ev.attrs[k] for k in ev.attrs}
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in attrs["parameters"]]
        keep = list(reversed(range(17)))  # drops use_constant (column 17)
        fields = [(n, np.dtype(("<i4", (17,))) if n == "values" else old.dtype.fields[n][0])
                  for n in old.dtype.names]
        new = np.zeros(len(old), dtype=np.dtype(fields))
        for n in old.dtype.names:
            new[n] = old[n][:, keep] if n == "values" else old[n]
        del g["evaluations"]
        d = g.create_dataset("evaluations", data=new, maxshape=(None,), chunks=True)
        for k, v in attrs.items():
            d.attrs[k] = v
        d.attrs["parameters"] = np.array([names[i] for i in keep], dtype=h5py.string_dtype())
    before = load_trace(DATASET).evaluations["values"]
    after = load_trace(copy).evaluations["values"]
    expected = before.copy()
    expected[:, 17] = 0
    np.testing.assert_array_equal(after, expected)
    assert before[:, 17].any()


def _write(path: Path, **attrs) -> Path:
    """An HDF5 file with root attributes only."""
    with h5py.File(path, "w") as f:
        f.attrs.update(attrs)
    return path


@pytest.mark.parametrize("case,expected", [
    ("missing", "no such file"),
    ("text", "not an HDF5 file"),
    ("noformat", "not an isletune trace"),
    ("version", "version 2 is not supported"),
    ("empty", "nothing to analyse"),
])
def test_unusable_file_gives_one_sentence_and_exit_2(tmp_path, case, expected):
    path = tmp_path / f"{case}.h5"
    if case == "text":
        path.write_text("not hdf5\n")
    elif case == "noformat":
        _write(path, version=1)
    elif case == "version":
        _write(path, format="isletune-trace", version=2)
    elif case == "empty":
        _write(path, format="isletune-trace", version=1)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(path) in str(err.value) and expected in str(err.value)
    for command in (["summary"], ["ocs"], ["export-kt", "-o", str(tmp_path / "x.json")]):
        proc = analyze(*command, str(path))
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and expected in lines[0]
        assert "Traceback" not in proc.stderr

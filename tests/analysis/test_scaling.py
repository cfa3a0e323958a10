"""The scaling figures (analysis/isletune_analysis/scaling.py, bench/scaling.py) on small
hand-built traces whose answers are worked out by hand in the comments, plus the bench
command on generated traces and, when the isletune binary exists, on real replay runs."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import rawread
import tracegen
from conftest import ROOT, isletune_binary
from isletune_analysis import load_trace
from isletune_analysis.trace import parse_key
from isletune_analysis.scaling import (
    RunMetrics, compile_makespan, cross_island_repeats, immigrants_already_held, lockstep_schedule, run_metrics,
    schedule, study_table, target_ms)

BENCH = ROOT / "bench" / "scaling.py"

# --- the lockstep model ---------------------------------------------------------------


def test_lockstep_one_rank_never_waits():
    busy = np.array([[2.0, 0.5, 3.0]])
    done, end = lockstep_schedule(busy)
    assert done.tolist() == [[2.0, 2.5, 5.5]]
    assert end.tolist() == done.tolist()


def test_lockstep_waits_for_the_vote_of_the_previous_generation():
    # 3 ranks.
    # g0: done [1 2 1], nothing to wait for.      end [1 2 1]
    # g1: done [2 3 4]; vote of g0 cast by every rank at 2.  end [2 3 4]
    # g2: done [3 4 5]; vote of g1 complete at 4 (rank 2).  end [4 4 5]
    done, end = lockstep_schedule(np.array([[1.0, 1, 1], [2, 1, 1], [1, 3, 1]]))
    assert done.tolist() == [[1, 2, 3], [2, 3, 4], [1, 4, 5]]
    assert end.tolist() == [[1, 2, 4], [2, 3, 4], [1, 4, 5]]


def test_lockstep_vote_waits_for_an_island_that_is_no_neighbour():
    # 4 ranks on a ring: rank 0's neighbours are 1 and 3, not the slow rank 2.
    # g0: done [1 1 5 1].  g1: done [2 2 6 2]; votes of g0 cast at [1 1 5 1] -> every
    # rank leaves g1 no earlier than 5, rank 2 at 6.
    done, end = lockstep_schedule(np.array([[1.0, 1], [1, 1], [5, 1], [1, 1]]))
    assert done[:, 1].tolist() == [2, 2, 6, 2]
    assert end[:, 1].tolist() == [5, 5, 6, 5]


# --- a hand-built two-island run ------------------------------------------------------
#
# Rank 0 (cells 0, 1)                          Rank 1
#  g0: A 1.0 ms (1 s), B 2.0 ms (1 s)           g0: D 0.9 ms (2 s), A 1.0 ms (1 s)
#  g1: C 0.5 ms (1 s), A cache hit               g1: C 0.5 ms (3 s), B 2.0 ms (1 s)
#      migrant D from rank 1 takes cell 1        g2: G 0.6 ms (1 s), D cache hit -> cell 1
#  g2: E compile error (1 s), F 0.45 ms (1 s)        migrant C from rank 0 (already
#      (F, fitter, replaces D in cell 1)             measured here) takes cell 1 while
#                                                    cell 0 holds C
# Busy per generation: rank 0 [2 1 2], rank 1 [3 4 1]. Lockstep (2 ranks):
#  done [[2 3 5] [3 7 8]], end [[2 3 7] [3 7 8]]: rank 0 waits 2 s in g2 for rank
#  1's vote of its slow g1, and 1 s at the end for rank 1's last vote. Wall 8 s; busy
#  5/8 and 8/8.
# Target 0.55 ms: first met by C in g1 on rank 0 (done at 3 s); the slowest island's own
# clock at g1 is rank 1's 7 s. Final best F 0.45 ms.
# Repeats: rank 0: A (same generation as rank 1), C (same) -> 0 earlier, 2 same, 2 s;
# rank 1: A (same), C (same), B (rank 0 had it in g0: earlier) -> 1 earlier, 2 same,
# 1 + 3 + 1 = 5 s. Measured 10 rows of 7 distinct settings: 3 redundant.

KEYS = {name: tracegen.key_of([0, 0, 0, 0, 1, 0, 0, 32 * (i + 1), 1, 1, 1, 1, 1, 1, 1, 1, 0, 0])
        for i, name in enumerate("ABCDEFG")}
MS = {"A": 1.0, "B": 2.0, "C": 0.5, "D": 0.9, "E": math.nan, "F": 0.45, "G": 0.6}
# (generation, cell, setting, cost s, cached, migrant) in evaluation order.
ROWS = {
    0: [(0, 0, "A", 1, 0, 0), (0, 1, "B", 1, 0, 0), (1, 0, "C", 1, 0, 0), (1, 1, "A", 9, 1, 0),
        (1, 1, "D", 0, 0, 1), (2, 0, "E", 1, 0, 0), (2, 1, "F", 1, 0, 0)],
    1: [(0, 0, "D", 2, 0, 0), (0, 1, "A", 1, 0, 0), (1, 0, "C", 3, 0, 0), (1, 1, "B", 1, 0, 0),
        (2, 0, "G", 1, 0, 0), (2, 1, "D", 9, 1, 0), (2, 1, "C", 0, 1, 1)],
}
MIGRATIONS = {0: [(0, 1, -1, "C"), (1, 1, -1, "C"), (2, 1, -1, "F"), (1, -1, 1, "D")],
              1: [(0, 1, -1, "D"), (1, 1, -1, "C"), (2, 1, -1, "C"), (2, -1, 0, "C")]}
ISLAND_CLOCK = {0: [2.0, 3.0, 5.0], 1: [3.0, 7.0, 8.0]}  # simulated: busy only
DONE = {0: [2.0, 3.0, 5.0], 1: [3.0, 7.0, 8.0]}  # wall clock when each batch was done
END = {0: [2.0, 3.0, 7.0], 1: [3.0, 7.0, 8.0]}  # wall clock leaving each vote


def write_hand_run(run: Path, backend: str) -> Path:
    """The run above as a trace directory. `replay`: clocks are the islands' simulated
    clocks; `cuda`: the wall clocks a real run would record (DONE, END, wait_s)."""
    run.mkdir(parents=True)
    for rank, rows in ROWS.items():
        ev = []
        for i, (g, cell, name, cost, cached, migrant) in enumerate(rows):
            ms = MS[name]
            status = 0 if ms == ms else 2
            clock = ISLAND_CLOCK[rank][g] if backend == "replay" else DONE[rank][g]
            ev.append((i, g, cell, np.zeros(0, "i4"), parse_key(KEYS[name]),
                       KEYS[name], status, ms, np.full(3, ms), 600.0 * cost, 300.0 * cost,
                       100.0 * cost, 32, 0, 0.5, np.nan, np.nan, clock, cached, migrant, ""))
        clocks = ISLAND_CLOCK[rank] if backend == "replay" else END[rank]
        gens = [(g, clocks[g], END[rank][g] - DONE[rank][g] if backend == "cuda" else 0.001,
                 0.5, 1.0, 0.5, 2, 1) for g in range(3)]
        migs = [(g, d, p, KEYS[k], MS[k]) for g, d, p, k in MIGRATIONS[rank]]
        with h5py.File(run / f"rank-{rank:04d}.h5", "w") as f:
            f.attrs.update(format="isletune-rank", version=np.int32(1), rank=np.int32(rank))
            f["evaluations"] = np.array(ev, tracegen.EVAL_DT)
            f["generations"] = np.array(gens, tracegen.GEN_DT)
            f["migrations"] = np.array(migs, tracegen.MIG_DT)
    with h5py.File(run / "trace.h5", "w") as f:
        f.attrs.update(format="isletune-trace", version=np.int32(1), seed=np.uint64(3))
        f.create_group("config").attrs["yaml"] = (
            f"stencil: star2d1r\nevaluator:\n  backend: {backend}\n  timeout_s: 60\n")
        g = f.create_group("ranks")
        for rank in ROWS:
            g[f"{rank:04d}"] = h5py.ExternalLink(f"rank-{rank:04d}.h5", "/")
        f.create_group("result").attrs.update(stop_reason="mcr", median_ms=0.45)
    return run


@pytest.fixture(params=["replay", "cuda"])
def hand_run(request, tmp_path):
    return request.param, load_trace(write_hand_run(tmp_path / request.param, request.param))


def test_schedule_of_the_hand_run(hand_run):
    backend, trace = hand_run
    sched = schedule(trace)
    assert sched.busy.tolist() == [[2, 1, 2], [3, 4, 1]]
    assert sched.done.tolist() == [DONE[0], DONE[1]]
    assert sched.end.tolist() == [END[0], END[1]]
    assert sched.wall_s == 8.0


def test_compile_makespan_takes_the_next_kernel_on_the_first_free_thread():
    assert compile_makespan([3.0, 1, 1, 1], 2) == pytest.approx(0.003)
    assert compile_makespan([3.0, 1, 1, 1], 1) == pytest.approx(0.006)
    assert compile_makespan([2.0, 2, 2], 16) == pytest.approx(0.002)


def test_parallel_compile_schedule_of_the_hand_run(tmp_path):
    trace = load_trace(write_hand_run(tmp_path / "r", "replay"))
    # One thread: the replay clock itself (compile 0.6 s + GPU 0.4 s per cost second).
    assert np.allclose(schedule(trace, compile_threads=1).busy, [[2, 1, 2], [3, 4, 1]])
    # 16 threads: the batch's longest compile, then all its GPU work.
    # rank 0: g0 0.6 + 0.8, g1 0.6 + 0.4, g2 0.6 + 0.8 (E's failed compile still costs)
    # rank 1: g0 1.2 + 1.2, g1 1.8 + 1.6, g2 0.6 + 0.4
    assert np.allclose(schedule(trace, compile_threads=16).busy,
                       [[1.4, 1.0, 1.4], [2.4, 3.4, 1.0]])


def test_run_metrics_of_the_hand_run(hand_run):
    backend, trace = hand_run
    m = run_metrics(trace, 0.55)
    assert m.clock == ("simulated" if backend == "replay" else "recorded")
    assert (m.ranks, m.seed, m.generations, m.stop_reason) == (2, 3, 3, "mcr")
    assert m.final_best_ms == 0.45
    assert (m.hit_generation, m.time_to_target_s, m.slowest_clock_s) == (1, 3.0, 7.0)
    assert m.measured == [5, 5]
    assert m.busy_s == pytest.approx([5.0, 8.0])
    assert m.busy_fraction == pytest.approx([5 / 8, 1.0])
    # Verify + run are 0.4 s of each cost second: 5 and 8 cost seconds measured.
    assert m.gpu_fraction == pytest.approx([2.0 / 8, 3.2 / 8])
    # Rank 0 waits 2 s in g2 and 1 s after its last vote for rank 1's (8 s): 3 s.
    assert m.drain_s == pytest.approx([1.0, 0.0])
    assert m.wait_s == pytest.approx([3.0, 0.0])
    assert (m.sent, m.received, m.received_known, m.taken, m.taken_held) == \
        ([3, 3], [1, 1], [0, 1], [1, 1], [0, 1])
    # Final populations: rank 0 [C, F] (F, fitter, bred over the immigrant D), rank 1
    # [C, C] (cell 1 by the immigrant).
    assert (m.top_copies, m.top_from_immigrants) == ([1, 2], [0, 1])
    assert (m.repeats_earlier, m.repeats_same, m.redundant) == ([0, 1], [2, 2], 3)
    assert m.repeat_cost_s == pytest.approx([2.0, 5.0])
    assert m.cost_s == pytest.approx([5.0, 8.0])  # the cache hits' 9 s are no measurement


def test_target_never_reached_is_infinite(hand_run):
    _, trace = hand_run
    m = run_metrics(trace, 0.1)
    assert m.hit_generation is None
    assert math.isinf(m.time_to_target_s) and math.isinf(m.slowest_clock_s)


def test_target_is_the_best_of_all_runs_plus_tolerance(hand_run, tmp_path):
    _, trace = hand_run
    other = load_trace(tracegen.write_run(tmp_path / "other", ranks=1, seed=4))
    best_other = rawread.ok_times(rawread.measured(rawread.all_rows(other.path.parent))).min()
    best, target = target_ms([trace, other], 0.05)
    assert best == min(0.45, best_other)
    assert target == pytest.approx(best * 1.05)


# --- generated traces: figures against plain h5py readings ---------------------------


def test_repeats_and_busy_on_a_generated_run_match_a_direct_count(tmp_path):
    run = tracegen.write_run(tmp_path / "g", ranks=3, generations=6, population=8, seed=9).parent
    # The toy space is too large for chance repeats: rank 1's even cells of generation g
    # take the settings rank 0 bred for the same cells in generation g-1.
    with h5py.File(run / "rank-0000.h5", "r") as f:
        donor = f["evaluations"][()]
    with h5py.File(run / "rank-0001.h5", "r+") as f:
        ev = f["evaluations"][()]
        for i, (g, cell) in enumerate(zip(ev["generation"], ev["cell"])):
            same = (donor["generation"] == g - 1) & (donor["cell"] == cell) & (donor["migrant"] == 0)
            if g > 0 and cell >= 0 and cell % 2 == 0 and np.any(same):
                ev["key"][i] = donor["key"][same][0]
        f["evaluations"][...] = ev
    trace = load_trace(run)
    raw = rawread.rank_tables(run)
    measured = {r: rows[(rows["cached"] == 0) & (rows["migrant"] == 0)] for r, rows in raw.items()}
    # A measured row repeats when any other rank measured its key in an earlier generation.
    firsts = {}
    for r, rows in measured.items():
        for g, k in zip(rows["generation"], rows["key"]):
            firsts.setdefault((r, k), g)
    expected = [sum(1 for g, k in zip(rows["generation"], rows["key"])
                    if any(fg < g for (q, kk), fg in firsts.items() if kk == k and q != r))
                for r, rows in sorted(measured.items())]
    repeats = cross_island_repeats(trace)
    assert repeats.earlier == expected and sum(expected) > 0
    total = sum(len(rows) for rows in measured.values())
    distinct = len({k for rows in measured.values() for k in rows["key"]})
    assert repeats.redundant == total - distinct
    # tracegen's island clock advances only on measured rows: busy per generation is
    # the step of the last row's clock from one generation to the next.
    sched = schedule(trace)
    for i, rows in sorted(raw.items()):
        last = [rows["wall_s"][rows["generation"] == g].max() for g in range(6)]
        assert sched.busy[i] == pytest.approx(np.diff(last, prepend=0.0))


def test_held_immigrants_counted_against_the_population(tmp_path):
    # Cell 0 holds A; an immigrant A takes cell 1: held. An immigrant B then takes cell 0
    # (A now only in cell 1), then an immigrant A takes cell 0 again: held.
    rows = [(0, 0, 0, "A", 0, 0), (1, 0, 1, "B", 0, 0), (2, 1, 1, "A", 1, 1),
            (3, 1, 0, "B", 1, 1), (4, 2, 0, "A", 1, 1)]
    ev = np.zeros(len(rows), [("eval_id", "i8"), ("generation", "i4"), ("cell", "i4"),
                              ("key", "O"), ("cached", "?"), ("migrant", "?"),
                              ("status", "i1"), ("median_ms", "f8")])
    for i, (eid, g, cell, k, cached, migrant) in enumerate(rows):
        ev[i] = (eid, g, cell, k, cached, migrant, 0, {"A": 1.0, "B": 2.0}[k])
    assert immigrants_already_held(ev) == 2


# --- the per-rank-count table -----------------------------------------------------------


def _metrics(ranks: int, seed: int, time_s: float, busy: list[float]) -> RunMetrics:
    n = ranks
    return RunMetrics(
        path="x", ranks=ranks, seed=seed, clock="simulated", generations=5, stop_reason="mcr",
        final_best_ms=1.0 + seed / 10, target_ms=1.0, hit_generation=None if math.isinf(time_s)
        else 1, time_to_target_s=time_s, slowest_clock_s=time_s, wall_s=10.0,
        measured=[10] * n, busy_s=[b * 10 for b in busy], busy_fraction=busy, cost_s=[b * 10 for b in busy], gpu_fraction=[0.1] * n, wait_s=[1.0] * n, drain_s=[0.0] * n,
        recorded_wait_s=[0.0] * n, sent=[4] * n, received=[2 * (n > 1)] * n,
        received_known=[1 * (n > 1)] * n, taken=[2 * (n > 1)] * n,
        taken_held=[1 * (n > 1)] * n, top_copies=[4] * n, top_from_immigrants=[n - 1] * n,
        repeats_earlier=[2] * n, repeats_same=[0] * n,
        repeat_cost_s=[1.0] * n, redundant=n)


def test_study_table_medians_spread_and_speedup():
    runs = [_metrics(1, 1, 10.0, [1.0]), _metrics(1, 2, 20.0, [1.0]),
            _metrics(1, 3, math.inf, [1.0]),
            _metrics(4, 1, 5.0, [0.9, 0.7, 1, 1]), _metrics(4, 2, 6.0, [0.8] * 4),
            _metrics(4, 3, 8.0, [0.95] * 4)]
    one, four = study_table(runs)
    assert (one["ranks"], one["runs"], one["reached"]) == (1, 3, 2)
    assert one["time_to_target_s"] == {"median": 20.0, "min": 10.0, "max": math.inf}
    assert four["time_to_target_s"] == {"median": 6.0, "min": 5.0, "max": 8.0}
    assert four["speedup"] == pytest.approx(20 / 6)
    assert four["busy_min"] == {"median": 0.8, "min": 0.7, "max": 0.95}
    assert four["measured_per_gpu"]["median"] == 10.0
    assert four["repeats_fraction"]["median"] == pytest.approx(8 / 40)
    assert four["taken_held_fraction"]["median"] == 0.5
    assert four["stop_top_from_immigrants"]["median"] == 0.75


# --- the command ---------------------------------------------------------------------------


def _bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))


def test_bench_analyzes_runs_laid_out_by_rank_count_and_seed(tmp_path):
    for ranks in (1, 2):
        for seed in (1, 2):
            tracegen.write_run(tmp_path / "toy" / f"np{ranks}-seed{seed}", ranks=ranks, seed=seed)
    proc = _bench("--analyze", str(tmp_path), "--runs", "--json", str(tmp_path / "f.json"))
    assert proc.returncode == 0, proc.stderr
    assert "== toy: 4 runs, clock simulated" in proc.stdout
    lines = proc.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.split()[:2] == ["R", "seeds"])
    table = [line.split() for line in lines[first + 1:first + 3]]
    assert [(row[0], row[1]) for row in table] == [("1", "2"), ("2", "2")]
    busy = [line.split() for line in lines[first + 4:first + 6]]
    assert [row[0] for row in busy] == ["1", "2"] and busy[0][1] == "100"
    assert "all targets met:" in proc.stdout


def test_bench_says_so_when_the_folder_is_missing_or_holds_no_runs(tmp_path):
    proc = _bench("--analyze", str(tmp_path / "nowhere"))
    assert proc.returncode != 0 and "no such directory" in proc.stderr
    (tmp_path / "toy" / "not-a-run").mkdir(parents=True)
    proc = _bench("--analyze", str(tmp_path))
    assert proc.returncode != 0 and "no runs found" in proc.stderr


def test_bench_on_real_replay_runs(tmp_path):
    binary = isletune_binary()
    if binary is None:
        pytest.skip("isletune binary not found (ISLETUNE_BIN); no replay runs")
    proc = _bench("--problem", "star2d1r", "--ranks", "1,2", "--seeds", "2", "--nice", "0",
                  "--build", str(binary.parent.parent), "--work", str(tmp_path), "--runs")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for ranks in (1, 2):
        for seed in (1, 2):
            run = tmp_path / "star2d1r" / f"np{ranks}-seed{seed}"
            raw = rawread.rank_tables(run)
            meas = {r: int(np.count_nonzero((t["cached"] == 0) & (t["migrant"] == 0)))
                    for r, t in raw.items()}
            line = next(l for l in proc.stdout.splitlines() if l.startswith(run.name + " "))
            assert float(line.split()[8]) == pytest.approx(sum(meas.values()) / ranks, abs=0.05)


def test_async_islands_reach_the_target_past_the_generations_every_island_completed(tmp_path):
    # Async islands (ga.migration.drift async) end in different generations: rank 1 of the hand
    # run goes on to generation 3 (clock 9.5 s) and there measures a kernel faster than any
    # before (0.3 ms, done at 9.0 s). The run reaches a 0.35-ms target then, on that island's
    # own clock, though rank 0 never had a generation 3.
    run = write_hand_run(tmp_path / "async", "cuda")
    with h5py.File(run / "rank-0001.h5", "r+") as f:
        ev = f["evaluations"][:]
        gens = f["generations"][:]
        extra = ev[-1:].copy()
        extra["eval_id"] = len(ev)
        extra["generation"] = 3
        extra["cached"] = 0
        extra["migrant"] = 0
        extra["status"] = 0
        extra["median_ms"] = 0.3
        extra["wall_s"] = 9.0
        g3 = gens[-1:].copy()
        g3["generation"] = 3
        g3["wall_s"] = 9.5
        del f["evaluations"], f["generations"]
        f["evaluations"] = np.concatenate([ev, extra])
        f["generations"] = np.concatenate([gens, g3])
    trace = load_trace(run)
    m = run_metrics(trace, 0.35)
    assert m.clock == "recorded"
    assert (m.hit_generation, m.time_to_target_s, m.slowest_clock_s) == (3, 9.0, 9.0)
    # Targets met in the common generations keep the lockstep schedule's answer.
    assert run_metrics(trace, 0.55).time_to_target_s == 3.0

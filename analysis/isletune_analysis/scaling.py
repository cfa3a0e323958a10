"""Scaling figures of island-GA runs with 1, 2, 4 ... ranks (issue 13, bench/scaling.py).

Per run: time until the best-so-far is within a tolerance of a target, final best,
measurements per GPU, GPU-busy fraction, time spent waiting on neighbours, migrants sent
and received, and measurements that repeat a setting another island measured. Per rank
count: medians over seeds and the spread.

Two clocks (docs/studies/2026-11-23-scaling-1-2-4-islands.md):

- `recorded` (CUDA runs): the trace's clocks are wall clocks. A rank's evaluation rows
  carry the time its batch finished, its generation rows the time it left the stop vote,
  and `wait_s` the time it waited on its neighbours.
- `simulated` (replay runs): each island's clock is the sum of the recorded compile +
  verify + run costs of its own measurements; it never advances while the island waits,
  and the recorded `wait_s` is host time, not GPU time. The run's wall clock is rebuilt
  by `lockstep_schedule` from the per-generation busy time of every island and the
  synchronisation of the search loop (docs/architecture.md, "The search loop"; src/ga/search.cpp): the pipelined
  stop vote of generation g-1 from every island (which also covers the migrants of
  generation g-1 from both ring neighbours, migrator lag 1). The issue's simpler figure, the slowest
  island's own clock at the generation that reached the target, is reported next to it
  (`slowest_clock_s`): the gap between the two is the time islands spent held back by a
  slower one.

Row conventions (compute.py): *measured* rows are neither cache hits nor migrants; only
they cost GPU time and only they count as measurements. Cache hits are never read for
anything but counts, so a writer that records them more compactly changes nothing here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from .compute import measured_mask, ok_mask
from .trace import Trace, find_key

CLOCKS = ("auto", "simulated", "recorded")


def clock_kind(trace: Trace, clock: str = "auto") -> str:
    """`simulated` for replay runs, `recorded` for runs on a GPU (or as `clock` forces)."""
    if clock not in CLOCKS:
        raise ValueError(f"clock {clock!r} is not one of {', '.join(CLOCKS)}")
    if clock != "auto":
        return clock
    evaluator = find_key(trace.config, ("evaluator",))
    backend = evaluator.get("backend") if isinstance(evaluator, dict) else None
    if backend is None:
        backend = find_key(trace.config, ("backend",))
    if backend is not None:
        return "simulated" if str(backend) == "replay" else "recorded"
    gpus = {str(r.environment.get("gpu_name", "")) for r in trace.ranks}
    return "simulated" if gpus == {"replay"} else "recorded"


@dataclass
class Schedule:
    """Per rank (rows) and generation (columns): busy seconds, the time the generation's
    batch of measurements was done, and the time the rank left the generation's stop
    vote; `wait` = end - done (waiting on neighbours and at the vote)."""

    generations: np.ndarray
    busy: np.ndarray
    done: np.ndarray
    end: np.ndarray

    @property
    def wait(self) -> np.ndarray:
        return self.end - self.done

    @property
    def wall_s(self) -> float:
        """The run's wall time: the last rank leaving the last vote."""
        return float(self.end[:, -1].max()) if self.end.size else 0.0


def lockstep_schedule(busy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(done, end) times of every rank and generation when the islands run as the search
    loop synchronises them, from each island's busy seconds per generation (R × G).

    Generation g of rank r: its batch is done at A[r,g] = E[r,g-1] + busy[r,g]; it then
    receives the migrants its ring neighbours sent after their generation g-1 (migrator
    lag 1) and votes; the pipelined vote returns the vote of generation g-1, complete
    once every rank has cast it, so E[r,g] = max(A[r,g], max_q A[q,g-1]). The migrants
    never add a wait of their own: a neighbour's generation g-1 is done by max_q A[q,g-1]
    (and each rank cast its vote g-1 right after its batch g-1, since its own migrant
    wait then was covered by the vote of g-2). Generation 0 waits for nothing (no migrant
    is due yet, the first vote returns at once).
    """
    busy = np.asarray(busy, dtype="f8")
    done = np.zeros_like(busy)
    end = np.zeros_like(busy)
    for g in range(busy.shape[1]):
        done[:, g] = (end[:, g - 1] if g else 0.0) + busy[:, g]
        end[:, g] = np.maximum(done[:, g], done[:, g - 1].max()) if g else done[:, g]
    return done, end


def _common_generations(trace: Trace) -> np.ndarray:
    """Generation numbers every rank recorded (a killed run may have ranks cut short)."""
    sets = [set(r.generations["generation"].tolist()) for r in trace.ranks]
    if not sets or not all(sets):
        sets = [set(r.evaluations["generation"].tolist()) for r in trace.ranks]
    common = set.intersection(*sets) if sets else set()
    return np.asarray(sorted(common), dtype="i4")


def measured_cost_s(evals: np.ndarray) -> np.ndarray:
    """Seconds of compile + verify + run of each row (0 where not recorded)."""
    parts = [evals[name] for name in ("compile_ms", "verify_ms", "run_ms")
             if name in (evals.dtype.names or ())]
    if not parts:
        return np.zeros(len(evals))
    return np.nansum(np.vstack(parts), axis=0) * 1e-3


def compile_makespan(compile_ms: Sequence[float], threads: int) -> float:
    """Seconds to compile a batch on `threads` threads that each take the next kernel
    when free, in batch order (the CUDA worker's pool, src/eval/cuda/worker_main.cpp)."""
    free = [0.0] * max(1, threads)
    for ms in compile_ms:
        i = free.index(min(free))
        free[i] += (ms if ms == ms else 0.0) * 1e-3
    return max(free)


def batch_seconds(evals: np.ndarray, threads: int) -> float:
    """A batch's time on the CUDA worker: its kernels compiled in parallel, then verified
    and timed one after another (measured rows only)."""
    rows = evals[measured_mask(evals)]
    gpu = np.nansum(rows["verify_ms"]) + np.nansum(rows["run_ms"])
    return compile_makespan(rows["compile_ms"].tolist(), threads) + float(gpu) * 1e-3


def schedule(trace: Trace, clock: str = "auto", compile_threads: int | None = None) -> Schedule:
    """The run's per-rank, per-generation busy, done and end times on the chosen clock.

    Simulated clock: each island's busy time per generation is the step of its recorded
    clock (replay: the sum of the batch's compile + verify + run costs, as if compiled
    one kernel after another), or, with `compile_threads`, the batch's time on the CUDA
    worker (`batch_seconds`: compiles in parallel, then the GPU work in sequence).
    """
    kind = clock_kind(trace, clock)
    gens = _common_generations(trace)
    ranks = len(trace.ranks)
    busy = np.zeros((ranks, len(gens)))
    index = {int(g): i for i, g in enumerate(gens)}
    if kind == "simulated":
        for i, r in enumerate(trace.ranks):
            table = r.generations
            e = r.evaluations
            if compile_threads:
                busy[i] = [batch_seconds(e[e["generation"] == g], compile_threads) for g in gens]
                continue
            if len(table):
                clock_at = dict(zip(table["generation"].tolist(), table["wall_s"].tolist()))
                series = np.asarray([clock_at[int(g)] for g in gens])
            else:  # no generations table: the evaluation rows' clock per generation
                series = np.asarray([np.nanmax(e["wall_s"][e["generation"] == g]) for g in gens])
            busy[i] = np.diff(series, prepend=0.0)
        done, end = lockstep_schedule(busy)
        return Schedule(gens, busy, done, end)
    # Recorded clock: a batch keeps the evaluator busy from the rank's previous vote until
    # its last result (compiles overlap, so the summed costs would exceed the wall time).
    done = np.zeros_like(busy)
    end = np.zeros_like(busy)
    for i, r in enumerate(trace.ranks):
        e = r.evaluations
        meas = measured_mask(e)
        ends = dict(zip(r.generations["generation"].tolist(), r.generations["wall_s"].tolist()))
        previous = 0.0
        for g in gens:
            j = index[int(g)]
            rows = meas & (e["generation"] == g)
            done[i, j] = float(np.nanmax(e["wall_s"][rows])) if np.any(rows) else previous
            busy[i, j] = done[i, j] - previous
            end[i, j] = ends.get(int(g), done[i, j])
            previous = end[i, j]
    return Schedule(gens, busy, done, end)


def final_best_ms(trace: Trace) -> float:
    """Fastest ok time measured by any island (NaN if none)."""
    evals = trace.evaluations
    ok = ok_mask(evals) & measured_mask(evals)
    return float(evals["median_ms"][ok].min()) if np.any(ok) else math.nan


@dataclass
class Repeats:
    """Measurements of settings another island measured too (per rank): in an earlier
    generation (`earlier`: the knowledge existed, only no island could see it), in the
    same generation (`same`), their cost in busy seconds, and the run's measurements
    beyond the first of each setting over all islands (`redundant`)."""

    earlier: list[int]
    same: list[int]
    cost_s: list[float]
    redundant: int


def cross_island_repeats(trace: Trace) -> Repeats:
    """Which measured rows repeat a setting another island measured (by key, generation)."""
    first: dict[tuple[int, str], int] = {}  # (rank, key) -> first generation measured there
    by_key: dict[str, list[tuple[int, int]]] = {}  # key -> [(generation, rank)] firsts
    for r in trace.ranks:
        e = r.evaluations[measured_mask(r.evaluations)]
        for g, k in zip(e["generation"].tolist(), e["key"].tolist()):
            if (r.rank, k) not in first:
                first[(r.rank, k)] = g
                by_key.setdefault(k, []).append((g, r.rank))
    earlier, same, cost = [], [], []
    measured_total = 0
    for r in trace.ranks:
        mask = measured_mask(r.evaluations)
        e = r.evaluations[mask]
        c = measured_cost_s(e)
        n_earlier = n_same = 0
        wasted = 0.0
        for g, k, seconds in zip(e["generation"].tolist(), e["key"].tolist(), c.tolist()):
            others = [og for og, q in by_key[k] if q != r.rank]
            if any(og < g for og in others):
                n_earlier += 1
                wasted += seconds
            elif any(og == g for og in others):
                n_same += 1
                wasted += seconds
        earlier.append(n_earlier)
        same.append(n_same)
        cost.append(wasted)
        measured_total += len(e)
    return Repeats(earlier, same, cost, measured_total - len(by_key))


def fitness_by_key(evals: np.ndarray) -> dict[str, float]:
    """1 / median ms of every setting an island measured or received (0 when failed)."""
    fit: dict[str, float] = {}
    ok = ok_mask(evals)
    source = measured_mask(evals) | evals["migrant"]
    for k, t, good in zip(evals["key"][source].tolist(), evals["median_ms"][source].tolist(),
                          ok[source].tolist()):
        fit.setdefault(k, 1.0 / t if good else 0.0)
    return fit


@dataclass
class PopulationReplay:
    """An island's population rebuilt from its rows: `held` immigrants took a cell while
    the population already held their setting; `cells` maps each cell to its final
    setting and whether an immigrant put it there."""

    held: int
    cells: dict[int, tuple[str, bool]]

    def top_copies(self) -> tuple[int, int]:
        """(copies of the most frequent setting, how many of them immigrants placed)."""
        counts: dict[str, list[int]] = {}
        for key, immigrant in self.cells.values():
            entry = counts.setdefault(key, [0, 0])
            entry[0] += 1
            entry[1] += int(immigrant)
        if not counts:
            return 0, 0
        # Ties between settings: the one with fewer immigrant copies (the lower share).
        copies, placed = max(counts.values(), key=lambda e: (e[0], -e[1]))
        return copies, placed


def replay_population(evals: np.ndarray) -> PopulationReplay:
    """Rebuilds the population from the rows in eval_id order: generation-0 rows fill
    their cells, a bred child replaces its cell when strictly fitter (docs/architecture.md, "The island GA"), a
    migrant row with a cell took that cell. Fitness comes from the island's measured and
    migrant rows by key, so cache-hit rows need only their key and cell.
    """
    fit = fitness_by_key(evals)
    cells: dict[int, tuple[str, bool]] = {}
    held = 0
    for i in np.argsort(evals["eval_id"], kind="stable"):
        row = evals[i]
        key, cell = str(row["key"]), int(row["cell"])
        if cell < 0:
            continue
        if row["migrant"]:
            if any(k == key for k, _ in cells.values()):
                held += 1
            cells[cell] = (key, True)
        elif row["generation"] == 0 or cell not in cells \
                or fit.get(key, 0.0) > fit.get(cells[cell][0], 0.0):
            cells[cell] = (key, False)
    return PopulationReplay(held, cells)


def immigrants_already_held(evals: np.ndarray) -> int:
    """Immigrants that took a cell while the island's population already held their setting."""
    return replay_population(evals).held


@dataclass
class RunMetrics:
    """One run's scaling figures; lists hold one entry per rank."""

    path: str
    ranks: int
    seed: int | None
    clock: str
    generations: int
    stop_reason: str
    final_best_ms: float
    target_ms: float
    hit_generation: int | None  # first generation in which some island measured the target
    time_to_target_s: float  # inf when never reached
    slowest_clock_s: float  # slowest island's own clock at hit_generation (inf if never)
    wall_s: float
    measured: list[int]
    busy_s: list[float]  # time the rank's evaluator spent on its batches (Schedule.busy)
    busy_fraction: list[float]  # busy_s / wall_s
    cost_s: list[float]  # compile + verify + run summed over the rank's measurements
    gpu_fraction: list[float]  # (verify + run) / wall_s: the GPU itself at work
    # Waiting on the other islands, on the run's clock: per generation (modelled for the
    # simulated clock, the recorded `wait_s` else) plus `drain_s`, the time between the
    # rank's last vote and the end of the run (the last rank's last vote).
    wait_s: list[float]
    drain_s: list[float]
    recorded_wait_s: list[float]
    sent: list[int]  # emigrant rows (each goes to both ring neighbours)
    received: list[int]
    received_known: list[int]  # immigrants the island had already measured or received
    taken: list[int]  # immigrants that replaced a cell of the population
    taken_held: list[int]  # ... while the population already held their setting
    top_copies: list[int]  # copies of the most frequent setting in the final population
    top_from_immigrants: list[int]  # ... of which immigrants placed
    repeats_earlier: list[int]
    repeats_same: list[int]
    repeat_cost_s: list[float]
    redundant: int
    extras: dict[str, Any] = field(default_factory=dict)


def run_metrics(trace: Trace, target_ms: float, clock: str = "auto",
                compile_threads: int | None = None) -> RunMetrics:
    """The scaling figures of one run for a target time (ms per step, already including
    the tolerance): the run reaches it when some island measures a setting at most that
    fast."""
    kind = clock_kind(trace, clock)
    sched = schedule(trace, kind, compile_threads)
    column = {int(g): j for j, g in enumerate(sched.generations)}
    hit_time, hit_gen = math.inf, None
    for i, r in enumerate(trace.ranks):
        e = r.evaluations
        hits = measured_mask(e) & ok_mask(e) & (e["median_ms"] <= target_ms)
        for g in np.unique(e["generation"][hits]).tolist():
            if g in column:
                t = float(sched.done[i, column[g]])
            elif kind == "recorded":
                # Async islands end in different generations (ga.migration.drift async): past
                # the ones every island completed, the island's own clock when it measured.
                t = float(np.nanmax(e["wall_s"][hits & (e["generation"] == g)]))
            else:
                continue
            if t < hit_time or (t == hit_time and (hit_gen is None or g < hit_gen)):
                hit_time, hit_gen = t, int(g)
    if hit_gen is None:
        slowest = math.inf
    elif hit_gen not in column:
        slowest = hit_time  # an async island's own clock (above)
    else:
        own_clock = np.cumsum(sched.busy, axis=1) if kind == "simulated" else sched.end
        slowest = float(own_clock[:, column[hit_gen]].max())
    wall = sched.wall_s
    repeats = cross_island_repeats(trace)
    measured, busy, frac, wait, rec_wait, drain, gpu, cost = [], [], [], [], [], [], [], []
    sent, received, known, taken, held, top, top_imm = [], [], [], [], [], [], []
    for i, r in enumerate(trace.ranks):
        e = r.evaluations
        m = measured_mask(e)
        measured.append(int(np.count_nonzero(m)))
        b = float(sched.busy[i].sum())
        busy.append(b)
        cost.append(float(measured_cost_s(e[m]).sum()))
        frac.append(b / wall if wall > 0 else math.nan)
        gpu_s = float(np.nansum(e["verify_ms"][m]) + np.nansum(e["run_ms"][m])) * 1e-3
        gpu.append(gpu_s / wall if wall > 0 else math.nan)
        tail = wall - float(sched.end[i, -1]) if sched.end.size else 0.0
        drain.append(tail)
        wait.append(tail + (float(sched.wait[i].sum()) if kind == "simulated"
                            else float(np.nansum(r.generations["wait_s"]))))
        rec_wait.append(float(np.nansum(r.generations["wait_s"])))
        mig = r.migrations
        sent.append(int(np.count_nonzero(mig["direction"] > 0)))
        received.append(int(np.count_nonzero(mig["direction"] < 0)))
        arrivals = e[e["migrant"]]
        known.append(int(np.count_nonzero(arrivals["cached"])))
        taken.append(int(np.count_nonzero(arrivals["cell"] >= 0)))
        population = replay_population(e)
        held.append(population.held)
        copies, placed = population.top_copies()
        top.append(copies)
        top_imm.append(placed)
    result = trace.result or {}
    return RunMetrics(
        path=str(trace.path), ranks=len(trace.ranks), seed=trace.seed, clock=kind,
        generations=int(sched.generations.max()) + 1 if len(sched.generations) else 0,
        stop_reason=str(result.get("stop_reason", "")), final_best_ms=final_best_ms(trace),
        target_ms=target_ms, hit_generation=hit_gen, time_to_target_s=hit_time,
        slowest_clock_s=slowest, wall_s=wall, measured=measured, busy_s=busy,
        busy_fraction=frac, cost_s=cost, gpu_fraction=gpu, wait_s=wait, drain_s=drain, recorded_wait_s=rec_wait, sent=sent,
        received=received, received_known=known, taken=taken, taken_held=held,
        top_copies=top, top_from_immigrants=top_imm,
        repeats_earlier=repeats.earlier, repeats_same=repeats.same,
        repeat_cost_s=repeats.cost_s, redundant=repeats.redundant)


def target_ms(traces: Iterable[Trace], tolerance: float = 0.05) -> tuple[float, float]:
    """(best time any run found, the target: that best × (1 + tolerance))."""
    best = min((final_best_ms(t) for t in traces), default=math.nan,
               key=lambda x: x if x == x else math.inf)
    return best, best * (1 + tolerance)


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, minimum and maximum of a list (inf counts as a value: never reached)."""
    a = np.asarray(values, dtype="f8")
    if not len(a):
        return {"median": math.nan, "min": math.nan, "max": math.nan}
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max())}


def _top_share(run: RunMetrics) -> float:
    """Share of the most converged island's top-setting copies that immigrants placed."""
    i = int(np.argmax(run.top_copies)) if run.top_copies else 0
    return run.top_from_immigrants[i] / run.top_copies[i] if run.top_copies and \
        run.top_copies[i] else 0.0


def study_table(runs: Sequence[RunMetrics]) -> list[dict[str, Any]]:
    """One row per rank count: medians over seeds and their spread, speed-ups against
    the fewest ranks (ratio of median times to the target)."""
    rows = []
    for ranks in sorted({r.ranks for r in runs}):
        mine = [r for r in runs if r.ranks == ranks]
        measured = [sum(r.measured) for r in mine]
        row = {
            "ranks": ranks,
            "runs": len(mine),
            "seeds": [r.seed for r in mine],
            "reached": sum(1 for r in mine if math.isfinite(r.time_to_target_s)),
            "time_to_target_s": spread([r.time_to_target_s for r in mine]),
            "slowest_clock_s": spread([r.slowest_clock_s for r in mine]),
            "hit_generation": spread([r.hit_generation if r.hit_generation is not None
                                      else math.inf for r in mine]),
            "final_best_ms": spread([r.final_best_ms for r in mine]),
            "wall_s": spread([r.wall_s for r in mine]),
            "generations": spread([r.generations for r in mine]),
            "measured_per_gpu": spread([float(np.mean(r.measured)) for r in mine]),
            "busy_min": spread([min(r.busy_fraction) for r in mine]),
            "busy_mean": spread([float(np.mean(r.busy_fraction)) for r in mine]),
            "gpu_min": spread([min(r.gpu_fraction) for r in mine]),
            "wait_per_gpu_s": spread([float(np.mean(r.wait_s)) for r in mine]),
            "wait_fraction": spread([float(np.mean(r.wait_s)) / r.wall_s if r.wall_s > 0
                                     else math.nan for r in mine]),
            "sent_per_gpu": spread([float(np.mean(r.sent)) for r in mine]),
            "received_per_gpu": spread([float(np.mean(r.received)) for r in mine]),
            "received_known_fraction": spread([sum(r.received_known) / sum(r.received)
                                               if sum(r.received) else 0.0 for r in mine]),
            "taken_fraction": spread([sum(r.taken) / sum(r.received) if sum(r.received)
                                      else 0.0 for r in mine]),
            "taken_held_fraction": spread([sum(r.taken_held) / sum(r.received)
                                           if sum(r.received) else 0.0 for r in mine]),
            # On the island whose final population is the most converged (the one that
            # tripped the MCR stop): the share of its top setting's copies immigrants put there.
            "stop_top_from_immigrants": spread([_top_share(r) for r in mine]),
            "repeats_earlier": spread([float(sum(r.repeats_earlier)) for r in mine]),
            "repeats_fraction": spread([(sum(r.repeats_earlier) + sum(r.repeats_same)) / m
                                        if m else 0.0 for r, m in zip(mine, measured)]),
            "redundant_fraction": spread([r.redundant / m if m else 0.0
                                          for r, m in zip(mine, measured)]),
            "repeat_cost_fraction": spread([sum(r.repeat_cost_s) / sum(r.cost_s)
                                            if sum(r.cost_s) > 0 else 0.0 for r in mine]),
        }
        rows.append(row)
    if rows:
        base = rows[0]["time_to_target_s"]["median"]
        for row in rows:
            t = row["time_to_target_s"]["median"]
            row["speedup"] = base / t if t > 0 and math.isfinite(t) and math.isfinite(base) \
                else math.nan
    return rows

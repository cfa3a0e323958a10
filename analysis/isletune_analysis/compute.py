"""Numbers behind every subcommand, computed from loaded traces (no drawing here).

Conventions: a row is *measured* when it is neither a cache hit nor a migrant (those
repeat a measurement made elsewhere); a row is *ok* when its status is ok and its median
time is a positive number. Times are milliseconds per time step, clocks are the
evaluator's seconds (simulated for replay).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

from .trace import MERGE_NAMES, STATUS_NAMES, Schema, Trace, find_key

OC_COUNT = 48


def measured_mask(evals: np.ndarray) -> np.ndarray:
    """Rows that are new measurements (not cache hits, not migrants)."""
    return ~evals["cached"] & ~evals["migrant"]


def ok_mask(evals: np.ndarray) -> np.ndarray:
    """Rows with status ok and a usable median time."""
    t = evals["median_ms"]
    return (evals["status"] == 0) & np.isfinite(t) & (t > 0)


def cumulative_best(times: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Best-so-far time after each row (NaN until the first ok row)."""
    masked = np.where(ok, times, np.inf)
    best = np.minimum.accumulate(masked) if len(masked) else masked
    return np.where(np.isfinite(best), best, np.nan)


def gcells_per_s(grid: Sequence[int] | None, ms_per_step: float) -> float:
    """Giga cell-updates per second for a time per step (NaN without a grid)."""
    if not grid or not (ms_per_step > 0):
        return math.nan
    return float(np.prod(grid)) / (ms_per_step * 1e-3) / 1e9


def _get(d: dict[str, Any] | None, *names: str) -> Any:
    """First present attribute among `names` (writers may spell keys slightly differently)."""
    if not d:
        return None
    for name in names:
        if name in d:
            return d[name]
    return None


# --- summary -------------------------------------------------------------------------


def summary(trace: Trace) -> dict[str, Any]:
    """Best setting, its time and GCells/s, stop reason, status counts, per-island figures."""
    evals = trace.evaluations
    meas = measured_mask(evals)
    ok = ok_mask(evals)
    grid = trace.grid
    best: dict[str, Any] = {"key": None, "median_ms": math.nan, "gcells_per_s": math.nan,
                            "rank": None, "source": "evaluations"}
    if np.any(ok):
        i = int(np.argmin(np.where(ok, evals["median_ms"], np.inf)))
        best.update(key=str(evals["key"][i]), median_ms=float(evals["median_ms"][i]),
                    rank=int(evals["rank"][i]),
                    values=dict(zip(trace.schema.names, map(int, evals["values"][i]))))
        best["gcells_per_s"] = gcells_per_s(grid, best["median_ms"])
    result = trace.result
    result_best = {
        "key": _get(result, "best_key", "key"),
        "median_ms": _get(result, "median_ms", "best_ms"),
        "gcells_per_s": _get(result, "gcells_per_s", "GCells/s", "gcells"),
    }
    if result and result_best["key"] is not None:
        best_from_evals = best.copy()
        best.update(key=str(result_best["key"]), source="result")
        if result_best["median_ms"] is not None:
            best["median_ms"] = float(result_best["median_ms"])
        if result_best["gcells_per_s"] is not None:
            best["gcells_per_s"] = float(result_best["gcells_per_s"])
        best["evaluations_best_ms"] = best_from_evals["median_ms"]
    stop = _get(result, "stop_reason", "stop reason", "stop")
    status_counts = {name: int(np.count_nonzero(meas & (evals["status"] == code)))
                     for code, name in enumerate(STATUS_NAMES)}
    islands = []
    for r in trace.ranks:
        e, g = r.evaluations, r.generations
        m, o = measured_mask(e), ok_mask(e)
        island_best = float(np.min(e["median_ms"][o])) if np.any(o) else math.nan
        islands.append({
            "rank": r.rank,
            "measured": int(np.count_nonzero(m)),
            "ok": int(np.count_nonzero(m & o)),
            "failed": int(np.count_nonzero(m & ~o)),
            # cache hits: rows of older traces (migrants aside), per-generation counts of
            # newer ones; the same count as `isletune report`
            "cached": int(np.count_nonzero(e["cached"] & ~e["migrant"])) + (
                int(np.sum(g["cache_hits"])) if len(g) else 0),
            "migrants": int(np.count_nonzero(e["migrant"])),
            # of measured: made while the island would have waited (ga.migration.fill)
            "fills": int(np.sum(g["fills"])) if len(g) else 0,
            "restarts": int(np.sum(g["restart"])) if len(g) else 0,
            "best_ms": island_best,
            # generations after the initial population (generation 0), as /result counts
            # them and `isletune report` prints them
            "generations": int(g["generation"].max()) if len(g) else 0,
            "wall_s": float(np.nanmax(e["wall_s"])) if len(e) else math.nan,
            "wait_s": float(np.sum(g["wait_s"])) if len(g) else 0.0,
            "final_mcr": float(g["mcr"][-1]) if len(g) else math.nan,
            "gpu": str(_get(r.environment, "gpu_name", "gpu", "GPU name") or ""),
        })
    return {
        "path": str(trace.path),
        "kind": trace.kind,
        "stencil": str(trace.stencil.get("name", "")),
        "grid": grid,
        "strategy": trace.strategy,
        "seed": trace.seed,
        "ranks": len(trace.ranks),
        "best": best,
        "stop_reason": str(stop) if stop is not None else (
            "none (dataset)" if trace.kind == "dataset" else "unfinished (no /result)"),
        "evaluations": int(np.count_nonzero(meas)),
        "status_counts": status_counts,
        "wall_s": float(np.nanmax(evals["wall_s"])) if len(evals) else math.nan,
        "islands": islands,
        # as `isletune report` says it (src/trace/trace_types.hpp, replayed_label)
        "replayed": (f"replayed from {trace.replayed_from}, clock simulated"
                     if trace.replayed_from is not None else ""),
    }


# --- convergence ---------------------------------------------------------------------


@dataclass
class Curve:
    """Best-so-far time after each row of one series (an island or the whole run)."""

    label: str
    wall_s: np.ndarray
    evaluations: np.ndarray  # measured evaluations so far (the x axis "vs evaluations")
    best_ms: np.ndarray


def island_curve(trace: Trace, rank: int) -> Curve:
    """Best-so-far on one island over its own rows (immigrants included: they are its best)."""
    r = next(x for x in trace.ranks if x.rank == rank)
    e = np.sort(r.evaluations, order="eval_id")
    label = "measurements in recording order" if trace.kind == "dataset" else f"island {rank}"
    return Curve(label, e["wall_s"].copy(), np.cumsum(measured_mask(e)),
                 cumulative_best(e["median_ms"], ok_mask(e)))


def overall_curve(trace: Trace, label: str = "overall") -> Curve:
    """Best-so-far over all islands' measurements merged by evaluator clock."""
    e = trace.evaluations
    e = e[measured_mask(e)]
    order = np.lexsort((e["eval_id"], e["rank"], e["wall_s"]))
    e = e[order]
    return Curve(label, e["wall_s"].copy(), np.arange(1, len(e) + 1),
                 cumulative_best(e["median_ms"], ok_mask(e)))


def migration_events(trace: Trace) -> list[dict[str, Any]]:
    """Received migrants: island, generation, clock, time, and whether it improved the island."""
    events = []
    for r in trace.ranks:
        gen_wall = {int(g["generation"]): float(g["wall_s"]) for g in r.generations}
        curve = island_curve(trace, r.rank)
        for m in r.migrations:
            if int(m["direction"]) >= 0:
                continue
            wall = gen_wall.get(int(m["generation"]), math.nan)
            before = curve.best_ms[curve.wall_s < wall] if math.isfinite(wall) else np.zeros(0)
            prior = float(np.nanmin(before)) if len(before) and np.any(np.isfinite(before)) \
                else math.inf
            events.append({"rank": r.rank, "generation": int(m["generation"]),
                           "peer": int(m["peer"]), "wall_s": wall,
                           "median_ms": float(m["median_ms"]),
                           "improved": bool(float(m["median_ms"]) < prior)})
    return events


def improvements(curve: Curve) -> list[dict[str, Any]]:
    """The rows where a curve's best-so-far improves (the convergence table)."""
    rows = []
    last = math.inf
    for w, n, b in zip(curve.wall_s, curve.evaluations, curve.best_ms):
        if np.isfinite(b) and b < last:
            rows.append({"series": curve.label, "evaluations": int(n), "wall_s": float(w),
                         "best_ms": float(b)})
            last = b
    return rows


def convergence(trace: Trace) -> dict[str, Any]:
    """Per-island and overall best-so-far curves plus received migrations."""
    curves = [island_curve(trace, r.rank) for r in trace.ranks]
    curves.append(overall_curve(trace))
    rows = [row for c in curves for row in improvements(c)]
    return {"curves": curves, "ranks": [r.rank for r in trace.ranks],
            "migrations": migration_events(trace), "rows": rows}


# --- diversity -----------------------------------------------------------------------


# GaSettings::mcr_threshold's default (src/ga/ga_settings.hpp), for traces whose stored
# config does not name it (isletune stores the effective config, every key filled in).
DEFAULT_MCR_THRESHOLD = 0.9


def mcr_threshold(trace: Trace) -> float:
    """The run's MCR stop threshold: `ga.mcr_threshold` of its config (0: no MCR stop)."""
    ga = trace.config.get("ga")
    value = ga.get("mcr_threshold") if isinstance(ga, dict) else None
    try:
        return float(value) if value is not None else DEFAULT_MCR_THRESHOLD
    except (TypeError, ValueError):
        return DEFAULT_MCR_THRESHOLD


def diversity(trace: Trace) -> dict[str, Any]:
    """MCR and unique genomes per generation per island, with the stop threshold."""
    rows = []
    for r in trace.ranks:
        for g in np.sort(r.generations, order="generation"):
            rows.append({"rank": r.rank, "generation": int(g["generation"]),
                         "mcr": float(g["mcr"]), "unique_genomes": int(g["unique_genomes"])})
    return {"threshold": mcr_threshold(trace), "rows": rows}


# --- OCs -----------------------------------------------------------------------------


def oc_of(values: np.ndarray, schema: Schema) -> np.ndarray:
    """OC id of each setting row, by the OC table the trace records (`schema.ocs`)."""
    return schema.oc_of(values)


def oc_name(oc: int, schema: Schema) -> str:
    """The trace's name of an OC id, e.g. "stream+cyclic+retime+prefetch+tb"."""
    return schema.oc_name(oc)


def ocs(trace: Trace) -> dict[str, Any]:
    """Time distribution per OC over measured rows; best and worst OC by their best time."""
    e = trace.evaluations
    e = e[measured_mask(e)]
    ids = oc_of(e["values"], trace.schema) if len(e) else np.zeros(0, int)
    ok = ok_mask(e)
    rows = []
    for oc in sorted(set(ids.tolist())):
        sel = ids == oc
        t = e["median_ms"][sel & ok]
        q = np.percentile(t, [0, 25, 50, 75, 100]) if len(t) else [math.nan] * 5
        rows.append({"oc": int(oc), "name": oc_name(int(oc), trace.schema),
                     "evaluated": int(np.count_nonzero(sel)), "ok": int(len(t)),
                     "min_ms": float(q[0]), "q1_ms": float(q[1]), "median_ms": float(q[2]),
                     "q3_ms": float(q[3]), "max_ms": float(q[4]), "times": t})
    with_ok = [r for r in rows if r["ok"]]
    best = min(with_ok, key=lambda r: r["min_ms"]) if with_ok else None
    worst = max(with_ok, key=lambda r: r["min_ms"]) if with_ok else None
    return {"rows": rows, "best": best, "worst": worst,
            "ratio": (worst["min_ms"] / best["min_ms"]) if best and worst else math.nan}


# --- parameters ----------------------------------------------------------------------


def unique_settings(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct measured settings: (values rows, best ok time or NaN, keys)."""
    e = trace.evaluations
    e = e[measured_mask(e)]
    best: dict[str, tuple[np.ndarray, float]] = {}
    ok = ok_mask(e)
    for row, good in zip(e, ok):
        key = str(row["key"])
        t = float(row["median_ms"]) if good else math.nan
        if key not in best:
            best[key] = (row["values"], t)
        elif good and not (best[key][1] <= t):
            best[key] = (best[key][0], t)
    keys = np.asarray(list(best.keys()), dtype=object)
    values = np.asarray([v for v, _ in best.values()], dtype="i4").reshape(
        -1, len(trace.schema.names))
    times = np.asarray([t for _, t in best.values()], dtype="f8")
    return values, times, keys


def default_top_k(n_ok: int) -> int:
    """Default top-k: the best tenth of the ok settings, at least 5 (or all if fewer)."""
    return max(1, min(n_ok, max(5, math.ceil(0.1 * n_ok))))


def params(trace: Trace, top_k: int | None = None) -> dict[str, Any]:
    """Frequency of each parameter value among the top-k settings vs all evaluated ones."""
    values, times, _ = unique_settings(trace)
    ok = np.isfinite(times)
    k = default_top_k(int(np.count_nonzero(ok))) if top_k is None else \
        min(top_k, int(np.count_nonzero(ok)))
    order = np.argsort(np.where(ok, times, np.inf), kind="stable")[:k]
    top = values[order]
    rows = []
    for i, name in enumerate(trace.schema.names):
        domain = sorted(set(trace.parameters.get(name, [])) | set(values[:, i].tolist()))
        for v in domain:
            n_all = int(np.count_nonzero(values[:, i] == v))
            n_top = int(np.count_nonzero(top[:, i] == v))
            f_all = n_all / len(values) if len(values) else math.nan
            f_top = n_top / k if k else math.nan
            rows.append({"parameter": name, "value": int(v),
                         "label": MERGE_NAMES[v] if name == "merge" and 0 <= v < 3 else str(v),
                         "all": n_all, "all_frac": f_all, "top": n_top, "top_frac": f_top,
                         "lift": f_top / f_all if f_all else math.nan})
    return {"top_k": k, "evaluated": int(len(values)), "ok": int(np.count_nonzero(ok)),
            "rows": rows}


# --- compare -------------------------------------------------------------------------


def group_value(trace: Trace, by: str) -> str:
    """The value of a trace for a comparison grouping (strategy, seed or rank-count)."""
    if by == "strategy":
        return trace.strategy
    if by == "seed":
        return str(trace.seed)
    if by == "rank-count":
        return str(len(trace.ranks))
    raise ValueError(f"unknown grouping {by!r}; expected strategy, seed or rank-count")


def step_at(curve: Curve, times: np.ndarray) -> np.ndarray:
    """Best-so-far of a curve at each of `times` (NaN before its first ok result)."""
    if len(curve.wall_s) == 0:
        return np.full(len(times), np.nan)
    idx = np.searchsorted(curve.wall_s, times, side="right") - 1
    out = np.where(idx >= 0, curve.best_ms[np.clip(idx, 0, None)], np.nan)
    return out


def _quartiles(a: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q1, median, q3) ignoring NaN; NaN where every value is NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN is the answer
        q = np.nanpercentile(a, [25, 50, 75], axis=axis)
    return q[0], q[1], q[2]


def time_budget(trace: Trace) -> float | None:
    """The run's `budget.time_budget_s` when set (> 0), else None."""
    budget = trace.config.get("budget")
    value = budget.get("time_budget_s") if isinstance(budget, dict) else None
    try:
        return float(value) if value is not None and float(value) > 0 else None
    except (TypeError, ValueError):
        return None


def horizon(traces: Sequence[Trace], until: float | None = None) -> tuple[float, str]:
    """The evaluator clock every run is compared at, and why.

    `until` when given; else the time budget all runs share (isletune checks the budget
    after each generation and stops one generation later, so runs overshoot it by up to two
    generations; measurements past the budget are left out so equal budgets compare
    equally); else the latest clock of any run (a run that ended keeps its final best).
    """
    if until is not None:
        return float(until), "--until"
    budgets = {time_budget(t) for t in traces}
    if len(budgets) == 1 and None not in budgets:
        return float(budgets.pop()), "the runs' common time_budget_s"
    ends = [float(np.nanmax(t.evaluations["wall_s"])) for t in traces if len(t.evaluations)]
    return (max(ends) if ends else 0.0), "the latest run's end"


def median_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """A bootstrap confidence interval of the median (scipy, seeded: reproducible).

    NaN for fewer than two finite values; a point when they are all equal.
    """
    v = np.asarray(values, "f8")
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return math.nan, math.nan
    if np.all(v == v[0]):
        return float(v[0]), float(v[0])
    res = stats.bootstrap((v,), np.median, confidence_level=confidence, n_resamples=2000,
                          method="percentile", random_state=np.random.default_rng(0))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def compare(traces: Sequence[Trace], by: str, baseline: str | None = None,
            points: int = 200, until: float | None = None) -> dict[str, Any]:
    """Iso-time comparison: median and quartiles of best-so-far per group at each time.

    Every run counts only its measurements up to the horizon (`horizon`); a run that
    ended earlier keeps its final best for later times (its answer does not go away).
    Final bests (at the horizon) are normalised to the baseline group's median final
    best: `speedup` > 1 means faster kernels than the baseline found. `ci_low_ms` /
    `ci_high_ms` bound the median final best (95% bootstrap interval), `p_vs_baseline` is
    the two-sided Mann-Whitney U test of a group's final bests against the baseline's.
    """
    end, why = horizon(traces, until)
    groups: dict[str, list[Curve]] = {}
    for t in traces:
        curve = overall_curve(t, label=str(t.path))
        keep = curve.wall_s <= end
        curve = Curve(curve.label, curve.wall_s[keep], curve.evaluations[keep],
                      curve.best_ms[keep])
        groups.setdefault(group_value(t, by), []).append(curve)
    names = sorted(groups, key=lambda s: (not s.lstrip("-").isdigit(),
                                          int(s) if s.lstrip("-").isdigit() else 0, s))
    if baseline is None:
        baseline = names[0]
    if baseline not in groups:
        raise ValueError(f"baseline {baseline!r} is not among the groups ({', '.join(names)})")
    starts = [float(np.nanmin(c.wall_s)) for cs in groups.values() for c in cs if len(c.wall_s)]
    start = min(starts) if starts else 0.0
    grid = np.linspace(max(start, 0.0), end, points)
    series = {}
    finals = {}
    for name in names:
        stack = np.vstack([step_at(c, grid) for c in groups[name]])
        q1, med, q3 = _quartiles(stack)
        series[name] = {"q1": q1, "median": med, "q3": q3, "runs": len(groups[name])}
        finals[name] = np.asarray([np.nanmin(c.best_ms) if np.any(np.isfinite(c.best_ms))
                                   else np.nan for c in groups[name]])
    base = float(np.nanmedian(finals[baseline]))
    final_rows = []
    for name in names:
        f = finals[name]
        q1, med, q3 = (float(x) for x in _quartiles(f))
        lo, hi = median_ci(f)
        ok, ok_base = f[np.isfinite(f)], finals[baseline][np.isfinite(finals[baseline])]
        p = math.nan
        if name != baseline and len(ok) and len(ok_base):
            p = float(stats.mannwhitneyu(ok, ok_base, alternative="two-sided").pvalue)
        final_rows.append({"group": name, "runs": len(f), "median_ms": med, "q1_ms": q1,
                           "q3_ms": q3, "ci_low_ms": lo, "ci_high_ms": hi,
                           "best_ms": float(np.nanmin(f)),
                           "speedup": base / med if med > 0 else math.nan,
                           "relative_time": med / base if base > 0 else math.nan,
                           "p_vs_baseline": p})
    return {"by": by, "baseline": baseline, "time_s": grid, "groups": names, "series": series,
            "finals": final_rows, "per_run": finals, "horizon_s": end, "horizon_from": why}


def compare_checkpoints(result: dict[str, Any], count: int = 8) -> list[dict[str, Any]]:
    """The iso-time table: each group's median and quartiles at evenly spaced times."""
    grid = result["time_s"]
    picks = np.unique(np.linspace(0, len(grid) - 1, count).round().astype(int))
    rows = []
    for name in result["groups"]:
        s = result["series"][name]
        for i in picks:
            rows.append({"group": name, "time_s": float(grid[i]), "median_ms": float(s["median"][i]),
                         "q1_ms": float(s["q1"][i]), "q3_ms": float(s["q3"][i]),
                         "runs": s["runs"]})
    return rows

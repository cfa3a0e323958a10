"""Writes synthetic isletune traces following docs/trace.md (schema version 1) with h5py.

Used by the analysis tests as a second source of traces next to the real replay runs:
it can also write the broken and partial files a killed run or a wrong path produces.
The search it records is a toy island GA over a small space with a synthetic time model;
only the file layout matters, not the realism of the numbers.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

PARAMS = ("streaming", "merge", "retiming", "prefetch", "tdeg", "sd", "sb", "tbx", "tby", "tbz",
          "mfx", "mfy", "mfz", "ufx", "ufy", "ufz", "use_shared", "use_constant")
MERGE = ("none", "block", "cyclic")
STATUS = ("ok", "invalid", "compile_error", "launch_error", "wrong_result", "crashed", "timeout")
STR = h5py.string_dtype("utf-8")

EVAL_DT = np.dtype([
    ("eval_id", "<i8"), ("generation", "<i4"), ("cell", "<i4"), ("genes", h5py.vlen_dtype("<i4")),
    ("values", "<i4", (18,)), ("key", STR), ("status", "i1"), ("median_ms", "<f8"),
    ("times_ms", h5py.vlen_dtype("<f8")), ("compile_ms", "<f8"), ("verify_ms", "<f8"),
    ("run_ms", "<f8"), ("registers", "<i4"), ("shared_bytes", "<i4"), ("occupancy", "<f8"),
    ("error_l2", "<f8"), ("error_max", "<f8"), ("wall_s", "<f8"), ("cached", "i1"),
    ("migrant", "i1"), ("message", STR),
])
GEN_DT = np.dtype([
    ("generation", "<i4"), ("wall_s", "<f8"), ("wait_s", "<f8"), ("best_ms", "<f8"),
    ("mean_fitness", "<f8"), ("mcr", "<f8"), ("unique_genomes", "<i4"), ("evaluations", "<i4"),
])
MIG_DT = np.dtype([("generation", "<i4"), ("direction", "<i4"), ("peer", "<i4"), ("key", STR),
                   ("median_ms", "<f8")])
SPACE = {
    "streaming": [0, 1], "merge": [0, 1, 2], "retiming": [0, 1], "prefetch": [0, 1],
    "tdeg": [1, 2, 4], "sd": [0, 2], "sb": [0, 8, 16], "tbx": [32, 64, 128], "tby": [1, 2, 4, 8],
    "tbz": [1, 2], "mfx": [1, 2, 4], "mfy": [1], "mfz": [1], "ufx": [1, 2], "ufy": [1],
    "ufz": [1, 2], "use_shared": [0, 1], "use_constant": [0, 1],
}


def key_of(v: list[int]) -> str:
    """Canonical setting key."""
    return ",".join(f"{n}={MERGE[x] if n == 'merge' else x}" for n, x in zip(PARAMS, v))


def random_setting(rng: np.random.Generator) -> list[int]:
    """A setting of the toy space that respects the streaming/merge couplings."""
    s = {n: int(rng.choice(v)) for n, v in SPACE.items()}
    if not s["streaming"]:
        s.update(retiming=0, prefetch=0, sd=0, sb=0)
    else:
        s.update(sd=2, sb=int(rng.choice([8, 16])), tbz=1)
    s["mfx"] = 1 if s["merge"] == 0 else int(rng.choice([2, 4]))
    return [s[n] for n in PARAMS]


def time_model(v: list[int], rng: np.random.Generator) -> tuple[int, float]:
    """(status, median ms) of a setting: deterministic speed plus a few failures."""
    s = dict(zip(PARAMS, v))
    h = sum((i + 3) * x for i, x in enumerate(v)) % 97
    if h % 23 == 0:
        return 2, float("nan")
    if h % 29 == 0:
        return 3, float("nan")
    if h % 31 == 0:
        return 4, float("nan")
    t = 1.0 / (1 + 0.6 * s["streaming"] + 0.3 * (s["merge"] > 0) + 0.2 * s["retiming"]
               + 0.15 * s["prefetch"] + 0.1 * s["use_shared"] + 0.25 * (s["tdeg"] > 1))
    t *= 1 + abs(np.log2(s["tbx"]) - 6) * 0.2 + 0.03 * h / 97
    return 0, float(t * (1 + 0.01 * rng.random()))


def _table(group: h5py.Group, name: str, rows: np.ndarray) -> None:
    """A chunked, extendible compound dataset."""
    group.create_dataset(name, data=rows, maxshape=(None,), chunks=(64,))


def write_run(run_dir: Path | str, ranks: int = 2, generations: int = 6, population: int = 8,
              seed: int = 7, strategy: str = "island-ga", result: bool = True,
              missing_rank: int | None = None, extra_evaluations: int = 0,
              clock_scale: float = 1.0, marker: bool = True, uncommitted: int = 0) -> Path:
    """Writes RUN/trace.h5 and RUN/rank-NNNN.h5; returns the trace.h5 path.

    `result=False` leaves out /result (killed run); `missing_rank` deletes that rank's file;
    `extra_evaluations` appends rows past the last recorded generation (a cut table).
    `marker` writes each rank file's `committed` attribute (as the real writer does) over
    every row except the last `uncommitted` evaluations, which belong to one more
    generation whose flush a kill interrupted (they come with its generation row and a
    migration row, and carry an unmistakable 1e-6 ms time).
    """
    run = Path(run_dir)
    run.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per_rank = []
    for r in range(ranks):
        evals, gens, migs, seen = [], [], [], {}
        clock, best = 0.0, float("inf")
        eid = 0
        pop = []
        for g in range(generations):
            n_new = 0
            for cell in range(population):
                v = random_setting(rng)
                k = key_of(v)
                cached = k in seen
                st, ms = seen[k] if cached else time_model(v, rng)
                if not cached:
                    clock += (0.05 + 0.01 * rng.random()) * clock_scale
                    n_new += 1
                    seen[k] = (st, ms)
                times = np.full(5, ms) * (1 + 0.002 * np.arange(5)) if st == 0 else np.zeros(0)
                evals.append((eid, g, cell, np.asarray([cell, g], "i4"), v, k, st, ms, times,
                              20.0, 3.0, 1.0, 32, 4096, 0.5, 1e-15, 1e-14, clock, int(cached), 0,
                              "" if st == 0 else STATUS[st]))
                eid += 1
                pop.append(k)
                if st == 0:
                    best = min(best, ms)
            if ranks > 1 and g > 0:
                peer = (r - 1) % ranks
                v = random_setting(rng)
                st, ms = time_model(v, rng)
                if st == 0:
                    evals.append((eid, g, -1, np.zeros(0, "i4"), v, key_of(v), 0, ms,
                                  np.full(3, ms), 0.0, 0.0, 0.0, 0, 0, 0.0, np.nan, np.nan, clock,
                                  0, 1, ""))
                    eid += 1
                    best = min(best, ms)
                    migs.append((g, -1, peer, key_of(v), ms))
                migs.append((g, 1, (r + 1) % ranks, key_of(v), ms))
            last = pop[-population:]
            mcr = max(last.count(k) for k in set(last)) / population
            gens.append((g, clock, 0.01 * g, best, 1.0 / best, mcr, len(set(last)), n_new))
        for i in range(extra_evaluations):
            v = random_setting(rng)
            st, ms = time_model(v, rng)
            clock += 0.05
            evals.append((eid, generations, i, np.zeros(0, "i4"), v, key_of(v), st, ms,
                          np.full(2, ms), 1.0, 1.0, 1.0, 1, 1, 0.5, np.nan, np.nan, clock, 0, 0,
                          ""))
            eid += 1
        committed = [len(evals), len(gens), len(migs)]
        torn = generations + (1 if extra_evaluations else 0)
        for i in range(uncommitted):
            v = random_setting(rng)
            evals.append((eid, torn, i, np.zeros(0, "i4"), v, key_of(v), 0, 1e-6, np.full(2, 1e-6),
                          1.0, 1.0, 1.0, 1, 1, 0.5, np.nan, np.nan, clock + 1.0, 0, 0, ""))
            eid += 1
        if uncommitted:
            gens.append((torn, clock + 1.0, 0.0, 1e-6, 1e6, 1.0, 1, uncommitted))
            migs.append((torn, 1, (r + 1) % max(ranks, 1), key_of(v), 1e-6))
        per_rank.append((np.array(evals, EVAL_DT), np.array(gens, GEN_DT),
                         np.array(migs, MIG_DT) if migs else np.zeros(0, MIG_DT),
                         committed))
    for r, (ev, ge, mi, committed) in enumerate(per_rank):
        with h5py.File(run / f"rank-{r:04d}.h5", "w") as f:
            f.attrs.update(format="isletune-rank", version=np.int32(1), rank=np.int32(r))
            if marker:
                f.attrs["committed"] = np.asarray(committed, "<i8")
            _table(f, "evaluations", ev)
            f["evaluations"].attrs["parameters"] = list(PARAMS)
            f["evaluations"].attrs["status_names"] = list(STATUS)
            _table(f, "generations", ge)
            _table(f, "migrations", mi)
    path = run / "trace.h5"
    with h5py.File(path, "w") as f:
        f.attrs.update(format="isletune-trace", version=np.int32(1),
                       created="2026-11-21T16:04:05Z", command="isletune run test.yaml",
                       isletune_version="0.1.0", seed=np.uint64(seed))
        f.create_group("config").attrs["yaml"] = (
            f"stencil: star2d1r\ngrid: [256, 256]\nstrategy: {strategy}\nseed: {seed}\n"
            "ga:\n  population: 8\n  mcr_threshold: 0.5\n")
        st = f.create_group("stencil")
        st.attrs.update(name="star2d1r", dims=np.int32(2), order=np.int32(1), shape="star")
        st["offsets"] = np.array([[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]], "i4")
        st["coefficients"] = np.array([0.4, 0.1, 0.2, 0.15, 0.15])
        pdt = np.dtype([("name", STR), ("kind", STR), ("values", h5py.vlen_dtype("<i4"))])
        f.create_dataset("space/parameters", data=np.array(
            [(n, "int", np.asarray(SPACE[n], "i4")) for n in PARAMS], pdt))
        for r in range(ranks):
            env = f.create_group(f"environment/rank_{r:04d}")
            env.attrs.update(rank=np.int32(r), host="testhost", gpu_name="replay")
        g = f.create_group("ranks")
        g.attrs["count"] = np.int32(ranks)
        for r in range(ranks):
            g[f"{r:04d}"] = h5py.ExternalLink(f"rank-{r:04d}.h5", "/")
        if result:
            ev = np.concatenate([x[0][:x[3][0]] for x in per_rank])
            ok = ev["status"] == 0
            i = int(np.argmin(np.where(ok, ev["median_ms"], np.inf)))
            res = f.create_group("result")
            res.attrs.update(best_key=str(ev["key"][i]), best_values=ev["values"][i],
                             best_rank=np.int32(0), median_ms=float(ev["median_ms"][i]),
                             gcells_per_s=256 * 256 / (ev["median_ms"][i] * 1e-3) / 1e9,
                             stop_reason="max_generations", generations=np.int32(generations),
                             evaluations=np.int64(int(np.count_nonzero(ev["cached"] == 0))),
                             wall_s=float(ev["wall_s"].max()))
            res.create_dataset("source", data="__global__ void k() {}", dtype=STR)
    if missing_rank is not None:
        (run / f"rank-{missing_rank:04d}.h5").unlink()
    return path

#!/usr/bin/env python3
"""GPU busy and measurements of a user's config (stencil, grid, budget) run as a user runs it:
`isletune run` with one rank on one GPU, the whole default space, a cold cubin cache. Prints
one row per run from `isletune report --json`: new measurements, verified ones, the share of
the clock the GPU measured (verify + timing), the share the NVRTC threads compiled, the mean
queue depth, the clock at the last generation (the budget's overshoot) and the best kernel.

    bench/pipeline_busy.py --bin build/bin --budget-s 60 --threads 16 --work runs/busy \\
        --pipeline 0 --csv docs/bench/pipeline-busy.csv [--only NAME ...]
    # issue 44's "before" on the same GPU: main 482d225 built in B (cmake --build B/build
    # --target isletune isletune-worker), read by this tree's report:
    bench/pipeline_busy.py --bin build/bin --baseline-bin B/build/bin --budget-s 60 --threads 16

The configs: three typical stencils (star2d1r 8192^2, box3d2r and star3d2r 512^3) and two of a
user's own that no test uses (a 2-D asymmetric 7-point upwind stencil at 8192^2, the 3-D
19-point isotropic Laplacian at 512^3).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

UPWIND_2D = [[0, 0, 0.55], [-1, 0, 0.2], [-2, 0, -0.05], [1, 0, 0.1], [0, -1, 0.1],
             [0, 1, 0.05], [1, 1, 0.05]]


def laplacian19() -> list[list[float]]:
    pts = [[0, 0, 0, -4.0]]
    for d in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)):
        pts.append([*d, 1.0 / 3.0])
    for a in (-1, 1):
        for b in (-1, 1):
            pts += [[a, b, 0, 1.0 / 6.0], [a, 0, b, 1.0 / 6.0], [0, a, b, 1.0 / 6.0]]
    # Scaled so the update stays bounded: u + 0.1 * L(u).
    return [[*p[:3], (1.0 if p[:3] == [0, 0, 0] else 0.0) + 0.1 * p[3]] for p in pts]


def configs() -> dict[str, tuple[object, list[int]]]:
    return {
        "star2d1r": ("star2d1r", [8192, 8192]),
        "box3d2r": ("box3d2r", [512, 512, 512]),
        "star3d2r": ("star3d2r", [512, 512, 512]),
        "upwind2d7": ({"name": "upwind2d7", "dims": 2, "points": UPWIND_2D}, [8192, 8192]),
        "lap3d19": ({"name": "lap3d19", "dims": 3, "points": laplacian19()}, [512, 512, 512]),
    }


def config_text(stencil: object, grid: list[int], budget: float, threads: int,
                pipeline: int | None, seed: int = 1, race_factor: float | None = None,
                settle_spread: float | None = None, island: int | None = None) -> str:
    """pipeline None: no `ga` key (a tree before the pipeline knows no `ga.pipeline`);
    race_factor None: no `evaluator.race_factor` key (the tree's default: 1.5 since 520b8ec,
    before it 0; a tree before 75c8aac knows no such key); settle_spread None: likewise for
    `evaluator.settle_spread` (0.01 since its tree, 2026-12-07); island N: the rank runs as
    one island of a run of N (the population split as `GaSettings::for_islands` splits it,
    2 x 2 for 4 islands and 2 x 4 for 2, with as many model picks as such an island makes:
    (5 * cells + 7) / 8), so one GPU shows what each GPU of that run is given to do."""
    cfg = {"stencil": stencil, "grid": grid, "seed": seed, "budget": {"time_budget_s": budget}}
    if pipeline is not None:
        cfg["ga"] = {"pipeline": pipeline}
    if island:
        cols = 4 if island == 2 else 2
        cfg.setdefault("ga", {}).update(rows=2, cols=cols, model_picks=(5 * 2 * cols + 7) // 8)
    cfg["evaluator"] = {"backend": "cuda", "compile_threads": threads}
    if race_factor is not None:
        cfg["evaluator"]["race_factor"] = race_factor
    if settle_spread is not None:
        cfg["evaluator"]["settle_spread"] = settle_spread
    return json.dumps(cfg)  # YAML is a superset of JSON


def worker_shares(log: str, clock_s: float) -> tuple[float, float]:
    """From the worker's ISLETUNE_WORKER_LOG: the shares of the clock its GPU thread waited for
    a compile and spent on a kernel outside its verification and timing (loading, launch
    checks, messages)."""
    waited = host = 0.0
    try:
        with open(log) as f:
            for line in f:
                w = line.split()
                if len(w) >= 6:
                    waited += float(w[1])
                    host += float(w[2]) - float(w[4]) - float(w[5])
    except OSError:
        return float("nan"), float("nan")
    return round(waited * 1e-3 / clock_s, 3), round(host * 1e-3 / clock_s, 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--budget-s", type=float, default=60)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--pipeline", type=int, default=0)
    ap.add_argument("--work", default="runs/busy")
    ap.add_argument("--csv")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--seeds", type=int, nargs="*", default=[1],
                    help="one run per seed and config (default: seed 1)")
    ap.add_argument("--baseline-bin",
                    help="run the isletune of this directory instead, built from a tree before "
                         "the pipeline (main 482d225, issue 44's 'before'): its config has no "
                         "ga key, its stencils come from this checkout's config/ "
                         "(ISLETUNE_DATA_DIR), its trace is read by --bin's isletune report; "
                         "the rows' pipeline column reads 'base'")
    ap.add_argument("--race-factor", type=float, default=None,
                    help="evaluator.race_factor of every run (left out: the key left out, the "
                         "tree's default; 0: every run of every kernel timed); the runs' "
                         "names and the rows' pipeline column end in -r<F>")
    ap.add_argument("--settle-spread", type=float,
                    help="evaluator.settle_spread of every run (left out: the key left out, the "
                         "tree's default; 0: no kernel settles); the runs' names and the rows' "
                         "pipeline column end in -settle<S>")
    ap.add_argument("--island-of", type=int, choices=(2, 4),
                    help="each run is one island of a run of this many islands (its share of "
                         "the population and its model picks; no ring): the GPU of one rank of "
                         "an N-GPU run on one GPU; the runs' names and the rows' pipeline column "
                         "end in -i<N>")
    a = ap.parse_args()
    if a.baseline_bin and a.race_factor is not None:
        ap.error("--race-factor: the tree of --baseline-bin knows no evaluator.race_factor")
    if a.baseline_bin and a.settle_spread is not None:
        ap.error("--settle-spread: the tree of --baseline-bin knows no evaluator.settle_spread")
    os.makedirs(a.work, exist_ok=True)
    cmd = ["mpirun", "-q", "-np", "1", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    header = ["stencil", "seed", "pipeline", "budget_s", "clock_s", "wall_s", "measured", "ok",
              "gpu_busy", "threads_busy", "queue_depth", "worker_waits", "worker_host",
              "best_ms", "best_gcells"]
    print(" ".join(f"{h:>12}" for h in header), flush=True)
    rows = []
    failed = 0
    runs = [(name, sg, seed) for seed in a.seeds for name, sg in configs().items()
            if not a.only or name in a.only]
    for name, (stencil, grid), seed in runs:
        mode = ("base" if a.baseline_bin else f"p{a.pipeline}") + \
            (f"-r{a.race_factor:g}" if a.race_factor is not None else "") + \
            (f"-settle{a.settle_spread:g}" if a.settle_spread is not None else "") + \
            (f"-i{a.island_of}" if a.island_of else "")
        tag = f"{name}-{mode}" + (f"-s{seed}" if seed != 1 else "")
        cfg = os.path.join(a.work, tag + ".yaml")
        with open(cfg, "w") as f:
            f.write(config_text(stencil, grid, a.budget_s, a.threads,
                                None if a.baseline_bin else a.pipeline, seed, a.race_factor,
                                a.settle_spread, a.island_of))
        out = os.path.join(a.work, tag)
        log = os.path.join(a.work, tag + ".worker.log")
        if os.path.exists(log):
            os.remove(log)
        # A cold cubin cache and a HOME of its own per run: NVRTC 13 keeps compiled sources
        # in ~/.nv/ComputeCache, so a run after another that generated the same sources would
        # compile from there (median 48 ms instead of 479 on an H100, lap3d19).
        cubins = tempfile.mkdtemp(prefix="cubins-")
        os.makedirs(os.path.join(cubins, "home"), exist_ok=True)
        env = dict(os.environ, ISLETUNE_CACHE_DIR=os.path.join(cubins, "cubins"),
                   HOME=os.path.join(cubins, "home"), ISLETUNE_WORKER_LOG=os.path.abspath(log))
        if a.baseline_bin:
            env["ISLETUNE_DATA_DIR"] = os.path.abspath("config")
        t0 = time.time()
        run = subprocess.run(cmd + [os.path.join(a.baseline_bin or a.bin, "isletune"), "run", cfg,
                                    "--out", out, "--overwrite"],
                             env=env, capture_output=True, text=True)
        wall = time.time() - t0
        shutil.rmtree(cubins, ignore_errors=True)  # a run leaves about 330 MB there
        if run.returncode != 0:
            print(f"{name}: isletune run exited {run.returncode}\n{run.stdout[-1500:]}\n"
                  f"{run.stderr[-2500:]}", flush=True)
            failed += 1
            continue
        rep = json.loads(subprocess.run([os.path.join(a.bin, "isletune"), "report", out, "--json"],
                                        capture_output=True, text=True, check=True).stdout)
        r = rep["ranks"][0]
        waits, host = worker_shares(log, r["clock_s"])
        best = (rep.get("result") or {}).get("best") or {}
        row = [name, seed, mode.removeprefix("p"), a.budget_s, round(r["clock_s"], 2), round(wall, 1), r["measured"],
               rep["evaluations"]["by_status"].get("ok", 0), round(r["gpu_busy"], 3),
               round(r["compile_threads_busy"], 3), round(r["queue_depth"], 2), waits, host,
               best.get("median_ms", ""), round(best.get("gcells_per_s", 0), 2)]
        rows.append(row)
        print(" ".join(f"{str(x):>12}" for x in row), flush=True)
        timing = rep["evaluations"].get("timing")  # (a report before settling has none)
        if timing:
            print(f"{'':>12} verified kernels timed with all {timing['runs']} runs "
                  f"{timing['full']}, raced {timing['raced']}, settled {timing['settled']}",
                  flush=True)
        tenths = r.get("gpu_busy_by_tenth") or []
        if any(tenths):  # where the GPU waited
            print(f"{'':>12} GPU busy by tenth of the clock (%): "
                  + " ".join(f"{100 * t:.0f}" for t in tenths), flush=True)
            queue = r.get("queue_by_tenth") or []
            print(f"{'':>12} settings queued by tenth (mean): "
                  + " ".join(f"{q:.0f}" for q in queue), flush=True)
    if a.csv:
        new = not os.path.exists(a.csv)
        with open(a.csv, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(header)
            w.writerows(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

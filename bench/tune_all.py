#!/usr/bin/env python3
"""Kernel benchmark, tuned by the tuner itself: for each typical stencil, `isletune run`
(island GA, one rank, CUDA backend, the whole default space) within a stated evaluator-clock
budget, next to the naive kernel and the device-to-device copy measured in the same job by
`isletune-bench-kernels --naive-only`.

    bench/tune_all.py --bin build/bin --budget-s 20 --out runs/tune --csv docs/bench/kernels-h100.csv

Prints one row per stencil (naive, tuned, copy roofline, FP64 roof in GCells/s, speed-ups,
share of measurements that verified, best-OC vs worst-OC speed-up, the best setting) and
appends the same rows to the CSV (its header written once). Best/worst OC: fastest verified
time of each OC measured in the run; the ratio of the slowest OC's best to the fastest OC's
best (GSTuner reports 9.95x on average on V100).
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
import time

import json

TYPICAL = [f"{s}{d}d{r}r" for d in (2, 3) for s in ("star", "box", "cross") for r in (1, 2, 3, 4)]
MERGE = ["none", "block", "cyclic"]


def points_of(name: str) -> int:
    dims, r = int(name[-4]), int(name[-2])
    kind = name[:-4]
    if kind == "star":
        return 2 * dims * r + 1
    if kind == "box":
        return (2 * r + 1) ** dims
    return (4 if dims == 2 else 8) * r + 1  # cross


def oc_of(e: dict) -> tuple[int, ...]:
    """The OC a cached setting belongs to, by parameter name: its streaming, merge, retiming
    and prefetch values and whether tdeg > 1 (only grouped here, never named)."""
    merge = MERGE.index(e["merge"]) if isinstance(e["merge"], str) else int(e["merge"])
    return (int(e["streaming"]) != 0, merge, int(e["retiming"]) != 0, int(e["prefetch"]) != 0,
            int(e["tdeg"]) > 1)


def key_of(e: dict, params: list[str]) -> str:
    """Canonical key of a cached setting, its parameters in the order the trace names them."""
    def text(p: str) -> str:
        x = e[p]
        return MERGE[int(x)] if p == "merge" and not isinstance(x, str) else str(x)
    return ",".join(f"{p}={text(p)}" for p in params)


def mpirun() -> list[str]:
    cmd = ["mpirun", "-q", "-np", "1", "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def naive_and_copy(bindir: str, stencils: list[str], n2d: int, n3d: int, outdir: str) -> dict:
    """Naive and copy GCells/s per stencil from isletune-bench-kernels with no random sample
    (same job, same GPU)."""
    path = os.path.join(outdir, "naive.csv")
    out = subprocess.run([os.path.join(bindir, "isletune-bench-kernels"), "--samples2d", "0",
                          "--samples3d", "0", "--budget-s", "0", "--stencils", ",".join(stencils),
                          "--n2d", str(n2d), "--n3d", str(n3d), "--csv", path],
                         capture_output=True, text=True, timeout=900)
    print(out.stdout, end="", flush=True)
    if out.returncode != 0:
        print(out.stderr[-2000:], file=sys.stderr)
    got = {}
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                got[r["stencil"]] = (float(r["naive_gcells"]), float(r["copy_gcells"]))
    return got


def tune(bindir: str, stencil: str, grid: list[int], budget_s: float, outdir: str, seed: int,
         ga: str = "", evaluator: str = ""):
    cfgdir = os.path.join(outdir, "configs")
    os.makedirs(cfgdir, exist_ok=True)
    cfg = os.path.join(cfgdir, f"{stencil}.yaml")
    with open(cfg, "w") as f:
        f.write(f"stencil: {stencil}\ngrid: {grid}\nbudget: {{time_budget_s: {budget_s}}}\n"
                f"seed: {seed}\n" + (f"ga: {{{ga}}}\n" if ga else "")
                + (f"evaluator: {{{evaluator}}}\n" if evaluator else ""))
    run_dir = os.path.join(outdir, stencil)
    t0 = time.time()
    p = subprocess.run(mpirun() + [os.path.join(bindir, "isletune"), "run", cfg, "--backend", "cuda",
                                   "--out", run_dir, "--overwrite"],
                       capture_output=True, text=True, timeout=budget_s * 4 + 240)
    wall = time.time() - t0
    if p.returncode != 0:
        print(f"{stencil}: isletune run exit {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}",
              file=sys.stderr)
    # Read the run back through the Kernel Tuner cache export (no h5py needed on the GPU
    # machine): one entry per distinct measured setting, failures with an error string.
    kt = os.path.join(outdir, f"{stencil}.kt.json")
    subprocess.run([os.path.join(bindir, "isletune"), "export", run_dir, "--kernel-tuner-cache", kt],
                   check=True, capture_output=True, timeout=120)
    with open(kt) as f:
        doc = json.load(f)
    cache = doc["cache"]
    params = list(doc["tune_params_keys"])  # the parameter names the trace records
    measured = list(cache.values())
    ok = [e for e in measured if isinstance(e.get("time"), (int, float))]
    statuses: dict[str, int] = {}
    for e in measured:
        k = "ok" if e in ok else str(e.get("time"))
        statuses[k] = statuses.get(k, 0) + 1
    best = min(ok, key=lambda e: e["time"]) if ok else None
    per_oc: dict[tuple[int, ...], float] = {}
    for e in ok:
        oc = oc_of(e)
        per_oc[oc] = min(per_oc.get(oc, math.inf), float(e["time"]))
    return dict(wall=wall, measured=len(measured), ok=len(ok), statuses=statuses,
                best_ms=float(best["time"]) if best is not None else math.nan,
                best_key=key_of(best, params) if best is not None else "",
                per_oc=per_oc)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--budget-s", type=float, default=20.0, help="evaluator-clock budget per stencil")
    ap.add_argument("--stencils", nargs="*", default=TYPICAL)
    ap.add_argument("--n2d", type=int, default=8192)
    ap.add_argument("--n3d", type=int, default=512)
    ap.add_argument("--out", default="runs/tune-all")
    ap.add_argument("--csv", default="")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--fp64-gflops", type=float, default=33500.0)
    ap.add_argument("--ga", default="", help="extra ga keys of the config, as YAML flow-map "
                    "entries (e.g. \"rows: 2, cols: 4, population: 8\"); default: none")
    ap.add_argument("--evaluator", default="", help="extra evaluator keys of the config, as YAML "
                    "flow-map entries (e.g. \"compile_threads: 16\" when several runs share a "
                    "node); default: none")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    sink = None
    if a.csv:
        os.makedirs(os.path.dirname(a.csv) or ".", exist_ok=True)
        # Appends to an existing CSV (its header kept), so several invocations collect their rows.
        fresh = not os.path.exists(a.csv) or os.path.getsize(a.csv) == 0
        sink = open(a.csv, "a", newline="")
    writer = None
    base = naive_and_copy(a.bin, a.stencils, a.n2d, a.n3d, a.out)
    hdr = (f"{'stencil':10} {'naive':>7} {'tuned':>7} {'copy':>7} {'fp64':>7} {'x naive':>7} "
           f"{'%copy':>6} {'%fp64':>6} {'ok/meas':>9} {'OC x':>6} best setting")
    print(f"# budget {a.budget_s} s (evaluator clock) per stencil; GCells/s per time step", flush=True)
    print(hdr, flush=True)
    for st in a.stencils:
        dims = int(st[-4])
        grid = [a.n2d] * 2 if dims == 2 else [a.n3d] * 3
        cells = math.prod(grid)
        naive, copy = base.get(st, (math.nan, math.nan))
        t = tune(a.bin, st, grid, a.budget_s, a.out, a.seed, a.ga, a.evaluator)
        tuned = cells / (t["best_ms"] * 1e-3) / 1e9 if t["best_ms"] == t["best_ms"] else math.nan
        flops = 2 * points_of(st) - 1
        roof = a.fp64_gflops / flops
        oc_times = sorted(t["per_oc"].values())
        oc_ratio = oc_times[-1] / oc_times[0] if len(oc_times) >= 2 else math.nan
        row = dict(stencil=st, grid="x".join(map(str, grid)), naive_gcells=f"{naive:.2f}",
                   tuned_gcells=f"{tuned:.2f}", copy_gcells=f"{copy:.2f}",
                   fp64_roof_gcells=f"{roof:.2f}", flops_per_cell=flops,
                   speedup_vs_naive=f"{tuned / naive:.3f}" if naive > 0 else "nan",
                   measured=t["measured"], verified=t["ok"], ocs_measured=len(oc_times),
                   best_vs_worst_oc=f"{oc_ratio:.3f}", wall_s=f"{t['wall']:.1f}",
                   setting=t["best_key"])
        rows.append(row)
        if sink:  # row by row: a run cut short keeps every finished stencil
            if writer is None:
                writer = csv.DictWriter(sink, fieldnames=list(row.keys()))
                if fresh:
                    writer.writeheader()
            writer.writerow(row)
            sink.flush()
        print(f"{st:10} {naive:7.1f} {tuned:7.1f} {copy:7.1f} {roof:7.1f} "
              f"{(tuned / naive if naive > 0 else math.nan):7.2f} {100 * tuned / copy if copy > 0 else math.nan:6.1f} "
              f"{100 * tuned / roof:6.1f} {t['ok']:4d}/{t['measured']:<4d} {oc_ratio:6.2f} {t['best_key']}",
              flush=True)
    ratios = [float(r["speedup_vs_naive"]) for r in rows if r["speedup_vs_naive"] != "nan"]
    if ratios:
        print(f"# geometric mean speed-up over naive: {math.exp(statistics.fmean(map(math.log, ratios))):.2f}x "
              f"over {len(ratios)} stencils")
    ocr = [float(r["best_vs_worst_oc"]) for r in rows if r["best_vs_worst_oc"] != "nan"]
    if ocr:
        print(f"# best-OC vs worst-OC speed-up: mean {statistics.fmean(ocr):.2f}x over {len(ocr)} stencils")
    meas = sum(r["measured"] for r in rows)
    ver = sum(r["verified"] for r in rows)
    print(f"# measurements verified: {ver}/{meas}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

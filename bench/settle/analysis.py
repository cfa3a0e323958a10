#!/usr/bin/env python3
"""Settled timing (evaluator.settle_spread, src/eval/race.hpp) judged on recorded kernels: for
every kernel timed with all 10 runs, would its first kSettleRuns runs have settled within a
spread, and how far is their median from the ten runs' median? Also whether the best kernel of
each trace changes when settled kernels answer with their first runs' median.

    bench/settle/analysis.py TRACE_OR_CSV...   (traces: .h5; extracts: .csv.gz of write_csv)
    bench/settle/analysis.py --extract OUT.csv.gz TRACE...   (one row per fully timed kernel)
"""
import argparse
import csv
import gzip
import os

import numpy as np


def runs_of_trace(path):
    import h5py
    with h5py.File(path, "r") as f:
        e = f["/ranks/0000/evaluations"][...]
        gpu = ""
        env = f.get("/environment/rank_0000")
        if env is not None:
            gpu = env.attrs.get("gpu_name", b"")
            gpu = gpu.decode() if isinstance(gpu, bytes) else str(gpu)
    rows = [np.asarray(r["times_ms"], float) for r in e if len(r["times_ms"]) == 10]
    return gpu, np.array(rows).reshape(-1, 10)


def read(paths):
    """{name: (gpu, runs[n, 10])}"""
    out = {}
    for p in paths:
        if p.endswith(".csv.gz"):
            with gzip.open(p, "rt") as f:
                for row in csv.DictReader(f):
                    key = row["trace"]
                    gpu, runs = out.setdefault(key, (row["gpu"], []))
                    runs.append([float(row[f"t{i}"]) for i in range(10)])
        else:
            # A run directory's trace: its parent's and its own names (calls/run).
            parts = os.path.normpath(p).split(os.sep)
            name = "/".join(parts[-3:-1]) if p.endswith("trace.h5") else os.path.basename(p)
            out[name] = runs_of_trace(p)
    return {k: (g, np.array(r).reshape(-1, 10)) for k, (g, r) in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--extract")
    ap.add_argument("--runs", type=int, default=5, help="kSettleRuns")
    a = ap.parse_args()
    data = read(a.inputs)
    if a.extract:
        with gzip.open(a.extract, "wt", newline="") as f:
            w = csv.writer(f)
            w.writerow(["trace", "gpu"] + [f"t{i}" for i in range(10)])
            for name, (gpu, runs) in data.items():
                for r in runs:
                    w.writerow([name, gpu] + [f"{x:.9g}" for x in r])
        print(f"{a.extract}: {sum(len(r) for _, r in data.values())} kernels of {len(data)} traces")
        return
    n = a.runs
    print(f"{'spread':>7} {'settle':>7} {'|err| p50':>10} {'p90':>8} {'p99':>8} {'max':>8} "
          f"{'best kernel slower by':>22}  ({sum(len(r) for _, r in data.values())} kernels, "
          f"{len(data)} traces, first {n} runs)")
    for spread in (0.005, 0.01, 0.02, 0.05):
        total = settled = 0
        errs, worst = [], 0.0
        for gpu, runs in data.values():
            med10 = np.median(runs, 1)
            first = runs[:, :n]
            medn = np.median(first, 1)
            ok = (first.max(1) - first.min(1) <= spread * medn) & (first.min(1) > 0)
            total += len(runs)
            settled += ok.sum()
            errs += list(np.abs(medn[ok] / med10[ok] - 1))
            answer = np.where(ok, medn, med10)
            chosen = np.argmin(answer)
            worst = max(worst, med10[chosen] / med10.min() - 1)
        e = np.array(errs) * 100
        print(f"{spread:7.3f} {100 * settled / total:6.1f}% {np.median(e):9.3f}% "
              f"{np.percentile(e, 90):7.3f}% {np.percentile(e, 99):7.3f}% {e.max():7.3f}% "
              f"{100 * worst:21.3f}%")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Paired comparison of isletune-sweep variants over the same seeds.

    SWEEP_RUNS=1 build/bin/isletune-sweep DATASET.h5 --seeds N "a:KEYS" "b:KEYS" ... > out.txt
    python3 bench/paired_sweep.py out.txt [--base a] [--boot 2000]

isletune-sweep with SWEEP_RUNS=1 prints, under each variant's row, the measurements each seed
needed to come within 5 % of the optimum ("to5:", -1 for a run that never did). Every variant
runs the same seeds, so the runs pair up: for each variant against the base this prints the
median measurements to 5 % of both, their difference, a 95 % bootstrap interval of that
difference (seeds resampled together, so the pairing is kept) and on how many seeds the
variant needed fewer / more measurements. A run that never came within 5 % counts as needing
more than any run that did. An interval that contains 0 means the seeds cannot tell the two
apart.
"""
import argparse
import random
import statistics

NEVER = 10**9


def load(path):
    runs, order, name = {}, [], None
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if p[0] == "to5:" and name is not None:
                runs[name] = [int(x) if int(x) >= 0 else NEVER for x in p[1:]]
                order.append(name)
                name = None
            elif len(p) > 8 and "/" in p[1]:  # a variant's row: name, optimum a/b, ...
                name = p[0]
    return runs, order


def interval(a, b, boot, rng):
    n = len(a)
    diffs = []
    for _ in range(boot):
        idx = [rng.randrange(n) for _ in range(n)]
        diffs.append(statistics.median(a[i] for i in idx) - statistics.median(b[i] for i in idx))
    diffs.sort()
    return diffs[int(0.025 * boot)], diffs[int(0.975 * boot) - 1]


def show(x):
    return "never" if x >= NEVER else f"{x:g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outputs", nargs="+", help="isletune-sweep outputs (SWEEP_RUNS=1)")
    ap.add_argument("--base", help="the variant the others are compared with (default: the first)")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    args = ap.parse_args()
    for path in args.outputs:
        runs, order = load(path)
        if not order:
            print(f"{path}: no per-seed rows (run isletune-sweep with SWEEP_RUNS=1)")
            continue
        base = args.base or order[0]
        if base not in runs:
            print(f"{path}: no variant named {base}")
            continue
        b = runs[base]
        print(f"{path}: base {base}, {len(b)} seeds, median {show(statistics.median(b))}")
        for name in order:
            if name == base:
                continue
            a = runs[name]
            if len(a) != len(b):
                print(f"  {name}: {len(a)} seeds against {len(b)}: not paired")
                continue
            rng = random.Random(1)
            lo, hi = interval(a, b, args.boot, rng)
            ma, mb = statistics.median(a), statistics.median(b)
            fewer = sum(x < y for x, y in zip(a, b))
            more = sum(x > y for x, y in zip(a, b))
            diff = "n/a" if max(ma, mb) >= NEVER else f"{ma - mb:+g}"
            print(f"  {name}: median {show(ma)} ({diff}; 95 % interval {lo:+g} .. {hi:+g}); "
                  f"fewer on {fewer} seeds, more on {more}")


if __name__ == "__main__":
    main()

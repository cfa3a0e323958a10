#!/usr/bin/env python3
"""Paired comparison of isletune-sweep variants over the same seeds.

    SWEEP_RUNS=1 build/bin/isletune-sweep DATASET.h5 --seeds N "a:KEYS" "b:KEYS" ... > out.txt
    python3 bench/paired_sweep.py out.txt [--base a] [--boot 2000] [--kt runs.jsonl]

isletune-sweep with SWEEP_RUNS=1 prints, under each variant's row, the measurements each seed
needed to come within 5 % of the optimum ("to5:", -1 for a run that never did). Every variant
runs the same seeds, so the runs pair up: for each variant against the base this prints the
median measurements to 5 % of both, their difference, a 95 % bootstrap interval of that
difference (seeds resampled together, so the pairing is kept) and on how many seeds the
variant needed fewer / more measurements. A run that never came within 5 % counts as needing
more than any run that did. An interval that contains 0 means the seeds cannot tell the two
apart.

--field wall5 or wallopt compares the sweep's wall clock instead (seconds until within 5 % /
until the optimum was measured, the "wall5:" and "wallopt:" rows; -1: never).

With --kt, the per-run rows of bench/kt_compare.py (--json) for the same dataset (matched by
file name against the sweep's "dataset" line) are compared with every variant as well: Kernel
Tuner's runs are not paired with the seeds (bayes_opt's initial sample is unseeded), so the
interval resamples the two sets of runs independently.
"""
import argparse
import json
import os
import random
import statistics

NEVER = 10**9


FIELDS = ("to5", "wall5", "wallopt")


def load(path, field="to5"):
    runs, order, name, dataset = {}, [], None, None
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if p[0] == "dataset" and len(p) > 1 and dataset is None:
                dataset = os.path.basename(p[1].rstrip(":"))
            elif p[0] == field + ":" and name is not None:
                runs[name] = [float(x) if float(x) >= 0 else NEVER for x in p[1:]]
                order.append(name)
            elif len(p) > 8 and "/" in p[1]:  # a variant's row: name, optimum a/b, ...
                name = p[0]
    return runs, order, dataset


def load_kt(path, dataset):
    """Kernel Tuner's runs per strategy for `dataset` (all rows when it is unknown)."""
    out = {}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if dataset and os.path.basename(r["dataset"]) != dataset:
                continue
            to5 = r["to5"]
            out.setdefault(r["strategy"], []).append(NEVER if to5 is None else int(to5))
    return out


def interval(a, b, boot, rng, paired=True):
    diffs = []
    for _ in range(boot):
        ia = [rng.randrange(len(a)) for _ in a]
        ib = ia if paired else [rng.randrange(len(b)) for _ in b]
        diffs.append(statistics.median(a[i] for i in ia) - statistics.median(b[i] for i in ib))
    diffs.sort()
    return diffs[int(0.025 * boot)], diffs[int(0.975 * boot) - 1]


def bound(x):
    return "never" if abs(x) >= NEVER / 2 else f"{x:+g}"


def show(x):
    return "never" if x >= NEVER else f"{x:g}"


def difference(a, b):
    """a - b of two medians, "n/a" when either never came within 5 %."""
    return "n/a" if max(a, b) >= NEVER else f"{a - b:+g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outputs", nargs="+", help="isletune-sweep outputs (SWEEP_RUNS=1)")
    ap.add_argument("--base", help="the variant the others are compared with (default: the first)")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    ap.add_argument("--kt", help="bench/kt_compare.py --json rows to compare every variant with")
    ap.add_argument("--field", choices=FIELDS, default="to5",
                    help="to5: measurements to 5 %%; wall5 / wallopt: the sweep's wall clock (s) "
                         "to 5 %% / to the optimum")
    args = ap.parse_args()
    if args.kt and args.field != "to5":
        ap.error("--kt compares measurements to 5 %: use it with --field to5")
    for path in args.outputs:
        runs, order, dataset = load(path, args.field)
        if not order:
            print(f"{path}: no per-seed {args.field} rows (run isletune-sweep with SWEEP_RUNS=1)")
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
            print(f"  {name}: median {show(ma)} ({difference(ma, mb)}; 95 % interval {lo:+g} .. {hi:+g}); "
                  f"fewer on {fewer} seeds, more on {more}")
        if not args.kt:
            continue
        for strategy, k in sorted(load_kt(args.kt, dataset).items()):
            mk = statistics.median(k)
            reached = sum(x < NEVER for x in k)
            print(f"  Kernel Tuner {strategy}: {len(k)} runs, median {show(mk)}, "
                  f"{reached}/{len(k)} within 5 %")
            for name in order:
                a = runs[name]
                lo, hi = interval(a, k, args.boot, random.Random(1), paired=False)
                ma = statistics.median(a)
                print(f"    {name} - {strategy}: {difference(ma, mk)} (95 % interval, unpaired, "
                      f"{bound(lo)} .. {bound(hi)}); ratio of medians "
                      f"{'n/a' if max(ma, mk) >= NEVER else f'{ma / mk:.2f}'}")


if __name__ == "__main__":
    main()

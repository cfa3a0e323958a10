#!/usr/bin/env python3
"""Kernel Tuner side by side: measurements to reach 5 % of the optimum on recorded datasets.

A benchmark tool, not a dependency (CI does not need it). Kernel Tuner 1.4 runs in
simulation mode on the dataset's settings: `isletune export DATASET --kernel-tuner-cache`
writes its cache, and `kernel_tuner.tune_cache` admits only the recorded settings (its
restriction inferred from the cache). Its constraint solver would enumerate the product of
every parameter's values (about 2e9 on the whole default space) to apply that restriction, so
the search space is built from the cache's settings directly (Kernel Tuner's own
`Searchspace(from_cache=...)`; the same set the restriction admits). Per strategy and seed it records how many distinct
settings the strategy measured until one within 5 % of the dataset's optimum (the best
recorded time), in Kernel Tuner's evaluation order; `never` when it stopped first.

  PYTHONPATH=KT/site /usr/bin/python3 bench/kt_compare.py --isletune build/bin/isletune \\
      [--seeds 20] [--strategies bayes_opt,genetic_algorithm,random_sample] \\
      [--max-fevals 400] DATASET.h5 ...

Kernel Tuner (github:KernelTuner/kernel_tuner 1.4.0 with github:python-constraint/
python-constraint 2.5.0) is set up as pure-Python source by a setup script of the
development machine; see docs/studies/2026-11-24-whole-space-search-kernel-tuner.md.
bayes_opt's initial sample is not seeded by Kernel Tuner, so only medians over many runs
compare.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


def to5(results, keys, optimum):
    """Distinct settings measured until one was within 5 % (None: never)."""
    seen = set()
    for r in results:
        key = tuple(r[k] for k in keys)
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time")
        if isinstance(t, (int, float)) and t <= optimum * 1.05:
            return len(seen)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--isletune", default="build/bin/isletune")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--strategies", default="bayes_opt,genetic_algorithm,random_sample")
    ap.add_argument("--max-fevals", type=int, default=400)
    ap.add_argument("--json", help="append per-run rows to this JSON-lines file")
    a = ap.parse_args()
    import numpy as np
    import kernel_tuner.interface as kt_interface
    from kernel_tuner import tune_cache
    from kernel_tuner.searchspace import Searchspace

    current = {}

    class RecordedSearchspace(Searchspace):
        """The recorded settings as the search space (what the inferred restriction admits)."""

        def __init__(self, tune_params, restrictions, max_threads, **options):
            super().__init__(None, None, None, from_cache=current["doc"], **options)

    kt_interface.Searchspace = RecordedSearchspace

    for ds in a.datasets:
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "cache.json")
            subprocess.run([a.isletune, "export", ds, "--kernel-tuner-cache", cache], check=True,
                           stdout=subprocess.DEVNULL)
            with open(cache) as f:
                doc = json.load(f)
            current["doc"] = {"tune_params": doc["tune_params"],
                              "cache": {k: v for k, v in doc["cache"].items()
                                        if "__error__" not in v}}
            keys = doc["tune_params_keys"]
            times = [v["time"] for v in doc["cache"].values()
                     if isinstance(v.get("time"), (int, float))]
            optimum = min(times)
            within = sum(t <= optimum * 1.05 for t in times)
            print(f"dataset {os.path.basename(ds)}: {len(doc['cache'])} settings, "
                  f"{within} within 5 %, max_fevals {a.max_fevals}, {a.seeds} seeds", flush=True)
            for strategy in a.strategies.split(","):
                runs = []
                t0 = time.time()
                for seed in range(1, a.seeds + 1):
                    random.seed(seed)
                    np.random.seed(seed)
                    results, _ = tune_cache(cache_path=cache, strategy=strategy,
                                            strategy_options={"max_fevals": a.max_fevals},
                                            verbose=False, quiet=True)
                    n = to5(results, keys, optimum)
                    runs.append(n)
                    if a.json:
                        with open(a.json, "a") as f:
                            f.write(json.dumps({"dataset": os.path.basename(ds),
                                                "strategy": strategy, "seed": seed,
                                                "to5": n}) + "\n")
                reached = [n for n in runs if n is not None]
                vals = sorted(n if n is not None else float("inf") for n in runs)
                med = statistics.median(vals)
                print(f"  {strategy:20s} reached {len(reached)}/{len(runs)}  median to 5 %: "
                      f"{med:g}  runs: {' '.join(str(n) if n else 'never' for n in runs)}"
                      f"  ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())

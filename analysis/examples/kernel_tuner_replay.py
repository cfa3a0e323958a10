#!/usr/bin/python3
"""Replays an isletune measurement in Kernel Tuner's simulation mode (no GPU needed).

    isletune export tests/data/h200-star2d1r.h5 --kernel-tuner-cache star2d1r-h200.json
    python3 analysis/examples/kernel_tuner_replay.py star2d1r-h200.json [STRATEGY] [FEVALS]

Kernel Tuner's simulation mode answers every configuration from the cache and raises
ValueError ("in simulation mode, all configurations must be present in the cache") for one
it does not hold. Its search space is the product of the `tune_params` lists, so a cache
of a *sample* of isletune's space (every isletune dataset and run) only works with
restrictions that admit exactly the recorded settings:

- Kernel Tuner >= 1.4: `kernel_tuner.tune_cache(path)` builds those restrictions from the
  cache itself (every entry without `__error__`);
- older versions: `tune_kernel(..., simulation_mode=True)` with a restriction function
  that looks the configuration up in the cache (below).

The cache's `device_name` is the recording GPU's name ("NVIDIA H200"), so Kernel Tuner
also accepts the file as a cache in a real tuning session on that GPU.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    path = sys.argv[1]
    strategy = sys.argv[2] if len(sys.argv) > 2 else "genetic_algorithm"
    fevals = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    try:
        import kernel_tuner
    except ImportError:
        print("kernel_tuner_replay: Kernel Tuner is not installed (pip install kernel_tuner)",
              file=sys.stderr)
        return 77
    with open(path) as f:
        doc = json.load(f)
    options = {"max_fevals": fevals}
    if hasattr(kernel_tuner, "tune_cache"):
        results, env = kernel_tuner.tune_cache(path, strategy=strategy,
                                               strategy_options=options, quiet=True)
    else:
        keys = doc["tune_params_keys"]
        recorded = {k for k, e in doc["cache"].items() if "__error__" not in e}

        def only_recorded(p: dict) -> bool:
            return ",".join(str(p[k]) for k in keys) in recorded

        results, env = kernel_tuner.tune_kernel(
            doc["kernel_name"], "", tuple(doc["problem_size"]), [], doc["tune_params"],
            restrictions=only_recorded, cache=path, simulation_mode=True, strategy=strategy,
            strategy_options=options, quiet=True)
    ok = [r for r in results if isinstance(r.get("time"), float)]
    best = min(ok, key=lambda r: r["time"])
    fastest = min(e["time"] for e in doc["cache"].values() if isinstance(e["time"], float))
    print(f"{strategy}: {len(ok)} configurations evaluated in simulation, best "
          f"{best['time']:.5f} ms per step (cache's fastest: {fastest:.5f} ms) on "
          f"{doc['device_name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

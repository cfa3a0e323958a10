#!/usr/bin/env python3
"""Writes the user configs of the islands study (bench/islands_device.sh): two stencils no test
uses, as a user gives them (the stencil, the grid, `time_budget_s`, the whole default space),
with the CUDA backend and 16 NVRTC threads per rank (one H200 machine's CPUs per GPU), one
config per way the islands wait for each other (`ga.migration.drift`):

    bench/islands_configs.py DIR --budget-s 60 --drift async --drift 1

writes DIR/upwind2d7-async.yaml, DIR/lap3d19-async.yaml, DIR/upwind2d7-drift1.yaml, ...
(the stencils of bench/pipeline_busy.py: a 2-D asymmetric 7-point upwind stencil at 8192^2,
the 3-D 19-point isotropic Laplacian at 512^3).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_busy import UPWIND_2D, laplacian19  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--budget-s", type=float, default=60)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--drift", action="append", default=[], help="async, 0-3 or -1 (repeatable)")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    stencils = {
        "upwind2d7": ({"name": "upwind2d7", "dims": 2, "points": UPWIND_2D}, [8192, 8192]),
        "lap3d19": ({"name": "lap3d19", "dims": 3, "points": laplacian19()}, [512, 512, 512]),
    }
    os.makedirs(a.dir, exist_ok=True)
    for drift in a.drift or ["async"]:
        for name, (stencil, grid) in stencils.items():
            if a.only and name not in a.only:
                continue
            text = json.dumps({  # YAML is a superset of JSON
                "stencil": stencil, "grid": grid,
                "budget": {"time_budget_s": a.budget_s},
                "ga": {"migration": {"drift": drift if drift == "async" else int(drift)}},
                "evaluator": {"backend": "cuda", "compile_threads": a.threads},
            })
            path = os.path.join(a.dir, f"{name}-{'async' if drift == 'async' else 'drift' + drift}.yaml")
            with open(path, "w") as f:
                f.write(text + "\n")
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Checks that a run's trace holds every evaluation of every rank, consistently:
per rank, eval_id runs 0..n-1 without gaps; generations run 0..G without gaps and every
rank reached the same G (all ranks stop in the same generation); each generation's
`evaluations` equals its measured rows (not cached, not migrant); the replay clock at
the end (`wall_s` of the last generation, offset by nothing) equals the summed cost of
the measured rows; and /result counts every measured row of every rank.

Usage: check_trace.py RUN/trace.h5 [--partial [SPREAD]] [--async]   (--partial: an interrupted
run: no /result needed, ranks may differ by SPREAD generations, 1 unless given:
ga.migration.drift D lets them run D + 1 apart; --async: ga.migration.drift async, whose ranks
end in whatever generations they reached, /result counting rank 0's)
"""
import sys

import h5py
import numpy as np


def main(path, partial, spread=1, unbounded=False):
    errors = []
    with h5py.File(path, "r") as f:
        assert f.attrs["format"] == "isletune-trace", "not a trace"
        count = int(f["ranks"].attrs["count"])
        last_generations = []
        measured_total = 0
        for r in range(count):
            g = f[f"ranks/{r:04d}"]
            # Only the committed rows (docs/trace.md): rows past the marker belong to a
            # commit that a kill or a full disk cut short.
            n = g.attrs["committed"] if "committed" in g.attrs else [None] * 3
            ev = g["evaluations"][: n[0]]
            gen = g["generations"][: n[1]]
            if not np.array_equal(ev["eval_id"], np.arange(len(ev))):
                errors.append(f"rank {r}: eval_id has gaps")
            if not np.array_equal(gen["generation"], np.arange(len(gen))):
                errors.append(f"rank {r}: generations {gen['generation'].tolist()} are not 0..G")
            measured = (ev["cached"] == 0) & (ev["migrant"] == 0)
            measured_total += int(measured.sum())
            for row in gen:
                n = int((measured & (ev["generation"] == row["generation"])).sum())
                if n != row["evaluations"]:
                    errors.append(f"rank {r} generation {row['generation']}: "
                                  f"{row['evaluations']} evaluations recorded, {n} rows")
            threads = max((int(f["environment"][k].attrs.get("compile_threads", 0))
                           for k in f["environment"]), default=0) if "environment" in f else 0
            # One measurement after another (no compile threads): the clock is their cost.
            # With compiles that overlap, the queue's schedule decides (and what is queued
            # when the run stops is paid but never recorded).
            if len(gen) and threads == 0:
                cost = float(np.sum((ev["compile_ms"] + ev["verify_ms"] + ev["run_ms"])[measured])) * 1e-3
                if abs(cost - gen["wall_s"][-1]) > 1e-6 * max(1.0, cost):
                    errors.append(f"rank {r}: clock {gen['wall_s'][-1]} != recorded cost {cost}")
            if np.any(ev["generation"] > (gen["generation"][-1] if len(gen) else -1)):
                errors.append(f"rank {r}: evaluations of a generation that was not completed")
            last_generations.append(int(gen["generation"][-1]) if len(gen) else -1)
        if not unbounded and max(last_generations) - min(last_generations) > (spread if partial else 0):
            errors.append(f"ranks ended in generations {last_generations}")
        if not partial:
            res = f["result"].attrs
            if int(res["evaluations"]) != measured_total:
                errors.append(f"result counts {int(res['evaluations'])}, rows {measured_total}")
            if int(res["generations"]) != last_generations[0]:
                errors.append(f"result generations {int(res['generations'])} != {last_generations[0]}")
    for e in errors:
        print(e)
    print(f"{path}: {count} ranks, generations {last_generations}, {measured_total} measured: "
          f"{'ok' if not errors else 'FAILED'}")
    return 0 if not errors else 1


if __name__ == "__main__":
    args = sys.argv[2:]
    spread = 1
    at = args.index("--partial") + 1 if "--partial" in args else len(args)
    if at < len(args) and args[at].isdigit():
        spread = int(args[at])
    sys.exit(main(sys.argv[1], "--partial" in args, spread, "--async" in args))

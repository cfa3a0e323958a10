#!/usr/bin/python3
"""A digest of a trace's search trajectory: every rank's evaluations and generations (all
columns but the real-time `wait_s`) and the /sample table, as one SHA-256 and the row counts.

Usage: trace_digest.py TRACE.h5   (prints `sha256 evaluations=N generations=M`)
"""
import hashlib
import sys

import h5py
import numpy as np

IGNORED_FIELDS = {"wait_s"}
# Columns added after the golden data was recorded, with the value a trace written before
# them reads as (a parameter a family appended: its neutral value, src/setting/setting.hpp):
# hashed only where a row holds another value, so a digest changes only when the trajectory
# does.
LATER_FIELDS = {"restart": 0, "mma": 0, "mma_nb": 1, "mma_warps": 4, "mma_creg": 0,
                "mma_minb": 1}


# Parameters when the golden data was recorded (kBaseParamCount): a per-parameter vector (the
# `genes` and `values` columns, /sample/settings rows) is hashed over them alone when every
# row holds the same values beyond them (parameters a family appended later, at one value).
BASE_PARAMS = 18


def base_only(column):
    if column.ndim != 2 or column.shape[1] <= BASE_PARAMS:
        return column
    rest = column[:, BASE_PARAMS:]
    if len(rest) and np.all(rest == rest[0]):
        return column[:, :BASE_PARAMS]
    return column


def feed(h, dset) -> int:
    data = dset[...]
    if data.dtype.names is None:
        data = base_only(data)
        h.update(np.ascontiguousarray(data).tobytes() if data.dtype.kind != "O"
                 else repr(data.tolist()).encode())
        return int(data.shape[0]) if data.shape else 1
    names = [n for n in data.dtype.names if n not in IGNORED_FIELDS and
             not (n in LATER_FIELDS and np.all(data[n] == LATER_FIELDS[n]))]
    def column(n):
        c = data[n]
        if len(c) and c.dtype == object and isinstance(c[0], np.ndarray):
            return base_only(np.stack(c)) if len({len(v) for v in c}) == 1 else c
        return base_only(c)
    columns = {n: column(n) for n in names}
    for i in range(len(data)):
        h.update(repr([columns[n][i].tolist() if hasattr(columns[n][i], "tolist")
                       else columns[n][i] for n in names]).encode())
    return len(data)


def main() -> int:
    h = hashlib.sha256()
    counts = {"evaluations": 0, "generations": 0}
    with h5py.File(sys.argv[1], "r") as f:
        for rank in sorted(f["ranks"].keys()):
            g = f["ranks"][rank]
            for table in ("evaluations", "generations"):
                counts[table] += feed(h, g[table])
        if "sample" in f:
            for key in sorted(f["sample"].keys()):
                feed(h, f["sample"][key])
    print(f"{h.hexdigest()[:16]} evaluations={counts['evaluations']} "
          f"generations={counts['generations']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

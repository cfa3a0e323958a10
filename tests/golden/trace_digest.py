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
# Columns added after the golden data was recorded: hashed only where a row holds a value
# other than 0 (what a trace written before them reads as), so a digest changes only when
# the trajectory does.
LATER_FIELDS = {"restart"}


def feed(h, dset) -> int:
    data = dset[...]
    if data.dtype.names is None:
        h.update(np.ascontiguousarray(data).tobytes() if data.dtype.kind != "O"
                 else repr(data.tolist()).encode())
        return int(data.shape[0]) if data.shape else 1
    names = [n for n in data.dtype.names if n not in IGNORED_FIELDS and
             not (n in LATER_FIELDS and not np.any(data[n]))]
    for row in data:
        h.update(repr([row[n].tolist() if hasattr(row[n], "tolist") else row[n]
                       for n in names]).encode())
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

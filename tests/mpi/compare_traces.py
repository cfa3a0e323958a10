#!/usr/bin/python3
"""Compares two isletune traces table by table, value by value (NaN equals NaN).

Ignored, because they are timestamps or real-time measurements: the root attributes
`created`, a rank file's `run_created` and `command`, the `output` line of the stored config (the run directory),
the `wait_s` column of generations, and the checkpoint slots
(which slot holds the newest blob depends on how often a run was restarted).

Usage: compare_traces.py A/trace.h5 B/trace.h5   (exit 0 when equal; prints differences)
"""
import math
import sys

import h5py
import numpy as np

IGNORED_ATTRS = {"created", "run_created", "command"}
IGNORED_FIELDS = {"wait_s"}


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind == "f":
            return bool(np.array_equal(a, b, equal_nan=True))
        if a.dtype.kind == "O":
            return all(same(x, y) for x, y in zip(a.ravel(), b.ravel()))
        return bool(np.array_equal(a, b))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def rows(dset):
    data = dset[...]
    if data.dtype.names is None:
        return data.shape, [data.tolist() if data.dtype.kind != "O" else list(data.ravel())]
    names = [n for n in data.dtype.names if n not in IGNORED_FIELDS]
    return data.shape, [[row[n] for n in names] for row in data]


def walk(group, prefix, out):
    for key, value in group.attrs.items():
        if key == "yaml":  # the effective config names its own output directory
            value = "\n".join(l for l in str(value).splitlines() if not l.startswith("output:"))
        if key not in IGNORED_ATTRS:
            out[prefix + "@" + key] = value
    for name in group:
        if name == "checkpoint":
            continue
        obj = group[name]
        path = prefix + "/" + name
        if isinstance(obj, h5py.Group):
            walk(obj, path, out)
        else:
            for key, value in obj.attrs.items():
                out[path + "@" + key] = value
            out[path] = rows(obj)


def main(a_path, b_path):
    a, b = {}, {}
    with h5py.File(a_path, "r") as fa, h5py.File(b_path, "r") as fb:
        walk(fa, "", a)
        walk(fb, "", b)
    problems = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            problems.append(f"{key}: only in {'first' if key in a else 'second'}")
        elif not same(a[key], b[key]):
            problems.append(f"{key}: differs")
    for p in problems[:20]:
        print(p)
    print(f"compared {len(a)} objects: {'equal' if not problems else f'{len(problems)} differ'}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

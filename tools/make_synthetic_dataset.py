#!/usr/bin/python3
"""Writes tests/data/synthetic-star2d1r.h5: a SYNTHETIC replay dataset (root attribute
`synthetic` = true) in the isletune-dataset schema of docs/trace.md.

It stands in for a recorded H100 dataset until real ones exist. Every valid setting of a
narrowed 2-D part-1 space of star2d1r on a 4096^2 grid gets a time per step from an
analytic model: a memory-bound base time (16 B per cell at 3000 GB/s) times smooth
factors (occupancy, coalescing along x, merging, shared-memory staging, unrolling) and a
rugged deterministic per-setting term, so the landscape has a clear optimum region with
local structure. A few settings fail with each failure status. Deterministic: the same
command writes the same tables.

Usage: make_synthetic_dataset.py [OUT.h5]
"""
import hashlib
import itertools
import math
import sys

import h5py
import numpy as np

PARAMS = ["streaming", "merge", "retiming", "prefetch", "tdeg", "sd", "sb", "tbx", "tby",
          "tbz", "mfx", "mfy", "mfz", "ufx", "ufy", "ufz", "use_shared", "use_constant"]
KINDS = {"streaming": "flag", "merge": "enum", "retiming": "flag", "prefetch": "flag",
         "sd": "axis", "use_shared": "flag", "use_constant": "flag"}
MERGE = ["none", "block", "cyclic"]
STATUS = ["ok", "invalid", "compile_error", "launch_error", "wrong_result", "crashed",
          "timeout"]
GRID = (4096, 4096)
RADIUS = 1
SPACE = {"tbx": [8, 32, 64, 128, 256], "tby": [1, 2, 4, 8, 16, 32],
         "merge": [0, 1, 2], "mfx": [1, 2, 4], "mfy": [1, 2, 4], "ufx": [1, 2],
         "ufy": [1, 2], "use_shared": [0, 1], "use_constant": [0, 1]}
CONFIG_YAML = """# Synthetic replay dataset (tools/make_synthetic_dataset.py): not measured.
stencil: star2d1r
grid: [4096, 4096]
steps: 48
space:
  streaming: {values: [0]}
  tdeg: {values: [1]}
  tbx: {values: [8, 32, 64, 128, 256]}
  tby: {values: [1, 2, 4, 8, 16, 32]}
  mfx: {values: [1, 2, 4]}
  mfy: {values: [1, 2, 4]}
  ufx: {values: [1, 2]}
  ufy: {values: [1, 2]}
"""


def valid(s):
    """The explicit constraints of docs/architecture.md, "The search space" restricted to this 2-D space."""
    threads = s["tbx"] * s["tby"]
    if not 32 <= threads <= 1024:
        return False
    if s["merge"] == 0 and (s["mfx"] > 1 or s["mfy"] > 1):
        return False
    if s["merge"] != 0 and s["mfx"] == 1 and s["mfy"] == 1:
        return False
    for d in ("x", "y"):
        if s["uf" + d] > s["mf" + d]:
            return False
        if s["tb" + d] * s["mf" + d] <= 2 * RADIUS:
            return False
    tile = (s["tbx"] * s["mfx"] + 2 * RADIUS) * (s["tby"] * s["mfy"] + 2 * RADIUS) * 8
    return not (s["use_shared"] and tile > 232448)


def unit_hash(key, salt):
    """A deterministic number in [0, 1) per setting key."""
    digest = hashlib.sha256((salt + key).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2.0**64


def model_ms(s, key):
    """Synthetic time per step in ms: smooth factors times a rugged per-setting term."""
    cells = GRID[0] * GRID[1]
    base = cells * 16 / 3000e9 * 1e3
    threads = s["tbx"] * s["tby"]
    occupancy = 1.0 + 0.35 * abs(math.log2(threads / 256.0)) ** 1.5 / 4
    coalesce = 1.0 + 0.9 * max(0.0, math.log2(32 / (s["tbx"] * (s["mfx"] if s["merge"] == 2 else 1)))) / 2
    work = s["mfx"] * s["mfy"]
    merging = {0: 1.0, 1: 0.93, 2: 0.9}[s["merge"]] * (1.0 + 0.04 * (work - 4) ** 2 / 16)
    if s["merge"] == 1 and s["mfx"] > 1:
        merging *= 1.12  # block merging along x breaks coalescing
    shared = 0.96 if s["use_shared"] and s["tby"] * s["mfy"] >= 4 else (1.05 if s["use_shared"] else 1.0)
    unroll = 1.0 - 0.02 * (math.log2(s["ufx"]) + math.log2(s["ufy"])) + 0.015 * (s["ufx"] * s["ufy"] > 8)
    constant = 1.01 if s["use_constant"] else 1.0
    rugged = 1.0 + 0.06 * math.sin(3.0 * math.log2(threads) + 2.0 * s["mfy"]) + 0.04 * unit_hash(key, "r")
    return base * occupancy * coalesce * merging * shared * unroll * constant * rugged


def failure(s, key):
    """The failure status of a setting (0 = ok), a few of each kind."""
    threads = s["tbx"] * s["tby"]
    if threads >= 512 and s["mfx"] * s["mfy"] * s["ufx"] * s["ufy"] >= 32:
        return 3  # launch_error: too many registers per block
    h = unit_hash(key, "f")
    if h < 0.012:
        return 2  # compile_error
    if h < 0.020:
        return 4  # wrong_result
    if h < 0.025:
        return 5  # crashed
    if h < 0.029:
        return 6  # timeout
    if h < 0.032:
        return 1  # invalid
    return 0


def key_of(values):
    return ",".join(f"{p}={MERGE[v] if p == 'merge' else v}" for p, v in zip(PARAMS, values))


def settings():
    names = list(SPACE)
    for combo in itertools.product(*(SPACE[n] for n in names)):
        s = dict(streaming=0, retiming=0, prefetch=0, tdeg=1, sd=0, sb=0, tbz=1, mfz=1, ufz=1)
        s.update(zip(names, combo))
        if valid(s):
            yield s


def main(out):
    vlen_int = h5py.vlen_dtype(np.int32)
    vlen_double = h5py.vlen_dtype(np.float64)
    string = h5py.string_dtype()
    ev_type = np.dtype([("eval_id", "<i8"), ("generation", "<i4"), ("cell", "<i4"),
                        ("genes", vlen_int), ("values", "<i4", (18,)), ("key", string),
                        ("status", "i1"), ("median_ms", "<f8"), ("times_ms", vlen_double),
                        ("compile_ms", "<f8"), ("verify_ms", "<f8"), ("run_ms", "<f8"),
                        ("registers", "<i4"), ("shared_bytes", "<i4"), ("occupancy", "<f8"),
                        ("error_l2", "<f8"), ("error_max", "<f8"), ("wall_s", "<f8"),
                        ("cached", "i1"), ("migrant", "i1"), ("message", string)])
    rows = []
    clock = 0.0
    for i, s in enumerate(settings()):
        values = [s[p] for p in PARAMS]
        key = key_of(values)
        status = failure(s, key)
        h = unit_hash(key, "c")
        compile_ms = 150.0 + 120.0 * h + (40.0 if s["use_shared"] else 0.0)
        verify_ms = 0.0 if status in (1, 2, 3) else 25.0 + 10.0 * h
        median = math.nan
        times = np.zeros(0)
        run_ms = 0.0
        if status == 0:
            median = model_ms(s, key)
            jitter = [1.0 + 0.004 * (unit_hash(key, f"t{j}") - 0.5) for j in range(5)]
            times = np.array(sorted(median * j for j in jitter))
            median = float(np.median(times))
            run_ms = float(np.sum(times)) * 48 * 1.2
        if status == 1:
            compile_ms = 0.0
        threads = s["tbx"] * s["tby"]
        registers = 24 + 6 * s["mfx"] * s["mfy"] + 2 * s["ufx"] * s["ufy"]
        shared = ((s["tbx"] * s["mfx"] + 2) * (s["tby"] * s["mfy"] + 2) * 8) if s["use_shared"] else 0
        clock += (compile_ms + verify_ms + run_ms) * 1e-3
        message = "" if status == 0 else f"synthetic {STATUS[status]}"
        rows.append((i, 0, -1, np.zeros(0, np.int32), values, key, status, median, times,
                     compile_ms, verify_ms, run_ms, registers if status != 2 else 0,
                     shared if status != 2 else 0, min(1.0, 2048 / max(threads, 1) / 64 * threads / 32) if status == 0 else 0.0,
                     1e-16 if status == 0 else (3e-6 if status == 4 else math.nan),
                     1e-15 if status == 0 else (5e-5 if status == 4 else math.nan),
                     clock, 0, 0, message))
    table = np.array(rows, dtype=ev_type)
    with h5py.File(out, "w", libver="earliest") as f:
        f.attrs["format"] = "isletune-dataset"
        f.attrs["version"] = np.int32(1)
        f.attrs["created"] = "2026-11-21T00:00:00Z"
        f.attrs["command"] = "tools/make_synthetic_dataset.py"
        f.attrs["isletune_version"] = "0.1.0"
        f.attrs["seed"] = np.uint64(0)
        f.attrs["synthetic"] = True
        f.attrs["description"] = ("SYNTHETIC dataset: analytic time model over a narrowed 2-D "
                                  "part-1 space of star2d1r, not measured on a GPU")
        f.create_group("config").attrs["yaml"] = CONFIG_YAML
        st = f.create_group("stencil")
        st.attrs["name"] = "star2d1r"
        st.attrs["dims"] = np.int32(2)
        st.attrs["order"] = np.int32(1)
        st.attrs["shape"] = "star"
        offsets = np.array([[0, 0, 0], [-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0]], np.int32)
        coeffs = np.array([0.4, 0.13, 0.16, 0.14, 0.17])
        st.create_dataset("offsets", data=offsets)
        st.create_dataset("coefficients", data=coeffs)
        st.create_dataset("features", data=np.zeros(0, dtype=[("name", string), ("value", "<f8")]))
        par_type = np.dtype([("name", string), ("kind", string), ("values", vlen_int)])
        par_rows = []
        for p in PARAMS:
            vals = SPACE.get(p, [{"tbz": 1, "mfz": 1, "ufz": 1, "tdeg": 1}.get(p, 0)])
            par_rows.append((p, KINDS.get(p, "int"), np.array(vals, np.int32)))
        f.create_group("space").create_dataset("parameters", data=np.array(par_rows, par_type))
        env = f.create_group("environment").create_group("rank_0000")
        env.attrs["rank"] = np.int32(0)
        env.attrs["host"] = "synthetic"
        env.attrs["gpu_name"] = "synthetic (NVIDIA H100 80GB HBM3 model)"
        env.attrs["gpu_uuid"] = "GPU-synthetic"
        env.attrs["sm_count"] = np.int32(132)
        env.attrs["sm_clock_mhz"] = np.int32(1980)
        env.attrs["memory_clock_mhz"] = np.int32(2619)
        env.attrs["driver_version"] = "synthetic"
        env.attrs["cuda_version"] = "synthetic"
        env.attrs["mpi_library"] = "none"
        ranks = f.create_group("ranks")
        ranks.attrs["count"] = np.int32(1)
        r0 = ranks.create_group("0000")
        dset = r0.create_dataset("evaluations", data=table, maxshape=(None,), chunks=(1024,))
        dset.attrs["parameters"] = np.array(PARAMS, dtype=object).astype(string)
        dset.attrs["status_names"] = np.array(STATUS, dtype=object).astype(string)
        gen_type = np.dtype([("generation", "<i4"), ("wall_s", "<f8"), ("wait_s", "<f8"),
                             ("best_ms", "<f8"), ("mean_fitness", "<f8"), ("mcr", "<f8"),
                             ("unique_genomes", "<i4"), ("evaluations", "<i4")])
        r0.create_dataset("generations", data=np.zeros(0, gen_type), maxshape=(None,), chunks=(64,))
        mig_type = np.dtype([("generation", "<i4"), ("direction", "<i4"), ("peer", "<i4"),
                             ("key", string), ("median_ms", "<f8")])
        r0.create_dataset("migrations", data=np.zeros(0, mig_type), maxshape=(None,), chunks=(64,))
    ok = table["status"] == 0
    best = int(np.nanargmin(np.where(ok, table["median_ms"], np.inf)))
    counts = {STATUS[k]: int(np.sum(table["status"] == k)) for k in range(7)}
    print(f"{out}: {len(table)} settings, {counts}, best {table['median_ms'][best]:.5f} ms "
          f"{table['key'][best]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/synthetic-star2d1r.h5")

"""Export a trace as a Kernel Tuner cache file, so Kernel Tuner's strategies can replay
exactly the space isletune measured (`tune_cache(...)` / `simulation_mode=True`).

Kernel Tuner's cache layout (kernel_tuner/util.py `process_cache`, `store_cache`): a JSON
object with `device_name`, `kernel_name`, `problem_size`, `tune_params_keys`,
`tune_params` (value list per parameter, in key order), `objective` and `cache`; each
cache entry is keyed by the parameter values joined with "," in `tune_params_keys` order
and holds the parameters, `time` (ms) and `times`, `compile_time`, `verification_time`,
`benchmark_time`, `strategy_time`, `framework_time` (ms) and `timestamp`. A failed
configuration stores the error class name in place of the time ("InvalidConfig",
"CompilationFailedConfig", "RuntimeFailedConfig"), and in `__error__` as newer versions
read it. The merge kind is exported as its integer code (0 none, 1 block, 2 cyclic) so
every key is numeric, as Kernel Tuner's cache schema requires.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .compute import measured_mask, ok_mask
from .trace import PARAM_NAMES, STATUS_NAMES, Trace

# isletune status -> Kernel Tuner error class.
KT_ERRORS: dict[str, str] = {
    "invalid": "InvalidConfig",
    "compile_error": "CompilationFailedConfig",
    "launch_error": "RuntimeFailedConfig",
    "wrong_result": "RuntimeFailedConfig",
    "crashed": "RuntimeFailedConfig",
    "timeout": "RuntimeFailedConfig",
}
SCHEMA_VERSION = "1.0.0"


def kt_key(values: Any) -> str:
    """Kernel Tuner's cache key: the parameter values joined by ","."""
    return ",".join(str(int(v)) for v in values)


def _finite(x: float) -> float:
    """A JSON-safe number (NaN becomes 0)."""
    return float(x) if math.isfinite(float(x)) else 0.0


def tune_params(trace: Trace) -> dict[str, list[int]]:
    """The 18 parameters' value lists: the space's, widened by any value actually measured."""
    values = trace.evaluations["values"]
    out = {}
    for i, name in enumerate(PARAM_NAMES):
        seen = set(values[:, i].tolist()) if len(values) else set()
        out[name] = sorted(set(trace.parameters.get(name, [])) | seen)
    return out


def cache_document(trace: Trace) -> dict[str, Any]:
    """The cache file contents for a trace: one entry per distinct measured setting.

    When a setting was measured more than once (on several islands), the entry keeps the
    ok measurement with the lowest median (or the first failure if none succeeded).
    """
    e = trace.evaluations
    e = e[measured_mask(e)]
    e = e[np.lexsort((e["eval_id"], e["rank"], e["wall_s"]))]
    ok = ok_mask(e)
    created = str(trace.attrs.get("created", ""))
    try:
        base_time = _dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        base_time = _dt.datetime.now(_dt.timezone.utc)
    if base_time.tzinfo is None:
        base_time = base_time.replace(tzinfo=_dt.timezone.utc)
    cache: dict[str, dict[str, Any]] = {}
    for row, good in zip(e, ok):
        key = kt_key(row["values"])
        if key in cache and not (good and (cache[key]["__ok__"] is False
                                           or row["median_ms"] < cache[key]["time"])):
            continue
        entry: dict[str, Any] = {name: int(v) for name, v in zip(PARAM_NAMES, row["values"])}
        times = [float(t) for t in np.asarray(row["times_ms"], "f8")]
        if good:
            entry["time"] = float(row["median_ms"])
            entry["times"] = times
        else:
            error = KT_ERRORS.get(STATUS_NAMES[int(row["status"])] if 0 <= int(row["status"])
                                  < len(STATUS_NAMES) else "invalid", "RuntimeFailedConfig")
            entry["time"] = error
            entry["__error__"] = error
        entry["compile_time"] = _finite(row["compile_ms"])
        entry["verification_time"] = _finite(row["verify_ms"])
        # Kernel Tuner's benchmark_time: the wall time of benchmarking the configuration
        # (warm-up and timed runs), isletune's run_ms; not the sum of per-step times.
        entry["benchmark_time"] = _finite(row["run_ms"])
        entry["strategy_time"] = 0
        entry["framework_time"] = 0
        stamp = base_time + _dt.timedelta(seconds=_finite(row["wall_s"]))
        entry["timestamp"] = str(stamp)
        entry["__ok__"] = bool(good)
        cache[key] = entry
    for entry in cache.values():
        del entry["__ok__"]
    env = trace.ranks[0].environment if trace.ranks else {}
    device = env.get("gpu_name") or env.get("gpu") or env.get("GPU name") or "unknown"
    grid = trace.grid
    return {
        "schema_version": SCHEMA_VERSION,
        "device_name": str(device),
        "kernel_name": str(trace.stencil.get("name", "isletune_stencil")),
        "problem_size": list(grid) if grid else [],
        "tune_params_keys": list(PARAM_NAMES),
        "tune_params": tune_params(trace),
        "objective": "time",
        "cache": cache,
    }


def write_cache(trace: Trace, path: Path | str) -> dict[str, Any]:
    """Writes the Kernel Tuner cache file (closed JSON) and returns its contents."""
    doc = cache_document(trace)
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")
    return doc

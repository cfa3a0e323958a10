"""Post-hoc analysis of isletune HDF5 traces: loading, summaries, plots, run comparisons.

Loading lives in `trace`, numbers in `compute`, pictures in `draw`, the Kernel Tuner
cache export in `kt` (it runs `isletune export`), and the command line in `cli`
(`python3 -m isletune_analysis`, or `isletune-analyze` once installed with pip).

The names below are imported on first use, so that a missing dependency (h5py, numpy,
pandas, ...) becomes one sentence from the command line instead of a traceback.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TraceError", "Trace", "RankData", "load_trace", "load_traces"]
__version__ = "0.2.0"


def __getattr__(name: str) -> Any:
    if name == "TraceError":
        from .errors import TraceError
        return TraceError
    if name in ("Trace", "RankData", "load_trace", "load_traces"):
        from . import trace
        return getattr(trace, name)
    raise AttributeError(f"module 'isletune_analysis' has no attribute {name!r}")

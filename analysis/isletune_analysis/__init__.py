"""Post-hoc analysis of isletune HDF5 traces: loading, summaries, plots, run comparisons.

Loading lives in `trace`, numbers in `compute`, pictures in `draw`, the Kernel Tuner
cache export in `kt`, and the command line in `cli` (`python3 -m isletune_analysis`).
"""

from .errors import TraceError
from .trace import Trace, RankData, load_trace, load_traces

__all__ = ["TraceError", "Trace", "RankData", "load_trace", "load_traces"]
__version__ = "0.1.0"

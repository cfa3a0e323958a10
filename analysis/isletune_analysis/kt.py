"""Kernel Tuner cache export: runs the project's one writer, `isletune export
--kernel-tuner-cache` (src/cli/export_command.cpp), and reads back what it wrote.

The binary is found as `$ISLETUNE_BIN`, else `isletune` on PATH, else the build tree next
to this package (`build/bin/isletune`). The cache layout is Kernel Tuner's own
(`device_name`, `kernel_name`, `problem_size`, `tune_params_keys`, `tune_params`,
`objective`, `cache`); docs/analysis.md says how to replay it in Kernel Tuner.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .errors import TraceError


def isletune_binary() -> Path:
    """The isletune executable to run; TraceError naming the places looked at if none."""
    candidates = []
    if os.environ.get("ISLETUNE_BIN"):
        candidates.append(Path(os.environ["ISLETUNE_BIN"]))
    on_path = shutil.which("isletune")
    if on_path:
        candidates.append(Path(on_path))
    candidates.append(Path(__file__).resolve().parents[2] / "build" / "bin" / "isletune")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise TraceError("isletune", "the Kernel Tuner cache is written by `isletune export`, which "
                     "was not found ($ISLETUNE_BIN, PATH, build/bin/isletune); build it first")


def write_cache(trace: Path | str, path: Path | str) -> dict[str, Any]:
    """Writes the Kernel Tuner cache of a trace, dataset or run directory; returns it."""
    proc = subprocess.run([str(isletune_binary()), "export", str(trace), "--kernel-tuner-cache",
                           str(path)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        message = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise TraceError(trace, message[-1] if message else
                         f"isletune export failed with exit code {proc.returncode}")
    return json.loads(Path(path).read_text())

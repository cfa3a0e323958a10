"""Independent reading of trace files for the tests: plain h5py on the rank files, no
isletune_analysis code, so the package's numbers are checked against a second reading."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import h5py
import numpy as np


TABLES = ("evaluations", "generations", "migrations")
PARAMS = ("streaming", "merge", "retiming", "prefetch", "tdeg", "sd", "sb", "tbx", "tby", "tbz",
          "mfx", "mfy", "mfz", "ufx", "ufy", "ufz", "use_shared", "use_constant")


def _rows(group: h5py.Group, table: str, committed: bool) -> np.ndarray:
    """A table of a rank group: its first `committed[i]` rows (docs/trace.md) when the
    group has the marker and `committed` is set, else every row."""
    if committed and "committed" in group.attrs:
        return group[table][: int(group.attrs["committed"][TABLES.index(table)])]
    return group[table][()]


def rank_tables(run: Path, table: str = "evaluations",
                committed: bool = True) -> dict[int, np.ndarray]:
    """{rank: table} read straight from RUN/rank-NNNN.h5 (or a dataset's inline groups);
    `committed=False` also returns the rows past the commit marker."""
    run = Path(run)
    out = {}
    if run.is_file():
        with h5py.File(run, "r") as f:
            for name in f["ranks"]:
                out[int(name)] = _rows(f["ranks"][name], table, committed)
        return out
    for path in sorted(run.glob("rank-*.h5")):
        with h5py.File(path, "r") as f:
            out[int(path.stem.split("-")[1])] = _rows(f, table, committed)
    return out


def all_rows(run: Path) -> np.ndarray:
    """Every evaluation row of every rank file."""
    return np.concatenate(list(rank_tables(run).values()))


def measured(rows: np.ndarray) -> np.ndarray:
    """Rows that are new measurements."""
    return rows[(rows["cached"] == 0) & (rows["migrant"] == 0)]


def ok_times(rows: np.ndarray) -> np.ndarray:
    """Median times of ok rows."""
    t = rows["median_ms"][rows["status"] == 0]
    return t[np.isfinite(t) & (t > 0)]


def parse_csv(text: str) -> list[list[dict[str, str]]]:
    """The CSV blocks a command printed (blocks are separated by a blank line)."""
    blocks = [b for b in text.strip().split("\n\n") if b.strip()]
    return [list(csv.DictReader(io.StringIO(b))) for b in blocks]

"""Errors of the analysis package: one sentence naming the file and what is wrong."""

from __future__ import annotations

from pathlib import Path


class TraceError(Exception):
    """A file that cannot be analysed (missing, not a trace, other version, empty)."""

    def __init__(self, path: Path | str, what: str) -> None:
        self.path = str(path)
        self.what = what
        super().__init__(f"{self.path}: {what}")

"""A shared trace or dataset cannot run code or write to a terminal (issue 50).

Every string a trace or dataset holds (every string attribute of every group and dataset,
every string column of its tables) is replaced, one at a time, by hostile text: a newline
followed by a line of C, an ESC sequence, a bidirectional override, a NUL-free 1 MB name.
`report`, `report --json`, `export --best -o` / `--kernel-tuner-cache`, and a replay `run`
on the dataset (then `export --best` of that run) must then

- exit 0 or 2 (never crash), with at most one line on stderr;
- print no raw control byte, no bidirectional override and no line over 4 KB;
- write generated code where the planted text never leaves a `//` comment: no line of the
  .cu holds `pwn` outside a comment, and the file holds no control byte but newlines;
- write JSON that parses.

Without the fixes, `export --best` wrote the stencil name into the .cu as code and
`report` printed ESC sequences and the 1 MB name whole.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

SOURCE = Path(os.environ.get("ISLETUNE_SOURCE", Path(__file__).resolve().parents[2]))
BIN = os.environ.get("ISLETUNE_BIN", str(SOURCE / "build" / "bin" / "isletune"))
DATASET = SOURCE / "tests" / "data" / "synthetic-star2d1r.h5"

if not Path(BIN).is_file():
    pytest.skip(f"{BIN} is not built", allow_module_level=True)

INJECTED = "s\nstatic int pwn = 1; // injected\r\n#include </etc/passwd>\n"
HOSTILE = {
    "code": INJECTED,
    "terminal": "GPU \x1b[2J\x1b]0;owned\x07 \u202egnp.exe \u0085\u009b31m \\",
    "huge": "N" * (1 << 20),
}
MAX_LINE = 4096
UNSAFE = {chr(c) for c in range(0x20) if c != 0x0A} | {"\x7f", "\u0085", "\u009b", "\u202e"}


def isletune(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, *args], capture_output=True, timeout=300, cwd=cwd)


def string_places(path: Path) -> list[tuple[str, str, str]]:
    """(object, attribute, "") for every string attribute and (dataset, "", column) for every
    string column of a compound dataset in the file."""
    places: list[tuple[str, str, str]] = []

    def visit(name: str, obj) -> None:
        for key, value in obj.attrs.items():
            if isinstance(value, (str, bytes)) or (
                    isinstance(value, np.ndarray) and value.dtype.kind in "OSU"):
                places.append((name, key, ""))
        if isinstance(obj, h5py.Dataset) and obj.dtype.names and obj.shape and obj.shape[0]:
            for column in obj.dtype.names:
                if h5py.check_string_dtype(obj.dtype[column]) is not None:
                    places.append((name, "", column))

    with h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(visit)
    return places


def plant(path: Path, place: tuple[str, str, str], text: str) -> None:
    name, attr, column = place
    with h5py.File(path, "r+") as f:
        obj = f[name]
        if attr:
            old = obj.attrs[attr]
            if isinstance(old, np.ndarray):
                new = [text] + [v.decode() if isinstance(v, bytes) else str(v)
                                for v in old.ravel()[1:]]
                obj.attrs[attr] = np.array(new, dtype=h5py.string_dtype())
            else:
                obj.attrs[attr] = text
        else:
            rows = obj[...]
            rows[column][0] = text
            obj[...] = rows


def check_output(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode in (0, 2), f"{what}: exit {proc.returncode}: {proc.stderr[-400:]!r}"
    err_lines = [l for l in proc.stderr.split(b"\n") if l.strip()]
    assert len(err_lines) <= 1, f"{what}: {len(err_lines)} lines on stderr"
    for stream in (proc.stdout, proc.stderr):
        text = stream.decode("utf-8", "replace")
        bad = UNSAFE & set(text)
        assert not bad, f"{what}: raw {sorted(map(hex, map(ord, bad)))} printed"
        assert max((len(l) for l in text.split("\n")), default=0) <= MAX_LINE, \
            f"{what}: a line of {max(len(l) for l in text.split(chr(10)))} characters"
        assert "static int pwn" not in [l.strip()[:14] for l in text.split("\n")], what


def check_source(cu: Path, what: str) -> None:
    text = cu.read_text("utf-8", "replace")
    bad = UNSAFE & set(text)
    assert not bad, f"{what}: the .cu holds {sorted(map(hex, map(ord, bad)))}"
    for n, line in enumerate(text.split("\n"), 1):
        code = line.split("//", 1)[0]
        assert "pwn" not in code and "#include </etc" not in code, f"{what}: line {n}: {line!r}"
        assert not line.rstrip().endswith("\\") or not line.lstrip().startswith("//"), \
            f"{what}: line {n} continues a comment onto the next: {line!r}"


def check_commands(target: Path, work: Path, what: str) -> None:
    check_output(isletune("report", str(target)), f"{what}: report")
    proc = isletune("report", str(target), "--json")
    check_output(proc, f"{what}: report --json")
    if proc.returncode == 0:
        json.loads(proc.stdout)
    cu, kt = work / "best.cu", work / "kt.json"
    for f in (cu, kt):
        f.unlink(missing_ok=True)
    proc = isletune("export", str(target), "--best", "-o", str(cu), "--kernel-tuner-cache",
                    str(kt))
    check_output(proc, f"{what}: export")
    if cu.exists():
        check_source(cu, f"{what}: export --best")
    if kt.exists():
        json.loads(kt.read_text())


def places_of(path: Path) -> list[tuple[str, str, str]]:
    # format and version decide whether a file is read at all (checked first, one sentence).
    return [p for p in string_places(path) if p[1] != "format"]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_strings_in_a_dataset(kind, tmp_path):
    places = places_of(DATASET)
    assert len(places) >= 15, places  # every string attribute and column, not a few
    config = tmp_path / "replay.yaml"
    for i, place in enumerate(places):
        work = tmp_path / f"p{i}"
        work.mkdir()
        copy = work / "ds.h5"
        shutil.copy(DATASET, copy)
        plant(copy, place, HOSTILE[kind])
        what = f"{kind} in {place}"
        check_commands(copy, work, what)
        # Replay from it: a run's output and the trace it writes carry no planted text raw.
        config.write_text(
            "stencil: star2d1r\ngrid: [4096, 4096]\nsteps: 48\n"
            "space:\n  tbx: {values: [32, 64]}\n  tby: {values: [4, 8]}\n"
            "ga: {population: 4, rows: 2, cols: 2}\nbudget: {max_generations: 2}\n"
            f"evaluator: {{backend: replay, dataset: {copy}}}\nseed: 3\n")
        run = isletune("run", str(config), "--out", str(work / "run"))
        check_output(run, f"{what}: run")
        if run.returncode == 0:
            check_commands(work / "run", work, f"{what}: the replayed run")


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("trace")
    config = base / "replay.yaml"
    config.write_text(
        "stencil: star2d1r\ngrid: [4096, 4096]\nsteps: 48\n"
        "space:\n  tbx: {values: [32, 64]}\n  tby: {values: [4, 8]}\n"
        "ga: {population: 4, rows: 2, cols: 2}\nbudget: {max_generations: 2}\n"
        f"evaluator: {{backend: replay, dataset: {DATASET}}}\nseed: 3\n")
    run = isletune("run", str(config), "--out", str(base / "run"))
    assert run.returncode == 0, run.stderr
    return base / "run"


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_strings_in_a_trace(kind, clean_run, tmp_path):
    files = ["trace.h5", "rank-0000.h5"]
    places = [(f, p) for f in files for p in places_of(clean_run / f)]
    assert len(places) >= 20, places
    for i, (file, place) in enumerate(places):
        work = tmp_path / f"p{i}"
        shutil.copytree(clean_run, work / "run")
        plant(work / "run" / file, place, HOSTILE[kind])
        check_commands(work / "run", work, f"{kind} in {file}:{place}")


def test_the_injection_of_the_issue_is_refused(tmp_path):
    """The repro of issue 50: a dataset whose stencil name holds a line of code."""
    copy = tmp_path / "ds.h5"
    shutil.copy(DATASET, copy)
    plant(copy, ("stencil", "name", ""), "s\nstatic int pwn = 1; // injected")
    proc = isletune("export", str(copy), "--best", "-o", str(tmp_path / "x.cu"))
    assert proc.returncode == 2
    assert not (tmp_path / "x.cu").exists()
    assert b"the name attribute of /stencil is not a name" in proc.stderr, proc.stderr

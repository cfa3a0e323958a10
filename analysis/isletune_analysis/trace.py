"""Loading isletune traces (docs/trace.md) into numpy structured arrays and pandas frames.

A run directory holds `trace.h5` (rank 0) whose `/ranks/NNNN` entries are external links
to `rank-NNNN.h5`; a dataset from `isletune measure` is one file with format attribute
"isletune-dataset". Every table is normalised to the fixed dtypes below, whatever
integer widths or string types the writer used, so the compute functions see one shape.

Each rank group's `committed` attribute bounds the rows read (rows past it belong to a
flush a kill interrupted). Partial traces (a killed run: no /result, a missing or
unreadable rank file, tables cut short, rows past the marker) load as far as they go;
each problem becomes one line in `Trace.warnings`.
Files that cannot be analysed at all raise `TraceError` with one sentence.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

# Traces are read while a run may still be writing them; do not take HDF5 file locks.
os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")

try:
    import h5py  # noqa: E402
except ImportError as _exc:  # one sentence for the command line (__main__.py prints it)
    raise ImportError("reading isletune traces needs h5py, which is not installed: install "
                      "python3-h5py (Debian/Ubuntu) or `pip install h5py`") from _exc
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from .errors import TraceError  # noqa: E402

# A trace names its parameters, their neutral values and the OC table itself
# (/space/parameters, its `neutral` attribute, /space/ocs; docs/trace.md): the loader reads
# them into a `Schema`. The LEGACY_* values below are only the fallback for files written
# before those fields existed (the parameter order, neutral values and OC formula of
# src/setting/setting.hpp and src/setting/oc.hpp at that time); never extend them.
LEGACY_PARAM_NAMES: tuple[str, ...] = (
    "streaming", "merge", "retiming", "prefetch", "tdeg", "sd", "sb", "tbx", "tby", "tbz",
    "mfx", "mfy", "mfz", "ufx", "ufy", "ufz", "use_shared", "use_constant",
)
LEGACY_NEUTRAL_ONE = frozenset({"tdeg", "tbx", "tby", "tbz", "mfx", "mfy", "mfz", "ufx", "ufy",
                                "ufz"})
# Labels of the merge parameter's values (MergeKind), as setting keys write them.
MERGE_NAMES: tuple[str, ...] = ("none", "block", "cyclic")
# The legacy flag columns of an OC table row: what the tiled and streaming families' OCs give
# streaming, merge, retiming and prefetch, and tdeg > 1. A setting's OC is the row whose rule
# it meets (the `rule` column, e.g. "streaming=1,merge=2,retiming=0,prefetch=0,tdeg>1": every
# name=value, and tdeg>1 or tdeg=1; docs/trace.md); a trace written before that column has
# only the flags, and its rule is theirs (`flag_rule`).
OC_FLAGS: tuple[str, ...] = ("streaming", "merge", "retiming", "prefetch", "temporal")


def flag_rule(row: dict[str, Any]) -> str:
    """The rule of an OC table row's flag columns (what a rule column would say)."""
    return ",".join(f"{k}={int(row[k])}" for k in OC_FLAGS[:-1]) \
        + (",tdeg>1" if int(row["temporal"]) else ",tdeg=1")


def parse_rule(rule: str) -> tuple[dict[str, int], bool]:
    """An OC rule's parameter values and whether it fuses steps (tdeg>1)."""
    values: dict[str, int] = {}
    temporal = False
    for term in rule.split(","):
        if term == "tdeg>1":
            temporal = True
        elif term == "tdeg=1":
            temporal = False
        else:
            name, _, value = term.partition("=")
            values[name] = int(value)
    return values, temporal


def _legacy_ocs() -> tuple[dict[str, Any], ...]:
    """The OC table of traces written before /space/ocs (the formula oc.hpp had then)."""
    rows = []
    for oc in range(48):
        f = dict(streaming=oc // 24, merge=(oc // 8) % 3, retiming=(oc // 4) % 2,
                 prefetch=(oc // 2) % 2, temporal=oc % 2)
        parts = (["stream"] if f["streaming"] else []) \
            + ([MERGE_NAMES[f["merge"]]] if f["merge"] else []) \
            + (["retime"] if f["retiming"] else []) + (["prefetch"] if f["prefetch"] else []) \
            + (["tb"] if f["temporal"] else [])
        rows.append(dict(oc=oc, name="+".join(parts) or "plain", **f))
        rows[-1]["rule"] = flag_rule(rows[-1])
    return tuple(rows)


@dataclass(frozen=True)
class Schema:
    """What a trace says about its settings: parameter names in the order of its `values`
    columns, each one's neutral value, and the OC table (id, name, flags). `source` names
    where each came from: "trace", or "legacy" for a file written before the field."""

    names: tuple[str, ...]
    neutral: tuple[int, ...]
    ocs: tuple[dict[str, Any], ...]
    source: dict[str, str] = field(default_factory=dict)

    def index(self, name: str) -> int:
        return self.names.index(name)

    def oc_of(self, values: np.ndarray) -> np.ndarray:
        """OC id of each setting row: the first row of the OC table whose rule it meets (a
        parameter the settings lack reads as its neutral value); -1 where none is met. A
        family's selector (an appended parameter, not one of LEGACY_PARAM_NAMES, that some
        rules name) is at its neutral value in every rule that does not name it: the other
        families' settings hold it there (src/kernel/registry.hpp, OcTable::family_of)."""
        v = np.atleast_2d(np.asarray(values, dtype="i8"))
        temporal = v[:, self.index("tdeg")] > 1 if len(v) else np.zeros(0, bool)
        ids = np.full(len(v), -1, dtype=int)
        rules = [parse_rule(r["rule"]) for r in self.ocs]
        selectors = {name for wanted, _ in rules for name in wanted} - set(LEGACY_PARAM_NAMES)
        for r, (wanted, fused) in zip(self.ocs, rules):
            wanted = {**{name: self.neutral_of(name) for name in selectors}, **wanted}
            hit = temporal == fused
            for name, value in wanted.items():
                if name in self.names:
                    hit &= v[:, self.index(name)] == value
                else:
                    hit &= np.full(len(v), value == self.neutral_of(name))
            ids[(ids < 0) & hit] = int(r["oc"])
        return ids

    def neutral_of(self, name: str) -> int:
        """The neutral value of a parameter of this trace (0 for one it does not name)."""
        return self.neutral[self.index(name)] if name in self.names else 0

    def oc_name(self, oc: int) -> str:
        """The trace's name of an OC id (e.g. "stream+cyclic+retime+prefetch+tb")."""
        for r in self.ocs:
            if int(r["oc"]) == oc:
                return str(r["name"])
        return f"oc{oc}"


LEGACY_SCHEMA = Schema(LEGACY_PARAM_NAMES,
                       tuple(1 if n in LEGACY_NEUTRAL_ONE else 0 for n in LEGACY_PARAM_NAMES),
                       _legacy_ocs(), {"parameters": "legacy", "neutral": "legacy",
                                       "ocs": "legacy"})
# Status codes of src/eval/evaluator.hpp.
STATUS_NAMES: tuple[str, ...] = (
    "ok", "invalid", "compile_error", "launch_error", "wrong_result", "crashed", "timeout",
)
TRACE_FORMAT = "isletune-trace"
DATASET_FORMAT = "isletune-dataset"
SUPPORTED_VERSIONS = (1,)



def eval_dtype(parameters: int) -> np.dtype:
    """The row type of a loaded evaluations table whose settings have `parameters` values."""
    return np.dtype([
        ("rank", "i4"), ("eval_id", "i8"), ("generation", "i4"), ("cell", "i4"),
        ("values", "i4", (parameters,)), ("key", "O"), ("status", "i1"),
        ("median_ms", "f8"), ("times_ms", "O"), ("genes", "O"), ("compile_ms", "f8"),
        ("verify_ms", "f8"), ("run_ms", "f8"), ("registers", "i4"), ("shared_bytes", "i4"),
        ("wall_s", "f8"), ("cached", "?"), ("migrant", "?"),
    ])


# The row type for a trace without its own parameter list.
EVAL_DTYPE = eval_dtype(len(LEGACY_PARAM_NAMES))
GEN_DTYPE = np.dtype([
    ("rank", "i4"), ("generation", "i4"), ("wall_s", "f8"), ("wait_s", "f8"),
    ("best_ms", "f8"), ("mean_fitness", "f8"), ("mcr", "f8"), ("unique_genomes", "i4"),
    ("evaluations", "i4"), ("cache_hits", "i4"), ("fills", "i4"), ("restart", "i4"),
])
MIG_DTYPE = np.dtype([
    ("rank", "i4"), ("generation", "i4"), ("direction", "i4"), ("peer", "i4"), ("key", "O"),
    ("median_ms", "f8"),
])


@dataclass
class RankData:
    """One island's tables (rows of `eval_dtype(...)`, `GEN_DTYPE`, `MIG_DTYPE`)."""

    rank: int
    evaluations: np.ndarray
    generations: np.ndarray
    migrations: np.ndarray
    environment: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trace:
    """One run (or dataset) as loaded: attributes, configuration, space, ranks, result."""

    path: Path
    kind: str  # "trace" or "dataset"
    attrs: dict[str, Any]
    config_yaml: str
    config: dict[str, Any]
    stencil: dict[str, Any]
    parameters: dict[str, list[int]]  # parameter name -> allowed values, in schema order
    ranks: list[RankData]
    result: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)
    schema: Schema = LEGACY_SCHEMA  # parameter names, neutral values, OC table

    @property
    def evaluations(self) -> np.ndarray:
        """Every evaluation row of every rank, in rank then eval_id order."""
        parts = [r.evaluations for r in self.ranks]
        return np.concatenate(parts) if parts else np.zeros(0, eval_dtype(len(self.schema.names)))

    def evaluations_df(self) -> pd.DataFrame:
        """Every evaluation row of every rank as a pandas DataFrame, one row per evaluation.

        Columns: rank, eval_id, generation, one column per parameter (merge as its name:
        none, block, cyclic), key, status (its name), median_ms, compile_ms, verify_ms,
        run_ms, registers, shared_bytes, wall_s, cached, migrant, measured (neither cached
        nor a migrant) and ok (status ok with a positive time) — the frame Kernel Tuner and
        Optuna users filter and group, e.g. `df[df.ok].groupby("tbx").median_ms.min()`.
        """
        e = self.evaluations
        df = pd.DataFrame({"rank": e["rank"], "eval_id": e["eval_id"],
                           "generation": e["generation"]})
        for i, name in enumerate(self.schema.names):
            column = e["values"][:, i] if len(e) else np.zeros(0, "i4")
            df[name] = pd.Categorical.from_codes(column, MERGE_NAMES) if name == "merge" \
                else column
        df["key"] = e["key"].astype(str)
        df["status"] = pd.Categorical.from_codes(e["status"].astype(int), STATUS_NAMES)
        for name in ("median_ms", "compile_ms", "verify_ms", "run_ms", "registers",
                     "shared_bytes", "wall_s", "cached", "migrant"):
            df[name] = e[name]
        df["measured"] = ~e["cached"] & ~e["migrant"]
        df["ok"] = (e["status"] == 0) & np.isfinite(e["median_ms"]) & (e["median_ms"] > 0)
        return df

    @property
    def generations(self) -> np.ndarray:
        """Every generation row of every rank."""
        parts = [r.generations for r in self.ranks]
        return np.concatenate(parts) if parts else np.zeros(0, GEN_DTYPE)

    @property
    def migrations(self) -> np.ndarray:
        """Every migration row of every rank."""
        parts = [r.migrations for r in self.ranks]
        return np.concatenate(parts) if parts else np.zeros(0, MIG_DTYPE)

    @property
    def seed(self) -> int | None:
        """The run's seed (root attribute), if recorded."""
        seed = self.attrs.get("seed")
        return int(seed) if seed is not None else None

    @property
    def strategy(self) -> str:
        """The search strategy named in the configuration ("island-ga" when not named)."""
        value = find_key(self.config, ("strategy",))
        return str(value) if value is not None else "island-ga"

    @property
    def replayed_from(self) -> str | None:
        """The dataset a replayed run's (or dataset's) times come from, else None: with
        evaluator.backend replay its times are the dataset's and its clock simulated."""
        evaluator = self.config.get("evaluator") if isinstance(self.config, dict) else None
        if isinstance(evaluator, dict) and evaluator.get("backend") == "replay":
            return str(evaluator.get("dataset", ""))
        return None

    @property
    def grid(self) -> tuple[int, ...] | None:
        """The tuning grid extents from the configuration, if present."""
        value = find_key(self.config, ("grid", "grid_size", "problem_size"))
        if isinstance(value, dict):
            value = [value[k] for k in ("x", "y", "z", "nx", "ny", "nz") if k in value]
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
            return tuple(int(v) for v in value)
        return None


def _text(value: Any) -> str:
    """An HDF5 string attribute or element as str."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _text(value[()])
    return str(value)


def _plain(value: Any) -> Any:
    """An HDF5 attribute value as a plain Python value (str, int, float, list)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        if value.shape == ():
            return _plain(value[()])
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _attrs(obj: h5py.HLObject) -> dict[str, Any]:
    """All attributes of an HDF5 object as plain values."""
    return {k: _plain(v) for k, v in obj.attrs.items()}


def find_key(tree: Any, names: Iterable[str]) -> Any:
    """The first value stored under any of `names`, searching a nested dict depth-first."""
    names = tuple(names)
    if isinstance(tree, dict):
        for name in names:
            if name in tree:
                return tree[name]
        for value in tree.values():
            found = find_key(value, names)
            if found is not None:
                return found
    return None


def parse_yaml(text: str) -> dict[str, Any]:
    """The configuration YAML (the effective config isletune stores in /config) as a dict.

    Malformed YAML (a hand-edited trace) gives {} and the analysis goes on without it.
    """
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _column(table: np.ndarray, names: tuple[str, ...], default: Any = None) -> Any:
    """The first existing field among `names` of a structured array, else `default`."""
    for name in names:
        if table.dtype.names and name in table.dtype.names:
            return table[name]
    return default


def _status_codes(column: np.ndarray) -> np.ndarray:
    """Status column as codes: HDF5 enums and integers pass through, names are mapped."""
    if column.dtype.kind in "iub":
        return column.astype("i1")
    codes = np.empty(len(column), "i1")
    for i, value in enumerate(column):
        name = _text(value)
        codes[i] = STATUS_NAMES.index(name) if name in STATUS_NAMES else 1
    return codes



def _values_matrix(table: np.ndarray, keys: np.ndarray, columns: list[str] | None = None,
                   schema: Schema = LEGACY_SCHEMA) -> np.ndarray:
    """The (rows × parameters) setting values in `schema` order, from a `values` column or
    parsed from the keys.

    `columns` names the stored columns (the table's `parameters` attribute): they are mapped
    by name onto the schema's parameters, a parameter the table lacks reads the schema's
    neutral value, so a table recorded before a parameter existed stays readable."""
    n = len(schema.names)
    column = _column(table, ("values", "setting"))
    if column is not None:
        out = np.asarray([np.asarray(v, dtype="i4").reshape(-1) for v in column], dtype="i4")
        if columns is not None and out.ndim == 2 and out.shape[1] == len(columns) \
                and list(columns) != list(schema.names):
            unknown = [c for c in columns if c not in schema.names]
            if unknown:
                raise ValueError(f"the evaluations table has parameter columns {unknown} that "
                                 "/space/parameters does not name")
            mapped = np.tile(np.asarray(schema.neutral, dtype="i4"), (len(out), 1))
            for j, name in enumerate(columns):
                mapped[:, schema.index(name)] = out[:, j]
            return mapped
        if out.ndim == 2 and out.shape[1] == n:
            return out
    return np.asarray([parse_key(k, schema) for k in keys], dtype="i4").reshape(-1, n)


def parse_key(key: str, schema: Schema = LEGACY_SCHEMA) -> list[int]:
    """Parameter values of a canonical key ("streaming=0,merge=none,..."), in `schema`
    order (a parameter the key lacks reads its neutral value)."""
    given = {}
    for pair in key.split(","):
        name, _, text = pair.partition("=")
        try:
            given[name] = MERGE_NAMES.index(text) if name == "merge" else int(text)
        except ValueError:
            raise ValueError(f"not a setting key: {key!r}") from None
    unknown = [n for n in given if n not in schema.names]
    if unknown or (schema is LEGACY_SCHEMA and len(given) != len(schema.names)):
        raise ValueError(f"not a complete setting key: {key!r}")
    return [given.get(n, v) for n, v in zip(schema.names, schema.neutral)]


def canonical_key(values: Iterable[int], schema: Schema = LEGACY_SCHEMA) -> str:
    """Canonical key of a setting, as src/setting/setting.cpp writes it."""
    parts = []
    for name, value in zip(schema.names, values):
        text = MERGE_NAMES[value] if name == "merge" and 0 <= value < 3 else str(int(value))
        parts.append(f"{name}={text}")
    return ",".join(parts)


def _float_col(table: np.ndarray, names: tuple[str, ...], n: int) -> np.ndarray:
    """A float column or NaNs."""
    col = _column(table, names)
    return np.asarray(col, dtype="f8") if col is not None else np.full(n, np.nan)


def _int_col(table: np.ndarray, names: tuple[str, ...], n: int, default: int = 0) -> np.ndarray:
    """An integer column or a constant."""
    col = _column(table, names)
    return np.asarray(col, dtype="i8") if col is not None else np.full(n, default, "i8")


def normalise_evaluations(table: np.ndarray, rank: int, columns: list[str] | None = None,
                          schema: Schema = LEGACY_SCHEMA) -> np.ndarray:
    """An evaluations table as read from HDF5, converted to `eval_dtype` with the settings in
    `schema` order (`columns`: the names of its `values` columns, from the table's
    `parameters` attribute)."""
    n = len(table)
    out = np.zeros(n, eval_dtype(len(schema.names)))
    out["rank"] = rank
    out["eval_id"] = _int_col(table, ("eval_id", "id"), n) if "eval_id" in (table.dtype.names or ()) \
        else np.arange(n)
    out["generation"] = _int_col(table, ("generation",), n)
    out["cell"] = _int_col(table, ("cell",), n, -1)
    keys_col = _column(table, ("key",))
    keys = [_text(k) for k in keys_col] if keys_col is not None else None
    values = _values_matrix(table, np.asarray(keys, dtype=object) if keys else np.zeros(0),
                            columns, schema)
    out["values"] = values
    out["key"] = keys if keys is not None else [canonical_key(v, schema) for v in values]
    status = _column(table, ("status",))
    out["status"] = _status_codes(status) if status is not None else 0
    out["median_ms"] = _float_col(table, ("median_ms", "time_ms"), n)
    times = _column(table, ("times_ms",))
    out["times_ms"] = [np.asarray(t, "f8") for t in times] if times is not None \
        else [np.zeros(0)] * n
    genes = _column(table, ("genes",))
    out["genes"] = [np.asarray(g, "i4") for g in genes] if genes is not None \
        else [np.zeros(0, "i4")] * n
    out["compile_ms"] = _float_col(table, ("compile_ms",), n)
    out["verify_ms"] = _float_col(table, ("verify_ms",), n)
    out["run_ms"] = _float_col(table, ("run_ms",), n)
    out["registers"] = _int_col(table, ("registers",), n)
    out["shared_bytes"] = _int_col(table, ("shared_bytes",), n)
    out["wall_s"] = _float_col(table, ("wall_s",), n)
    out["cached"] = _int_col(table, ("cached",), n) != 0
    out["migrant"] = _int_col(table, ("migrant",), n) != 0
    return out


def _normalise(table: np.ndarray, dtype: np.dtype, rank: int) -> np.ndarray:
    """A generations or migrations table converted to `dtype` (missing fields stay 0)."""
    out = np.zeros(len(table), dtype)
    out["rank"] = rank
    for name in dtype.names:
        if name == "rank" or name not in (table.dtype.names or ()):
            continue
        if dtype[name].kind == "O":
            out[name] = [_text(v) for v in table[name]]
        else:
            out[name] = table[name]
    return out


def _read_table(group: h5py.Group, name: str, rows: int | None = None) -> np.ndarray | None:
    """A compound dataset as a structured array (only its first `rows` rows when given),
    or None when absent."""
    if name not in group:
        return None
    ds = group[name]
    if not isinstance(ds, h5py.Dataset):
        return None
    data = ds[()] if rows is None or ds.ndim != 1 else ds[:rows]
    return data if data.dtype.names else None


# Tables covered by the `committed` marker, in the order of its entries (docs/trace.md).
COMMITTED_TABLES: tuple[str, ...] = ("evaluations", "generations", "migrations")


def committed_rows(group: h5py.Group, where: str, warnings: list[str]) -> dict[str, int | None]:
    """Rows to read of each table of a rank group: the `committed` marker's counts.

    The writer rewrites the marker after every completed flush, so rows past it belong to
    a flush a kill interrupted and may be unreadable; they are left out with one warning
    per table. A group without the marker (older writers) reads every row (None).
    """
    limits: dict[str, int | None] = dict.fromkeys(COMMITTED_TABLES)
    if "committed" not in group.attrs:
        return limits
    marker = np.asarray(group.attrs["committed"]).reshape(-1)
    if len(marker) != len(COMMITTED_TABLES) or marker.dtype.kind not in "iu" or np.any(marker < 0):
        warnings.append(f"{where}: attribute 'committed' is {marker.tolist()}, expected three "
                        "row counts >= 0 (evaluations, generations, migrations); reading every row")
        return limits
    for name, count in zip(COMMITTED_TABLES, marker.tolist()):
        ds = group.get(name)
        rows = ds.shape[0] if isinstance(ds, h5py.Dataset) and ds.ndim == 1 else None
        limits[name] = int(count)
        if rows is not None and rows > count:
            warnings.append(f"{where}: {name} has {rows - count} rows past the committed "
                            f"{count} (a flush interrupted by a kill); they are left out")
        elif rows is not None and rows < count:
            warnings.append(f"{where}: {name} has {rows} rows but 'committed' says {count}; "
                            "reading the rows that are there")
    return limits


def _read_parameters(f: h5py.File, schema: Schema) -> dict[str, list[int]]:
    """Allowed values per parameter from /space/parameters (compound table or group)."""
    params: dict[str, list[int]] = {}
    if "space" not in f or "parameters" not in f["space"]:
        return params
    node = f["space/parameters"]
    if isinstance(node, h5py.Group):
        for name in node:
            params[name] = [int(v) for v in np.asarray(node[name][()]).reshape(-1)]
    else:
        table = node[()]
        if table.dtype.names and "name" in table.dtype.names:
            for row in table:
                vals = row["values"] if "values" in table.dtype.names else []
                params[_text(row["name"])] = [int(v) for v in np.asarray(vals).reshape(-1)]
    return {name: params[name] for name in schema.names if name in params} | {
        k: v for k, v in params.items() if k not in schema.names}


def read_schema(f: h5py.File) -> Schema:
    """The parameter names (in /space/parameters row order), their neutral values (its
    `neutral` attribute) and the OC table (/space/ocs) a trace records; each part a file
    written before it existed lacks comes from the LEGACY_* fallback."""
    names, neutral, ocs = LEGACY_SCHEMA.names, LEGACY_SCHEMA.neutral, LEGACY_SCHEMA.ocs
    source = dict(LEGACY_SCHEMA.source)
    space = f["space"] if "space" in f and isinstance(f["space"], h5py.Group) else None
    node = space.get("parameters") if space is not None else None
    if isinstance(node, h5py.Dataset) and node.dtype.names and "name" in node.dtype.names:
        table = node[()]
        names = tuple(_text(n) for n in table["name"])
        source["parameters"] = "trace"
        stored = node.attrs.get("neutral")
        if stored is not None and len(np.asarray(stored).reshape(-1)) == len(names):
            neutral = tuple(int(v) for v in np.asarray(stored).reshape(-1))
            source["neutral"] = "trace"
        else:  # written before the attribute: the neutral values setting.hpp had then
            neutral = tuple(1 if n in LEGACY_NEUTRAL_ONE else 0 for n in names)
    table = space.get("ocs") if space is not None else None
    if isinstance(table, h5py.Dataset) and table.dtype.names \
            and {"oc", "name", *OC_FLAGS} <= set(table.dtype.names):
        ocs = tuple({"oc": int(r["oc"]), "name": _text(r["name"]),
                     **{k: int(r[k]) for k in OC_FLAGS}} for r in table[()])
        if "rule" in table.dtype.names:
            ocs = tuple(o | {"rule": _text(r["rule"])} for o, r in zip(ocs, table[()]))
        else:  # written before the rule column: the rule of the flags
            ocs = tuple(o | {"rule": flag_rule(o)} for o in ocs)
        source["ocs"] = "trace"
    missing = [p for p in ("streaming", "merge", "retiming", "prefetch", "tdeg")
               if p not in names]
    if missing:
        raise TraceError(f.filename, f"/space/parameters lacks {', '.join(missing)}, the "
                         "parameters that decide a setting's OC")
    return Schema(names, neutral, ocs, source)


def _read_stencil(f: h5py.File) -> dict[str, Any]:
    """Stencil attributes and offsets/coefficients."""
    if "stencil" not in f:
        return {}
    group = f["stencil"]
    out = _attrs(group)
    if isinstance(group, h5py.Group):
        for name in ("offsets", "coefficients", "features"):
            if name in group:
                out[name] = np.asarray(group[name][()])
    return out


def _rank_names(f: h5py.File) -> list[str]:
    """Names under /ranks in numeric order."""
    if "ranks" not in f:
        return []
    return sorted(f["ranks"].keys(), key=lambda s: int(s) if s.isdigit() else 1 << 30)


def _load_rank(f: h5py.File, path: Path, name: str, warnings: list[str],
               schema: Schema = LEGACY_SCHEMA) -> RankData | None:
    """One rank's tables, following the external link; None (with a warning) if unreadable."""
    rank = int(name) if name.isdigit() else len(warnings)
    link = f["ranks"].get(name, getlink=True)
    where = f"{path}:/ranks/{name}"
    if isinstance(link, h5py.ExternalLink):
        target = Path(link.filename)
        if not target.is_absolute():
            target = path.parent / target
        where = str(target)
        if not target.exists():
            warnings.append(f"{path}: rank {rank}: linked file {target} is missing; "
                            "that island is left out")
            return None
    try:
        group = f["ranks"][name]
    except (KeyError, OSError) as exc:
        warnings.append(f"{path}: rank {rank}: {where} cannot be read ({exc}); "
                        "that island is left out")
        return None
    missing = [t for t in ("evaluations", "generations", "migrations") if t not in group]
    if "evaluations" in missing:
        warnings.append(f"{where}: no evaluations table; that island is left out")
        return None
    if missing:
        warnings.append(f"{where}: no {' or '.join(missing)} table; analysing what is there")
    limits = committed_rows(group, where, warnings)
    try:
        evals_raw = _read_table(group, "evaluations", limits["evaluations"])
        gens_raw = _read_table(group, "generations", limits["generations"])
        migs_raw = _read_table(group, "migrations", limits["migrations"])
    except OSError as exc:
        warnings.append(f"{where}: its tables cannot be read ({exc}); that island is left out")
        return None
    names = group["evaluations"].attrs.get("parameters") if "evaluations" in group else None
    try:
        evals = normalise_evaluations(evals_raw, rank,
                                      [_text(n) for n in names] if names is not None else None,
                                      schema)
    except ValueError as exc:
        raise TraceError(where, str(exc)) from None
    gens = _normalise(gens_raw, GEN_DTYPE, rank) if gens_raw is not None else np.zeros(0, GEN_DTYPE)
    migs = _normalise(migs_raw, MIG_DTYPE, rank) if migs_raw is not None else np.zeros(0, MIG_DTYPE)
    if len(gens) and len(evals):
        last = int(gens["generation"].max())
        beyond = int(np.count_nonzero(evals["generation"] > last))
        if beyond:
            warnings.append(f"{where}: {beyond} evaluations belong to generations after the last "
                            f"recorded one ({last}); the table was cut short")
    env = {}
    env_name = f"rank_{name}" if name.isdigit() else name
    if "environment" in f and env_name in f["environment"]:
        env = _attrs(f["environment"][env_name])
    return RankData(rank, evals, gens, migs, env)


def _load_dataset(f: h5py.File, path: Path, warnings: list[str],
                  schema: Schema = LEGACY_SCHEMA) -> list[RankData]:
    """A measurement dataset: inline /ranks groups (docs/trace.md), else a top-level table."""
    if "ranks" in f:
        ranks = [_load_rank(f, path, name, warnings, schema) for name in _rank_names(f)]
        return [r for r in ranks if r is not None]
    for name in ("evaluations", "measurements"):
        table = _read_table(f, name)
        if table is not None:
            return [RankData(0, normalise_evaluations(table, 0, None, schema),
                             np.zeros(0, GEN_DTYPE),
                             np.zeros(0, MIG_DTYPE))]
    return []


def resolve_path(path: Path | str) -> Path:
    """A run directory or a file path as the file to open (`DIR/trace.h5` for a directory)."""
    p = Path(path)
    if p.is_dir():
        return p / "trace.h5"
    return p


def load_trace(path: Path | str) -> Trace:
    """Loads one trace or dataset file (or run directory); raises TraceError if unusable."""
    p = resolve_path(path)
    if not p.exists():
        raise TraceError(p, "no such file" if not Path(path).is_dir()
                         else "the directory holds no trace.h5")
    try:
        f = h5py.File(p, "r")
    except OSError:
        raise TraceError(p, "not an HDF5 file, so not an isletune trace") from None
    with f:
        fmt = _plain(f.attrs.get("format", ""))
        if fmt not in (TRACE_FORMAT, DATASET_FORMAT):
            raise TraceError(p, f"not an isletune trace: root attribute 'format' is {fmt!r}, "
                             f"expected {TRACE_FORMAT!r} or {DATASET_FORMAT!r}")
        version = _plain(f.attrs.get("version", None))
        try:
            version_number = int(str(version).split(".")[0])
        except ValueError:
            version_number = -1
        if version_number not in SUPPORTED_VERSIONS:
            raise TraceError(p, f"trace format version {version!r} is not supported; this "
                             f"reader reads version {', '.join(map(str, SUPPORTED_VERSIONS))}")
        warnings: list[str] = []
        attrs = _attrs(f)
        config_yaml = ""
        if "config" in f:
            config_yaml = _text(f["config"].attrs.get("yaml", ""))
        kind = "trace" if fmt == TRACE_FORMAT else "dataset"
        schema = read_schema(f)
        if kind == "trace":
            ranks = []
            for name in _rank_names(f):
                rank = _load_rank(f, p, name, warnings, schema)
                if rank is not None:
                    ranks.append(rank)
        else:
            ranks = _load_dataset(f, p, warnings, schema)
        result = None
        if "result" in f:
            result = _attrs(f["result"])
            if isinstance(f["result"], h5py.Group) and "source" in f["result"]:
                result["source"] = _text(f["result/source"][()])
        elif kind == "trace":
            warnings.append(f"{p}: no /result: the run did not finish; analysing the "
                            "recorded generations")
        trace = Trace(p, kind, attrs, config_yaml, parse_yaml(config_yaml), _read_stencil(f),
                      _read_parameters(f, schema), ranks, result, warnings, schema)
    if sum(len(r.evaluations) for r in trace.ranks) == 0:
        reason = "has no rank tables" if not trace.ranks else "contains no evaluations"
        raise TraceError(p, f"the trace {reason}, so there is nothing to analyse")
    return trace


def load_traces(paths: Iterable[Path | str]) -> list[Trace]:
    """Loads several traces; the first unusable one raises TraceError."""
    return [load_trace(p) for p in paths]


def rank_file_rows(path: Path | str) -> dict[int, int]:
    """Rows of each rank's evaluations table, read straight from the rank files (for checks)."""
    p = resolve_path(path)
    rows: dict[int, int] = {}
    with h5py.File(p, "r") as f:
        for name in _rank_names(f):
            link = f["ranks"].get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                target = Path(link.filename)
                target = target if target.is_absolute() else p.parent / target
                if not target.exists():
                    continue
                with h5py.File(target, "r") as rf:
                    node = rf[link.path] if link.path not in ("/", "") else rf
                    rows[int(name)] = node["evaluations"].shape[0]
            else:
                rows[int(name)] = f["ranks"][name]["evaluations"].shape[0]
    return rows


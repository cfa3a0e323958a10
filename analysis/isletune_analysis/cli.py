"""Command line: `python3 -m isletune_analysis SUBCOMMAND ...` (also `analysis/isletune-analyze`).

Every subcommand prints its numbers as an aligned table (or CSV with `--csv`) on stdout
and, where it has a figure, writes it as PNG (`--format svg` for SVG) into `--outdir`
or to `-o FILE`. Warnings about partial traces go to stderr. A file that cannot be
analysed ends the command with one sentence on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from . import compute, draw, kt
from .errors import TraceError
from .trace import Trace, load_trace, load_traces

EXIT_BAD_INPUT = 2


def _fmt(value: Any, exact: bool = False) -> str:
    """A cell of a printed table (`exact`: full precision, for CSV)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if exact else f"{value:.6g}"
    if value is None:
        return ""
    return str(value)


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str], as_csv: bool,
                out: io.TextIOBase | None = None) -> None:
    """Prints rows as an aligned text table or as CSV (header line first)."""
    out = out or sys.stdout
    if as_csv:
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([_fmt(r.get(c), exact=True) for c in columns])
        return
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(v.rjust(w) if _numeric(v) else v.ljust(w)
                            for v, w in zip(row, widths)).rstrip() + "\n")


def _numeric(text: str) -> bool:
    """Whether a cell reads as a number (right-aligned)."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def _plot_path(args: argparse.Namespace, stem: str) -> Path:
    """Where a subcommand's figure goes: -o FILE, else OUTDIR/STEM.FORMAT."""
    if getattr(args, "output", None):
        return Path(args.output)
    return Path(args.outdir) / f"{stem}.{args.format}"


def _warn(traces: Sequence[Trace]) -> None:
    """Prints the loaders' warnings about partial traces."""
    for t in traces:
        for w in t.warnings:
            print(f"warning: {w}", file=sys.stderr)


def _title(trace: Trace) -> str:
    """A figure title naming the run."""
    name = trace.stencil.get("name") or trace.path.parent.name
    if trace.kind == "dataset":
        return f"{name} — dataset of {len(trace.evaluations)} measurements (isletune measure)"
    return f"{name} — {trace.strategy}, {len(trace.ranks)} island(s), seed {trace.seed}"


def _drawn(args: argparse.Namespace, fn: Callable[..., Path], data: Any, title: str,
           stem: str) -> None:
    """Draws a figure unless --no-plot, and says where it went."""
    if args.no_plot:
        return
    path = fn(data, title, _plot_path(args, stem))
    print(f"wrote {path}", file=sys.stderr)


# --- subcommands ---------------------------------------------------------------------


def cmd_summary(args: argparse.Namespace) -> int:
    """Best setting, time, GCells/s, stop reason, evaluations by status, per island."""
    traces = load_traces(args.traces)
    _warn(traces)
    runs, islands = [], []
    for t in traces:
        s = compute.summary(t)
        row = {"trace": s["path"], "stencil": s["stencil"], "strategy": s["strategy"],
               "seed": s["seed"], "ranks": s["ranks"], "best_ms": s["best"]["median_ms"],
               "gcells_per_s": s["best"]["gcells_per_s"], "stop_reason": s["stop_reason"],
               "evaluations": s["evaluations"], "wall_s": s["wall_s"]}
        row.update(s["status_counts"])
        row["best_key"] = s["best"]["key"]
        row["replayed"] = s["replayed"]
        runs.append(row)
        for isl in s["islands"]:
            islands.append({"trace": s["path"], **isl})
    run_cols = ["trace", "stencil", "strategy", "seed", "ranks", "best_ms", "gcells_per_s",
                "stop_reason", "evaluations", "wall_s", "ok", "invalid", "compile_error",
                "launch_error", "wrong_result", "crashed", "timeout", "best_key", "replayed"]
    isl_cols = ["trace", "rank", "measured", "fills", "restarts", "ok", "failed", "cached", "migrants", "best_ms",
                "generations", "wall_s", "wait_s", "final_mcr", "gpu"]
    if args.csv:
        print_table(runs, run_cols, True)
        print()
        print_table(islands, isl_cols, True)
        return 0
    for run in runs:
        print(f"trace        {run['trace']}")
        print(f"stencil      {run['stencil']}   strategy {run['strategy']}   seed {run['seed']}"
              f"   islands {run['ranks']}")
        print(f"best         {_fmt(run['best_ms'])} ms/step   "
              f"{_fmt(run['gcells_per_s'])} GCells/s")
        print(f"best setting {run['best_key']}")
        print(f"stop reason  {run['stop_reason']}   evaluator clock {_fmt(run['wall_s'])} s")
        if run["replayed"]:
            print(f"replayed     {run['replayed']}")
        print(f"evaluations  {run['evaluations']} measured: " + ", ".join(
            f"{k} {run[k]}" for k in run_cols[10:17] if run[k]))
        print()
        print_table([i for i in islands if i["trace"] == run["trace"]], isl_cols[1:], False)
        print()
    return 0


def cmd_convergence(args: argparse.Namespace) -> int:
    """Best-so-far vs clock and vs evaluations, per island and overall; one figure per trace."""
    traces = load_traces(args.traces)
    _warn(traces)
    rows = []
    for i, t in enumerate(traces):
        data = compute.convergence(t)
        for r in data["rows"]:
            rows.append({"trace": str(t.path), **r})
        stem = "convergence" if len(traces) == 1 else f"convergence-{i}"
        if len(traces) > 1 and args.output:
            out = Path(args.output)
            args_i = argparse.Namespace(**{**vars(args), "output": str(
                out.with_name(f"{out.stem}-{i}{out.suffix}"))})
        else:
            args_i = args
        _drawn(args_i, draw.convergence, data, _title(t), stem)
    print_table(rows, ["trace", "series", "evaluations", "wall_s", "best_ms"], args.csv)
    return 0


def cmd_diversity(args: argparse.Namespace) -> int:
    """MCR and unique genomes per generation per island."""
    t = load_trace(args.trace)
    _warn([t])
    data = compute.diversity(t)
    _drawn(args, draw.diversity, data, f"{_title(t)} — MCR threshold {data['threshold']:g}",
           "diversity")
    print_table(data["rows"], ["rank", "generation", "mcr", "unique_genomes"], args.csv)
    return 0


def cmd_ocs(args: argparse.Namespace) -> int:
    """Time distribution per OC, best vs worst OC."""
    t = load_trace(args.trace)
    _warn([t])
    data = compute.ocs(t)
    _drawn(args, draw.ocs, data, f"{_title(t)} — time per OC", "ocs")
    print_table(data["rows"], ["oc", "name", "evaluated", "ok", "min_ms", "q1_ms", "median_ms",
                               "q3_ms", "max_ms"], args.csv)
    if data["best"] and not args.csv:
        print(f"\nbest OC  {data['best']['name']} (OC {data['best']['oc']}) "
              f"{_fmt(data['best']['min_ms'])} ms; worst OC {data['worst']['name']} "
              f"(OC {data['worst']['oc']}) {_fmt(data['worst']['min_ms'])} ms; "
              f"ratio {_fmt(data['ratio'])}")
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    """Parameter value frequencies among the top-k vs all evaluated settings."""
    t = load_trace(args.trace)
    _warn([t])
    if args.top is not None and args.top < 1:
        print(f"--top {args.top}: expected a positive number of settings", file=sys.stderr)
        return EXIT_BAD_INPUT
    data = compute.params(t, args.top)
    _drawn(args, draw.params, data,
           f"{_title(t)} — top {data['top_k']} of {data['ok']} ok settings", "params")
    print_table(data["rows"], ["parameter", "label", "value", "all", "all_frac", "top",
                               "top_frac", "lift"], args.csv)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Iso-time comparison of runs grouped by strategy, seed or rank count."""
    traces = load_traces(args.traces)
    _warn(traces)
    try:
        data = compute.compare(traces, args.by, args.baseline, args.points, args.until)
    except ValueError as exc:
        print(f"--baseline: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _drawn(args, draw.compare, data, f"iso-time comparison by {args.by}", "compare")
    print_table(compute.compare_checkpoints(data, args.checkpoints),
                ["group", "time_s", "runs", "median_ms", "q1_ms", "q3_ms"], args.csv)
    print()
    print_table(data["finals"], ["group", "runs", "median_ms", "q1_ms", "q3_ms", "ci_low_ms",
                                 "ci_high_ms", "best_ms", "speedup", "relative_time",
                                 "p_vs_baseline"], args.csv)
    if not args.csv:
        print(f"\ncompared at {data['horizon_s']:g} s of evaluator clock ({data['horizon_from']}); "
              "ci: 95% bootstrap interval of the median final best; p: Mann-Whitney U vs "
              f"{data['by']} {data['baseline']}")
    return 0


def cmd_export_kt(args: argparse.Namespace) -> int:
    """Writes a Kernel Tuner cache file from a trace."""
    t = load_trace(args.trace)  # the same one-sentence errors as every subcommand
    _warn([t])
    doc = kt.write_cache(args.trace, args.output)
    ok = sum(1 for e in doc["cache"].values() if not isinstance(e["time"], str))
    rows = [{"file": args.output, "entries": len(doc["cache"]), "ok": ok,
             "failed": len(doc["cache"]) - ok, "device": doc["device_name"],
             "kernel": doc["kernel_name"]}]
    print_table(rows, ["file", "entries", "ok", "failed", "device", "kernel"], args.csv)
    return 0


# --- parser --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="isletune-analyze",
        description="Analyse isletune HDF5 traces (run directories or trace.h5 / dataset files).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p: argparse.ArgumentParser, plot: bool = True) -> None:
        p.add_argument("--csv", action="store_true", help="print numbers as CSV")
        if plot:
            p.add_argument("--format", choices=("png", "svg"), default="png",
                           help="figure format (default png)")
            p.add_argument("--outdir", default=".", help="folder for figures (default .)")
            p.add_argument("-o", "--output", help="figure file (overrides --outdir)")
            p.add_argument("--no-plot", action="store_true", help="print numbers only")

    p = sub.add_parser("summary", help="best setting, time, stop reason, per-island figures")
    p.add_argument("traces", nargs="+", metavar="TRACE")
    common(p, plot=False)
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("convergence", help="best-so-far vs time and vs evaluations")
    p.add_argument("traces", nargs="+", metavar="TRACE")
    common(p)
    p.set_defaults(func=cmd_convergence)

    p = sub.add_parser("diversity", help="MCR and unique genomes per generation")
    p.add_argument("trace", metavar="TRACE")
    common(p)
    p.set_defaults(func=cmd_diversity)

    p = sub.add_parser("ocs", help="time distribution per optimization combination")
    p.add_argument("trace", metavar="TRACE")
    common(p)
    p.set_defaults(func=cmd_ocs)

    p = sub.add_parser("params", help="parameter values among the top-k vs all")
    p.add_argument("trace", metavar="TRACE")
    p.add_argument("--top", type=int, help="k (default: best 10%% of ok settings, at least 5)")
    common(p)
    p.set_defaults(func=cmd_params)

    p = sub.add_parser("compare", help="iso-time comparison of several runs")
    p.add_argument("traces", nargs="+", metavar="TRACE")
    p.add_argument("--by", choices=("strategy", "seed", "rank-count"), default="strategy")
    p.add_argument("--baseline", help="group the final bests are normalised to "
                   "(default: the first group)")
    p.add_argument("--points", type=int, default=200, help="time points of the curves")
    p.add_argument("--checkpoints", type=int, default=8, help="time points in the table")
    p.add_argument("--until", type=float, metavar="SECONDS",
                   help="compare at this evaluator clock (default: the runs' common "
                   "time_budget_s, else the latest run's end); later measurements are left out")
    common(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("export-kt", help="write a Kernel Tuner cache JSON file")
    p.add_argument("trace", metavar="TRACE")
    p.add_argument("-o", "--output", required=True, help="cache file to write (.json)")
    p.add_argument("--csv", action="store_true", help="print numbers as CSV")
    p.set_defaults(func=cmd_export_kt)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one subcommand; returns the exit code (2 for unusable input)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except TraceError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"{exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT

"""Figures for the subcommands, drawn from the dicts that `compute` returns.

Every function takes computed data and an output path, writes one PNG or SVG (chosen by
the path's suffix) and returns the path. Nothing here reads traces or computes numbers
beyond arranging them for the axes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402
import numpy as np  # noqa: E402

from .compute import Curve  # noqa: E402

plt.rcParams.update({
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "axes.grid": True, "grid.alpha": 0.3, "savefig.bbox": "tight", "figure.dpi": 100,
})
DPI = 200


def _save(fig: plt.Figure, path: Path | str) -> Path:
    """Writes and closes a figure."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=DPI)
    plt.close(fig)
    return p


def _log_axis(ax: plt.Axes, axis: str = "y") -> None:
    """A log axis labelled with plain numbers at readable steps; call after plotting.

    The limits are taken after autoscaling on the log scale. Over a narrow range (less
    than about one decade) every 1..9 multiple is a labelled tick (0.07, 0.08, 0.09, 0.1,
    0.2); over a wider one the 1, 2, 5 multiples; over many decades the powers of ten.
    """
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    ax.relim()
    ax.autoscale_view()
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    subs = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0) if decades < 0.6 else \
        (1.0, 2.0, 3.0, 5.0, 7.0) if decades < 1.5 else (1.0, 2.0, 5.0) if decades < 3.5 else (1.0,)
    target.set_major_locator(ticker.LogLocator(base=10, subs=subs, numticks=40))
    target.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_locator(ticker.LogLocator(base=10, subs=tuple(range(1, 10)), numticks=40))
    target.set_minor_formatter(ticker.NullFormatter())


def _island_colors(n: int) -> list[Any]:
    """Distinct colours for n islands."""
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def _finite_curve(c: Curve, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The part of a curve after its first ok result."""
    keep = np.isfinite(c.best_ms)
    return x[keep], c.best_ms[keep]


def convergence(data: dict[str, Any], title: str, path: Path | str) -> Path:
    """Best-so-far time vs evaluator clock and vs evaluations; received migrants marked."""
    curves: list[Curve] = data["curves"]
    islands, overall = curves[:-1], curves[-1]
    colors = _island_colors(len(islands))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, xname in zip(axes, ("wall_s", "evaluations")):
        # "overall" as a wide light band underneath, the islands drawn on top of it, so an
        # island that holds the overall best stays visible; one island: no band (the same).
        if len(islands) > 1:
            x, y = _finite_curve(overall, getattr(overall, xname).astype(float))
            ax.step(x, y, where="post", color="0.75", lw=5.0, solid_capstyle="butt",
                    zorder=1, label="overall (all islands)")
        for c, col in zip(islands, colors):
            x, y = _finite_curve(c, getattr(c, xname).astype(float))
            ax.step(x, y, where="post", color=col, lw=1.3, zorder=2, label=c.label)
        # Received migrants, at the island's best-so-far when they arrived.
        by_rank = {rank: (c, col) for rank, c, col in zip(data["ranks"], islands, colors)}
        for improved, marker in ((True, "v"), (False, "|")):
            xs, ys, cs = [], [], []
            for ev in data["migrations"]:
                if ev["improved"] != improved or ev["rank"] not in by_rank:
                    continue
                c, col = by_rank[ev["rank"]]
                idx = int(np.searchsorted(c.wall_s, ev["wall_s"], side="right")) - 1
                if idx < 0 or not math.isfinite(ev["wall_s"]):
                    continue
                b = c.best_ms[idx]
                if not np.isfinite(b):
                    continue
                xs.append(ev["wall_s"] if xname == "wall_s" else float(c.evaluations[idx]))
                ys.append(b)
                cs.append(col)
            if xs:
                ax.scatter(xs, ys, marker=marker, c=cs, s=28 if improved else 18, zorder=3,
                           edgecolors="black" if improved else None, linewidths=0.5,
                           label="migrant improved island" if improved else "migrant received")
        _log_axis(ax)
        ax.set_xlabel("evaluator clock (s)" if xname == "wall_s" else
                      "measured evaluations (per island; band: all islands)"
                      if len(islands) > 1 else "measured evaluations")
    axes[0].set_ylabel("best-so-far time per step (ms)")
    axes[0].set_title("vs time")
    axes[1].set_title("vs evaluations")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(6, len(labels)),
               bbox_to_anchor=(0.5, 1.06), frameon=False)
    fig.suptitle(title, y=1.12)
    return _save(fig, path)


def diversity(data: dict[str, Any], title: str, path: Path | str) -> Path:
    """MCR and unique genomes per generation per island, MCR threshold as a dashed line."""
    rows = data["rows"]
    ranks = sorted({r["rank"] for r in rows})
    colors = _island_colors(len(ranks))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5), sharex=True)
    for rank, col in zip(ranks, colors):
        sel = [r for r in rows if r["rank"] == rank]
        gens = [r["generation"] for r in sel]
        a1.plot(gens, [r["mcr"] for r in sel], marker=".", color=col, label=f"island {rank}")
        a2.plot(gens, [r["unique_genomes"] for r in sel], marker=".", color=col,
                label=f"island {rank}")
    a1.axhline(data["threshold"], color="red", ls="--", lw=1,
               label=f"stop threshold {data['threshold']:g}")
    a1.set_ylim(0, 1.05)
    a1.set_ylabel("MCR: share of offspring repeating\na setting the island knows")
    a2.set_ylabel("unique genomes in population")
    a2.set_ylim(bottom=0)
    a2.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    for a in (a1, a2):
        a.set_xlabel("generation")
    a1.legend(loc="best")
    fig.suptitle(title)
    return _save(fig, path)


def ocs(data: dict[str, Any], title: str, path: Path | str) -> Path:
    """Distribution of ok times per OC (box plots, log axis), sorted by each OC's best time."""
    rows = [r for r in data["rows"] if r["ok"]]
    rows.sort(key=lambda r: r["min_ms"])
    fig, ax = plt.subplots(figsize=(7, 0.35 * max(len(rows), 3) + 1.2))
    if rows:
        ax.boxplot([r["times"] for r in rows], vert=False, whis=(0, 100), widths=0.6,
                   medianprops={"color": "black"})
        ax.set_yticks(range(1, len(rows) + 1),
                      [f"{r['name']} (OC {r['oc']}, n={r['ok']})" for r in rows])
        ax.invert_yaxis()
        ax.scatter([r["min_ms"] for r in rows], range(1, len(rows) + 1), marker="*",
                   color="tab:green", zorder=3, label="best in OC")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    _log_axis(ax, "x")
    ax.set_xlabel("median time per step (ms), ok evaluations")
    ax.set_title(title)
    return _save(fig, path)


def params(data: dict[str, Any], title: str, path: Path | str) -> Path:
    """Bar charts per parameter: value frequency among top-k vs all evaluated settings."""
    names = []
    for r in data["rows"]:
        if r["parameter"] not in names:
            names.append(r["parameter"])
    shown = [n for n in names if sum(1 for r in data["rows"] if r["parameter"] == n and r["all"]) > 1]
    cols = 4
    nrows = max(1, math.ceil(len(shown) / cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(11, 2.2 * nrows), squeeze=False)
    for ax in axes.flat[len(shown):]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, shown):
        sel = [r for r in data["rows"] if r["parameter"] == name]
        x = np.arange(len(sel))
        ax.bar(x - 0.2, [r["all_frac"] for r in sel], 0.4, color="0.6", label="all evaluated")
        ax.bar(x + 0.2, [r["top_frac"] for r in sel], 0.4, color="tab:blue",
               label=f"top {data['top_k']}")
        ax.set_xticks(x, [r["label"] for r in sel], fontsize=7)
        ax.set_title(name, fontsize=9)
        ax.set_ylim(0, 1)
    for ax in axes[:, 0]:
        ax.set_ylabel("fraction of settings")
    if shown:
        axes.flat[0].legend(loc="upper right", fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)


def compare(data: dict[str, Any], title: str, path: Path | str) -> Path:
    """Iso-time median and quartile band per group; final best relative to the baseline."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8),
                                 gridspec_kw={"width_ratios": [2.2, 1]})
    t = data["time_s"]
    colors = _island_colors(len(data["groups"]))
    for name, col in zip(data["groups"], colors):
        s = data["series"][name]
        label = f"{data['by']} {name} ({s['runs']} run{'s' if s['runs'] != 1 else ''})"
        a1.plot(t, s["median"], color=col, lw=1.6, label=label, drawstyle="steps-post")
        a1.fill_between(t, s["q1"], s["q3"], color=col, alpha=0.2, step="post")
    _log_axis(a1)
    a1.set_xlabel(f"evaluator clock (s), up to {data['horizon_s']:g} s ({data['horizon_from']})")
    a1.set_ylabel("best-so-far time per step (ms)")
    a1.set_title("median and quartiles over runs")
    a1.legend(loc="upper left", bbox_to_anchor=(0.0, -0.2), ncol=2, frameon=False)
    finals = data["finals"]
    base = next(f for f in finals if f["group"] == data["baseline"])["median_ms"]
    for i, (f, col) in enumerate(zip(finals, colors)):
        runs = base / data["per_run"][f["group"]]
        jitter = np.linspace(-0.12, 0.12, len(runs)) if len(runs) > 1 else np.zeros(1)
        a2.scatter(i + jitter, runs, color=col, s=12, alpha=0.7, zorder=2)
        # 95% bootstrap interval of the median (compute.median_ci); none for a single run.
        lo, hi = base / f["ci_high_ms"], base / f["ci_low_ms"]
        yerr = [[f["speedup"] - lo], [hi - f["speedup"]]] if math.isfinite(lo) else None
        a2.errorbar(i, f["speedup"], yerr=yerr, fmt="o", color="black", ms=6, capsize=4,
                    zorder=3)
    a2.axhline(1.0, color="0.3", ls="--", lw=1)
    # Group names such as "sampled-random" overlap when upright.
    a2.set_xticks(range(len(finals)), [f["group"] for f in finals], rotation=20, ha="right")
    a2.set_xlabel(data["by"])
    a2.set_ylabel(f"speedup of final best vs {data['by']} {data['baseline']}")
    # Ticks with as many decimals as their step needs (1.005 next to 1.000, never "1, 1").
    a2.yaxis.set_major_formatter(ticker.ScalarFormatter(useOffset=False))
    a2.set_title("final best (median, 95% CI; dots: runs)")
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)

#!/usr/bin/env python3
"""Writes docs/results.md from the committed measurements: the CSVs and text files under
docs/bench/ and the tables of the study files under docs/studies/ (each read by the header
row of its table, so a figure on the page is the figure in that file).

    python3 docs/tools/results.py           # rewrite docs/results.md
    python3 docs/tools/results.py --check   # exit 1 when docs/results.md is not what this writes

Python 3 standard library only. The page states, per table, the GPU, the date and the tree
the figures were measured on, and one command that measures them again.
"""
from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "docs" / "bench"
STUDIES = ROOT / "docs" / "studies"
PAGE = ROOT / "docs" / "results.md"

# The studies the tables come from (file names under docs/studies/).
S_TUNE = "2026-11-27-typical-stencils-one-tree-forest-4xh100.md"
S_EBISU = "2026-11-24-typical-stencils-tuner-120s-h100.md"
S_KT_ALL = "2026-11-24-whole-space-search-kernel-tuner.md"
S_KT = "2026-11-27-l1-term-and-bayes-opt-again.md"
S_ISLANDS = "2026-11-27-islands-vs-one-every-dataset.md"
S_GPUS = "2026-11-27-islands-4xh100-completion-order.md"
S_ASYNC = "2026-11-28-async-islands-4xh200.md"
# The async islands with the pipeline's depth by children (docs/bench/islands-async-4xh200.csv):
# the population split as shipped (d6b07ef), and 16 per island as tried (0f2a5e1).
ASYNC_TREES = ("d6b07ef", "0f2a5e1")
S_H200 = "2026-11-21-multi-gpu-search-export-datasets-2xh200.md"
S_MMA = "2026-12-05-tensor-core-family.md"
S_MMA_H200 = "2026-12-06-tensor-cores-h200-l2-wavefront.md"
S_MMA_BOUNDS = "2026-12-06-tensor-core-mapping-bounds.md"
S_BUSY_H200 = "2026-12-06-h200-budget-deadline-busy-tensor-pipe.md"
S_BUSY_SAME = "2026-12-06-busy-against-482d225-same-h200.md"
S_RACE = "2026-12-06-racing-while-a-kernel-waits.md"
S_RACE_SAME = "2026-12-06-racing-default-against-482d225-same-h100.md"
S_BUSY_SAME_LINK = "studies/" + S_BUSY_SAME
S_BUSY_SETTLED = "2026-12-07-issue44-h200-settled-timing-plain-tail.md"
# The targets for the tensor-core family (one H200, 120 s), GCells/s.
MMA_TARGETS = {"box3d2r": 150, "box2d4r": 230, "box3d3r": 60, "box3d4r": 30}


def rows(name: str) -> list[dict[str, str]]:
    """The rows of a CSV under docs/bench/."""
    with open(BENCH / name, newline="") as f:
        return list(csv.DictReader(f))


def study_table(study: str, header: str) -> list[list[str]]:
    """The body rows (cells stripped) of the markdown table whose header row starts with
    `header` in docs/studies/`study`; fails when there is not exactly one such table."""
    lines = (STUDIES / study).read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    if len(starts) != 1:
        sys.exit(f"results.py: {study}: {len(starts)} tables start with {header!r}, expected 1")
    body = []
    for line in lines[starts[0] + 2:]:
        if not line.startswith("|"):
            break
        body.append([c.strip() for c in line.strip().strip("|").split("|")])
    return body


def study_says(study: str, pattern: str) -> str:
    """The text of `study` that matches `pattern` (whitespace folded); fails when absent."""
    text = " ".join((STUDIES / study).read_text().split())
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"results.py: {study} no longer says {pattern!r}")
    return m.group(0)


def link(study: str) -> str:
    return f"[{study[:-3]}](studies/{study})"


def setting_text(setting: str, dims: int) -> str:
    """A setting of the CSV in a few words: family, tdeg, block shape, merging, streaming axis."""
    s = dict(kv.split("=") for kv in setting.split(","))
    axes = "xyz"[:dims]
    family = "streaming" if s["streaming"] == "1" else "tiled"
    words = [family, f"tdeg {s['tdeg']}", "×".join(s[f"tb{a}"] for a in axes)]
    if s["merge"] != "none":
        words.append(f"{s['merge']} " + "×".join(s[f"mf{a}"] for a in axes))
    if family == "streaming" and dims == 3:
        words.append("along " + ("y" if s["sd"] == "1" else "z"))
    return ", ".join(words)


def f1(x: float) -> str:
    return f"{x:.1f}"


def pct(x: float) -> str:
    return f"{x:.0f} %"


def typical_stencils(out: list[str]) -> dict[str, float]:
    tune = rows("tune-all-one-tree-nvidia-h100-80gb-hbm3.csv")
    out += [
        "## The 24 typical stencils at 120 s on one H100",
        "",
        "NVIDIA H100 80GB HBM3, 2026-11-27, tree `5662bfe`; "
        f"study {link(S_TUNE)}. What a user runs: one rank, a config of only the stencil, the grid "
        "(8192², 512³, doubles) and `time_budget_s: 120`, the whole default space; naive and "
        "copy measured on the same GPU in the same job. GCells/s per time step. *copy*: the "
        "device-to-device copy's bandwidth over 16 bytes per cell, the bound of one step "
        "that reads and writes the grid once (temporal blocking passes it); *FP64 roof*: the "
        "FP64 vector peak (33.5 TFLOP/s) over the stencil's flops per cell.",
        "",
        "| stencil | naive | tuned | × naive | % of copy | % of FP64 roof | setting |",
        "|---|---|---|---|---|---|---|",
    ]
    speedups, tuned = [], {}
    measured = verified = 0
    for r in tune:
        dims = r["grid"].count("x") + 1
        t, n = float(r["tuned_gcells"]), float(r["naive_gcells"])
        speedups.append(float(r["speedup_vs_naive"]))
        tuned[r["stencil"]] = t
        measured += int(r["measured"])
        verified += int(r["verified"])
        out.append(
            f"| {r['stencil']} | {f1(n)} | **{f1(t)}** | {speedups[-1]:.2f} | "
            f"{pct(100 * t / float(r['copy_gcells']))} | "
            f"{pct(100 * t / float(r['fp64_roof_gcells']))} | {setting_text(r['setting'], dims)} |")
    lo = min(range(len(tune)), key=lambda i: speedups[i])
    hi = max(range(len(tune)), key=lambda i: speedups[i])
    geo = math.exp(statistics.fmean(math.log(x) for x in speedups))
    out += [
        "",
        f"Every stencil above naive: {speedups[lo]:.2f}× ({tune[lo]['stencil']}) to "
        f"{speedups[hi]:.2f}× ({tune[hi]['stencil']}), geometric mean {geo:.2f}×; "
        f"{verified:,} of {measured:,} measurements verified (the rest failed and were not "
        "counted). One run per stencil: the spread over seeds at 120 s is not measured. "
        "Rows and full settings: `docs/bench/tune-all-one-tree-nvidia-h100-80gb-hbm3.csv`. "
        "Again, on one GPU with 16 CPUs (the study ran four stencils at a time on four H100s, "
        "16 CPUs each):",
        "",
        "```sh",
        "python3 bench/tune_all.py --bin build/bin --budget-s 120 \\",
        '  --evaluator "compile_threads: 16" \\',
        "  --csv tune.csv   # all 24; --stencils S ... for some",
        "```",
        "",
    ]
    return tuned


def h200(out: list[str]) -> None:
    user = [r for r in rows("h200-user-configs-482d225.csv") if r["tuned_gcells"]]
    out += [
        "### On an H200",
        "",
        "NVIDIA H200, main `482d225` (2026-11-28), 60 s instead of 120, the figures recorded in "
        "issues 47 and 48 (`docs/bench/h200-user-configs-482d225.csv`; the traces are not "
        "committed):",
        "",
        "| stencil | naive | tuned (60 s) | × naive | % of copy | % of FP64 roof |",
        "|---|---|---|---|---|---|",
    ]
    for r in user:
        t, n = float(r["tuned_gcells"]), float(r["naive_gcells"])
        copy = pct(100 * t / float(r["copy_gcells"])) if r["copy_gcells"] else "–"
        roof = pct(100 * t / float(r["fp64_roof_gcells"])) if r["fp64_roof_gcells"] else "–"
        out.append(f"| {r['stencil']} | {f1(n)} | **{f1(t)}** | {t / n:.2f} | {copy} | {roof} |")
    datasets = study_table(S_H200, "| dataset | settings | ok | wall | best ms/step |")
    out += [
        "",
        "The replay datasets shipped in `tests/data/` were recorded on an H200 (2026-11-21, "
        f"{link(S_H200)}): random settings of the 2-D part-1 space (no streaming, no temporal "
        "blocking) at 4096²; their fastest: "
        + "; ".join(f"{d[0]} {d[5]} GCells/s ({d[2]} of {d[1]} verified)" for d in datasets)
        + ". Again: `python3 bench/tune_all.py --bin build/bin --budget-s 60 --stencils "
        "star3d1r star3d2r box3d2r` on an H200.",
        "",
    ]


def tensor_cores(out: list[str]) -> dict[str, float]:
    """The boxes with the tensor-core family (issue 47): the tuner at 120 s against the
    CUDA-core families' 120-s figures of the typical-stencils table. Returns the new figures."""
    before = {r["stencil"]: r for r in rows("tune-all-one-tree-nvidia-h100-80gb-hbm3.csv")}
    runs = rows("mma-family/tuner-120s-nvidia-h100.csv")
    latest = {r["stencil"]: r for r in runs}  # the last run of each stencil
    out += [
        "## Tensor cores for the boxes",
        "",
        f"NVIDIA H100 80GB HBM3, 2026-12-05; study {link(S_MMA)}. The tensor-core family (FP64 "
        "MMAs over each output block's window, `mma = 1`) in the whole default space, the tuner "
        "at 120 s as above (`bench/issue48/tune120.sh 120 STENCIL`); *before*: the CUDA-core "
        "families' figure of the table above; *FP64 roof*: the vector peak's (the tensor cores' "
        "is twice it).",
        "",
        "| stencil | naive | before | tuned | × before | % of FP64 roof | family of the best | "
        "target (H200) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tuned = {}
    for name, r in latest.items():
        b = before[name]
        t = float(r["tuned_gcells"])
        tuned[name] = t
        out.append(
            f"| {name} | {f1(float(r['naive_gcells']))} | {f1(float(b['tuned_gcells']))} | "
            f"**{f1(t)}** | {t / float(b['tuned_gcells']):.2f} | "
            f"{pct(100 * t / float(b['fp64_roof_gcells']))} | {r['family']} | "
            f"{MMA_TARGETS.get(name, '–')} |")
    out += [
        "",
        "Rows: `docs/bench/mma-family/tuner-120s-nvidia-h100.csv`; every kernel verified. The "
        "H100 and the H200 have the same FP64 rates: the targets are compute-bound but for "
        "box2d4r, which the H100's memory bounds at about 160 GCells/s.",
        "",
        f"On one NVIDIA H200, 2026-12-06, trees `33e26c0` (run 1-2, study {link(S_MMA_H200)}) "
        f"and `f5ea80a` (run 3, {link(S_BUSY_H200)}), the same command; the tuner picks the "
        "tensor-core family by itself for every one. The targets are not met, and this mapping "
        "cannot meet them: box3d4r's asks for 90 % of the DMMA peak over the mapping's window "
        f"({link(S_MMA_BOUNDS)}); box2d4r's best kernel keeps the DMMA pipe 74 % busy at 175 "
        "GCells/s (Nsight Compute), so 230 asks for 98 % of it.",
        "",
        "| run | stencil | budget | naive | tuned | × naive | family of the best | measured | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows("mma-family/tuner-nvidia-h200.csv"):
        t, n = float(r["tuned_gcells"]), float(r["naive_gcells"])
        out.append(
            f"| {r['run']} | {r['stencil']} | {float(r['budget_s']):.0f} s | {f1(n)} | **{f1(t)}** | "
            f"{t / n:.2f} | {r['family']} | {int(r['measured']):,} | "
            f"{MMA_TARGETS.get(r['stencil'], '–')} (120 s) |")
    out += ["", "Rows: `docs/bench/mma-family/tuner-nvidia-h200.csv`.", ""]
    return tuned


def same_gpu_pairs(call: str = "8") -> list[tuple[dict[str, str], dict[str, str]]]:
    """(this tree, main 482d225) rows of one H200: call 8 (tree 011fc37, its lap3d19 from
    call 9, tree 5e1a0e9, before settled timing), call 7 (tree eca0873)."""
    same = [r for r in rows("pipeline-busy-nvidia-h200.csv") if r["call"] == call]
    base = {r["stencil"]: r for r in same if r["pipeline"] == "base"}
    tuned = {r["stencil"]: r for r in same if r["pipeline"] == "0"}
    if call == "8":
        tuned.setdefault("lap3d19", next(r for r in rows("pipeline-busy-nvidia-h200.csv")
                                         if r["call"] == "9" and r["tree"] == "5e1a0e9"))
    return [(tuned[s], base[s]) for s in base if s in tuned]


def call9(tree: str, stencil: str, pipeline: str) -> dict[str, str]:
    return next(r for r in rows("pipeline-busy-nvidia-h200.csv") if r["call"] == "9"
                and r["tree"] == tree and r["stencil"] == stencil and r["pipeline"] == pipeline)


def settle_off() -> str:
    on, off = call9("011fc37", "star3d2r", "0"), call9("011fc37", "star3d2r", "0-settle0")
    return (f"{int(off['measured']):,} against {int(on['measured']):,} with it on "
            f"(GPU {pct(100 * float(off['gpu_busy']))} and {pct(100 * float(on['gpu_busy']))} busy; "
            f"best {f1(float(off['best_gcells']))} and {f1(float(on['best_gcells']))} GCells/s)")


def tail_off() -> str:
    new, old = call9("5e1a0e9", "lap3d19", "0"), call9("78f06e4", "lap3d19", "0")
    return (f"{int(old['measured']):,} at {pct(100 * float(old['gpu_busy']))} GPU busy against "
            f"{int(new['measured']):,} at {pct(100 * float(new['gpu_busy']))} with it (best "
            f"{f1(float(old['best_gcells']))} and {f1(float(new['best_gcells']))} GCells/s)")


def busy_span() -> str:
    b = [100 * float(r["gpu_busy"]) for r, _ in same_gpu_pairs()]
    return f"{min(b):.0f}-{max(b):.0f} %"


def gain_span() -> str:
    g = [int(r["measured"]) / int(b["measured"]) for r, b in same_gpu_pairs()]
    return f"{min(g):.1f}-{max(g):.1f}×"


def against_before(r: dict[str, str], b: dict[str, str]) -> str:
    """A table row of a run `r` against main 482d225's run `b` of the same stencil and GPU."""
    tree = f" (tree `{r['tree']}`)" if r.get("tree") and r["tree"] != "011fc37" else ""
    return (f"| {r['stencil']}{tree} | {int(r['measured']):,} | "
            f"{int(r['measured']) / int(b['measured']):.2f} | {pct(100 * float(r['gpu_busy']))} | "
            f"{f1(float(r['best_gcells']))} | "
            f"{int(b['measured']):,}, {pct(100 * float(b['gpu_busy']))}, "
            f"{f1(float(b['best_gcells']))} |")


def busy(out: list[str]) -> None:
    before = {r["stencil"]: r for r in rows("h200-user-configs-482d225.csv")
              if r["gpu_busy_pct"]}
    runs = sorted(rows("pipeline-busy-nvidia-h200.csv"), key=lambda r: r["pipeline"])
    out += [
        "## Keeping the GPU busy",
        "",
        "One rank on one NVIDIA H200 (16 CPUs, `compile_threads: 16`, cold cubin cache), a "
        "user's config of only stencil, grid and `time_budget_s: 60` over the whole default "
        "space, one run each, seed 1. Tree `011fc37` (generations overlapping, restarts on a "
        "stale best, racing, settled timing, the plain one-step tail) against main `482d225` "
        "(one generation at a time, issue 44's *before*) on the same H200 the same hour "
        f"({link(S_BUSY_SETTLED)}; `bench/issue44_pairs_device.sh`):",
        "",
        "| stencil | measurements | × before | GPU busy | best GCells/s | before: measurements, busy, best |",
        "|---|---|---|---|---|---|",
    ]
    for r, b in same_gpu_pairs():
        out.append(against_before(r, b))
    out += [
        "",
        "On the same machine: star3d2r with settled timing off (`evaluator.settle_spread: 0`) "
        "measured " + settle_off() + "; lap3d19 of the tree before the plain one-step tail "
        "(`78f06e4`) " + tail_off() + ".",
        "",
        "Tree `eca0873` against `482d225` on another H200, 2026-12-06 "
        f"({link(S_BUSY_SAME)}):",
        "",
        "| stencil | measurements | × before | GPU busy | best GCells/s | before: measurements, busy, best |",
        "|---|---|---|---|---|---|",
    ]
    for r, b in same_gpu_pairs("7"):
        out.append(against_before(r, b))
    out += [
        "",
        "Earlier trees, one run each against the *before* of issue 44's table (main `482d225` "
        "on another H200; lap3d19 of tree `f14a572`: seeds 1-3). First tree `f14a572`, "
        "2026-12-06: the depth ramp and a budget that ends on time "
        f"({link(S_BUSY_H200)}; lap3d19 is bound by its compiles on 16 CPUs); then "
        "2026-11-28, tree `d6c1e0d` (the queue topped up after every "
        "settled generation, since moved to the start of the island's wait, NVRTC processes at nice 5, the centre-queue kernel; "
        "[study](studies/2026-11-28-gpus-busy-restarts-refill.md)); below it tree `bdb97a7`, "
        "the first pipeline ([study](studies/2026-11-28-pipeline-one-h200.md)); rows in "
        "`docs/bench/pipeline-busy-nvidia-h200.csv`. *GPU busy*: the share of the clock the "
        "GPU verified and timed kernels; *before*: main `482d225`, one generation at a time "
        "(issue 44). `pipeline 1` is the same build with one generation at a time.",
        "",
        "| tree | stencil | pipeline | measurements | GPU busy | before: measurements, busy | best GCells/s |",
        "|---|---|---|---|---|---|---|",
    ]
    trees = {"5": "f14a572", "6": "f14a572", "4": "d6c1e0d", "2": "bdb97a7", "3": "bdb97a7"}
    order = {"5": 0, "6": 1, "4": 2}
    runs = sorted(runs, key=lambda r: (order.get(r["call"], 3), r["pipeline"]))
    for r in runs:
        if r["call"] not in trees:
            continue
        b = before.get(r["stencil"])
        was = f"{b['measurements']}, {b['gpu_busy_pct']} %" if b else "–"
        out.append(f"| {trees[r['call']]} | {r['stencil']} | {r['pipeline']} | {r['measured']} | "
                   f"{pct(100 * float(r['gpu_busy']))} | {was} | {f1(float(r['best_gcells']))} |")
    out += [
        "",
        "Again: `bench/pipeline_device.sh 60 0 star2d1r lap3d19` on an H200 (the study runs "
        "`bench/pipeline_busy.py`).",
        "",
    ]
    racing(out)


def racing(out: list[str]) -> None:
    """Racing a kernel's timing while another waits (the default since 520b8ec): call 2 of
    the H100 rows, lap3d19 with and without racing on the same machine."""
    call = [r for r in rows("race-nvidia-h100-80gb-hbm3.csv") if r["call"] == "2"]
    out += [
        "**Racing a kernel's timing** (`evaluator.race_factor` 1.5, the default since "
        "`520b8ec`: a verified kernel whose first 3 timed runs are over 1.5 × the fastest "
        "timed so far stops being timed while another compiled kernel waits for the GPU). "
        f"One NVIDIA H100 80GB HBM3, tree `9dc4f7a`, the same 60-s configs, one run each ({link(S_RACE)}; "
        "`bench/race_device.sh`; rows in `docs/bench/race-nvidia-h100-80gb-hbm3.csv`):",
        "",
        "| stencil | race_factor | measurements | GPU busy | best GCells/s |",
        "|---|---|---|---|---|",
    ]
    for r in sorted(call, key=lambda r: (r["stencil"], float(r["race_factor"]))):
        out.append(f"| {r['stencil']} | {float(r['race_factor']):g} | {int(r['measured']):,} | "
                   f"{pct(100 * float(r['gpu_busy']))} | {f1(float(r['best_gcells']))} |")
    same = [r for r in rows("pipeline-busy-nvidia-h100-80gb-hbm3.csv")
            if r["call"] == "8" and r["seed"] == "1"]
    base = {r["stencil"]: r for r in same if r["pipeline"] == "base"}
    out += [
        "",
        "With racing on, against main `482d225` on the same NVIDIA H100 80GB HBM3 the same hour "
        f"(tree `4187b71`, seed 1; {link(S_RACE_SAME)}, where star3d2r also runs seeds 2-3: "
        "best 230.2 against 225.7 GCells/s on the median; rows: call 8 of "
        "`docs/bench/pipeline-busy-nvidia-h100-80gb-hbm3.csv`):",
        "",
        "| stencil | measurements | × before | GPU busy | best GCells/s | before: measurements, busy, best |",
        "|---|---|---|---|---|---|",
    ]
    for r in (r for r in same if r["pipeline"] == "0"):
        out.append(against_before(r, base[r["stencil"]]))
    out += [
        "",
        "The H200 figures above were measured without racing; on an H200 it is not measured yet.",
        "",
    ]


def ebisu(out: list[str], tuned: dict[str, float]) -> None:
    fam = rows("families-all-nvidia-h100-80gb-hbm3.csv")
    figures: dict[str, tuple[str, float]] = {}
    for r in fam:
        if float(r["ebisu_gcells"] or 0) > 0:
            grid = r["grid"].replace("x1", "")
            figures.setdefault(r["stencil"], (grid, float(r["ebisu_gcells"])))
    out += [
        "## Against EBISU",
        "",
        "EBISU (ICS'23, public code), measured on an H100 80GB HBM3 "
        "on 2026-11-21 with its own driver (2-D at 8192²; 3-D at 512×256×1024, the cells of "
        "512³, which its 3-D code cannot tile), for the five stencils it covers; the figures "
        "`isletune-bench-kernels` records beside its rows (`ebisu_gcells` in "
        "`docs/bench/families-all-nvidia-h100-80gb-hbm3.csv`, from `ebisu_figure` in "
        f"`bench/bench_kernels.cpp`; {link(S_EBISU)}), against the tuned kernels of the "
        "table above (H100, 120 s):",
        "",
        "| stencil | grid (isletune) | EBISU | isletune, 120 s | isletune / EBISU |",
        "|---|---|---|---|---|",
    ]
    for name in sorted(figures, key=lambda s: list(tuned).index(s)):
        grid, e = figures[name]
        out.append(f"| {name} | {grid.replace('x', '×')} | {e:.0f} | {f1(tuned[name])} | "
                   f"{tuned[name] / e:.2f} |")
    more = study_says(S_EBISU, r"its \d+ at \d+²")
    out += ["", f"At a grid whose tiles fill the GPU EBISU reaches more (star2d1r: {more}); "
            "isletune was not run there. "
            "Again: the command of the 24 stencils, `--stencils " +
            " ".join(sorted(figures, key=lambda s: list(tuned).index(s))) + "`.", ""]


def kernel_tuner(out: list[str]) -> None:
    now = study_table(S_KT, "| dataset | `bayes_opt` | ours before the L1 term")
    out += [
        "## The search against Kernel Tuner",
        "",
        "Replay of datasets recorded on an NVIDIA H100 80GB HBM3 (3,200 random settings of the "
        "whole default space each, `tests/data/h100-full-*.h5`), so both searches see the same "
        "measurements; figure: median measurements until the best so far is within 5 % of the "
        "dataset's optimum (in brackets: runs that got there). Kernel Tuner 1.4.0 in simulation "
        "mode, `bayes_opt`, 100 runs per dataset; isletune 200 seeds, budget 300; 2026-11-27, "
        f"tree with the roofline's L1 term (`f20b44a`), {link(S_KT)}:",
        "",
        "| dataset | `bayes_opt` | isletune, 1 / 2 / 4 islands | isletune / `bayes_opt` |",
        "|---|---|---|---|",
    ]
    out += [f"| {r[0]} | {r[1]} | {r[3]} | {r[4]} |" for r in now]
    strategies = study_table(S_KT_ALL, "| dataset | ours, 1 island | 2 islands | 4 islands | KT")
    out += [
        "",
        "Against three of Kernel Tuner's strategies (the same datasets as recorded on "
        f"2026-11-24, 20 runs each, `max_fevals` 400, isletune at commit `d2bddcb` with a "
        f"budget of 300; `inf`: fewer than half the runs got within 5 %; {link(S_KT_ALL)}, "
        "\"Re-measured on the re-recorded H100 datasets\"):",
        "",
        "| dataset | isletune, 1 island | 2 islands | 4 islands | `bayes_opt` | GA | random |",
        "|---|---|---|---|---|---|---|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in strategies]
    out += [
        "",
        "Again (Kernel Tuner 1.4.0 on `PYTHONPATH`, no GPU):",
        "",
        "```sh",
        "python3 bench/kt_compare.py --isletune build/bin/isletune --seeds 100 \\",
        "  --strategies bayes_opt --max-fevals 300 --json kt.jsonl tests/data/h100-full-*.h5",
        "SWEEP_RUNS=1 build/bin/isletune-sweep tests/data/h100-full-$D.h5 --seeds 200 \\",
        '  "1:evaluations=300,islands=1" "2:evaluations=300,islands=2" '
        '"4:evaluations=300,islands=4" > sw-$D.txt',
        "python3 bench/paired_sweep.py sw-$D.txt --kt kt.jsonl",
        "```",
        "",
    ]


def islands(out: list[str]) -> None:
    replay = study_table(S_ISLANDS, "| dataset (seeds) | 1 island |")
    out += [
        "## 1, 2 and 4 GPUs",
        "",
        "**In replay** (measurements counted, not time: a replayed GPU costs nothing to wait "
        "for) islands buy time, not measurements: with the population split over the islands "
        "they reach 5 % of the optimum in about as many measurements as one island. Median "
        "measurements to 5 %; for 2 and 4 islands the paired difference from one island with "
        "its 95 % interval, and the seeds that needed fewer / more; 2026-11-27, tree "
        f"`f383534`, {link(S_ISLANDS)}:",
        "",
        "| dataset (seeds) | 1 island | 2 islands | 4 islands |",
        "|---|---|---|---|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in replay]
    gpus = study_table(S_GPUS, "| ranks, layout | seed | T5% s |")
    keep = ("1, 4 × 4", "2, 2 × 4 each", "4, 2 × 2 each (default)")
    out += [
        "",
        "Again: `SWEEP_RUNS=1 build/bin/isletune-sweep tests/data/$D.h5 --seeds 200 "
        '"1:evaluations=$E,islands=1" "2:evaluations=$E,islands=2" "4:evaluations=$E,islands=4"` '
        "(E = 300 for `h100-full-*`, 400 for the others), then `python3 bench/paired_sweep.py "
        "OUT --base 1`.",
        "",
        "**On GPUs** the islands do not reliably buy time yet. star3d2r 512³, a 60-s user "
        "config, one "
        "rank per NVIDIA H100 80GB HBM3 of one host, cold cubin cache, two seeds; T5%: seconds "
        "until within 5 % of the best any run found; *busy*: the least busy rank's share of "
        f"the run measuring; 2026-11-27, {link(S_GPUS)}, before the worker ran kernels "
        "as their compiles end:",
        "",
        "| ranks, population | seed | T5% s | best ms | generations | new measurements per GPU "
        "| busy | waiting / wall |",
        "|---|---|---|---|---|---|---|---|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in gpus if r[0] in keep]
    h200 = rows("islands-4xh200-482d225.csv")
    out += [
        "",
        "On H200s, main `482d225` (2026-11-28), two stencils no test uses, 60 s, issue 45's "
        "figures (`docs/bench/islands-4xh200-482d225.csv`; T5% against the best kernel of "
        "the seven runs):",
        "",
        "| stencil | GPUs | runs | measurements | per GPU-minute | GPU busy, each | "
        "waiting per rank | best / best known | T5% s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in h200:
        out.append(
            f"| {r['stencil']}, {r['grid'].replace('x', '×')} | {r['gpus']} | {r['runs']} | "
            f"{r['measurements']} | {r['per_gpu_minute']} | {r['gpu_busy_each_pct']} % | "
            f"{r['waiting_mean_per_rank'] or '–'} | {r['best_over_best_known']} | {r['t5_s']} |")
    out += [
        "",
        "Again, on a host of four GPUs: `python3 bench/scaling.py --backend cuda --ranks 1,2,4 "
        "--seeds 1-2 --config C --runs`, C a copy of `config/e2e/star3d2r-512.yaml` with "
        "`time_budget_s: 60`.",
        "",
    ]
    asy = rows("islands-async-4xh200.csv")
    out += [
        "**Async islands** (the GPU default since 2026-11-28): no island waits for another, "
        "and each keeps a queue as deep as its compile threads take. On four H200s of one "
        "host, the same two stencils, 60 s, one seed per run (T5% / T2%: until within 5 % / 2 % "
        "of the best kernel of these runs; the population split as shipped, 4 per island at 4 "
        "GPUs, or 16 per island as tried; `docs/bench/islands-async-4xh200.csv`, "
        f"{link(S_ASYNC)}):",
        "",
        "| stencil | GPUs | islands | population / island | measured per GPU | GPU busy, each | "
        "best GCells/s | T5% s | T2% s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in asy:
        if r["tree"] not in ASYNC_TREES and r["gpus"] != "1":
            continue
        mode = "one" if r["gpus"] == "1" else "async"
        out.append(
            f"| {r['stencil']}, {r['grid'].replace('x', '×')} | {r['gpus']} | {mode} | "
            f"{r['population_per_island']} | {r['per_gpu']} | {r['gpu_busy_pct']} % | "
            f"{r['best_gcells']} | {r['t5_s']} | {r['t2_s']} |")
    out += [
        "",
        "Two or four GPUs reach 5 % of the best kernel where one does not in 60 s; two measure "
        "as much per GPU as one, four are 27-62 % busy and measure 0.55-0.64× one GPU's per "
        "GPU (issue 45, open). In the replay sweep's model of async islands four islands of 4 "
        "reach the optimum in half the clock of one island, four of 16 no sooner than one "
        "(the study). Again, on a host of four GPUs: `bash bench/islands_device.sh 60 SEEDS "
        "STOP async:1,2,4`.",
        "",
    ]


def wait_share(name: str, variant: str) -> tuple[float, float, float]:
    """Seconds each rank waited in the `variant` runs of a 4-GPU text file: min, max, mean."""
    waits = []
    for line in (BENCH / name).read_text().splitlines():
        m = re.match(r"\S+ (\S+) seed \d+ \|.*\| wait \[([^\]]*)\]", line)
        if m and m.group(1) == variant:
            waits += [float(x) for x in m.group(2).split(",")]
    return min(waits), max(waits), statistics.fmean(waits)


def limits(out: list[str], tensor: dict[str, float]) -> None:
    tune = {r["stencil"]: r for r in rows("tune-all-one-tree-nvidia-h100-80gb-hbm3.csv")}
    lo, hi, mean = wait_share("forest-4xh100-2026-11-27.txt", "default")

    def share(names: list[str], column: str) -> str:
        return ", ".join(
            f"{n} {100 * float(tune[n]['tuned_gcells']) / float(tune[n][column]):.0f} %"
            for n in names)

    boxes = ["box2d4r", "box3d2r", "box3d3r", "box3d4r"]
    stars = ["star3d2r", "star3d3r", "star3d4r", "cross3d2r", "cross3d3r"]
    out += [
        "## Known limits",
        "",
        f"- **The GPU still idles at times.** One rank on one H200, 60 s: the GPU verifies and "
        f"times kernels {busy_span()} of the clock over five stencils (above), mostly waiting "
        "for a run's first compiles and for each restart's new population; where compiles "
        "bind (a 3-D stencil on 16 CPUs) the compile threads, not the GPU, set the pace.",
        "- **Four GPUs do not scale yet.** With drift 1 (the default before async islands) "
        "each rank waited for its neighbours: on four H100s (45 s, star3d2r and box2d2r, "
        "`docs/bench/forest-4xh100-2026-11-27.txt`) "
        f"{lo:.1f}-{hi:.1f} s, {mean:.1f} s on average. Async islands wait no more, and two "
        "GPUs scale, but four H200s are 27-62 % busy and measure 0.55-0.64× one GPU's per GPU "
        "(above; issue 45).",
        "- **Boxes of radius ≥ 2 short of the targets** (H100, 120 s, the CUDA cores: "
        f"{share(boxes, 'fp64_roof_gcells')} of the FP64 vector roof): the tensor-core family "
        "passes that roof on box3d3r and box3d4r ("
        + ", ".join(f"{n} {100 * tensor[n] / float(tune[n]['fp64_roof_gcells']):.0f} %"
                    for n in boxes if n in tensor)
        + ", above), short of issue 47's H200 targets; box3d2r's mapping is bounded near the "
        "vector roof (its useful share of the MMA work is 0.58).",
        "- **3-D high-order stars and crosses stay at the copy roofline** (H100, 120 s: "
        f"{share(stars, 'copy_gcells')} of copy, all but star3d2r at tdeg 1): temporal "
        "blocking that pays at radius 1 does not pay at radius ≥ 2 (issue 48). On an H200, "
        "whose copy roofline is 1.4× the H100's, the same tdeg-1 kernels run at 177.6 "
        "(star3d4r, 67 % of its copy) to 244.5-246.8 GCells/s (star3d2r, 92-93 %): bound on "
        "the SM side (star3d4r's kernel: 8 warps an SM waiting on dependent arithmetic and "
        "shared memory); a "
        "barrier-free TMA pipeline, a prototype outside the product, runs star3d4r at 196.5 "
        "([study](studies/2026-12-07-issue44-h200-settled-timing-plain-tail.md)).",
        stale_line(tune),
        "- One run per stencil and configuration in most GPU tables: the spread over seeds on "
        "the GPU is measured only where a table shows several seeds.",
        "",
        "How each default was chosen: `docs/decisions.md`. Every study, kept or not: "
        "`docs/studies/README.md`.",
    ]


def stale_line(tune: dict) -> str:
    """The 120-s table's tree against today's on the boxes re-run after the stale-best restarts."""
    after = [r for r in rows("stale-restarts-h100-120s.csv") if r["source"].startswith("after")]
    before = {r["stencil"]: r for r in rows("stale-restarts-h100-120s.csv")
              if r["source"].startswith("before")}
    now = ", ".join(f"{r['stencil']} {f1(float(r['tuned_gcells']))} "
                    f"({float(r['tuned_gcells']) / float(tune[r['stencil']]['tuned_gcells']):.2f}×)"
                    for r in after)
    was = ", ".join(f"{float(before[r['stencil']]['tuned_gcells']) / float(tune[r['stencil']]['tuned_gcells']):.2f}×"
                    for r in after)
    quorum = [r for r in rows("stale-restarts-h100-120s.csv") if r["source"].startswith("quorum")]
    q = ", ".join(f"{r['stencil']} {f1(float(r['tuned_gcells']))} "
                  f"({float(r['tuned_gcells']) / float(tune[r['stencil']]['tuned_gcells']):.2f}×, "
                  f"GPU {pct(100 * float(r['gpu_busy']))} busy)" for r in quorum)
    return ("- **The 120-s table is of tree `5662bfe`, one generation at a time.** Re-run on one "
            f"H100 with generations overlapping and restarts on a stale best (one seed each): {now} "
            f"of the table; before those restarts {was} (the island never left its first sample: "
            "[study](studies/2026-12-06-restarts-on-a-stale-best.md)); with a restart's population "
            f"settling at three quarters (tree `eca0873`): {q} ([study]({S_BUSY_SAME_LINK})). "
            "The other stencils are not re-measured yet.")


def summary(out: list[str]) -> None:
    tune = rows("tune-all-one-tree-nvidia-h100-80gb-hbm3.csv")
    x = [float(r["speedup_vs_naive"]) for r in tune]
    geo = math.exp(statistics.fmean(math.log(v) for v in x))
    tuned = {r["stencil"]: float(r["tuned_gcells"]) for r in tune}
    ebisu = {r["stencil"]: float(r["ebisu_gcells"])
             for r in rows("families-all-nvidia-h100-80gb-hbm3.csv")
             if float(r["ebisu_gcells"] or 0) > 0}
    vs_ebisu = [tuned[s] / e for s, e in ebisu.items()]
    kt = study_table(S_KT, "| dataset | `bayes_opt` | ours before the L1 term")
    ratios = [float(v) for r in kt for v in r[4].split(" / ")]
    out += [
        "In short:",
        "",
        f"- **Kernels** (one H100, 120 s, a config of only stencil, grid and budget): each of the "
        f"24 typical stencils {min(x):.2f}× to {max(x):.2f}× faster than the naive kernel, "
        f"{geo:.2f}× in geometric mean; {min(vs_ebisu):.2f}× to {max(vs_ebisu):.2f}× EBISU's "
        f"figures on the {len(ebisu)} stencils EBISU covers.",
        f"- **Search** (replay of H100 recordings): {min(ratios):.2f} to {max(ratios):.2f} of the "
        "measurements Kernel Tuner's `bayes_opt` needs to get within 5 % of the optimum.",
        "- **GPU use** (one H200, 60 s): the pipeline keeps several generations in the "
        f"evaluator's queue, so the GPU measures {busy_span()} of the clock and a run makes "
        f"{gain_span()} the measurements of one generation at a time on the same GPU (below).",
        "- **Islands**: in replay 2 and 4 islands need about as many measurements as one; on "
        "GPUs async islands never wait, and 2 or 4 H200s reach 5 % of the best kernel where one "
        "does not in 60 s, but four are 27-62 % busy (known limits, below).",
        "",
    ]


def page() -> str:
    out = [
        "<!-- Generated by docs/tools/results.py from docs/bench/ and docs/studies/: edit "
        "those, then run `python3 docs/tools/results.py`. -->",
        "",
        "# Results: how fast, against what, on which GPU",
        "",
        "What isletune's kernels and search achieve, as measured. Every figure on this page "
        "is read from a committed file named beside it (`docs/bench/` or a study under "
        "`docs/studies/`) by `docs/tools/results.py`, which writes the page; "
        "`ctest --preset default -R docs.results` fails when the page and the files disagree.",
        "",
    ]
    summary(out)
    tuned = typical_stencils(out)
    h200(out)
    tensor = tensor_cores(out)
    busy(out)
    ebisu(out, tuned)
    kernel_tuner(out)
    islands(out)
    limits(out, tensor)
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when docs/results.md differs from what this writes")
    args = ap.parse_args()
    text = page()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print("docs/results.md is not what docs/tools/results.py writes from docs/bench/ "
                  "and docs/studies/; run: python3 docs/tools/results.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

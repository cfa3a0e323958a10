#!/usr/bin/python3
"""Scaling study (issue 13): the same tuning problem with 1, 2 and 4 ranks, several seeds.

Runs `mpirun -np R isletune run CONFIG --seed S` for every rank count R and seed S, then
prints per problem and rank count (medians over seeds, [min-max] spread): time until the
best-so-far is within --tolerance (5%) of the best setting any run of the study found,
the speed-up of that time against the fewest ranks, final best, measurements per GPU,
GPU-busy fraction, time waiting on neighbours, migrants sent/received, and measurements
that repeat a setting another island measured. The figures are computed by
analysis/isletune_analysis/scaling.py; docs/studies/2026-11-23-scaling-1-2-4-islands.md says
what each counts and how the replay clock is built.

  # replay (no GPU): the recorded H200 datasets tests/data/h200-{star2d1r,box2d2r}.h5
  bench/scaling.py --backend replay --problem star2d1r --problem box2d2r --seeds 5
  # GPUs (one per rank, the binary picks GPU = node-local rank): any run configs
  bench/scaling.py --backend cuda --config config/e2e/star2d1r-8192.yaml \\
                   --config config/e2e/box3d1r-512.yaml --seeds 3 --work runs/scaling
  # figures of runs made earlier (e.g. traces copied back from a GPU machine)
  bench/scaling.py --analyze runs/scaling

Runs land in WORK/PROBLEM/npR-seedS (a temporary folder, removed at the end, unless
--work is given); a run whose trace exists is not run again (--rerun), so a study cut by
--stop-after continues where it stopped. CUDA runs get a cold cubin cache each, and a
`HOME` of their own (NVRTC 13 keeps compiled sources in `~/.nv/ComputeCache`: a run after
another of the same seed would compile faster). Exit
status 1 when a run fails (its log is printed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "analysis"))

try:  # the runs need no h5py (a GPU machine may lack it); their figures do
    from isletune_analysis import load_trace  # noqa: E402
    from isletune_analysis.errors import TraceError  # noqa: E402
    from isletune_analysis.scaling import run_metrics, study_table, target_ms  # noqa: E402
    NO_ANALYSIS = ""
except ImportError as exc:
    NO_ANALYSIS = str(exc)

RUN_DIR = re.compile(r"^np(\d+)-seed(\d+)$")
# The targets: speed-up of the time to the 5% target against 1 GPU, busy fraction.
SPEEDUP_TARGETS = {2: 1.8, 4: 3.0}
BUSY_TARGET = 0.80


def parse_list(text: str) -> list[int]:
    """"1,2,4" or "1-5" as a list of integers."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def replay_config(problem: str, work: Path) -> Path:
    """The dataset's recording config (config/datasets/PROBLEM.yaml) with the replay
    evaluator on tests/data/h200-PROBLEM.h5 in place of its cuda evaluator; GA defaults."""
    source = ROOT / "config" / "datasets" / f"{problem}.yaml"
    dataset = ROOT / "tests" / "data" / f"h200-{problem}.h5"
    for path in (source, dataset):
        if not path.exists():
            sys.exit(f"bench/scaling.py: {path} is missing; --problem expects a name with "
                     "config/datasets/NAME.yaml and tests/data/h200-NAME.h5")
    lines = [line for line in source.read_text().splitlines()
             if not line.startswith(("evaluator:", "seed:"))]
    text = "\n".join(lines) + f"\nevaluator: {{backend: replay, dataset: {dataset}}}\n"
    config = work / problem / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)
    return config


def torus(population: int) -> tuple[int, int]:
    """The squarest rows x cols grid of a population (rows <= cols)."""
    rows = max(r for r in range(1, int(population ** 0.5) + 1) if population % r == 0)
    return rows, population // rows


def variant_config(config: Path, ranks: int, args: argparse.Namespace, work: Path,
                   problem: str) -> Path:
    """The config a run with `ranks` ranks uses: CONFIG itself, or a copy (next to the runs)
    with the --set lines and a `ga` line (--split-population P: population P / ranks;
    --mcr-threshold)."""
    extra = list(args.set)
    ga = {}
    if args.split_population:
        population = args.split_population // ranks
        if population < 2 or population * ranks != args.split_population:
            sys.exit(f"bench/scaling.py: --split-population {args.split_population} does not "
                     f"split into {ranks} islands of at least 2")
        rows, cols = torus(population)
        ga.update(population=population, rows=rows, cols=cols)
    if args.mcr_threshold is not None:
        ga["mcr_threshold"] = args.mcr_threshold
    if ga:
        extra.append("ga: {" + ", ".join(f"{k}: {v}" for k, v in ga.items()) + "}")
    if not extra:
        return config
    text = config.read_text()
    top = {line.split(":", 1)[0] for line in text.splitlines() if line and line[0].isalpha()}
    for line in extra:
        key = line.split(":", 1)[0].strip()
        if key in top:
            sys.exit(f"bench/scaling.py: {config} already sets `{key}`; --set, "
                     "--split-population and --mcr-threshold add top-level keys the config does not have")
    # The copy lives elsewhere: a relative dataset path is resolved against CONFIG's folder.
    base = re.sub(r"(dataset:\s*)([^\s#},]+)", lambda m: m.group(1) + (
        m.group(2) if Path(m.group(2)).is_absolute() else str(config.parent / m.group(2))), text)
    out = work / problem / f"config-np{ranks}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(base.rstrip("\n") + "\n" + "\n".join(extra) + "\n")
    return out


def mpirun(ranks: int) -> list[str]:
    """mpirun -np R --oversubscribe, plus --allow-run-as-root when running as root."""
    cmd = [os.environ.get("MPIEXEC") or shutil.which("mpirun") or "mpirun", "-np", str(ranks),
           "-q", "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run_all(args: argparse.Namespace, problems: dict[str, Path], work: Path) -> None:
    """Every (problem, ranks, seed) run, skipping those whose trace already exists."""
    binary = Path(args.build) / "bin" / "isletune"
    if not binary.exists():
        sys.exit(f"bench/scaling.py: {binary} does not exist; build the isletune target "
                 "or pass --build DIR")
    nice = ["nice", "-n", str(args.nice)] if args.nice else []
    start = time.monotonic()
    for problem, config in problems.items():
        for ranks in args.ranks:
            for seed in args.seeds:
                out = work / problem / f"np{ranks}-seed{seed}"
                if (out / "trace.h5").exists() and not args.rerun:
                    continue
                if args.stop_after and time.monotonic() - start > args.stop_after:
                    print(f"# --stop-after {args.stop_after} s: {out} and later runs not "
                          "started; run the same command again to continue", file=sys.stderr)
                    return
                env = dict(os.environ)
                if args.backend == "cuda" and not args.warm_cubins:
                    # A cold cubin cache and NVRTC's own cache (under HOME) per run: caches
                    # warmed by earlier runs would make later rank counts and seeds compile
                    # faster.
                    cubins = work / problem / f"np{ranks}-seed{seed}.cubins"
                    shutil.rmtree(cubins, ignore_errors=True)
                    env["ISLETUNE_CACHE_DIR"] = str(cubins)
                    env["HOME"] = str(cubins / "home")
                    (cubins / "home").mkdir(parents=True)
                run_config = variant_config(config, ranks, args, work, problem)
                cmd = nice + mpirun(ranks) + [str(binary), "run", str(run_config), "--backend",
                                              args.backend, "--out", str(out), "--seed",
                                              str(seed), "--overwrite"]
                print(f"# {' '.join(cmd)}", file=sys.stderr, flush=True)
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if args.backend == "cuda" and not args.warm_cubins:
                    shutil.rmtree(env["ISLETUNE_CACHE_DIR"], ignore_errors=True)
                (work / problem).mkdir(parents=True, exist_ok=True)
                (work / problem / f"np{ranks}-seed{seed}.log").write_text(proc.stdout + proc.stderr)
                if proc.returncode != 0:
                    sys.stderr.write(proc.stdout + proc.stderr)
                    sys.exit(f"bench/scaling.py: run failed (exit {proc.returncode}): "
                             f"{' '.join(cmd)}")


def fmt(s: dict[str, float], scale: float = 1.0, digits: int = 1) -> str:
    """"median [min-max]" of a spread dict."""
    def one(v: float) -> str:
        return "never" if math.isinf(v) else f"{v * scale:.{digits}f}"
    return f"{one(s['median'])} [{one(s['min'])}-{one(s['max'])}]"


def analyse(work: Path, args: argparse.Namespace) -> tuple[dict, bool]:
    """Figures of every problem under WORK; returns them and whether every target was met."""
    if NO_ANALYSIS:
        print(f"# runs done, figures skipped ({NO_ANALYSIS}); run bench/scaling.py --analyze "
              f"{work} where h5py is installed", file=sys.stderr)
        return {}, True
    report, all_met = {}, True
    for problem_dir in sorted(p for p in work.iterdir() if p.is_dir()):
        runs = sorted((d for d in problem_dir.iterdir() if d.is_dir() and RUN_DIR.match(d.name)
                       and (d / "trace.h5").exists()),
                      key=lambda d: tuple(map(int, RUN_DIR.match(d.name).groups())))
        if not runs:
            continue
        try:
            traces = [load_trace(d) for d in runs]
        except TraceError as exc:
            sys.exit(f"bench/scaling.py: {exc}")
        best, target = target_ms(traces, args.tolerance)
        metrics = [run_metrics(t, target, args.clock, args.compile_threads) for t in traces]
        table = study_table(metrics)
        clock = metrics[0].clock
        if clock == "simulated" and args.compile_threads:
            clock += f" (batches: compiles on {args.compile_threads} threads, then GPU work)"
        elif clock == "simulated":
            clock += " (replay's: every cost in sequence)"
        print(f"\n== {problem_dir.name}: {len(runs)} runs, clock {clock}; best of all runs "
              f"{best:.5f} ms/step, target (+{args.tolerance:.0%}) {target:.5f} ms/step")
        if args.runs:
            print(f"{'run':<14} {f'T{args.tolerance:.0%} s':>8} {'slowest':>8} {'hit g':>5} {'gens':>4} "
                  f"{'stop':<15} {'best ms':>8} {'wall s':>7} {'meas/GPU':>8} {'busy min':>8} "
                  f"{'rep%':>5}")
            for d, m in zip(runs, metrics):
                meas = sum(m.measured)
                rep = (sum(m.repeats_earlier) + sum(m.repeats_same)) / meas if meas else 0
                print(f"{d.name:<14} {m.time_to_target_s:8.1f} {m.slowest_clock_s:8.1f} "
                      f"{m.hit_generation if m.hit_generation is not None else '-':>5} "
                      f"{m.generations:4d} {m.stop_reason:<15} {m.final_best_ms:8.5f} "
                      f"{m.wall_s:7.1f} {meas / m.ranks:8.1f} {min(m.busy_fraction):8.1%} "
                      f"{rep:5.1%}")
        print(f"{'R':>2} {'seeds':>5} {'hit':>4} {f'T{args.tolerance:.0%} s':>19} {'x':>5} "
              f"{'slowest-island s':>19} {'final best ms':>27} {'gens':>11} {'meas/GPU':>14}")
        for row in table:
            print(f"{row['ranks']:>2} {row['runs']:>5} {row['reached']:>4} "
                  f"{fmt(row['time_to_target_s']):>19} {row['speedup']:5.2f} "
                  f"{fmt(row['slowest_clock_s']):>19} {fmt(row['final_best_ms'], 1, 5):>27} "
                  f"{fmt(row['generations'], 1, 0):>11} {fmt(row['measured_per_gpu'], 1, 0):>14}")
        print(f"{'R':>2} {'busy min %':>14} {'busy mean %':>14} {'GPU min %':>14} "
              f"{'wait/GPU % wall':>15} "
              f"{'sent/recv':>9} {'imm known %':>14} {'imm held %':>14} {'top by imm %':>14} "
              f"{'repeats %':>14} {'repeat s %':>14} {'redund %':>14}")
        for row in table:
            print(f"{row['ranks']:>2} {fmt(row['busy_min'], 100, 0):>14} "
                  f"{fmt(row['busy_mean'], 100, 0):>14} {fmt(row['gpu_min'], 100, 0):>14} "
                  f"{fmt(row['wait_fraction'], 100, 0):>15} "
                  f"{row['sent_per_gpu']['median']:4.0f}/{row['received_per_gpu']['median']:<4.0f} "
                  f"{fmt(row['received_known_fraction'], 100, 0):>14} "
                  f"{fmt(row['taken_held_fraction'], 100, 0):>14} "
                  f"{fmt(row['stop_top_from_immigrants'], 100, 0):>14} "
                  f"{fmt(row['repeats_fraction'], 100, 0):>14} "
                  f"{fmt(row['repeat_cost_fraction'], 100, 0):>14} "
                  f"{fmt(row['redundant_fraction'], 100, 0):>14}")
        stops = {}
        for m in metrics:
            stops.setdefault(m.ranks, {}).setdefault(m.stop_reason, 0)
            stops[m.ranks][m.stop_reason] += 1
        print("stop reasons: " + "; ".join(f"{r} rank{'s' if r > 1 else ''}: " + ", ".join(
            f"{k} {v}" for k, v in sorted(s.items())) for r, s in sorted(stops.items())))
        checks = []
        for row in table:
            need = SPEEDUP_TARGETS.get(row["ranks"])
            if need is not None:
                met = row["speedup"] >= need
                checks.append(f"{row['ranks']} GPUs {row['speedup']:.2f}x (target {need}x) "
                              f"{'met' if met else 'NOT met'}")
                all_met &= met
            busy = row["busy_min"]["min"]
            met = busy >= BUSY_TARGET
            all_met &= met
            if not met:
                checks.append(f"{row['ranks']} GPUs busy {busy:.0%} on the least busy rank "
                              f"(target {BUSY_TARGET:.0%}) NOT met")
        print("targets: " + ("; ".join(checks) if checks else "none applicable"))
        report[problem_dir.name] = {
            "best_ms": best, "target_ms": target, "clock": clock, "table": table,
            "runs": [m.__dict__ for m in metrics]}
    return report, all_met


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Scaling study: the same tuning problem on 1, 2 and 4 ranks.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--backend", choices=("replay", "cuda"), default="replay")
    parser.add_argument("--problem", action="append", default=[],
                        help="replay: dataset name (config/datasets/NAME.yaml on "
                             "tests/data/h200-NAME.h5); default star2d1r and box2d2r")
    parser.add_argument("--config", action="append", default=[],
                        help="run config, one problem each (named after the file)")
    parser.add_argument("--ranks", type=parse_list, default=[1, 2, 4], help="e.g. 1,2,4")
    parser.add_argument("--seeds", default="5", help="N (seeds 1..N) or a list: 1-5, 3,7")
    parser.add_argument("--build", default=str(ROOT / "build"), help="build dir with bin/isletune")
    parser.add_argument("--work", help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--analyze", metavar="WORK", help="only analyse runs already in WORK")
    parser.add_argument("--set", action="append", default=[], metavar="'KEY: YAML'",
                        help="add a top-level config line to every run, e.g. "
                             "'budget: {max_generations: 30}'")
    parser.add_argument("--split-population", type=int, metavar="P",
                        help="strong scaling: P individuals in all, P / R per island")
    parser.add_argument("--mcr-threshold", type=float, metavar="X",
                        help="ga.mcr_threshold of every run (0: no MCR stop; then give a "
                             "budget with --set)")
    parser.add_argument("--stop-after", type=float, metavar="S",
                        help="start no new run after S seconds (runs with a trace are "
                             "skipped next time, so the same command continues)")
    parser.add_argument("--warm-cubins", action="store_true",
                        help="cuda: share the user's cubin cache and HOME between runs "
                             "(default: a cold cache and a HOME of its own per run)")
    parser.add_argument("--rerun", action="store_true", help="redo runs whose trace exists")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--clock", choices=("auto", "simulated", "recorded"), default="auto")
    parser.add_argument("--compile-threads", type=int, metavar="N",
                        help="simulated clock: time each batch as the CUDA worker runs it "
                             "(compiles on N threads, then verify + timing in sequence) "
                             "instead of replay's sum of every cost")
    parser.add_argument("--nice", type=int, default=10, help="nice level of the runs (0: none)")
    parser.add_argument("--runs", action="store_true", help="also print one line per run")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    args.seeds = list(range(1, int(args.seeds) + 1)) if args.seeds.isdigit() \
        else parse_list(args.seeds)

    if args.analyze:
        work = Path(args.analyze)
        if not work.is_dir():
            sys.exit(f"bench/scaling.py: --analyze {work}: no such directory")
        report, met = analyse(work, args)
        if not report:
            sys.exit(f"bench/scaling.py: --analyze {work}: no runs found; expected "
                     "WORK/PROBLEM/npR-seedS/trace.h5")
    else:
        temp = None if args.work else tempfile.mkdtemp(prefix="isletune-scaling-")
        work = Path(args.work or temp)
        try:
            if args.config:
                problems = {Path(c).stem: Path(c).resolve() for c in args.config}
            else:
                names = args.problem or (["star2d1r", "box2d2r"] if args.backend == "replay"
                                         else [])
                if args.backend == "cuda" and not names:
                    sys.exit("bench/scaling.py: --backend cuda needs --config FILE")
                problems = {name: replay_config(name, work) for name in names}
            run_all(args, problems, work)
            report, met = analyse(work, args)
        finally:
            if temp:
                shutil.rmtree(temp, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    if not NO_ANALYSIS:
        print(f"\nall targets met: {'yes' if met else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

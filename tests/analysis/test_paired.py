"""bench/paired_sweep.py on a hand-written isletune-sweep output (SWEEP_RUNS=1): medians,
the paired counts and the bootstrap interval, worked out by hand in the comments."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

BENCH = ROOT / "bench" / "paired_sweep.py"

# Three variants over the same 5 seeds; "-1" is a run that never came within 5 %.
OUTPUT = """dataset x.h5: 10 settings, optimum 1 ms, 5 seeds
variant                      optimum    <=2%    <=5%     gap %   measured      to 5%  short restarts  repeats
base                           5/5   5/5   5/5      0.00        300       20.0      0        0        0
  to5: 10 20 30 40 50
same                           5/5   5/5   5/5      0.00        300       20.0      0        0        0
  to5: 10 20 30 40 50
worse                          4/5   4/5   4/5      0.00        300       40.0      0        0        0
  to5: 20 30 40 50 -1
"""


def run(tmp_path, *extra):
    out = tmp_path / "sweep.txt"
    out.write_text(OUTPUT)
    return subprocess.run([sys.executable, str(BENCH), str(out), *extra], check=True,
                          capture_output=True, text=True).stdout


def test_identical_runs_have_a_zero_interval_and_no_wins(tmp_path):
    text = run(tmp_path)
    assert "base base, 5 seeds, median 30" in text
    # Every resample of identical pairs has the same median: the interval is 0 .. 0.
    assert "same: median 30 (+0; 95 % interval +0 .. +0); fewer on 0 seeds, more on 0" in text


def test_a_variant_slower_on_every_seed_is_outside_zero(tmp_path):
    text = run(tmp_path)
    # Medians 40 (never counts as the largest) against 30; more on all 5 seeds; each resample's
    # median of the shifted runs is at least the base's (x + 10, or never against 50).
    line = next(l for l in text.splitlines() if l.strip().startswith("worse:"))
    assert "median 40 (+10;" in line
    assert "fewer on 0 seeds, more on 5" in line
    lo = float(line.split("interval ")[1].split(" ..")[0])
    assert lo > 0


def test_base_chosen_by_name(tmp_path):
    text = run(tmp_path, "--base", "worse")
    assert "base worse, 5 seeds, median 40" in text
    assert "base: median 30 (-10;" in text


def kt_rows(tmp_path, rows):
    path = tmp_path / "kt.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_kernel_tuner_runs_of_the_dataset_compared_unpaired(tmp_path):
    # bayes_opt on x.h5: 40 40 40 40 (median 40); a row of another dataset must be left out.
    rows = [{"dataset": "/d/x.h5", "strategy": "bayes_opt", "seed": s, "to5": 40}
            for s in range(1, 5)]
    rows.append({"dataset": "/d/other.h5", "strategy": "bayes_opt", "seed": 1, "to5": 1})
    text = run(tmp_path, "--kt", str(kt_rows(tmp_path, rows)))
    assert "Kernel Tuner bayes_opt: 4 runs, median 40, 4/4 within 5 %" in text
    # base 10..50 (median 30) against a constant 40: -10, ratio 0.75. Every resample of the
    # base has a median in [10, 50], so the interval lies within [-30, +10].
    line = next(l for l in text.splitlines() if l.strip().startswith("base - bayes_opt"))
    assert line.strip().startswith("base - bayes_opt: -10 (")
    assert "ratio of medians 0.75" in line
    lo = float(line.split("unpaired, ")[1].split(" ..")[0])
    hi = float(line.split(".. ")[1].split(")")[0])
    assert -30 <= lo < -10 < hi <= 10


def test_kernel_tuner_runs_that_never_reach_count_as_never(tmp_path):
    # Three of four runs never came within 5 %: the median is "never", no difference printed.
    rows = [{"dataset": "x.h5", "strategy": "bayes_opt", "seed": s, "to5": to5}
            for s, to5 in enumerate([None, None, None, 25], start=1)]
    text = run(tmp_path, "--kt", str(kt_rows(tmp_path, rows)))
    assert "Kernel Tuner bayes_opt: 4 runs, median never, 1/4 within 5 %" in text
    line = next(l for l in text.splitlines() if l.strip().startswith("same - bayes_opt"))
    assert "same - bayes_opt: n/a" in line and "ratio of medians n/a" in line


# The sweep's wall-clock rows under each variant (seconds, -1: never): --field picks one.
WALL_OUTPUT = """dataset x.h5: 10 settings, optimum 1 ms, 4 seeds
variant                      optimum    <=2%    <=5%     gap %   measured      to 5%  short restarts  repeats wall 5% s wall opt s
base                           4/4   4/4   4/4      0.00        300       20.0      0        0        0      2.00      9.00
  to5: 10 20 30 40
  wall5: 1.5 2.5 3.5 4.5
  wallopt: 8 9 10 -1
fast                           4/4   4/4   4/4      0.00        300       20.0      0        0        0      2.00      5.00
  to5: 10 20 30 40
  wall5: 1.5 2.5 3.5 4.5
  wallopt: 4 5 6 7.5
"""


def test_field_compares_the_wall_clock_rows(tmp_path):
    out = tmp_path / "wall.txt"
    out.write_text(WALL_OUTPUT)

    def paired(field):
        return subprocess.run([sys.executable, str(BENCH), str(out), "--field", field],
                              check=True, capture_output=True, text=True).stdout

    # Wall to the optimum: base 8, 9, 10, never (median 9.5) against 4, 5, 6, 7.5 (median 5.5);
    # fast is sooner on every seed, and every paired resample's median is below the base's.
    text = paired("wallopt")
    assert "base base, 4 seeds, median 9.5" in text
    line = next(l for l in text.splitlines() if l.strip().startswith("fast:"))
    assert "median 5.5" in line and "fewer on 4 seeds, more on 0" in line
    assert float(line.split("interval ")[1].split(" ..")[1].split(")")[0]) < 0
    # The wall to 5 % rows are identical; the measurements to 5 % (the default field) too.
    assert "fast: median 3 (+0; 95 % interval +0 .. +0)" in paired("wall5")
    assert "fast: median 25 (+0; 95 % interval +0 .. +0)" in paired("to5")

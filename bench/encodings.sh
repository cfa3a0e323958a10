#!/usr/bin/env bash
# Which GA encoding finds faster kernels on recorded spaces (docs/architecture.md, "The island GA": "the
# benchmark on recorded spaces decides the default")? Replays the real H200 datasets in
# tests/data with the island GA, 2 ranks, `index` vs `parameters`, SEEDS seeds each, with
# the default MCR stop and a cap of 200 measurements per island, and, as the baseline,
# `sampled-random` with 64 measurements per island (about what the GA spends before its
# MCR stop). Prints per dataset and variant: median final best (ms/step), its gap to the
# dataset's fastest setting, how many runs found that setting, and the median number of
# measurements over both islands.
#   bench/encodings.sh [BUILD_DIR] [SEEDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
seeds=${2:-10}
bin=$build/bin/isletune
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=(mpirun -q -np 2 --oversubscribe)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
printf '%-10s %-14s %12s %9s %8s %10s\n' dataset variant "median ms" "gap %" "optimum" "median ev"
for stencil in star2d1r box2d2r; do
  dataset=$root/tests/data/h200-$stencil.h5
  best=$(/usr/bin/python3 -c "
import h5py, numpy as np
f = h5py.File('$dataset', 'r')
e = f['ranks/0000/evaluations'][()]
print(repr(float(e['median_ms'][e['status'] == 0].min())))")
  for encoding in index parameters sampled-random; do
    results=()
    for seed in $(seq 1 "$seeds"); do
      sed -n '/^stencil:/,$p' "$root/config/datasets/$stencil.yaml" | sed '/^evaluator:/,$d' >"$work/c.yaml"
      cat >>"$work/c.yaml" <<YAML
$(if [[ $encoding == sampled-random ]]; then
  echo "strategy: sampled-random"
  echo "budget: {max_evaluations: 64, max_generations: 200}"
else
  echo "ga: {population: 16, rows: 4, cols: 4, encoding: $encoding}"
  echo "budget: {max_evaluations: 200, max_generations: 200}"
fi)
evaluator: {backend: replay, dataset: $dataset}
seed: $seed
YAML
      "${mpi[@]}" "$bin" run "$work/c.yaml" --out "$work/run" --overwrite >"$work/log" 2>&1
      line=$(grep '^best:' "$work/log")
      ms=$(sed 's/^best: \([0-9.]*\) ms.*/\1/' <<<"$line")
      ev=$(sed 's/.* generations, \([0-9]*\) evaluations.*/\1/' <<<"$line")
      results+=("$ms $ev")
    done
    printf '%s\n' "${results[@]}" | /usr/bin/python3 -c "
import sys, statistics as st
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
ms = [r[0] for r in rows]; ev = [r[1] for r in rows]; best = $best
hit = sum(1 for m in ms if m <= best * (1 + 1e-9))
print(f'%-10s %-14s %12.5f %9.2f %5d/%-2d %10.0f' % ('$stencil', '$encoding', st.median(ms),
      100 * (st.median(ms) / best - 1), hit, len(ms), st.median(ev)))"
  done
done

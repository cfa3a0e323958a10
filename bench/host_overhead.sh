#!/usr/bin/env bash
# Host overhead per generation of `isletune run` (GA + MPI ring and vote + HDF5 trace and
# checkpoint + progress gather), excluding evaluation: the replay backend answers from
# the shipped dataset by table lookup (microseconds), so the real wall time between
# generations is the host's own work. Population 16 (4x4), migration every generation.
#
#   [RANKS="1 2 4"] bench/host_overhead.sh [BUILD_DIR] [GENERATIONS]   (one line per rank count)
#
# The per-generation figure is the wall time from generation 1 to the last generation
# divided by the generations in between, read from rank 0's progress lines and summed
# over 5 seeds; every rank does the same work in lock step (the stop vote and the
# progress gather keep them within a generation), so it is the figure of each rank.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
generations=${2:-200}
bin=$build/bin/isletune
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/bench.yaml" <<YAML
stencil: star2d1r
grid: [4096, 4096]
space:
  streaming: {values: [0]}
  tdeg: {values: [1]}
  tbx: {values: [8, 32, 64, 128, 256]}
  tby: {values: [1, 2, 4, 8, 16, 32]}
  mfx: {values: [1, 2, 4]}
  mfy: {values: [1, 2, 4]}
  ufx: {values: [1, 2]}
  ufy: {values: [1, 2]}
sampler: {predictor: roofline, max_samples: 1024}
ga: {population: 16, rows: 4, cols: 4, encoding: parameters, mutation_rate: 0.2, mcr_threshold: 1.0}
budget: {max_generations: $generations}
evaluator: {backend: replay, dataset: $root/tests/data/synthetic-star2d1r.h5}
seed: 5
YAML
mpi=(mpirun -q --oversubscribe)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
echo "host overhead per generation, population 16, $(nproc) cores, $(date -u +%F)"
for np in ${RANKS:-1 2 4}; do
  # Islands converge in 20-40 generations: sum over several seeds.
  for seed in 1 2 3 4 5; do
    "${mpi[@]}" -np "$np" "$bin" run "$work/bench.yaml" --out "$work/np$np-$seed" --seed "$seed" |
      grep '^gen ' | sed -n 's/^gen *\([0-9]*\) .*(wall \([0-9.]*\) s).*/\1 \2/p' | sed -n '2p;$p'
  done | paste - - | awk -v np="$np" '{ g += $3 - $1; w += $4 - $2 }
      END { printf "ranks %d: %d generations, %.3f ms per generation per rank\n", np, g, w / g * 1e3 }'
done

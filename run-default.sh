#!/usr/bin/env bash
# The main isletune job in one command, on a fresh Debian 12 / Ubuntu 24.04 machine:
# installs what is missing, builds, and tunes star2d1r with the island GA on 2 MPI ranks.
# With an NVIDIA GPU (nvidia-smi lists one) it measures real kernels (backend cuda);
# without one it replays tests/data/h200-star2d1r.h5 (backend replay): 4000 settings
# measured on an NVIDIA H200, every one of which the run may sample (max_samples 4096),
# the dataset's fastest included. Prints one line per generation and the best setting.
# Each run gets its own directory build/runs/default-YYYYmmdd-HHMMSS; build/runs/default
# points at the latest (an earlier run is never overwritten).
#
#   ./run-default.sh            # extra arguments go to `isletune run` (e.g. --seed 3)
set -euo pipefail
cd "$(dirname "$0")"
root=$(pwd)

# 1. Dependencies (only what is missing; sudo when not root).
packages=(build-essential cmake libopenmpi-dev openmpi-bin libhdf5-dev hdf5-tools
  libyaml-cpp-dev libgtest-dev libfmt-dev nlohmann-json3-dev python3-h5py python3-numpy
  python3-matplotlib python3-pandas python3-scipy python3-yaml python3-pytest)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=$([[ $(id -u) -eq 0 ]] && echo "" || echo sudo)
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

# 2. Build (the same preset as the tests; CUDA evaluator when the toolkit is found).
cmake --preset default >/dev/null
cmake --build --preset default --target isletune
if cmake --build --preset default --target help 2>/dev/null | grep -q isletune-worker; then
  cmake --build --preset default --target isletune-worker  # the CUDA measuring process
fi

# 3. The embedded default configuration.
gpus=0
command -v nvidia-smi >/dev/null 2>&1 && gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
config=build/default.yaml
if ((gpus > 0)); then
  backend=cuda
  evaluator="evaluator: {backend: cuda}"
else
  backend=replay
  evaluator="evaluator: {backend: replay, dataset: $root/tests/data/h200-star2d1r.h5}"
fi
cat >"$config" <<YAML
# isletune default job (written by run-default.sh): star2d1r on 4096^2, island GA.
stencil: star2d1r
grid: [4096, 4096]
space:                 # the 2-D part-1 space the shipped dataset was recorded over
  streaming: {values: [0]}  # (config/datasets/star2d1r.yaml)
  tdeg: {values: [1]}
  tbx: {values: [8, 16, 32, 64, 128, 256, 512]}
  tby: {values: [1, 2, 4, 8, 16, 32, 64]}
  mfx: {values: [1, 2, 4, 8]}
  mfy: {values: [1, 2, 4, 8]}
  ufx: {values: [1, 2, 4]}
  ufy: {values: [1, 2, 4]}
sampler: {predictor: roofline, max_samples: 4096}  # replay: all 4000 recorded settings
ga: {population: 16, rows: 4, cols: 4, mutation_rate: 0.02}
budget: {max_generations: 40}
$evaluator
seed: 1
output: $root/build/runs/default
YAML

# A directory of its own per run; build/runs/default links to the latest.
stamp=$(date +%Y%m%d-%H%M%S)
out=$root/build/runs/default-$stamp
mkdir -p "$root/build/runs"
if [[ -e $root/build/runs/default && ! -L $root/build/runs/default ]]; then
  # A run directory of an older run-default.sh: keep it under a dated name.
  mv "$root/build/runs/default" "$root/build/runs/default-before-$stamp"
  echo "isletune: kept the previous default run as build/runs/default-before-$stamp"
fi

# 4. Run: 2 islands (one per GPU when there are two; they share one otherwise).
mpi=(mpirun -q -np 2 --oversubscribe)  # -q: errors without Open MPI's footer
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
echo "isletune: 2 ranks, backend $backend ($gpus GPU(s) found), config $config"
"${mpi[@]}" build/bin/isletune run "$config" --out "$out" "$@"
ln -sfn "default-$stamp" "$root/build/runs/default"
echo "isletune: trace in $out (build/runs/default links to it)"

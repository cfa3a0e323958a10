#!/usr/bin/env bash
# Records the full-space replay datasets of tests/data on one GPU (isletune measure
# --random N over the whole default space of config/datasets/full-*.yaml), each within
# its own time limit: SIGTERM ends `isletune measure` after its current batch with a
# complete, readable file, so a cut recording keeps every setting measured so far
# (`timeout --foreground`: the signal goes to isletune alone, never to its GPU worker,
# whose batch then completes and is recorded as measured).
#   bench/record_datasets.sh N SECONDS_EACH   (files and the log land in $OUT)
set -u
N=${1:-3000}
EACH=${2:-120}
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/record.log") 2>&1
B=$PWD/build-device
start=$(date +%s)
cmake -S . -B $B -DISLETUNE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build $B -j"$(nproc)" --target isletune isletune-worker >$OUT/build.txt 2>&1 ||
  { grep -E "error" -A3 $OUT/build.txt | head -40; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
export PATH=$B/bin:$PATH
export ISLETUNE_CACHE_DIR=$B/cubins
for c in config/datasets/full-*.yaml; do
  name=$(basename "$c" .yaml)
  # NVRTC 13 keeps what it compiled under ~/.nv/ComputeCache and serves it again in about a
  # tenth of the time, unflagged (the cubin cache's hits are recorded as cached): a HOME of
  # its own per recording, so the compile times replay models are those of cold compiles.
  home=$(mktemp -d)
  export HOME=$home
  echo "== $name (t=$(( $(date +%s) - start )) s)"
  timeout --foreground -s TERM -k 30 "$EACH" stdbuf -oL isletune measure "$c" --random "$N" --batch 96 \
    -o "$OUT/h100-$name.h5" --backend cuda
  echo "rc=$?"
  rm -rf -- "$home"
done
ls -la "$OUT"

#!/usr/bin/env bash
# The scaling study (bench/scaling.py) on the 4-GPU device kind: builds the CUDA targets,
# then runs 1, 2 and 4 ranks (one GPU each) on a 2-D and a 3-D stencil over the full
# default space (config/e2e, 120 s search budget per run). One device call may run at most
# 10 minutes: the study stops starting runs after STOP seconds and the same call continues
# it on a warm machine (runs with a trace are skipped). Figures and traces go to $OUT.
#   bench/scaling_device.sh [SEEDS] [STOP]      (defaults 3 and 420)
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
B=$PWD/build-device
seeds=${1:-3}
stop=${2:-420}
export NCCL_NVLS_ENABLE=0
cmake -S . -B $B -DISLETUNE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build $B -j"$(nproc)" --target isletune isletune-worker >$OUT/build.txt 2>&1 ||
  { grep -E "error" -A3 $OUT/build.txt | head -40; exit 1; }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv |
  tee $OUT/nvidia-smi.csv
bench/scaling.py --backend cuda --build $B --nice 0 --seeds "$seeds" --stop-after "$stop" \
  --config config/e2e/star2d1r-8192.yaml --config config/e2e/box3d1r-512.yaml \
  --work runs-device/scaling --runs --json $OUT/scaling.json | tee $OUT/scaling.txt
tar czf $OUT/scaling-traces.tar.gz runs-device/scaling

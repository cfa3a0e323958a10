#!/usr/bin/env bash
# Issue 44, the plain one-step tail on one GPU: a user's lap3d19 config for BUDGET seconds
# with the tree after the change (NEW) and before it (OLD), in the order A B B A on the same
# GPU, then the GPU tests of NEW that run the tail most (fused depths, odd grids, users' stencils).
# Prebuilt binaries (release, stripped) travel in out/: NEW=out/new, OLD=out/bin (+ out/bin/lib).
#   bash bench/tail_device.sh [BUDGET] [STENCIL]      (defaults 60, lap3d19)
# Rows: $OUT/busy.csv, traces: $OUT/traces.tar.gz, tests: $OUT/gpu-*.txt; on an H200 also issue 48's
# pc_star (bench/issue48/pc_star_device.sh, NCU=0). Everything ends by DEADLINE_S (570) seconds.
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
budget=${1:-60}
stencil=${2:-lap3d19}
NEW=${NEW:-$PWD/out/new} OLD=${OLD:-$PWD/out/bin}
export LD_LIBRARY_PATH=$PWD/out/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv | tee "$OUT/nvidia-smi.csv"
arm() { # name bin-dir work-dir
  ISLETUNE_WORKER=$2/isletune-worker bench/pipeline_busy.py --bin "$2" --budget-s "$budget" \
    --threads 16 --work "$3" --csv "$OUT/busy.csv" --only "$stencil" 2>&1 | tee -a "$OUT/busy.txt"
}
t0=$(date +%s)
arm new-a "$NEW" /tmp/tail/new-a
arm old-b "$OLD" /tmp/tail/old-b
arm old-c "$OLD" /tmp/tail/old-c
arm new-d "$NEW" /tmp/tail/new-d
echo "A B B A done at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/busy.txt"
tar czf "$OUT/traces.tar.gz" -C /tmp tail 2>/dev/null
left() { echo $(( ${DEADLINE_S:-570} - ($(date +%s) - t0) )); }
gtest() { # file-tag binary filter seconds
  local s=$4; [ "$s" -gt "$(left)" ] && s=$(left)
  if [ "$s" -lt 15 ]; then echo "$1: skipped (deadline)" | tee -a "$OUT/busy.txt"; return; fi
  timeout -k 5 "$s" "$2" --gtest_filter="$3" >"$OUT/gpu-$1.txt" 2>&1
  echo "$1 ($3, at most $s s): rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$OUT/gpu-$1.txt" | tr '\n' ' ')" |
    tee -a "$OUT/busy.txt"
}
# The GPU tests that run the tail most: every fused depth on odd grids and asymmetric stencils,
# users' stencils, a sample of the default space, the evaluator's multi-step schedules.
gtest families "$NEW/test_gpu_families" 'FamiliesStreaming.*:FamiliesUserStencils.*:FamiliesDefaultSpace.*' 100
gtest kernels "$NEW/test_gpu_kernels" 'CudaEvaluatorGpu.*' 60
# Issue 48's open measurement, where the GPU is an H200 (about 35 s without Nsight Compute).
if grep -q H200 "$OUT/nvidia-smi.csv" && [ "$(left)" -gt 60 ]; then
  NCU=0 GPU=H200 bash bench/issue48/pc_star_device.sh >"$OUT/pc_star.txt" 2>&1
  echo "pc_star rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/busy.txt"
fi
gtest typical "$NEW/test_gpu_families" 'Typical/*OnAnOddGrid*' 300

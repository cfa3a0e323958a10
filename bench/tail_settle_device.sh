#!/usr/bin/env bash
# Issue 44 on one GPU in one device call: the GPU tests of this tree, then two same-machine
# pairs of 60-s user configs: lap3d19 with the plain one-step tail (NEW) against the tree before
# it (OLD), and star3d2r with settled timing on (this tree's default) against off
# (evaluator.settle_spread 0); on an H200 also issue 48's pc_star (NCU=0).
# Prebuilt binaries (release, stripped) travel in out/: SET=out/settle (this tree: isletune,
# isletune-worker, test_gpu_kernels), NEW=out/new (the tail's tree, test_gpu_families),
# OLD=out/bin (+ out/bin/lib, the tree before the tail).
#   bash bench/tail_settle_device.sh [BUDGET]     (default 60)
# Rows: $OUT/busy.csv (bench/pipeline_busy.py), traces: $OUT/traces.tar.gz, tests: $OUT/gpu-*.txt.
# Everything ends by DEADLINE_S (570) seconds; TESTS=0 runs the pairs alone.
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
budget=${1:-60}
SET=${SET:-$PWD/out/settle} NEW=${NEW:-$PWD/out/new} OLD=${OLD:-$PWD/out/bin}
export LD_LIBRARY_PATH=$PWD/out/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv | tee "$OUT/nvidia-smi.csv"
t0=$(date +%s)
left() { echo $(( ${DEADLINE_S:-570} - ($(date +%s) - t0) )); }
log() { echo "$* (at $(( $(date +%s) - t0 )) s)" | tee -a "$OUT/busy.txt"; }
gtest() { # file-tag binary filter seconds (TESTS=0: none)
  [ "${TESTS:-1}" = 0 ] && return
  local s=$4; [ "$s" -gt "$(left)" ] && s=$(left)
  if [ "$s" -lt 15 ]; then log "$1: skipped (deadline)"; return; fi
  # The worker beside the test binary (the tests honour ISLETUNE_WORKER; the build tree's
  # worker they were linked against is not on the GPU machine).
  ISLETUNE_WORKER=$(dirname "$2")/isletune-worker timeout -k 5 "$s" "$2" --gtest_filter="$3" \
    >"$OUT/gpu-$1.txt" 2>&1
  log "$1 ($3, at most $s s): rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$OUT/gpu-$1.txt" | tr '\n' ' ')"
}
arm() { # bin-dir work-dir stencil [pipeline_busy options]
  local bin=$1 work=$2 stencil=$3; shift 3
  if [ "$(left)" -lt $(( budget + 20 )) ]; then log "$stencil in $work: skipped (deadline)"; return; fi
  ISLETUNE_WORKER=$bin/isletune-worker bench/pipeline_busy.py --bin "$bin" --budget-s "$budget" \
    --threads 16 --work "$work" --csv "$OUT/busy.csv" --only "$stencil" "$@" 2>&1 | tee -a "$OUT/busy.txt"
}
# The evaluator's schedules (racing, settling, multi-step launches); the families' fused depths
# on odd grids, users' stencils and a sample of the default space (the plain tail).
gtest kernels "$SET/test_gpu_kernels" 'CudaEvaluatorGpu.*' 60
arm "$SET" /tmp/runs/settle-on star3d2r
arm "$SET" /tmp/runs/settle-off star3d2r --settle-spread 0
gtest families "$NEW/test_gpu_families" 'FamiliesStreaming.*:FamiliesUserStencils.*:FamiliesDefaultSpace.*' 80
arm "$NEW" /tmp/runs/tail-new lap3d19
arm "$OLD" /tmp/runs/tail-old lap3d19
log "pairs done"
tar czf "$OUT/traces.tar.gz" -C /tmp runs 2>/dev/null
if grep -q H200 "$OUT/nvidia-smi.csv" && [ "$(left)" -gt 60 ]; then
  NCU=0 GPU=H200 bash bench/issue48/pc_star_device.sh >"$OUT/pc_star.txt" 2>&1
  log "pc_star rc=$?"
fi

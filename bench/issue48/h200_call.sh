#!/usr/bin/env bash
# One device call on an H200 (issue 48, and the evaluator's GPU tests of this tree):
#   1. test_gpu_kernels CudaEvaluatorGpu.* with the worker beside it (SET, default out/settle;
#      shared libraries from out/bin/lib);
#   2. star3d4r's retimed kernel with fewer points a thread or fewer threads a block, timed
#      against the tuner's pick s4r35 (bench/issue48/stalls.sh run on DIR, default out/n48,
#      made by `stalls.sh prepare DIR`), and Nsight Compute on the fastest of them;
#   3. the producer/consumer prototype with Nsight Compute on its fastest star3d4r variant
#      (bench/issue48/pc_star_device.sh, NCU=1).
# Files under $OUT: gpu-kernels.txt, stalls.txt, ncu-*.txt, pc_star.* (see pc_star_device.sh).
#   bash bench/issue48/h200_call.sh            # STEPS="1 2 3" by default; NCU_BEST=0: no ncu in 2
# KERNELS (step 2's kernels, default the o* set and s4r35) and CHAINS (" _c2 _c3": their DFMA
# chain variants too; default none) choose what step 2 times.
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
SET=${SET:-$PWD/out/settle} DIR=${DIR:-$PWD/out/n48}
here=$(cd "$(dirname "$0")" && pwd)  # this tree's stalls.sh, not the copy `prepare` left in DIR
export LD_LIBRARY_PATH=$PWD/out/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s)
log() { echo "$* (at $(($(date +%s) - t0)) s)" | tee -a "$OUT/h200_call.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv | tee "$OUT/nvidia-smi.csv"
for step in ${STEPS:-1 2 3}; do
  case $step in
  1)
    ISLETUNE_WORKER=$SET/isletune-worker timeout -k 5 90 "$SET/test_gpu_kernels" \
      --gtest_filter='CudaEvaluatorGpu.*' >"$OUT/gpu-kernels.txt" 2>&1
    log "test_gpu_kernels rc=$? $(grep -E '^\[  (PASSED|FAILED)  \]' "$OUT/gpu-kernels.txt" | tr '\n' ' ')"
    ;;
  2)
    kernels=${KERNELS:-s4r35 o21u8 o21u4 o21u1 o12u8 o12u4 o12u1 o22t4 o22t16}
    TIME="$kernels" CHAINS="${CHAINS-}" NCU="" OUT="$OUT" timeout -k 5 200 bash "$here/stalls.sh" run "$DIR" \
      >"$OUT/stalls.txt" 2>&1
    log "timing rc=$?"
    # The fastest o* kernel of the second pass, profiled like s4r35 was.
    best=$(grep -E '^o[0-9a-z]+\.cu ' "$OUT/stalls.txt" | tail -8 | sort -k5 -g | tail -1 | cut -d. -f1)
    if [ -n "$best" ] && [ "${NCU_BEST:-1}" = 1 ]; then
      TIME="" NCU="$best" OUT="$OUT" timeout -k 5 120 bash "$here/stalls.sh" run "$DIR" \
        >>"$OUT/stalls.txt" 2>&1
      log "ncu $best rc=$?"
    fi
    ;;
  3)
    NCU=1 GPU=H200 bash bench/issue48/pc_star_device.sh >"$OUT/pc_star.txt" 2>&1
    log "pc_star rc=$?"
    ;;
  esac
done

#!/usr/bin/env bash
# Racing a kernel's timing (evaluator.race_factor) on one GPU in one device call, with host
# binaries built elsewhere (BIN, default out/bin; LD_LIBRARY_PATH as they need): the GPU test
# of racing, then each stencil's 60-s user config (bench/pipeline_busy.py) without racing and
# with FACTOR, one after the other on the same GPU. Rows, reports and the worker logs go to
# $OUT.
#   BIN=out/bin [BASE="S..."] bench/race_device.sh [FACTOR] [STENCIL...]
# (defaults 1.5; star3d2r lap3d19 star2d1r; BASE: the stencils also run without racing, default
# all of them, "" none)
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
BIN=${BIN:-out/bin}
factor=${1:-1.5}
shift 2>/dev/null
stencils=("$@")
[ ${#stencils[@]} -gt 0 ] || stencils=(star3d2r lap3d19 star2d1r)
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee $OUT/gpu.txt
if [ -x "$BIN/test_gpu_kernels" ]; then
  "$BIN/test_gpu_kernels" --gtest_filter='*Race*' 2>&1 | tail -8 | tee $OUT/gpu-test.txt
fi
read -r -a base <<< "${BASE-${stencils[*]}}"
export PYTHONUNBUFFERED=1
run() {  # FACTOR STENCIL...
  local f=$1
  shift
  [ $# -gt 0 ] || return 0
  bench/pipeline_busy.py --bin "$BIN" --budget-s 60 --threads 16 --race-factor "$f" \
    --work /tmp/race --csv $OUT/race.csv --only "$@" | tee -a $OUT/race.txt
}
run 0 "${base[@]}"
run "$factor" "${stencils[@]}"
for r in /tmp/race/*/; do
  { echo "== $r"; "$BIN/isletune" report "$r"; } >> "$OUT/reports.txt" 2>&1
done
tar czf $OUT/race-traces.tar.gz -C /tmp/race .

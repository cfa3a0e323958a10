#!/usr/bin/env bash
# The pipeline study on one GPU (bench/pipeline_busy.py) in one device call: builds the CUDA
# targets, then runs the five user configs for BUDGET seconds each with the pipeline at
# PIPELINE (0: default), then, when BASELINE lists stencils, those again one generation at
# a time (ga.pipeline 1) on the same build. Rows, reports and logs go to $OUT.
#   bench/pipeline_device.sh [BUDGET] [PIPELINE] [BASELINE...]   (defaults 60, 0, none)
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
B=$PWD/build-device
budget=${1:-60}
pipeline=${2:-0}
shift 2 2>/dev/null || shift $#
cmake -S . -B $B -DISLETUNE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build $B -j"$(nproc)" --target isletune isletune-worker >$OUT/build.txt 2>&1 ||
  { grep -E "error" -A3 $OUT/build.txt | head -40; exit 1; }
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv |
  tee $OUT/nvidia-smi.csv
export PYTHONUNBUFFERED=1
# A short run first: a broken build costs seconds, not the study.
bench/pipeline_busy.py --bin $B/bin --budget-s 8 --threads 16 --pipeline "$pipeline" \
  --work runs-device/smoke --only star2d1r | tee $OUT/smoke.txt || {
  $B/bin/isletune report runs-device/smoke/star2d1r-p$pipeline 2>&1 | tail -30; exit 1; }
bench/pipeline_busy.py --bin $B/bin --budget-s "$budget" --threads 16 --pipeline "$pipeline" \
  --work runs-device/busy --csv $OUT/busy.csv | tee $OUT/busy.txt
if [ $# -gt 0 ]; then
  bench/pipeline_busy.py --bin $B/bin --budget-s "$budget" --threads 16 --pipeline 1 \
    --work runs-device/busy --csv $OUT/busy.csv --only "$@" | tee -a $OUT/busy.txt
fi
for r in runs-device/busy/*/; do
  { echo "== $r"; $B/bin/isletune report "$r"; } >> "$OUT/reports.txt" 2>&1
done
tar czf $OUT/busy-traces.tar.gz runs-device/busy

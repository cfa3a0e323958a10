#!/usr/bin/env bash
# Issue 44's configs on one GPU, this tree against its "before" (main 482d225), each pair on
# the same machine one after the other: for every STENCIL of bench/pipeline_busy.py's configs,
# a 60-s user config (one rank, 16 NVRTC threads, cold cubin cache) with SET's binaries, then
# with BASE's (482d225: no ga or evaluator keys; its report read by SET's isletune).
# Prebuilt binaries (release, stripped) travel in out/: SET=out/settle, BASE=out/base482
# (+ out/bin/lib for the shared libraries a bare machine lacks).
#   bash bench/issue44_pairs_device.sh [BUDGET] STENCIL...   (default 60; e.g. star2d1r box3d2r)
# Rows: $OUT/pairs.csv, log: $OUT/pairs.txt, traces: $OUT/pairs-traces.tar.gz. A pair starts
# only when DEADLINE_S (560) leaves room for both of its runs.
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
budget=${1:-60}
shift
SET=${SET:-$PWD/out/settle} BASE=${BASE:-$PWD/out/base482}
export LD_LIBRARY_PATH=$PWD/out/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv | tee "$OUT/nvidia-smi-pairs.csv"
t0=$(date +%s)
left() { echo $(( ${DEADLINE_S:-560} - ($(date +%s) - t0) )); }
for stencil in "$@"; do
  if [ "$(left)" -lt $(( 2 * budget + 40 )) ]; then
    echo "$stencil: skipped (deadline)" | tee -a "$OUT/pairs.txt"; continue
  fi
  ISLETUNE_WORKER=$SET/isletune-worker bench/pipeline_busy.py --bin "$SET" --budget-s "$budget" \
    --threads 16 --work /tmp/pairs --csv "$OUT/pairs.csv" --only "$stencil" 2>&1 | tee -a "$OUT/pairs.txt"
  ISLETUNE_WORKER=$BASE/isletune-worker bench/pipeline_busy.py --bin "$SET" --baseline-bin "$BASE" \
    --budget-s "$budget" --threads 16 --work /tmp/pairs --csv "$OUT/pairs.csv" --only "$stencil" \
    2>&1 | tee -a "$OUT/pairs.txt"
done
tar czf "$OUT/pairs-traces.tar.gz" -C /tmp pairs 2>/dev/null
echo "done at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/pairs.txt"

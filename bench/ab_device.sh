#!/usr/bin/env bash
# Two host builds of isletune against each other on one GPU in one device call: each stencil's
# 60-s user config (bench/pipeline_busy.py: one rank, 16 compile threads, a cold cubin cache and
# a HOME of its own per run) in the order A B B A, so neither build always runs first on a warm
# GPU. A and B are folders holding an `isletune` (the worker, ISLETUNE_WORKER, is shared:
# use this only where the two trees' workers are the same). Rows and reports go to $OUT.
#   A=out/bin B=out/b7b [SEEDS="1"] bench/ab_device.sh STENCIL...
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
: "${A:?A=folder of the first build}" "${B:?B=folder of the second build}"
read -r -a seeds <<< "${SEEDS:-1}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
export PYTHONUNBUFFERED=1
run() {  # LABEL BIN
  bench/pipeline_busy.py --bin "$2" --budget-s 60 --threads 16 --work "/tmp/ab-$1" \
    --seeds "${seeds[@]}" --csv "$OUT/ab-$1.csv" --only "${stencils[@]}" |
    sed "s/^/$1 /" | tee -a "$OUT/ab.txt"
}
stencils=("$@")
run A1 "$A"
run B1 "$B"
run B2 "$B"
run A2 "$A"
for r in /tmp/ab-*/*/; do
  [ -f "$r/trace.h5" ] || continue
  { echo "== $r"; "$A/isletune" report "$r"; } >>"$OUT/reports.txt" 2>&1
done
tar czf "$OUT/ab-traces.tar.gz" -C /tmp $(cd /tmp && ls -d ab-*)

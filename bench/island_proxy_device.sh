#!/usr/bin/env bash
# Issue 45 on one GPU: what each GPU of a four-island run is given to do. One rank runs as one
# island of four (bench/pipeline_busy.py --island-of 4: the 2 x 2 share of the population and
# its model picks, no ring), then as the one-GPU run it is compared with (the whole population),
# on the same configs, GPU and tree: GPU busy, compile threads busy, measurements and the best
# kernel of each, and each run's `isletune report` (isletune and its worker from BIN, shared
# libraries from BIN/../bin/lib when there). Files under $OUT: island4.csv, island4.txt,
# <run>.report.txt.
#   BIN=out/settle bash bench/island_proxy_device.sh [BUDGET_S] [CONFIG ...]   # 60 lap3d19 upwind2d7
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
BIN=${BIN:-build/bin}
budget=${1:-60}
shift || true
only=${*:-lap3d19 upwind2d7}
[ -d "$BIN/../bin/lib" ] && export LD_LIBRARY_PATH=$(cd "$BIN/../bin/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
n=$(echo $only | wc -w)
for island in "--island-of 4" ""; do
  timeout -k 5 $((n * (budget + 25))) python3 bench/pipeline_busy.py --bin "$BIN" --budget-s "$budget" \
    --threads "$(nproc)" --only $only $island --work runs/island-proxy --csv "$OUT/island4.csv"
done 2>&1 | tee "$OUT/island4.txt"
for d in runs/island-proxy/*/; do
  "$BIN/isletune" report "$d" >"$OUT/$(basename "$d").report.txt" 2>&1
done

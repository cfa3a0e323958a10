#!/usr/bin/env bash
# Issue 48: the producer/consumer prototype for 3-D high-order stars (bench/issue48/pc_star.cu)
# on one Hopper GPU. Builds it with nvcc, runs the naive and reference kernels and then every
# variant in its own process under a timeout (a fault or a hang costs one variant, not the
# run), each verified on 203x77x61 (odd NX: cp.async producer), 206x77x61 (TMA, ragged tiles)
# and 512^3, and timed on 512^3 with the copy roofline of the same process; optionally Nsight
# Compute on the fastest verified star3d4r variant. At most 4 files under $OUT:
#   pc_star.csv (one line per kernel and grid), pc_star.log (build and run log),
#   ptxas.txt (registers and spills per kernel), ncu-star3d4r.txt.
#   bash bench/issue48/pc_star_device.sh            # NCU=0 skips Nsight Compute
#   GPU=H200 bash bench/issue48/pc_star_device.sh   # does nothing unless the GPU's name has H200
# Finishes in about 2 minutes on one H200 (a deadline skips what is left after 150 s).
set -u
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
BIN=${BIN_DIR:-/tmp/pc_star_build}
mkdir -p "$BIN"
CSV=$OUT/pc_star.csv LOG=$OUT/pc_star.log
start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if [ -n "${GPU:-}" ] && [[ "$gpu" != *"$GPU"* ]]; then
  # The measurement this prototype is for needs that GPU (a device request may be served by
  # another kind): say so and leave the time to the rest of the call.
  echo "pc_star: not run on '$gpu' (GPU=$GPU asked for)" | tee "$OUT/pc_star.log"
  exit 0
fi
elapsed() { echo $(( $(date +%s) - start )); }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv >"$LOG" 2>&1
echo "== build ($NVCC)" >>"$LOG"
if ! "$NVCC" -O3 -arch=sm_90 -std=c++17 -Xptxas -v -o "$BIN/pc_star" "$here/pc_star.cu" \
    >"$OUT/ptxas.txt" 2>&1; then
  echo "build FAILED" | tee -a "$LOG"; tail -30 "$OUT/ptxas.txt"; exit 1
fi
echo "built in $(elapsed) s" | tee -a "$LOG"
grep -E "Compiling entry|registers|spill" "$OUT/ptxas.txt" | paste - - - | \
  sed -E "s/ptxas info +: //g" | grep pc_star | head -40 >>"$LOG"

"$BIN/pc_star" --header --only baseline --grids 203x77x61,512x512x512 >"$CSV" 2>>"$LOG"
echo "baseline rc=$? at $(elapsed) s" | tee -a "$LOG"
for v in $("$BIN/pc_star" --list); do
  if [ "$(elapsed)" -gt 150 ]; then
    echo "$v,,,,,,,,,,,,,,skipped_deadline" >>"$CSV"; continue
  fi
  timeout -k 5 40 "$BIN/pc_star" --only "$v" >>"$CSV" 2>>"$LOG"
  rc=$?
  # rc 0: verified; 3: a verification failed (its rows say which); else a fault or a timeout
  [ $rc -ne 0 ] && [ $rc -ne 3 ] && echo "$v,,,,,,,,,,,,,,process_rc_$rc" >>"$CSV"
  echo "$v rc=$rc at $(elapsed) s" >>"$LOG"
done
echo "variants done at $(elapsed) s" | tee -a "$LOG"
# Summary: 512^3 rows.
awk -F, 'NR == 1 || $4 == "512x512x512" || $15 ~ /FAIL|fault|rc_|launch/ \
  {printf "%-32s r%s %-9s %8s %7s %9s %s\n", $1, $2, $5, $6, $7, $8, $15}' "$CSV"

if [ "${NCU:-1}" = 1 ] && [ "$(elapsed)" -lt 140 ] && command -v ncu >/dev/null; then
  best=$(awk -F, '$2 == 4 && $4 == "512x512x512" && $15 == "ok" && $1 ~ /^pc/ {print $6, $1}' \
    "$CSV" | sort -rn | head -1 | cut -d' ' -f2)
  if [ -n "$best" ]; then
    echo "== ncu on $best" | tee -a "$LOG"
    timeout -k 5 $(( 170 - $(elapsed) )) ncu --clock-control none -k regex:pc_star -s 2 -c 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats \
      "$BIN/pc_star" --only "$best" --grids 512x512x512 --profile 4 >"$OUT/ncu-star3d4r.txt" 2>&1
    echo "ncu rc=$? at $(elapsed) s" | tee -a "$LOG"
    grep -E "pc_star|DRAM Throughput|Memory Throughput|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Eligible Warps|Issued Warp|Warp Cycles Per Issued|Block Limit" \
      "$OUT/ncu-star3d4r.txt" | head -30
  fi
fi
echo "done at $(elapsed) s" | tee -a "$LOG"

#!/usr/bin/env bash
# One device call for issue 48 on the target card: dsm_t2's star3d2r variants with the product's
# cases 32 and 41 beside them (dsm_device.sh), star3d4r's retimed kernels of fewer points a thread
# or fewer threads a block with Nsight Compute on the fastest (h200_call.sh step 2), and Nsight
# Compute on dsm_t2's persistent one-block tile. Carry out/settle out/n48 out/dsm_t2.
#   bash bench/issue48/h200_dsm_call.sh       # files under $OUT: dsm_*, families.*, stalls.txt,
#                                             # ncu-*.txt, dsm.log, h200.log
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
t0=$(date +%s)
FAMILIES=out/settle bash bench/issue48/dsm_device.sh out/dsm_t2 2 >"$OUT/dsm.log" 2>&1
echo "dsm_device done at $(($(date +%s) - t0)) s"
tail -3 "$OUT/dsm.log"
STEPS=2 bash bench/issue48/h200_call.sh >"$OUT/h200.log" 2>&1
echo "star3d4r kernels done at $(($(date +%s) - t0)) s"
timeout -k 5 100 ncu --clock-control none -k regex:t2 -s 1 -c 1 --section SpeedOfLight \
  --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section MemoryWorkloadAnalysis out/dsm_t2 512 512 512 2 "1x1 8x2 sb256 persist" 2 \
  >"$OUT/ncu-dsm-1x1-persist.txt" 2>&1
echo "ncu dsm rc=$? at $(($(date +%s) - t0)) s"
grep -E '^(o|s)[0-9a-z_]+\.cu ' "$OUT/stalls.txt" | tail -12

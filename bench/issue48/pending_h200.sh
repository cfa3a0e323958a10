#!/usr/bin/env bash
# Issue 48's pending H200 measurements in one device call (about 4 minutes), every output packed
# into $OUT/issue48.tgz beside $OUT/summary.txt (two files: a call returns only a few):
#   1. dsm_t2's star3d2r variants with the product's tdeg-2 case 32 and tdeg-1 case 41
#      (dsm_device.sh, FAMILIES=out/settle);
#   2. the retimed kernels K, K_k (level 1's kept values from the input), K_kl (and two
#      blocks an SM), K_n (the last level keeps nothing, boundary points unwritten) and K_nl (and
#      one block an SM more), K_b (K_n, with the boundary points stored when level 0 takes in
#      the input plane) of out/n48 (kept_call.sh), the POISON kernels once more with a NaN-filled
#      output (a NaN checksum: points left unwritten), Nsight Compute on s4r35_b and s4r35_nl;
#   3. Nsight Compute on dsm_t2's persistent one-block tile.
# Prepare on the VM, then carry out/settle out/n48 out/dsm_t2:
#   nvcc -O3 -arch=sm_90 -std=c++17 -o out/dsm_t2 bench/issue48/dsm_t2.cu
#   bench/issue48/stalls.sh prepare out/n48
#   bench/issue48/carry.sh out/settle
#   bash bench/issue48/pending_h200.sh
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
W=$(mktemp -d)
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
log() { echo "$* (at $(($(date +%s) - t0)) s)" | tee -a "$W/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$W/summary.txt"
TIME=${TIME-s4r35 s4r35_k s4r35_n s4r35_b s4r35_nl o22t4 o22t4_b o22t4_nl s3r36 s3r36_b s2r28 \
  s2r28_k s2r28_b s2r28_nl} \
  POISON=${POISON-s4r35 s4r35_n s4r35_b o22t4_b s3r36_b s2r28_b} OUT=$W \
  NCU="${NCU-s4r35_b s4r35_nl}" TIMING_S=310 timeout -k 5 330 bash "$here/kept_call.sh" >"$W/kept.log" 2>&1
log "kept_call rc=$?"
grep -E '\.cu ' "$W/timing.txt" >>"$W/summary.txt"
OUT=$W FAMILIES=out/settle timeout -k 5 170 bash "$here/dsm_device.sh" out/dsm_t2 2 >"$W/dsm.log" 2>&1
log "dsm_device rc=$?"
grep -E 'persist|^1x1 8x2 sb256 ' "$W/dsm_512_r2.txt" | sed -E "s/ +regs.*bad\)//" >>"$W/summary.txt"
grep -E '^star3d2r' "$W/families.txt" | cut -c1-60 >>"$W/summary.txt"
timeout -k 5 70 ncu --clock-control none -k regex:t2 -s 1 -c 1 --section SpeedOfLight \
  --section Occupancy --section WarpStateStats --section SchedulerStats \
  out/dsm_t2 512 512 512 2 "1x1 8x2 sb256 persist" 2 >"$W/ncu-dsm-1x1-persist.txt" 2>&1
log "ncu dsm rc=$?"
cp "$W/summary.txt" "$OUT/summary.txt"
tar -C "$W" -czf "$OUT/issue48.tgz" .
cat "$OUT/summary.txt"

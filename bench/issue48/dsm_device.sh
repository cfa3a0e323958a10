#!/usr/bin/env bash
# One device call for bench/issue48/dsm_t2.cu (issue 48: star3dNr at tdeg 2, cluster neighbours
# signalling through st.async and their own mbarriers), for radius 2, 3 and 4: 202 x 150 x 97
# (every variant verified on partial clusters and stream blocks), then 512^3 (verified, then
# timed; the copy roofline of the same run). Files under $OUT: dsm_odd_r{2,3,4}.txt, dsm_512_r{2,3,4}.txt.
#   nvcc -O3 -arch=sm_90 -std=c++17 -o out/dsm_t2 bench/issue48/dsm_t2.cu   # on the VM
#   bash bench/issue48/dsm_device.sh [BINARY] [RADII]                        # out/dsm_t2, "2 3 4"
# FAMILIES=DIR (a folder holding isletune-bench-kernels, shared libraries in DIR/../bin/lib):
# the product's star3d2r tdeg-2 case 32 and tdeg-1 case 41 in the same call (families.txt).
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
bin=${1:-out/dsm_t2}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/dsm_gpu.txt"
for r in ${2:-2 3 4}; do
  timeout -k 5 40 "$bin" 202 150 97 3 "" "$r" >"$OUT/dsm_odd_r$r.txt" 2>&1
  cat "$OUT/dsm_odd_r$r.txt"
  reps=20
  [ "$r" != 2 ] && reps=10
  timeout -k 5 100 "$bin" 512 512 512 $reps "" "$r" >"$OUT/dsm_512_r$r.txt" 2>&1
  cat "$OUT/dsm_512_r$r.txt"
done
if [ -n "${FAMILIES:-}" ]; then
  [ -d "$FAMILIES/../bin/lib" ] && export LD_LIBRARY_PATH=$(cd "$FAMILIES/../bin/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  timeout -k 5 100 "$FAMILIES/isletune-bench-kernels" --families --stencils star3d2r --cases 32,41 \
    --csv "$OUT/families.csv" >"$OUT/families.txt" 2>&1
  tail -4 "$OUT/families.txt"
fi

#!/usr/bin/env bash
# One device call for issue 48 on host binaries built elsewhere (BIN: a folder holding
# isletune-bench-kernels, isletune-worker, test_gpu_families, test_gpu_kernels and, for the
# tuner, isletune): the GPU tests of the streaming family, the families benchmark on the 3-D
# high-order stars (naive, the hand-picked cases named in CASES, the copy roofline of the same
# run), optionally Nsight Compute on one case and the tuner (bench/tune_all.py, STENCILS comma-free:
# one stencil). Everything under $OUT.
#   BIN=DIR CASES=I,J,... [STENCILS=a,b] [PASSES=N] [NCU="STENCIL CASE"] \
#     [TUNE="STENCIL SECONDS"] [TESTS=0] [TEST_S=SECONDS] bench/device_issue48.sh
set -u
OUT=${OUT:-/tmp/isletune-out}
BIN=${BIN:?BIN: the folder of the prebuilt binaries}
STENCILS=${STENCILS:-star3d2r,star3d3r,star3d4r}
mkdir -p "$OUT"
chmod +x "$BIN"/* 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv | tee "$OUT/nvidia-smi.csv"
for pass in $(seq 1 "${PASSES:-1}"); do
  stdbuf -oL "$BIN/isletune-bench-kernels" --families --stencils "$STENCILS" --cases "$CASES" \
    --csv "$OUT/families-$pass.csv" 2>&1 | tee "$OUT/families-$pass.log"
done
if [ "${TESTS:-1}" = 1 ]; then
  # The test binaries start the worker at the path they were built with.
  worker=$(strings "$BIN/test_gpu_families" | grep -m1 '/isletune-worker$')
  worker=${worker:-/work/wt-48/build/bin/isletune-worker}
  mkdir -p "$(dirname "$worker")" && cp "$BIN/isletune-worker" "$worker"
  timeout "${TEST_S:-120}" "$BIN/test_gpu_families" > "$OUT/test_gpu_families.log" 2>&1
  echo "test_gpu_families rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|^\[       OK" "$OUT/test_gpu_families.log" | head -20
  timeout "${TEST_S:-120}" "$BIN/test_gpu_kernels" > "$OUT/test_gpu_kernels.log" 2>&1
  echo "test_gpu_kernels rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)" "$OUT/test_gpu_kernels.log" | head -10
fi
if [ -n "${NCU:-}" ]; then
  set -- $NCU
  timeout 150 ncu --clock-control none --target-processes all -k regex:isl_kernel -s 2 -c 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis \
    "$BIN/isletune-bench-kernels" --families --stencils "$1" --case "$2" \
    --csv "$OUT/ncu-$1-$2.csv" > "$OUT/ncu-$1-$2.txt" 2>&1
  grep -E "DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Ipc|Eligible Warps|Block Limit|Duration|L1/TEX Hit|L2 Cache Throughput|L1/TEX Cache Throughput" "$OUT/ncu-$1-$2.txt" | head -30
fi
if [ -n "${TUNE:-}" ]; then
  set -- $TUNE
  PYTHONUNBUFFERED=1 timeout $(($2 * 2 + 120)) python3 bench/tune_all.py --bin "$BIN" \
    --budget-s "$2" --stencils "$1" --out "$OUT/tune" --csv "$OUT/tune.csv" 2>&1 | tee "$OUT/tune.log"
fi

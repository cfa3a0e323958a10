#!/usr/bin/env bash
# One device call for kernel work: build the worker and the kernel benchmark, run the
# families benchmark (bench_kernels --families, the five anchors) and, with `ncu STENCIL CASE`,
# Nsight Compute on one hand-picked setting. Usage:
#   bench/device_families.sh [families ARGS...] [-- ncu STENCIL CASE [STENCIL CASE ...]]
# Logs and CSV under $OUT.
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
B=/tmp/isletune-build
cmake -S . -B $B -DISLETUNE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
cmake --build $B -j16 --target isletune-worker isletune-bench-kernels > "$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/nvidia-smi.csv"
args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
stdbuf -oL $B/bin/isletune-bench-kernels --families --csv "$OUT/families.csv" "${args[@]}" 2>&1 | tee "$OUT/families.log"
if [ "${1:-}" = ncu ]; then
  shift
  while [ $# -ge 2 ]; do
    st=$1; c=$2; shift 2
    timeout 150 ncu --clock-control none --target-processes all -k regex:isl_kernel -s 2 -c 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      $B/bin/isletune-bench-kernels --families --stencils "$st" --case "$c" --csv "$OUT/ncu-$st-$c.csv" \
      > "$OUT/ncu-$st-$c.txt" 2>&1
    grep -E "DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Ipc|Warp Cycles Per Issued|Block Limit|Duration|Memory Throughput|Dynamic Shared" "$OUT/ncu-$st-$c.txt" | head -30
  done
fi

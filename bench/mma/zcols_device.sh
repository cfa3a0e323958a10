#!/usr/bin/env bash
# Issue 47, the z-columns DMMA prototype for box3d3r on the GPU machine: builds
# bench/mma/zcols.cu (nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v), runs it (DMMA peaks, naive,
# every variant verified and timed on 512^3 and on 203x77x61), then, with NCU=1 (default), Nsight
# Compute on one verified 512^3 launch of the fastest verified variant: first the metrics below
# (DMMA pipe share, DRAM and L1/shared throughput, occupancy, stalls), then the WarpStateStats,
# MemoryWorkloadAnalysis and ComputeWorkloadAnalysis sections (raw page), appended.
# Usage: bash bench/mma/zcols_device.sh [source dir, default: this script's dir; zcols.cu includes
# ../../kernels/mma.cuh and ../harness/standalone.cuh relative to it]; writes 4 files
# to $OUT (default ./out-zcols): zcols.csv, run.log, build.log, ncu_best.csv. About 1-2 minutes.
# NCU_VARIANT=<tag> profiles that variant instead of the fastest.
set -uo pipefail
src=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
out=${OUT:-./out-zcols}
mkdir -p "$out"
build=$(mktemp -d)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)
log=$out/run.log
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  "$nvcc" --version | tail -2
} >"$log" 2>&1
t0=$(date +%s)
if ! "$nvcc" -O3 -arch=sm_90 -std=c++17 -Xptxas -v -o "$build/zcols" "$src/zcols.cu" \
  >"$out/build.log" 2>&1; then
  echo "build failed" >>"$log"
  tail -20 "$out/build.log"
  exit 1
fi
echo "build: $(($(date +%s) - t0)) s" >>"$log"
t1=$(date +%s)
timeout 100 "$build/zcols" "$out/zcols.csv" >>"$log" 2>&1
echo "zcols: rc $?, $(($(date +%s) - t1)) s" >>"$log"
cat "$log"

if [ "${NCU:-1}" = 1 ] && [ -n "$ncu" ] && [ -s "$out/zcols.csv" ]; then
  # Fastest verified DMMA variant on 512^3 (columns: name, params, grid, gpu, gcells_per_s, ...,
  # verified = 9th).
  best=${NCU_VARIANT:-$(awk -F, 'NR > 1 && $3 == "512x512x512" && $9 == "ok" && $1 != "naive" &&
    $5 + 0 > b { b = $5 + 0; n = $1 } END { print n }' "$out/zcols.csv")}
  if [ -n "$best" ]; then
    metrics=sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,gpu__time_duration.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio
    t2=$(date +%s)
    ZC_ONLY=$best ZC_NCU=1 ZC_GRIDS=big timeout 40 "$ncu" --clock-control none -k regex:zcols_step \
      -c 1 --csv --page raw --metrics "$metrics" --log-file "$build/ncu1.csv" "$build/zcols" \
      >/dev/null 2>>"$log"
    echo "ncu metrics $best: rc $?, $(($(date +%s) - t2)) s" | tee -a "$log"
    t2=$(date +%s)
    ZC_ONLY=$best ZC_NCU=1 ZC_GRIDS=big timeout 50 "$ncu" --clock-control none -k regex:zcols_step \
      -c 1 --csv --page raw --section WarpStateStats --section MemoryWorkloadAnalysis \
      --section ComputeWorkloadAnalysis --log-file "$build/ncu2.csv" "$build/zcols" \
      >/dev/null 2>>"$log"
    echo "ncu sections $best: rc $?, $(($(date +%s) - t2)) s" | tee -a "$log"
    cat "$build"/ncu1.csv "$build"/ncu2.csv >"$out/ncu_best.csv" 2>/dev/null
  fi
fi
rm -rf "$build"

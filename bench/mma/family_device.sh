#!/usr/bin/env bash
# One device call for the tensor-core family (issue 47), from binaries built on the development
# host (BIN, with the shared libraries the device lacks in BIN/lib): the GPU tests of the family
# (every variant verified on odd, tiny and even grids; the box stencils' every-OC tests), then
# the family benchmark's tensor-core cases against naive on the boxes (rows in $OUT/families.csv).
#   BIN=out/bin bash bench/mma/family_device.sh [tests|bench|all] [STENCILS]
#   BIN=out/bin bash bench/mma/family_device.sh ncu STENCIL CASE [STENCIL CASE ...]
# ncu: Nsight Compute on hand-picked case CASE of the family benchmark (bench_kernels.cpp's
# list: for a 3-D box of >= 25 points the tensor-core cases start at 70, for a 2-D one at 27):
# the DMMA pipe's share, DRAM and L1/shared throughput, occupancy, registers.
#   BIN=out/bin bash bench/mma/family_device.sh ncu-export RUNDIR [NAME]
# ncu-export: the same metrics on the exported standalone program of RUNDIR's best kernel (the
# family benchmark's worker dies under ncu; the exported program runs in one process).
#   BIN=out/bin bash bench/mma/family_device.sh export RUNDIR [NAME]
# export: `isletune export RUNDIR --best` to $OUT/NAME.cu and the run's trace to $OUT/NAME.h5;
# with nvcc on the machine the program is built and run (it verifies and times the kernel).
set -u
BIN=$(realpath "${BIN:-out/bin}")
OUT=${OUT:-/tmp/isletune-out}
what=${1:-all}
stencils=${2:-box3d2r,box3d3r,box3d4r,box2d4r,box2d2r}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The GPU tests start the worker from the build tree they were built in.
mkdir -p /work/main/build/bin && cp "$BIN/isletune-worker" /work/main/build/bin/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/nvidia-smi.csv"
if [ "$what" = tests ] || [ "$what" = all ]; then
  timeout 300 "$BIN/test_gpu_families" \
    --gtest_filter='FamiliesTensorCores.*:Typical/FamiliesOnEveryTypicalStencil.EveryOcVerifiesOnAnOddGrid/box*' \
    >"$OUT/test_gpu_families.txt" 2>&1
  echo "test_gpu_families rc=$?"
  grep -E "tensor cores|odd grid|FAILED|PASSED|Failure" "$OUT/test_gpu_families.txt" | head -60
fi
# What Nsight Compute reports for a kernel (the ncu and ncu-export modes).
METRICS=sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,gpu__time_duration.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio
if [ "$what" = ncu ]; then
  shift
  while [ $# -ge 2 ]; do
    st=$1; c=$2; shift 2
    timeout 150 ncu --clock-control none -k regex:isl_kernel -s 2 -c 1 --csv --page raw \
      --metrics "$METRICS" \
      "$BIN/isletune-bench-kernels" --families --stencils "$st" --case "$c" --csv "$OUT/ncu-bench-$st-$c.csv" \
      >"$OUT/ncu-$st-$c.csv" 2>"$OUT/ncu-$st-$c.err"
    echo "== ncu $st case $c rc=$?"; tail -3 "$OUT/ncu-$st-$c.csv"
  done
fi
if [ "$what" = ncu-export ]; then
  run=$2; name=${3:-best}
  "$BIN/isletune" export "$run" --best -o "$OUT/$name.cu" --overwrite || exit 1
  nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
  [ -n "$nvcc" ] || { echo "no nvcc on this machine"; exit 1; }
  "$nvcc" -arch=sm_90 -O3 -o "/tmp/$name" "$OUT/$name.cu" || exit 1
  # The program verifies first (reference steps), then times: profile one timed launch.
  timeout 200 ncu --clock-control none -k regex:isl_kernel -s 60 -c 1 --csv --page raw \
    --metrics "$METRICS" "/tmp/$name" >"$OUT/ncu-$name.csv" 2>"$OUT/ncu-$name.err"
  echo "== ncu $name rc=$?"; tail -3 "$OUT/ncu-$name.csv"
fi
if [ "$what" = export ]; then
  run=$2; name=${3:-best}
  "$BIN/isletune" export "$run" --best -o "$OUT/$name.cu" --overwrite && echo "exported $OUT/$name.cu"
  cp "$run/trace.h5" "$OUT/$name.h5"
  nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
  if [ -n "$nvcc" ]; then
    "$nvcc" -arch=sm_90 -O3 -o "/tmp/$name" "$OUT/$name.cu" && "/tmp/$name" | tee "$OUT/$name.txt"
  else
    echo "no nvcc on this machine: the exported program is not built here"
  fi
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  stdbuf -oL "$BIN/isletune-bench-kernels" --families --family mma --stencils "$stencils" \
    --csv "$OUT/families.csv" 2>&1 | tee "$OUT/families.log"
fi

#!/usr/bin/env bash
# One device call: build the CUDA targets, run the GPU tests and the kernel benchmark.
# Usage: bench/device_run.sh [tests] [bench ARGS...]   (logs under $OUT when set)
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
B=/tmp/isletune-build
cmake -S . -B $B -DISLETUNE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
cmake --build $B -j16 --target isletune-worker test_gpu_kernels isletune-bench-kernels > "$OUT/build.log" 2>&1 || { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/nvidia-smi.csv" 2>&1
cat "$OUT/nvidia-smi.csv"
if [ "${1:-}" = tests ]; then
  shift
  (cd $B/tests/gpu && timeout 400 ./test_gpu_kernels --gtest_brief=1 > "$OUT/gpu-tests.log" 2>&1; echo "gpu tests rc=$?" >> "$OUT/gpu-tests.log")
  grep -E "FAILED|Failure|Expected|Which is|kernel [0-9]|rc=|PASSED|SKIPPED \]" "$OUT/gpu-tests.log" | head -60
fi
if [ "${1:-}" = bench ]; then
  shift
  $B/bin/isletune-bench-kernels "$@" 2>&1 | tee "$OUT/bench.log"
fi

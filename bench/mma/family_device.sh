#!/usr/bin/env bash
# One device call for the tensor-core family (issue 47), from binaries built on the development
# host (BIN, with the shared libraries the device lacks in BIN/lib): the GPU tests of the family
# (every variant verified on odd, tiny and even grids; the box stencils' every-OC tests), then
# the family benchmark's tensor-core cases against naive on the boxes (rows in $OUT/families.csv).
#   BIN=out/bin bash bench/mma/family_device.sh [tests|bench|all] [STENCILS]
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
if [ "$what" = bench ] || [ "$what" = all ]; then
  stdbuf -oL "$BIN/isletune-bench-kernels" --families --family mma --stencils "$stencils" \
    --csv "$OUT/families.csv" 2>&1 | tee "$OUT/families.log"
fi

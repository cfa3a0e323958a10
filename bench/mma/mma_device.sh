#!/usr/bin/env bash
# Issue 47 prototype on the GPU machine: builds bench/mma/mma_stencil.cu once per stencil
# (nvcc -O3 -arch=sm_90, in parallel), measures the DMMA / DFMA peaks, then runs the naive
# reference and every DMMA variant on box2d2r, box2d4r (8192^2), box3d2r, box3d3r, box3d4r
# (512^3): verification (relative L2 vs the reference) and GCells/s per variant, one CSV.
# With NCU=1 (default) an ncu pass on the DMMA kernels (dmma_step and dmma2_step) of box3d2r and
# box2d4r follows (NCU_STENCILS, NCU_COUNT launches, NCU_TIMEOUT seconds each).
# STENCILS="box3d2r ..." limits the stencils (all five by default), PEAKS=0 skips the peak
# micro-benchmarks, NCU_SKIP=n skips the first n DMMA launches in the ncu pass.
# Usage: bash bench/mma/mma_device.sh [source dir, default: this script's dir; mma_stencil.cu
# includes ../../kernels/mma.cuh and ../harness/standalone.cuh relative to it]; writes to
# $OUT (default ./out-mma): mma.csv, run.log, build.log, ncu_*.
set -uo pipefail
src=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
out=${OUT:-./out-mma}
mkdir -p "$out"
build=$(mktemp -d)
names=(box2d2r box2d4r box3d2r box3d3r box3d4r)
run_names=(${STENCILS:-${names[*]}})
nvcc=${NVCC:-nvcc}
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  $nvcc --version | tail -2
} >"$out/run.log" 2>&1
t0=$(date +%s)
pids=()
"$nvcc" -O3 -arch=sm_90 -std=c++17 -DSTENCIL=-1 -o "$build/mma_peaks" "$src/mma_stencil.cu" \
  >"$build/build_peaks.log" 2>&1 &
pids+=($!)
for i in 0 1 2 3 4; do
  "$nvcc" -O3 -arch=sm_90 -std=c++17 -DSTENCIL=$i -Xptxas -v -o "$build/mma_${names[$i]}" \
    "$src/mma_stencil.cu" >"$build/build_${names[$i]}.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || echo "build failed (pid $p)" >>"$out/run.log"; done
cat "$build"/build_*.log >"$out/build.log"
echo "build: $(($(date +%s) - t0)) s" >>"$out/run.log"

csv=$out/mma.csv
echo "stencil,grid,gpu,variant,params,mma_eff,regs,spill_bytes,smem_bytes,threads,ms_per_step,gcells,useful_tflops,rel_l2,max_rel,nonfinite,verified,dfma_peak_gflops,dmma_peak_gflops" >"$csv"
[ "${PEAKS:-1}" = 1 ] && "$build/mma_peaks" "$csv" >>"$out/run.log" 2>&1
for n in "${run_names[@]}"; do
  [ -x "$build/mma_$n" ] || continue
  t1=$(date +%s)
  "$build/mma_$n" "$csv" >>"$out/run.log" 2>&1 || echo "$n: exit $?" >>"$out/run.log"
  echo "$n: $(($(date +%s) - t1)) s" >>"$out/run.log"
done
[ "${PEAKS:-1}" = 1 ] && "$build/mma_peaks" "$csv" >>"$out/run.log" 2>&1  # again, GPU warm
cat "$out/run.log"

# ncu: one verified launch of each DMMA variant (MMA_NCU=1), DMMA pipe share, stalls.
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  for n in ${NCU_STENCILS:-box3d2r box2d4r}; do
    MMA_NCU=1 timeout "${NCU_TIMEOUT:-50}" ncu --clock-control none -k regex:dmma \
      --launch-skip "${NCU_SKIP:-0}" -c "${NCU_COUNT:-8}" \
      --section ComputeWorkloadAnalysis --section SpeedOfLight --section Occupancy \
      --section MemoryWorkloadAnalysis --section WarpStateStats --page raw --csv \
      --log-file "$out/ncu_$n.csv" "$build/mma_$n" >/dev/null 2>>"$out/run.log"
    echo "ncu $n: rc $?" | tee -a "$out/run.log"
  done
fi
rm -rf "$build"

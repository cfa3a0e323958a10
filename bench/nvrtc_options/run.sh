#!/usr/bin/env bash
# NVRTC phase times and throughput with and without -minimal on the device's CPUs.
# Sources: src/*.cu beside this script, from `isletune-bench-kernels --stencils S --source FIELDS`
# (the study names them); on the GPU host: bench/nvrtc_options/run.sh
set -u
cd "$(dirname "$0")"
CU=${CUDA_HOME:-/usr/local/cuda}
g++ -O2 -std=c++17 nvrtc_time.cpp -I$CU/include -L$CU/lib64 -lnvrtc -o t -Wl,-rpath,$CU/lib64 || exit 1
g++ -O2 -std=c++17 nvrtc_cubin.cpp -I$CU/include -L$CU/lib64 -lnvrtc -o t2 -Wl,-rpath,$CU/lib64 || exit 1
B="--gpu-architecture=sm_90 -std=c++17"
same=0; diff=0
for f in src/*.cu; do
  ./t2 $f a.cubin $B; ./t2 $f b.cubin $B -minimal
  if cmp -s a.cubin b.cubin; then same=$((same+1)); else diff=$((diff+1)); echo "cubin differs: $f"; fi
done
echo "cubins identical: $same, different: $diff"
for o in "" "-minimal"; do
  rm -f ph.csv
  for r in 1 2 3; do for f in src/*.cu; do ./t $f $B $o --time=ph.csv >/dev/null; done; done
  echo "phases [$o]:"; awk -F', ' 'NR>0 && $3 ~ /^[0-9]/ {s[$2]+=$3; n[$2]++} END {for (k in s) printf "  %s mean %.1f ms (n=%d)\n", k, s[k]/n[k], n[k]}' ph.csv
done
for o in "" "-minimal" "" "-minimal"; do
  t0=$(date +%s.%N)
  for j in $(seq 1 16); do ( for f in src/*.cu; do ./t $f $B $o >/dev/null; done ) & done; wait
  t1=$(date +%s.%N)
  echo "16 parallel x 15 sources [$o]: $(awk -v a="$t0" -v b="$t1" "BEGIN {print b - a}") s"
done
nproc

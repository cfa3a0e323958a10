#!/usr/bin/env bash
# NVRTC time of the kernels of real settings before and after the plain one-step tail: the
# sources of SETTINGS (one canonical key a line) for each STENCIL from two builds' `isletune-
# bench-kernels --source`, compiled in the order A B B A (round 1: before first, round 2: after
# first; ROUNDS pairs of rounds), one compile at a time. Prints the means of the sources with a
# tail (tdeg > 1), of those without (the same source in both builds: the order's bias) and of
# all; per-compile rows go to $OUT/tail-ab.txt.
#   bench/nvrtc_options/tail_ab.sh BEFORE_BIN AFTER_BIN SETTINGS STENCIL...
set -u
before=$1 after=$2 keys=$3
shift 3
OUT=${OUT:-/tmp/tail-ab}
mkdir -p "$OUT/a" "$OUT/b"
CU=${CUDA_HOME:-/usr/local/cuda}
here=$(cd "$(dirname "$0")" && pwd)
g++ -O2 -std=c++17 "$here/nvrtc_cubin.cpp" -I$CU/include -L$CU/lib64 -lnvrtc -o "$OUT/t2" \
  -Wl,-rpath,$CU/lib64 || exit 1
n=0
for st in "$@"; do
  while read -r key; do
    [ -n "$key" ] || continue
    "$before/isletune-bench-kernels" --stencils "$st" --source "$key" > "$OUT/a/$n.cu" 2>/dev/null &&
      "$after/isletune-bench-kernels" --stencils "$st" --source "$key" > "$OUT/b/$n.cu" 2>/dev/null &&
      n=$((n + 1))
  done < "$keys"
done
B="--gpu-architecture=sm_90 -std=c++17"
ms() { local s e; s=$(date +%s%N); "$OUT/t2" "$1" "$OUT/x.cubin" $B >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
: > "$OUT/tail-ab.txt"
for r in $(seq 1 "${ROUNDS:-2}"); do
  for order in ab ba; do
    for i in $(seq 0 $((n - 1))); do
      if [ $order = ab ]; then a=$(ms "$OUT/a/$i.cu"); b=$(ms "$OUT/b/$i.cu");
      else b=$(ms "$OUT/b/$i.cu"); a=$(ms "$OUT/a/$i.cu"); fi
      echo "$i $a $b $(grep -c 'isl_tail' "$OUT/a/$i.cu")" >> "$OUT/tail-ab.txt"
    done
  done
done
awk '{a+=$2; b+=$3; if ($4 > 0) {at+=$2; bt+=$3; nt++} else {an+=$2; bn+=$3; nn++}}
  END {printf "%d compiles a build\n", NR;
       if (nt) printf "with a tail:    %d compiles, before %.0f ms, after %.0f ms (%+.1f %%)\n", nt, at/nt, bt/nt, 100*(bt-at)/at;
       if (nn) printf "without a tail: %d compiles, before %.0f ms, after %.0f ms (the same source)\n", nn, an/nn, bn/nn;
       printf "all:            before %.0f ms, after %.0f ms (%+.1f %%)\n", a/NR, b/NR, 100*(b-a)/a}' "$OUT/tail-ab.txt"

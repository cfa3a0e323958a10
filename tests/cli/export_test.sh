#!/usr/bin/env bash
# cli.export_leftover_steps, cli.export_compiles: `isletune export --best` of a kernel of 6 steps per launch (the H100
# star2d2r dataset's fastest, tdeg 6) writes a program that times a multiple of 6 steps by
# default, holds the same kernel at depths 2..5 for leftover steps, and compiles with nvcc
# (no GPU is needed to compile; cli.export_compiles, exit 77 = skipped without nvcc).
# MODE text: only the checks of the text (every build); nvcc: also the compile.
# Usage: export_test.sh text|nvcc ISLETUNE SOURCE_DIR WORK_DIR
set -euo pipefail
mode=$1 isletune=$2 source=$3 work=$4
nvcc=$(command -v nvcc || true)
[[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ $mode == nvcc && -z $nvcc ]]; then
  echo "nvcc not found (PATH, /usr/local/cuda/bin): skipped"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
cu=$work/best.cu
"$isletune" export "$source/tests/data/h100-full-star2d2r-2048.h5" --best -o "$cu" >/dev/null

fail() { echo "$cu: $*" >&2; exit 1; }
grep -q '^#define ISL_S 6$' "$cu" || fail "not the tdeg-6 kernel"
steps=$(sed -n 's/^#define ISL_STEPS \([0-9]*\)$/\1/p' "$cu")
((steps >= 100 && steps % 6 == 0)) || fail "default steps $steps: not a multiple of 6 from 100"
for depth in 2 3 4 5; do
  grep -q "void __launch_bounds__([0-9]*, IslRest$depth::MIN_BLOCKS)" "$cu" ||
    fail "no kernel entry of depth $depth"
  grep -q "isl_rest$depth(const double" "$cu" || fail "no isl_rest$depth entry"
  grep -q "^    case $depth:$" "$cu" || fail "depth $depth not launched"
done
if [[ $mode == text ]]; then
  echo "exported tdeg-6 kernel: $steps default steps, leftover depths 2-5"
  exit 0
fi
"$nvcc" -arch=sm_90 -O3 -o "$work/best" "$cu" 2>"$work/nvcc.log" || { cat "$work/nvcc.log" >&2; exit 1; }
echo "exported tdeg-6 kernel: $steps default steps, leftover depths 2-5, compiled with $nvcc"

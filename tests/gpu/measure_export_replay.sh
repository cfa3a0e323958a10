#!/usr/bin/env bash
# unit.cli.MeasureThenExportReplay: `isletune measure` records a dataset from the replay
# backend (no GPU needed), `isletune export` turns its best setting into a standalone .cu,
# and nvcc (when present) compiles that file. Usage: measure_export_replay.sh ISLETUNE SRC_DIR
set -euo pipefail
isletune=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e "s|@DATASET@|$src/tests/data/synthetic-star2d1r.h5|" -e 's|^replay:|evaluator:\n  backend: replay|' \
  -e '/^ga:/,$d' "$src/tests/analysis/replay-star2d1r.yaml" > "$work/replay.yaml"
"$isletune" measure "$work/replay.yaml" --random 40 -o "$work/ds.h5" --batch 16 | tee "$work/measure.log"
grep -q "wrote $work/ds.h5: 40 evaluations" "$work/measure.log"
"$isletune" export "$work/ds.h5" --best -o "$work/best.cu"
grep -q 'extern "C" __global__ void __launch_bounds__' "$work/best.cu"
grep -q 'isl_reference_step' "$work/best.cu"
grep -q 'int main' "$work/best.cu"
# Bad input is one sentence and a non-zero exit code.
if "$isletune" export "$work/missing.h5" --best -o "$work/x.cu" 2> "$work/err.txt"; then exit 1; fi
test "$(wc -l < "$work/err.txt")" -eq 1
if "$isletune" measure "$work/replay.yaml" -o "$work/x.h5" 2> "$work/err.txt"; then exit 1; fi
grep -q "exactly one of --random N and --exhaustive" "$work/err.txt"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ]; then
  "$nvcc" -arch=sm_90 -O3 -o "$work/best" "$work/best.cu"
  test -x "$work/best"
fi
echo "measure -> export -> nvcc: passed"

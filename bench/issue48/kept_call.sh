#!/usr/bin/env bash
# One device call (issue 48): the retimed streaming kernels with level 1's kept values read from
# the input instead of held in registers (kernels/streaming.cuh, step B), timed standalone against
# the kernels of the tree before (bench/issue48/stalls.sh run on DIR, default out/n48: the *_k
# sources are this tree's, *_kl the same with two blocks an SM forced), then the GPU family tests
# of this tree (SET, default out/settle: test_gpu_families and isletune-worker).
#   bash bench/issue48/kept_call.sh     # files under $OUT: timing.txt, families.txt, ncu-*.txt
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
SET=${SET:-$PWD/out/settle} DIR=${DIR:-$PWD/out/n48}
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
TIME=${TIME-s4r35 s4r35_k s4r35_kl o22t4 o22t4_k o22t16_k s3r36 s3r36_k s3r36_kl s2r28 s2r28_k s2r28_kl} \
  CHAINS="" NCU=${NCU-} OUT="$OUT" timeout -k 5 ${TIMING_S:-240} bash "$here/stalls.sh" run "$DIR" \
  >"$OUT/timing.txt" 2>&1
echo "timing rc=$? at $(($(date +%s) - t0)) s"
grep -E '\.cu ' "$OUT/timing.txt"
if [ "${FAMILIES:-1}" = 1 ]; then
  ISLETUNE_WORKER=$SET/isletune-worker timeout -k 5 ${FAMILIES_S:-320} "$SET/test_gpu_families" \
    --gtest_filter="${FILTER:-*}" >"$OUT/families.txt" 2>&1
  echo "test_gpu_families rc=$? at $(($(date +%s) - t0)) s"
  grep -E '^\[  (PASSED|FAILED)  \]|FAILED|tests ran' "$OUT/families.txt" | tail -8
fi

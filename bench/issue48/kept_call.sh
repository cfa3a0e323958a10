#!/usr/bin/env bash
# One device call (issue 48): the retimed streaming kernels with level 1's kept values read from
# the input instead of held in registers (K_k, bench/issue48/kept.py), and the same with two
# blocks an SM forced (K_kl), timed standalone against the generated kernels K (stalls.sh run on
# DIR, default out/n48, made by `bench/issue48/stalls.sh prepare out/n48`; equal checksums show
# equal results).
#   bash bench/issue48/kept_call.sh     # files under $OUT: timing.txt, ncu-*.txt (NCU=...)
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
DIR=${DIR:-$PWD/out/n48}
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
TIME=${TIME-s4r35 s4r35_k s4r35_kl o22t4 o22t4_k s3r36 s3r36_k s3r36_kl s2r28 s2r28_k s2r28_kl} \
  CHAINS="" NCU=${NCU-} OUT="$OUT" timeout -k 5 ${TIMING_S:-240} bash "$here/stalls.sh" run "$DIR" \
  >"$OUT/timing.txt" 2>&1
echo "timing rc=$? at $(($(date +%s) - t0)) s"
grep -E '\.cu ' "$OUT/timing.txt"

#!/usr/bin/env bash
# One device call (issue 48), about 3 minutes on an H100, 6 on an H200: boundary points at take-in
# (branch boundary-at-input) after the first H100 call found it slower
# (docs/studies/2026-12-07-boundary-points-at-take-in.md, "On an H100"):
#   1. the families benchmark, main (out/settle) against the branch (out/settle_bin), alternating,
#      star3d2r-4r on the hand-picked retimed cases (bin_call.sh, no GPU tests);
#   2. the standalone kernels K, K_b (predicated stores on every point and plane) and K_b4 (the
#      same stores behind a branch only threads holding a boundary point take) of s4r35, o22t4
#      (star3d4r, 128 threads: three blocks an SM with BIN) and s2r28, two passes, then the K_b4
#      kernels once more into a NaN-filled output (kept_call.sh);
#   3. on an H200 only: dsm_t2's star3d2r variants with the product's cases 32 and 41.
# Carry out/settle (main's stripped binaries), out/settle_bin (the branch's) and out/n48
# (bench/issue48/stalls.sh prepare out/n48); add out/dsm_t2 for part 3. Files under $OUT:
# summary.txt and b4.tgz.
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "$gpu" >"$W/summary.txt"
OUT=$W/fam FAM_S=${FAM_S:-20} GPU_S=1 bash "$here/bin_call.sh" >"$W/bin.log" 2>&1
mkdir -p "$W/fam/x" && tar -C "$W/fam/x" -xzf "$W/fam/bin.tgz"
for f in "$W"/fam/x/fam-*.txt; do
  echo "== $(basename "$f") (GCells/s, registers)" >>"$W/summary.txt"
  awk '/^star3d[234]r/ && $4 == 1 && $3 == "streaming" {printf "%s %s %s |", $1, $5, $10}' "$f" >>"$W/summary.txt"
  echo >>"$W/summary.txt"
done
OUT=$W TIME=${TIME-s4r35 s4r35_b s4r35_b4 o22t4 o22t4_b o22t4_b4 s2r28 s2r28_b s2r28_b4} \
  POISON=${POISON-s4r35_b4 o22t4_b4 s2r28_b4} NCU="" TIMING_S=${TIMING_S:-150} \
  bash "$here/kept_call.sh" >"$W/kept.log" 2>&1
grep -E '\.cu ' "$W/timing.txt" >>"$W/summary.txt"
case "$gpu" in
*H200*)
  mkdir -p "$W/dsm"
  OUT=$W/dsm FAMILIES=out/settle timeout -k 5 170 bash "$here/dsm_device.sh" out/dsm_t2 2 >"$W/dsm.log" 2>&1
  grep -E 'persist|^1x1 8x2 sb256 ' "$W/dsm/dsm_512_r2.txt" | sed -E "s/ +regs.*bad\)//" >>"$W/summary.txt"
  grep -E '^star3d2r' "$W/dsm/families.txt" | cut -c1-60 >>"$W/summary.txt"
  ;;
esac
cp "$W/summary.txt" "$OUT/summary.txt"
rm -rf "$W/fam/x"
tar -C "$W" -czf "$OUT/b4.tgz" .
cat "$OUT/summary.txt"

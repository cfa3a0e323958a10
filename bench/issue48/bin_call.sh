#!/usr/bin/env bash
# One device call (issue 48): the product's retimed streaming kernels with their boundary points
# stored at take-in (kernels/streaming.cuh, BIN; branch boundary-at-input) against the same
# settings without (main), in the families benchmark (verified, then timed), alternating trees,
# for star3d2r-4r on the retimed hand-picked cases (tdeg 1: 28, 34-36, 41; tdeg 2 and 4: 8, 19,
# 21); then the GPU family tests of the branch (every family and tdeg, verified against the
# reference with NaN-poisoned outputs, so an unwritten boundary point fails).
# Carry out/settle (main) and out/settle_bin (the branch), both made by bench/issue48/carry.sh
# (whose stamps this prints). Everything is packed into $OUT/bin.tgz.
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
W=$(mktemp -d)
t0=$(date +%s)
log() { echo "$* (at $(($(date +%s) - t0)) s)" | tee -a "$W/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$W/summary.txt"
for tree in settle settle_bin; do echo "$tree: $(tr '\n' ' ' <out/$tree/PROVENANCE 2>/dev/null || echo no PROVENANCE, bench/issue48/carry.sh)"; done | tee -a "$W/summary.txt"
for tree in settle settle_bin settle settle_bin; do
  [ $(($(date +%s) - t0)) -gt ${FAM_S:-150} ] && break
  n=$(ls "$W" | grep -c "^fam-$tree")
  timeout -k 5 100 out/$tree/isletune-bench-kernels --families --stencils star3d2r,star3d3r,star3d4r \
    --cases ${CASES:-28,34,35,36,41,8,19,21} --csv "$W/fam-$tree-$n.csv" >"$W/fam-$tree-$n.txt" 2>&1
  log "families $tree rc=$?"
done
for f in "$W"/fam-*.txt; do
  echo "== $(basename "$f")" >>"$W/summary.txt"
  grep -E '^star3d' "$f" | cut -c1-75 >>"$W/summary.txt"
done
ISLETUNE_WORKER=out/settle_bin/isletune-worker timeout -k 5 ${GPU_S:-300} \
  out/settle_bin/test_gpu_families >"$W/gpu_families.txt" 2>&1
log "test_gpu_families (branch) rc=$?"
tail -4 "$W/gpu_families.txt" >>"$W/summary.txt"
cp "$W/summary.txt" "$OUT/summary.txt"
tar -C "$W" -czf "$OUT/bin.tgz" .
cat "$OUT/summary.txt"

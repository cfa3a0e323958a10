#!/usr/bin/env bash
# The binaries a device call carries, stripped, with where they come from: DIR/PROVENANCE holds
# the tree's commit, whether its work tree had uncommitted changes, and the time. The call
# scripts print it into their summary, so a call cannot compare a stale or experimental build
# under another tree's name (the first H100 call of docs/studies/2026-12-07-boundary-points-at-take-in.md did).
#   bench/issue48/carry.sh DIR [TREE]     # TREE: a checkout with its build in TREE/build (default .)
set -eu
dir=$1 tree=${2:-.}
mkdir -p "$dir"
for b in bin/isletune bin/isletune-worker bin/isletune-bench-kernels tests/gpu/test_gpu_families; do
  strip -o "$dir/$(basename "$b")" "$tree/build/$b"
done
{
  echo "commit $(git -C "$tree" rev-parse --short HEAD) ($(git -C "$tree" rev-parse --abbrev-ref HEAD))"
  echo "uncommitted changes: $(git -C "$tree" status --porcelain --untracked-files=no | wc -l) files"
  echo "built $(date -u -r "$tree/build/bin/isletune-bench-kernels" +%FT%TZ), stamped $(date -u +%FT%TZ)"
} >"$dir/PROVENANCE"
cat "$dir/PROVENANCE"

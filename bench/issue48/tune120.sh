#!/usr/bin/env bash
# Issue 48's measure: the tuner as a user runs it (one rank, the whole default space, a cold
# cubin cache, 16 NVRTC threads) for BUDGET seconds on 3-D high-order stars at 512³ (a typical
# 2-D stencil, *2d*, at 8192²; issue 47 runs the boxes with it), and on a
# user's 25-point 8th-order Laplacian (star3d4r's offsets, the symmetric finite-difference
# weights, as u + 0.05 L(u)). `isletune report` prints the best kernel against the naive kernel
# and the copy roofline of the same run.
#   BIN=build/bin bench/issue48/tune120.sh [BUDGET] [STENCIL...]   (default 120; star3d3r star3d4r lap25)
set -u
BIN=${BIN:-build/bin}
OUT=${OUT:-/tmp/isletune-out}
budget=${1:-120}
shift $(( $# > 0 ? 1 : 0 ))
stencils=${*:-star3d3r star3d4r lap25}
work=${WORK:-runs/issue48}
mkdir -p "$work" "$OUT"
lap25() {  # "points" of the config: [dx, dy, dz, weight]
  python3 - <<'PY'
c = [-205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560]
pts = [[0, 0, 0, 1.0 + 0.05 * 3 * c[0]]]
for k in range(1, 5):
    for s in (-k, k):
        pts += [[s, 0, 0, 0.05 * c[k]], [0, s, 0, 0.05 * c[k]], [0, 0, s, 0.05 * c[k]]]
print(pts)
PY
}
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
for s in $stencils; do
  if [ "$s" = lap25 ]; then st="{name: lap25, dims: 3, points: $(lap25)}"; else st=$s; fi
  grid="[512, 512, 512]"; case $s in *2d*) grid="[8192, 8192]" ;; esac
  cat >"$work/$s.yaml" <<YAML
stencil: $st
grid: $grid
budget: {time_budget_s: $budget}
evaluator: {backend: cuda, compile_threads: 16}
YAML
  ISLETUNE_CACHE_DIR=$(mktemp -d) mpirun -q -np 1 --bind-to none "${root[@]}" \
    "$BIN/isletune" run "$work/$s.yaml" --out "$work/$s" --overwrite >"$OUT/run-$s.txt" 2>&1
  echo "== $s rc=$?"
  "$BIN/isletune" report "$work/$s" >"$OUT/report-$s.txt" 2>&1
  grep -E "^best:|vs naive|^result:|GPU busy" -A1 "$OUT/report-$s.txt" | head -8
done

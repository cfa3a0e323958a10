#!/usr/bin/env bash
# Draws the strategy comparison of docs/analysis-compare.png: island-ga, random, sampled-random and global-ga on
# the real H200 star2d1r replay dataset (analysis/examples/compare-strategies.yaml), five
# seeds each, 4 ranks per run, equal evaluator-clock budgets; then
# `isletune-analyze compare --by strategy --baseline random`. Replay needs no GPU.
#
#   analysis/examples/compare-strategies.sh [ISLETUNE_BINARY] [RUNS_DIR] [FIGURE]
#
# Defaults: build/bin/isletune, /tmp/isletune-compare-strategies, RUNS_DIR/compare.png:
# the committed figure is replaced only when asked for by name, e.g.
#   analysis/examples/compare-strategies.sh build/bin/isletune /tmp/cmp docs/analysis-compare.png
# The comparison table is printed and also written as RUNS_DIR/compare.csv. Every run is
# compared at the common time budget (20 s of evaluator clock): measurements a run made
# after its budget, in the generation or two before the collective stop, are left out.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
isletune=${1:-$root/build/bin/isletune}
runs=${2:-/tmp/isletune-compare-strategies}
figure=${3:-$runs/compare.png}
config=$root/analysis/examples/compare-strategies.yaml
dataset=$root/tests/data/h200-star2d1r.h5
ranks=4
seeds="1 2 3 4 5"
strategies="island-ga random sampled-random global-ga"

mpirun=(mpirun -q --oversubscribe)
if [ "$(id -u)" = 0 ]; then mpirun+=(--allow-run-as-root); fi

mkdir -p "$runs"
dirs=()
for strategy in $strategies; do
  # The config with this strategy and the dataset as an absolute path (it is resolved
  # relative to the config file, which now lives in RUNS_DIR).
  sed -e "s|^strategy: .*|strategy: $strategy|" \
      -e "s|^  dataset: .*|  dataset: $dataset|" "$config" >"$runs/$strategy.yaml"
  for seed in $seeds; do
    out=$runs/$strategy-seed$seed
    rm -rf "$out"
    "${mpirun[@]}" -np $ranks "$isletune" run "$runs/$strategy.yaml" --out "$out" \
      --seed "$seed" >"$out.log"
    tail -n 3 "$out.log" | head -n 1
    dirs+=("$out")
  done
done

analyze=$root/analysis/isletune-analyze
"$analyze" compare --by strategy --baseline random -o "$figure" "${dirs[@]}"
"$analyze" compare --csv --no-plot --by strategy --baseline random "${dirs[@]}" >"$runs/compare.csv"
"$analyze" compare --no-plot --by strategy --baseline random "${dirs[@]}" | tail -n 8
echo "figure: $figure"

#!/usr/bin/env bash
# The issue-46 golden data: what the family refactor must keep (docs/decisions.md#family-ocs).
#   golden.sh record|check ISLETUNE_BIN [space|replay|all]
# space:  `isletune space --json` of the 24 typical stencils at 8192^2 (2-D) / 512^3 (3-D):
#         the OC table (id, name, valid settings, distinct kernels, exact) and the size, one
#         line per stencil in space.golden (jq-free: python formats them).
# replay: `isletune run` on the replay backend of every tests/data/*.h5 dataset for seeds
#         1, 2 and 3 (the dataset's own problem, 12 generations, one rank): a digest of the
#         trajectory (trace_digest.py) per run in replay.golden.
# record writes the files beside this script; check compares and prints every difference.
# Both files were recorded on main 52505bc, before the family refactor. The one difference
# since, on purpose, is OC 17 (tile+cyclic+tb): its settings built the kernels of OC 9
# (tile+block+tb), 0 distinct kernels, so OC 17 is no longer valid (compare_space.py). The
# replay trajectories are unchanged by it: replay samples the dataset's recorded settings,
# loaded canonical, and OC 17 never held a canonical one. space.golden was re-recorded for
# issue 48 (docs/decisions.md#centre-queue): at tdeg 1 without retiming a star builds the
# centre-queue kernel, whose 2r + 1 doubles a point admit more settings in the stars' OCs
# stream, stream+prefetch, stream+block(+prefetch) and stream+cyclic(+prefetch) (the file no
# longer lists OC 17). replay.golden was re-recorded with it: the trajectories of the star
# datasets (star2d2r, star3d1r, star3d2r; 9 of 24 runs) changed, since the sampler and the
# roofline see those OCs' new settings and the centre-queue kernel's plan (its shared planes).
# Re-recorded again when an island's queue was first topped up after each settled generation
# (now at the start of each Pipeline::take, which gives the same digests): of the datasets whose recordings name their compile threads and so run the
# pipeline (h100-full-star3d2r-512, h100-full-box2d2r-8192), star3d2r seed 1 took another
# trajectory (the same counts).
# space.golden re-recorded for issue 47: the tensor-core family's OC 49 (mma) holds 32 settings
# (32 kernels) of each box of radius 1-2 in 3-D and 2-4 in 2-D, 16 of box3d3r and box3d4r
# (coefficients in registers do not fit), none of the stars, crosses and box2d1r (too little of
# their window useful); every other line is unchanged. replay.golden is unchanged: trace_digest.py
# hashes the appended parameters' columns only where they leave their neutral value.
# replay.golden re-recorded for issue 44's replay criterion (DepthRamp: the queue deepens with
# what the island knows; a measurement of a queued proposal takes its cell while generations
# overlap): the 6 runs of the two pipelined datasets (h100-full-box2d2r-8192,
# h100-full-star3d2r-512) take other trajectories; the 18 others are unchanged.
# replay.golden re-recorded when the DepthRamp came to count only settled generations'
# measurements (docs/studies/2026-12-06-ramp-on-settled-generations.md): the same 6 runs
# changed (box2d2r-8192 seed 2 now stops on the MCR vote at generation 6), the 18 others not.
# replay.golden re-recorded when evaluator.race_factor's default became 1.5 (racing while
# another kernel waits, docs/decisions.md#race-factor): the same 6 runs changed (raced costs
# move the simulated clock; star3d2r seed 3 measures 151 where it measured 152), the 18 others
# not (their recordings name no compile threads: nothing waits, nothing is raced).
# space.golden re-recorded when a kernel of tdeg > 1 came to end on the plain one-step tail
# (kernels/one_step.cuh) and a streaming setting of tdeg > 1 to be canonical with the plane
# unroll its main kernel reads: the streaming OCs with fused steps of box2d3r, box2d4r and the
# 3-D boxes (6 lines) count fewer distinct kernels (box3d2r 1,248,541 -> 1,226,927); valid settings and
# every other line are unchanged, and so is replay.golden.
# replay.golden re-recorded when evaluator.settle_spread's default became 0.01 (a kernel whose
# first 5 runs agree within 1 % is timed by them alone while another waits, src/eval/race.hpp):
# the 6 runs of the two pipelined datasets changed (settled costs move the simulated clock and
# their answers are the first runs' median), the 18 others not (nothing waits in them).
set -euo pipefail
mode=$1
bin=$(realpath "$2")
what=${3:-all}
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../data" && pwd)
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

space_lines() {
  local shape dims order name grid
  for shape in star box cross; do
    for dims in 2 3; do
      for order in 1 2 3 4; do
        name=${shape}${dims}d${order}r
        if [[ $dims == 2 ]]; then grid="[8192, 8192]"; else grid="[512, 512, 512]"; fi
        printf 'stencil: %s\ngrid: %s\nseed: 1\n' "$name" "$grid" >"$work/$name.yaml"
        "$bin" space "$work/$name.yaml" --json >"$work/$name.json"
        $py - "$name" "$work/$name.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[2]))
ocs = " ".join(f"{o['oc']}:{o['name']}:{o['valid_settings']:.0f}:{o['distinct_kernels']:.0f}"
               f"{'' if o['exact'] else '~'}" for o in doc["ocs"])
print(f"{sys.argv[1]} size={doc['size']['valid_settings']:.0f}/"
      f"{doc['size']['distinct_kernels']:.0f} {ocs}")
PY
      done
    done
  done
}

replay_lines() {
  local ds name seed
  for ds in "$data"/*.h5; do
    name=$(basename "$ds" .h5)
    for seed in 1 2 3; do
      h5dump -a /config/yaml "$ds" | $py -c '
import re, sys
text = sys.stdin.read()
body = text[text.index("(0): \"") + 6:text.rindex("\"")]
keep = [l.strip() for l in body.splitlines()
        if re.match(r"\s*(stencil|grid|steps|warmup|repeats):", l)]
print("\n".join(keep))' >"$work/$name.yaml"
      printf 'evaluator: {backend: replay, dataset: %s}\nbudget: {max_generations: 12}\nseed: %s\n' \
        "$ds" "$seed" >>"$work/$name.yaml"
      (cd "$work" && "$bin" run "$name.yaml" --out "$name-$seed" >"$name-$seed.log" 2>&1) ||
        { echo "run $name seed $seed failed: $(tail -5 "$work/$name-$seed.log")" >&2; exit 1; }
      echo "$name seed=$seed $($py "$here/trace_digest.py" "$work/$name-$seed/trace.h5")"
    done
  done
}

status=0
for part in space replay; do
  [[ $what == all || $what == "$part" ]] || continue
  "${part}_lines" >"$work/$part.now"
  if [[ $mode == record ]]; then
    cp "$work/$part.now" "$here/$part.golden"
    echo "recorded $here/$part.golden ($(wc -l <"$here/$part.golden") lines)"
  else
    if [[ $part == space ]]; then
      cmp=($py "$here/compare_space.py" "$here/space.golden" "$work/space.now")
    else
      cmp=(diff "$here/replay.golden" "$work/replay.now")
    fi
    if "${cmp[@]}"; then
      echo "$part: same as the golden data ($(wc -l <"$work/$part.now") lines)"
    else
      echo "$part: DIFFERS from the golden data" >&2
      status=1
    fi
  fi
done
exit $status

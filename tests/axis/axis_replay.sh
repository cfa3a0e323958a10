#!/usr/bin/env bash
# unit.axis.replay: parameters a family appends change nothing recorded without them, and a
# trace that holds them is refused by a build without them.
#   axis_replay.sh PROBE PROBE_APPENDED DATA   (the probe without and with tpl_px and tpl_on)
# 1. Every recorded dataset of tests/data replays the same in both builds: every evaluation row (generation, cell,
#    key, time, clock, flags), every generation's best and clock, and the best, for two seeds.
# 2. A dataset the appended build wrote (template settings with tpl_px and tpl_on away from
#    neutral) reads back in that build and is refused by the other in one sentence.
set -euo pipefail
prod=$1
axis=$2
data=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rows=0
for dataset in "$data"/*.h5; do
  dataset=$(basename "$dataset")
  for seed in 1 2; do
    "$prod" replay "$data/$dataset" "$seed" >"$work/prod.txt"
    "$axis" replay "$data/$dataset" "$seed" >"$work/axis.txt"
    diff "$work/prod.txt" "$work/axis.txt" >"$work/replay.diff" ||
      { echo "$dataset seed $seed replays differently:"; head -20 "$work/replay.diff"; exit 1; }
    n=$(grep -c '^e ' "$work/prod.txt")
    [[ $n -gt 100 ]] || { echo "$dataset seed $seed: only $n evaluation rows"; exit 1; }
    rows=$((rows + n))
  done
done

"$axis" write "$work/new.h5"
"$axis" read "$work/new.h5" >"$work/keys.txt"
[[ $(grep -c 'tpl_on=1' "$work/keys.txt") -eq 6 ]] ||
  { echo "the template's settings did not read back:"; cat "$work/keys.txt"; exit 1; }
grep -q 'tpl_px=[24]' "$work/keys.txt" || { echo "no tpl_px away from 1 read back"; exit 1; }
if "$prod" read "$work/new.h5" >/dev/null 2>"$work/refused.txt"; then
  echo "the build without the parameters read a dataset that holds them"
  exit 1
fi
grep -q "a newer isletune wrote it" "$work/refused.txt" ||
  { echo "refused without the sentence: $(cat "$work/refused.txt")"; exit 1; }
[[ $(wc -l <"$work/refused.txt") -eq 1 ]] || { echo "more than one line"; exit 1; }
echo "$rows replayed rows the same in both builds; refused: $(cat "$work/refused.txt")"

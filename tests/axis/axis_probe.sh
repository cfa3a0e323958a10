#!/usr/bin/env bash
# unit.axis.saved_state: a parameter appended by a family changes nothing recorded without it.
#   axis_probe.sh PROBE PROBE_APPENDED   (the probe without and with the template's tpl_px)
# 1. Counts per OC, drawn kernels, their keys and hashes: the same in both builds.
# 2. A checkpoint and a migrant batch written without the parameter read with it, every
#    setting's key and hash as written (the parameter at its neutral value).
# 3. The appended build's are refused by the build without it, in one sentence.
set -euo pipefail
prod=$1
axis=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$prod" write "$work/prod"
"$axis" write "$work/axis"
diff "$work/prod/facts.txt" "$work/axis/facts.txt" >"$work/facts.diff" ||
  { echo "the builds draw or key differently:"; head -20 "$work/facts.diff"; exit 1; }
lines=$(grep -c '^  ' "$work/prod/facts.txt")
[[ $lines -gt 100 ]] || { echo "only $lines drawn kernels compared"; exit 1; }

"$axis" read "$work/prod" >"$work/read.txt"
diff "$work/prod/saved.txt" "$work/read.txt" >"$work/read.diff" ||
  { echo "saved settings read back differently:"; head -20 "$work/read.diff"; exit 1; }
[[ -s $work/read.txt ]] || { echo "nothing saved"; exit 1; }

if "$prod" read "$work/axis" >/dev/null 2>"$work/refused.txt"; then
  echo "the build without the parameter read a newer checkpoint"
  exit 1
fi
grep -q "a newer isletune wrote it" "$work/refused.txt" ||
  { echo "refused without the sentence: $(cat "$work/refused.txt")"; exit 1; }
[[ $(wc -l <"$work/refused.txt") -eq 1 ]] || { echo "more than one line"; exit 1; }
echo "same facts ($lines drawn kernels), $(wc -l <"$work/read.txt") saved settings read," \
  "refused: $(cat "$work/refused.txt")"

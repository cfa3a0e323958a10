#!/usr/bin/env bash
# package.analysis_install: the README's two install lines of the analysis package, as a
# user on Debian 12 / Ubuntu 24.04 runs them (PEP 668: no pip into the system Python without
# --break-system-packages; Debian's h5py is not visible to pip as "h5py", and there is no
# network): a venv over the system packages, and the system-wide line (here into a prefix,
# so the test leaves the system as it was). Both must give a working isletune-analyze.
# Usage: analysis_install_test.sh PYTHON SOURCE_DIR WORK_DIR
set -euo pipefail
python=$1 source=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cp -r "$source/analysis" "$work/analysis"  # pip builds in the tree: keep the checkout clean
rm -rf "$work/analysis/build" "$work/analysis"/*.egg-info
cd "$work"
dataset=$source/tests/data/h200-star2d1r.h5

# 1. The venv line (README, "Build and test").
"$python" -m venv --system-site-packages --without-pip venv
venv/bin/python -m pip install --no-build-isolation --no-deps ./analysis >venv.log 2>&1 ||
  { cat venv.log >&2; exit 1; }
venv/bin/isletune-analyze summary "$dataset" >venv-summary.txt
grep -q 'NVIDIA H200' venv-summary.txt || { cat venv-summary.txt >&2; exit 1; }

# 2. The system-wide line, with --prefix added.
"$python" -m pip install --break-system-packages --no-build-isolation --no-deps \
  --prefix "$work/system" ./analysis >system.log 2>&1 || { cat system.log >&2; exit 1; }
# (Debian's pip puts a --prefix install under PREFIX/local, others under PREFIX)
site=$(find "$work/system" -type d -name isletune_analysis -path '*-packages/*' | head -1)
script=$(find "$work/system" -type f -path '*/bin/isletune-analyze' | head -1)
[[ -n $site && -n $script ]] || { echo "no isletune_analysis under $work/system" >&2; exit 1; }
PYTHONPATH=$(dirname "$site") "$script" summary "$dataset" >system-summary.txt
cmp -s venv-summary.txt system-summary.txt || { diff venv-summary.txt system-summary.txt >&2; exit 1; }
echo "isletune-analyze installed both ways; summary of $(basename "$dataset") agrees"

#!/bin/sh
# The full input fuzz set of docs/reliability.md: 1200 malformed configs through `space`
# and `run` and 300 damaged or wrong-schema HDF5 files through run, report, export and
# resume; prints the table. Seeded: the same SEED gives the same cases.
#   tests/fuzz/run.sh [BUILD_DIR] [SEED]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
seed=${2:-1}
exec /usr/bin/python3 "$here/fuzz.py" --binary "$build/bin/isletune" --configs 1200 \
  --files 300 --seed "$seed" --jobs 2 --timeout 30

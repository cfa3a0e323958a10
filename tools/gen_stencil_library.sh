#!/bin/sh
# Regenerates config/stencils/*.yaml (the typical stencil library) from src/stencil/typical.cpp.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
c++ -std=c++20 -O1 -I"$root/src" "$root/tools/gen_stencil_library.cpp" \
  "$root/src/stencil/typical.cpp" "$root/src/stencil/stencil.cpp" -o "$tmp/gen"
mkdir -p "$root/config/stencils"
"$tmp/gen" "$root/config/stencils"
echo "wrote $(ls "$root/config/stencils"/*.yaml | wc -l) files to config/stencils"

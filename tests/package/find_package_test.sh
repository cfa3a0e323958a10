#!/usr/bin/env bash
# package.find_package: `cmake --install` of this build into a fresh prefix, then an outside
# project (tests/package/consumer) finds it with find_package(isletune), links isletune::core
# and runs the installed isletune::isletune. The installed program must print the build's
# version and find the installed stencil library (share/isletune/stencils).
# Usage: find_package_test.sh BUILD_DIR SOURCE_DIR WORK_DIR [CMAKE_CXX_COMPILER]
set -euo pipefail
build=$1 source=$2 work=$3 cxx=${4:-}
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/isletune lib/cmake/isletune/isletuneConfig.cmake \
         lib/cmake/isletune/isletuneConfigVersion.cmake lib/cmake/isletune/isletune-targets.cmake \
         include/isletune/stencil/stencil.hpp include/isletune/common/version.hpp \
         share/isletune/stencils/star2d1r.yaml share/doc/isletune/LICENSE; do
  libdir_f=${f/#lib\//}
  if [[ ! -e $prefix/$f && ! -e $prefix/lib64/$libdir_f && ! -e $prefix/lib/x86_64-linux-gnu/$libdir_f ]]; then
    echo "not installed: $f" >&2
    exit 1
  fi
done

args=(-S "$source/tests/package/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix")
[[ -n $cxx ]] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
cmake "${args[@]}" >"$work/configure.log"
cmake --build "$work/consumer" >"$work/build.log"

built=$("$build/bin/isletune" --version)
installed=$("$prefix/bin/isletune" --version)
[[ $installed == "$built" ]] || { echo "installed --version '$installed' != '$built'" >&2; exit 1; }
[[ $(cat "$work/consumer/program-version.txt") == "$built" ]] ||
  { echo "isletune::isletune --version: $(cat "$work/consumer/program-version.txt")" >&2; exit 1; }

read -r version size key valid < <("$work/consumer/consumer")
[[ "isletune $version" == "$built" ]] || { echo "core version $version, program $built" >&2; exit 1; }
[[ $size -gt 0 && $valid == valid && -n $key ]] || { echo "consumer: $version $size $key $valid" >&2; exit 1; }

# The installed program reads the installed stencil library (share/isletune/stencils), not
# the source tree's: a damaged installed star2d1r.yaml is the one it reports.
printf 'stencil: star2d1r\ngrid: [256, 256]\n' >"$work/lib.yaml"
"$prefix/bin/isletune" space "$work/lib.yaml" >"$work/space.txt"
grep -q '^stencil star2d1r ' "$work/space.txt" || { echo "installed isletune space failed" >&2; exit 1; }
echo 'name: [' >"$prefix/share/isletune/stencils/star2d1r.yaml"
if "$prefix/bin/isletune" space "$work/lib.yaml" >"$work/space.txt" 2>&1 ||
   ! grep -q "share/isletune/stencils/star2d1r.yaml" "$work/space.txt"; then
  echo "the installed isletune did not read share/isletune/stencils:" >&2
  cat "$work/space.txt" >&2
  exit 1
fi
echo "find_package(isletune): $built, space of star2d1r $size settings, naive $key"

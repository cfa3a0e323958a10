#!/usr/bin/env bash
# Records one replay dataset on one GPU with prebuilt binaries (BIN, default out/settle: isletune
# and isletune-worker built on the development VM; their shared libraries in out/bin/lib), as
# bench/record_datasets.sh does with a build on the GPU machine: `isletune measure --random N`
# over CONFIG's whole default space with a cold cubin cache and a HOME of its own (NVRTC's own
# cache would serve repeated compiles unflagged), ended by SIGTERM after SECONDS with a complete
# file (the current batch is recorded).
#   bash bench/record_prebuilt_device.sh CONFIG N SECONDS NAME   # $OUT/NAME.h5 and NAME.log
set -u
cfg=$1 n=$2 secs=$3 name=$4
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
BIN=${BIN:-$PWD/out/settle}
export LD_LIBRARY_PATH=$PWD/out/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ISLETUNE_WORKER=$BIN/isletune-worker
ISLETUNE_CACHE_DIR=$(mktemp -d) HOME=$(mktemp -d)
export ISLETUNE_CACHE_DIR HOME
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/$name.log"
start=$(date +%s)
timeout --foreground -s TERM -k 30 "$secs" stdbuf -oL "$BIN/isletune" measure "$cfg" \
  --random "$n" --batch 96 -o "$OUT/$name.h5" --backend cuda >>"$OUT/$name.log" 2>&1
echo "rc=$? after $(($(date +%s) - start)) s" | tee -a "$OUT/$name.log"
tail -3 "$OUT/$name.log"
ls -la "$OUT/$name.h5"

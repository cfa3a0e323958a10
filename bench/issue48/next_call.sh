#!/usr/bin/env bash
# Issue 48's decisive measurements in ONE device call (at most about 9.5 minutes), for a session
# that may get only one: the product's boundary points at take-in (branch boundary-at-input)
# against main in the families benchmark and the branch's GPU family tests (bin_call.sh, shorter
# budgets), then the register probes K, K_b, K_nl of star3d4r and star3d2r with their NaN check
# (kept_call.sh). Files under $OUT: summary.txt, bin.tgz, timing.txt.
# Prepare on the VM (main's build in build/, the branch's in BRANCH/build):
#   bench/issue48/carry.sh out/settle && bench/issue48/carry.sh out/settle_bin BRANCH
#   bench/issue48/stalls.sh prepare out/n48
# then carry out/settle out/settle_bin out/n48 and run `bash bench/issue48/next_call.sh`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
FAM_S=${FAM_S:-100} GPU_S=${GPU_S:-250} bash "$here/bin_call.sh"
TIME="s4r35 s4r35_b s4r35_nl o22t4 o22t4_b s2r28 s2r28_b s2r28_nl" \
  POISON="s4r35_b o22t4_b s2r28_b" NCU="" TIMING_S=${TIMING_S:-110} bash "$here/kept_call.sh"

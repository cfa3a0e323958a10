#!/usr/bin/env bash
# The run part of the fault harness (issue 14.9): every fault case of
# tests/mpi/run_cases.sh on 2 ranks (replay backend, no GPU) plus N random SIGKILLs of a
# rank or of mpirun followed by the same jobs/mpirun/tune.sh command, as one command
# that prints a table. ctest runs each case on its own (mpi.run.*; random_kills with 2
# kills); this runs them all, with many kills, and sums them up.
#
#   tests/fault/run_faults.sh [--build DIR] [--kills N] [--points N] [--frozen N] [--work DIR]
#
# Defaults: --build build (isletune at DIR/bin/isletune), --kills 24, --points 42 (fill
# points of the full-disk case), --frozen 3 (trials per strategy and frozen rank), --work
# /tmp/isletune-faults. Needs mpirun, h5dump, /usr/bin/python3 with h5py; the full-disk
# and read-only cases mount small tmpfs file systems and report SKIP when not root.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build kills=24 points=42 frozen=3 work=/tmp/isletune-faults
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --kills) kills=$2; shift 2 ;;
    --points) points=$2; shift 2 ;;
    --frozen) frozen=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h | --help) sed -n 2,15p "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run_faults.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
export ISLETUNE_BIN=$build/bin/isletune ISLETUNE_TEST_DIR=$root/tests/mpi ISLETUNE_WORK=$work
[[ -x $ISLETUNE_BIN ]] || { echo "run_faults.sh: no $ISLETUNE_BIN (build isletune first)" >&2; exit 2; }
mpi=(mpirun -q --oversubscribe)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
export ISLETUNE_MPIEXEC="${mpi[*]}" ISLETUNE_KILLS=$kills ISLETUNE_FILL_POINTS=$points
export ISLETUNE_FROZEN_REPEATS=$frozen

# case: what it does (the table's description column)
cases=(
  "full_disk:output file system full mid-run, then space freed and resumed"
  "full_disk_points:output file system full at $points points from creation to the last generations"
  "readonly:read-only output file system"
  "concurrent:two runs started into one directory at once (3 tries)"
  "damaged_checkpoint:one rank's /checkpoint deleted, then resume"
  "overwrite_input:--overwrite of a directory holding the run's replay dataset"
  "half_created:killed after trace.h5, before the rank files (resume, run, tune.sh)"
  "rank_killed:one rank SIGKILLed mid-run, then resume"
  "frozen_rank:rank 0 / rank 1 SIGSTOPped mid-run under every strategy, $frozen times each (ISLETUNE_RANK_TIMEOUT_S=3), then resume; bad timeouts refused"
  "frozen_rank_fill:rank 0 / rank 1 SIGSTOPped mid-run with drift 1 and fill 2, $frozen times each: ended within 3 s + 5 s, then resume"
  "planted_links:links planted as .created.tmp, status.txt.tmp, the write probe, .lock, rank-NNNN.h5.resume and as measure/export outputs: nothing written through"
  "own_inputs:measure -o / export -o / --kernel-tuner-cache onto their own inputs (any spelling)"
  "replay_mismatch:replay of another stencil, grid or step count; a changed dataset at resume; export --best of such a run"
  "half_written:resume of a half-written trace.h5; rows of an unfinished commit (status 100)"
  "tune_sigterm:SIGTERM to tune.sh with 2.5 s generations, then tune.sh again"
  "bounded_retries:tune.sh on a failing config 4 times"
  "kill_resume:SIGKILL of every rank at generation 3, then resume"
  "signal_resume:SIGUSR1 to mpirun, then resume"
  "random_kills:$kills SIGKILLs of a random rank or mpirun at a random moment"
)
crash_pattern='Segmentation\|core dumped\|terminate called\|double free\|signal 11\|signal 6'
printf '| case | what | result | crashes | s |\n|---|---|---|---|---|\n'
total=0 passed=0 skipped=0 hangs=0 crashes=0 kill_line="" disk_line="" frozen_line="" fill_line=""
for entry in "${cases[@]}"; do
  name=${entry%%:*} what=${entry#*:}
  np=2
  [[ $name == bounded_retries ]] && np=1
  start=$SECONDS
  timeout 900 "$root/tests/mpi/run_cases.sh" "$name" "$np" >"$work-$name.out" 2>&1
  rc=$?
  secs=$((SECONDS - start))
  case $rc in
    0) result=pass; passed=$((passed + 1)) ;;
    77) result="skip ($(sed -n 's/^SKIP: //p' "$work-$name.out"))"; skipped=$((skipped + 1)) ;;
    124) result=HANG; hangs=$((hangs + 1)) ;;
    *) result="FAIL: $(grep '^FAIL' "$work-$name.out" | head -n 1)" ;;
  esac
  n=$(cat "$work/$name-np$np"/*.log "$work-$name.out" 2>/dev/null | grep -c "$crash_pattern")
  crashes=$((crashes + n))
  total=$((total + 1))
  [[ $name == random_kills ]] && kill_line=$(grep '^RESULT' "$work-$name.out")
  [[ $name == full_disk_points ]] && disk_line=$(grep '^RESULT' "$work-$name.out")
  [[ $name == frozen_rank ]] && frozen_line=$(grep '^RESULT' "$work-$name.out")
  [[ $name == frozen_rank_fill ]] && fill_line=$(grep '^RESULT' "$work-$name.out")
  printf '| %s | %s | %s | %d | %d |\n' "$name" "$what" "$result" "$n" "$secs"
done
echo
echo "cases $total, passed $passed, skipped $skipped, hangs $hangs, crash lines $crashes"
echo "random kills: ${kill_line#RESULT }"
echo "full disk: ${disk_line#RESULT }"
echo "frozen ranks: ${frozen_line#RESULT }"
echo "frozen ranks with fills: ${fill_line#RESULT }"
grep '^trial' "$work-random_kills.out" 2>/dev/null | sed 's/^/  /'
((passed + skipped == total && crashes == 0))

# Shell helpers shared by jobs/mpirun/tune.sh and jobs/slurm/*.sbatch (sourced, not run):
# finding the isletune binary, counting GPUs, and deciding whether an output directory
# holds a fresh, an interrupted (resumable) or a finished run.

# Prints the isletune executable: $ISLETUNE, else `isletune` on PATH, else the build tree
# next to this file (build/bin/isletune, then build-*/bin/isletune).
isletune_binary() {
  if [[ -n ${ISLETUNE:-} ]]; then
    echo "$ISLETUNE"
    return
  fi
  if command -v isletune >/dev/null 2>&1; then
    command -v isletune
    return
  fi
  local root candidate
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  for candidate in "$root"/build/bin/isletune "$root"/build*/bin/isletune; do
    if [[ -x $candidate ]]; then
      echo "$candidate"
      return
    fi
  done
  echo "isletune: executable not found: set ISLETUNE=/path/to/isletune or put it on PATH" >&2
  return 1
}

# Prints the number of GPUs this process may use: the entries of CUDA_VISIBLE_DEVICES
# when it is set, else the lines of `nvidia-smi -L`, else 0.
isletune_gpu_count() {
  if [[ -n ${CUDA_VISIBLE_DEVICES+x} ]]; then
    local list=${CUDA_VISIBLE_DEVICES//[[:space:]]/}
    if [[ -z $list || $list == -1 || $list == NoDevFiles ]]; then
      echo 0
    else
      echo $(($(tr -cd , <<<"$list" | wc -c) + 1))
    fi
    return
  fi
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true
    return
  fi
  echo 0
}

# Prints the state of run directory $1: `fresh` (no trace yet, or one that never got past
# its creation), `resumable` (a trace without a result, or one stopped by a signal), or
# `finished:REASON` (a result with any other stop reason). The stop reason is read with h5dump, or, where the machine has
# no HDF5 tools, from `isletune report` (binary in $2 or found as usual).
isletune_run_state() {
  local dir=$1 bin=${2:-}
  # No trace, or a trace whose creation a kill cut short before any rank file existed
  # (no creation marker `.created`): `isletune run` accepts and cleans such a directory.
  # Rank files without the marker are left to `isletune resume`, which starts a run that
  # never finished its creation over and continues one written before markers existed.
  if [[ ! -f $dir/trace.h5 ]] ||
    { [[ ! -f $dir/.created ]] && ! compgen -G "$dir/rank-*.h5" >/dev/null; }; then
    echo fresh
    return
  fi
  local reason
  if command -v h5dump >/dev/null 2>&1; then
    reason=$(h5dump -a /result/stop_reason "$dir/trace.h5" 2>/dev/null |
      sed -n 's/.*(0): "\([a-z_]*\)".*/\1/p' | head -n 1)
  else
    [[ -n $bin ]] || bin=$(isletune_binary) || { echo resumable; return; }
    reason=$("$bin" report "$dir" 2>/dev/null | sed -n 's/^result: stop \([a-z_]*\) .*/\1/p' | head -n 1)
  fi
  case "$reason" in
    "" | signal | none) echo resumable ;;
    *) echo "finished:$reason" ;;
  esac
}

# Prints what isletune_launch would do for run directory $1 (`CONFIG [run args...]` after
# it), without doing it: the directory's state and the command (`--dry-run` of the job
# scripts). Needs no Slurm and no GPU.
isletune_plan() {
  local dir=$1
  shift
  local bin state
  bin=$(isletune_binary 2>/dev/null) || bin=isletune
  state=$(isletune_run_state "$dir" "$bin")
  local line
  case "$state" in
    fresh)
      line="fresh -> ${ISLETUNE_LAUNCH[*]} $bin run ${1:-CONFIG} --out $dir ${*:2}"
      echo "${line% }"
      ;;
    resumable) echo "resumable -> ${ISLETUNE_LAUNCH[*]} $bin resume $dir" ;;
    finished:*) echo "$state -> nothing to do (a finished run is left alone)" ;;
  esac
}

# Starts or continues the run in directory $2 with launcher kind $1 (srun | mpirun |
# direct) and the launcher command in the array ISLETUNE_LAUNCH (e.g. `srun --mpi=pmix`),
# then waits for it. Arguments after $2: `CONFIG [isletune run args...]`, used only for a
# fresh run; an interrupted run is continued with `isletune resume DIR`; a finished one
# is left alone. A SIGTERM or SIGINT that reaches this shell is passed to the ranks as a
# graceful stop request (they finish the current generation, flush and exit 0):
#   srun   -> `scancel --signal=TERM JOBID` (srun itself would kill the tasks on SIGTERM)
#   mpirun -> SIGUSR1 to mpirun, which forwards it (on SIGTERM it kills the ranks in 1 s)
#   direct -> the same signal to the process
# A second request kills hard. Returns the launcher's exit status; sets
# ISLETUNE_SIGNALLED=1 when a stop request arrived.
isletune_launch() {
  local kind=$1 dir=$2
  shift 2
  local bin state
  bin=$(isletune_binary) || return 1
  # Bounded retries: after ISLETUNE_MAX_FAILURES (default 3) failed launches in a row
  # into this directory, stop instead of failing again (a requeued or resubmitted job
  # would otherwise retry forever). The count lives in DIR/.failures.
  local failures=0 max_failures=${ISLETUNE_MAX_FAILURES:-3}
  [[ -f $dir/.failures ]] && failures=$(<"$dir/.failures")
  [[ $failures =~ ^[0-9]+$ ]] || failures=0
  if ((failures >= max_failures)); then
    echo "isletune: $dir failed $failures times in a row; not retrying. Read the log above," \
      "fix the cause, then delete $dir/.failures to try again." >&2
    return 1
  fi
  state=$(isletune_run_state "$dir" "$bin")
  local -a cmd
  case "$state" in
    fresh)
      (($# >= 1)) || { echo "isletune_launch: no CONFIG for a fresh run in $dir" >&2; return 2; }
      local config=$1
      shift
      cmd=("$bin" run "$config" --out "$dir" "$@")
      ;;
    resumable) cmd=("$bin" resume "$dir") ;;
    finished:*)
      echo "isletune: $dir already holds a finished run (stop reason ${state#finished:});" \
        "nothing to do. Use another output directory for a new run."
      return 0
      ;;
  esac
  echo "isletune: $(date -u +%FT%TZ) ${state} -> ${ISLETUNE_LAUNCH[*]} ${cmd[*]}"

  ISLETUNE_SIGNALLED=0
  local pid requests=0
  # Runs in the trap: graceful first, hard on the second request.
  _isletune_forward() {
    requests=$((requests + 1))
    ISLETUNE_SIGNALLED=1
    echo "isletune: $(date -u +%FT%TZ) stop requested ($1), finishing the current generation"
    if ((requests > 1)); then
      kill -KILL "$pid" 2>/dev/null || true
      return
    fi
    case "$kind" in
      srun) scancel --signal=TERM "${SLURM_JOB_ID}" 2>/dev/null || kill -USR1 "$pid" ;;
      mpirun) kill -USR1 "$pid" 2>/dev/null || true ;;
      *) kill "-$1" "$pid" 2>/dev/null || true ;;
    esac
  }
  trap '_isletune_forward TERM' TERM
  trap '_isletune_forward INT' INT
  if [[ $kind == mpirun ]]; then
    # Own session: a terminal's Ctrl-C reaches only this shell, which asks mpirun
    # politely instead of letting it kill the ranks.
    setsid "${ISLETUNE_LAUNCH[@]}" "${cmd[@]}" </dev/null &
  else
    "${ISLETUNE_LAUNCH[@]}" "${cmd[@]}" </dev/null &
  fi
  pid=$!
  local rc=0
  # `wait` returns early when a trapped signal arrives; wait again until the launcher ends.
  while true; do
    wait "$pid" && rc=0 || rc=$?
    kill -0 "$pid" 2>/dev/null || break
  done
  trap - TERM INT
  if ((rc == 0)); then
    rm -f "$dir/.failures"
  elif mkdir -p "$dir" 2>/dev/null; then
    echo $((failures + 1)) >"$dir/.failures" 2>/dev/null || true
    echo "isletune: failure $((failures + 1)) of at most $max_failures in a row for $dir" >&2
  fi
  state=$(isletune_run_state "$dir" "$bin")
  echo "isletune: $(date -u +%FT%TZ) launcher exit ${rc}, run state ${state}"
  if [[ $state == resumable && $rc -eq 0 ]]; then
    echo "isletune: interrupted; resubmit or run 'isletune resume $dir' to continue"
  fi
  return "$rc"
}

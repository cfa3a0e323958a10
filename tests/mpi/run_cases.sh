#!/usr/bin/env bash
# The mpi.run.* tests: `isletune run/resume` under mpirun on the replay backend.
#   run_cases.sh CASE NP
# Environment (set by CMake): ISLETUNE_BIN, ISLETUNE_MPIEXEC (mpirun with its flags, as
# one string), ISLETUNE_TEST_DIR (this folder), ISLETUNE_WORK (a scratch directory).
set -uo pipefail
case_name=$1
np=$2
bin=$ISLETUNE_BIN
here=$ISLETUNE_TEST_DIR
py=/usr/bin/python3
work=$ISLETUNE_WORK/$case_name-np$np
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
read -r -a mpi <<<"$ISLETUNE_MPIEXEC"
config=$here/replay.yaml

fail() {
  echo "FAIL: $*"
  exit 1
}

# The child processes of process $1 (the ranks under mpirun), read from /proc so the
# test needs no procps.
children() {
  local p stat rest state ppid
  for p in /proc/[0-9]*; do
    stat=$(cat "$p/stat" 2>/dev/null) || continue
    rest=${stat##*) }
    read -r state ppid _ <<<"$rest"
    [[ $ppid == "$1" ]] && echo "${p#/proc/}"
  done
  return 0
}

# Runs isletune under mpirun with NP ranks.
launch() { "${mpi[@]}" -np "$np" "$bin" "$@"; }

# Waits until rank 0 has printed generation $2 in log $1 (then every rank has flushed the
# generation before it), at most 60 s.
wait_for_generation() {
  local i
  for ((i = 0; i < 600; ++i)); do
    grep -q "^gen *$2 " "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "generation $2 never appeared in $1"
}

# Starts a slowed-down run in the background and SIGKILLs its ranks once generation $2
# has been printed (mid-run: the slowed run needs about 10 generations). $3: the
# configuration (default: $config).
run_and_kill() {
  ISLETUNE_REPLAY_DELAY_S=0.25 "${mpi[@]}" -np "$np" "$bin" run "${3:-$config}" --out "$1" \
    >"$1.log" 2>&1 &
  local launcher=$!
  wait_for_generation "$1.log" "$2"
  sleep 0.1
  local ranks
  ranks=$(children "$launcher")
  for pid in $ranks; do kill -9 "$pid" 2>/dev/null; done
  wait "$launcher"
  [[ -f $1/trace.h5 ]] || fail "no trace after the kill"
  if h5dump -a /result/stop_reason "$1/trace.h5" >/dev/null 2>&1; then
    fail "the run finished before it was killed; the test needs a slower replay"
  fi
}

# Writes $1.yaml: the test configuration with strategy $1 (and any extra `budget` line $2).
strategy_config() {
  sed "s/^ga: {/strategy: $1\nga: {/" "$config" >"$1.yaml"
  sed -i "s|\.\./data/|$here/../data/|" "$1.yaml"
  if [[ -n ${2:-} ]]; then sed -i "s/^budget: .*/budget: $2/" "$1.yaml"; fi
}

readonly strategies=(island-ga global-ga random sampled-random)

# Expects a failing command: non-zero exit, one error sentence mentioning $1.
expect_error() {
  local needle=$1
  shift
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  echo "$out"
  ((rc != 0)) || fail "expected a non-zero exit"
  local lines
  lines=$(grep -c '^isletune' <<<"$out")
  [[ $lines == 1 ]] || fail "expected exactly one error line, got $lines"
  grep -q -- "$needle" <<<"$out" || fail "the error does not mention '$needle'"
  grep -q 'MPI_ABORT\|core dumped\|terminate called\|Segmentation' <<<"$out" && fail "the error was not clean"
  return 0
}

case $case_name in
  determinism)
    # Same seed + replay => identical traces; another seed => a different one.
    launch run "$config" --out a >a.log 2>&1 || fail "run a: $(cat a.log)"
    launch run "$config" --out b >b.log 2>&1 || fail "run b: $(cat b.log)"
    launch run "$config" --out c --seed 12 >c.log 2>&1 || fail "run c: $(cat c.log)"
    $py "$here/compare_traces.py" a/trace.h5 b/trace.h5 || fail "same seed, different traces"
    $py "$here/compare_traces.py" a/trace.h5 c/trace.h5 >/dev/null && fail "seed had no effect"
    ;;
  complete)
    # Every evaluation of every rank is in the trace; all ranks end in the same generation.
    launch run "$config" --out run >run.log 2>&1 || fail "run: $(cat run.log)"
    cat run.log
    grep -q '^gen ' run.log || fail "no progress lines"
    grep -q '^best: ' run.log || fail "no best setting printed"
    $py "$here/check_trace.py" run/trace.h5 || fail "incomplete trace"
    "$bin" report run >report.txt || fail "report"
    grep -q 'best:' report.txt || fail "report has no best setting"
    ;;
  schema)
    launch run "$config" --out run >run.log 2>&1 || fail "run: $(cat run.log)"
    h5dump -H run/trace.h5 >schema.txt || fail "h5dump"
    for name in config environment rank_0000 ranks evaluations generations migrations \
      result source sample settings space parameters stencil offsets coefficients; do
      grep -q "\"$name\"" schema.txt || fail "h5dump -H shows no $name"
    done
    echo "h5dump -H shows the schema"
    # The paper's Table-2 stencil features, consistent with the stencil they describe;
    # /sample/predicted is a predicted time (ms > 0, lower = faster).
    $py - run/trace.h5 <<'PY' || fail "stencil features or sample predictions"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
rows = f["stencil/features"][...]
feats = {r["name"].decode() if isinstance(r["name"], bytes) else r["name"]: float(r["value"]) for r in rows}
print(f"{len(feats)} features, e.g. order {feats.get('order')} nnz {feats.get('nnz')}")
assert len(feats) > 10, "no /stencil/features rows"
assert feats["nnz"] == len(f["stencil/offsets"]), "nnz differs from the offsets"
assert feats["order"] == int(f["stencil"].attrs["order"]), "order differs from /stencil"
pred = f["sample/predicted"][...]
assert len(pred) == len(f["sample/settings"]) and np.all(pred > 0), "predicted is not a time"
PY
    ;;
  kill_resume)
    # SIGKILL mid-run leaves a readable trace missing at most the current generation;
    # resume then ends with exactly the trace of an uninterrupted run.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    run_and_kill killed 3
    $py "$here/check_trace.py" killed/trace.h5 --partial || fail "killed trace unreadable"
    "$bin" report killed >report.txt || fail "report of the killed run"
    launch resume killed >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    cat resume.log
    $py "$here/check_trace.py" killed/trace.h5 || fail "resumed trace incomplete"
    $py "$here/compare_traces.py" full/trace.h5 killed/trace.h5 || fail "resume changed the run"
    ;;
  early_resume)
    # Killed before any generation completed: resume starts over and ends like a run.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    ISLETUNE_REPLAY_DELAY_S=3 "${mpi[@]}" -np "$np" "$bin" run "$config" --out early \
      >early.log 2>&1 &
    launcher=$!
    for ((i = 0; i < 600; ++i)); do
      grep -q '^isletune run:' early.log && break
      sleep 0.1
    done
    sleep 0.5
    for pid in $(children "$launcher"); do kill -9 "$pid" 2>/dev/null; done
    wait "$launcher"
    grep -q '^gen ' early.log && fail "a generation completed before the kill"
    launch resume early >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    grep -q 'starting over' resume.log || fail "resume did not start over"
    $py "$here/compare_traces.py" full/trace.h5 early/trace.h5 || fail "restart changed the run"
    ;;
  signal_resume)
    # SIGUSR1 through mpirun: every rank stops after the generation, records `signal`,
    # exits 0; resume finishes exactly like an uninterrupted run.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    ISLETUNE_REPLAY_DELAY_S=0.25 "${mpi[@]}" -np "$np" "$bin" run "$config" --out stopped \
      >stopped.log 2>&1 &
    launcher=$!
    wait_for_generation stopped.log 2
    kill -USR1 "$launcher"
    wait "$launcher" || fail "a signalled run must exit 0: $(cat stopped.log)"
    cat stopped.log
    h5dump -a /result/stop_reason stopped/trace.h5 | grep -q '"signal"' || fail "stop reason"
    $py "$here/check_trace.py" stopped/trace.h5 || fail "signalled trace incomplete"
    launch resume stopped >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    $py "$here/compare_traces.py" full/trace.h5 stopped/trace.h5 || fail "resume changed the run"
    launch resume stopped | grep -q 'already finished' || fail "a finished run resumed again"
    ;;
  strategy_determinism)
    # Every strategy: same seed => identical trace; another seed => a different one.
    for strategy in "${strategies[@]}"; do
      strategy_config "$strategy"
      for out in a b; do
        launch run "$strategy.yaml" --out "$strategy-$out" >"$strategy-$out.log" 2>&1 ||
          fail "$strategy $out: $(cat "$strategy-$out.log")"
      done
      launch run "$strategy.yaml" --out "$strategy-c" --seed 12 >"$strategy-c.log" 2>&1 ||
        fail "$strategy c: $(cat "$strategy-c.log")"
      $py "$here/compare_traces.py" "$strategy-a/trace.h5" "$strategy-b/trace.h5" ||
        fail "$strategy: same seed, different traces"
      $py "$here/compare_traces.py" "$strategy-a/trace.h5" "$strategy-c/trace.h5" >/dev/null &&
        fail "$strategy: seed had no effect"
      echo "$strategy: deterministic"
    done
    ;;
  strategy_resume)
    # Every strategy: SIGKILL mid-run, resume => the uninterrupted run's trace; random also
    # through SIGUSR1 (a clean stop, then resume).
    for strategy in "${strategies[@]}"; do
      strategy_config "$strategy"
      launch run "$strategy.yaml" --out "$strategy-full" >"$strategy-full.log" 2>&1 ||
        fail "$strategy: $(cat "$strategy-full.log")"
      run_and_kill "$strategy-killed" 3 "$strategy.yaml"
      launch resume "$strategy-killed" >"$strategy-resume.log" 2>&1 ||
        fail "$strategy resume: $(cat "$strategy-resume.log")"
      $py "$here/check_trace.py" "$strategy-killed/trace.h5" || fail "$strategy: resumed trace incomplete"
      $py "$here/compare_traces.py" "$strategy-full/trace.h5" "$strategy-killed/trace.h5" ||
        fail "$strategy: resume changed the run"
      echo "$strategy: resumed after SIGKILL"
    done
    ISLETUNE_REPLAY_DELAY_S=0.25 "${mpi[@]}" -np "$np" "$bin" run random.yaml --out stopped \
      >stopped.log 2>&1 &
    launcher=$!
    wait_for_generation stopped.log 2
    kill -USR1 "$launcher"
    wait "$launcher" || fail "a signalled run must exit 0: $(cat stopped.log)"
    h5dump -a /result/stop_reason stopped/trace.h5 | grep -q '"signal"' || fail "stop reason"
    launch resume stopped >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    $py "$here/compare_traces.py" random-full/trace.h5 stopped/trace.h5 ||
      fail "random: resume after a signal changed the run"
    ;;
  budget)
    # max_evaluations is a cap on every island and every strategy: no rank measures more,
    # and the progress line never shows a negative budget.
    for strategy in "${strategies[@]}"; do
      strategy_config "$strategy" "{max_generations: 200, max_evaluations: 37}"
      launch run "$strategy.yaml" --out "$strategy" >"$strategy.log" 2>&1 ||
        fail "$strategy: $(cat "$strategy.log")"
      grep -q 'left:.* -[0-9]' "$strategy.log" && fail "$strategy: negative budget: $(grep left: "$strategy.log" | tail -2)"
      $py "$here/check_trace.py" "$strategy/trace.h5" || fail "$strategy trace incomplete"
      $py - "$strategy/trace.h5" 37 <<'PY' || fail "$strategy: a rank measured past its budget"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
cap = int(sys.argv[2])
for r in range(int(f["ranks"].attrs["count"])):
    n = int(f[f"ranks/{r:04d}/generations"]["evaluations"].sum())
    print(f"rank {r}: {n} measurements (cap {cap})")
    assert n <= cap
assert max(int(f[f"ranks/{r:04d}/generations"]["evaluations"].sum())
           for r in range(int(f["ranks"].attrs["count"]))) == cap
PY
    done
    ;;
  wait)
    # The last rank is slowed down (0.2 s per batch), the others are not: they wait for it
    # in the generation's collectives, and wait_s must say so. Rank 0 waits in the
    # progress gather, which wait_s left out (it read 0.0 s).
    others=$((np - 1))
    "${mpi[@]}" -np "$others" "$bin" run "$config" --out run : \
      -np 1 env ISLETUNE_REPLAY_DELAY_S=0.2 "$bin" run "$config" --out run >run.log 2>&1 ||
      fail "run: $(cat run.log)"
    $py - run/trace.h5 <<'PY' || fail "wait_s does not show the waiting"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
waits = [float(f[f"ranks/{r:04d}/generations"]["wait_s"].sum())
         for r in range(int(f["ranks"].attrs["count"]))]
gens = len(f["ranks/0000/generations"])
print(f"{gens} generations; wait_s per rank: {waits}")
# Every generation of the slow rank measures (0.2 s), so the others wait about that long.
assert all(w >= 0.1 * gens for w in waits[:-1]), "a rank waited without saying so"
assert waits[-1] < min(waits[:-1]), "the slow rank waited the most"
PY
    ;;
  strategies)
    for strategy in random sampled-random global-ga; do
      sed "s/^ga: {/strategy: $strategy\nga: {/" "$config" >"$strategy.yaml"
      sed -i "s|\.\./data/|$here/../data/|" "$strategy.yaml"
      launch run "$strategy.yaml" --out "$strategy" >"$strategy.log" 2>&1 ||
        fail "$strategy: $(cat "$strategy.log")"
      grep '^best: ' "$strategy.log" || fail "$strategy printed no best setting"
      $py "$here/check_trace.py" "$strategy/trace.h5" || fail "$strategy trace incomplete"
    done
    ;;
  bad_input)
    # One sentence, non-zero exit on every rank, no hang (ctest TIMEOUT guards it).
    printf 'stencil: star2d1r\ngrid: [64, 64\n' >malformed.yaml
    expect_error malformed.yaml launch run malformed.yaml --out x
    sed 's/^seed: 11/seed: 11\nsede: 3/' "$config" >unknown.yaml
    sed -i "s|\.\./data/|$here/../data/|" unknown.yaml
    expect_error sede launch run unknown.yaml --out x
    sed 's|dataset: .*|dataset: /nonexistent/none.h5}|' "$config" >missing.yaml
    expect_error /nonexistent/none.h5 launch run missing.yaml --out x
    launch run "$config" --out exists >/dev/null 2>&1 || fail "first run"
    expect_error exists launch run "$config" --out exists
    launch run "$config" --out exists --overwrite >/dev/null 2>&1 || fail "--overwrite refused"
    touch afile
    expect_error afile/sub launch run "$config" --out afile/sub
    expect_error "unknown option" launch run "$config" --bogus
    cp exists/trace.h5 exists/other.h5
    $py -c "import h5py; f = h5py.File('exists/trace.h5', 'r+'); f.attrs['version'] = 99"
    expect_error version launch resume exists
    $py -c "import h5py; f = h5py.File('exists/trace.h5', 'r+'); f.attrs['version'] = 1"
    if ((np > 1)); then
      expect_error "same number" "${mpi[@]}" -np 1 "$bin" resume exists
    fi
    expect_error "not built\|without the CUDA\|no NVIDIA\|driver\|GPU" \
      launch run "$config" --out gpu --backend cuda
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name on $np ranks"

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
# ISLETUNE_TEST_CONFIG: another config of this folder (replay-pipeline.yaml: the same run
# with compiles that overlap, so the pipeline keeps several generations queued).
config=$here/${ISLETUNE_TEST_CONFIG:-replay.yaml}

fail() {
  echo "FAIL: $*"
  exit 1
}

# Reports the case as skipped (ctest SKIP_RETURN_CODE 77), with the reason.
skip() {
  echo "SKIP: $*"
  exit 77
}

# A checksum of every run file in directory $1 (to prove that nothing was changed).
run_files_sum() { (cd "$1" && md5sum trace.h5 rank-*.h5 2>/dev/null); }

# Mounts a tmpfs of size $2 (options $3) at $1 or skips: a full or read-only output
# directory without touching the machine's disks. Unmounted when the case ends.
small_tmpfs() {
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2${3:+,$3}" tmpfs "$1" 2>/dev/null ||
    skip "cannot mount a tmpfs at $1 (needs root): $(id -un)"
  trap "umount '$work/$1' 2>/dev/null" EXIT
}

# The child processes of process $1 (the ranks under mpirun), read from /proc so the
# test needs no procps. Without a process per /proc entry: on a loaded machine a `cat` each
# took seconds over a few hundred processes, and the run ended before the kill.
children() {
  local p stat rest state ppid
  for p in /proc/[0-9]*; do
    { read -r stat <"$p/stat"; } 2>/dev/null || continue
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
  ISLETUNE_REPLAY_DELAY_S=${KILL_REPLAY_DELAY_S:-0.25} "${mpi[@]}" -np "$np" "$bin" run "${3:-$config}" --out "$1" \
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
  lines=$(grep '^isletune' <<<"$out" | grep -vc ', strategy .*, backend ')
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
  kill_resume_first)
    # SIGKILL right after generation 0, before generation 1 (which starts with every
    # island learning every island's generation 0): resume continues from generation 0,
    # learns the same, and ends with exactly the trace of an uninterrupted run.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    KILL_REPLAY_DELAY_S=3 run_and_kill killed 0
    launch resume killed >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    cat resume.log
    grep -q 'from generation 0 ' resume.log || fail "resume did not continue from generation 0"
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
  fill)
    # ga.migration.fill: the last rank is slowed down (0.2 s per batch) with drift 1; the
    # others, which would wait for it, measure their models' next picks meanwhile. Their
    # generations count those rows (check_trace), no rank measures a setting twice, the fast
    # ranks fill and the busiest of them measures more than the slow one.
    sed "s/mcr_threshold: 1.0}/mcr_threshold: 1.0, migration: {drift: 1, fill: 2}}/" "$config" >fill.yaml
    sed -i "s|\.\./data/|$here/../data/|; s/max_generations: 30/max_generations: 8/" fill.yaml
    others=$((np - 1))
    "${mpi[@]}" -np "$others" "$bin" run fill.yaml --out run : \
      -np 1 env ISLETUNE_REPLAY_DELAY_S=0.2 "$bin" run fill.yaml --out run >run.log 2>&1 ||
      fail "run: $(cat run.log)"
    grep -q "$np ranks (drift 1, fill 2)," run.log || fail "the first line does not say fill 2: $(head -1 run.log)"
    $py "$here/check_trace.py" run/trace.h5 || fail "incomplete trace"
    $py - run/trace.h5 <<'PY' || fail "the fast ranks did not measure while they would wait"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
n = int(f["ranks"].attrs["count"])
new = []
for r in range(n):
    e = f[f"ranks/{r:04d}/evaluations"][:]
    m = e[(e["cached"] == 0) & (e["migrant"] == 0)]
    keys = [bytes(k) for k in m["key"]]
    assert len(set(keys)) == len(keys), f"rank {r} measured a setting twice"
    new.append(len(m))
fills = [int(f[f"ranks/{r:04d}/generations"]["fills"].sum()) for r in range(n)]
print("new measurements per rank:", new, "of them fills:", fills)
for r in range(n):  # each generation's fills are some of its measurements
    g = f[f"ranks/{r:04d}/generations"][:]
    assert (g["fills"] <= g["evaluations"]).all(), r
# The fast ranks fill; which of them fills most depends on timing (what one has measured,
# the others learn and no longer pick), and the slow rank measures less than the busiest.
assert sum(fills[:-1]) > 0, fills
assert new[-1] < max(new[:-1]), new
PY
    # `report` counts each rank's fills: what its 16 cells per generation cannot account for.
    "$bin" report run --json >report.json || fail "report: $(cat report.json)"
    $py - report.json run/trace.h5 <<'PY' || fail "report's fills do not account for the extra measurements"
import json, sys, h5py
ranks = json.load(open(sys.argv[1]))["ranks"]
f = h5py.File(sys.argv[2], "r")
for r in ranks:
    g = f[f"ranks/{r['rank']:04d}/generations"][:]
    assert r["fills"] == int(g["fills"].sum()), r
    assert r["measured"] - r["fills"] <= 16 * len(g), r
print("fills per rank:", [r["fills"] for r in ranks])
PY
    # isletune-analyze summary counts the same fills.
    "$py" "$here/../../analysis/isletune-analyze" summary --csv run/trace.h5 >summary.csv ||
      fail "summary: $(cat summary.csv)"
    $py - report.json summary.csv <<'PY' || fail "report and summary count different fills"
import csv, io, json, sys
ranks = json.load(open(sys.argv[1]))["ranks"]
islands = list(csv.DictReader(io.StringIO(open(sys.argv[2]).read().strip().split("\n\n")[1])))
by_rank = {int(i["rank"]): int(i["fills"]) for i in islands}
assert [r["fills"] for r in ranks] == [by_rank[r["rank"]] for r in ranks], (ranks, by_rank)
PY
    ;;
  drift)
    # ga.migration.drift 2: islands wait for each other only when 2 generations apart, and
    # measure their models' next 2 picks while they would wait (fill 2). The run ends with a
    # complete trace (each generation's count holds its fills' rows) and every rank in the same
    # generation; SIGKILLed mid-run (ranks up to 3 generations apart), resume finishes it; lag
    # and drift together are refused.
    sed "s/mcr_threshold: 1.0}/mcr_threshold: 1.0, migration: {drift: 2, fill: 2}}/" "$config" >drift.yaml
    sed -i "s|\.\./data/|$here/../data/|" drift.yaml
    grep -q 'drift: 2, fill: 2' drift.yaml || fail "drift.yaml has no drift"
    launch run drift.yaml --out run >run.log 2>&1 || fail "run: $(cat run.log)"
    grep -q "$np ranks (drift 2, fill 2)," run.log || fail "the first line does not say drift 2, fill 2: $(head -1 run.log)"
    $py "$here/check_trace.py" run/trace.h5 || fail "incomplete trace"
    $py - run/trace.h5 <<'PY' || fail "the trace's configuration has no drift: 2 and fill: 2"
import sys, h5py
y = h5py.File(sys.argv[1], "r")["config"].attrs["yaml"]
y = y.decode() if isinstance(y, bytes) else y
assert "drift: 2" in y and "fill: 2" in y, y
PY
    run_and_kill killed 3 drift.yaml
    $py "$here/check_trace.py" killed/trace.h5 --partial 3 || fail "killed trace unreadable"
    launch resume killed >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    cat resume.log
    $py "$here/check_trace.py" killed/trace.h5 || fail "resumed trace incomplete"
    sed "s/drift: 2/drift: 1, lag: 1/" drift.yaml >both.yaml
    expect_error "excludes ga.migration.lag" launch run both.yaml --out both
    ;;
  async)
    # ga.migration.drift async: islands that never wait for each other. The run ends with a
    # complete trace, ranks in whatever generations they reached, one agreed stop reason;
    # a slowed rank does not slow the others (they run more generations than it); SIGKILLed
    # mid-run, resume continues every rank from its own newest generation and finishes.
    sed "s/mcr_threshold: 1.0}/mcr_threshold: 1.0, migration: {drift: async}}/" "$config" >async.yaml
    sed -i "s|\.\./data/|$here/../data/|" async.yaml
    grep -q 'drift: async' async.yaml || fail "async.yaml has no drift: async"
    launch run async.yaml --out run >run.log 2>&1 || fail "run: $(cat run.log)"
    grep -q "$np ranks (drift async)," run.log || fail "the first line does not say drift async: $(head -1 run.log)"
    $py "$here/check_trace.py" run/trace.h5 --async || fail "incomplete trace"
    $py - run/trace.h5 <<'PY' || fail "the trace's configuration or stop reason is wrong"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
y = f["config"].attrs["yaml"]
y = y.decode() if isinstance(y, bytes) else y
assert "drift: async" in y, y
reason = f["result"].attrs["stop_reason"]
reason = reason.decode() if isinstance(reason, bytes) else reason
assert reason in ("mcr", "max_generations"), reason
PY
    if ((np > 1)); then
      # The last rank 30 ms slower per measurement (ISLETUNE_REPLAY_DELAY_RANK): with a
      # generation limit every rank runs all its generations, the others sooner; none waits.
      sed "s/^budget: .*/budget: {max_generations: 12}/" async.yaml >slow.yaml
      ISLETUNE_REPLAY_DELAY_S=0.03 ISLETUNE_REPLAY_DELAY_RANK=$((np - 1)) launch run slow.yaml --out slow >slow.log 2>&1 ||
        fail "slow run: $(cat slow.log)"
      $py "$here/check_trace.py" slow/trace.h5 --async || fail "slow run: incomplete trace"
      $py - slow/trace.h5 "$np" <<'PY' || fail "the fast ranks waited for the slow one"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
np_ = int(sys.argv[2])
ends = []
for r in range(np_):
    g = f[f"ranks/{r:04d}/generations"][:]
    ends.append(float(g["wall_s"][-1]))  # the clock of each rank's last generation
    waits = float(g["wait_s"].sum())
    print(f"rank {r}: {len(g)} generations, wait {waits:.3f} s")
    assert r == np_ - 1 or waits < 0.5, f"rank {r} waited {waits:.3f} s"
PY
    fi
    run_and_kill killed 3 async.yaml
    $py "$here/check_trace.py" killed/trace.h5 --partial --async || fail "killed trace unreadable"
    launch resume killed >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    cat resume.log
    $py "$here/check_trace.py" killed/trace.h5 --async || fail "resumed trace incomplete"
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
  full_disk)
    # A full output file system: one sentence, non-zero exit on every rank, no crash;
    # the committed generations stay readable, and resume (after freeing space) ends
    # exactly like an uninterrupted run.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    small_tmpfs fullfs 3m
    dd if=/dev/zero of=fullfs/fill bs=1k count=2700 2>/dev/null
    expect_error "No space left on device" launch run "$config" --out fullfs/run
    $py "$here/check_trace.py" fullfs/run/trace.h5 --partial || fail "committed rows unreadable"
    "$bin" report fullfs/run >report.txt || fail "report of the stopped run"
    before=$(run_files_sum fullfs/run)
    expect_error "No space left on device\|cannot create" launch resume fullfs/run
    [[ $(run_files_sum fullfs/run) == "$before" ]] || fail "a resume on a full disk changed files"
    rm fullfs/fill
    launch resume fullfs/run >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    $py "$here/compare_traces.py" full/trace.h5 fullfs/run/trace.h5 || fail "resume changed the run"
    ;;
  half_written)
    # A trace.h5 that a kill or a full disk left half-written before the run was created:
    # resume says that `isletune run` starts it again (and changes nothing), run does.
    # Rows a resume would copy must be valid: a status outside 0-6 (100) is refused with
    # the file and row, not copied into a run that report then calls damaged. A damaged
    # checkpoint blob names its file and rank. No message quotes HDF5 calls or sources.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    for how in half zero; do
      d=hw-$how
      launch run "$config" --out $d >/dev/null 2>&1 || fail "run $d"
      rm $d/rank-*.h5 $d/.created
      if [[ $how == half ]]; then
        truncate -s $(($(stat -c %s $d/trace.h5) / 2)) $d/trace.h5
      else
        : >$d/trace.h5
      fi
      before=$(run_files_sum $d)
      expect_error 'never finished its creation .*start it again with `isletune run' launch resume $d
      [[ $(run_files_sum $d) == "$before" ]] || fail "resume of a half-written trace changed it"
      launch run "$config" --out $d >$d.log 2>&1 || fail "run after a half-written trace: $(cat $d.log)"
      $py "$here/compare_traces.py" full/trace.h5 $d/trace.h5 || fail "$d: a different run"
    done
    run_and_kill st 3
    $py -c "
import h5py
f = h5py.File('st/rank-0001.h5', 'r+'); e = f['evaluations']; rows = e[()]
rows['status'][2] = 100; e[...] = rows"
    before=$(run_files_sum st)
    out=$(expect_error "rank-0001.h5.*status 100.*rank 1 cannot be resumed (nothing was changed)" \
      launch resume st) || fail "$out"
    echo "$out"
    grep -q 'H5[A-Z][a-z]*(\|\.cpp\|HDF5 call' <<<"$out" && fail "raw HDF5 text in the message"
    [[ $(run_files_sum st) == "$before" ]] || fail "a refused resume changed files"
    run_and_kill blob 3
    $py -c "
import h5py
f = h5py.File('blob/rank-0001.h5', 'r+'); c = f['checkpoint']; s = c['slot%d' % c.attrs['current']]
b = s[()]; b[8:64] = 0xAB; s[...] = b"
    before=$(run_files_sum blob)
    expect_error "blob/rank-0001.h5: the checkpoint of rank 1 is damaged" launch resume blob
    [[ $(run_files_sum blob) == "$before" ]] || fail "a refused resume changed files"
    ;;
  planted_links)
    # A directory others may write (issue 50): links planted as the files a run, a resume
    # or an output writer creates never redirect a write. victim.txt stands for any file
    # the user can write; it must be byte-identical after every command.
    echo "the user's own file" >victim.txt
    victim=$work/victim.txt
    check_victim() { [[ $(cat victim.txt) == "the user's own file" ]] || fail "$1 wrote through a link"; }
    mkdir -p shared
    for name in .created.tmp status.txt.tmp .isletune-write-test; do ln -s "$victim" "shared/$name"; done
    launch run "$config" --out shared >shared.log 2>&1 || fail "run with planted links: $(cat shared.log)"
    check_victim run
    [[ -f shared/.created && ! -L shared/.created ]] || fail "no creation marker"
    # resume: a killed run, with rank-NNNN.h5.resume planted as links.
    run_and_kill killed 3
    for r in $(seq 0 $((np - 1))); do ln -s "$victim" "killed/$(printf 'rank-%04d.h5.resume' "$r")"; done
    ln -sf "$victim" killed/status.txt.tmp
    launch resume killed >resume.log 2>&1 || fail "resume with planted links: $(cat resume.log)"
    check_victim resume
    $py "$here/check_trace.py" killed/trace.h5 || fail "the resumed trace is incomplete"
    # .lock planted as a link: refused, not opened through.
    mkdir -p locked && ln -s "$victim" locked/.lock
    expect_error ".lock" launch run "$config" --out locked
    check_victim "run into a directory with a .lock link"
    # A dangling --out link: named as such, not "File exists".
    ln -s "$work/nowhere/out" dangling
    expect_error "symbolic link to a directory that does not exist" launch run "$config" --out dangling
    # Output files: a link (to the victim or dangling) is refused with or without
    # --overwrite; an existing file needs --overwrite.
    cp "$here/../data/synthetic-star2d1r.h5" ds.h5
    sed "s|dataset: .*|dataset: $work/ds.h5}|" "$config" >ds.yaml
    ln -s "$victim" out.link
    ln -s "$work/nowhere/x" out.dangling
    m=("$bin" measure ds.yaml --random 8 --backend replay -o)
    for target in out.link out.dangling; do
      expect_error "is a symbolic link" "${m[@]}" $target
      expect_error "is a symbolic link" "${m[@]}" $target --overwrite
      expect_error "is a symbolic link" "$bin" export ds.h5 --best -o $target --overwrite
      expect_error "is a symbolic link" "$bin" export ds.h5 --kernel-tuner-cache $target --overwrite
    done
    check_victim "measure / export onto a link"
    [[ -e nowhere ]] && fail "a write created the dangling link's target"
    "${m[@]}" new.h5 >m.log 2>&1 || fail "measure: $(cat m.log)"
    expect_error "already exists; add --overwrite" "${m[@]}" new.h5
    "${m[@]}" new.h5 --overwrite >m2.log 2>&1 || fail "measure --overwrite: $(cat m2.log)"
    "$bin" export new.h5 --best -o best.cu --kernel-tuner-cache kt.json >e.log 2>&1 || fail "export: $(cat e.log)"
    expect_error "already exists; add --overwrite" "$bin" export new.h5 --best -o best.cu
    expect_error "already exists; add --overwrite" "$bin" export new.h5 --kernel-tuner-cache kt.json
    "$bin" export new.h5 --best -o best.cu --kernel-tuner-cache kt.json --overwrite >e2.log 2>&1 ||
      fail "export --overwrite: $(cat e2.log)"
    ;;
  own_inputs)
    # Every writing command refuses to write onto its own inputs, recognised by file
    # identity (device and inode; the resolved path for a file that does not exist yet),
    # whatever the spelling (relative, `..`, a symlink, a hard link); nothing changes.
    launch run "$config" --out r >r.log 2>&1 || fail "run: $(cat r.log)"
    cp "$here/../data/synthetic-star2d1r.h5" ds.h5
    sed "s|dataset: .*|dataset: $work/ds.h5}|" "$config" >ds.yaml
    sed "s|dataset: .*|dataset: $work/r/trace.h5}|" "$config" >tr.yaml
    mkdir -p sub
    ln -sf "$work/ds.h5" link.h5
    ln -f ds.h5 hard.h5
    sums() { md5sum ds.h5 r/trace.h5 r/rank-*.h5 ds.yaml; }
    before=$(sums)
    m=("$bin" measure ds.yaml --random 8 --backend replay -o)
    for target in ds.h5 "$work/ds.h5" sub/../ds.h5 link.h5 hard.h5; do
      expect_error "is its replay dataset" "${m[@]}" "$target"
    done
    expect_error "is its configuration" "${m[@]}" ds.yaml
    expect_error "is its replay dataset (.*rank-0001.h5)" \
      "$bin" measure tr.yaml --random 8 --backend replay -o r/rank-0001.h5
    expect_error "is a run's trace" "${m[@]}" r/trace.h5
    expect_error "is a run's rank file" "${m[@]}" r/rank-0000.h5
    for flag in "--best -o" "--kernel-tuner-cache"; do
      read -r -a f <<<"$flag"
      expect_error "is the trace it exports from" "$bin" export r "${f[@]}" r/trace.h5
      expect_error "is a rank file it reads" "$bin" export r "${f[@]}" r/rank-0001.h5
      expect_error "is a rank file it reads" "$bin" export r/trace.h5 "${f[@]}" sub/../r/rank-0000.h5
      expect_error "is the trace it exports from" "$bin" export ds.h5 "${f[@]}" link.h5
    done
    # The run's own replay dataset (a copy, through a hard link).
    launch run ds.yaml --out r2 >r2.log 2>&1 || fail "run: $(cat r2.log)"
    expect_error "is the run's replay dataset" "$bin" export r2 --best -o hard.h5
    # Both outputs one file that does not exist yet, spelled two ways.
    expect_error "is also the --best output" "$bin" export r --best -o new.cu --kernel-tuner-cache sub/../new.cu
    [[ -e new.cu ]] && fail "a refused export wrote its output"
    [[ $(sums) == "$before" ]] || fail "a refused command changed an input"
    "${m[@]}" fresh.h5 >/dev/null || fail "measure to a new file"
    "$bin" export r --best -o best.cu --kernel-tuner-cache kt.json >/dev/null || fail "export"
    ;;
  replay_mismatch)
    # Replay answers only the problem its dataset recorded: another stencil, grid or step
    # count is refused with one sentence naming both; resume refuses a dataset whose
    # measurements changed since the run started; export --best refuses a run whose times
    # were replayed from another problem.
    sed "s|dataset: .*|dataset: $here/../data/h200-box2d2r.h5}|" "$config" >box.yaml
    expect_error "h200-box2d2r.h5 holds times of box2d2r on 4096x4096 over 48 steps, not of box.yaml's star2d1r on 4096x4096" \
      launch run box.yaml --out m
    sed "s|^grid: .*|grid: [8192, 4096]|; s|\.\./data/|$here/../data/|" "$config" >grid.yaml
    expect_error "star2d1r on 4096x4096 over 48 steps, not of grid.yaml's star2d1r on 8192x4096" \
      launch run grid.yaml --out m
    sed "s|^seed: 11|seed: 11\nsteps: 7|; s|\.\./data/|$here/../data/|" "$config" >steps.yaml
    expect_error "not of steps.yaml's star2d1r on 4096x4096 over 7 steps" launch run steps.yaml --out m
    sed "s|^stencil: .*|stencil: {name: mine, dims: 2, points: [[0,0,0.4],[1,0,0.1],[-1,0,0.1],[0,1,0.1],[0,-1,0.1],[2,0,0.1],[-2,0,0.1]]}|; s|^grid: .*|grid: [8192, 4096]|; s|\.\./data/|$here/../data/|" \
      "$config" >user.yaml
    expect_error "not of user.yaml's mine on 8192x4096" launch run user.yaml --out m
    expect_error "holds times of star2d1r" "$bin" measure user.yaml --random 8 -o m.h5 --backend replay
    [[ -e m/trace.h5 || -e m.h5 ]] && fail "a refused run created a trace"
    # A dataset replaced between run and resume.
    cp "$here/../data/synthetic-star2d1r.h5" ds.h5
    sed "s|dataset: .*|dataset: $work/ds.h5}|" "$config" >ds.yaml
    launch run ds.yaml --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    run_and_kill killed 3 ds.yaml
    cp ds.h5 ds.orig.h5
    $py -c "
import h5py, numpy as np
f = h5py.File('ds.h5', 'r+'); e = f['ranks/0000/evaluations']; rows = e[()]
rows['median_ms'] *= 0.5; e[...] = rows"
    before=$(run_files_sum killed)
    expect_error "ds.h5 is not the dataset killed was started with" launch resume killed
    [[ $(run_files_sum killed) == "$before" ]] || fail "the refused resume changed files"
    cp ds.orig.h5 ds.h5
    launch resume killed >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    $py "$here/compare_traces.py" full/trace.h5 killed/trace.h5 || fail "resume changed the run"
    # export --best of a run whose times came from another problem (a trace written before
    # replay refused one: its /config claims a grid its dataset was not measured on).
    cp -r full forged
    $py -c "
import h5py
f = h5py.File('forged/trace.h5', 'r+'); g = f['config']
g.attrs['yaml'] = g.attrs['yaml'].replace('grid: [4096, 4096]', 'grid: [8192, 4096]')"
    # (the dataset's path as messages show it: cut in the middle when long, the name kept)
    expect_error "ds.h5, which holds times of star2d1r on 4096x4096" \
      "$bin" export forged --best -o best.cu
    [[ -e best.cu ]] && fail "export wrote a kernel claiming another problem's time"
    "$bin" export full --best -o best.cu >/dev/null || fail "export of the matching run"
    ;;
  full_disk_points)
    # A full output file system at ISLETUNE_FILL_POINTS (default 6) moments of a run:
    # a tmpfs twice the size of the uninterrupted run (at least 2 MiB), pre-filled so that
    # between 8 KiB and 90% of that run's size is left (from "full while the run is
    # created" to "full in the last generations"). Each run must stop with one
    # sentence naming the disk's reason, leave no 0-byte trace.h5, and, after the space is
    # freed, what the sentence says (`isletune resume DIR`, else `isletune run` again; a
    # resume of a run whose creation failed starts it over or says `isletune run` does)
    # must end exactly like an uninterrupted run. Counts unresumable runs.
    n=${ISLETUNE_FILL_POINTS:-6}
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    run_k=$(du -sk full | cut -f1)
    disk_k=$((2 * run_k > 2048 ? 2 * run_k : 2048))
    small_tmpfs fdisk ${disk_k}k
    unresumable=0 unclear=0 identical=0 finished=0
    for ((t = 0; t < n; ++t)); do
      # Free space from 8 KiB to 90% of the run's size, spread evenly over the points.
      fill=$((disk_k - 8 - t * (run_k * 9 / 10 - 8) / (n > 1 ? n - 1 : 1)))
      rm -rf fdisk/* fdisk/.[!.]* 2>/dev/null
      dd if=/dev/zero of=fdisk/fill bs=1k count=$fill 2>/dev/null
      d=fdisk/r$t
      launch run "$config" --out $d >p$t.log 2>&1
      rc=$?
      verdict="exit $rc"
      if ((rc == 0)); then
        finished=$((finished + 1))
      elif ! grep -q "No space left on device" p$t.log ||
        [[ $(grep '^isletune' p$t.log | grep -vc ', strategy .*, backend ') != 1 ]] ||
        grep -q 'already exists\|another run\|H5[A-Z][a-z]*(\|\.cpp' p$t.log; then
        unclear=$((unclear + 1)) verdict+=" UNCLEAR: $(grep '^isletune' p$t.log | head -n 2 | tr '\n' ' ')"
      fi
      [[ -f $d/trace.h5 && ! -s $d/trace.h5 ]] && verdict+=" ZERO-BYTE-TRACE" unresumable=$((unresumable + 1))
      rm -f fdisk/fill
      # What the sentence tells the user to do: resume, or run again. A resume of a run
      # whose creation failed either starts it over (its configuration was written) or
      # says that `isletune run` starts it again.
      if grep -q 'isletune resume' p$t.log; then
        again=(launch resume $d)
      elif [[ ! -d $d ]]; then
        again=(launch run "$config" --out $d)
      elif launch resume $d >p$t.resume.log 2>&1; then
        again=(true)  # the resume started the run over and finished it
      else
        if ! grep -q 'start it again with `isletune run' p$t.resume.log; then
          verdict+=" RESUME-UNCLEAR: $(grep '^isletune' p$t.resume.log | head -n 1)"
          unclear=$((unclear + 1))
        fi
        again=(launch run "$config" --out $d)
      fi
      if "${again[@]}" >p$t.again.log 2>&1 &&
        $py "$here/compare_traces.py" full/trace.h5 $d/trace.h5 >/dev/null 2>&1; then
        identical=$((identical + 1)) verdict+=" identical"
      else
        unresumable=$((unresumable + 1))
        verdict+=" UNRESUMABLE: $(grep '^isletune\|^tune' p$t.again.log | tail -n 2 | tr '\n' ' ')"
      fi
      echo "point $t: $((disk_k - fill)) KiB free (run: $run_k KiB): $verdict"
    done
    echo "RESULT points=$n identical=$identical unresumable=$unresumable unclear=$unclear" \
      "finished_before_full=$finished"
    ((unresumable == 0 && unclear == 0)) || fail "full disk at $n points"
    ;;
  readonly)
    # A read-only output file system: one sentence naming the directory, non-zero exit.
    small_tmpfs ro 1m ro
    expect_error "ro/run\|Read-only" launch run "$config" --out ro/run
    expect_error "is not writable" launch run "$config" --out ro
    ;;
  concurrent)
    # Two runs started into one directory at the same moment: one finishes with the
    # complete trace, the other exits non-zero with one sentence; three tries.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    for try in 1 2 3; do
      rm -rf same
      launch run "$config" --out same >one.log 2>&1 &
      one=$!
      launch run "$config" --out same >two.log 2>&1 &
      two=$!
      wait $one; rc1=$?
      wait $two; rc2=$?
      echo "try $try: exits $rc1 $rc2"
      if ((rc1 == 0)); then winner=one.log loser=two.log rc=$rc2; else winner=two.log loser=one.log rc=$rc1; fi
      ((rc1 == 0 || rc2 == 0)) || fail "neither run finished: $(cat one.log two.log)"
      ((rc != 0)) || fail "both runs exited 0"
      grep -q '^best: ' "$winner" || fail "the winner printed no result"
      grep -q 'in use by another\|already holds a run\|already exists' "$loser" ||
        fail "the loser did not say why: $(cat "$loser")"
      [[ $(grep -c '^isletune' "$loser") == 1 ]] || fail "loser: not one sentence: $(cat "$loser")"
      $py "$here/check_trace.py" same/trace.h5 || fail "the winner's trace is damaged"
      $py "$here/compare_traces.py" full/trace.h5 same/trace.h5 || fail "the winner's trace differs"
    done
    ;;
  damaged_checkpoint)
    # One rank's checkpoint damaged: resume names the file, exits non-zero and changes
    # nothing (it used to start over and delete every file).
    run_and_kill killed 3
    $py -c "import h5py; del h5py.File('killed/rank-0001.h5', 'r+')['checkpoint']"
    before=$(run_files_sum killed)
    expect_error "rank-0001.h5 is damaged" launch resume killed
    [[ $(run_files_sum killed) == "$before" ]] || fail "resume changed the damaged run's files"
    ;;
  overwrite_input)
    # --overwrite of a directory whose trace.h5 is the run's own replay dataset: refused
    # before anything is deleted.
    launch run "$config" --out old >old.log 2>&1 || fail "run: $(cat old.log)"
    sed "s|dataset: .*|dataset: $work/old/trace.h5}|" "$config" >self.yaml
    before=$(run_files_sum old)
    expect_error "is an input of this run" launch run self.yaml --out old --overwrite
    [[ $(run_files_sum old) == "$before" ]] || fail "the refused overwrite changed files"
    $py "$here/check_trace.py" old/trace.h5 || fail "the old trace was damaged"
    ;;
  half_created)
    # Killed after rank 0 created trace.h5, before the rank files and the creation
    # marker: `resume` starts over (keeping the files aside), `run` accepts the
    # directory, `jobs/` runs it to the end; all end like an uninterrupted run.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    for d in h1 h2 h3; do
      launch run "$config" --out $d >/dev/null 2>&1 || fail "run $d"
      rm $d/rank-*.h5 $d/.created
      $py -c "import h5py; del h5py.File('$d/trace.h5', 'r+')['result']"
    done
    launch resume h1 >h1.log 2>&1 || fail "resume: $(cat h1.log)"
    grep -q 'never finished its creation.*starting over' h1.log || fail "resume: $(cat h1.log)"
    [[ -f h1/earlier-1/trace.h5 ]] || fail "resume deleted the earlier trace"
    $py "$here/compare_traces.py" full/trace.h5 h1/trace.h5 || fail "resume: a different run"
    launch run "$config" --out h2 >h2.log 2>&1 || fail "run refused a half-created dir: $(cat h2.log)"
    $py "$here/compare_traces.py" full/trace.h5 h2/trace.h5 || fail "run: a different run"
    "$here/../../jobs/mpirun/tune.sh" -n "$np" -b replay --isletune "$bin" "$config" h3 \
      >h3.log 2>&1 || fail "tune.sh: $(cat h3.log)"
    $py "$here/compare_traces.py" full/trace.h5 h3/trace.h5 || fail "tune.sh: a different run"
    ;;
  rank_killed)
    # One rank SIGKILLed mid-run: the job ends (no hang) with a non-zero exit, and
    # resume ends like an uninterrupted run.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    ISLETUNE_REPLAY_DELAY_S=0.25 "${mpi[@]}" -np "$np" "$bin" run "$config" --out one \
      >one.log 2>&1 &
    launcher=$!
    wait_for_generation one.log 2
    victim=$(children "$launcher" | tail -n 1)
    kill -9 "$victim"
    for ((i = 0; i < 300; ++i)); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
    kill -0 $launcher 2>/dev/null && fail "the job still runs 30 s after a rank died"
    wait $launcher && fail "a job with a killed rank exited 0"
    launch resume one >resume.log 2>&1 || fail "resume: $(cat resume.log)"
    $py "$here/compare_traces.py" full/trace.h5 one/trace.h5 || fail "resume changed the run"
    ;;
  bounded_retries)
    # jobs/ stops after ISLETUNE_MAX_FAILURES failed launches in a row, with a message.
    sed 's|dataset: .*|dataset: /nonexistent/none.h5}|' "$config" >missing.yaml
    tune=("$here/../../jobs/mpirun/tune.sh" -n "$np" -b replay --isletune "$bin")
    for try in 1 2 3; do
      "${tune[@]}" missing.yaml r >try$try.log 2>&1 && fail "a failing run exited 0"
      grep -q -- "-> mpirun" try$try.log || fail "try $try did not launch: $(cat try$try.log)"
    done
    "${tune[@]}" missing.yaml r >try4.log 2>&1 && fail "the fourth try exited 0"
    cat try4.log
    grep -q -- "-> mpirun" try4.log && fail "the fourth try launched again"
    grep -q "failed 3 times in a row; not retrying" try4.log || fail "no message"
    rm r/.failures
    "${tune[@]}" "$config" r >ok.log 2>&1 || fail "after deleting .failures: $(cat ok.log)"
    [[ -f r/.failures ]] && fail "a success kept the failure count"
    ;;
  tune_sigterm)
    # SIGTERM to jobs/mpirun/tune.sh with generations longer than 2 s (a bare mpirun
    # kills the ranks before /result): the wrapper asks mpirun with SIGUSR1, every rank
    # ends the generation, the run records stop reason `signal` and exits 0; running the
    # same command again resumes it to exactly the uninterrupted run.
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    tune=("$here/../../jobs/mpirun/tune.sh" -n "$np" -b replay --isletune "$bin" "$config" t)
    ISLETUNE_REPLAY_DELAY_S=2.5 "${tune[@]}" >t.log 2>&1 &
    wrapper=$!
    wait_for_generation t.log 1
    kill -TERM $wrapper
    wait $wrapper || fail "tune.sh after SIGTERM exited non-zero: $(cat t.log)"
    cat t.log
    h5dump -a /result/stop_reason t/trace.h5 | grep -q '"signal"' || fail "stop reason"
    "${tune[@]}" >t2.log 2>&1 || fail "tune.sh again: $(cat t2.log)"
    grep -q "resumable -> " t2.log || fail "the second tune.sh did not resume"
    $py "$here/compare_traces.py" full/trace.h5 t/trace.h5 || fail "resume changed the run"
    ;;
  frozen_rank)
    # A rank that stops answering (SIGSTOP) under every strategy, rank 0 and the last rank
    # in turn (ISLETUNE_FROZEN_REPEATS times, default 1): the others end the job within ISLETUNE_RANK_TIMEOUT_S (3 s here) plus a
    # margin, with one clear line, instead of waiting forever (island-ga's rank 1 used to
    # wait for migrants in MPI_Probe with no bound); resume then ends exactly like an
    # uninterrupted run.
    bad_timeouts=(nan -1 abc 0 inf "")
    for value in "${bad_timeouts[@]:0:5}"; do
      ISLETUNE_RANK_TIMEOUT_S=$value expect_error ISLETUNE_RANK_TIMEOUT_S \
        launch run "$config" --out badtimeout
      [[ -e badtimeout/trace.h5 ]] && fail "a refused timeout created a run"
    done
    trials=0 bounded=0 identical=0
    for strategy in "${strategies[@]}"; do
      strategy_config "$strategy"
      launch run "$strategy.yaml" --out "full-$strategy" >"full-$strategy.log" 2>&1 ||
        fail "run: $(cat "full-$strategy.log")"
      for trial in $(seq 1 "${ISLETUNE_FROZEN_REPEATS:-1}") ; do
      for victim_rank in 0 $((np - 1)); do
        d=frozen-$strategy-$victim_rank-$trial
        ISLETUNE_RANK_TIMEOUT_S=3 ISLETUNE_REPLAY_DELAY_S=0.25 "${mpi[@]}" -np "$np" "$bin" run \
          "$strategy.yaml" --out $d >$d.log 2>&1 &
        launcher=$!
        wait_for_generation $d.log 2
        victim=""
        for p in $(children "$launcher"); do
          grep -qz "^OMPI_COMM_WORLD_RANK=$victim_rank\$" /proc/$p/environ 2>/dev/null && victim=$p
        done
        [[ -n $victim ]] || fail "$strategy: no process of rank $victim_rank"
        kill -STOP "$victim"
        frozen_at=$SECONDS
        for ((i = 0; i < 300; ++i)); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
        if kill -0 $launcher 2>/dev/null; then
          kill -9 "$victim" $launcher 2>/dev/null
          fail "$strategy, rank $victim_rank frozen: the job still runs 30 s later"
        fi
        wait $launcher && fail "$strategy: a job with a frozen rank exited 0"
        took=$((SECONDS - frozen_at))
        kill -9 "$victim" 2>/dev/null
        trials=$((trials + 1))
        grep -q "no answer from the other ranks for 3 s" $d.log ||
          fail "$strategy, rank $victim_rank frozen: no message: $(grep isletune $d.log)"
        bounded=$((bounded + 1))
        launch resume $d >$d.resume.log 2>&1 ||
          fail "$strategy, rank $victim_rank frozen: resume: $(grep isletune $d.resume.log)"
        $py "$here/compare_traces.py" "full-$strategy/trace.h5" $d/trace.h5 >/dev/null ||
          fail "$strategy, rank $victim_rank frozen: resume changed the run"
        identical=$((identical + 1))
        echo "$strategy: rank $victim_rank frozen: ended after ${took} s ($(grep -o 'in [a-z ]* (a rank' $d.log | head -n 1 | sed 's/ (a rank//')), resume identical"
      done
      done
    done
    echo "RESULT frozen=$trials bounded=$bounded identical=$identical"
    ;;
  frozen_rank_fill)
    # The rank timeout holds with ga.migration.fill: the ranks that would wait for a frozen
    # one measure meanwhile (drift 1, fill 2), asking between batches whether it answered;
    # the wait counts from the first "not yet", so the job still ends within
    # ISLETUNE_RANK_TIMEOUT_S (3 s) + 5 s with one clear line (it used to go on filling
    # until the sample ran out: 20-150 s). Fills make the run timing-dependent, so resume
    # must complete, not reproduce an uninterrupted run.
    sed "s/mcr_threshold: 1.0}/mcr_threshold: 1.0, migration: {drift: 1, fill: 2}}/" "$config" >fill.yaml
    sed -i "s|\.\./data/|$here/../data/|" fill.yaml
    trials=0 bounded=0
    for trial in $(seq 1 "${ISLETUNE_FROZEN_REPEATS:-1}"); do
      for victim_rank in 0 $((np - 1)); do
        d=frozen-fill-$victim_rank-$trial
        ISLETUNE_RANK_TIMEOUT_S=3 ISLETUNE_REPLAY_DELAY_S=0.25 "${mpi[@]}" -np "$np" "$bin" run \
          fill.yaml --out $d >$d.log 2>&1 &
        launcher=$!
        wait_for_generation $d.log 2
        victim=""
        for p in $(children "$launcher"); do
          grep -qz "^OMPI_COMM_WORLD_RANK=$victim_rank\$" /proc/$p/environ 2>/dev/null && victim=$p
        done
        [[ -n $victim ]] || fail "no process of rank $victim_rank"
        kill -STOP "$victim"
        frozen_at=$(date +%s.%N)
        for ((i = 0; i < 300; ++i)); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
        if kill -0 $launcher 2>/dev/null; then
          kill -9 "$victim" $launcher 2>/dev/null
          fail "fill, rank $victim_rank frozen: the job still runs 30 s later"
        fi
        wait $launcher && fail "fill: a job with a frozen rank exited 0"
        took=$(echo "$(date +%s.%N) - $frozen_at" | bc)
        kill -9 "$victim" 2>/dev/null
        trials=$((trials + 1))
        grep -q "no answer from the other ranks for 3 s" $d.log ||
          fail "fill, rank $victim_rank frozen: no message: $(grep isletune $d.log)"
        (($(echo "$took <= 8" | bc))) ||
          fail "fill, rank $victim_rank frozen: the job ended ${took} s after the freeze (limit 3 s + 5 s)"
        bounded=$((bounded + 1))
        launch resume $d >$d.resume.log 2>&1 ||
          fail "fill, rank $victim_rank frozen: resume: $(grep isletune $d.resume.log)"
        $py "$here/check_trace.py" $d/trace.h5 >/dev/null || fail "fill: resumed trace incomplete"
        echo "fill: rank $victim_rank frozen: ended after ${took} s ($(grep -o 'in [a-z ]* (a rank' $d.log | head -n 1 | sed 's/ (a rank//')), resume complete"
      done
    done
    echo "RESULT frozen=$trials bounded=$bounded"
    ;;
  random_kills)
    # ISLETUNE_KILLS (default 2) trials: SIGKILL a random rank or mpirun at a random
    # moment of a slowed run, then run the same jobs/mpirun/tune.sh command a user would
    # (it resumes, or starts over a run killed before its creation finished); the result
    # must equal an uninterrupted run. Counts hangs (a process alive 30 s after the
    # kill), crashes (signals other than the SIGKILL, aborts, uncaught exceptions), silent
    # successes (a killed job that exits 0 without a result), identical resumes.
    n=${ISLETUNE_KILLS:-2}
    launch run "$config" --out full >full.log 2>&1 || fail "run: $(cat full.log)"
    tune=("$here/../../jobs/mpirun/tune.sh" -n "$np" -b replay --isletune "$bin" "$config")
    crash_pattern='Segmentation\|core dumped\|terminate called\|double free\|Aborted\|MPI_ABORT\|signal 6\|signal 11'
    identical=0 hangs=0 crashes=0 silent=0 late=0 failed=0
    for ((t = 1; t <= n; ++t)); do
      d=k$t
      ISLETUNE_REPLAY_DELAY_S=0.5 "${mpi[@]}" -np "$np" "$bin" run "$config" --out $d >$d.log 2>&1 &
      launcher=$!
      delay=$(awk -v s="$RANDOM$t" 'BEGIN { srand(s); printf "%.2f", 0.3 + rand() * 6 }')
      sleep "$delay"
      ranks=$(children "$launcher")
      target=$((RANDOM % (np + 1)))
      if ((target == np)); then
        what=mpirun
        kill -9 "$launcher" 2>/dev/null
      else
        what="rank $target"
        victim=$(sed -n "$((target + 1))p" <<<"$ranks")
        [[ -n $victim ]] && kill -9 "$victim" 2>/dev/null
      fi
      alive=1
      for ((i = 0; i < 300; ++i)); do
        alive=0
        for p in $launcher $ranks; do kill -0 "$p" 2>/dev/null && alive=1; done
        ((alive)) || break
        sleep 0.1
      done
      if ((alive)); then
        hangs=$((hangs + 1))
        kill -9 $launcher $ranks 2>/dev/null
      fi
      wait "$launcher"
      rc=$?
      verdict=""
      if ((rc == 0)); then
        if h5dump -a /result/stop_reason $d/trace.h5 >/dev/null 2>&1; then
          late=$((late + 1)) verdict="finished before the kill"
        else
          silent=$((silent + 1)) verdict="SILENT SUCCESS"
        fi
      fi
      grep -q "$crash_pattern" $d.log && crashes=$((crashes + 1)) verdict+=" CRASH(run)"
      if "${tune[@]}" $d >$d.again.log 2>&1; then
        grep -q "$crash_pattern" $d.again.log && crashes=$((crashes + 1)) verdict+=" CRASH(resume)"
        if $py "$here/compare_traces.py" full/trace.h5 $d/trace.h5 >/dev/null 2>&1; then
          identical=$((identical + 1))
          verdict+=" identical"
        else
          failed=$((failed + 1)) verdict+=" DIFFERENT"
        fi
      else
        failed=$((failed + 1)) verdict+=" RESUME FAILED: $(tail -n 3 $d.again.log | tr '\n' ' ')"
      fi
      echo "trial $t: SIGKILL $what after ${delay} s (ranks $(wc -w <<<"$ranks")): exit $rc:$verdict"
    done
    echo "RESULT kills=$n identical=$identical hangs=$hangs crashes=$crashes silent=$silent" \
      "finished_before_kill=$late failed=$failed"
    ((hangs == 0 && crashes == 0 && silent == 0 && failed == 0)) || fail "random kills"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name on $np ranks"

#!/usr/bin/env bash
# gpu.run.PlantedFaults: a real `mpirun -np 1 isletune run` on the GPU whose evaluator plants
# faults (ISLETUNE_PLANT_FAULTS, test-only): the 3rd distinct setting's kernel crashes
# (illegal address), the 5th traps, the 7th hangs, the 9th cannot launch, the 11th spins 1 s per
# launch. The run must finish with exit 0 and its trace must hold a crashed, a timeout and a
# launch_error row (each fault restarts the worker while the trace is open: issue 14.1), and
# the slow kernel's timeout must come from the probe before verification (its message names the
# reference kernel's time), not from the 4-s watchdog its 55 verification steps would meet. Then a second run is SIGKILLed
# mid-run, and `isletune resume` on a copy of its directory finishes it. The first run also
# shows that the worker compiles on every CPU although mpirun bound the rank to one core.
# Usage: planted_faults_run.sh ISLETUNE MPIEXEC [MPI FLAGS...]; exit 77 (skipped) without a GPU.
set -uo pipefail
bin=$1
shift
mpi=("$@")
# Without nvidia-smi the run itself tells (the CUDA backend's "needs an NVIDIA GPU" sentence).
if command -v nvidia-smi >/dev/null && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "SKIPPED: no NVIDIA GPU on this machine"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() {
  echo "FAIL: $*"
  exit 1
}

cat >faults.yaml <<'YAML'
stencil: star2d1r
grid: [509, 263]
space:
  streaming: {values: [0]}
  tdeg: {values: [1]}
  tbx: {values: [32, 64, 128]}
  tby: {values: [1, 2, 4, 8]}
  mfx: {values: [1, 2]}
  mfy: {values: [1, 2]}
ga: {population: 16, rows: 4, cols: 4, mutation_rate: 0.05, mcr_threshold: 1.0}
budget: {max_generations: 6}
evaluator: {backend: cuda, timeout_s: 4, compile_timeout_s: 20}
seed: 5
output: out
YAML

# 1. Every fault inside one run: the run finishes and records each.
ISLETUNE_PLANT_FAULTS="crash=3,trap=5,hang=7,launch=9,slow=11" \
  "${mpi[@]}" -np 1 "$bin" run faults.yaml --out run >run.log 2>&1
rc=$?
cat run.log
# Skipped only on a machine without a GPU: where nvidia-smi lists one, a backend that does not
# start fails the test.
if grep -q 'needs an NVIDIA GPU' run.log &&
   ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }; then
  echo "SKIPPED: the CUDA backend found no usable GPU"
  exit 77
fi
((rc == 0)) || fail "the run with planted faults exited $rc"
# mpirun binds the rank to one core; its worker must still compile on every CPU this test
# may use (one thread each, at most 32), as the run's first line says.
cpus=$(nproc)
((cpus > 32)) && cpus=32
grep -q "rank 0: NVRTC $cpus threads on CPUs" run.log ||
  fail "the worker does not compile on the node's $cpus CPUs (first line: $(head -1 run.log))"
grep -q '^best: ' run.log || fail "no best setting printed"
# The trace's evaluations by status, as `isletune report` counts them (no h5py needed).
"$bin" report run >report.txt || fail "report of the run"
cat report.txt
count() { awk -v s="$1" '$1 == s && NF == 2 { print $2 }' report.txt; }
grep -q '^result: ' report.txt || fail "no /result: the run did not finish"
for status in ok crashed timeout launch_error; do
  (($(count $status) >= 1)) || fail "no $status row in the trace"
done
(($(count crashed) >= 2)) || fail "crash and trap: two crashed rows expected"
grep -q "x the reference kernel's" report.txt ||
  fail "no timeout of the slow kernel's probe in the report"

# 2. SIGKILL mid-run, then resume a copy. Generation 0 measures the 16 distinct settings of its
# population; the hang of the 20th holds generation 1 for timeout_s, so the kill lands mid-run.
export ISLETUNE_PLANT_FAULTS="crash=2,launch=4,hang=20"
"${mpi[@]}" -np 1 "$bin" run faults.yaml --out killed >killed.log 2>&1 &
launcher=$!
for ((i = 0; i < 1200; ++i)); do
  grep -q '^gen *0 ' killed.log 2>/dev/null && break
  sleep 0.1
done
grep -q '^gen *0 ' killed.log || fail "generation 0 never appeared: $(cat killed.log)"
sleep 0.3
# SIGKILL the rank and its worker (a worker left in the planted hang would spin on the GPU).
# One scan of /proc (the worker has a compile process per CPU: a scan per process would take
# seconds and let the run finish first).
descendants() {
  local p stat rest ppid
  local -A children=()
  for p in /proc/[0-9]*; do
    { read -r stat <"$p/stat"; } 2>/dev/null || continue
    rest=${stat##*) }
    read -r _ ppid _ <<<"$rest"
    children[$ppid]+=" ${p#/proc/}"
  done
  local queue=("$1") next
  while ((${#queue[@]})); do
    next=${queue[0]}
    queue=("${queue[@]:1}")
    for p in ${children[$next]:-}; do
      echo "$p"
      queue+=("$p")
    done
  done
}
pids=$(descendants "$launcher")
for pid in $pids; do kill -9 "$pid" 2>/dev/null; done
wait "$launcher"
cat killed.log
"$bin" report killed >killed.txt 2>&1
grep -q '^result: ' killed.txt && fail "the run finished before the kill; the test needs a longer run"
cp -a killed copy
"${mpi[@]}" -np 1 "$bin" resume copy >resume.log 2>&1 ||
  fail "resume after SIGKILL: $(cat resume.log)"
cat resume.log
"$bin" report copy >resumed.txt || fail "report of the resumed run"
grep -q '^result: ' resumed.txt || fail "the resumed run has no /result"
echo "planted faults inside a real run, then kill and resume: passed"

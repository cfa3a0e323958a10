#!/usr/bin/env bash
# gpu.run.PlantedFaults: a real `mpirun -np 1 isletune run` on the GPU whose evaluator plants
# faults (ISLETUNE_PLANT_FAULTS, test-only): the 3rd distinct setting's kernel crashes
# (illegal address), the 5th traps, the 7th hangs, the 9th cannot launch. The run must finish
# with exit 0 and its trace must hold a crashed, a timeout and a launch_error row (each fault
# restarts the worker while the trace is open: issue 14.1). Then a second run is SIGKILLed
# mid-run, and `isletune resume` on a copy of its directory finishes it.
# Usage: planted_faults_run.sh ISLETUNE MPIEXEC [MPI FLAGS...]; exit 77 (skipped) without a GPU.
set -uo pipefail
bin=$1
shift
mpi=("$@")
py=/usr/bin/python3
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
ga: {population: 16, rows: 4, cols: 4}
budget: {max_generations: 4}
evaluator: {backend: cuda, timeout_s: 4, compile_timeout_s: 20}
seed: 5
output: out
YAML

# 1. Every fault inside one run: the run finishes and records each.
ISLETUNE_PLANT_FAULTS="crash=3,trap=5,hang=7,launch=9" \
  "${mpi[@]}" -np 1 "$bin" run faults.yaml --out run >run.log 2>&1
rc=$?
cat run.log
if grep -q 'needs an NVIDIA GPU' run.log; then
  echo "SKIPPED: the CUDA backend found no usable GPU"
  exit 77
fi
((rc == 0)) || fail "the run with planted faults exited $rc"
grep -q '^best: ' run.log || fail "no best setting printed"
$py - run/trace.h5 <<'PY' || fail "the trace lacks a planted fault's status"
import sys
import h5py
import numpy as np
names = ["ok", "invalid", "compile_error", "launch_error", "wrong_result", "crashed", "timeout"]
with h5py.File(sys.argv[1], "r") as f:
    assert "result" in f, "no /result: the run did not finish"
    ev = np.concatenate([f[f"ranks/{r:04d}"]["evaluations"][...]
                         for r in range(int(f["ranks"].attrs["count"]))])
counts = {n: int((ev["status"] == i).sum()) for i, n in enumerate(names)}
print("statuses in the trace:", counts)
missing = [n for n in ("crashed", "timeout", "launch_error", "ok") if counts[n] == 0]
assert not missing, f"no {missing} row"
assert counts["crashed"] >= 2, "crash and trap: two crashed rows expected"
PY

# 2. SIGKILL mid-run (faults again, no hang to keep it short), then resume a copy.
ISLETUNE_PLANT_FAULTS="crash=2,launch=4" \
  "${mpi[@]}" -np 1 "$bin" run faults.yaml --out killed >killed.log 2>&1 &
launcher=$!
for ((i = 0; i < 1200; ++i)); do
  grep -q '^gen *1 ' killed.log 2>/dev/null && break
  sleep 0.1
done
grep -q '^gen *1 ' killed.log || fail "generation 1 never appeared: $(cat killed.log)"
for p in /proc/[0-9]*; do
  stat=$(cat "$p/stat" 2>/dev/null) || continue
  rest=${stat##*) }
  read -r _ ppid _ <<<"$rest"
  [[ $ppid == "$launcher" ]] && kill -9 "${p#/proc/}" 2>/dev/null
done
wait "$launcher"
cp -a killed copy
ISLETUNE_PLANT_FAULTS="crash=2,launch=4" "${mpi[@]}" -np 1 "$bin" resume copy >resume.log 2>&1 ||
  fail "resume after SIGKILL: $(cat resume.log)"
cat resume.log
$py -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r"); assert "result" in f' copy/trace.h5 ||
  fail "the resumed run has no /result"
"$bin" report copy >report.txt || fail "report of the resumed run"
echo "planted faults inside a real run, then kill and resume: passed"

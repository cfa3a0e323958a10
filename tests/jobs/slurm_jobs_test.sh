#!/usr/bin/env bash
# jobs.* tests: runs jobs/slurm/*.sbatch on a private Slurm (slurm_cluster.sh: one node,
# or two for `multinode`) with the replay backend on the shipped dataset, and checks the
# traces they leave.
#
#   slurm_jobs_test.sh SCENARIO ISLETUNE SOURCE_DIR WORK_DIR
#
# Scenarios:
#   mpirun     jobs/mpirun/tune.sh, 2 ranks, no Slurm: SIGTERM to one rank stops both
#              (stop reason signal, exit 0) and running it again resumes to the end.
#   batch      tune.sbatch with 2 tasks, then tune-array.sbatch over 2 stencils: every job
#              completes, every trace has a result; submitting a finished run again
#              leaves it untouched.
#   timelimit  tune.sbatch with --time=1 and a slowed-down replay: the pre-time-limit
#              SIGTERM stops all ranks after a generation (stop reason `signal`, job
#              COMPLETED), and a second submission resumes the same run to a final result.
#   multinode  two nodes (n1, n2: two slurmd on this host, each with its own /tmp and
#              /dev/shm), tune.sbatch --nodes=2 --ntasks-per-node=2 with srun: the job
#              spans both nodes, every rank wrote its part of the trace, each node's ranks
#              are node ranks 0 and 1 of 2 with their own GPU and disjoint CPU shares of
#              the node; `scontrol requeue` mid-run stops the ranks after a generation and
#              the requeued job resumes the run to its end. Then the same with
#              ISLETUNE_LAUNCHER=mpirun, and a run directory the nodes do not share
#              (/tmp) is refused before any rank starts.
# Exit 77 (ctest SKIP_RETURN_CODE) when the machine cannot run Slurm; the daemons are
# always stopped on exit.
set -euo pipefail

scenario=${1:?scenario}
isletune=${2:?isletune binary}
source_dir=${3:?source dir}
work=${4:?work dir}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dataset=$source_dir/tests/data/synthetic-star2d1r.h5

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
log() { echo "[$(date +%T)] $*"; }

rm -rf "$work"
mkdir -p "$work"
if [[ $scenario != mpirun ]]; then
  cluster=$work/slurm
  rc=0
  nodes=1
  [[ $scenario == multinode ]] && nodes=2
  "$here/slurm_cluster.sh" start "$cluster" "$nodes" >/dev/null || rc=$?
  trap '"$here/slurm_cluster.sh" stop "$cluster"' EXIT
  if ((rc == 77)); then exit 77; fi
  ((rc == 0)) || fail "could not start the test Slurm (logs in $cluster/log)"
  export SLURM_CONF=$cluster/etc/slurm.conf
  export PATH=$PATH:/usr/sbin:/sbin
  log "Slurm up: $(sinfo -h -N -o '%N %T %c CPUs %G' | tr '\n' ';')"
fi

[[ -x $isletune ]] || fail "no isletune binary at $isletune"
[[ -r $dataset ]] || fail "no replay dataset at $dataset"
export ISLETUNE=$isletune ISLETUNE_BACKEND=replay

# Writes to $1 a replay config for stencil $2 (a template passes {{stencil}}) with at
# most $3 generations; the space is the one the synthetic dataset was recorded on.
# $4 = mcr_threshold, $5 = mutation_rate, $6 = sampler.sample_ratio. Slow runs turn the
# MCR stop off (0), mutate often and sample the whole dataset, so every generation has new
# settings to measure (the replay delay applies per measured batch) until the time limit.
write_config() {
  cat >"$1" <<YAML
# Replay search on the shipped synthetic dataset (tests/jobs).
stencil: $2
grid: [4096, 4096]
space:
  streaming: {values: [0]}
  tdeg: {values: [1]}
  tbx: {values: [8, 32, 64, 128, 256]}
  tby: {values: [1, 2, 4, 8, 16, 32]}
  mfx: {values: [1, 2, 4]}
  mfy: {values: [1, 2, 4]}
  ufx: {values: [1, 2]}
  ufy: {values: [1, 2]}
sampler:
  sample_ratio: ${6:-0.1}
ga:
  mcr_threshold: ${4:-0.5}
  mutation_rate: ${5:-0.005}
budget:
  max_generations: ${3:-12}
evaluator:
  backend: replay
  dataset: $dataset
seed: 7
YAML
}

# Submits a job (sbatch arguments in "$@") and prints its id.
submit() { sbatch --parsable --cpus-per-task=1 "$@" | cut -d';' -f1; }

# Waits until every job in "$@" (job or array ids) has left the queue, up to $TIMEOUT s.
wait_jobs() {
  local deadline=$((SECONDS + ${TIMEOUT:-300}))
  while [[ -n $(squeue -h -j "$(
    IFS=,
    echo "$*"
  )" 2>/dev/null) ]]; do
    ((SECONDS < deadline)) || fail "jobs $* still queued after ${TIMEOUT:-300} s: $(squeue -h)"
    sleep 1
  done
}

# Prints field $2 (e.g. JobState, ExitCode) of job $1.
job_field() { scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

# Prints the string attribute $2 of /result in run dir $1.
result_attr() {
  h5dump -a "/result/$2" "$1/trace.h5" 2>/dev/null | sed -n 's/.*(0): "\(.*\)".*/\1/p' | head -n 1
}

# Checks that job $1 completed with exit 0 and that run dir $2 has a finished trace with
# $3 ranks; prints the job's output on failure.
expect_finished() {
  local job=$1 dir=$2 ranks=$3 out=$4
  local state code reason key
  state=$(job_field "$job" JobState)
  code=$(job_field "$job" ExitCode)
  [[ $state == COMPLETED && $code == 0:0 ]] ||
    fail "job $job: state $state, exit $code; output:$(echo; cat "$out" 2>/dev/null)"
  [[ -f $dir/trace.h5 ]] || fail "job $job left no $dir/trace.h5; output:$(echo; cat "$out")"
  h5dump -H "$dir/trace.h5" >/dev/null || fail "$dir/trace.h5 is not readable by h5dump"
  local r
  for ((r = 0; r < ranks; r++)); do
    [[ -f $dir/$(printf 'rank-%04d.h5' "$r") ]] || fail "$dir has no rank file of rank $r"
  done
  reason=$(result_attr "$dir" stop_reason)
  key=$(result_attr "$dir" best_key)
  [[ -n $reason && $reason != signal && $reason != none ]] ||
    fail "$dir: stop reason '$reason', expected a finished search"
  [[ -n $key ]] || fail "$dir: /result has no best_key"
  "$isletune" report "$dir" >"$dir.report" 2>&1 || fail "isletune report $dir failed: $(cat "$dir.report")"
  log "job $job: COMPLETED, $dir: stop reason $reason, best $key"
}

scenario_batch() {
  local cfg=$work/star2d1r.yaml run=$work/runs/star2d1r out=$work/tune-%j.out
  write_config "$cfg" star2d1r
  local job
  job=$(submit --ntasks-per-node=2 --output="$out" "$source_dir/jobs/slurm/tune.sbatch" "$cfg" "$run")
  log "submitted tune.sbatch as job $job (2 tasks)"
  TIMEOUT=300 wait_jobs "$job"
  expect_finished "$job" "$run" 2 "${out//%j/$job}"

  # A finished run submitted again is left alone.
  local before
  before=$(stat -c %Y.%s "$run/trace.h5")
  job=$(submit --ntasks-per-node=2 --output="$out" "$source_dir/jobs/slurm/tune.sbatch" "$cfg" "$run")
  wait_jobs "$job"
  grep -q "already holds a finished run" "${out//%j/$job}" ||
    fail "resubmitting a finished run did not skip it: $(cat "${out//%j/$job}")"
  [[ $(stat -c %Y.%s "$run/trace.h5") == "$before" ]] || fail "resubmission changed a finished trace"
  log "resubmitted finished run: skipped, trace unchanged"

  # The array: one stencil per task from a template, each replaying its own recorded
  # dataset (replay refuses a dataset of another stencil): the shipped H200 datasets of
  # star2d1r and box2d2r, both 4096^2, named through {{stencil}}.
  local template=$work/array.yaml root=$work/array array
  write_config "$template" '{{stencil}}'
  sed -i "s|^  dataset: .*|  dataset: $source_dir/tests/data/h200-{{stencil}}.h5|" "$template"
  array=$(ISLETUNE_STENCILS="star2d1r box2d2r" submit --array=0-1 --ntasks-per-node=1 \
    --output="$work/array-%A_%a.out" "$source_dir/jobs/slurm/tune-array.sbatch" "$template" "$root")
  log "submitted tune-array.sbatch as array $array (2 tasks)"
  TIMEOUT=300 wait_jobs "$array"
  local i stencil
  i=0
  for stencil in star2d1r box2d2r; do
    grep -q "^stencil: $stencil\$" "$root/configs/$stencil.yaml" ||
      fail "array config for $stencil not generated from the template"
    expect_finished "${array}_$i" "$root/$stencil" 1 "$work/array-${array}_$i.out"
    i=$((i + 1))
  done
}

scenario_timelimit() {
  local cfg=$work/slow.yaml run=$work/runs/slow out=$work/slow-%j.out
  # Enough generations that the run outlives the 1-minute limit at 1 s per generation.
  write_config "$cfg" star2d1r 400 0 0.2 1
  export ISLETUNE_REPLAY_DELAY_S=1
  local job1 job2 reason gens1 gens2
  job1=$(submit --ntasks-per-node=2 --time=1 --signal=B:TERM@45 --output="$out" \
    "$source_dir/jobs/slurm/tune.sbatch" "$cfg" "$run")
  log "submitted slow tune.sbatch as job $job1 (2 tasks, --time=1, SIGTERM 45 s before)"
  TIMEOUT=200 wait_jobs "$job1"
  local out1=${out//%j/$job1}
  [[ $(job_field "$job1" JobState) == COMPLETED ]] ||
    fail "job $job1 did not stop cleanly before its time limit: $(job_field "$job1" JobState); $(cat "$out1")"
  grep -q "stop requested (TERM)" "$out1" || fail "job $job1 never got the time-limit SIGTERM: $(cat "$out1")"
  reason=$(result_attr "$run" stop_reason)
  [[ $reason == signal ]] || fail "after the time-limit signal the stop reason is '$reason', expected signal; $(cat "$out1")"
  gens1=$(h5dump -a /result/generations "$run/trace.h5" | sed -n 's/.*(0): \([0-9]*\).*/\1/p')
  log "job $job1: COMPLETED, stop reason signal after ${gens1} generations"

  # The same submission again continues the run to its end.
  unset ISLETUNE_REPLAY_DELAY_S
  job2=$(submit --ntasks-per-node=2 --output="$out" "$source_dir/jobs/slurm/tune.sbatch" "$cfg" "$run")
  TIMEOUT=300 wait_jobs "$job2"
  grep -q "resumable -> .* resume $run" "${out//%j/$job2}" ||
    fail "job $job2 did not resume the interrupted run: $(cat "${out//%j/$job2}")"
  expect_finished "$job2" "$run" 2 "${out//%j/$job2}"
  gens2=$(h5dump -a /result/generations "$run/trace.h5" | sed -n 's/.*(0): \([0-9]*\).*/\1/p')
  ((gens2 > gens1)) || fail "resumed run has $gens2 generations, not more than the $gens1 before"
  log "job $job2 resumed the run: ${gens1} -> ${gens2} generations"
}

# jobs/mpirun/tune.sh with 2 ranks: SIGTERM to ONE rank stops both after a generation
# (stop reason signal, exit 0); running the same command again resumes to the end.
scenario_mpirun() {
  local cfg=$work/slow.yaml run=$work/runs/slow
  write_config "$cfg" star2d1r 60 0 0.2 1
  ISLETUNE_REPLAY_DELAY_S=0.5 "$source_dir/jobs/mpirun/tune.sh" -n 2 "$cfg" "$run" \
    >"$work/first.out" 2>&1 &
  local launcher=$! rank="" rc=0
  local deadline=$((SECONDS + 60))
  # The ranks are the children of mpirun (tune.sh's child); wait for their rank files.
  until [[ -n $rank && -f $run/rank-0001.h5 ]]; do
    ((SECONDS < deadline)) || fail "no rank started: $(cat "$work/first.out")"
    sleep 0.5
    local mpirun_pid
    mpirun_pid=$(pgrep -P "$launcher" | head -n 1 || true)
    [[ -n $mpirun_pid ]] && rank=$(pgrep -P "$mpirun_pid" | sort -n | tail -n 1 || true)
  done
  sleep 2
  log "SIGTERM to one rank (pid $rank)"
  kill -TERM "$rank"
  wait "$launcher" || rc=$?
  ((rc == 0)) || fail "tune.sh exited $rc after SIGTERM to one rank: $(cat "$work/first.out")"
  local reason
  reason=$(result_attr "$run" stop_reason)
  [[ $reason == signal ]] || fail "stop reason '$reason' after SIGTERM, expected signal: $(cat "$work/first.out")"
  log "both ranks stopped, stop reason signal"
  "$source_dir/jobs/mpirun/tune.sh" -n 2 "$cfg" "$run" >"$work/second.out" 2>&1 ||
    fail "tune.sh resume failed: $(cat "$work/second.out")"
  grep -q "resumable -> .* resume $run" "$work/second.out" || fail "second tune.sh did not resume: $(cat "$work/second.out")"
  reason=$(result_attr "$run" stop_reason)
  [[ $reason != signal && -n $reason ]] || fail "resumed run ended with stop reason '$reason'"
  log "resumed to the end: stop reason $reason"
}

# Checks the per-rank environment of run dir $1 (job $2, $3 nodes x $4 ranks each): the
# ranks are spread over the job's nodes, $4 on each, with node ranks 0..$4-1 of $4,
# distinct GPUs and pairwise disjoint, non-empty CPU shares within each node; every rank
# measured settings of its own (its rank file holds its part of the trace).
expect_layout() {
  local dir=$1 job=$2 nodes=$3 per_node=$4
  local nodelist
  nodelist=$(scontrol show hostnames "$(job_field "$job" NodeList)" | sort | tr '\n' ' ')
  "$isletune" report "$dir" --json >"$dir.json" || fail "isletune report --json $dir failed"
  python3 - "$dir.json" "$nodes" "$per_node" "$nodelist" <<'PY' || fail "rank layout of $dir is wrong (report: $dir.json)"
import json, sys
doc = json.load(open(sys.argv[1]))
nodes, per_node = int(sys.argv[2]), int(sys.argv[3])
job_nodes = sorted(sys.argv[4].split())
ranks = doc["ranks"]
def cpus(text):
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
errors = []
if len(ranks) != nodes * per_node:
    errors.append(f"{len(ranks)} ranks in the report, expected {nodes * per_node}")
by_node = {}
for r in ranks:
    by_node.setdefault(r["node"], []).append(r)
    if r["measured"] <= 0:
        errors.append(f"rank {r['rank']} measured nothing")
    if not r["compile_cpus"]:
        errors.append(f"rank {r['rank']} recorded no CPU share")
if sorted(by_node) != job_nodes or len(job_nodes) != nodes:
    errors.append(f"ranks ran on {sorted(by_node)}, the job had {job_nodes}, expected {nodes} nodes")
for node, rs in sorted(by_node.items()):
    if sorted(r["node_rank"] for r in rs) != list(range(per_node)) or \
            any(r["node_ranks"] != per_node for r in rs):
        errors.append(f"{node}: node ranks {[(r['node_rank'], r['node_ranks']) for r in rs]}")
    gpus = [r["gpu_device"] for r in rs]
    if len(set(gpus)) != len(gpus):
        errors.append(f"{node}: ranks share a GPU: {gpus}")
    shares = [cpus(r["compile_cpus"]) for r in rs if r["compile_cpus"]]
    for i in range(len(shares)):
        for j in range(i + 1, len(shares)):
            if shares[i] & shares[j]:
                errors.append(f"{node}: CPU shares overlap: {[r['compile_cpus'] for r in rs]}")
    print(f"  {node}: " + "; ".join(
        f"rank {r['rank']} = node rank {r['node_rank']}/{r['node_ranks']}, GPU {r['gpu_device']}, "
        f"CPUs {r['compile_cpus']}, {r['measured']} measured" for r in sorted(rs, key=lambda r: r["rank"])))
for e in errors:
    print("layout:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
}

# Waits up to $2 s until job $1 is COMPLETED or FAILED after $3 restarts (a requeued job
# leaves and re-enters the queue, so squeue alone cannot tell).
wait_restarted_job() {
  local job=$1 deadline=$((SECONDS + $2)) restarts=$3 state
  while true; do
    state=$(job_field "$job" JobState)
    if [[ $(job_field "$job" Restarts) -ge $restarts ]] &&
      [[ $state == COMPLETED || $state == FAILED || $state == CANCELLED ]]; then
      return
    fi
    ((SECONDS < deadline)) || fail "job $job: $state after $2 s, $(job_field "$job" Restarts) restarts"
    sleep 1
  done
}

scenario_multinode() {
  # Every "node" is this host: the ranks of different nodes talk over TCP, which Open MPI
  # keeps off the loopback interface unless told (a CI machine may have no other).
  export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
  local cfg=$work/slow.yaml run=$work/runs/multi out=$work/multi-%j.out job
  # Slow enough (0.5 s per generation) that the requeue comes mid-run.
  write_config "$cfg" star2d1r 40 0 0.2 1
  export ISLETUNE_REPLAY_DELAY_S=0.5
  job=$(submit --nodes=2 --ntasks-per-node=2 --output="$out" \
    "$source_dir/jobs/slurm/tune.sbatch" "$cfg" "$run")
  local log_file=${out//%j/$job}
  log "submitted tune.sbatch --nodes=2 --ntasks-per-node=2 as job $job"
  local deadline=$((SECONDS + 120))
  until [[ -s $run/status.txt && -f $run/rank-0003.h5 ]] &&
    [[ $(sed -n 's/^gen *\([0-9]*\).*/\1/p' "$run/status.txt") -ge 3 ]]; do
    ((SECONDS < deadline)) || fail "job $job: no progress after 120 s: $(cat "$log_file" 2>/dev/null)"
    [[ -n $(squeue -h -j "$job") ]] || fail "job $job ended before the requeue: $(cat "$log_file")"
    sleep 0.5
  done
  local gens_before
  gens_before=$(sed -n 's/^gen *\([0-9]*\).*/\1/p' "$run/status.txt")
  log "job $job at generation $gens_before on $(job_field "$job" NodeList): scontrol requeue"
  scontrol requeue "$job"
  # Slurm holds a requeued batch job back for about two minutes (its begin time); once it
  # is pending again, let it start at once.
  deadline=$((SECONDS + 120))
  until [[ $(job_field "$job" JobState) == PENDING && $(job_field "$job" Restarts) -ge 1 ]]; do
    ((SECONDS < deadline)) || fail "job $job not pending after the requeue: $(job_field "$job" JobState)"
    sleep 0.5
  done
  scontrol update JobId="$job" StartTime=now
  wait_restarted_job "$job" 300 1
  unset ISLETUNE_REPLAY_DELAY_S
  grep -q "stop requested (TERM)" "$log_file" ||
    fail "job $job: the requeue's SIGTERM was not turned into a graceful stop: $(cat "$log_file")"
  grep -q "restart 1) .* 4 tasks on 2 node(s)" "$log_file" ||
    fail "job $job did not run again after the requeue on 2 nodes: $(cat "$log_file")"
  grep -q "resumable -> srun .* resume $run\$" "$log_file" ||
    fail "job $job did not resume the run after the requeue: $(cat "$log_file")"
  [[ $(job_field "$job" NumNodes) == 2 ]] || fail "job $job ran on $(job_field "$job" NumNodes) nodes"
  expect_finished "$job" "$run" 4 "$log_file"
  ! compgen -G "$run/earlier-*" >/dev/null || fail "resume started $run over (earlier-* kept)"
  local gens_after
  gens_after=$(h5dump -a /result/generations "$run/trace.h5" | sed -n 's/.*(0): \([0-9]*\).*/\1/p')
  ((gens_after > gens_before)) ||
    fail "after the requeue the run has $gens_after generations, not more than the $gens_before before"
  expect_layout "$run" "$job" 2 2
  log "job $job: requeued at generation $gens_before, resumed to $gens_after on 2 nodes"

  # mpirun inside the allocation: Open MPI starts its daemons with srun; each node's ranks
  # must still get GPUs of their own (tune.sbatch hands the daemons the node's GPUs).
  local cfg2=$work/quick.yaml run2=$work/runs/multi-mpirun
  write_config "$cfg2" star2d1r 8
  job=$(ISLETUNE_LAUNCHER=mpirun submit --nodes=2 --ntasks-per-node=2 --output="$out" \
    "$source_dir/jobs/slurm/tune.sbatch" "$cfg2" "$run2")
  TIMEOUT=200 wait_jobs "$job"
  grep -q "fresh -> mpirun " "${out//%j/$job}" || fail "job $job did not use mpirun: $(cat "${out//%j/$job}")"
  expect_finished "$job" "$run2" 4 "${out//%j/$job}"
  expect_layout "$run2" "$job" 2 2
  log "job $job (mpirun): 4 ranks on 2 nodes, a GPU each"

  # A run directory only one node sees (/tmp is per node here, as on real nodes) is
  # refused with one sentence before any rank starts.
  local private=/tmp/isletune-multinode-$$/run
  job=$(submit --nodes=2 --ntasks-per-node=1 --output="$out" \
    "$source_dir/jobs/slurm/tune.sbatch" "$cfg2" "$private")
  TIMEOUT=120 wait_jobs "$job"
  [[ $(job_field "$job" ExitCode) == 2:0 ]] ||
    fail "job $job with an unshared run dir: exit $(job_field "$job" ExitCode): $(cat "${out//%j/$job}")"
  grep -q "is not shared with every node of the job (not seen on: n2)" "${out//%j/$job}" ||
    fail "job $job: no clear refusal of an unshared run dir: $(cat "${out//%j/$job}")"
  log "job $job: unshared run dir $private refused"
}

case "$scenario" in
  mpirun) scenario_mpirun ;;
  multinode) scenario_multinode ;;
  batch) scenario_batch ;;
  timelimit) scenario_timelimit ;;
  *) fail "unknown scenario '$scenario'" ;;
esac
log "PASS $scenario"

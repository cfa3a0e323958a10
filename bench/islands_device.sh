#!/usr/bin/env bash
# The islands study on one host's GPUs (issue: islands that scale) in one device call: builds
# the CUDA targets, writes the user configs (bench/islands_configs.py: two stencils no test
# uses, BUDGET seconds, 16 NVRTC threads per rank), then runs bench/scaling.py (cold cubin
# caches, one GPU per rank) for each "DRIFT:RANKS" given, e.g. async:1,4 1:4 (async islands on
# 1 and 4 GPUs, then drift 1 on 4), SEEDS seeds each; "A+B" runs modes A and B at once on
# consecutive GPUs (async:1+async:2: GPU 0, and GPUs 1-2). The study stops starting runs after
# STOP seconds; traces, logs and figures go to $OUT. GPU_TESTS=1 or first: the GPU tests too
# (below).
#   [GPU_TESTS=first] bench/islands_device.sh BUDGET SEEDS STOP MODE...
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
B=$PWD/build-device
budget=$1
seeds=$2
stop=$3
shift 3
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
start=$(date +%s)
cmake -S . -B $B -DISLETUNE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build $B -j"$(nproc)" --target isletune isletune-worker >$OUT/build.txt 2>&1 ||
  { grep -E "error" -A3 $OUT/build.txt | head -40; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv |
  tee $OUT/nvidia-smi.csv
# GPU_TESTS=1: the GPU tests of the CUDA worker as well (kernels and families on every typical
# stencil, planted faults in a real run), each part cut at GPU_TESTS_S seconds (default 300).
# With 4 GPUs or more they run in three parts on GPUs 1-3, bound to the CPUs past the first
# quarter (a one-GPU run meanwhile has GPU 0 and at least that quarter), while the modes that
# leave those GPUs free run, and are waited for before a mode that needs them; else one after
# the other on GPU 0 before the modes.
ngpu=$(nvidia-smi -L | wc -l)
tests_pid=
if [ "${GPU_TESTS:-0}" != 0 ]; then
  t0=$(date +%s)
  cmake --build $B -j"$(nproc)" --target test_gpu_kernels test_gpu_families >>$OUT/build.txt 2>&1 ||
    { grep -E "error" -A3 $OUT/build.txt | tail -40; }
  echo "GPU tests built in $(( $(date +%s) - t0 )) s"
  ncpu=$(nproc)
  q=$(( ncpu / 4 ))
  # part GPU CPUS LOG COMMAND...: the binaries directly (ctest's gtest discovery failed on the
  # H200 machine, 2026-11-28: its generated test list had a syntax error).
  part() {
    local gpu=$1 cpus=$2 log=$3
    shift 3
    ( export CUDA_VISIBLE_DEVICES=$gpu
      s=$(date +%s)
      (cd $B/tests/gpu && timeout "${GPU_TESTS_S:-300}" taskset -c "$cpus" "$@")
      echo "$* rc=$? in $(( $(date +%s) - s )) s" ) >>"$OUT/$log" 2>&1
  }
  faults() {
    # On GPU $1, unbound: the script checks that the worker compiles on every CPU of the node.
    ISLETUNE_WORKER=$B/bin/isletune-worker CUDA_VISIBLE_DEVICES=$1 timeout 200 \
      tests/gpu/planted_faults_run.sh $B/bin/isletune mpirun --oversubscribe -q --allow-run-as-root \
      >>"$OUT/gpu-tests-faults.txt" 2>&1
    echo "planted faults rc=$?" >>"$OUT/gpu-tests-faults.txt"
  }
  # The i-th quarter of the CPUs (the last one takes the remainder).
  slice() { echo $(( $1 * q ))-$(( $1 == 3 ? ncpu - 1 : ($1 + 1) * q - 1 )); }
  families=./test_gpu_families
  if [ "${GPU_TESTS}" = first ] && (( ngpu >= 4 )); then
    # Before the modes, on every GPU at once: kernels then planted faults on GPU 0, the
    # families in three parts on GPUs 1-3.
    ( part 0 "$(slice 0)" gpu-tests-kernels.txt ./test_gpu_kernels --gtest_brief=1; faults 0 ) &
    p0=$!
    part 1 "$(slice 1)" gpu-tests-families-a.txt $families --gtest_brief=1 \
      '--gtest_filter=-*OnAnOddGrid*:*SmallerThanOneTile*' &
    p1=$!
    part 2 "$(slice 2)" gpu-tests-families-b.txt $families --gtest_brief=1 \
      '--gtest_filter=*SmallerThanOneTile*' &
    p2=$!
    part 3 "$(slice 3)" gpu-tests-families-c.txt $families --gtest_brief=1 \
      '--gtest_filter=*OnAnOddGrid*' &
    p3=$!
    wait $p0 $p1 $p2 $p3
  elif (( ngpu >= 4 )); then
    ( part 1 "$(slice 1)" gpu-tests-kernels.txt ./test_gpu_kernels --gtest_brief=1; faults 1 ) &
    p1=$!
    part 2 "$(slice 2)" gpu-tests-families-a.txt $families --gtest_brief=1 \
      '--gtest_filter=-*OnAnOddGrid*' &
    p2=$!
    part 3 "$(slice 3)" gpu-tests-families-b.txt $families --gtest_brief=1 \
      '--gtest_filter=*OnAnOddGrid*' &
    p3=$!
    tests_pid="$p1 $p2 $p3"
  else
    part 0 0-$(( ncpu - 1 )) gpu-tests-kernels.txt ./test_gpu_kernels --gtest_brief=1
    part 0 0-$(( ncpu - 1 )) gpu-tests-families.txt $families --gtest_brief=1
    faults 0
  fi
fi
wait_tests() {
  [ "${GPU_TESTS:-0}" != 0 ] || return 0
  [ -z "$tests_pid" ] || wait $tests_pid  # (unquoted: the parts' PIDs)
  tests_pid=
  grep -E "FAILED|Failure|PASSED|SKIPPED \]|rc=" $OUT/gpu-tests-*.txt | tail -30
}
W=runs-device/islands
# run_mode DRIFT:RANKS [GPUS]: the study's runs of one mode (on GPUS, e.g. 1,2, when given).
run_mode() {
  local drift=${1%%:*} ranks=${1#*:} gpus=${2:-}
  local left=$(( stop - ($(date +%s) - start) ))
  (( left > 0 )) || { echo "# STOP reached: $1 not started"; return; }
  local configs args=()
  configs=$(bench/islands_configs.py $W/configs --budget-s "$budget" --drift "$drift")
  for c in $configs; do args+=(--config "$c"); done
  ( [ -z "$gpus" ] || export CUDA_VISIBLE_DEVICES=$gpus
    bench/scaling.py --backend cuda --build $B --nice 0 --seeds "$seeds" --ranks "$ranks" \
      --stop-after "$left" "${args[@]}" --work $W --runs ) >>"$OUT/islands.txt" 2>&1
}
# A mode "A+B" runs A and B at once on consecutive GPUs (e.g. async:1+async:2: one GPU and
# two beside it), each with one rank count.
for mode in "$@"; do
  if [[ $mode == *+* ]]; then
    wait_tests
    next=0
    pids=()
    IFS=+ read -ra parts <<<"$mode"
    for m in "${parts[@]}"; do
      n=${m#*:}
      gpus=$(seq -s, $next $(( next + n - 1 )))
      next=$(( next + n ))
      run_mode "$m" "$gpus" &
      pids+=($!)
    done
    wait "${pids[@]}"
    continue
  fi
  (( ${mode##*[:,]} > 1 )) && wait_tests
  run_mode "$mode"
done
wait_tests
for r in $W/*/np*-seed*/; do
  { echo "== $r"; $B/bin/isletune report "$r"; } >>"$OUT/reports.txt" 2>&1
done
# At most 8 files come back (16 MiB each): the reports; the GPU tests' logs in one; build,
# nvidia-smi and the runs' output in one archive; the one-GPU traces together; one archive per
# run of several GPUs.
cat $OUT/gpu-tests-*.txt >$OUT/gpu-tests.txt 2>/dev/null && rm -f $OUT/gpu-tests-*.txt
tar czf $OUT/logs.tar.gz -C $OUT build.txt nvidia-smi.csv islands.txt 2>/dev/null &&
  rm -f $OUT/build.txt $OUT/nvidia-smi.csv $OUT/islands.txt
one=$(ls -d $W/*/np1-seed*/ 2>/dev/null)
[ -z "$one" ] || tar czf $OUT/traces-np1.tar.gz $(for r in $one; do echo "$r"trace.h5 "$r"rank-*.h5; done)
for r in $W/*/np*-seed*/; do
  [[ $r == */np1-seed* ]] && continue
  name=$(basename "$(dirname "$r")")-$(basename "$r")
  tar czf "$OUT/traces-$name.tar.gz" "$r"trace.h5 "$r"rank-*.h5 2>/dev/null
done
ls -la $OUT

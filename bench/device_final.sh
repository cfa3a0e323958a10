#!/usr/bin/env bash
# Device-machine checks that need a real GPU, in as few calls as possible (one H100).
#   bench/device_final.sh check   build; GPU tests (kernel families on every OC, planted
#                                 faults, the worker)
#   bench/device_final.sh e2e     end-to-end user runs (star2d1r 8192^2,
#                                 box3d1r 512^3, an asymmetric user stencil: default space,
#                                 only a stencil, a grid and a budget) with the exported
#                                 best.cu built by nvcc alone and timed
#   bench/device_final.sh verify  build; the kernel families' GPU tests, newest code first
#                                 (streaming deep tdeg, user stencils, grids smaller than one
#                                 tile, odd grids, a default-space sample), each cut at
#                                 GPU_TEST_S, then the families benchmark of FAMILY_STENCILS,
#                                 one stencil at a time, each cut at FAMILY_S (default 120)
#   bench/device_final.sh tune S  build; bench/tune_all.py: every typical stencil tuned by
#                                 isletune run (island GA, default space) for S seconds each,
#                                 next to naive and copy from isletune-bench-kernels
# Logs and files land in $OUT (at most 8 files come back).
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
B=$PWD/build-device
log=$OUT/$1.log
exec > >(tee -a "$log") 2>&1
export ISLETUNE_CACHE_DIR=$PWD/build-device/cubins
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

cmake -S . -B $B -DISLETUNE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build $B -j"$(nproc)" --target isletune isletune-worker isletune-bench-kernels \
  test_gpu_families test_gpu_kernels >$OUT/build.txt 2>&1 ||
  { grep -E "error" -A3 $OUT/build.txt | head -40; exit 1; }
echo "built in $(elapsed) s"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
export PATH=$B/bin:$PATH
MPI="mpirun -q --allow-run-as-root --oversubscribe -np 1"
MPIX="mpirun -q --allow-run-as-root --oversubscribe"

# A user's run: default space, then the best kernel exported, built with nvcc alone and run;
# its time per step next to the recorded one.
user_run() {  # config name
  echo "== e2e $2: isletune run $1 (t=$(elapsed) s)"
  $MPI isletune run "$1" --backend cuda --out runs-device/$2 --overwrite | tail -4
  echo "run rc=${PIPESTATUS[0]}"
  isletune report runs-device/$2 | head -30
  isletune export runs-device/$2 --best -o runs-device/$2-best.cu &&
    nvcc -arch=sm_90 -O3 -o runs-device/$2-best runs-device/$2-best.cu &&
    runs-device/$2-best
  echo "best.cu rc=$? (t=$(elapsed) s)"
}

case "$1" in
check)
  rm -rf runs-device && mkdir -p runs-device
  for t in test_gpu_families test_gpu_kernels; do
    # Unbuffered, every test named: a run cut by the timeout still shows what passed.
    (cd $B/tests/gpu && timeout ${GPU_TEST_S:-200} stdbuf -oL ./$t > $OUT/$t.log 2>&1;
     echo "$t rc=$? (124: cut at ${GPU_TEST_S:-200} s)")
    grep -cE "^\[       OK \]" $OUT/$t.log; grep -E "FAILED|PASSED|SKIPPED \]|tests ran" $OUT/$t.log | head -12
    echo "(t=$(elapsed) s)"
  done
  tests/gpu/planted_faults_run.sh $B/bin/isletune $MPIX > $OUT/planted.log 2>&1
  echo "planted faults run rc=$? (t=$(elapsed) s)"; tail -15 $OUT/planted.log
  echo "done at t=$(elapsed) s"
  ;;
e2e)
  rm -rf runs-device && mkdir -p runs-device
  for c in star2d1r-8192 box3d1r-512 user-asym2d-8192; do
    sed -i 's/time_budget_s: [0-9]*/time_budget_s: '"${E2E_BUDGET:-45}"'/' config/e2e/$c.yaml
    user_run config/e2e/$c.yaml $c
  done
  tar czf $OUT/runs-device.tar.gz runs-device/*/trace.h5 runs-device/*/rank-*.h5 runs-device/*.cu 2>/dev/null
  echo "done at t=$(elapsed) s"
  ;;
verify)
  for f in 'FamiliesStreaming.*' 'FamiliesUserStencils.*' '*SmallerThanOneTile*' '*OnAnOddGrid*' \
           'FamiliesDefaultSpace.*'; do
    n=$(echo "$f" | tr -dc 'A-Za-z')
    (cd $B/tests/gpu && timeout ${GPU_TEST_S:-60} stdbuf -oL ./test_gpu_families --gtest_filter="$f" \
      > $OUT/gpu-$n.log 2>&1; echo "$f rc=$? (124: cut at ${GPU_TEST_S:-60} s)")
    grep -E "^\[  (FAILED|PASSED)|^\[       OK|SKIPPED \]" $OUT/gpu-$n.log | sort | uniq -c | head -5
    grep -E "Failure|wrong_result|launch_error|invalid" $OUT/gpu-$n.log | head -5
    echo "(t=$(elapsed) s)"
  done
  # One stencil at a time, each cut at FAMILY_S seconds (the 3-D boxes' register tiles compile
  # 2-20 s each: a whole list in one run can eat the call), rows appended to one CSV.
  for st in $(echo "${FAMILY_STENCILS:-star2d1r,star3d1r}" | tr ',' ' '); do
    timeout ${FAMILY_S:-120} stdbuf -oL $B/bin/isletune-bench-kernels --families --stencils "$st" \
      --csv $OUT/families-$st.csv >> $OUT/families.log 2>&1
    echo "families $st rc=$? (124: cut at ${FAMILY_S:-120} s) (t=$(elapsed) s)"
    if [ -s $OUT/families-$st.csv ]; then
      if [ -s $OUT/families.csv ]; then tail -n +2 $OUT/families-$st.csv; else cat $OUT/families-$st.csv; fi \
        >> $OUT/families.csv
      rm -f $OUT/families-$st.csv
    fi
  done
  tail -40 $OUT/families.log
  ;;
tune)
  python3 bench/tune_all.py --bin $B/bin --budget-s "${2:-15}" --out runs-device/tune \
    --csv $OUT/kernels-h100.csv
  tar czf $OUT/tune-traces.tar.gz runs-device/tune 2>/dev/null
  echo "done at t=$(elapsed) s"
  ;;
esac

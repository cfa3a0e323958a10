#!/usr/bin/env bash
# Device-machine checks that need real GPUs, in as few calls as possible.
#   bench/device_final.sh integrate   build; 2-rank CUDA search with jobs/mpirun/tune.sh
#                                     (distinct GPUs, migrants crossing); 1-rank end-to-end
#                                     run; export of the best kernel, built with nvcc and run
#   bench/device_final.sh datasets S  record replay datasets (config/datasets/*.yaml) for
#                                     S seconds, one stencil per GPU at a time
#   bench/device_final.sh single      one GPU: 1-rank end-to-end run, export built with nvcc
#                                     and run, then the whole gpu.* test set
# Logs and files land in $OUT (at most 8 files come back).
set -u
OUT=${OUT:-/tmp/isletune-out}
mkdir -p "$OUT"
B=$PWD/build-device
log=$OUT/$1.log
exec > >(tee -a "$log") 2>&1
export NCCL_NVLS_ENABLE=0
export ISLETUNE_CACHE_DIR=$PWD/build-device/cubins
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

cmake -S . -B $B -DISLETUNE_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake --build $B -j"$(nproc)" --target isletune isletune-worker test_gpu_kernels >$OUT/build.txt 2>&1 ||
  { grep -E "error" -A3 $OUT/build.txt | head -40; exit 1; }
echo "built in $(elapsed) s"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
export PATH=$B/bin:$PATH

# 1-rank CUDA search, then its best kernel exported, built with nvcc alone and run.
end_to_end() {
  echo "== 1 rank, cuda, mpirun -np 1 isletune run (t=$(elapsed) s)"
  mpirun --allow-run-as-root -np 1 isletune run config/examples/cuda-star2d2r-small.yaml \
    --backend cuda --out runs-device/np1 --seed 5
  echo "rc=$?"
  echo "== export (t=$(elapsed) s)"
  isletune export runs-device/np1 --best -o $OUT/best.cu &&
    nvcc -arch=sm_90 -O3 -o runs-device/best $OUT/best.cu && runs-device/best
  echo "best.cu rc=$? (t=$(elapsed) s)"
}

case "$1" in
integrate)
  rm -rf runs-device && mkdir -p runs-device
  echo "== 2 ranks, cuda, jobs/mpirun/tune.sh (t=$(elapsed) s)"
  jobs/mpirun/tune.sh -b cuda config/examples/cuda-star2d2r-small.yaml runs-device/x2
  echo "rc=$?"
  python3 - <<'PY'
import h5py
f = h5py.File("runs-device/x2/trace.h5", "r")
for r in ("0000", "0001"):
    env = f[f"environment/rank_{r}"].attrs
    m = f[f"ranks/{r}/migrations"][()]
    e = f[f"ranks/{r}/evaluations"][()]
    print(f"rank {r}: gpu {env['gpu_uuid']} {env['gpu_name']}, {len(e)} evaluations, "
          f"migrations sent {int((m['direction'] == 1).sum())}, received "
          f"{int((m['direction'] == -1).sum())}, migrant rows {int(e['migrant'].sum())}")
PY
  isletune report runs-device/x2 | head -40
  end_to_end
  tar czf $OUT/runs-device.tar.gz runs-device/x2 runs-device/np1
  echo "done at t=$(elapsed) s"
  ;;
single)
  rm -rf runs-device && mkdir -p runs-device
  end_to_end
  (cd $B/tests/gpu && ./test_gpu_kernels --gtest_brief=1 > $OUT/gpu-tests.log 2>&1; echo "gpu tests rc=$?")
  grep -E "FAILED|PASSED|SKIPPED \]|tests ran" $OUT/gpu-tests.log | head -20
  echo "done at t=$(elapsed) s"
  ;;
datasets)
  budget=${2:-300}
  left=$(( budget - $(elapsed) ))
  (CUDA_VISIBLE_DEVICES=0 timeout $left isletune measure config/datasets/star2d1r.yaml --random 4000 -o $OUT/star2d1r.h5 > $OUT/measure-star2d1r.txt 2>&1; echo "star2d1r rc=$?") &
  p1=$!
  (CUDA_VISIBLE_DEVICES=1 timeout $left isletune measure config/datasets/box2d2r.yaml --random 4000 -o $OUT/box2d2r.h5 > $OUT/measure-box2d2r.txt 2>&1; echo "box2d2r rc=$?") &
  p2=$!
  wait $p1 $p2  # a bare `wait` would also wait for the tee behind the log
  tail -3 $OUT/measure-*.txt
  ls -la $OUT
  echo "done at t=$(elapsed) s"
  ;;
esac

#!/usr/bin/env bash
# jobs.scripts_cli: every launch script answers --help (exit 0, a usage text, no Slurm
# variable needed) and --dry-run (the run directory's state and the command, nothing
# written) outside Slurm, on a fresh directory and on a finished run.
#   scripts_cli_test.sh ISLETUNE_BINARY SOURCE_DIR SCRATCH
set -euo pipefail
bin=$1 src=$2 scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
export ISLETUNE=$bin
unset SLURM_JOB_ID SLURM_SUBMIT_DIR SLURM_NTASKS SLURM_ARRAY_TASK_ID || true
fail() { echo "FAIL: $*" >&2; exit 1; }
config=$src/config/examples/replay-star2d1r.yaml
finished=$src/docs/data/h200-x2-star2d2r  # a real run that stopped on MCR

for script in jobs/mpirun/tune.sh jobs/slurm/tune.sbatch jobs/slurm/tune-array.sbatch; do
  out=$(bash "$src/$script" --help) || fail "$script --help exit $?"
  grep -q '^Usage:' <<<"$out" || fail "$script --help prints no usage: $out"
  grep -q -- '--dry-run' <<<"$out" || fail "$script --help does not mention --dry-run"
done

out=$(bash "$src/jobs/slurm/tune.sbatch" --dry-run "$config" "$scratch/run")
grep -q "^fresh -> .* run $config --out $scratch/run --backend" <<<"$out" || fail "sbatch fresh: $out"
[[ ! -e $scratch/run ]] || fail "sbatch --dry-run created $scratch/run"
# ISLETUNE_LAUNCHER=mpirun inside an allocation with GPUs: Open MPI's daemons (started with
# srun) get the node's GPUs, unless the user set plm_slurm_args.
out=$(SLURM_GPUS_ON_NODE=4 ISLETUNE_LAUNCHER=mpirun bash "$src/jobs/slurm/tune.sbatch" --dry-run "$config" "$scratch/run")
grep -q "^fresh -> mpirun .* --mca plm_slurm_args --gpus-per-node=4 .* run $config" <<<"$out" ||
  fail "sbatch mpirun daemons without the node's GPUs: $out"
out=$(SLURM_GPUS_ON_NODE=4 OMPI_MCA_plm_slurm_args=--x ISLETUNE_LAUNCHER=mpirun \
  bash "$src/jobs/slurm/tune.sbatch" --dry-run "$config" "$scratch/run")
! grep -q "plm_slurm_args" <<<"$out" || fail "sbatch mpirun overrode the user's plm_slurm_args: $out"
out=$(bash "$src/jobs/slurm/tune.sbatch" --dry-run "$config" "$finished")
grep -q '^finished:mcr -> nothing to do' <<<"$out" || fail "sbatch finished: $out"

out=$(bash "$src/jobs/slurm/tune-array.sbatch" --dry-run "$config" "$scratch/root")
grep -q 'submit with --array=0-23' <<<"$out" || fail "array: $out"
[[ $(grep -c '^task [0-9]*: .*: fresh -> ' <<<"$out") == 24 ]] || fail "array tasks: $out"
[[ ! -e $scratch/root ]] || fail "array --dry-run created $scratch/root"

out=$(bash "$src/jobs/mpirun/tune.sh" --dry-run -n 2 "$config" "$scratch/m")
grep -q "mpirun -q -np 2 .* run $config --out $scratch/m --backend" <<<"$out" || fail "mpirun: $out"
echo "ok: --help and --dry-run of every launch script"

#!/usr/bin/env bash
# Launches an isletune search on one node with mpirun: one rank (island) per GPU.
# Run `jobs/mpirun/tune.sh --help` for usage; docs/running.md explains the choices.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: jobs/mpirun/tune.sh [options] CONFIG OUTDIR [-- isletune run args...]

Runs `isletune run CONFIG --out OUTDIR` under mpirun with one rank per GPU of this node.
If OUTDIR already holds an interrupted run, it is continued with `isletune resume OUTDIR`
instead; a finished run is left alone.

Options:
  -n, --ranks N       number of ranks (default: $ISLETUNE_RANKS, else the GPUs seen by
                      `nvidia-smi -L` / CUDA_VISIBLE_DEVICES, else 1)
  -b, --backend B     cuda | replay (default: $ISLETUNE_BACKEND, else cuda with GPUs,
                      replay without)
      --isletune PATH the isletune executable (default: $ISLETUNE, PATH, build/bin)
      --bind SPEC     mpirun binding options, quoted (default: $ISLETUNE_BIND, else
                      "--bind-to none --map-by slot"; e.g. "--bind-to numa --map-by numa")
      --dry-run       print the command and exit
  -h, --help          this text

Extra arguments after `--` go to `isletune run` (e.g. --seed 7). SIGTERM or Ctrl-C stops
every rank gracefully at the end of the current generation (a second Ctrl-C kills);
the run stays resumable: run the same command again.
USAGE
}

ranks=${ISLETUNE_RANKS:-}
backend=${ISLETUNE_BACKEND:-}
bind=${ISLETUNE_BIND:---bind-to none --map-by slot}
dry_run=0
positional=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    -n | --ranks) ranks=${2:?"$1 needs a number"}; shift 2 ;;
    -b | --backend) backend=${2:?"$1 needs cuda or replay"}; shift 2 ;;
    --isletune) export ISLETUNE=${2:?"$1 needs a path"}; shift 2 ;;
    --bind) bind=${2?"$1 needs mpirun options"}; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; break ;;
    -*) echo "tune.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
if ((${#positional[@]} != 2)); then
  echo "tune.sh: expected CONFIG and OUTDIR (see --help)" >&2
  exit 2
fi
config=${positional[0]}
outdir=${positional[1]}

# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

gpus=$(isletune_gpu_count)
if [[ -z $ranks ]]; then
  ranks=$((gpus > 0 ? gpus : 1))
fi
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "tune.sh: --ranks must be a positive integer, got '$ranks'" >&2; exit 2; }
if [[ -z $backend ]]; then
  backend=$([[ $gpus -gt 0 ]] && echo cuda || echo replay)
fi
case "$backend" in cuda | replay) ;; *) echo "tune.sh: --backend must be cuda or replay, got '$backend'" >&2; exit 2 ;; esac
if [[ $backend == cuda ]] && ((gpus > 0 && ranks > gpus)); then
  echo "tune.sh: warning: $ranks ranks share $gpus GPUs; timings will interfere" >&2
fi

ISLETUNE_LAUNCH=(mpirun -q -np "$ranks")  # -q: an error is one sentence, no Open MPI footer
# shellcheck disable=SC2206  # the binding spec is a list of mpirun words
ISLETUNE_LAUNCH+=($bind)
[[ $(id -u) -eq 0 ]] && ISLETUNE_LAUNCH+=(--allow-run-as-root)
((ranks > $(nproc))) && ISLETUNE_LAUNCH+=(--oversubscribe)
# Each rank picks its GPU from its node-local rank (isletune does it), so every rank
# sees all GPUs; pass the environment isletune reads.
for var in CUDA_VISIBLE_DEVICES ISLETUNE_CACHE_DIR ISLETUNE_DATA_DIR ISLETUNE_REPLAY_DELAY_S; do
  [[ -n ${!var+x} ]] && ISLETUNE_LAUNCH+=(-x "$var")
done

if ((dry_run)); then
  echo "${ISLETUNE_LAUNCH[*]} $(isletune_binary || echo isletune) run $config --out $outdir --backend $backend $*"
  exit 0
fi
isletune_launch mpirun "$outdir" "$config" --backend "$backend" "$@"

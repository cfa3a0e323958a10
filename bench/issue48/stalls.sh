#!/usr/bin/env bash
# Issue 48: why the tdeg-1 streaming kernels of 3-D high-order stars stop where they do.
# Standalone, outside the worker (bench/harness/time_cubin.cu): the generated kernels of five
# settings, their DFMA-chain variants (chains.py: every long in-plane sum split into 2 or 3
# interleaved chains) timed with a checksum of the last output, and Nsight Compute's stall
# reasons for three of them.
#   bench/issue48/stalls.sh prepare DIR     # here: sources from build/bin/isletune-bench-kernels
#   bench/issue48/stalls.sh run DIR         # on the GPU (device tool, carry DIR); OUT for ncu
# TIME (kernels timed, two passes; a retimed kernel K also as K_k and K_kl, bench/issue48/kept.py,
# and K_n, K_nl, K_b and K_b4, bench/issue48/noprev.py), POISON,
# CHAINS (" _c2 _c3": their chain variants; "" none) and NCU
# (kernels profiled) choose what `run` does; the o* kernels are star3d4r's retimed kernel with
# fewer points a thread (2 x 1, 1 x 2; ufz 8, 4, 1) or fewer threads a block (32 x 4, 16 x 8),
# which fit two blocks an SM (docs/studies/2026-12-06-h200-budget-deadline-busy-tensor-pipe.md).
set -u
here=$(cd "$(dirname "$0")" && pwd)
mode=$1 dir=$2
declare -A SET G
SET[s4r35]="star3d4r streaming=1,merge=block,retiming=1,prefetch=1,tdeg=1,sd=2,sb=512,tbx=32,tby=8,tbz=1,mfx=2,mfy=2,mfz=1,ufz=8"
SET[s4c42]="star3d4r streaming=1,merge=block,retiming=0,prefetch=1,tdeg=1,sd=2,sb=512,tbx=32,tby=8,tbz=1,mfx=2,mfy=2,mfz=1,ufz=8"
SET[s3r36]="star3d3r streaming=1,merge=block,retiming=1,prefetch=1,tdeg=1,sd=2,sb=256,tbx=32,tby=8,tbz=1,mfx=2,mfy=4,mfz=1"
SET[s2r28]="star3d2r streaming=1,merge=block,retiming=1,prefetch=1,tdeg=1,sd=2,sb=512,tbx=128,tby=2,tbz=1,mfx=1,mfy=8,mfz=1"
SET[s2c44]="star3d2r streaming=1,merge=block,retiming=0,prefetch=1,tdeg=1,sd=2,sb=256,tbx=32,tby=32,tbz=1,mfx=2,mfy=1,mfz=1"
S4="star3d4r streaming=1,merge=block,retiming=1,prefetch=1,tdeg=1,sd=2,sb=512"
for u in 8 4 1; do
  SET[o21u$u]="$S4,tbx=32,tby=8,tbz=1,mfx=2,mfy=1,mfz=1,ufz=$u"
  SET[o12u$u]="$S4,tbx=32,tby=8,tbz=1,mfx=1,mfy=2,mfz=1,ufz=$u"
done
SET[o22t4]="$S4,tbx=32,tby=4,tbz=1,mfx=2,mfy=2,mfz=1,ufz=8"
SET[o22t16]="$S4,tbx=16,tby=8,tbz=1,mfx=2,mfy=2,mfz=1,ufz=8"
if [ "$mode" = prepare ]; then
  mkdir -p "$dir" && cp "$here/../harness/time_cubin.cu" "$here/chains.py" "$here/stalls.sh" "$dir/"
  for k in "${!SET[@]}"; do
    set -- ${SET[$k]}
    build/bin/isletune-bench-kernels --stencils "$1" --source "$2" >"$dir/$k.cu" 2>"$dir/$k.geom" || exit 1
    for c in 2 3; do python3 "$here/chains.py" "$dir/$k.cu" $c "$dir/${k}_c$c.cu"; done
    # Retimed kernels: level 1's kept values from the input (_k), and with two blocks an SM (_kl).
    if [[ $2 == *retiming=1* ]]; then
      python3 "$here/kept.py" "$dir/$k.cu" "$dir/${k}_k.cu" || exit 1
      python3 "$here/kept.py" "$dir/$k.cu" "$dir/${k}_kl.cu" --two-blocks || exit 1
      cp "$dir/$k.geom" "$dir/${k}_k.geom" && cp "$dir/$k.geom" "$dir/${k}_kl.geom"
      # The last level keeps nothing and leaves boundary points unwritten (_n, noprev.py), and
      # the same with one block an SM more than the generated kernel's two or one (_nl).
      python3 "$here/noprev.py" "$dir/$k.cu" "$dir/${k}_n.cu" || exit 1
      threads=$(sed -nE 's/.*__launch_bounds__\(([0-9]+), IslMain::MIN_BLOCKS\).*/\1/p' "$dir/$k.cu")
      sed -E "s/__launch_bounds__\(([0-9]+), IslMain::MIN_BLOCKS\)/__launch_bounds__(\1, $((threads > 128 ? 2 : 3)))/" \
        "$dir/${k}_n.cu" >"$dir/${k}_nl.cu"
      cp "$dir/$k.geom" "$dir/${k}_n.geom" && cp "$dir/$k.geom" "$dir/${k}_nl.geom"
      # ... with the boundary points stored when level 0 takes in the input plane (_b).
      python3 "$here/noprev.py" "$dir/$k.cu" "$dir/${k}_b.cu" --store-at-input || exit 1
      cp "$dir/$k.geom" "$dir/${k}_b.geom"
      # ... only by the threads that hold a boundary point of the plane, behind a branch (_b4).
      python3 "$here/noprev.py" "$dir/$k.cu" "$dir/${k}_b4.cu" --store-at-input-edge || exit 1
      cp "$dir/$k.geom" "$dir/${k}_b4.geom"
    fi
  done
  exit 0
fi
cd "$dir" || exit 1
O=${OUT:-/tmp/isletune-out}; mkdir -p "$O"
nvcc -O2 -o time_cubin time_cubin.cu -lcuda -lnvrtc || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
# Geometry: "block BX BY BZ grid GX GY GZ shared BYTES" from the .geom line.
geom() { sed -E 's/.*block ([0-9]+)x([0-9]+)x([0-9]+) grid ([0-9]+)x([0-9]+)x([0-9]+) shared ([0-9]+) B.*/\1 \2 \3 \4 \5 \6 \7/' "$1.geom"; }
for pass in 1 2; do
  for k in ${TIME-s4r35 s4c42 s3r36 s2r28}; do
    for v in "" ${CHAINS- _c2 _c3}; do ./time_cubin $k$v.cu 512 512 512 $(geom $k) 40 random 2>&1 | tail -1; done
  done
done
# POISON: kernels run once more with the output buffer NaN-filled (time_cubin random-nan): a
# NaN checksum shows points left unwritten.
for k in ${POISON-}; do ./time_cubin $k.cu 512 512 512 $(geom $k) 4 random-nan 2>&1 | tail -1; done
M=$(printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' barrier long_scoreboard \
  short_scoreboard mio_throttle lg_throttle wait math_pipe_throttle not_selected selected \
  dispatch_stall branch_resolving no_instruction)
M="${M}smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,smsp__warps_eligible.avg.per_cycle_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,gpu__time_duration.sum,launch__registers_per_thread"
for k in ${NCU-s4r35 s4c42 s2c44}; do
  timeout 120 ncu --clock-control none -k regex:isl_kernel -s 3 -c 1 --metrics "$M" \
    ./time_cubin $k.cu 512 512 512 $(geom $k) 6 random >"$O/ncu-$k.txt" 2>&1
  echo "== ncu $k rc=$?"
done

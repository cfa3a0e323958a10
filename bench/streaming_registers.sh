#!/usr/bin/env bash
# Registers of streaming kernels without a GPU: for a grid of streaming settings (6 stencils x
# tdeg 1/2/4 x 5 block shapes x merge 1/2/4 x retiming x prefetch), generate the kernel
# (isletune-bench-kernels --source), compile it with nvcc -Xptxas -v for sm_90 as generated
# (the __launch_bounds__ minimum of MIN_BLOCKS blocks per SM from the plan's estimate) and
# with MIN_BLOCKS = 1 (the registers the kernel would take), and write registers and spill
# bytes of isl_kernel per setting. Usage: bench/streaming_registers.sh [BINDIR] [OUTDIR]
# (about 10 minutes on 2 cores; rows in OUTDIR/results.csv). STENCILS chooses the stencils;
# KEPT=1 also compiles each retimed kernel as bench/issue48/kept.py rewrites it (level 1's kept
# values read from the input) and adds its registers and spill bytes (kept_regs, kept_spill).
BIN=${1:-build/bin}/isletune-bench-kernels
dir=${2:-/tmp/isletune-registers}; mkdir -p "$dir"; out=$dir/results.csv
echo "stencil,tdeg,tbx,tby,mfy,ret,pf,threads,est_min_blocks,regs,spill,nat_regs,nat_spill,kept_regs,kept_spill" > $out
here=$(cd "$(dirname "$0")" && pwd)
for st in ${STENCILS:-star3d1r star3d2r cross3d1r box3d1r cross3d2r star2d1r}; do
 for t in 1 2 4; do for blk in "32 32" "64 8" "64 16" "128 4" "32 16"; do set -- $blk; bx=$1; by=$2
  for mf in 1 2 4; do for ret in 0 1; do for pf in 0 1; do
   mg=cyclic; [ $mf = 1 ] && mg=none
   if [ ${st:4:1} = 2 ]; then f="streaming=1,merge=$mg,retiming=$ret,prefetch=$pf,tdeg=$t,sd=1,sb=256,tbx=$((bx*by)),tby=1,tbz=1,mfx=$mf,mfy=1,mfz=1,ufx=1,ufy=1,ufz=1,use_shared=0,use_constant=0"; [ $by != 8 ] && continue
   else f="streaming=1,merge=$mg,retiming=$ret,prefetch=$pf,tdeg=$t,sd=2,sb=128,tbx=$bx,tby=$by,tbz=1,mfx=1,mfy=$mf,mfz=1,ufx=1,ufy=1,ufz=1,use_shared=0,use_constant=0"; fi
   $BIN --stencils $st --source "$f" > $dir/k.cu 2>/dev/null || continue
   grep -q "isl_kernel" $dir/k.cu || continue
   r1=$(nvcc -arch=sm_90 -cubin -Xptxas -v -x cu $dir/k.cu -o $dir/k.cubin 2>&1 | grep -A2 "isl_kernel" | grep -oE "[0-9]+ bytes spill stores|Used [0-9]+ registers" | grep -oE "[0-9]+" | tr '\n' ' ')
   mb=$(grep -oE "MIN_BLOCKS = .*" $dir/k.cu | head -1 | sed 's/MIN_BLOCKS = //')
   sed -i 's/static constexpr int MIN_BLOCKS = .*/static constexpr int MIN_BLOCKS = 1;/' $dir/k.cu
   r2=$(nvcc -arch=sm_90 -cubin -Xptxas -v -x cu $dir/k.cu -o $dir/k.cubin 2>&1 | grep -A2 "isl_kernel" | grep -oE "[0-9]+ bytes spill stores|Used [0-9]+ registers" | grep -oE "[0-9]+" | tr '\n' ' ')
   r3="- -"
   if [ "${KEPT:-0}" = 1 ] && [ $ret = 1 ] && python3 "$here/issue48/kept.py" $dir/k.cu $dir/kk.cu 2>/dev/null; then
     r3=$(nvcc -arch=sm_90 -cubin -Xptxas -v -x cu $dir/kk.cu -o $dir/k.cubin 2>&1 | grep -A2 "isl_kernel" | grep -oE "[0-9]+ bytes spill stores|Used [0-9]+ registers" | grep -oE "[0-9]+" | tr '\n' ' ')
   fi
   set -- $r1 $r2 $r3
   echo "$st,$t,$bx,$by,$mf,$ret,$pf,$((bx*by)),\"$mb\",$2,$1,$4,$3,$6,$5" >> $out
  done; done; done; done; done; done
echo "rows: $out"

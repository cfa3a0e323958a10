#!/usr/bin/env python3
"""Sums up `KEPT=1 bench/streaming_registers.sh`'s rows (issue 48): per stencil and tdeg the
registers kept.py's rewrite saves on the retimed kernels (both compiled with MIN_BLOCKS = 1, as the
script compiles the rewrite: nat_regs against kept_regs), and the kernels whose blocks an SM
(by registers, 256-register warp granules, at most 2048 threads) it changes.
  kept_registers.py RESULTS_CSV"""
import collections
import csv
import sys


def blocks_per_sm(regs, threads):
    per_warp = (regs * 32 + 255) // 256 * 256
    warps = (threads + 31) // 32
    return min(65536 // (per_warp * warps), 2048 // threads)


rows = [r for r in csv.DictReader(open(sys.argv[1]))
        if r['ret'] == '1' and r['kept_regs'] not in ('-', '')]
saved = collections.defaultdict(list)
changed = []
for r in rows:
    threads, before, after = int(r['threads']), int(r['nat_regs']), int(r['kept_regs'])
    saved[(r['stencil'], r['tdeg'])].append(before - after)
    b0, b1 = blocks_per_sm(before, threads), blocks_per_sm(after, threads)
    if b0 != b1:
        changed.append((r['stencil'], r['tdeg'], r['tbx'], r['tby'], r['mfy'], r['pf'], threads,
                        before, after, b0, b1))
print('stencil  tdeg  kernels  registers saved: min median max')
for (stencil, tdeg), v in sorted(saved.items()):
    v.sort()
    print(f'{stencil:9s} {tdeg:>3s} {len(v):8d}   {v[0]:4d} {v[len(v) // 2]:6d} {v[-1]:4d}')
print(f'{len(rows)} retimed kernels; spills without the rewrite {sum(int(r["nat_spill"]) > 0 for r in rows)}, '
      f'rewritten {sum(int(r["kept_spill"]) > 0 for r in rows)}')
gain = sum(c[10] > c[9] for c in changed)
print(f'blocks an SM: {gain} gain, {len(changed) - gain} lose')
for c in changed:
    print('  {} tdeg {} {}x{} mfy {} pf {}: {} threads, {} -> {} registers, {} -> {} blocks'.format(*c))

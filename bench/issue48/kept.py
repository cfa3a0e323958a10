#!/usr/bin/env python3
"""A probe of the retimed streaming kernels' register budget (issue 48): rewrites a generated
kernel so that level 1 reads the value the boundary rule keeps from the input (one predicated
global load, only at points whose stencil leaves the grid) instead of from the centre queue
cq[0], which is then never read and holds no register (SHI + 1 doubles a point fewer).
With --two-blocks the kernel also asks for two blocks an SM (__launch_bounds__(threads, 2)).
  kept.py SRC DST [--two-blocks]"""
import re, sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
helper = '''// *src where ok, else 0, as one predicated load: no branch splits the unrolled iteration
// (a branch around the load there halved star3d4r's speed on an H100).
__device__ __forceinline__ double load_if(const double* src, bool ok) {
  double v = 0.0;
  asm("{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %2, 0;\\n\\t@p ld.global.nc.f64 %0, [%1];\\n\\t}"
      : "+d"(v)
      : "l"(src), "r"(static_cast<int>(ok)));
  return v;
}

'''
anchor = '// f(p, global offset, shared offset) for each of a thread'
old = '          prev = cq[l - 1][0][p];\n'
new = '''          if (l == 1)
            prev = load_if(in + (1LL * q * C::GSS + g0 + (p % C::MFA) * DA +
                                 1LL * (p / C::MFA) * DB * C::GSB),
                           q >= 0 && q < C::NS && in_grid[p] && !(plane_ok && col_ok[p]));
          else
            prev = cq[l - 1][0][p];
'''
if text.count(anchor) != 1 or text.count(old) != 1:
    sys.exit(f'{src}: not a retimed streaming kernel of the expected text')
text = text.replace(anchor, helper + anchor).replace(old, new)
if '--two-blocks' in sys.argv[3:]:
    text, n = re.subn(r'__launch_bounds__\((\d+), IslMain::MIN_BLOCKS\)', r'__launch_bounds__(\1, 2)', text)
    if n != 1:
        sys.exit(f'{src}: no __launch_bounds__ of MIN_BLOCKS')
open(dst, 'w').write(text)

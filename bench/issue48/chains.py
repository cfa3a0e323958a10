#!/usr/bin/env python3
"""Splits every long `X += t1 + t2 + ... ;` sum of a generated kernel into K interleaved chains
(t1 + t(K+1) + ...) + (t2 + ...) + ..., a probe of whether the DFMA chain's latency bounds it."""
import re, sys
src, k, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = []
for line in open(src):
    m = re.match(r'^(\s*)(acc\[[^=]*\]|s\[\d\])\s*(\+?=)\s*(.*);\s*$', line)
    if m and m.group(4).count(' * ') >= 8:
        terms, depth, cur = [], 0, ''
        e = m.group(4)
        i = 0
        while i < len(e):
            c = e[i]
            if c in '([':
                depth += 1
            elif c in ')]':
                depth -= 1
            if depth == 0 and e.startswith(' + ', i):
                terms.append(cur); cur = ''; i += 3; continue
            cur += c; i += 1
        terms.append(cur)
        groups = [terms[i::k] for i in range(k)]
        rhs = ' + '.join('(' + ' + '.join(g) + ')' for g in groups)
        line = f"{m.group(1)}{m.group(2)} {m.group(3)} {rhs};\n"
    out.append(line)
open(dst, 'w').writelines(out)

#!/usr/bin/python3
"""Compares `golden.sh space` lines (NOW) with space.golden (GOLDEN), allowing the one change
made on purpose since the golden data was recorded: OC 17 (tile+cyclic+tb), whose settings
built the kernels of OC 9 (tile+block+tb: 0 distinct kernels), is no longer valid: its entry
is gone and the size has its valid settings less (within 1 for the estimates' rounding).

Usage: compare_space.py GOLDEN NOW   (exit 0 when equal; prints every difference)
"""
import sys

ALLOWED_GONE = "17"


def parse(line: str) -> tuple[str, float, float, dict[str, str]]:
    name, size, *ocs = line.split()
    valid, kernels = size.removeprefix("size=").split("/")
    return name, float(valid), float(kernels), {o.split(":", 1)[0]: o for o in ocs}


def main() -> int:
    golden = [parse(l) for l in open(sys.argv[1]) if l.strip()]
    now = {p[0]: p for p in (parse(l) for l in open(sys.argv[2]) if l.strip())}
    bad = 0
    for name, valid, kernels, ocs in golden:
        if name not in now:
            print(f"{name}: missing")
            bad += 1
            continue
        _, nvalid, nkernels, nocs = now[name]
        gone = ocs.pop(ALLOWED_GONE, None)
        if gone is not None:
            fields = gone.rstrip("~").split(":")
            valid -= float(fields[2])
            kernels -= float(fields[3])
            if float(fields[3]) != 0:
                print(f"{name}: OC 17 had {fields[3]} distinct kernels (expected 0)")
                bad += 1
        if nocs != ocs:
            for oc in sorted(set(ocs) | set(nocs), key=int):
                if ocs.get(oc) != nocs.get(oc):
                    print(f"{name}: OC {oc}: golden {ocs.get(oc)} now {nocs.get(oc)}")
            bad += 1
        if abs(nvalid - valid) > 1 or abs(nkernels - kernels) > 1:
            print(f"{name}: size {nvalid:.0f}/{nkernels:.0f}, expected {valid:.0f}/{kernels:.0f}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

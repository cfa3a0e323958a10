#!/usr/bin/python3
"""Input fuzz and fault harness for isletune (issue 14.9, input and files; no GPU needed).

Feeds malformed configs to `isletune space` and `isletune run` (replay backend, run
directly: Open MPI's singleton start) and damaged or wrong-schema HDF5 files to `run` (as
its replay dataset), `report`, `export` and `resume`. Every case is bad input by
construction, so each command must exit non-zero with one clear sentence. Each outcome is
classified:

  crash    killed by a signal, abort, uncaught exception ("internal error", "terminate
           called", MPI_ABORT)
  hang     still running after --timeout seconds (killed)
  silent   exit 0 on bad input
  unclear  the message is not exactly one line, is over 300 characters, holds control
           bytes, or does not name the file (and, where the case knows it, the key)
  ok       non-zero exit with one clear line
  gap      a known undetectable case, listed apart (a rank file of another run when rank
           files record no run identity)

Seeded and reproducible: the same --seed builds the same cases. Prints a table per
category and a total; exits 1 when any case is not ok.

  tests/fuzz/fuzz.py --binary build/bin/isletune --configs 1000 --files 200 --seed 1
"""
import argparse
import hashlib
import concurrent.futures
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
DATASET = os.path.join(DATA, "synthetic-star2d1r.h5")
MAX_MESSAGE = 300

# The valid base config (replay on the shipped synthetic dataset, 2 generations).
BASE = {
    "stencil": "star2d1r",
    "grid": "[4096, 4096]",
    "steps": "48",
    "space": "\n  streaming: {values: [0]}\n  tdeg: {values: [1]}\n"
    "  tbx: {values: [8, 32, 64, 128, 256]}\n  tby: {values: [1, 2, 4, 8, 16, 32]}\n"
    "  mfx: {values: [1, 2, 4]}\n  mfy: {values: [1, 2, 4]}\n"
    "  ufx: {values: [1, 2]}\n  ufy: {values: [1, 2]}",
    "sampler": "{predictor: roofline, max_samples: 256}",
    "ga": "{population: 4, rows: 2, cols: 2, mutation_rate: 0.05, mcr_threshold: 1.0}",
    "budget": "{max_generations: 2}",
    "evaluator": "{backend: replay, dataset: %s}" % DATASET,
    "seed": "11",
}

# Keys whose values are checked, with the kind of value each takes.
NUMERIC = {
    "steps": ("int", 1, 1 << 20), "warmup": ("int", 0, 1 << 20), "repeats": ("int", 1, 1 << 20),
    "seed": ("uint", 0, 2**64 - 1),
    "sampler.sample_ratio": ("real", 0, 1), "sampler.max_samples": ("int", 1, 2**31 - 1),
    "sampler.round_ratio": ("real", 0, 1), "sampler.adjust": ("real", 0, 1),
    "sampler.floor": ("real", 0, 1 / 48),
    "ga.population": ("int", 2, 1 << 20), "ga.rows": ("int", 1, 1 << 20),
    "ga.cols": ("int", 1, 1 << 20), "ga.crossover_rate": ("real", 0, 1),
    "ga.mutation_rate": ("real", 0, 1), "ga.mcr_threshold": ("real", 0, 1),
    "ga.migration.interval": ("int", 0, 1 << 20), "ga.migration.count": ("int", 0, 4),
    "budget.max_generations": ("int", 0, 2**31 - 1),
    "budget.max_evaluations": ("int", 0, 2**63 - 1),
    "budget.time_budget_s": ("real", 0, sys.float_info.max),
    "evaluator.timeout_s": ("real", 0, 86400), "evaluator.compile_threads": ("int", 0, 1024),
}
CHOICES = {"strategy": "island-ga", "sampler.predictor": "roofline", "ga.encoding": "index",
           "evaluator.backend": "replay", "ga.gray": "true"}
SECTIONS = ["sampler", "ga", "budget", "evaluator", "space", "ga.migration"]
PARAMS = ["streaming", "merge", "retiming", "prefetch", "tdeg", "sd", "sb", "tbx", "tby",
          "tbz", "mfx", "mfy", "mfz", "ufx", "ufy", "ufz", "use_shared", "use_constant"]


def emit(cfg):
    """YAML text of a config held as {top key: flow/block text} (sections as flow maps)."""
    lines = []
    for k, v in cfg.items():
        lines.append("%s: %s" % (k, v))
    return "\n".join(lines) + "\n"


def structured(rng):
    """The base config as nested dicts of YAML text leaves (for dotted-key mutation)."""
    return {
        "stencil": "star2d1r", "grid": "[4096, 4096]", "steps": "48",
        "space": {"streaming": "{values: [0]}", "tdeg": "{values: [1]}",
                  "tbx": "{values: [8, 32, 64, 128, 256]}", "tby": "{values: [1, 2, 4, 8, 16, 32]}",
                  "mfx": "{values: [1, 2, 4]}", "mfy": "{values: [1, 2, 4]}",
                  "ufx": "{values: [1, 2]}", "ufy": "{values: [1, 2]}"},
        "sampler": {"predictor": "roofline", "max_samples": "256"},
        "ga": {"population": "4", "rows": "2", "cols": "2", "mutation_rate": "0.05",
               "mcr_threshold": "1.0", "migration": {"interval": "1", "count": "1"}},
        "budget": {"max_generations": "2"},
        "evaluator": {"backend": "replay", "dataset": DATASET},
        "seed": "11",
    }


def render(tree, indent=0):
    out = []
    for k, v in tree.items():
        if isinstance(v, dict):
            out.append(" " * indent + "%s:" % k)
            out.append(render(v, indent + 2))
        elif isinstance(v, list):  # duplicate-key support: several values for one key
            for item in v:
                out.append(" " * indent + "%s: %s" % (k, item))
        else:
            out.append(" " * indent + "%s: %s" % (k, v))
    return "\n".join(x for x in out if x != "")


def setkey(tree, dotted, value):
    parts = dotted.split(".")
    node = tree
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[parts[-1]] = value


def delkey(tree, dotted):
    parts = dotted.split(".")
    node = tree
    for p in parts[:-1]:
        node = node[p]
    del node[parts[-1]]


def junk_text(rng, n):
    alphabet = "abcXYZ_-.:/ \t0123456789é✓\x01\x07\x1b\x7f"
    return "".join(rng.choice(alphabet) for _ in range(n))


def yaml_quote(s):
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else "\\x%02x" % ord(c)
                         if ord(c) < 256 else c for c in s) + '"'


def wrong_type_value(rng, kind):
    if kind in ("int", "uint", "real"):
        return rng.choice(["[1, 2]", "{a: 1}", "abc", "'12abc'", "true", "''", "~", "0x1g",
                           "1.5.3", "[]", "{}", "'\\x01'", yaml_quote(junk_text(rng, 12))]) \
            if kind != "real" else rng.choice(["[0.5]", "{x: 0.5}", "abc", "''", "~", "true",
                                               "1..2", "[]", "{}", yaml_quote(junk_text(rng, 9))])
    return rng.choice(["[a]", "{a: b}", "42", "~", "''", yaml_quote(junk_text(rng, 10))])


def out_of_range_value(rng, kind, lo, hi):
    if kind == "real":
        cands = [repr(lo - 0.5 - rng.random()), repr(hi + 0.5 + rng.random() * hi), ".nan",
                 ".inf", "-.inf", "1e400", "-1e400"]
        if lo == 0:
            cands.append("-0.000001")
        return rng.choice(cands)
    cands = [str(lo - 1 - rng.randrange(1000)), str(hi + 1 + rng.randrange(1000)),
             str(2**63 + rng.randrange(1000)), str(-2**63 - 1 - rng.randrange(1000)),
             "99999999999999999999999999", str(hi + 1), "1.5", "1e3x"]
    if kind == "uint":
        cands = ["-1", str(2**64 + rng.randrange(1000)), "-" + str(rng.randrange(1, 1 << 40)),
                 "1.5", "18446744073709551616"]
    return rng.choice(cands)


class Case:
    def __init__(self, category, text=None, key=None, path=None, binary=False):
        self.category = category
        self.text = text      # config text (bytes or str)
        self.key = key        # key the message must name ("" = none known)
        self.path = path      # explicit config path (long paths, directories)
        self.binary = binary


def config_case(rng, index, workdir):
    cat = rng.choice(["wrong_type", "unknown_key", "missing_key", "out_of_range", "huge",
                      "stencil", "broken_yaml", "binary", "duplicate_key", "deep_nesting",
                      "space", "control_bytes", "long_value", "grid", "ga_shape", "path",
                      "oversized", "second_document"])
    tree = structured(rng)
    if cat == "wrong_type":
        if rng.random() < 0.7:
            key = rng.choice(list(NUMERIC))
            setkey(tree, key, wrong_type_value(rng, NUMERIC[key][0]))
        else:
            key = rng.choice(list(CHOICES) + SECTIONS + ["grid", "stencil"])
            if key in SECTIONS:
                setkey(tree, key, rng.choice(["42", "abc", "[1, 2]", "''"]))
            elif key == "grid":
                setkey(tree, key, rng.choice(["4096", "{x: 1}", "[a, b]", "[[1], [2]]", "[]",
                                              "[4096]", "[1, 2, 3, 4]", "[4096, 4096, 4096]"]))
            elif key == "stencil":
                setkey(tree, key, rng.choice(["42", "[a]", "{}", "''", "~"]))
            else:
                setkey(tree, key, rng.choice(["42", "[x]", "{a: 1}", "notachoice",
                                              yaml_quote(junk_text(rng, 8))]))
        return Case(cat, render(tree), key)
    if cat == "unknown_key":
        section = rng.choice([""] + SECTIONS)
        name = rng.choice(["colour", "populaton", "Steps", "x" * rng.randrange(1, 400),
                           junk_text(rng, rng.randrange(1, 20)).strip() or "q"])
        key = (section + "." if section else "") + name
        try:
            setkey(tree, key, "1")
        except Exception:
            setkey(tree, "zz" + str(index), "1")
            key = "zz" + str(index)
        text = render(tree)
        if section == "space":
            return Case(cat, text, "space")
        return Case(cat, text, None)
    if cat == "missing_key":
        key = rng.choice(["stencil", "grid", "evaluator.dataset"])
        delkey(tree, key)
        return Case(cat, render(tree), key)
    if cat == "out_of_range":
        key = rng.choice(list(NUMERIC))
        kind, lo, hi = NUMERIC[key]
        value = out_of_range_value(rng, kind, lo, hi)
        if key == "ga.population":
            value = rng.choice(["5", "1", "0", "-4", "3"])
        setkey(tree, key, value)
        return Case(cat, render(tree), key)
    if cat == "huge":
        key = rng.choice(list(NUMERIC) + ["grid"])
        big = rng.choice(["1" + "0" * rng.randrange(20, 5000), "9" * 400, "1e99999",
                          "-" + "9" * 100, str(2**64), str(2**128)])
        if key == "grid":
            setkey(tree, key, "[%s, 4096]" % big)
        elif NUMERIC[key][0] == "real" and key == "budget.time_budget_s":
            big = rng.choice(["1e99999", "-" + "9" * 100, "-1e400"])
            setkey(tree, key, big)
        else:
            setkey(tree, key, big)
        return Case(cat, render(tree), key if key != "grid" else "grid")
    if cat == "stencil":
        choice = rng.randrange(10)
        if choice == 0:
            tree["stencil"] = rng.choice(["star4d1r", "blob2d1r", "star2d0r", "star2d9r",
                                          "STAR2D1R", "star2d1r x", "box3d5r"])
        elif choice == 1:
            tree["stencil"] = "{name: s, dims: 2, points: [[0, 0, 1], [1, 0]]}"
        elif choice == 2:
            tree["stencil"] = "{name: s, dims: 2, points: [[0, 0, 1], [0, 0, 2]]}"
        elif choice == 3:
            tree["stencil"] = "{name: s, dims: %s, points: [[0, 0, 1]]}" % rng.choice(
                ["4", "1", "0", "-2", "x"])
        elif choice == 4:
            tree["stencil"] = "{name: s, dims: 2, points: []}"
        elif choice == 5:
            tree["stencil"] = "{name: s, dims: 2, points: [[0, 0, .nan], [1, 0, 1]]}"
        elif choice == 6:
            tree["stencil"] = "{name: s, dims: 2, points: [[%d, 0, 1], [0, 0, 1]]}" % rng.choice(
                [9, 100, 2**31, -50])
        elif choice == 7:
            tree["stencil"] = "{file: %s}" % rng.choice(["/nonexistent/st.txt", workdir,
                                                         "/dev/null", "/etc/passwd"])
        elif choice == 8:
            tree["stencil"] = "{name: s, points: [[0, 0, 1]]}"
        else:
            tree["stencil"] = "{name: s, dims: 2, points: [[0, 0, 1], [0, 0, 1, 1]], x: 1}"
        return Case(cat, render(tree), "stencil")
    if cat == "broken_yaml":
        text = render(tree)
        lines = text.split("\n")
        at = rng.randrange(len(lines))
        kind = rng.randrange(5)
        if kind == 0:
            lines[at] = lines[at] + " [unclosed"
        elif kind == 1:
            lines.insert(at, "\t- bad: [indent")
        elif kind == 2:
            lines[at] = lines[at] + ' "unterminated'
        elif kind == 3:
            lines.insert(at, "key: {a: 1, b")
        else:
            lines.insert(at, "  : : :\n- [")
        return Case(cat, "\n".join(lines), None)
    if cat == "oversized":
        # Past the 4 MiB a configuration may hold: a size sentence, not a YAML position.
        pad = rng.choice([5 << 20, 9 << 20])
        filler = rng.choice(["#" + "x" * pad + "\n", "junk: '" + "y" * pad + "'\n"])
        return Case(cat, render(tree) + "\n" + filler, None)
    if cat == "second_document":
        # (An empty document after `---` holds nothing and is accepted: not a case.)
        second = rng.choice(["seed: 3\n", render(structured(rng)) + "\n", "[1, 2]\n", "x\n"])
        return Case(cat, render(tree) + "\n---\n" + second, None)
    if cat == "binary":
        n = rng.randrange(1, 4096)
        data = bytes(rng.randrange(256) for _ in range(n))
        if rng.random() < 0.3:
            data = render(tree).encode()[: rng.randrange(10, 200)] + data
        if rng.random() < 0.2:
            data = b"\x89HDF\r\n\x1a\n" + data
        return Case(cat, data, None, binary=True)
    if cat == "duplicate_key":
        key = rng.choice(["steps", "seed", "grid", "stencil", "sampler.max_samples",
                          "ga.rows", "budget.max_generations", "evaluator.backend",
                          "ga.migration.interval", "space.tbx", "space.tbx.values"])
        if key == "space.tbx.values":
            tree["space"]["tbx"] = "{values: [8, 32], values: [64]}"
            return Case(cat, render(tree), "values")
        parts = key.split(".")
        node = tree
        for p in parts[:-1]:
            node = node[p]
        leaf = parts[-1]
        if isinstance(node[leaf], dict):
            dup = render(node[leaf], 0).replace("\n", ", ")
            node[leaf] = ["{" + render(node[leaf], 0).replace("\n", ", ") + "}", "{" + dup + "}"]
            node[leaf] = [node[leaf][0], node[leaf][1]]
        else:
            node[leaf] = [node[leaf], node[leaf] if rng.random() < 0.5 else node[leaf]]
        return Case(cat, render(tree), leaf)
    if cat == "deep_nesting":
        depth = rng.choice([100, 1000, 10000, 100000])
        key = rng.choice(["steps", "grid", "space", "extra", "stencil"])
        if rng.random() < 0.5:
            value = "[" * depth + "]" * depth
        else:
            value = "{a: " * depth + "1" + "}" * depth
        tree[key] = value
        return Case(cat, render(tree), None)
    if cat == "space":
        p = rng.choice(PARAMS)
        kind = rng.randrange(8)
        if kind == 0:
            tree["space"][p] = "{values: []}"
        elif kind == 1:
            tree["space"][p] = "{values: [%d]}" % rng.choice([-1, -64, 2**31, 2**40])
        elif kind == 2:
            tree["space"][p] = "{remove: [12345]}"
        elif kind == 3:
            tree["space"][p] = "{values: [1], add: [2]}"
        elif kind == 4:
            tree["space"]["nosuch" + str(rng.randrange(100))] = "{values: [1]}"
            return Case(cat, render(tree), "space")
        elif kind == 5:
            tree["space"][p] = rng.choice(["[1, 2]", "7", "{values: 7}", "{value: [1]}"])
        elif kind == 6:
            # values outside the parameter's range (Space rejects them; sb has no upper
            # bound of its own, and tdeg 3 or uf 3 can be valid)
            tree["space"]["tbx" if p == "sb" else p] = "{values: [%d]}" % rng.choice(
                [1000, 1 << 20])
            if p in ("tbx", "tby"):
                tree["space"][p] = "{values: [3]}"
        else:
            tree["space"][p] = "{values: [%s]}" % rng.choice(["a", "1.5", "[1]", "{}", "true2"])
        return Case(cat, render(tree), "space")
    if cat == "control_bytes":
        key = rng.choice(["stencil", "strategy", "evaluator.backend", "output", "steps",
                          "sampler.predictor", "ga.encoding"])
        value = yaml_quote(junk_text(rng, rng.randrange(3, 40)) + "\x1b[31m\x07\x00")
        setkey(tree, key, value)
        if key == "output":  # an output name with control bytes is accepted; add a bad key
            setkey(tree, "steps", "-" + str(rng.randrange(1, 99)))
            key = "steps"
        return Case(cat, render(tree), key)
    if cat == "long_value":
        key = rng.choice(["stencil", "strategy", "evaluator.dataset", "steps", "space.tbx.values",
                          "stencil.file"])
        n = rng.choice([1000, 100000, 1 << 20])
        value = "x" * n
        if key == "space.tbx.values":
            tree["space"]["tbx"] = "{values: [%s]}" % ("9" * n)
            key = "space"
        elif key == "stencil.file":
            tree["stencil"] = "{file: /%s}" % ("d" * n)
            key = "stencil"
        else:
            setkey(tree, key, value)
        return Case(cat, render(tree), key)
    if cat == "grid":
        kind = rng.randrange(6)
        if kind == 0:
            tree["grid"] = "[%d, 4096]" % rng.choice([1 << 30, (1 << 31) - 1, 1 << 29, 3 << 28])
        elif kind == 1:
            tree["grid"] = "[%d, %d]" % (1 << 20, 1 << 20)
        elif kind == 2:
            tree["grid"] = "[%d, %d]" % rng.choice([(0, 4096), (-5, 4096), (4096, 2), (2, 2)])
        elif kind == 3:
            tree["grid"] = "[65536, 65536]"
        elif kind == 4:
            tree["grid"] = "[%d, 4096, 4096]" % rng.choice([64, 4096])
        else:
            tree["grid"] = "[4096.5, 4096]"
        return Case(cat, render(tree), "grid")
    if cat == "ga_shape":
        kind = rng.randrange(4)
        if kind == 0:
            r, c = rng.choice([(1 << 20, 1 << 20), (65536, 65537), (1 << 16, 1 << 16),
                               (46341, 46341), (1 << 19, 4096)])
            tree["ga"] = {"rows": str(r), "cols": str(c)}
        elif kind == 1:
            tree["ga"] = {"rows": "2", "cols": "2", "population": "5"}
        elif kind == 2:
            tree["ga"] = {"rows": "1", "cols": "1"}
        else:
            tree["ga"] = {"rows": "2", "cols": "2", "migration": {"count": "9"}}
        return Case(cat, render(tree), "ga")
    # path: the config path itself is bad
    kind = rng.randrange(5)
    if kind == 0:
        return Case(cat, None, None, path=workdir)  # a directory
    if kind == 1:
        return Case(cat, None, None, path=os.path.join(workdir, "missing-%d.yaml" % index))
    if kind == 2:
        return Case(cat, None, None, path="/" + "/".join(["d" * 200] * 30) + "/c.yaml")
    if kind == 3:
        return Case(cat, None, None, path=os.path.join(workdir, "x" * 300 + ".yaml"))
    return Case(cat, None, None, path=os.path.join(workdir, "ctl\x1b[1m\x07-%d.yaml" % index))


def classify(proc_rc, out, err, timed_out, names, key):
    """ok / crash / hang / silent / unclear, and why."""
    if timed_out:
        return "hang", "timeout"
    text = err.decode("utf-8", "replace")
    if proc_rc < 0:
        return "crash", "signal %d" % -proc_rc
    for mark in ("internal error", "terminate called", "MPI_ABORT", "Segmentation fault",
                 "Aborted", "core dumped", "what():", "MPI_Abort"):
        if mark in text:
            return "crash", mark
    if proc_rc in (134, 139):
        return "crash", "rc %d" % proc_rc
    if proc_rc == 0:
        return "silent", "exit 0"
    lines = [l for l in text.split("\n") if l.strip()]
    if len(lines) != 1:
        return "unclear", "%d lines" % len(lines)
    line = lines[0]
    if len(line) > MAX_MESSAGE:
        return "unclear", "%d chars" % len(line)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in line):
        return "unclear", "control bytes"
    if names and not any(n in line for n in names):
        return "unclear", "no file named"
    if key and key.split(".")[-1] not in line and key not in line:
        return "unclear", "key %s not named" % key
    return "ok", ""


def run_one(cmd, timeout, cwd):
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                             start_new_session=True)
    except OSError as e:  # e.g. an argument too long for exec: not isletune's fault
        return None, b"", str(e).encode(), False
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return p.returncode, out, err, True


def display_names(path):
    """Strings of which one must appear in a message about `path` (its name, shortened)."""
    base = "".join(c if c.isprintable() else "\\x%02x" % ord(c) for c in os.path.basename(path))
    printable = "".join(c for c in base if c.isprintable())
    return [base[:40], printable[:20], base[-20:]] if base else [path[:40]]


def run_config_case(binary, case, index, workdir, timeout):
    path = case.path
    if path is None:
        path = os.path.join(workdir, "c%05d-%s.yaml" % (index, case.category))
        with open(path, "wb") as f:
            f.write(case.text if case.binary else case.text.encode("utf-8", "surrogateescape"))
    results = []
    out_dir = os.path.join(workdir, "out%05d" % index)
    for command in (["space", path], ["run", path, "--out", out_dir]):
        rc, out, err, timed_out = run_one([binary] + command, timeout, workdir)
        if rc is None:
            results.append((command[0], "ok", "not executable: " + err.decode()[:60]))
            continue
        names = display_names(path)
        key = case.key
        if case.category in ("path",):
            key = None
        verdict, why = classify(rc, out, err, timed_out, names, key)
        results.append((command[0], verdict, why, err.decode("utf-8", "replace")[:400]))
    shutil.rmtree(out_dir, ignore_errors=True)
    if case.path is None:
        os.unlink(path)
    return results


# ---- HDF5 files ----

def make_run(binary, workdir, name, tbx):
    """A finished 2-generation replay run directory (the source of damaged copies) whose
    space takes the block widths `tbx` (two runs with disjoint ones differ in every row)."""
    cfg = os.path.join(workdir, name + ".yaml")
    tree = structured(None)
    tree["space"]["tbx"] = "{values: %s}" % tbx
    with open(cfg, "w") as f:
        f.write(render(tree) + "\n")
    out = os.path.join(workdir, name)
    subprocess.run([binary, "run", cfg, "--out", out], check=True, capture_output=True,
                   timeout=120)
    return out


def h5_cases(rng, count, workdir, run_dir, other_run):
    """(category, path, kind) of damaged files: kind 'file' (a .h5) or 'dir' (a run dir)."""
    import h5py
    import numpy as np
    cases = []
    sources = [DATASET, os.path.join(DATA, "h200-star2d1r.h5"), os.path.join(run_dir, "trace.h5")]

    def copy_run(tag):
        d = os.path.join(workdir, "h5-%s-%d" % (tag, len(cases)))
        shutil.copytree(run_dir, d)
        return d

    kinds = ["zero", "truncated", "random", "random_sig", "bitflip", "no_ranks", "values_width",
             "negative_committed", "status_range", "foreign_rank", "no_format", "rank_attr",
             "truncated_rank", "zero_rank", "missing_rank", "committed_past_rows",
             "unknown_parameter", "bad_median", "dataset_median"]
    for i in range(count):
        kind = kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds)
        if kind == "dataset_median":
            # A dataset whose verified rows have no usable time: refused, not replayed.
            p = os.path.join(workdir, "f%04d-%s.h5" % (i, kind))
            shutil.copy(DATASET, p)
            with h5py.File(p, "a") as f:
                ev = f["ranks/0000/evaluations"]
                data = ev[()]
                ok = np.flatnonzero(data["status"] == 0)
                data["median_ms"][ok[rng.randrange(len(ok))]] = rng.choice(
                    [float("nan"), -1.0, 0.0, float("inf"), -0.25])
                ev[...] = data
            cases.append((kind, p, "file"))
            continue
        if kind in ("zero", "truncated", "random", "random_sig", "bitflip", "no_format"):
            p = os.path.join(workdir, "f%04d-%s.h5" % (i, kind))
            if kind == "zero":
                open(p, "wb").close()
            elif kind == "truncated":
                src = open(rng.choice(sources), "rb").read()
                open(p, "wb").write(src[: rng.randrange(1, len(src) - 1)])
            elif kind == "random":
                open(p, "wb").write(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9000))))
            elif kind == "random_sig":
                open(p, "wb").write(b"\x89HDF\r\n\x1a\n" + bytes(
                    rng.randrange(256) for _ in range(rng.randrange(1, 9000))))
            elif kind == "bitflip":
                # Damage only the superblock and root metadata: a flip in raw data would be
                # undetectable and the file still valid.
                src = bytearray(open(rng.choice(sources), "rb").read())
                for _ in range(rng.randrange(1, 8)):
                    at = rng.randrange(8, 2048)
                    src[at] ^= 1 << rng.randrange(8)
                open(p, "wb").write(bytes(src))
            else:
                with h5py.File(p, "w") as f:
                    f.attrs["format"] = rng.choice(["something-else", "", "isletune-trace\x01"])
                    f.attrs["version"] = 1
            # A bit-flipped file may still be valid HDF5 with the same content: only
            # classify it when it no longer equals its source.
            cases.append((kind, p, "file"))
            continue
        d = copy_run(kind)
        trace = os.path.join(d, "trace.h5")
        rank = os.path.join(d, "rank-0000.h5")
        if kind == "no_ranks":
            with h5py.File(trace, "a") as f:
                del f["ranks"]
        elif kind == "values_width":
            with h5py.File(rank, "a") as f:
                g = f[list(f.keys())[0]] if "evaluations" not in f else f
                ev = g["evaluations"]
                dt = ev.dtype
                fields = []
                for n in dt.names:
                    sub = dt.fields[n][0]
                    if n == "values":
                        width = rng.choice([3, 17, 19, 40])
                        sub = np.dtype((sub.base, (width,)))
                    fields.append((n, sub))
                data = ev[()]
                new = np.zeros(len(data), dtype=np.dtype(fields))
                for n in dt.names:
                    if n != "values":
                        new[n] = data[n]
                attrs = dict(ev.attrs)
                del g["evaluations"]
                nd = g.create_dataset("evaluations", data=new, maxshape=(None,), chunks=True)
                for k, v in attrs.items():
                    nd.attrs[k] = v
        elif kind == "negative_committed":
            with h5py.File(rank, "a") as f:
                g = f if "committed" in f.attrs else f[list(f.keys())[0]]
                c = np.array(g.attrs["committed"])
                c[rng.randrange(len(c))] = -rng.randrange(1, 1000)
                g.attrs["committed"] = c
        elif kind == "status_range":
            with h5py.File(rank, "a") as f:
                g = f if "evaluations" in f else f[list(f.keys())[0]]
                ev = g["evaluations"]
                data = ev[()]
                data["status"][rng.randrange(len(data))] = rng.choice([7, 9, 100, 127, -1, -128])
                ev[...] = data
        elif kind == "committed_past_rows":
            with h5py.File(rank, "a") as f:
                c = np.array(f.attrs["committed"])
                c[rng.randrange(len(c))] += rng.choice([1, 7, 1000])
                f.attrs["committed"] = c
        elif kind == "unknown_parameter":
            with h5py.File(rank, "a") as f:
                ev = f["evaluations"]
                names = [n.decode() if isinstance(n, bytes) else n for n in ev.attrs["parameters"]]
                names[rng.randrange(len(names))] = rng.choice(["tbw", "bogus", "", "TBX"])
                ev.attrs["parameters"] = names
        elif kind == "bad_median":
            with h5py.File(rank, "a") as f:
                ev = f["evaluations"]
                data = ev[()]
                ok = np.flatnonzero(data["status"] == 0)
                data["median_ms"][ok[rng.randrange(len(ok))]] = rng.choice(
                    [float("nan"), -1.0, 0.0, float("-inf")])
                ev[...] = data
        elif kind == "foreign_rank":
            shutil.copy(os.path.join(other_run, "rank-0000.h5"), rank)
        elif kind == "rank_attr":
            with h5py.File(rank, "a") as f:
                f.attrs["rank"] = np.int32(rng.choice([1, 7, -1]))
        elif kind == "truncated_rank":
            src = open(rank, "rb").read()
            open(rank, "wb").write(src[: rng.randrange(1, min(len(src) - 1, 4096))])
        elif kind == "zero_rank":
            open(rank, "wb").close()
        elif kind == "missing_rank":
            os.unlink(rank)
        cases.append((kind, d, "dir"))
    return cases


def identified(run_dir):
    """Whether the run's rank files record the run they belong to (run_created)."""
    import h5py
    with h5py.File(os.path.join(run_dir, "rank-0000.h5"), "r") as f:
        return "run_created" in f.attrs


def file_digest(path):
    """The bytes of a file (None when it does not exist), to tell whether it changed."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def rng_pick(index, choices):
    return choices[index % len(choices)]


def run_h5_case(binary, case, index, workdir, timeout):
    kind, path, form = case
    trace = path if form == "file" else os.path.join(path, "trace.h5")
    results = []
    cfg = os.path.join(workdir, "h5cfg%04d.yaml" % index)
    tree = structured(None)
    tree["evaluator"]["dataset"] = trace
    with open(cfg, "w") as f:
        f.write(render(tree) + "\n")
    commands = [
        ("report", [binary, "report", path]),
        ("export", [binary, "export", path, "--kernel-tuner-cache",
                    os.path.join(workdir, "kt%04d.json" % index)]),
        ("run", [binary, "run", cfg, "--out", os.path.join(workdir, "h5out%04d" % index)]),
    ]
    if form == "dir":
        commands.append(("resume", [binary, "resume", path]))
        # A writer pointed at one of its own inputs: refused, the input unchanged.
        target = os.path.join(path, rng_pick(index, ["trace.h5", "rank-0000.h5"]))
        commands.append(("self-output", [binary, "export", path, "--kernel-tuner-cache", target]))
    else:
        commands.append(("self-output", [binary, "export", path, "--best", "-o", path]))
    for name, cmd in commands:
        before = file_digest(cmd[-1]) if name == "self-output" else None
        rc, out, err, timed_out = run_one(cmd, timeout, workdir)
        if before is not None and file_digest(cmd[-1]) != before:
            results.append((name, "silent", "overwrote its input", err.decode("utf-8", "replace")[:400]))
            continue
        names = ["trace.h5", "rank-0000.h5", os.path.basename(path)[:40]]
        verdict, why = classify(rc, out, err, timed_out, names, None)
        if name == "resume" and verdict == "silent" and kind in ("truncated_rank", "zero_rank",
                                                                 "missing_rank"):
            # The run finished (/result written): resume may report it done; not a fault.
            verdict, why = "ok", "finished run"
        if kind == "foreign_rank" and verdict == "silent" and not identified(path):
            # Rank files that do not record their run (no run_created attribute) cannot
            # be told from this run's own: a known gap, counted apart, not a pass.
            verdict, why = "gap", "rank files carry no run identity"
        if kind == "bitflip" and verdict == "silent":
            # A flipped bit in unused or unchecked bytes leaves a valid file: exit 0 is
            # right then (only crashes, hangs and unclear messages count for this kind).
            verdict, why = "ok", "flip left the file valid"
        if name == "resume" and verdict == "silent" and "already finished" in (
                out + err).decode("utf-8", "replace"):
            verdict, why = "ok", "finished run"
        results.append((name, verdict, why, err.decode("utf-8", "replace")[:400]))
    shutil.rmtree(os.path.join(workdir, "h5out%04d" % index), ignore_errors=True)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--configs", type=int, default=1000)
    ap.add_argument("--files", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--verbose", action="store_true", help="print every failing case")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="isletune-fuzz-")
    table = defaultdict(Counter)
    failures = []
    try:
        cases = [config_case(rng, i, workdir) for i in range(args.configs)]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(run_config_case, binary, c, i, workdir, args.timeout): (i, c)
                       for i, c in enumerate(cases)}
            for fut in concurrent.futures.as_completed(futures):
                i, c = futures[fut]
                for r in fut.result():
                    command, verdict, why = r[0], r[1], r[2]
                    row = "config %-14s %s" % (c.category, command)
                    table[row][verdict] += 1
                    if verdict not in ("ok", "gap"):
                        failures.append((row, i, verdict, why, r[3] if len(r) > 3 else ""))
        if args.files > 0:
            run_dir = make_run(binary, workdir, "base-run", "[64, 128, 256]")
            other = make_run(binary, workdir, "other-run", "[8, 32]")
            hcases = h5_cases(rng, args.files, workdir, run_dir, other)
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                futures = {pool.submit(run_h5_case, binary, c, i, workdir, args.timeout): (i, c)
                           for i, c in enumerate(hcases)}
                for fut in concurrent.futures.as_completed(futures):
                    i, c = futures[fut]
                    for command, verdict, why, err in fut.result():
                        row = "h5     %-14s %s" % (c[0], command)
                        table[row][verdict] += 1
                        if verdict not in ("ok", "gap"):
                            failures.append((row, i, verdict, why, err))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("scratch:", workdir)
    cols = ["ok", "crash", "hang", "silent", "unclear"]
    print("%-36s %6s %6s %6s %6s %6s %7s %4s" % ("case / command", "tried", *cols[1:], "ok",
                                                 "gap"))
    total = Counter()
    for row in sorted(table):
        c = table[row]
        n = sum(c.values())
        total.update(c)
        total["tried"] += n
        print("%-36s %6d %6d %6d %6d %6d %7d %4d" % (row, n, c["crash"], c["hang"], c["silent"],
                                                     c["unclear"], c["ok"], c["gap"]))
    print("%-36s %6d %6d %6d %6d %6d %7d %4d" % ("total", total["tried"], total["crash"],
                                                 total["hang"], total["silent"],
                                                 total["unclear"], total["ok"], total["gap"]))
    if failures:
        print("\nfailing cases (row, case index, verdict, why, message):")
        shown = failures if args.verbose else failures[:40]
        for row, i, verdict, why, err in sorted(shown):
            print("  %s #%d %s (%s): %r" % (row, i, verdict, why, err[:200]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

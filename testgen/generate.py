#!/usr/bin/env python3
"""Generate the Kiln conformance vectors (conformance/vectors/*.json).

    python3 testgen/generate.py --out conformance/vectors
    python3 testgen/generate.py --check conformance/vectors

Generation is deterministic: fixed seeds, sorted keys, no timestamps, so the
files are byte-identical on every run.  --check regenerates into a temporary
directory, validates every file structurally (validate_schema.py) and exits 1
naming each file that differs, is missing or is extra.  docs/conformance.md
documents the format.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import vecfile  # noqa: E402
import validate_schema  # noqa: E402

# One module per category; each has build() -> {filename: object}.
MODULES = ("options_parse", "options_precedence", "cache_isolation",
           "numerics", "differential", "sweep")


def build_all(verbose=False):
    files = {}
    here = os.path.dirname(os.path.abspath(__file__))
    for name in MODULES:
        if not os.path.exists(os.path.join(here, name + ".py")):
            continue
        t0 = time.time()
        mod = __import__(name)
        out = mod.build()
        for fn, obj in out.items():
            if fn in files:
                raise RuntimeError("two modules write %s" % fn)
            files[fn] = vecfile.dumps(obj)
        if verbose:
            for fn, obj in sorted(out.items()):
                print("  %-28s %6d tests  %5.1f s" % (
                    fn, obj["numberOfTests"], time.time() - t0))
    return files


def write(files, outdir):
    os.makedirs(outdir, exist_ok=True)
    for fn, text in sorted(files.items()):
        with open(os.path.join(outdir, fn), "w", encoding="utf-8",
                  newline="\n") as f:
            f.write(text)


def check_doc_counts(files):
    """The category table of docs/conformance.md must state the generated
    test counts (rows: | category | `FILE` | COUNT | ...)."""
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "docs", "conformance.md")
    if not os.path.exists(doc):
        return []
    stated = {}
    with open(doc, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and cells[1].startswith("`") and \
                    cells[1].endswith(".json`") and cells[2].isdigit():
                stated[cells[1].strip("`")] = int(cells[2])
    problems = []
    for fn, text in sorted(files.items()):
        n = json.loads(text)["numberOfTests"]
        if stated.get(fn) != n:
            problems.append("docs/conformance.md: the category table says "
                            "%s has %s tests, the generator writes %d"
                            % (fn, stated.get(fn), n))
    return problems


def check(outdir):
    tmp = tempfile.mkdtemp(prefix="kiln-testgen-")
    try:
        files = build_all()
        write(files, tmp)
        problems = []
        have = set()
        if os.path.isdir(outdir):
            have = {f for f in os.listdir(outdir) if f.endswith(".json")}
        for fn in sorted(files):
            path = os.path.join(outdir, fn)
            if fn not in have:
                problems.append("%s: missing (run `make testgen`)" % path)
                continue
            with open(path, encoding="utf-8", newline="") as f:
                if f.read() != files[fn]:
                    problems.append("%s: differs from a fresh generation "
                                    "(stale; run `make testgen`)" % path)
        for fn in sorted(have - set(files)):
            problems.append("%s: extra file, not produced by testgen"
                            % os.path.join(outdir, fn))
        for fn in sorted(have & set(files)):
            for msg in validate_schema.validate_file(os.path.join(outdir, fn)):
                problems.append(msg)
        problems += check_doc_counts(files)
        if problems:
            for p in problems:
                print("testgen-check: " + p, file=sys.stderr)
            return 1
        print("testgen-check: %d vector files up to date" % len(files))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Generate the Kiln conformance vectors deterministically.")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out", metavar="DIR",
                   help="write every category file into DIR")
    g.add_argument("--check", metavar="DIR",
                   help="exit 1 if the files in DIR are stale, missing, "
                        "extra or structurally invalid")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print per-file test counts and timings")
    args = ap.parse_args(argv)
    if args.check:
        return check(args.check)
    t0 = time.time()
    files = build_all(args.verbose)
    write(files, args.out)
    bad = []
    for fn in sorted(files):
        bad += validate_schema.validate_file(os.path.join(args.out, fn))
    for msg in bad:
        print("testgen: " + msg, file=sys.stderr)
    print("testgen: wrote %d files to %s in %.1f s" % (
        len(files), args.out, time.time() - t0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

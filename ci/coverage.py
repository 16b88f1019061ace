#!/usr/bin/env python3
"""Line, function and branch coverage of runtime/ and conformance/.

    ci/coverage.py zero BUILD
        delete BUILD's counters (*.gcda), before the instrumented stages run
    ci/coverage.py report BUILD [--html DIR] [--check] [--gpu-only FILE]
        read the counters with `gcov --json-format --stdout
        --branch-probabilities`, print the figures per directory (one line
        each, then the files below the line threshold), write an HTML report
        to DIR, and with --check exit 1 when a directory is below its
        thresholds (THRESHOLDS) or the GPU-only list names something that
        does not exist.

BUILD is a build made with `make BUILD=... SAN=cov` (gcc --coverage, -O0).
Every process that ran the instrumented code (the unit tests, build/cov/kiln,
the plugins, the mutants' unpatched objects) added to the same counters.  A
mutant's patched copy (BUILD/mutants/NAME/src/...) is not the tree's code and
is not counted.

The only code left out is code that needs a real GPU driver, listed one entry
a line in ci/coverage_gpu_only.txt, each with its reason:

    FILE FUNCTION   reason        one function (its lines, branches, itself)
    FILE *          reason        the whole file

An entry that names no existing function or file fails --check, so the list
cannot outlive the code.  The thresholds are aggregates per directory: a new
file counts in its directory's figures without any change here.

Standard library only (CI has no gcovr/lcov dependency for this).
"""
import argparse
import collections
import html
import json
import os
import subprocess
import sys

DIRS = ("runtime", "conformance")
# Per directory: lines, functions, branches (percent).  docs/ci.md, README.
THRESHOLDS = {"lines": 90.0, "functions": 95.0, "branches": 75.0}


def die(msg):
    print(f"coverage: {msg}", file=sys.stderr)
    sys.exit(2)


def gcda_files(build):
    out = []
    for root, dirs, files in os.walk(build):
        # A mutant's own objects are compiled from patched copies.
        if os.path.basename(root) == "mutants" and root == os.path.join(build, "mutants"):
            dirs[:] = []
            continue
        for f in files:
            if f.endswith(".gcda"):
                out.append(os.path.join(root, f))
    return sorted(out)


class FileCov:
    def __init__(self):
        self.lines = collections.defaultdict(int)      # line -> count
        self.line_fn = {}                               # line -> function
        self.branches = collections.defaultdict(int)   # (line, i) -> count
        self.functions = {}                             # name -> [start, end, count]


def read_gcov(build, root):
    files = collections.defaultdict(FileCov)
    gcdas = gcda_files(build)
    if not gcdas:
        die(f"no counters (*.gcda) under {build}: run the instrumented stages first")
    for i in range(0, len(gcdas), 64):
        batch = gcdas[i:i + 64]
        r = subprocess.run(["gcov", "--json-format", "--stdout", "--branch-probabilities"]
                           + batch, cwd=root, capture_output=True, text=True)
        if r.returncode != 0:
            die(f"gcov failed: {r.stderr.strip()}")
        for doc in r.stdout.splitlines():
            if not doc.strip():
                continue
            d = json.loads(doc)
            for f in d["files"]:
                path = os.path.normpath(f["file"])
                if os.path.isabs(path):
                    path = os.path.relpath(path, root)
                if path.split(os.sep)[0] not in DIRS:
                    continue
                fc = files[path]
                for fn in f["functions"]:
                    cur = fc.functions.setdefault(fn["name"], [fn["start_line"], fn["end_line"], 0])
                    cur[2] += fn["execution_count"]
                for ln in f["lines"]:
                    n = ln["line_number"]
                    fc.lines[n] += ln["count"]
                    if ln.get("function_name"):
                        fc.line_fn[n] = ln["function_name"]
                    for k, b in enumerate(ln["branches"]):
                        fc.branches[(n, k)] += b["count"]
    return files


def read_gpu_only(path):
    entries = []
    with open(path, encoding="utf-8") as fh:
        for no, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                die(f"{path}:{no}: 'FILE FUNCTION reason' (or FILE * reason): {line!r}")
            entries.append((parts[0], parts[1], parts[2], no))
    return entries


def apply_gpu_only(files, entries, path):
    problems = []
    excluded = collections.defaultdict(set)   # file -> functions ('*' = all)
    for f, fn, _reason, no in entries:
        if f not in files:
            problems.append(f"{path}:{no}: {f}: no such file in the coverage data")
            continue
        if fn != "*" and fn not in files[f].functions:
            problems.append(f"{path}:{no}: {f}: no function {fn}")
            continue
        excluded[f].add(fn)
    for f, fns in excluded.items():
        if "*" in fns:
            del files[f]
            continue
        fc = files[f]
        for fn in fns:
            start, end, _ = fc.functions.pop(fn)
            gone = {n for n, name in fc.line_fn.items() if name == fn}
            gone |= {n for n in fc.lines if start <= n <= end}
            for n in gone:
                fc.lines.pop(n, None)
            for key in [k for k in fc.branches if k[0] in gone]:
                del fc.branches[key]
    return problems


def figures(fcs):
    t = {"lines": [0, 0], "functions": [0, 0], "branches": [0, 0]}
    for fc in fcs:
        t["lines"][0] += sum(1 for c in fc.lines.values() if c)
        t["lines"][1] += len(fc.lines)
        t["functions"][0] += sum(1 for v in fc.functions.values() if v[2])
        t["functions"][1] += len(fc.functions)
        t["branches"][0] += sum(1 for c in fc.branches.values() if c)
        t["branches"][1] += len(fc.branches)
    return t


def pct(hit, total):
    return 100.0 * hit / total if total else 100.0


def fmt(t):
    return ", ".join(f"{k} {pct(*t[k]):.1f}% ({t[k][0]}/{t[k][1]})" for k in THRESHOLDS)


def write_html(outdir, root, files, per_dir):
    os.makedirs(outdir, exist_ok=True)
    style = ("<style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:right}"
             "td:first-child{text-align:left}.miss{background:#fcc}.hit{background:#cfc}"
             "pre{margin:0}</style>")
    rows = []
    for d in DIRS:
        t = per_dir[d]
        rows.append(f"<tr><th>{d}/</th>" + "".join(
            f"<th>{pct(*t[k]):.1f}% ({t[k][0]}/{t[k][1]})</th>" for k in THRESHOLDS) + "</tr>")
    for path in sorted(files):
        t = figures([files[path]])
        page = path.replace(os.sep, "_") + ".html"
        rows.append(f'<tr><td><a href="{page}">{html.escape(path)}</a></td>' + "".join(
            f"<td>{pct(*t[k]):.1f}% ({t[k][0]}/{t[k][1]})</td>" for k in THRESHOLDS) + "</tr>")
        fc = files[path]
        try:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
                src = fh.read().splitlines()
        except OSError:
            src = []
        body = []
        for n, text in enumerate(src, 1):
            cls, cnt = "", ""
            if n in fc.lines:
                cls = "hit" if fc.lines[n] else "miss"
                cnt = str(fc.lines[n])
            br = [fc.branches[k] for k in sorted(k for k in fc.branches if k[0] == n)]
            brs = f" [{sum(1 for c in br if c)}/{len(br)}]" if br else ""
            body.append(f'<tr class="{cls}"><td>{n}</td><td>{cnt}{brs}</td>'
                        f"<td style='text-align:left'><pre>{html.escape(text)}</pre></td></tr>")
        with open(os.path.join(outdir, page), "w", encoding="utf-8") as fh:
            fh.write(f"<!doctype html><title>{html.escape(path)}</title>{style}"
                     f"<h1>{html.escape(path)}</h1><p>{fmt(t)}</p>"
                     "<table>" + "".join(body) + "</table>")
    with open(os.path.join(outdir, "index.html"), "w", encoding="utf-8") as fh:
        fh.write(f"<!doctype html><title>Kiln coverage</title>{style}<h1>Kiln coverage</h1>"
                 "<table><tr><th>file</th>" + "".join(f"<th>{k}</th>" for k in THRESHOLDS)
                 + "</tr>" + "".join(rows) + "</table>")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    z = sub.add_parser("zero")
    z.add_argument("build")
    r = sub.add_parser("report")
    r.add_argument("build")
    r.add_argument("--html")
    r.add_argument("--check", action="store_true")
    r.add_argument("--gpu-only", default="ci/coverage_gpu_only.txt")
    r.add_argument("--verbose", "-v", action="store_true", help="every file's figures")
    a = ap.parse_args()
    root = os.getcwd()
    if a.cmd == "zero":
        for f in gcda_files(a.build):
            os.unlink(f)
        return 0
    files = read_gcov(a.build, root)
    problems = apply_gpu_only(files, read_gpu_only(a.gpu_only), a.gpu_only)
    per_dir = {d: figures([fc for p, fc in files.items() if p.split(os.sep)[0] == d])
               for d in DIRS}
    failed = []
    for d in DIRS:
        t = per_dir[d]
        low = [k for k in THRESHOLDS if pct(*t[k]) < THRESHOLDS[k]]
        print(f"coverage: {d + '/':13} {fmt(t)}" + (f"  BELOW ({', '.join(low)})" if low else ""))
        if low:
            failed.append(d)
    for path in sorted(files):
        t = figures([files[path]])
        if a.verbose or pct(*t["lines"]) < THRESHOLDS["lines"]:
            print(f"  {path:40} {fmt(t)}")
    print("coverage summary: " + ", ".join(
        f"{d}/ " + "/".join(f"{pct(*per_dir[d][k]):.1f}" for k in THRESHOLDS) for d in DIRS)
        + " % (lines/functions/branches; thresholds "
        + "/".join(f"{v:g}" for v in THRESHOLDS.values()) + ")"
        + (f": BELOW in {', '.join(failed)}" if failed else ": ok"))
    for p in problems:
        print(p, file=sys.stderr)
    if a.html:
        write_html(a.html, root, files, per_dir)
        print(f"coverage report: {a.html}/index.html")
    if a.check and (failed or problems):
        print("coverage: thresholds per directory: "
              + ", ".join(f"{k} >= {v:g}%" for k, v in THRESHOLDS.items())
              + (f"; below: {', '.join(failed)}" if failed else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

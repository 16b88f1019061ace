#!/usr/bin/env python3
"""Compare testgen's copies of the op, dtype and ULP tables with their source.

    python3 testgen/check_tables.py build/kiln

Checks, each difference printed:
  1. testgen/optable.py's OPS and DTYPES against `kiln fusion
     --op-table-json` (runtime/fusion.c's op table, kiln.h's dtype table):
     every op's value, name, arity, kind, accepted dtypes, result and
     reduction kind, in value order; every dtype's value, size and float
     format;
  2. the reference reader's own copies (testgen/check_vectors.py: OPS,
     REDUCTIONS, FLOAT, WIDTH), kept there so that the reader stays one
     self-contained file, against optable.py;
  3. optable.ULP (the Python source of the ULP bounds, used by numerics.py
     and differential.py) against the ULP table of docs/numerics.md.
Exit 0 when everything agrees, 1 on any drift, 2 on usage errors or when the
tool cannot be run.  `make docs-check` runs it, as it runs
check_catalogue.py for the option catalogue.
"""

import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import check_vectors  # noqa: E402
import optable  # noqa: E402

NUMERICS_MD = os.path.join(HERE, "..", "docs", "numerics.md")


def c_tables(kiln):
    out = subprocess.run([kiln, "fusion", "--op-table-json"], check=True,
                         stdout=subprocess.PIPE).stdout
    return json.loads(out)


def compare_c(doc, problems):
    c_ops = [(o["value"], o["name"], o["arity"], o["kind"],
              tuple(o["dtypes"]), o["result"], o["reduce"])
             for o in doc.get("ops", [])]
    py_ops = [(o.value, o.name, o.arity, o.kind, tuple(o.dtypes), o.result,
               o.reduce) for o in optable.OPS]
    for i in range(max(len(c_ops), len(py_ops))):
        c = c_ops[i] if i < len(c_ops) else None
        p = py_ops[i] if i < len(py_ops) else None
        if c != p:
            problems.append("op row %d differs: C %r, testgen %r" % (i, c, p))
    c_dts = []
    for d in doc.get("dtypes", []):
        f = d["format"]
        c_dts.append((d["name"], d["value"], d["size"],
                      f["exponentBits"] if f else 0,
                      f["fractionBits"] if f else 0))
    if c_dts != list(optable.DTYPES):
        problems.append("dtype table differs: C %r, testgen %r"
                        % (c_dts, list(optable.DTYPES)))
    return len(py_ops), len(c_dts)


def compare_reader(problems):
    reader = {name: (arity, tuple(dts), result)
              for name, (arity, dts, result) in check_vectors.OPS.items()}
    ours = {o.name: (o.arity, tuple(o.dtypes), o.result) for o in optable.OPS
            if o.name not in ("input", "const")}
    for name in sorted(set(reader) | set(ours)):
        if reader.get(name) != ours.get(name):
            problems.append("check_vectors.OPS[%r] is %r, the op table says %r"
                            % (name, reader.get(name), ours.get(name)))
    reductions = tuple(o.name for o in optable.OPS if o.reduce != "none")
    if tuple(check_vectors.REDUCTIONS) != reductions:
        problems.append("check_vectors.REDUCTIONS is %r, the op table says %r"
                        % (check_vectors.REDUCTIONS, reductions))
    if check_vectors.FLOAT != optable.FORMATS:
        problems.append("check_vectors.FLOAT is %r, the dtype table says %r"
                        % (check_vectors.FLOAT, optable.FORMATS))
    width = {d[0]: (1 if d[0] == "bool" else 8 * d[2]) for d in optable.DTYPES}
    if check_vectors.WIDTH != width:
        problems.append("check_vectors.WIDTH is %r, the dtype table says %r"
                        % (check_vectors.WIDTH, width))


def docs_ulp(path):
    """{dtype: {op: bound}} from the first table whose header starts with
    `| dtype |` in docs/numerics.md."""
    rows, header = {}, None
    for line in open(path, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            if line.startswith("| dtype |"):
                header = cells[1:]
            continue
        if not line.startswith("|"):
            break
        if re.match(r"^-+$", cells[0]):
            continue
        rows[cells[0]] = {op: int(v) for op, v in zip(header, cells[1:])}
    return rows


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        doc = c_tables(argv[0])
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        print("check_tables: cannot read the op table from %s: %s"
              % (argv[0], e), file=sys.stderr)
        return 2
    problems = []
    n_ops, n_dts = compare_c(doc, problems)
    compare_reader(problems)
    docs = docs_ulp(NUMERICS_MD)
    if docs != optable.ULP:
        problems.append("the ULP table of docs/numerics.md is %r, "
                        "testgen/optable.py's ULP is %r" % (docs, optable.ULP))
    for p in problems:
        print("check_tables: " + p, file=sys.stderr)
    if problems:
        print("check_tables: make the copies agree with the C tables "
              "(testgen/optable.py, testgen/check_vectors.py, "
              "docs/numerics.md), then run `make testgen`", file=sys.stderr)
        return 1
    print("check_tables: %d ops, %d dtypes, %d ULP bounds agree"
          % (n_ops, n_dts, sum(len(v) for v in optable.ULP.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

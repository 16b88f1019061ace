#!/usr/bin/env python3
"""spec_coverage.py -- every rule of the contract has a test that can fail.

    python3 testgen/spec_coverage.py [--vectors DIR] [--markdown FILE]

Reads the rule ids defined in the contract docs (rules.RULE_DOCS: a code
span `[area.name]`, each defined once), the `rules` of every test in the
vector files, and the unit-test tags `/* rule: [area.name] */` of
tests/unit/*.c (for rules the vector format cannot express).  Prints the
rule x test matrix as Markdown (per rule: the tests per category, the unit
tests, an example test id) and exits 1 when:

- a rule has no test;
- a test names a rule that no doc defines, or a rule id is defined twice;
- a vector test has no `rules`, or an outcome does not hold: every outcome
  is `PATH[=VALUE]` items joined by "; ", PATH must exist in the test and
  hold VALUE, and no outcome may rest on an "any";
- a cache rule (`cache.*`) is not asserted through an expected hit or miss
  (`steps[i].expect.plan|kernels|db`), or a step it names expects a kernel
  hit without stating the compile count.

Standard library only.  `make spec-coverage` runs it; `make test` too.
"""

import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import rules  # noqa: E402

UNIT_TAG = re.compile(r"/\*\s*rules?:\s*((?:\[[a-z0-9_.]+\]\s*)+)\*/")
UNIT_TEST = re.compile(r"START_TEST\((\w+)\)")
PATH_ITEM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def doc_rules(root=ROOT):
    """{id: "file:line"} and the problems (duplicates)."""
    defs, problems = {}, []
    for rel in rules.RULE_DOCS:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                for m in rules.ANCHOR_RE.finditer(line):
                    rid = m.group(1)
                    where = "%s:%d" % (rel, n)
                    if rid in defs:
                        problems.append("%s: rule [%s] is already defined at "
                                        "%s" % (where, rid, defs[rid]))
                    else:
                        defs[rid] = where
    return defs, problems


def unit_tags(root=ROOT):
    """[(rule id, "file:TEST")]: a tag names the rules of the next test."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "tests", "unit",
                                              "*.c"))):
        rel = os.path.relpath(path, root)
        pending = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = UNIT_TAG.search(line)
                if m:
                    pending += re.findall(r"\[([a-z0-9_.]+)\]", m.group(1))
                t = UNIT_TEST.search(line)
                if t and pending:
                    out += [(rid, "%s:%s" % (rel, t.group(1)))
                            for rid in pending]
                    pending = []
        for rid in pending:
            out.append((rid, "%s:(no START_TEST after the tag)" % rel))
    return out


def resolve(obj, path):
    """The value at PATH (`a.b[2].c`) in obj; KeyError when absent."""
    cur = obj
    for part in path.split("."):
        m = PATH_ITEM.fullmatch(part)
        if m is None:
            raise KeyError(path)
        if not isinstance(cur, dict) or m.group(1) not in cur:
            raise KeyError(path)
        cur = cur[m.group(1)]
        for ix in re.findall(r"\[(\d+)\]", m.group(2)):
            if not isinstance(cur, list) or int(ix) >= len(cur):
                raise KeyError(path)
            cur = cur[int(ix)]
    return cur


def check_outcome(test, rid, outcome):
    """Problems of one rule's outcome in one test."""
    if not isinstance(outcome, str) or not outcome.strip():
        return ["rule [%s]: the outcome must be a non-empty string" % rid]
    problems, named = [], []
    for item in outcome.split("; "):
        path, eq, want = item.partition("=")
        try:
            got = resolve(test, path)
        except KeyError:
            problems.append("rule [%s]: %r: no such field in the test"
                            % (rid, path))
            continue
        if got == "any" or want == "any":
            problems.append("rule [%s]: %r is \"any\": an outcome must be "
                            "able to fail" % (rid, path))
        if eq and str(got) != want:
            problems.append("rule [%s]: %r is %r, the outcome says %r"
                            % (rid, path, got, want))
        named.append((path, got))
    if rid.startswith("cache.") and not problems:
        exp = [(p, g) for p, g in named if re.fullmatch(
            r"steps\[\d+\]\.expect\.(plan|kernels|db)", p)]
        if not exp:
            problems.append("rule [%s]: a cache rule must be asserted "
                            "through an expected hit or miss "
                            "(steps[i].expect.plan/kernels/db)" % rid)
        for p, _ in exp:
            step = resolve(test, p.rsplit(".", 2)[0])
            e = step.get("expect", {})
            if e.get("kernels") == "hit" and "compiles" not in e:
                problems.append("rule [%s]: %s expects a kernel hit without "
                                "stating the compile count" % (rid, p))
    return problems


def vector_rules(vdir):
    """[(rule id, category, test id)] and the problems."""
    out, problems = [], []
    files = sorted(glob.glob(os.path.join(vdir, "*.json")))
    if not files:
        problems.append("%s: no vector files" % vdir)
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        cat = doc.get("category", os.path.basename(path)[:-5])
        for g in doc.get("testGroups", []):
            for t in g.get("tests", []):
                tid = "%s/%s" % (cat, t.get("tcId"))
                rs = t.get("rules")
                if not isinstance(rs, dict) or not rs:
                    problems.append("%s: no rules (every test lists the "
                                    "rules it traces)" % tid)
                    continue
                for rid, outcome in sorted(rs.items()):
                    out.append((rid, cat, tid))
                    problems += ["%s: %s" % (tid, p)
                                 for p in check_outcome(t, rid, outcome)]
    return out, problems


def matrix(defs, vec, unit):
    cats = sorted({c for _, c, _ in vec})
    lines = ["| rule | defined in | " + " | ".join(cats) +
             " | unit tests | example |",
             "| --- | --- | " + " | ".join("---" for _ in cats) +
             " | --- | --- |"]
    for rid in sorted(defs):
        counts = [sum(1 for r, c, _ in vec if r == rid and c == cat)
                  for cat in cats]
        us = sorted({u for r, u in unit if r == rid})
        ex = next((t for r, _, t in vec if r == rid), "")
        lines.append("| `[%s]` | %s | %s | %s | %s |" % (
            rid, defs[rid], " | ".join(str(n) for n in counts),
            ", ".join("`%s`" % u.split(":")[1] for u in us) or "-", ex or "-"))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vectors", default=os.path.join(ROOT, "conformance",
                                                       "vectors"))
    ap.add_argument("--markdown", metavar="FILE",
                    help="also write the matrix to FILE")
    ap.add_argument("--quiet", action="store_true",
                    help="print only the summary and the problems")
    args = ap.parse_args(argv)
    defs, problems = doc_rules()
    vec, p2 = vector_rules(args.vectors)
    problems += p2
    unit = unit_tags()
    for rid, where in sorted(set((r, c) for r, c, _ in vec)):
        if rid not in defs:
            problems.append("%s tests name the unknown rule [%s]"
                            % (where, rid))
    for rid, where in unit:
        if rid not in defs:
            problems.append("%s names the unknown rule [%s]" % (where, rid))
    traced = {r for r, _, _ in vec} | {r for r, _ in unit}
    for rid in sorted(defs):
        if rid not in traced:
            problems.append("%s: rule [%s] has no test" % (defs[rid], rid))
    md = matrix(defs, vec, unit)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(md)
    if not args.quiet:
        sys.stdout.write(md)
    unit_only = sorted({r for r, _ in unit} - {r for r, _, _ in vec})
    print("spec-coverage: %d rules, %d traced by vectors, %d only by unit "
          "tests (%s), %d (rule, test) pairs" % (
              len(defs), len({r for r, _, _ in vec} & set(defs)),
              len(unit_only), ", ".join(unit_only) or "none", len(vec)))
    for p in problems[:200]:
        print("spec-coverage: " + p, file=sys.stderr)
    if len(problems) > 200:
        print("spec-coverage: ... and %d more" % (len(problems) - 200),
              file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

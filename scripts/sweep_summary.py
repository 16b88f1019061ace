#!/usr/bin/env python3
"""Merge the `sweep:` lines of `kiln conform --sweep ...` runs (one log per
--sweep-shard, any order) into one row per sweep test: the inputs covered,
the worst ULP error with its input, and the counts over the bound,
undecided and unbounded (docs/conformance.md, "sweep").

    python3 scripts/sweep_summary.py LOG...

Exits 1 when a test went over its bound anywhere, or (with --expect-all)
when an f32 test did not cover all 2^32 inputs exactly once.
"""

import argparse
import re
import sys

LINE = re.compile(
    r"^sweep: (?P<id>\S+) (?P<op>\S+) (?P<ft>\S+) (?P<mode>\S+): "
    r"(?P<n>\d+) inputs \[(?P<lo>\d+), (?P<hi>\d+)\), worst (?P<w>\d+) ulp "
    r"at x=(?P<x>0x[0-9a-f]+) \((?P<xv>[^)]*)\): got (?P<got>0x[0-9a-f]+), "
    r"correctly rounded (?P<cr>0x[0-9a-f]+); (?P<over>\d+) over the bound, "
    r"(?P<und>\d+) undecided, (?P<unb>\d+) unbounded(?P<fail> FAIL)?$")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--expect-all", action="store_true",
                    help="every f32 test must cover all 2^32 inputs")
    a = ap.parse_args(argv)
    rows = {}
    for path in a.logs:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = LINE.match(line.rstrip("\n"))
                if not m:
                    continue
                d = m.groupdict()
                key = (int(d["id"].split("/")[1]), d["op"], d["ft"], d["mode"])
                r = rows.setdefault(key, {"n": 0, "ranges": [], "w": -1,
                                          "over": 0, "und": 0, "unb": 0})
                r["n"] += int(d["n"])
                r["ranges"].append((int(d["lo"]), int(d["hi"])))
                for k in ("over", "und", "unb"):
                    r[k] += int(d[k])
                if int(d["w"]) > r["w"]:
                    r.update(w=int(d["w"]), x=d["x"], xv=d["xv"],
                             got=d["got"], cr=d["cr"])
    bad = 0
    print("%-9s %-10s %-12s %-9s %11s %6s  %-30s %-20s %8s %9s %9s" % (
        "test", "op", "dtypes", "mode", "inputs", "worst", "at x",
        "got / correct", "over", "undecided", "unbounded"))
    for key in sorted(rows):
        r = rows[key]
        tid, op, ft, mode = key
        print("%-9s %-10s %-12s %-9s %11d %6d  %-30s %-20s %8d %9d %9d" % (
            "sweep/%d" % tid, op, ft, mode, r["n"], r["w"],
            "%s (%s)" % (r.get("x"), r.get("xv")),
            "%s / %s" % (r.get("got"), r.get("cr")), r["over"], r["und"],
            r["unb"]))
        bad |= r["over"] > 0
        if a.expect_all and ft.startswith("f32"):
            rs = sorted(r["ranges"])
            ok = rs[0][0] == 0 and rs[-1][1] == 1 << 32 and all(
                p[1] == q[0] for p, q in zip(rs, rs[1:]))
            if not ok or r["n"] != 1 << 32:
                print("  sweep/%d: covered %d inputs, not all 2^32 once"
                      % (tid, r["n"]))
                bad = 1
    if not rows:
        print("sweep_summary: no sweep lines found", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

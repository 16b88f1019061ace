#!/usr/bin/env python3
"""Fuzz the comment grammar (ci/trigger.py) with Atheris.

`make fuzz-trigger` installs Atheris (PyPI) into build/fuzz/venv and runs
this file under it (FUZZ_SECONDS, default 60).  Python cannot corrupt
memory, so the target checks properties instead, on every input:

  - decide() returns one of the three decisions and never raises;
  - it ignores exactly the bodies the workflow's pre-filter drops, so the
    pre-filter passes a superset of what the parser accepts or rejects;
  - a rejection's message is one line of printable ASCII;
  - a plan comes only from a body whose first line is printable ASCII,
    its canonical command parses back to the same plan, nothing after the
    first line changes it, \\n and \\r\\n end the line alike, and every argv
    word is on a fixed list (no shell metacharacter can appear).

`ci/fuzz_trigger.py --check FILE...` runs the same checks on files without
Atheris (`make ci-check` does so for ci/fuzz_corpus).
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
trigger = None          # imported in main(), under Atheris' instrumentation when fuzzing

ARGV_WORDS = {"make", "deps", "all", "test", "test-asan", "test-tsan", "coverage",
              "BUILD=build/asan", "SAN=asan", "build/kiln", "build/asan/kiln", "conform",
              "--serde", "--backend", "--category", "--shard", "--junit", "--tap",
              "build/ci-junit.xml", "build/asan/ci-junit.xml", "build/ci.tap",
              "build/asan/ci.tap", "ref", "cuda", "nvrtc", "cache.isolation",
              "differential", "numerics", "options.parse", "options.precedence"}
_SHARD_WORD = re.compile(r"[1-9][0-9]{0,2}/[1-9][0-9]{0,2}")
_JOB_ID = re.compile(r"(build|test|sanitize|coverage|conform-[1-9][0-9]*-of-[1-9][0-9]*)")
_TAILS = (b"", b"\n", b"\r\n", b"\nmore text\n!build", b"\n\xff\xfe\x00 invalid")


def _first_line(body):
    nl = body.find(b"\n")
    line = body if nl < 0 else body[:nl]
    return line[:-1] if nl >= 0 and line.endswith(b"\r") else line


def check(body):
    """Raise AssertionError when a property above fails for `body`."""
    d = trigger.decide(body)
    assert d.kind in (trigger.IGNORE, trigger.REJECT, trigger.PLAN), d
    assert (d.kind == trigger.IGNORE) == (not trigger.prefilter(body)), (body[:64], d)
    if d.kind != trigger.PLAN:
        assert d.message and "\n" not in d.message and len(d.message) < 600, d
        assert all(0x20 <= ord(c) <= 0x7E for c in d.message), d.message
        return d
    line = _first_line(body)
    assert len(body) <= trigger.MAX_BODY and len(line) <= trigger.MAX_LINE
    assert all(0x20 <= b <= 0x7E for b in line), line
    p = d.plan
    again = trigger.decide(p.canonical.encode("ascii"))
    assert again.kind == trigger.PLAN and again.plan == p, (p, again)
    assert trigger.decide(p.canonical.encode("ascii")).plan.canonical == p.canonical
    for tail in _TAILS:
        if len(line) + len(tail) <= trigger.MAX_BODY:
            assert trigger.decide(line + tail).plan == p, (line, tail)
    assert p.jobs and len({j.id for j in p.jobs}) == len(p.jobs)
    for j in p.jobs:
        assert _JOB_ID.fullmatch(j.id) and j.runner in ("cpu", "gpu"), j
        assert j.steps and all(s[0] in ("make", "build/kiln", "build/asan/kiln")
                               for s in j.steps), j
        for w in (w for s in j.steps for w in s):
            assert w in ARGV_WORDS or _SHARD_WORD.fullmatch(w), w
    return d


def TestOneInput(data):
    check(data)


def main(argv):
    global trigger
    if len(argv) >= 2 and argv[1] == "--check":
        import trigger as t
        trigger = t
        files = [os.path.join(a, n) if os.path.isdir(a) else a for a in argv[2:]
                 for n in (sorted(os.listdir(a)) if os.path.isdir(a) else [None])]
        for path in files:
            with open(path, "rb") as f:
                check(f.read())
        print("fuzz_trigger: %d corpus file(s) hold every property" % len(files))
        return 0 if files else 1
    import atheris
    with atheris.instrument_imports():
        import trigger as t
    trigger = t
    atheris.Setup(argv, TestOneInput)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

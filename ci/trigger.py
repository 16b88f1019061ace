#!/usr/bin/env python3
"""Turn a pull-request comment into the CI job it asks for.

Kiln's CI is driven by comments, as nvFuser's is: a line `!build` builds,
`!test` runs the full test command, and a few flags narrow or widen the run.
The comment is untrusted text: this module never passes any of it to a
shell.  It matches the comment against a fixed grammar and maps it to an
argv list chosen from a whitelist; anything else is rejected with a precise
message (which line, which word, what is allowed).

Grammar (docs/ci.md):

    trigger  = "!build" | "!test" { " " flag } ;
    flag     = "--serde" | "--backend=" backend | "--category=" category
             | "--shard=" digit+ "/" digit+ ;
    backend  = "ref" | "cuda" | "nvrtc" ;
    category = "options.parse" | "options.precedence" | "cache.isolation"
             | "numerics" | "differential" ;

Only the first line that starts with "!" counts; other lines are ignored, so
a trigger can sit at the top of a longer comment.

Usage:
    ci/trigger.py plan  < comment.txt   # print the commands, one per line (JSON)
    ci/trigger.py run   < comment.txt   # run them (exit status of the first failure)
"""

import json
import re
import subprocess
import sys

BACKENDS = ("ref", "cuda", "nvrtc")
CATEGORIES = ("options.parse", "options.precedence", "cache.isolation",
              "numerics", "differential")
MAX_COMMENT = 65536
MAX_FLAGS = 8


class TriggerError(Exception):
    """A comment that is not a valid trigger; str() is the message."""


def _flag(word, state):
    if word == "--serde":
        state["serde"] = True
        return
    m = re.fullmatch(r"--backend=([a-z]+)", word)
    if m:
        if m.group(1) not in BACKENDS:
            raise TriggerError("unknown backend '%s' (valid: %s)"
                               % (m.group(1), ", ".join(BACKENDS)))
        state["backend"] = m.group(1)
        return
    m = re.fullmatch(r"--category=([a-z.]+)", word)
    if m:
        if m.group(1) not in CATEGORIES:
            raise TriggerError("unknown category '%s' (valid: %s)"
                               % (m.group(1), ", ".join(CATEGORIES)))
        state["categories"].append(m.group(1))
        return
    m = re.fullmatch(r"--shard=([0-9]{1,4})/([0-9]{1,4})", word)
    if m:
        i, n = int(m.group(1)), int(m.group(2))
        if n == 0 or i == 0 or i > n:
            raise TriggerError("shard %d/%d out of range (need 1 <= I <= N)" % (i, n))
        state["shard"] = "%d/%d" % (i, n)
        return
    raise TriggerError("unknown flag %r (valid: --serde, --backend=B, "
                       "--category=C, --shard=I/N)" % word[:64])


def parse(comment):
    """Return (command, state) for a comment, or raise TriggerError."""
    if not isinstance(comment, str):
        raise TriggerError("comment is not text")
    if len(comment) > MAX_COMMENT:
        raise TriggerError("comment longer than %d bytes" % MAX_COMMENT)
    for lineno, line in enumerate(comment.splitlines(), 1):
        if not line.startswith("!"):
            continue
        if not line.isprintable() or not line.isascii():
            raise TriggerError("line %d: trigger lines must be printable ASCII" % lineno)
        words = line.split()
        cmd = words[0]
        if cmd not in ("!build", "!test"):
            raise TriggerError("line %d: unknown trigger %r (valid: !build, !test)"
                               % (lineno, cmd[:32]))
        if cmd == "!build" and len(words) > 1:
            raise TriggerError("line %d: !build takes no flags" % lineno)
        if len(words) - 1 > MAX_FLAGS:
            raise TriggerError("line %d: more than %d flags" % (lineno, MAX_FLAGS))
        state = {"serde": False, "backend": None, "categories": [], "shard": None}
        for w in words[1:]:
            try:
                _flag(w, state)
            except TriggerError as e:
                raise TriggerError("line %d: %s" % (lineno, e)) from None
        if state["serde"]:
            raise TriggerError("line %d: --serde needs the on-disk kernel database, "
                               "which this version does not have" % lineno)
        return cmd, state
    raise TriggerError("no trigger line (a line starting with !build or !test)")


def plan(comment):
    """The argv lists to run for a comment (no shell involved)."""
    cmd, state = parse(comment)
    if cmd == "!build":
        return [["make", "deps"], ["make", "all"]]
    if state["backend"] is None and not state["categories"] and state["shard"] is None:
        return [["make", "deps"], ["make", "test"]]
    conform = ["build/kiln", "conform"]
    if state["backend"]:
        conform += ["--backend", state["backend"]]
    for c in state["categories"]:
        conform += ["--category", c]
    if state["shard"]:
        conform += ["--shard", state["shard"]]
    conform += ["--junit", "build/ci-junit.xml", "--tap", "build/ci.tap"]
    return [["make", "deps"], ["make", "all"], conform]


def main(argv):
    if len(argv) != 2 or argv[1] not in ("plan", "run") or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    text = sys.stdin.read(MAX_COMMENT + 1)
    try:
        steps = plan(text)
    except TriggerError as e:
        print("ci/trigger: rejected: %s" % e, file=sys.stderr)
        return 1
    if argv[1] == "plan":
        for s in steps:
            print(json.dumps(s))
        return 0
    for s in steps:
        print("ci/trigger: running %s" % " ".join(s), flush=True)
        rc = subprocess.call(s)
        if rc != 0:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

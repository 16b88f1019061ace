#!/usr/bin/env python3
"""Compare testgen's copy of the option catalogue with the C table.

    python3 testgen/check_catalogue.py build/kiln

Runs `kiln options --catalogue-json` and compares name, set, argument shape,
cache level, vocabulary and integer default of every option with
testgen/catalogue.py.  Exit 0 when they agree, 1 on any drift (each
difference is printed), 2 on usage errors or when the tool cannot be run.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import catalogue  # noqa: E402


def main(argv):
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        out = subprocess.run([argv[0], "options", "--catalogue-json"],
                             check=True, stdout=subprocess.PIPE).stdout
        doc = json.loads(out)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        print("check_catalogue: cannot read the catalogue from %s: %s"
              % (argv[0], e), file=sys.stderr)
        return 2
    c_rows = {}
    for o in doc.get("options", []):
        vocab = o.get("vocabulary")
        default = o.get("default")
        c_rows[(o["set"], o["name"])] = (
            o["arg"], o["level"], tuple(vocab) if vocab else None,
            default if o["arg"] == "int" else None)
    py_rows = {}
    for name, set_, arg, level, vocab, default in catalogue.CATALOGUE:
        py_rows[(set_, name)] = (arg, level, tuple(vocab) if vocab else None,
                                 default if arg == "int" else None)
    problems = []
    for key in sorted(set(c_rows) | set(py_rows)):
        if key not in py_rows:
            problems.append("%s option %r is in the C table but not in "
                            "testgen/catalogue.py" % key)
        elif key not in c_rows:
            problems.append("%s option %r is in testgen/catalogue.py but not "
                            "in the C table" % key)
        elif c_rows[key] != py_rows[key]:
            problems.append("%s option %r differs: C %r, testgen %r"
                            % (key + (c_rows[key], py_rows[key])))
    for p in problems:
        print("check_catalogue: " + p, file=sys.stderr)
    if problems:
        print("check_catalogue: update testgen/catalogue.py, then run "
              "`make testgen`", file=sys.stderr)
        return 1
    print("check_catalogue: %d options agree" % len(py_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

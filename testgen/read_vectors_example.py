#!/usr/bin/env python3
"""Example for outside implementers (docs/conformance.md): read the
options.parse vectors with nothing but the json module and check an
implementation against them -- here the `kiln options` command.

    python3 testgen/read_vectors_example.py build/kiln

For a test with "source": "env" the input becomes that set's KILN_*
variable; with "source": "execute" it becomes one --enable/--disable
element on an empty environment.  A valid test must print its "canonical"
text; an invalid one must exit 1 with an error at its byte "offset".
"""

import json
import os
import subprocess
import sys

VAR = {"enable": "KILN_ENABLE", "disable": "KILN_DISABLE",
       "dump": "KILN_DUMP"}


def run(kiln, test):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    cmd = [kiln, "options"]
    if test["source"] == "env":
        env[VAR[test["set"]]] = test["input"]
    else:
        cmd += ["--" + test["set"], test["input"]]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if test["result"] == "valid":
        return p.returncode == 0 and out == test["canonical"] + "\n"
    e = test["error"]
    return p.returncode == 1 and ("at byte %d:" % e["offset"]) in err


def main(argv):
    kiln = argv[0] if argv else "build/kiln"
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "conformance", "vectors",
                        "options.parse.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["suite"] == "kiln-conformance"
    failed = []
    total = 0
    for group in doc["testGroups"]:
        for test in group["tests"]:
            if test["source"] == "execute" and test["input"].startswith("-"):
                continue            # would read as a command-line option
            total += 1
            if not run(kiln, test):
                failed.append(test["tcId"])
    print("%s %s: %d of %d tests pass" % (
        doc["category"], doc["suiteVersion"], total - len(failed), total))
    for tc in failed:
        print("  failed: tcId %d" % tc)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

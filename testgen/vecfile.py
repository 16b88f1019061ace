"""Assemble one conformance vector file (docs/conformance.md).

A file is {"suite", "suiteVersion", "category", "numberOfTests", "notes",
"testGroups"}; every test gets a tcId (1..N in file order).  Output is
json.dumps(obj, indent=1, sort_keys=True) + "\\n", so it is byte-stable.
"""

import json
import re

import catalogue
import rules
from check_vectors import parse_kf

SUITE = "kiln-conformance"
SUITE_VERSION = "1.2.0"

# The machine-readable flags of what a test exercises, derived from the test
# itself (exercise_flags) and defined here, so every file has the same ones.
FALLBACK_NOTE = (
    " These tests are about the reference fallback itself: a segment that"
    " ran there does not make them unsupported (docs/conformance.md,"
    " \"Results\").")


def flag_note(flag):
    kind, name = flag.split("=", 1)
    if kind == "op":
        return "The fusion under test has a node of op %s." % name
    if kind == "dtype":
        return "A value of the fusion under test has dtype %s." % name
    return ("The test names the option %s (in its environment, an execute"
            " list, or the string it parses).%s"
            % (flag, FALLBACK_NOTE if flag == "disable=fallback" else ""))


def _option_flags(set_, text):
    """enable=NAME etc. for each catalogue option of set_ named in text
    (words outside argument lists)."""
    if not isinstance(text, str):
        return set()
    words = re.findall(r"[A-Za-z0-9_]+", re.sub(r"\([^()]*\)?", " ", text))
    return {"%s=%s" % (set_, w) for w in words
            if catalogue.lookup(set_, w) is not None}


def exercise_flags(test):
    """The flags of what `test` exercises: every option it names
    (set=name), every op (op=name) and dtype (dtype=name) of its fusion."""
    flags = set()
    if "set" in test and "input" in test:          # options.parse
        flags |= _option_flags(test["set"], test["input"])
    envs = [test.get("env")] + [st.get("env") for st in test.get("steps", [])]
    for env in envs:
        for set_ in catalogue.SETS:
            flags |= _option_flags(set_, (env or {}).get(set_))
    lists = [test.get("options")] + list(test.get("steps", []))
    for obj in lists:
        for set_ in ("enable", "disable"):
            for item in (obj or {}).get(set_) or []:
                flags |= _option_flags(set_, item)
    if "fusion" in test:
        f = parse_kf(test["fusion"])
        for n in f.nodes:
            if n.op not in ("input", "const"):
                flags.add("op=" + n.op)
            flags.add("dtype=" + n.dtype)
    return flags


class VectorFile:
    def __init__(self, category, notes):
        self.category = category
        self.notes = dict(notes)
        self.groups = []          # [ {"type", "comment", "tests"} ]
        self._index = {}

    def group(self, type_, comment):
        key = (type_, comment)
        if key not in self._index:
            g = {"type": type_, "comment": comment, "tests": []}
            self._index[key] = g
            self.groups.append(g)
        return self._index[key]

    def add(self, type_, group_comment, test):
        """Append `test` (a dict with comment, flags, result, ...); the
        flags of what it exercises are added (exercise_flags)."""
        for f in exercise_flags(test):
            self.notes.setdefault(f, flag_note(f))
            test.setdefault("flags", []).append(f)
        for f in test.get("flags", []):
            if f not in self.notes:
                raise KeyError("flag %r not defined in notes of %s"
                               % (f, self.category))
        test.setdefault("flags", [])
        test["flags"] = sorted(set(test["flags"]))
        test["rules"] = rules.derive(self.category, test)
        if not test["rules"]:
            # a category rules.derive knows must trace a rule in every
            # test; another one (a new category) is left for
            # `make spec-coverage`, which names every test without rules
            if self.category in rules.DERIVED:
                raise ValueError("%s: test %r traces no rule "
                                 "(testgen/rules.py)"
                                 % (self.category, test.get("comment")))
            del test["rules"]
        self.group(type_, group_comment)["tests"].append(test)

    def count(self):
        return sum(len(g["tests"]) for g in self.groups)

    def finish(self):
        tc = 1
        used = set()
        for g in self.groups:
            for t in g["tests"]:
                t["tcId"] = tc
                tc += 1
                used.update(t["flags"])
        notes = {k: v for k, v in self.notes.items() if k in used}
        return {
            "suite": SUITE,
            "suiteVersion": SUITE_VERSION,
            "category": self.category,
            "numberOfTests": tc - 1,
            "notes": notes,
            "testGroups": self.groups,
        }


def dumps(obj):
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"

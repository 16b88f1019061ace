"""Assemble one conformance vector file (docs/conformance.md).

A file is {"suite", "suiteVersion", "category", "numberOfTests", "notes",
"testGroups"}; every test gets a tcId (1..N in file order).  Output is
json.dumps(obj, indent=1, sort_keys=True) + "\\n", so it is byte-stable.
"""

import json

SUITE = "kiln-conformance"
SUITE_VERSION = "1.0.0"


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
        """Append `test` (a dict with comment, flags, result, ...)."""
        for f in test.get("flags", []):
            if f not in self.notes:
                raise KeyError("flag %r not defined in notes of %s"
                               % (f, self.category))
        test.setdefault("flags", [])
        test["flags"] = sorted(set(test["flags"]))
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

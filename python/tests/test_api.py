"""Every function the package exposes is exercised by a test: each public
callable of kiln, kiln.options and kiln.errors (functions, classes and
their public methods and properties) must be called somewhere in
python/tests/test_*.py.  A new public function without a test fails here."""

import glob
import inspect
import os
import re
import unittest

import kiln
from kiln import errors, options

HERE = os.path.dirname(os.path.abspath(__file__))


def public(mod):
    names = getattr(mod, "__all__", None) or [n for n in dir(mod)
                                              if not n.startswith("_")]
    return [(n, getattr(mod, n)) for n in names]


def members(cls):
    out = []
    for n, v in vars(cls).items():
        if n.startswith("_") and n not in ("__str__", "__repr__", "__eq__",
                                           "__hash__", "__enter__",
                                           "__exit__"):
            continue
        if callable(v) or isinstance(v, (property, classmethod, staticmethod)):
            out.append(n)
    return out


class Coverage(unittest.TestCase):
    def test_every_public_callable_is_used_by_a_test(self):
        text = ""
        for path in glob.glob(os.path.join(HERE, "test_*.py")):
            if not path.endswith("test_api.py"):
                with open(path) as fp:
                    text += fp.read()
        used = lambda n: re.search(r"\b%s\b" % re.escape(n), text) is not None
        special = {"__str__": r"\bstr\(", "__repr__": r"\brepr\(",
                   "__eq__": r"assert(Not)?Equal\(f|==", "__hash__": r"\bhash\(",
                   "__enter__": r"\bwith kiln\.Context|with ctx_ref",
                   "__exit__": r"\bwith kiln\.Context|with ctx_ref"}
        missing = []
        for mod in (kiln, options, errors):
            for name, obj in public(mod):
                if inspect.ismodule(obj) or not callable(obj):
                    continue
                if isinstance(obj, type) and issubclass(obj, BaseException):
                    continue  # the status classes: test_fusion_errors walks them
                if not used(name):
                    missing.append("%s.%s" % (mod.__name__, name))
                if isinstance(obj, type) and obj.__module__.startswith("kiln"):
                    for m in members(obj):
                        pat = special.get(m, r"\.%s\b" % re.escape(m))
                        if not re.search(pat, text):
                            missing.append("%s.%s.%s" % (mod.__name__, name, m))
        self.assertEqual(sorted(set(missing)), [])


if __name__ == "__main__":
    unittest.main()

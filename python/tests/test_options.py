"""kiln.options: the library's own parser, catalogue and canonical text."""

import json
import subprocess
import unittest

import kiln
from kiln import options
from util import KILN_BIN


class Catalogue(unittest.TestCase):
    def test_matches_the_cli(self):
        cat = json.loads(subprocess.run([KILN_BIN, "options", "--catalogue-json"],
                                        stdout=subprocess.PIPE, check=True).stdout)
        rows = options.catalogue()
        self.assertEqual(len(rows), len(cat["options"]))
        for r, c in zip(rows, cat["options"]):
            self.assertIsInstance(r, options.OptionInfo)
            self.assertEqual((r.name, r.set, r.arg, r.level, r.description,
                              r.implemented),
                             (c["name"], c["set"], c["arg"], c["level"],
                              c["description"], c["implemented"]))
            self.assertEqual(list(r.vocabulary), c["vocabulary"] or [])
            if r.arg == "int":
                self.assertEqual(r.int_default, c["default"])


class Parse(unittest.TestCase):
    def test_parse_and_canonical(self):
        o = options.parse("kernel_lineinfo,fast_math,")
        self.assertIsInstance(o, options.Options)
        self.assertEqual(o.canonical(), "enable=fast_math,kernel_lineinfo")
        self.assertEqual(str(o), o.canonical())
        self.assertIn("fast_math", repr(o))
        self.assertEqual(o.canonical("kernel"), "enable=fast_math,kernel_lineinfo")
        self.assertEqual(o.canonical("plan"), "")
        d = options.parse("expr_simplify(fold,cse,fold)", set="disable")
        self.assertEqual(d.canonical(), "disable=expr_simplify(cse,fold)")
        self.assertEqual(options.parse("options", "dump").canonical(), "dump=options")
        self.assertEqual(options.parse("").canonical(), "")
        with self.assertRaises(ValueError):
            options.parse("x", set="enabled")
        with self.assertRaises(ValueError):
            o.canonical("planned")
        with self.assertRaises(TypeError):
            options.parse(7)

    def test_from_env_and_apply_copy_get_hash(self):
        o = options.from_env("warn_register_spill(8)", "fma", None)
        c = o.copy()
        self.assertIs(o.apply("enable", "warn_register_spill(064)", 0), o)
        self.assertEqual(o.get("enable", "warn_register_spill"), (True, 64))
        self.assertEqual(c.get("enable", "warn_register_spill"), (True, 8))
        self.assertEqual(o.get("enable", "fast_math"), (False, 0))
        self.assertEqual(o.get("disable", "fma"), (True, 0))
        with self.assertRaises(kiln.OptionUnknownError):
            o.get("enable", "fma")
        self.assertNotEqual(o.hash(), c.hash())
        self.assertEqual(o.hash("kernel"), c.hash("kernel"))
        d = o.to_dict()
        self.assertEqual(d["canonical"]["all"], o.canonical())
        with self.assertRaises(kiln.OptionElementError) as cm:
            o.apply("enable", "fast_math,fuse_matmul", 3)
        self.assertEqual(cm.exception.source, "execute enable[3]")
        self.assertEqual(o.canonical(), "enable=warn_register_spill(64);disable=fma")

    def test_errors_as_the_library_reports_them(self):
        cases = [
            ("enable", "fast_math, kernel_debug", kiln.OptionUnknownError, 10,
             " kernel_debug", "KILN_ENABLE"),
            ("enable", "fast_math(1)", kiln.OptionArgumentError, 9, "(",
             "KILN_ENABLE"),
            ("disable", "fma,,fallback", kiln.OptionSyntaxError, 4, ",",
             "KILN_DISABLE"),
            ("dump", "cuda_kernels", kiln.OptionUnknownError, 0, "cuda_kernels",
             "KILN_DUMP"),
        ]
        for set_, text, cls, off, tok, src in cases:
            with self.subTest(text=text):
                with self.assertRaises(cls) as cm:
                    options.parse(text, set_)
                e = cm.exception
                self.assertIsInstance(e, kiln.OptionError)
                self.assertEqual((e.offset, e.token, e.source), (off, tok, src))
                self.assertEqual(e.status_name, cls.status_name)
                self.assertEqual(e.valid_names,
                                 [o.name for o in options.catalogue()
                                  if o.set == set_])
                # the CLI reports the same text
                p = subprocess.run([KILN_BIN, "options"], env={
                    {"enable": "KILN_ENABLE", "disable": "KILN_DISABLE",
                     "dump": "KILN_DUMP"}[set_]: text},
                    stderr=subprocess.PIPE, universal_newlines=True)
                self.assertEqual(p.stderr.strip(),
                                 "kiln options: " + e.message)
                self.assertTrue(e.message.startswith(src + ": "))

    def test_canonical_of_an_execute(self):
        self.assertEqual(options.canonical(), "")
        self.assertEqual(options.canonical(
            "kernel_lineinfo,fast_math", dump="options",
            enable_options=["warn_register_spill(064)"],
            disable_options=["expr_simplify(fold,cse,fold)"]),
            "enable=fast_math,kernel_lineinfo,warn_register_spill(64);"
            "disable=expr_simplify(cse,fold);dump=options")
        self.assertEqual(options.canonical(enable_options=["fuse_matmul"],
                                           level="plan"), "enable=fuse_matmul")
        with self.assertRaises(kiln.OptionElementError) as cm:
            options.canonical(disable_options=["fma", "fma,fallback"])
        self.assertEqual((cm.exception.source, cm.exception.offset),
                         ("execute disable[1]", 3))


if __name__ == "__main__":
    unittest.main()

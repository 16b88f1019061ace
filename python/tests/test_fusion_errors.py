"""kiln.Fusion (parse, load, specs, canonical text, hash, equality) and the
exception classes generated from the status table."""

import os
import re
import subprocess
import tempfile
import unittest

import kiln
from kiln import errors
from util import KILN_BIN, ROOT


def read_header():
    with open(os.path.join(ROOT, "runtime", "include", "kiln.h")) as fp:
        return fp.read()


class FusionApi(unittest.TestCase):
    TEXT = ("# bias + relu\nkiln.fusion 1\n%x = input f32 [?, ?]  # rows\n"
            "%bias=input f32 [1, ?]\n%s = add %x %bias\n%y = relu %s\n"
            "output %y\noutput %s\n")

    def test_specs_text_hash(self):
        f = kiln.Fusion(self.TEXT)
        self.assertEqual(f.inputs, (kiln.TensorSpec("x", "f32", (None, None)),
                                    kiln.TensorSpec("bias", "f32", (1, None))))
        self.assertEqual(f.outputs, (kiln.TensorSpec("y", "f32", (None, None)),
                                     kiln.TensorSpec("s", "f32", (None, None))))
        self.assertEqual((f.n_inputs, f.n_outputs), (2, 2))
        self.assertEqual(f.text, self.TEXT)
        self.assertIn("inputs=", repr(f))
        with tempfile.NamedTemporaryFile("w", suffix=".kf", delete=False) as fp:
            fp.write(self.TEXT)
        try:
            out = subprocess.run([KILN_BIN, "fusion", fp.name],
                                 stdout=subprocess.PIPE, check=True,
                                 universal_newlines=True).stdout
            g = kiln.Fusion.load(fp.name)
        finally:
            os.unlink(fp.name)
        canon, hash_line = out.rsplit("hash ", 1)
        self.assertEqual(str(f), canon)
        self.assertEqual(f.hash, int(hash_line, 16))
        self.assertEqual(f, g)
        self.assertEqual(hash(f), hash(g))
        self.assertEqual(kiln.Fusion(str(f)), f)  # canonical text round trip
        self.assertEqual(kiln.Fusion(str(f)).inputs[1].name, "1")
        self.assertNotEqual(f, kiln.Fusion(self.TEXT.replace("relu", "neg")))
        self.assertNotEqual(f, "text")
        self.assertEqual(kiln.Fusion(self.TEXT.encode()), f)

    def test_parse_errors(self):
        with self.assertRaises(kiln.FusionError) as cm:
            kiln.Fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = foo %x\n")
        e = cm.exception
        self.assertIsInstance(e, kiln.ParseError)
        self.assertEqual((e.line, e.column), (3, 6))
        self.assertEqual(e.status_name, "KILN_ERR_PARSE")
        self.assertIn("unknown op 'foo'", e.message)
        with self.assertRaises(kiln.ParseError) as cm:
            kiln.Fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = add %x %x\n")
        self.assertEqual(cm.exception.line, 4)  # no output
        with self.assertRaises(kiln.FusionError):
            kiln.Fusion("kiln.fusion 1\n%x = input f32 [?]\0\noutput %x\n")
        with self.assertRaises(TypeError):
            kiln.Fusion(3)
        path = os.path.join(ROOT, "examples", "nope.kf")
        with self.assertRaises(FileNotFoundError):
            kiln.Fusion.load(path)
        with tempfile.NamedTemporaryFile("w", suffix=".kf", delete=False) as fp:
            fp.write("kiln.fusion 2\n")
        try:
            with self.assertRaises(kiln.ParseError) as cm:
                kiln.Fusion.load(fp.name)
            self.assertEqual(cm.exception.path, fp.name)
            self.assertEqual((cm.exception.line, cm.exception.column), (1, 13))
        finally:
            os.unlink(fp.name)

    def test_examples_load(self):
        for name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
            if name.endswith(".kf"):
                f = kiln.Fusion.load(os.path.join(ROOT, "examples", name))
                self.assertGreater(f.n_outputs, 0)


class StatusClasses(unittest.TestCase):
    def test_one_class_per_status(self):
        names = []
        i = 1
        while True:
            n = kiln.api.kiln_status_name(i).decode()
            if n == "KILN_UNKNOWN_STATUS":
                break
            names.append(n)
            i += 1
        header = read_header()
        self.assertEqual(names, re.findall(r"X\((KILN_ERR_\w+),", header))
        classes = set()
        for value, name in enumerate(names, 1):
            cls = errors.BY_STATUS[value]
            classes.add(cls)
            self.assertEqual(cls.status, value)
            self.assertEqual(cls.status_name, name)
            self.assertEqual(cls.__name__, "".join(
                w.capitalize() for w in name[9:].split("_")) + "Error")
            self.assertIs(getattr(kiln, cls.__name__), cls)
            self.assertTrue(issubclass(cls, kiln.KilnError))
            self.assertFalse(issubclass(cls, RuntimeError))
            self.assertEqual(cls.description,
                             kiln.api.kiln_strerror(value).decode())
            e = errors.error(value, "detail")
            self.assertIsInstance(e, cls)
            self.assertEqual(str(e), "%s: detail" % name)
        self.assertEqual(len(classes), len(names))
        for n in ("SYNTAX", "UNKNOWN", "ARGUMENT", "ELEMENT"):
            self.assertTrue(issubclass(getattr(kiln, "Option%sError" % n.title()),
                                       kiln.OptionError))
        self.assertTrue(issubclass(kiln.ParseError, kiln.FusionError))
        self.assertEqual(kiln.FusionError.status_name, "KILN_ERR_FUSION")
        self.assertFalse(issubclass(kiln.ShapeError, kiln.FusionError))

    def test_check_and_last_error(self):
        errors.check(0)
        p = kiln.api.kiln_fusion_parse(b"nope", 4, None)  # out is NULL
        with self.assertRaises(kiln.InvalidArgumentError) as cm:
            errors.check(p)
        self.assertEqual(cm.exception.offset, -1)
        self.assertIsNone(cm.exception.source)
        self.assertEqual(cm.exception.valid_names if isinstance(
            cm.exception, kiln.OptionError) else [], [])

    def test_library_and_version(self):
        lib = kiln.library()
        self.assertTrue(os.path.exists(lib.path))
        self.assertEqual(lib.found_by, "KILN_LIBRARY")
        header = read_header()
        self.assertEqual(kiln.version(), re.search(
            r'#define KILN_VERSION_STRING "(.*)"', header).group(1))
        self.assertEqual(kiln.__version__, kiln.version())


if __name__ == "__main__":
    unittest.main()

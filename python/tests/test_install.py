"""Finding libkiln: KILN_LIBRARY, next to the package, `pkg-config kiln`
(after `make install` into a temporary prefix, and through
`pip install ./python` into a temporary virtual environment), the build
tree; and the ImportError when none applies."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from util import PYDIR, ROOT, clean_env, run_python

BUILD_LIB = os.environ.get("KILN_LIBRARY") or os.path.join(ROOT, "build", "libkiln.so")
BUILD = os.path.dirname(os.path.abspath(BUILD_LIB))
PROBE = ("import kiln, numpy as np\n"
         "f = kiln.Fusion('kiln.fusion 1\\n%x = input i32 [?]\\n%y = neg %x\\n"
         "output %y\\n')\n"
         "with kiln.Context('ref', env={}) as c:\n"
         "    y, = c.execute(f, [np.arange(3, dtype=np.int32)])\n"
         "print(kiln.library().found_by + '|' + kiln.library().path + '|' + "
         "str(y.tolist()))\n")


def no_pkg_config(**extra):
    """An environment where pkg-config finds no kiln.pc and KILN_LIBRARY is
    unset."""
    env = clean_env(PKG_CONFIG_PATH="", PKG_CONFIG_LIBDIR="/nonexistent", **extra)
    env.pop("KILN_LIBRARY", None)
    return env


class Search(unittest.TestCase):
    def probe(self, env, cwd=None):
        p = run_python(PROBE, env=env, cwd=cwd)
        self.assertEqual(p.returncode, 0, p.stderr)
        how, path, y = p.stdout.strip().split("|")
        self.assertEqual(y, "[0, -1, -2]")
        return how, path

    def test_kiln_library_alone_decides(self):
        how, path = self.probe(clean_env(KILN_LIBRARY=BUILD_LIB))
        self.assertEqual((how, path), ("KILN_LIBRARY", os.path.abspath(BUILD_LIB)))
        p = run_python("import kiln", env=clean_env(KILN_LIBRARY="/nonexistent/libkiln.so"))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("KILN_LIBRARY=/nonexistent/libkiln.so does not load",
                      p.stderr)

    def test_build_tree(self):
        how, path = self.probe(no_pkg_config())
        self.assertEqual((how, path), ("build tree",
                                       os.path.join(ROOT, "build", "libkiln.so")))

    def test_next_to_the_package_and_nowhere(self):
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(os.path.join(PYDIR, "kiln"), os.path.join(d, "kiln"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            env = no_pkg_config(PYTHONPATH=d)
            p = run_python("import kiln", env=env, cwd=d)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("libkiln not found", p.stderr)
            self.assertIn("(build tree): not there", p.stderr)
            shutil.copy(BUILD_LIB, os.path.join(d, "kiln", "libkiln.so"))
            how, path = self.probe(env, cwd=d)
            self.assertEqual((how, path), ("next to the package",
                                           os.path.join(d, "kiln", "libkiln.so")))

    def test_make_install_then_pip_install(self):
        """`make install PREFIX=tmp` and `pip install ./python` into a
        virtual environment: the package finds the installed library
        through pkg-config, from outside the source tree."""
        with tempfile.TemporaryDirectory() as d:
            prefix = os.path.join(d, "prefix")
            env = {k: v for k, v in os.environ.items()
                   if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
            subprocess.run(["make", "-s", "install", "PREFIX=" + prefix,
                            "BUILD=" + os.path.relpath(BUILD, ROOT)],
                           cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                           env=env)
            src = os.path.join(d, "src")  # a copy: pip's build writes there
            shutil.copytree(PYDIR, src, ignore=shutil.ignore_patterns(
                "__pycache__", "build", "*.egg-info"))
            venv = os.path.join(d, "venv")
            subprocess.run([sys.executable, "-m", "venv",
                            "--system-site-packages", venv], check=True)
            py = os.path.join(venv, "bin", "python")
            p = subprocess.run([py, "-m", "pip", "install", "--no-index",
                                "--no-build-isolation", "--no-deps", "-q", src],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True)
            self.assertEqual(p.returncode, 0, p.stdout)
            env = no_pkg_config()
            env.pop("PYTHONPATH")
            env["PKG_CONFIG_LIBDIR"] = os.path.join(prefix, "lib", "pkgconfig")
            p = subprocess.run([py, "-c", PROBE], env=env, cwd=d,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            how, path, y = p.stdout.strip().split("|")
            self.assertEqual((how, path, y), (
                "pkg-config kiln",
                os.path.join(prefix, "lib", "libkiln.so.0"), "[0, -1, -2]"))
            p = subprocess.run([py, "-c", "import kiln; print(kiln.__file__)"],
                               env=env, cwd=d, stdout=subprocess.PIPE,
                               universal_newlines=True)
            self.assertTrue(p.stdout.startswith(venv), p.stdout)


if __name__ == "__main__":
    unittest.main()

"""Shared helpers of the Python frontend's tests (python/tests).

The tests run with `make test-python`: the interpreter is $(PYTHON_SYS)
(Debian's /usr/bin/python3, which has python3-numpy), PYTHONPATH=python and
KILN_LIBRARY=build/libkiln.so.  They are standard-library unittest.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "python")
KILN_BIN = os.environ.get("KILN_BIN", os.path.join(ROOT, "build", "kiln"))


def clean_env(**extra):
    """An environment without KILN_* variables (plus `extra`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env["PYTHONPATH"] = PYDIR
    if "KILN_LIBRARY" in os.environ:
        env["KILN_LIBRARY"] = os.environ["KILN_LIBRARY"]
    env.update(extra)
    return env


def run_python(code, env=None, cwd=None):
    """Run `code` in a fresh interpreter (this one); returns the process."""
    return subprocess.run([sys.executable, "-c", code], env=env or clean_env(),
                          cwd=cwd or ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


MATMUL_RELU = ("kiln.fusion 1\n%a = input f32 [?, ?]\n%b = input f32 [?, ?]\n"
               "%c = matmul %a %b\n%y = relu %c\noutput %y\n")

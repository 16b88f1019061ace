#!/usr/bin/env python3
"""Tests of ci/coverage.py (make ci-check), on a tiny tree compiled with
gcc --coverage in a temporary directory: the figures per directory count
lines, functions and branches as gcov reports them; --check fails below a
threshold and passes above; a GPU-only entry removes exactly its function
(lines, branches, the function) or its file; an entry that names nothing,
or has no reason, fails; `zero` deletes the counters; counters of a
mutant's patched copy (BUILD/mutants/) are not counted.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "coverage.py")

# runtime/a.c: 2 functions; used() runs with x = 1 only, so one branch
# outcome of its `if` is never taken; unused() never runs.
A_C = """\
int used(int x)
{
    int y = 0;
    if (x > 0)
        y = 1;
    return y;
}

int unused(int x)
{
    return x * 2;
}
"""
B_C = """\
int helper(int x)
{
    return x + 1;
}
"""
MAIN_C = """\
int used(int x);
int helper(int x);
int main(void)
{
    return used(1) + helper(0) == 2 ? 0 : 1;
}
"""


class CoverageScript(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="kiln-cov-test.")
        for rel, text in (("runtime/a.c", A_C), ("conformance/b.c", B_C), ("tests/main.c", MAIN_C)):
            os.makedirs(os.path.join(cls.root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(cls.root, rel), "w") as f:
                f.write(text)
        objs = []
        for rel in ("runtime/a.c", "conformance/b.c", "tests/main.c"):
            obj = os.path.join("build", "obj", rel[:-2] + ".o")
            os.makedirs(os.path.join(cls.root, os.path.dirname(obj)), exist_ok=True)
            subprocess.run(["gcc", "-O0", "--coverage", "-c", rel, "-o", obj], cwd=cls.root,
                           check=True)
            objs.append(obj)
        subprocess.run(["gcc", "--coverage", "-o", "build/prog"] + objs, cwd=cls.root, check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def setUp(self):
        self.run_cov("zero", "build")
        subprocess.run(["build/prog"], cwd=self.root, check=True)

    def run_cov(self, *args, gpu_only=""):
        path = os.path.join(self.root, "gpu_only.txt")
        with open(path, "w") as f:
            f.write("# test list\n" + gpu_only)
        argv = [sys.executable, SCRIPT] + list(args)
        if args[0] == "report":
            argv += ["--gpu-only", path]
        return subprocess.run(argv, cwd=self.root, capture_output=True, text=True)

    def test_figures_and_threshold(self):
        p = self.run_cov("report", "build", "--check")
        # runtime/a.c: lines of used() all run, unused() none: gcov counts
        # 5 lines in used (1, 3, 4, 5, 6) and 2 in unused (9, 11)
        self.assertIn("coverage: runtime/      lines 71.4% (5/7), functions 50.0% (1/2), "
                      "branches 50.0% (1/2)  BELOW (lines, functions, branches)", p.stdout)
        self.assertIn("coverage: conformance/  lines 100.0% (2/2), functions 100.0% (1/1), "
                      "branches 100.0% (0/0)", p.stdout)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("below: runtime", p.stderr)
        # without --check the figures are printed and the status is 0
        self.assertEqual(self.run_cov("report", "build").returncode, 0)

    def test_gpu_only_function(self):
        p = self.run_cov("report", "build", gpu_only="runtime/a.c unused  needs a device\n")
        self.assertIn("coverage: runtime/      lines 100.0% (5/5), functions 100.0% (1/1), "
                      "branches 50.0% (1/2)", p.stdout)

    def test_gpu_only_file(self):
        p = self.run_cov("report", "build", gpu_only="runtime/a.c *  all of it needs a device\n")
        self.assertIn("coverage: runtime/      lines 100.0% (0/0), functions 100.0% (0/0)",
                      p.stdout)

    def test_stale_or_bad_entries_fail(self):
        for entry, why in (("runtime/a.c gone  was removed\n", "no function gone"),
                           ("runtime/nope.c *  never existed\n", "no such file"),
                           ("runtime/a.c unused\n", "FILE FUNCTION reason")):
            p = self.run_cov("report", "build", "--check", gpu_only=entry)
            self.assertNotEqual(p.returncode, 0, entry)
            self.assertIn(why, p.stderr, entry)

    def test_zero_and_no_counters(self):
        self.run_cov("zero", "build")
        p = self.run_cov("report", "build")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no counters", p.stderr)

    def test_mutant_copies_are_not_counted(self):
        mut = os.path.join(self.root, "build", "mutants", "m1", "obj", "runtime")
        os.makedirs(mut, exist_ok=True)
        for f in os.listdir(os.path.join(self.root, "build", "obj", "runtime")):
            shutil.copy(os.path.join(self.root, "build", "obj", "runtime", f), mut)
        p = self.run_cov("report", "build")
        self.assertIn("lines 71.4% (5/7)", p.stdout)
        shutil.rmtree(os.path.join(self.root, "build", "mutants"))

    def test_html(self):
        p = self.run_cov("report", "build", "--html", "build/html")
        self.assertEqual(p.returncode, 0)
        with open(os.path.join(self.root, "build", "html", "index.html")) as f:
            index = f.read()
        self.assertIn("runtime/a.c", index)
        with open(os.path.join(self.root, "build", "html", "runtime_a.c.html")) as f:
            page = f.read()
        self.assertIn('class="miss"', page)
        self.assertIn('class="hit"', page)


if __name__ == "__main__":
    unittest.main()

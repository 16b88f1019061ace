"""harness.py -- the runner shared by the command-line test scripts
(tests/cli/test_cli.py, test_verdict.py): every test_* function of a
module runs, each failure is one line, and the exit status is 1 when any
failed.  It also holds what every script needs: ROOT, the kiln binary
(argv[1], else build/kiln), check() and run_kiln()."""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def kiln_binary():
    """The kiln tool under test: the script's first argument, else build/kiln."""
    return os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, 'build', 'kiln')


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def run_kiln(kiln, *args, env=None, timeout=600):
    """Run KILN ARGS... from ROOT; returns (exit status, stdout, stderr)."""
    p = subprocess.run([kiln] + list(args), cwd=ROOT, capture_output=True, text=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def run_tests(namespace, label):
    """Run every callable test_* of namespace (a module's globals()) in
    definition order; returns the exit status."""
    tests = [(n, f) for n, f in namespace.items() if n.startswith('test_') and callable(f)]
    failures = []
    t0 = time.time()
    for name, fn in tests:
        try:
            fn()
            print('ok   %s' % name)
        except Exception as e:  # noqa: BLE001 -- report every failure
            failures.append(name)
            print('FAIL %s: %s: %s' % (name, type(e).__name__, e))
    print('%s: %d of %d passed (%.1f s)' % (label, len(tests) - len(failures), len(tests),
                                            time.time() - t0))
    return 1 if failures else 0

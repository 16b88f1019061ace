#!/usr/bin/env python3
"""Tests for ci/trigger.py: valid triggers map to fixed argv lists, and
hostile or malformed comments are rejected with a precise message."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trigger  # noqa: E402


class TriggerTest(unittest.TestCase):
    def test_build(self):
        self.assertEqual(trigger.plan("!build"), [["make", "deps"], ["make", "all"]])

    def test_test_plain(self):
        self.assertEqual(trigger.plan("!test\n"), [["make", "deps"], ["make", "test"]])

    def test_trigger_after_prose(self):
        self.assertEqual(trigger.plan("looks good\n!test"),
                         [["make", "deps"], ["make", "test"]])

    def test_flags(self):
        steps = trigger.plan("!test --backend=cuda --category=numerics --shard=1/4")
        self.assertEqual(steps[-1][:8], ["build/kiln", "conform", "--backend", "cuda",
                                         "--category", "numerics", "--shard", "1/4"])

    def test_serde_rejected_clearly(self):
        with self.assertRaisesRegex(trigger.TriggerError, "line 1: --serde needs"):
            trigger.plan("!test --serde")

    def test_hostile(self):
        cases = {
            "!test; rm -rf /": "unknown trigger",
            "!test --backend=cuda;reboot": "unknown flag",
            "!test --backend=$(id)": "unknown flag",
            "!test --category=../../etc": "unknown flag",
            "!test --category=numerics`x`": "unknown flag",
            "!build --anything": "takes no flags",
            "!test --shard=0/4": "out of range",
            "!test --shard=5/4": "out of range",
            "!test --shard=1/0": "out of range",
            "!test --backend=opencl": "unknown backend",
            "!test \x1b[31m": "printable ASCII",
            "nothing here": "no trigger line",
            "": "no trigger line",
            "!test " + " ".join(["--serde"] * 9): "more than 8 flags",
        }
        for text, msg in cases.items():
            with self.subTest(text=text):
                with self.assertRaisesRegex(trigger.TriggerError, msg):
                    trigger.plan(text)

    def test_oversized(self):
        with self.assertRaisesRegex(trigger.TriggerError, "longer than"):
            trigger.plan("!test\n" + "x" * 70000)

    def test_cli_rejects_with_status_1(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trigger.py")
        p = subprocess.run([sys.executable, script, "plan"], input="!test $(reboot)",
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("rejected", p.stderr)
        self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()

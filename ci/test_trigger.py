#!/usr/bin/env python3
"""Tests for ci/trigger.py: the comment grammar of docs/ci.md, case by
case (hostile bodies included), the plans it maps to, the job runner's
refusals and privilege drop, and that .ci/run, the README, the workflows
and a plain `!test` agree."""

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import fuzz_trigger  # noqa: E402
import trigger  # noqa: E402

fuzz_trigger.trigger = trigger
SHA = "0123456789abcdef0123456789abcdef01234567"
TEST = (("make", "deps", "test"),)
MAKE_ALL = ("make", "deps", "all")


def conform(*words, shard="1/4", build="build"):
    return (build + "/kiln", "conform") + words + (
        "--shard", shard, "--junit", build + "/ci-junit.xml", "--tap", build + "/ci.tap")


# (body, canonical command, [(job id, runner, steps)]) for bodies that plan.
PLANS = [
    (b"!test", "!test", [("test", "cpu", TEST)]),
    (b"!test\n", "!test", [("test", "cpu", TEST)]),
    (b"!test\r\n", "!test", [("test", "cpu", TEST)]),
    (b"!test   ", "!test", [("test", "cpu", TEST)]),
    (b"!test\nplease run the numerics too --backend=cuda", "!test", [("test", "cpu", TEST)]),
    (b"!test\n\xff\xfe invalid UTF-8 after the first line is never read",
     "!test", [("test", "cpu", TEST)]),
    (b"!test\n!build", "!test", [("test", "cpu", TEST)]),
    (b"!build", "!build", [("build", "cpu", (MAKE_ALL,))]),
    (b"!build --sha=" + SHA.encode(), "!build --sha=" + SHA, [("build", "cpu", (MAKE_ALL,))]),
    (b"!test --sha=" + SHA.encode(), "!test --sha=" + SHA, [("test", "cpu", TEST)]),
    (b"!test --gpu", "!test --gpu", [("test", "gpu", TEST)]),
    (b"!test  --gpu   --sha=" + SHA.encode() + b"  ", "!test --gpu --sha=" + SHA,
     [("test", "gpu", TEST)]),
    (b"!test --sanitize", "!test --sanitize",
     [("sanitize", "cpu", (("make", "deps", "test-asan", "test-tsan"),))]),
    (b"!test --coverage", "!test --coverage",
     [("coverage", "cpu", (("make", "deps", "coverage"),))]),
    (b"!test --sanitize --coverage", "!test --coverage --sanitize",
     [("sanitize", "cpu", (("make", "deps", "test-asan", "test-tsan"),)),
      ("coverage", "cpu", (("make", "deps", "coverage"),))]),
    (b"!test --backend=ref --shard=2/3", "!test --backend=ref --shard=2/3",
     [("conform-2-of-3", "cpu", (MAKE_ALL, conform("--backend", "ref", shard="2/3")))]),
    (b"!test --category=numerics --category=options.parse --shard=1/1",
     "!test --category=numerics --category=options.parse --shard=1/1",
     [("conform-1-of-1", "cpu", (MAKE_ALL, conform("--category", "numerics", "--category",
                                                   "options.parse", shard="1/1")))]),
    (b"!test --shard=64/64", "!test --shard=64/64",
     [("conform-64-of-64", "cpu", (MAKE_ALL, conform(shard="64/64")))]),
    (b"!test --serde --shard=1/2", "!test --serde --shard=1/2",
     [("conform-1-of-2", "cpu", (MAKE_ALL, conform("--serde", shard="1/2")))]),
    (b"!test --backend=cuda --gpu", "!test --backend=cuda --gpu",
     [("conform-1-of-1", "gpu", (MAKE_ALL, conform("--backend", "cuda", shard="1/1")))]),
    (b"!test --backend=nvrtc --sanitize --shard=3/5", "!test --backend=nvrtc --shard=3/5 --sanitize",
     [("conform-3-of-5", "cpu", (("make", "deps"), ("make", "BUILD=build/asan", "SAN=asan", "all"),
                                 conform("--backend", "nvrtc", shard="3/5", build="build/asan")))]),
    (b"!test --category=differential",
     "!test --category=differential",
     [("conform-%d-of-4" % i, "cpu", (MAKE_ALL, conform("--category", "differential",
                                                        shard="%d/4" % i))) for i in (1, 2, 3, 4)]),
]

# (body, regular expression the rejection message must match).
REJECTS = [
    (b"!TEST", r"^col 1: unknown command '!TEST' \(commands are lower case"),
    (b"!Test --gpu", r"^col 1: unknown command '!Test' \(commands are lower case"),
    (b"!BUILD", r"lower case"),
    (b"!tests", r"^col 1: unknown command '!tests' \(commands: !build, !test\)"),
    (b"!", r"^col 1: unknown command '!'"),
    (b"! test", r"^col 1: unknown command '!'"),
    (b"!!test", r"unknown command '!!test'"),
    (b"!lgtm, thanks", r"unknown command '!lgtm,'"),
    (b"!test !build", r"^col 7: a second command '!build' on the command line"),
    (b"!build !test", r"^col 8: a second command '!test'"),
    (b"!test please", r"^col 7: 'please' is not a flag"),
    (b"!test; rm -rf /", r"^col 1: unknown command '!test;'"),
    (b"!test ; rm -rf /", r"^col 7: ';' is not a flag"),
    (b"!test && reboot", r"^col 7: '&&' is not a flag"),
    (b"!test | sh", r"^col 7: '\|' is not a flag"),
    (b"!test $(id)", r"^col 7: '\$\(id\)' is not a flag"),
    (b"!test `id`", r"^col 7: '`id`' is not a flag"),
    (b"!test --backend=$(id)", r"^col 7: unknown backend '\$\(id\)'"),
    (b"!test --backend=cuda;reboot", r"unknown backend 'cuda;reboot'"),
    (b"!test --category=numerics`x`", r"unknown category 'numerics`x`'"),
    (b"!test --category=../../etc", r"unknown category '../../etc'"),
    (b"!test --backend='ref'", r"unknown backend ''ref''"),
    (b"!test --backend=\"ref\"", r"unknown backend '\"ref\"'"),
    (b"!test --backend=REF", r"unknown backend 'REF' \(backends: ref, cuda, nvrtc\)"),
    (b"!test --backend=opencl", r"unknown backend 'opencl'"),
    (b"!test --backend", r"^col 7: --backend needs a value: --backend=B$"),
    (b"!test --backend=", r"^col 7: --backend= has an empty value$"),
    (b"!test --backend ref", r"--backend needs a value"),
    (b"!test --backend=ref --backend=nvrtc", r"^col 21: --backend given twice$"),
    (b"!test --backend=cuda", r"--backend=cuda needs --gpu"),
    (b"!test --Backend=ref", r"unknown flag '--Backend=ref' for !test"),
    (b"!test -backend=ref", r"'-backend=ref' is not a flag"),
    (b"!test --bakend=ref", r"unknown flag '--bakend=ref' for !test \(flags: --serde, "),
    (b"!test --category=numerics --category=numerics", r"--category=numerics given twice"),
    (b"!test --shard=0/4", r"--shard=0/4: need --shard=I/N with decimal 1 <= I <= N <= 64"),
    (b"!test --shard=5/4", r"--shard=5/4: need"),
    (b"!test --shard=1/0", r"--shard=1/0: need"),
    (b"!test --shard=1/65", r"--shard=1/65: need"),
    (b"!test --shard=01/4", r"--shard=01/4: need .*no leading zeros"),
    (b"!test --shard=1/4/2", r"--shard=1/4/2: need"),
    (b"!test --shard=-1/4", r"--shard=-1/4: need"),
    (b"!test --shard=1/99999999999999999999", r"--shard=1/99999999999999: need"),
    (b"!test --shard=a/b", r"--shard=a/b: need"),
    (b"!test --gpu=1", r"^col 7: --gpu takes no value$"),
    (b"!test --serde=yes", r"--serde takes no value"),
    (b"!test --gpu --gpu", r"--gpu given twice"),
    (b"!test --sha=" + SHA.upper().encode(), r"--sha=0123456789ABCDEF.*40 lower-case hex"),
    (b"!test --sha=" + SHA[:39].encode(), r"need the full commit id"),
    (b"!test --sha=" + SHA.encode() + b"0", r"need the full commit id"),
    (b"!test --sha=HEAD", r"--sha=HEAD: need the full commit id"),
    (b"!test --sha", r"--sha needs a value"),
    (b"!build --gpu", r"unknown flag '--gpu' for !build \(flags: --sha=<40 hex>\)"),
    (b"!build --backend=ref", r"unknown flag '--backend=ref' for !build"),
    (b"!test --coverage --backend=ref", r"--coverage runs `make coverage`, which takes no suite"),
    (b"!test --coverage --shard=1/2", r"--coverage runs"),
    (b"!test " + b" ".join([b"--category=" + c.encode() for c in trigger.CATEGORIES] * 4),
     r"more than 16 flags"),
    (b"!test " + b"x" * 1100, r"^the command line is 1106 bytes; at most 1024$"),
    (b"!test\n" + b"x" * (1 << 20), r"^the comment is more than 1048576 bytes$"),
    # Line breaks other than \n and \r\n, and everything else that is not
    # printable ASCII on the command line.
    ("!test\u2028--backend=cuda".encode(), r"^col 6: U\+2028 LINE SEPARATOR, not a line break"),
    ("!test\u2029".encode(), r"^col 6: U\+2029 PARAGRAPH SEPARATOR, not a line break"),
    ("!test\u0085--gpu".encode(), r"^col 6: U\+0085 NEXT LINE, not a line break"),
    (b"!test\x0b--gpu", r"^col 6: a vertical tab \(0x0B\), not a line break here"),
    (b"!test\x0c", r"^col 6: a form feed \(0x0C\), not a line break here"),
    (b"!test\r--gpu", r"^col 6: a carriage return \(0x0D\) without a line feed"),
    (b"!test\r", r"^col 6: a carriage return"),
    (b"!test\r\r\n", r"^col 6: a carriage return"),
    (b"!test\x00--gpu", r"^col 6: a NUL byte on the command line"),
    (b"!te\x00st", r"^col 4: a NUL byte"),
    (b"!test\t--gpu", r"^col 6: a tab \(separate words with spaces\)"),
    (b"!test\x1b[31m", r"^col 6: the control byte 0x1B"),
    (b"!test\x7f", r"^col 6: the control byte 0x7F"),
    (b"!te\xffst", r"^col 4: the byte 0xFF, which is not valid UTF-8"),
    (b"!test \xc3", r"^col 7: the byte 0xC3, which is not valid UTF-8"),
    (b"!test \xed\xa0\x80", r"^col 7: the byte 0xED, which is not valid UTF-8"),
    ("!\u200btest".encode(), r"^col 2: U\+200B ZERO WIDTH SPACE"),
    ("!test\u200d".encode(), r"^col 6: U\+200D ZERO WIDTH JOINER"),
    ("!test\ufeff".encode(), r"^col 6: U\+FEFF ZERO WIDTH NO-BREAK SPACE"),
    ("!t\u0435st".encode(), r"^col 3: U\+0435 CYRILLIC SMALL LETTER IE"),
    ("!test \uff0d\uff0dgpu".encode(), r"^col 7: U\+FF0D FULLWIDTH HYPHEN-MINUS"),
    ("!test --backend=ref\u00a0".encode(), r"^col 20: U\+00A0 NO-BREAK SPACE"),
    ("!test \U0001F680".encode(), r"^col 7: U\+1F680 ROCKET"),
]

# Bodies that are not commands at all: no run and no reply.
IGNORES = [
    b"", b"LGTM", b"LGTM\n!test", b"> !test", b"> !test\n\nquoted reply",
    b"```\n!test\n```", b"`!test`", b"~~~\n!test\n~~~", b" !test", b"  !test",
    b"\t!test", b"\n!test", b"\r\n!test", b"\u2028!test", "\uff01test".encode(),
    "\u200b!test".encode(), "\ufeff!test".encode(), b"\x00!test", b"\xff!test",
    b"please !test", b"x" * (1 << 20) + b"!test", "\u01c3test".encode(),
]


class Grammar(unittest.TestCase):
    def test_plans(self):
        for body, canonical, jobs in PLANS:
            with self.subTest(body=body[:80]):
                d = trigger.decide(body)
                self.assertEqual(d.kind, trigger.PLAN, d.message)
                self.assertEqual(d.plan.canonical, canonical)
                self.assertEqual([(j.id, j.runner, j.steps) for j in d.plan.jobs], jobs)
                self.assertEqual(d.plan.sha, SHA if "--sha=" in canonical else "")
                fuzz_trigger.check(body)

    def test_rejects(self):
        for body, pattern in REJECTS:
            with self.subTest(body=body[:80]):
                d = trigger.decide(body)
                self.assertEqual(d.kind, trigger.REJECT)
                self.assertRegex(d.message, pattern)
                fuzz_trigger.check(body)

    def test_ignores(self):
        for body in IGNORES:
            with self.subTest(body=body[:80]):
                d = trigger.decide(body)
                self.assertEqual(d.kind, trigger.IGNORE)
                self.assertFalse(trigger.prefilter(body))
                fuzz_trigger.check(body)

    def test_enough_cases(self):
        self.assertGreaterEqual(len(PLANS) + len(REJECTS) + len(IGNORES), 80)

    def test_body_limit_is_exact(self):
        at = b"!test\n" + b"x" * ((1 << 20) - 6)
        self.assertEqual(len(at), 1 << 20)
        self.assertEqual(trigger.decide(at).kind, trigger.PLAN)
        self.assertEqual(trigger.decide(at + b"x").kind, trigger.REJECT)

    def test_line_limit_is_exact(self):
        line = b"!test" + b" " * (1024 - 5)
        self.assertEqual(trigger.decide(line).kind, trigger.PLAN)
        self.assertEqual(trigger.decide(line + b" ").kind, trigger.REJECT)

    def test_sixteen_flags_is_the_limit(self):
        cats = [b"--category=" + c.encode() for c in trigger.CATEGORIES]
        flags = cats + [b"--serde", b"--backend=ref", b"--shard=1/2", b"--sanitize", b"--gpu",
                        b"--sha=" + SHA.encode()]
        self.assertEqual(len(flags), 12)
        self.assertEqual(trigger.decide(b"!test " + b" ".join(flags)).kind, trigger.PLAN)
        d = trigger.decide(b"!test " + b" ".join(flags + [b"--gpu"] * 5))
        self.assertRegex(d.message, "more than 16 flags")

    def test_str_body_is_utf8(self):
        self.assertEqual(trigger.decide("!test").kind, trigger.PLAN)
        self.assertRegex(trigger.decide("!test\u2028").message, "U\\+2028")
        self.assertRegex(trigger.decide("!test\udcff").message, "not valid UTF-8")

    def test_non_text_body(self):
        for body in (None, 42, ["!test"]):
            d = trigger.decide(body)
            self.assertEqual((d.kind, d.message), (trigger.REJECT, "the comment body is not text"))

    def test_flag_order_is_free_and_canonical(self):
        a = trigger.decide(b"!test --gpu --shard=1/2 --backend=nvrtc").plan
        b = trigger.decide(b"!test --backend=nvrtc --gpu --shard=1/2").plan
        self.assertEqual(a, b)
        self.assertEqual(a.canonical, "!test --backend=nvrtc --shard=1/2 --gpu")

    def test_every_category_and_backend(self):
        for c in trigger.CATEGORIES:
            self.assertEqual(trigger.decide(("!test --category=" + c).encode()).kind, trigger.PLAN)
        for b in trigger.BACKENDS:
            d = trigger.decide(("!test --gpu --backend=" + b).encode())
            self.assertEqual(d.plan.jobs[0].steps[1][2:4], ("--backend", b))

    def test_categories_are_the_suites(self):
        """The grammar's categories are exactly those of the committed vectors."""
        cats = set()
        for name in os.listdir(os.path.join(ROOT, "conformance", "vectors")):
            if name.endswith(".json"):
                with open(os.path.join(ROOT, "conformance", "vectors", name)) as f:
                    cats.add(json.load(f)["category"])
        self.assertEqual(set(trigger.CATEGORIES), cats)

    def test_plan_of_raises_on_reject(self):
        with self.assertRaisesRegex(trigger.TriggerError, "unknown command"):
            trigger.plan_of("!nope")


class Agreement(unittest.TestCase):
    """.ci/run, the README, the push/PR workflow and a plain `!test` agree."""

    def test_plain_test_is_the_readme_command(self):
        plan = trigger.plan_of("!test")
        self.assertEqual([(j.id, j.runner, j.steps) for j in plan.jobs], [("test", "cpu", TEST)])
        with open(os.path.join(ROOT, "README.md")) as f:
            readme = f.read()
        self.assertRegex(readme, r"(?m)^make deps test .*\.ci/run")

    def test_ci_run_goes_through_the_plan(self):
        with open(os.path.join(ROOT, ".ci", "run")) as f:
            script = f.read()
        self.assertIn("python3 ci/trigger.py run '!test'", script)
        self.assertNotRegex(script, r"(?m)^[^#]*\bmake\b(?! deps)")

    def test_ci_run_runs_make_deps_test(self):
        """Run the real .ci/run with a `make` that records its argv."""
        tmp = tempfile.mkdtemp()
        try:
            log = os.path.join(tmp, "argv")
            fake = os.path.join(tmp, "make")
            with open(fake, "w") as f:
                f.write('#!/bin/sh\nprintf "%%s\\n" "$*" >> %s\n' % log)
            os.chmod(fake, 0o755)
            env = dict(os.environ, PATH=tmp + os.pathsep + os.environ["PATH"])
            p = subprocess.run(["bash", os.path.join(ROOT, ".ci", "run")], env=env,
                               capture_output=True, text=True, stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(log) as f:
                self.assertEqual(f.read(), "deps test\n")
            self.assertIn("job test step 1/1: make deps test", p.stdout)
        finally:
            shutil.rmtree(tmp)

    def test_push_and_pr_workflow_runs_plain_test(self):
        with open(os.path.join(ROOT, ".github", "workflows", "test.yml")) as f:
            text = f.read()
        self.assertIn('KILN_CI_COMMAND: "!test"', text)
        self.assertIn("python3 trusted/ci/trigger.py exec --job test --dir pr --as-user kilnci",
                      text)

    def test_comment_workflow_prefilter_is_the_parsers(self):
        with open(os.path.join(ROOT, ".github", "workflows", "comment.yml")) as f:
            text = f.read()
        self.assertIn("    if: " + trigger.PREFILTER_IF + "\n", text)
        self.assertEqual(text.count("startsWith(github.event.comment.body, '!')"), 2)


class Cli(unittest.TestCase):
    def cli(self, *args, body=None, env=None):
        return subprocess.run([sys.executable, os.path.join(HERE, "trigger.py")] + list(args),
                              input=body, capture_output=True, env=env)

    def test_plan_from_stdin_and_argument(self):
        for p in (self.cli("plan", body=b"!test --gpu\nmore"), self.cli("plan", "!test --gpu")):
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout)["jobs"][0]["runner"], "gpu")

    def test_statuses(self):
        p = self.cli("plan", body=b"!test $(reboot)")
        self.assertEqual((p.returncode, p.stdout), (1, b""))
        self.assertIn(b"ci/trigger: rejected: col 7: '$(reboot)' is not a flag", p.stderr)
        p = self.cli("plan", body=b"LGTM")
        self.assertEqual(p.returncode, 3)
        self.assertIn(b"not a command", p.stderr)
        self.assertEqual(self.cli("plan", "a", "b").returncode, 2)
        self.assertEqual(self.cli("frobnicate").returncode, 2)
        self.assertEqual(self.cli().returncode, 2)
        p = self.cli("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn(b"Usage:", p.stdout)

    def test_exec_usage(self):
        self.assertEqual(self.cli("exec", "--job", "test").returncode, 2)
        self.assertEqual(self.cli("exec", "--job", "test", "--dir").returncode, 2)
        self.assertEqual(self.cli("exec", "--bogus", "x").returncode, 2)
        env = dict(os.environ, KILN_CI_COMMAND="!test --sha=" + SHA,
                   KILN_CI_CHECKED_OUT="f" * 40)
        p = self.cli("exec", "--job", "test", "--dir", ".", env=env)
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"is bound to " + SHA.encode(), p.stderr)


class Exec(unittest.TestCase):
    def test_refusals(self):
        cases = [
            ("!nope", "test", None, r"unknown command"),
            ("LGTM", "test", None, r"does not start with"),
            ("!test", "conform-1-of-4", None, r"has no job 'conform-1-of-4' \(jobs: test\)"),
            ("!test --sha=" + SHA, "test", None, r"the checkout is '', but the run is bound"),
            ("!test --sha=" + SHA, "test", "a" * 40, r"the checkout is 'a{40}'"),
        ]
        for command, job, checked, pattern in cases:
            with self.subTest(command=command):
                with self.assertRaisesRegex(trigger.TriggerError, pattern):
                    trigger.exec_job(command, job, ".", None, checked)

    def test_root_needs_a_user_and_a_user_needs_root(self):
        if os.geteuid() == 0:
            with self.assertRaisesRegex(trigger.TriggerError, "refusing to run PR code as root"):
                trigger.exec_job("!test", "test", ".", None)
            with self.assertRaisesRegex(trigger.TriggerError, "is root"):
                trigger.exec_job("!test", "test", ".", "root")
            with self.assertRaisesRegex(trigger.TriggerError, "no user 'no-such-user-kiln'"):
                trigger.exec_job("!test", "test", ".", "no-such-user-kiln")
        else:
            with self.assertRaisesRegex(trigger.TriggerError, "--as-user needs root"):
                trigger.exec_job("!test", "test", ".", "nobody")

    def test_drops_privileges_and_environment(self):
        """As root: the job runs as the user, without our environment, and
        owns its directory.  As another user: it runs as that user."""
        tmp = tempfile.mkdtemp()
        try:
            with open(os.path.join(tmp, "Makefile"), "w") as f:
                f.write("deps:\n\t@id -u > uid.txt; id -G > groups.txt; env > env.txt\n"
                        "test:\n\t@echo ran > test.txt\n")
            os.environ["GITHUB_TOKEN"] = "secret-token-for-the-test"
            try:
                if os.geteuid() == 0:
                    rc = trigger.exec_job("!test --sha=" + SHA, "test", tmp, "nobody", SHA)
                    want = pwd.getpwnam("nobody")
                else:
                    rc = trigger.exec_job("!test --sha=" + SHA, "test", tmp, None, SHA)
                    want = pwd.getpwuid(os.geteuid())
            finally:
                del os.environ["GITHUB_TOKEN"]
            self.assertEqual(rc, 0)

            def read(name):
                with open(os.path.join(tmp, name)) as f:
                    return f.read()
            self.assertEqual(int(read("uid.txt")), want.pw_uid)
            self.assertEqual(read("test.txt"), "ran\n")
            self.assertEqual(os.stat(os.path.join(tmp, "test.txt")).st_uid, want.pw_uid)
            if os.geteuid() == 0:
                self.assertEqual(read("groups.txt").split(), [str(want.pw_gid)])
                self.assertNotIn("secret-token", read("env.txt"))
                self.assertEqual(os.stat(tmp).st_uid, want.pw_uid)
        finally:
            shutil.rmtree(tmp)

    def test_failing_step_status(self):
        job = trigger.Job("t", "cpu", (("sh", "-c", "exit 7"), ("sh", "-c", "exit 0")))
        self.assertEqual(trigger._run_steps(job, None), 7)
        job = trigger.Job("t", "cpu", (("/nonexistent/kiln-tool",),))
        self.assertEqual(trigger._run_steps(job, None), 127)


class Corpus(unittest.TestCase):
    def test_fuzz_corpus_holds_the_properties(self):
        d = os.path.join(HERE, "fuzz_corpus")
        names = sorted(os.listdir(d))
        self.assertGreaterEqual(len(names), 10)
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                fuzz_trigger.check(f.read())

    def test_the_oracle_catches_a_broken_parser(self):
        """check() must fail when decide() breaks a property."""
        real = trigger.decide

        def leaky(body):
            d = real(body)
            if d.kind == trigger.PLAN:    # a plan that smuggles a shell word
                j = d.plan.jobs[0]
                bad = trigger.Job(j.id, j.runner, (("make", "deps", "test;id"),))
                return trigger.Decision(d.kind, plan=trigger.Plan(
                    d.plan.command, d.plan.canonical, d.plan.sha, (bad,)))
            return d
        for broken, body in ((leaky, b"!test"),
                             (lambda b: trigger.Decision(trigger.REJECT, "x"), b"LGTM"),
                             (lambda b: trigger.Decision(trigger.REJECT, "two\nlines"), b"!x")):
            trigger.decide = broken
            try:
                with self.assertRaises(AssertionError):
                    fuzz_trigger.check(body)
            finally:
                trigger.decide = real

    def test_plain_plan_reparses(self):
        self.assertTrue(re.fullmatch(r"[!a-z0-9 =/.-]+", trigger.plan_of(
            "!test --backend=nvrtc --category=numerics --shard=2/4 --sanitize --gpu "
            "--sha=" + SHA).canonical))


if __name__ == "__main__":
    unittest.main(verbosity=1)

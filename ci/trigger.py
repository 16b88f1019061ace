#!/usr/bin/env python3
"""The one implementation of Kiln's `!build` / `!test` comment grammar.

Everything about what a comment starts is decided here: whether it is a
command at all, whether it is well formed, and the exact plan -- jobs, the
runner each needs, and the argv lists each job runs.  The workflow's `if:`
is only a pre-filter that passes a superset (every body that starts with
"!"), the gate (ci/gate.py) adds who and which commit, the job runner
(`exec`, below) re-derives its job from the canonical command text, and
`.ci/run` runs the plan of a plain `!test`.  docs/ci.md states the grammar;
tests/fuzzing (ci/test_trigger.py, ci/fuzz_trigger.py) check this file
against it.

The body is untrusted bytes.  Nothing from it ever reaches a shell: it is
matched against a fixed grammar and mapped to argv lists built only from
constants and validated values.  Only the first line is read; the rest of
the body is never decoded.

Usage:
    ci/trigger.py plan [COMMENT]      print the plan as JSON (COMMENT, else stdin)
    ci/trigger.py run  [COMMENT]      run every job's steps here, as this user
    ci/trigger.py exec --job ID --dir DIR [--as-user NAME]
                                      run one job of the command in $KILN_CI_COMMAND
                                      (CI only: checks the checked-out commit, and as
                                      root drops to NAME before running PR code)

Exit status: 0 done, 1 rejected (the message says why), 2 usage error,
3 not a command (the body does not start with "!"), or the failing step's
status for run/exec.
"""

import json
import os
import re
import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field

MAX_BODY = 1 << 20        # bytes in a whole comment body
MAX_LINE = 1024           # bytes on the command line
MAX_FLAGS = 16
MAX_SHARDS = 64
SUITE_SHARDS = {"cpu": 4, "gpu": 1}   # matrix entries for a suite run without --shard

COMMANDS = ("!build", "!test")
BACKENDS = ("ref", "cuda", "nvrtc")
CATEGORIES = ("cache.isolation", "differential", "numerics", "options.parse",
              "options.precedence", "sweep")
TEST_FLAGS = ("--serde", "--backend=B", "--category=C", "--shard=I/N", "--coverage",
              "--sanitize", "--gpu", "--sha=<40 hex>")
BUILD_FLAGS = ("--sha=<40 hex>",)
SUITE_FLAGS = ("serde", "backend", "categories", "shard")

IGNORE, REJECT, PLAN = "ignore", "reject", "plan"

# The workflow's pre-filter, verbatim (ci/test_trigger.py checks that the
# comment workflow's `if:` is exactly this text and that prefilter() below
# is its meaning).
PREFILTER_IF = "startsWith(github.event.comment.body, '!')"


def prefilter(body):
    """What PREFILTER_IF evaluates to for a body (bytes).  GitHub's
    startsWith ignores ASCII case; "!" has none, so this is exact."""
    return body[:1] == b"!"


class TriggerError(Exception):
    """A command comment that is malformed; str() is the precise message."""


@dataclass(frozen=True)
class Job:
    id: str
    runner: str                 # "cpu" or "gpu"
    steps: tuple                # tuple of argv tuples


@dataclass(frozen=True)
class Plan:
    command: str                # "!build" or "!test"
    canonical: str              # the command line in canonical form
    sha: str                    # "" when unbound
    jobs: tuple

    def job(self, job_id):
        for j in self.jobs:
            if j.id == job_id:
                return j
        return None

    def to_json(self):
        return {"command": self.command, "canonical": self.canonical, "sha": self.sha,
                "jobs": [{"id": j.id, "runner": j.runner, "steps": [list(s) for s in j.steps]}
                         for j in self.jobs]}


@dataclass(frozen=True)
class Decision:
    kind: str                   # IGNORE, REJECT or PLAN
    message: str = ""           # why (IGNORE, REJECT)
    plan: Plan = None


@dataclass
class _Flags:
    serde: bool = False
    backend: str = ""
    categories: list = field(default_factory=list)
    shard: tuple = ()
    coverage: bool = False
    sanitize: bool = False
    gpu: bool = False
    sha: str = ""


# ------------------------------------------------------------------ grammar

_LINE_BREAK_NAMES = {0x85: "U+0085 NEXT LINE", 0x2028: "U+2028 LINE SEPARATOR",
                     0x2029: "U+2029 PARAGRAPH SEPARATOR"}
_NOT_A_BREAK = ", not a line break here,"


def _describe_byte(line, i):
    """Name the first byte of `line` at index i that is not printable ASCII."""
    b = line[i]
    if b == 0x00:
        return "a NUL byte"
    if b == 0x09:
        return "a tab (separate words with spaces)"
    if b in (0x0B, 0x0C):
        return ("a vertical tab (0x0B)" if b == 0x0B else "a form feed (0x0C)") + _NOT_A_BREAK
    if b == 0x0D:
        return "a carriage return (0x0D) without a line feed after it" + _NOT_A_BREAK
    if b < 0x20 or b == 0x7F:
        return "the control byte 0x%02X" % b
    # b >= 0x80: name the UTF-8 character, or the byte that breaks UTF-8.
    for n in (2, 3, 4):
        try:
            ch = line[i:i + n].decode("utf-8")
        except UnicodeDecodeError:
            continue
        cp = ord(ch)
        if cp in _LINE_BREAK_NAMES:
            return _LINE_BREAK_NAMES[cp] + _NOT_A_BREAK
        return "U+%04X %s" % (cp, unicodedata.name(ch, "(unnamed)"))
    return "the byte 0x%02X, which is not valid UTF-8" % b


def _first_line(body):
    """The command line: bytes before the first LF, less one CR right before it."""
    nl = body.find(b"\n")
    line = body if nl < 0 else body[:nl]
    if nl >= 0 and line.endswith(b"\r"):
        line = line[:-1]
    return line


_SHA = re.compile(r"[0-9a-f]{40}")
_SHARD = re.compile(r"([1-9][0-9]{0,2})/([1-9][0-9]{0,2})")


def _value(word, name, col):
    """The value of `--name=value`; errors for `--name` and `--name=`."""
    if word == "--" + name:
        raise TriggerError("col %d: --%s needs a value: --%s=%s"
                           % (col, name, name, _VALUE_HINT[name]))
    v = word[len(name) + 3:]
    if v == "":
        raise TriggerError("col %d: --%s= has an empty value" % (col, name))
    return v


_VALUE_HINT = {"backend": "B", "category": "C", "shard": "I/N", "sha": "<40 hex>"}
_BOOL_FLAGS = ("serde", "coverage", "sanitize", "gpu")


def _quote(word):
    return "'%s'" % (word if len(word) <= 48 else word[:45] + "...")


def _flag(word, col, f, seen, command):
    """Apply one flag word to f, or raise TriggerError."""
    if not word.startswith("--"):
        if word.startswith("!"):
            raise TriggerError("col %d: a second command %s on the command line "
                               "(one command per comment)" % (col, _quote(word)))
        raise TriggerError("col %d: %s is not a flag (flags start with --; put "
                           "free text on the next line)" % (col, _quote(word)))
    name = word[2:].split("=", 1)[0]
    allowed = TEST_FLAGS if command == "!test" else BUILD_FLAGS
    if name not in [a[2:].split("=", 1)[0] for a in allowed]:
        raise TriggerError("col %d: unknown flag %s for %s (flags: %s)"
                           % (col, _quote(word), command, ", ".join(allowed)))
    if name in seen and name != "category":
        raise TriggerError("col %d: --%s given twice" % (col, name))
    seen.add(name)
    if name in _BOOL_FLAGS:
        if word != "--" + name:
            raise TriggerError("col %d: --%s takes no value" % (col, name))
        setattr(f, name, True)
        return
    v = _value(word, name, col)
    if name == "backend":
        if v not in BACKENDS:
            raise TriggerError("col %d: unknown backend %s (backends: %s)"
                               % (col, _quote(v), ", ".join(BACKENDS)))
        f.backend = v
    elif name == "category":
        if v not in CATEGORIES:
            raise TriggerError("col %d: unknown category %s (categories: %s)"
                               % (col, _quote(v), ", ".join(CATEGORIES)))
        if v in f.categories:
            raise TriggerError("col %d: --category=%s given twice" % (col, v))
        f.categories.append(v)
    elif name == "shard":
        m = _SHARD.fullmatch(v)
        i, n = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        if not m or i > n or n > MAX_SHARDS:
            raise TriggerError("col %d: --shard=%s: need --shard=I/N with decimal "
                               "1 <= I <= N <= %d, no leading zeros"
                               % (col, v[:16], MAX_SHARDS))
        f.shard = (i, n)
    else:  # sha
        if not _SHA.fullmatch(v):
            raise TriggerError("col %d: --sha=%s: need the full commit id, 40 "
                               "lower-case hex digits" % (col, v[:48]))
        f.sha = v


def _parse_line(line):
    """(command, _Flags) for a command line of printable ASCII, or raise."""
    words, col = [], 1
    for m in re.finditer(r"[^ ]+", line):
        words.append((m.group(0), m.start() + col))
    cmd = words[0][0]
    if cmd not in COMMANDS:
        if cmd.lower() in COMMANDS:
            raise TriggerError("col 1: unknown command %s (commands are lower case: %s)"
                               % (_quote(cmd), ", ".join(COMMANDS)))
        raise TriggerError("col 1: unknown command %s (commands: %s)"
                           % (_quote(cmd), ", ".join(COMMANDS)))
    if len(words) - 1 > MAX_FLAGS:
        raise TriggerError("col %d: more than %d flags" % (words[MAX_FLAGS + 1][1], MAX_FLAGS))
    f, seen = _Flags(), set()
    for word, c in words[1:]:
        _flag(word, c, f, seen, cmd)
    suite = [n for n in SUITE_FLAGS if getattr(f, n)]
    if f.backend == "cuda" and not f.gpu:
        raise TriggerError("--backend=cuda needs --gpu (the CPU runners have no GPU)")
    if f.coverage and suite:
        raise TriggerError("--coverage runs `make coverage`, which takes no suite "
                           "flags (--serde, --backend, --category, --shard)")
    return cmd, f


def _canonical(cmd, f):
    out = [cmd]
    if f.serde:
        out.append("--serde")
    if f.backend:
        out.append("--backend=" + f.backend)
    out += ["--category=" + c for c in sorted(f.categories)]
    if f.shard:
        out.append("--shard=%d/%d" % f.shard)
    out += ["--" + n for n in ("coverage", "sanitize", "gpu") if getattr(f, n)]
    if f.sha:
        out.append("--sha=" + f.sha)
    return " ".join(out)


def _jobs(cmd, f):
    runner = "gpu" if f.gpu else "cpu"
    if cmd == "!build":
        return (Job("build", runner, (("make", "deps", "all"),)),)
    if any(getattr(f, n) for n in SUITE_FLAGS):
        if f.sanitize:
            build, setup = "build/asan", (("make", "deps"),
                                          ("make", "BUILD=build/asan", "SAN=asan", "all"))
        else:
            build, setup = "build", (("make", "deps", "all"),)
        conform = [build + "/kiln", "conform"]
        if f.serde:
            conform.append("--serde")
        if f.backend:
            conform += ["--backend", f.backend]
        for c in sorted(f.categories):
            conform += ["--category", c]
        n = f.shard[1] if f.shard else SUITE_SHARDS[runner]
        shards = [f.shard[0]] if f.shard else range(1, n + 1)
        return tuple(Job("conform-%d-of-%d" % (i, n), runner, setup + (tuple(
            conform + ["--shard", "%d/%d" % (i, n), "--junit", build + "/ci-junit.xml",
                       "--tap", build + "/ci.tap"]),)) for i in shards)
    jobs = []
    if f.sanitize:
        jobs.append(Job("sanitize", runner, (("make", "deps", "test-asan", "test-tsan"),)))
    if f.coverage:
        jobs.append(Job("coverage", runner, (("make", "deps", "coverage"),)))
    return tuple(jobs) or (Job("test", runner, (("make", "deps", "test"),)),)


def decide(body):
    """The decision for a comment body (bytes; a str is encoded as UTF-8).

    IGNORE: not addressed to CI (the body does not start with "!"): no run,
    no reply.  REJECT: a malformed command; .message is the reply.  PLAN:
    .plan says what runs.  Never raises."""
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    if not isinstance(body, (bytes, bytearray)):
        return Decision(REJECT, "the comment body is not text")
    body = bytes(body)
    if not prefilter(body):
        return Decision(IGNORE, "the body does not start with '!'")
    if len(body) > MAX_BODY:
        return Decision(REJECT, "the comment is more than %d bytes" % MAX_BODY)
    line = _first_line(body)
    if len(line) > MAX_LINE:
        return Decision(REJECT, "the command line is %d bytes; at most %d"
                        % (len(line), MAX_LINE))
    for i, b in enumerate(line):
        if not 0x20 <= b <= 0x7E:
            return Decision(REJECT, "col %d: %s on the command line: only printable "
                            "ASCII (0x20-0x7E) may stand there, and only \\n or \\r\\n "
                            "ends it" % (i + 1, _describe_byte(line, i)))
    try:
        cmd, f = _parse_line(line.decode("ascii"))
    except TriggerError as e:
        return Decision(REJECT, str(e))
    return Decision(PLAN, plan=Plan(cmd, _canonical(cmd, f), f.sha, _jobs(cmd, f)))


def plan_of(text):
    """The plan of a command that must be valid (raises TriggerError otherwise)."""
    d = decide(text)
    if d.kind != PLAN:
        raise TriggerError(d.message)
    return d.plan


# ------------------------------------------------------------------ running

_SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _run_steps(job, cwd, user=None, env=None):
    """Run a job's steps in order (no shell); the first failure's status."""
    for k, argv in enumerate(job.steps, 1):
        print("ci/trigger: job %s step %d/%d: %s" % (job.id, k, len(job.steps),
                                                    " ".join(argv)), flush=True)
        kw = {}
        if user is not None:
            kw = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": [],
                  "umask": 0o022}
        try:
            rc = subprocess.call(list(argv), cwd=cwd, env=env, **kw)
        except OSError as e:
            print("ci/trigger: cannot run %s: %s" % (argv[0], e), file=sys.stderr)
            return 127
        if rc != 0:
            print("ci/trigger: job %s step %d failed with status %d"
                  % (job.id, k, rc), file=sys.stderr)
            return rc
    return 0


def _chown_tree(root, uid, gid):
    os.chown(root, uid, gid, follow_symlinks=False)
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            os.chown(os.path.join(d, n), uid, gid, follow_symlinks=False)


def exec_job(command, job_id, workdir, as_user=None, checked_out=None):
    """Run one job of `command` (canonical text from the gate) in workdir.

    A bound plan (--sha) runs only when `checked_out` is that commit.  As
    root, the job runs only under `as_user` (no supplementary groups, a
    clean environment, workdir chowned to it): PR code never runs as root."""
    plan = plan_of(command)
    job = plan.job(job_id)
    if job is None:
        raise TriggerError("the plan of %s has no job %s (jobs: %s)"
                           % (plan.canonical, _quote(job_id),
                              ", ".join(j.id for j in plan.jobs)))
    if plan.sha and checked_out != plan.sha:
        raise TriggerError("the checkout is %s, but the run is bound to %s"
                           % (_quote(checked_out or ""), plan.sha))
    if as_user is None:
        if os.geteuid() == 0:
            raise TriggerError("refusing to run PR code as root: pass --as-user")
        return _run_steps(job, workdir)
    if os.geteuid() != 0:
        raise TriggerError("--as-user needs root (to drop to that user)")
    import pwd
    try:
        pw = pwd.getpwnam(as_user)
    except KeyError:
        raise TriggerError("no user %s" % _quote(as_user)) from None
    if pw.pw_uid == 0:
        raise TriggerError("--as-user %s is root" % _quote(as_user))
    _chown_tree(workdir, pw.pw_uid, pw.pw_gid)
    env = {"PATH": _SAFE_PATH, "HOME": pw.pw_dir, "USER": pw.pw_name,
           "LOGNAME": pw.pw_name, "LANG": "C.UTF-8", "CI": "true"}
    return _run_steps(job, workdir, user=pw, env=env)


# ------------------------------------------------------------------ CLI

def _read_comment(args):
    if args:
        return os.fsencode(args[0])
    return sys.stdin.buffer.read(MAX_BODY + 1)


def _reject(msg, status=1):
    print("ci/trigger: rejected: %s" % msg, file=sys.stderr)
    return status


def main(argv):
    args = argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    verb, rest = args[0], args[1:]
    if verb in ("plan", "run"):
        if len(rest) > 1:
            print("ci/trigger: %s takes one COMMENT argument (or stdin)" % verb,
                  file=sys.stderr)
            return 2
        d = decide(_read_comment(rest))
        if d.kind == IGNORE:
            print("ci/trigger: not a command: %s" % d.message, file=sys.stderr)
            return 3
        if d.kind == REJECT:
            return _reject(d.message)
        if verb == "plan":      # valid JSON, one line per job
            j = d.plan.to_json()
            jobs = j.pop("jobs")
            print(json.dumps(j)[:-1] + ', "jobs": [\n' + ",\n".join(
                " " + json.dumps(x) for x in jobs) + "\n]}")
            return 0
        for job in d.plan.jobs:
            rc = _run_steps(job, None)
            if rc != 0:
                return rc
        return 0
    if verb == "exec":
        opts = {}
        it = iter(rest)
        for a in it:
            if a not in ("--job", "--dir", "--as-user"):
                print("ci/trigger: exec: unknown argument %s" % _quote(a), file=sys.stderr)
                return 2
            opts[a] = next(it, None)
        if not opts.get("--job") or not opts.get("--dir") or None in opts.values():
            print("ci/trigger: exec needs --job ID --dir DIR [--as-user NAME]",
                  file=sys.stderr)
            return 2
        try:
            return exec_job(os.environ.get("KILN_CI_COMMAND", ""), opts["--job"],
                            opts["--dir"], opts.get("--as-user"),
                            os.environ.get("KILN_CI_CHECKED_OUT"))
        except TriggerError as e:
            return _reject(str(e))
    print("ci/trigger: unknown verb %s (plan, run, exec; --help)" % _quote(verb),
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

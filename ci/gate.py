#!/usr/bin/env python3
"""The comment workflow's trusted half: who may start a run, on which
commit, and the reply that says what happened.

ci/trigger.py decides what a comment body means; this file adds what the
event says around it (.github/workflows/comment.yml, docs/ci.md):

  gate    reads the event payload ($GITHUB_EVENT_PATH) and the body
          ($COMMENT_BODY, set through env: only), and writes the step
          outputs `decision` (run / reply / ignore), `reply`, `command`
          (the canonical command line), `sha` and `matrix`.  It needs a
          read token: it looks up the commenter's repository role and the
          pull request's head.
  report  posts one reply on the pull request from the gate's outputs and
          the run jobs' result, treating all of them as data (validated,
          re-parsed, never evaluated).  It needs a token that may comment.

Both run from the default branch's checkout, never from the pull
request's, so a pull request cannot change who is authorized
(ci/authorized_users) or how.  Any failure here means no run.
"""

import json
import os
import re
import secrets
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trigger  # noqa: E402

ROLES = ("triage", "write", "maintain", "admin")     # role_name values that may trigger
AUTHORIZED_USERS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "authorized_users")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
_REPO = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
PREFIX = "Kiln CI: "           # every reply starts so (never "!": no reply is a command)
GRAMMAR_HINT = ("Commands: `!build [--sha=<40 hex>]`, `!test [--serde] [--backend=B] "
                "[--category=C]... [--shard=I/N] [--coverage] [--sanitize] [--gpu] "
                "[--sha=<40 hex>]`, on the first line of a new comment (docs/ci.md).")


class Outcome:
    """decision: "run", "reply" (no run, reply why) or "ignore" (no run, silent)."""

    def __init__(self, decision, reply="", plan=None):
        self.decision, self.reply, self.plan = decision, reply, plan

    def __repr__(self):
        return "Outcome(%r, %r)" % (self.decision, self.reply)


def is_listed(login, users_text):
    """True when `login` is a whole line of ci/authorized_users (exactly:
    no trimming, no case folding, no substrings; '#' lines are comments)."""
    return bool(login) and any(line == login and not line.startswith("#")
               for line in users_text.split("\n"))


def _code(text):
    """`text` as a fenced block: no Markdown, no @-mentions in a reply."""
    return "\n```text\n%s\n```\n" % text.replace("```", "'''")


def gate(event, body, users_text, api):
    """The outcome of an issue_comment event.

    event: the payload (dict); body: the comment body (bytes, from env);
    users_text: ci/authorized_users; api: .role(login) -> (role, detail) and
    .pull(number) -> the pull request (dict)."""
    d = trigger.decide(body)
    if d.kind == trigger.IGNORE:
        return Outcome("ignore")
    try:
        action = event["action"]
        issue = event["issue"]
        number = issue["number"]
        login = event["comment"]["user"]["login"]
    except (KeyError, TypeError):
        return Outcome("ignore")               # nowhere to reply to
    if not isinstance(number, int) or not isinstance(login, str):
        return Outcome("ignore")
    if action != "created":
        return Outcome("reply", PREFIX + "only a newly created comment starts a run; this "
                       "one was %s. Post the command as a new comment." % (
                           action if action in ("edited", "deleted") else "not created"))
    if not issue.get("pull_request"):
        return Outcome("reply", PREFIX + "commands run on pull requests only; #%d is an "
                       "issue." % number)
    if not _LOGIN.fullmatch(login):
        return Outcome("reply", PREFIX + "this account name is not a GitHub login; "
                       "nothing ran.")
    who = "@" + login
    if not is_listed(login, users_text):
        role, detail = api.role(login)
        if role not in ROLES:
            return Outcome("reply", PREFIX + "%s may not start CI: that needs the triage, "
                           "write, maintain or admin role on this repository, or a line in "
                           "ci/authorized_users (%s). Nothing ran." % (who, detail))
    if d.kind == trigger.REJECT:
        return Outcome("reply", PREFIX + "%s, the command was rejected:%s%s"
                       % (who, _code(d.message), GRAMMAR_HINT))
    plan = d.plan
    pr = api.pull(number)
    head = ((pr.get("head") or {}).get("sha")) if isinstance(pr, dict) else None
    if not isinstance(head, str) or not re.fullmatch(r"[0-9a-f]{40}", head):
        return Outcome("reply", PREFIX + "could not read the head of #%d; nothing ran."
                       % number)
    if pr.get("state") != "open":
        return Outcome("reply", PREFIX + "#%d is not open; nothing ran." % number)
    if not plan.sha:
        return Outcome("reply", PREFIX + "%s, a run must name the commit it tests: add "
                       "`--sha=<commit>` to the command. The head of #%d is now `%s`; if "
                       "that is the commit you reviewed, comment:%s" % (
                           who, number, head, _code(plan.canonical + " --sha=" + head)))
    if plan.sha != head:
        return Outcome("reply", PREFIX + "%s, the command names `%s`, but the head of #%d "
                       "is `%s`: it moved, or the id is wrong. Review the head and comment "
                       "again; nothing ran." % (who, plan.sha, number, head))
    return Outcome("run", plan=plan)


def matrix(plan):
    """The run job's strategy.matrix: one entry per plan job."""
    return {"include": [{"job": j.id, "gpu": j.runner == "gpu"} for j in plan.jobs]}


def write_outputs(path, values):
    """Append step outputs to $GITHUB_OUTPUT with a random delimiter that
    no value contains (a value cannot end its own block)."""
    with open(path, "a", encoding="utf-8") as f:
        for name, value in values.items():
            while True:
                delim = "KILN_EOF_" + secrets.token_hex(16)
                if delim not in value:
                    break
            f.write("%s<<%s\n%s\n%s\n" % (name, delim, value, delim))


def gate_outputs(outcome):
    plan = outcome.plan
    return {"decision": outcome.decision, "reply": outcome.reply,
            "command": plan.canonical if plan else "",
            "sha": plan.sha if plan else "",
            "matrix": json.dumps(matrix(plan)) if plan else ""}


RESULTS = ("success", "failure", "cancelled", "skipped")


def report_text(env):
    """The reply for the report job, from the gate's outputs and the
    run's result (all treated as data), or "" for no reply."""
    run_url = "%s/%s/actions/runs/%s" % (env.get("GITHUB_SERVER_URL", "https://github.com"),
                                         env.get("GITHUB_REPOSITORY", "?"),
                                         env.get("GITHUB_RUN_ID", "?"))
    if not re.fullmatch(r"[A-Za-z0-9:/._-]{1,300}", run_url):
        run_url = "(this workflow run)"
    gate_result = env.get("GATE_RESULT", "")
    decision = env.get("GATE_DECISION", "")
    if gate_result != "success":
        return PREFIX + "the gate job ended as '%s', so nothing ran. Run: %s" % (
            gate_result if gate_result in RESULTS else "unknown", run_url)
    if decision == "ignore":
        return ""
    if decision == "reply":
        reply = env.get("GATE_REPLY", "")
        if not reply.startswith(PREFIX) or len(reply) > 4000:
            reply = PREFIX + "the gate refused this comment; nothing ran."
        return reply
    if decision == "run":
        command = env.get("GATE_COMMAND", "")
        d = trigger.decide(command.encode("utf-8", "replace"))
        if d.kind != trigger.PLAN or not d.plan.sha or d.plan.canonical != command:
            return PREFIX + "the gate's command output is not a bound command; " \
                            "reporting nothing about it. Run: %s" % run_url
        result = env.get("RUN_RESULT", "")
        return PREFIX + "`%s` on `%s`: %s (jobs: %s). Run: %s" % (
            d.plan.canonical, d.plan.sha, result if result in RESULTS else "unknown",
            ", ".join(j.id for j in d.plan.jobs), run_url)
    return PREFIX + "the gate's decision output is not one it writes; nothing ran. " \
                    "Run: %s" % run_url


class GitHubAPI:
    """The three REST calls CI needs, with the job's token (urllib only)."""

    def __init__(self, base_url, repo, token, timeout=30):
        if not _REPO.fullmatch(repo or ""):
            raise ValueError("GITHUB_REPOSITORY %r is not owner/name" % repo)
        self.base, self.repo, self.token, self.timeout = base_url.rstrip("/"), repo, token, timeout

    def _call(self, method, path, payload=None):
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
            "Authorization": "Bearer " + self.token, "User-Agent": "kiln-ci",
            "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.status, json.loads(r.read(1 << 22) or b"null")
        except urllib.error.HTTPError as e:
            return e.code, None
        except (urllib.error.URLError, OSError, ValueError) as e:
            return 0, str(e)

    def role(self, login):
        """(role_name, detail): the commenter's role, None when unknown."""
        status, body = self._call("GET", "/repos/%s/collaborators/%s/permission"
                                  % (self.repo, login))
        if status != 200 or not isinstance(body, dict):
            return None, "the permission lookup answered HTTP %d" % status
        role = body.get("role_name")
        if role not in ROLES and body.get("permission") in ("admin", "write"):
            role = "write"        # a custom role built on write
        return (role if isinstance(role, str) else None), "role: %s" % (
            role if isinstance(role, str) and _LOGIN.fullmatch(role) else "none")

    def pull(self, number):
        status, body = self._call("GET", "/repos/%s/pulls/%d" % (self.repo, number))
        return body if status == 200 and isinstance(body, dict) else {}

    def comment(self, number, text):
        status, _ = self._call("POST", "/repos/%s/issues/%d/comments" % (self.repo, number),
                               {"body": text})
        return status == 201


def _api(env):
    return GitHubAPI(env.get("GITHUB_API_URL", "https://api.github.com"),
                     env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_TOKEN", ""))


def _event(env):
    with open(env["GITHUB_EVENT_PATH"], encoding="utf-8") as f:
        return json.load(f)


def main(argv, env=None, environb=None):
    env = os.environ if env is None else env
    environb = os.environb if environb is None else environb
    if len(argv) != 2 or argv[1] not in ("gate", "report"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 and argv[1] in ("-h", "--help") else 2
    if argv[1] == "gate":
        with open(AUTHORIZED_USERS, encoding="utf-8") as f:
            users = f.read()
        out = gate(_event(env), environb.get(b"COMMENT_BODY", b""), users, _api(env))
        print("ci/gate: %s%s" % (out.decision, (": " + out.reply) if out.reply else ""))
        write_outputs(env["GITHUB_OUTPUT"], gate_outputs(out))
        return 0
    text = report_text(env)
    if not text:
        print("ci/gate: nothing to report")
        return 0
    number = (_event(env).get("issue") or {}).get("number")
    if not isinstance(number, int):
        print("ci/gate: the event has no issue number", file=sys.stderr)
        return 1
    print("ci/gate: replying on #%d: %s" % (number, text))
    if not _api(env).comment(number, text):
        print("ci/gate: posting the reply failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

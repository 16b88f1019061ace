#!/usr/bin/env python3
"""Tests for ci/gate.py: issue_comment event payloads (authorized or not,
created or edited, pull request or plain issue, bound to the head or not),
ci/authorized_users matching, the step outputs, the report, and the REST
calls against a local stand-in for the GitHub API (loopback only)."""

import http.server
import json
import os
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gate  # noqa: E402
import trigger  # noqa: E402

HEAD = "89abcdef0123456789abcdef0123456789abcdef"
OLD = "0123456789abcdef0123456789abcdef01234567"


class FakeAPI:
    def __init__(self, roles=None, pr=None):
        self.roles = roles or {}
        self.pr = {"head": {"sha": HEAD}, "state": "open"} if pr is None else pr
        self.role_calls = []

    def role(self, login):
        self.role_calls.append(login)
        role = self.roles.get(login)
        return role, "role: %s" % (role or "none")

    def pull(self, number):
        return self.pr


def event(action="created", login="maint", pr=True, number=7, association="CONTRIBUTOR"):
    issue = {"number": number}
    if pr:
        issue["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/%d" % number}
    return {"action": action, "issue": issue,
            "comment": {"user": {"login": login}, "author_association": association}}


ROLES = {"maint": "maintain", "admin1": "admin", "writer": "write", "triager": "triage",
         "reader": "read"}


class Gate(unittest.TestCase):
    def run_gate(self, body, ev=None, users="", api=None):
        return gate.gate(event() if ev is None else ev, body, users, api or FakeAPI(ROLES))

    def test_events(self):
        bound = ("!test --sha=%s" % HEAD).encode()
        cases = [
            # (body, event, users file, expected decision, reply pattern)
            (bound, event(), "", "run", ""),
            (bound, event(login="admin1"), "", "run", ""),
            (bound, event(login="writer"), "", "run", ""),
            (bound, event(login="triager"), "", "run", ""),
            (bound, event(login="reader"), "", "reply", r"@reader may not start CI: .*role: read"),
            (bound, event(login="stranger"), "", "reply", r"@stranger may not start CI"),
            (bound, event(login="stranger", association="OWNER"), "", "reply",
             r"may not start CI"),                  # author_association is never trusted
            (bound, event(login="stranger"), "stranger\n", "run", ""),
            (bound, event(login="stranger"), "# stranger\n", "reply", r"may not start"),
            (bound, event(login="stranger"), "strangers\n", "reply", r"may not start"),
            (bound, event(login="stranger"), "strange\n", "reply", r"may not start"),
            (bound, event(login="stranger"), " stranger\n", "reply", r"may not start"),
            (bound, event(login="stranger"), "stranger \n", "reply", r"may not start"),
            (bound, event(login="stranger"), "Stranger\n", "reply", r"may not start"),
            (bound, event(login="stranger"), "stranger\r\n", "reply", r"may not start"),
            (bound, event(login="stranger"), "xstranger,stranger\n", "reply", r"may not start"),
            (bound, event(action="edited"), "", "reply", r"only a newly created comment.*edited"),
            (bound, event(action="deleted"), "", "reply", r"this one was deleted"),
            (bound, event(action="weird"), "", "reply", r"this one was not created"),
            (bound, event(pr=False), "", "reply", r"pull requests only; #7 is an issue"),
            (bound, event(login="evil;rm -rf /"), "", "reply", r"not a GitHub login"),
            (bound, event(login="-lead"), "", "reply", r"not a GitHub login"),
            (b"LGTM", event(), "", "ignore", ""),
            (b"LGTM", event(login="stranger"), "", "ignore", ""),
            (b"LGTM", event(action="edited"), "", "ignore", ""),
            (b"> !test", event(), "", "ignore", ""),
            (b"!test", event(), "", "reply", r"must name the commit.*head of #7 is now `%s`"
             % HEAD),
            (b"!test --gpu --backend=cuda", event(), "", "reply",
             r"!test --backend=cuda --gpu --sha=%s" % HEAD),
            (("!test --sha=%s" % OLD).encode(), event(), "", "reply",
             r"names `%s`, but the head of #7 is `%s`" % (OLD, HEAD)),
            (b"!test --bakend=ref", event(), "", "reply",
             r"rejected:\n```text\ncol 7: unknown flag '--bakend=ref'"),
            (b"!test --bakend=ref", event(login="stranger"), "", "reply", r"may not start CI"),
            ("!test\u2028--gpu".encode(), event(), "", "reply", r"U\+2028"),
            (b"!test @everyone ```", event(), "", "reply",
             r"```text\ncol 7: '@everyone' is not a flag[^`]*\n```"),
        ]
        for body, ev, users, decision, pattern in cases:
            with self.subTest(body=body, event=ev, users=users):
                out = self.run_gate(body, ev, users)
                self.assertEqual(out.decision, decision, out.reply)
                if pattern:
                    self.assertRegex(out.reply, pattern)
                else:
                    self.assertEqual(out.reply, "")
                if out.reply:
                    self.assertTrue(out.reply.startswith(gate.PREFIX))
                    self.assertEqual(trigger.decide(out.reply.encode()).kind, trigger.IGNORE)

    def test_run_outcome_and_outputs(self):
        out = self.run_gate(("!test --backend=ref --sha=%s" % HEAD).encode())
        self.assertEqual(out.decision, "run")
        o = gate.gate_outputs(out)
        self.assertEqual(o["command"], "!test --backend=ref --sha=" + HEAD)
        self.assertEqual(o["sha"], HEAD)
        self.assertEqual(json.loads(o["matrix"]), {"include": [
            {"job": "conform-%d-of-4" % i, "gpu": False} for i in (1, 2, 3, 4)]})
        gpu = self.run_gate(("!test --gpu --sha=%s" % HEAD).encode())
        self.assertEqual(json.loads(gate.gate_outputs(gpu)["matrix"]),
                         {"include": [{"job": "test", "gpu": True}]})
        no = gate.gate_outputs(self.run_gate(b"LGTM"))
        self.assertEqual(no, {"decision": "ignore", "reply": "", "command": "", "sha": "",
                              "matrix": ""})

    def test_listed_user_needs_no_lookup(self):
        api = FakeAPI(ROLES)
        out = gate.gate(event(login="stranger"), ("!build --sha=" + HEAD).encode(),
                        "# maintainers\nstranger\n", api)
        self.assertEqual(out.decision, "run")
        self.assertEqual(api.role_calls, [])

    def test_pull_request_states(self):
        body = ("!test --sha=" + HEAD).encode()
        for pr, pattern in (({"head": {"sha": HEAD}, "state": "closed"}, r"#7 is not open"),
                            ({}, r"could not read the head of #7"),
                            ({"head": {"sha": "HEAD"}, "state": "open"}, r"could not read"),
                            ({"head": None, "state": "open"}, r"could not read"),
                            ("not a dict", r"could not read")):
            with self.subTest(pr=pr):
                out = gate.gate(event(), body, "", FakeAPI(ROLES, pr))
                self.assertEqual(out.decision, "reply")
                self.assertRegex(out.reply, pattern)

    def test_malformed_events_are_ignored(self):
        body = ("!test --sha=" + HEAD).encode()
        for ev in ({}, {"action": "created"}, {"action": "created", "issue": {"number": 1}},
                   {"action": "created", "issue": {"number": "7"}, "comment": {"user": {"login": "a"}}},
                   {"action": "created", "issue": {"number": 7}, "comment": {"user": {"login": 5}}},
                   {"action": "created", "issue": None, "comment": None}):
            with self.subTest(event=ev):
                self.assertEqual(gate.gate(ev, body, "", FakeAPI(ROLES)).decision, "ignore")

    def test_is_listed(self):
        users = "# comment\nalice\nbob-2\n\n"
        self.assertTrue(gate.is_listed("alice", users))
        self.assertTrue(gate.is_listed("bob-2", users))
        for login in ("ali", "alice2", "xalice", "Alice", "bob", "", "# comment", "comment"):
            self.assertFalse(gate.is_listed(login, users), login)

    def test_committed_authorized_users_lines_are_logins(self):
        with open(gate.AUTHORIZED_USERS) as f:
            for line in f.read().split("\n"):
                if line and not line.startswith("#"):
                    self.assertRegex(line, gate._LOGIN.pattern + "$")


class Outputs(unittest.TestCase):
    def test_values_cannot_end_their_block(self):
        with tempfile.NamedTemporaryFile("r", delete=False) as f:
            path = f.name
        try:
            hostile = "line\nKILN_EOF_x\nsha<<EOF\nevil\nEOF"
            gate.write_outputs(path, {"reply": hostile, "sha": HEAD})
            with open(path) as f:
                text = f.read()
            # Parse the file the way the runner does: name<<DELIM ... DELIM.
            lines, got, i = text.split("\n"), {}, 0
            while i < len(lines) and lines[i]:
                name, delim = lines[i].split("<<", 1)
                j = lines.index(delim, i + 1)
                got[name] = "\n".join(lines[i + 1:j])
                i = j + 1
            self.assertEqual(got, {"reply": hostile, "sha": HEAD})
        finally:
            os.unlink(path)


class Report(unittest.TestCase):
    BASE = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
            "GITHUB_RUN_ID": "42", "GATE_RESULT": "success"}

    def text(self, **kw):
        return gate.report_text(dict(self.BASE, **kw))

    def test_report(self):
        url = "https://github.com/o/r/actions/runs/42"
        self.assertEqual(self.text(GATE_DECISION="ignore"), "")
        self.assertEqual(self.text(GATE_DECISION="reply", GATE_REPLY="Kiln CI: no."), "Kiln CI: no.")
        self.assertEqual(self.text(GATE_DECISION="reply", GATE_REPLY="!test --gpu"),
                         "Kiln CI: the gate refused this comment; nothing ran.")
        self.assertEqual(self.text(GATE_DECISION="reply", GATE_REPLY="Kiln CI: " + "x" * 5000),
                         "Kiln CI: the gate refused this comment; nothing ran.")
        self.assertEqual(
            self.text(GATE_DECISION="run", GATE_COMMAND="!test --sha=" + HEAD, RUN_RESULT="success"),
            "Kiln CI: `!test --sha=%s` on `%s`: success (jobs: test). Run: %s" % (HEAD, HEAD, url))
        self.assertIn(": failure (jobs: conform-1-of-2)", self.text(
            GATE_DECISION="run", GATE_COMMAND="!test --shard=1/2 --sha=" + HEAD,
            RUN_RESULT="failure"))
        self.assertIn(": unknown (jobs", self.text(
            GATE_DECISION="run", GATE_COMMAND="!test --sha=" + HEAD, RUN_RESULT="pwned`@x"))
        for command in ("!test", "!test $(id)", "!test --sha=" + HEAD + "\n@everyone", ""):
            self.assertIn("not a bound command", self.text(GATE_DECISION="run",
                                                           GATE_COMMAND=command))
        self.assertIn("decision output is not one it writes", self.text(GATE_DECISION="rm -rf"))
        self.assertEqual(self.text(GATE_RESULT="failure"),
                         "Kiln CI: the gate job ended as 'failure', so nothing ran. Run: " + url)
        self.assertIn("ended as 'unknown'", self.text(GATE_RESULT="x`y"))
        self.assertIn("Run: (this workflow run)",
                      self.text(GATE_RESULT="failure", GITHUB_RUN_ID="1 `@team`"))


class _Handler(http.server.BaseHTTPRequestHandler):
    routes = {}
    seen = []

    def _answer(self, payload=None):
        self.seen.append((self.command, self.path, self.headers.get("Authorization"), payload))
        status, body = self.routes.get((self.command, self.path), (404, {"message": "Not Found"}))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._answer()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self._answer(json.loads(self.rfile.read(n)))

    def log_message(self, *args):
        pass


class Api(unittest.TestCase):
    """GitHubAPI and the gate/report entry points against a local server."""

    @classmethod
    def setUpClass(cls):
        cls.server = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.url = "http://127.0.0.1:%d" % cls.server.server_port

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        _Handler.seen.clear()
        _Handler.routes = {
            ("GET", "/repos/o/r/collaborators/maint/permission"):
                (200, {"permission": "write", "role_name": "maintain"}),
            ("GET", "/repos/o/r/collaborators/triager/permission"):
                (200, {"permission": "read", "role_name": "triage"}),
            ("GET", "/repos/o/r/collaborators/reader/permission"):
                (200, {"permission": "read", "role_name": "read"}),
            ("GET", "/repos/o/r/collaborators/custom/permission"):
                (200, {"permission": "write", "role_name": "release-manager"}),
            ("GET", "/repos/o/r/collaborators/odd/permission"): (200, ["not", "a", "dict"]),
            ("GET", "/repos/o/r/pulls/7"): (200, {"head": {"sha": HEAD}, "state": "open"}),
            ("POST", "/repos/o/r/issues/7/comments"): (201, {"id": 1}),
        }
        self.api = gate.GitHubAPI(self.url, "o/r", "tok")

    def test_roles(self):
        self.assertEqual(self.api.role("maint"), ("maintain", "role: maintain"))
        self.assertEqual(self.api.role("triager"), ("triage", "role: triage"))
        self.assertEqual(self.api.role("reader"), ("read", "role: read"))
        self.assertEqual(self.api.role("custom"), ("write", "role: write"))
        self.assertEqual(self.api.role("nobody"),
                         (None, "the permission lookup answered HTTP 404"))
        self.assertEqual(self.api.role("odd"), (None, "the permission lookup answered HTTP 200"))
        self.assertEqual(_Handler.seen[0][2], "Bearer tok")

    def test_pull_and_comment(self):
        self.assertEqual(self.api.pull(7)["head"]["sha"], HEAD)
        self.assertEqual(self.api.pull(8), {})
        self.assertTrue(self.api.comment(7, "Kiln CI: hi"))
        self.assertEqual(_Handler.seen[-1][3], {"body": "Kiln CI: hi"})
        self.assertFalse(self.api.comment(8, "Kiln CI: hi"))

    def test_unreachable_api_denies(self):
        api = gate.GitHubAPI("http://127.0.0.1:9", "o/r", "tok", timeout=5)
        role, detail = api.role("maint")
        self.assertIsNone(role)
        self.assertEqual(api.pull(7), {})

    def test_repository_name_is_checked(self):
        for repo in ("", "o", "o/r/x", "../o/r", "o/r?x=1"):
            with self.assertRaises(ValueError):
                gate.GitHubAPI(self.url, repo, "tok")

    def env(self, tmp, ev, **kw):
        path = os.path.join(tmp, "event.json")
        with open(path, "w") as f:
            json.dump(ev, f)
        out = os.path.join(tmp, "out")
        open(out, "w").close()
        return dict({"GITHUB_EVENT_PATH": path, "GITHUB_OUTPUT": out,
                     "GITHUB_API_URL": self.url, "GITHUB_REPOSITORY": "o/r",
                     "GITHUB_TOKEN": "tok", "GITHUB_SERVER_URL": "https://github.com",
                     "GITHUB_RUN_ID": "42"}, **kw)

    def test_main_gate_and_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = self.env(tmp, event(login="maint"))
            body = ("!test --backend=ref --shard=2/2 --sha=%s\nthanks" % HEAD).encode()
            self.assertEqual(gate.main(["gate.py", "gate"], env, {b"COMMENT_BODY": body}), 0)
            with open(env["GITHUB_OUTPUT"]) as f:
                text = f.read()
            self.assertIn("\n!test --backend=ref --shard=2/2 --sha=%s\n" % HEAD, text)
            self.assertIn('{"include": [{"job": "conform-2-of-2", "gpu": false}]}', text)
            env.update(GATE_RESULT="success", GATE_DECISION="run", RUN_RESULT="success",
                       GATE_COMMAND="!test --backend=ref --shard=2/2 --sha=" + HEAD)
            self.assertEqual(gate.main(["gate.py", "report"], env), 0)
            posted = _Handler.seen[-1]
            self.assertEqual(posted[:2], ("POST", "/repos/o/r/issues/7/comments"))
            self.assertTrue(posted[3]["body"].startswith("Kiln CI: `!test --backend=ref"))

    def test_main_report_failures(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = self.env(tmp, event(number=8), GATE_RESULT="failure")
            self.assertEqual(gate.main(["gate.py", "report"], env), 1)   # POST answered 404
            env = self.env(tmp, {"issue": {}}, GATE_RESULT="failure")
            self.assertEqual(gate.main(["gate.py", "report"], env), 1)
            env = self.env(tmp, event(), GATE_RESULT="success", GATE_DECISION="ignore")
            self.assertEqual(gate.main(["gate.py", "report"], env), 0)
            self.assertEqual(gate.main(["gate.py"], env), 2)

    def test_main_gate_unauthorized(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = self.env(tmp, event(login="reader"))
            gate.main(["gate.py", "gate"], env, {b"COMMENT_BODY": b"!test --sha=" + HEAD.encode()})
            with open(env["GITHUB_OUTPUT"]) as f:
                text = f.read()
            self.assertRegex(text, r"decision<<(\S+)\nreply\n\1\n")
            self.assertIn("@reader may not start CI", text)
            self.assertNotIn("/pulls/", " ".join(s[1] for s in _Handler.seen))


if __name__ == "__main__":
    unittest.main(verbosity=1)

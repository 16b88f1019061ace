#!/usr/bin/env python3
"""Validate .github/workflows/*.yml: a schema check, then Kiln's rules.

No Debian package provides actionlint, so the schema check is this file's
own (with Debian's python3-yaml): the keys GitHub accepts at each level,
their types, the events and permission scopes, that every `${{ }}`
expression closes and names known contexts and functions, that `needs.X`
names a job the job needs, `steps.X` an earlier step, `matrix.X` a job with
a matrix.  Duplicate keys are errors, and `on` stays a string (YAML 1.2
booleans).

Then the project's rules (docs/ci.md, "The workflow lint"), each with an id:

  permissions-missing   no top-level `permissions:`, or a job without one
  permissions-top       the top-level `permissions:` is not `{}`
  unpinned-action       `uses:` not pinned to a full 40-hex commit id
  event-in-run          `${{ github.event.* }}` inside `run:`
  expression-in-run     any other `${{ }}` inside `run:` (pass values via env:)
  body-outside-env      the comment body in anything but env:, if: or concurrency
  sudo-pr-code          `sudo` in a step that runs PR code
  pr-code-on-host       PR code in a job without a container (hosted runners
                        give their user password-less sudo)
  pr-code-as-root       a step after the PR checkout that does not go through
                        `python3 trusted/ci/trigger.py exec ... --as-user USER`
  pr-code-token         a job holding PR code with a write scope, secrets or
                        github.token
  persist-credentials   a checkout without `persist-credentials: false`
  trusted-checkout-ref  a checkout into trusted/ of a ref that is not trusted
  comment-types         issue_comment without `types: [created]`
  concurrency           pull_request / issue_comment without a concurrency
                        group that cancels in progress
  pull-request-target   pull_request_target (a write token on fork code)

A step "runs PR code" when it comes after a checkout, in the same job, into
any path but trusted/.

Usage: ci/lint_workflows.py FILE.yml...   (exit 1 on any finding)
"""

import re
import sys

try:
    import yaml
except ImportError:                       # pragma: no cover - reported, not skipped
    sys.exit("lint_workflows: python3-yaml is missing (make deps installs it)")


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans (so `on:` stays "on") and
    duplicate keys as errors."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"),
                              list("tf"))


def _mapping(loader, node):
    seen = set()
    for k, _ in node.value:
        key = loader.construct_object(k)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, "duplicate key %r" % (key,), k.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)

TOP_KEYS = {"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
EVENTS = {"push", "pull_request", "pull_request_target", "issue_comment", "issues",
          "workflow_dispatch", "workflow_call", "workflow_run", "schedule", "release",
          "merge_group", "pull_request_review", "pull_request_review_comment", "create",
          "delete", "check_run", "check_suite", "repository_dispatch", "status"}
SCOPES = {"actions", "attestations", "checks", "contents", "deployments", "discussions",
          "id-token", "issues", "models", "packages", "pages", "pull-requests",
          "repository-projects", "security-events", "statuses"}
JOB_KEYS = {"name", "needs", "permissions", "runs-on", "environment", "concurrency",
            "outputs", "env", "defaults", "if", "steps", "timeout-minutes", "strategy",
            "continue-on-error", "container", "services", "uses", "with", "secrets"}
STEP_KEYS = {"id", "if", "name", "uses", "run", "shell", "with", "env",
             "continue-on-error", "timeout-minutes", "working-directory"}
CONTAINER_KEYS = {"image", "credentials", "env", "ports", "volumes", "options"}
CONTEXTS = {"github", "env", "vars", "job", "jobs", "steps", "runner", "secrets",
            "strategy", "matrix", "needs", "inputs"}
FUNCTIONS = {"always", "success", "failure", "cancelled", "contains", "startsWith",
             "endsWith", "format", "join", "toJSON", "fromJSON", "hashFiles"}
LITERALS = {"true", "false", "null"}
_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_PINNED = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}")
_EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_EXEC = re.compile(r"python3 trusted/ci/trigger\.py exec (?:[^\n]* )?--as-user [a-z_][a-z0-9_-]*"
                   r"(?: [^\n]*)?")
BODY = "github.event.comment.body"
CHECKOUT = "actions/checkout@"


class Lint:
    def __init__(self, name):
        self.name, self.findings = name, []

    def err(self, where, rule, msg):
        self.findings.append("%s: %s: [%s] %s" % (self.name, where or "(top)", rule, msg))


# ------------------------------------------------------------------ schema

def _expressions(value):
    """Every `${{ }}` body in a string (unclosed ones yield None)."""
    out = [m.group(1) for m in _EXPR.finditer(value)]
    if value.count("${{") != len(out):
        out.append(None)
    return out


def _idents(expr):
    """(name, is_call, follows_dot) for identifiers outside string literals."""
    expr = re.sub(r"'(?:[^']|'')*'", "''", expr)
    for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_-]*", expr):
        before = expr[:m.start()].rstrip()
        after = expr[m.end():].lstrip()
        yield m.group(0), after.startswith("("), before.endswith(".")


def _check_expr(lint, where, expr, job):
    if expr is None:
        lint.err(where, "schema", "`${{` without its `}}`")
        return
    for name, call, dotted in _idents(expr):
        if dotted:
            continue
        if call:
            if name.lower() not in {f.lower() for f in FUNCTIONS}:   # names ignore case
                lint.err(where, "schema", "unknown function %s()" % name)
        elif name.lower() not in CONTEXTS | LITERALS:
            lint.err(where, "schema", "unknown context %r" % name)
    if job is None:
        return
    for m in re.finditer(r"\bneeds\.([A-Za-z0-9_-]+)", expr):
        if m.group(1) not in job["needs"]:
            lint.err(where, "schema", "needs.%s: not in this job's needs" % m.group(1))
    for m in re.finditer(r"\bsteps\.([A-Za-z0-9_-]+)", expr):
        if m.group(1) not in job["step_ids"]:
            lint.err(where, "schema", "steps.%s: no earlier step has that id" % m.group(1))
    if re.search(r"\bmatrix\.", expr) and not job["matrix"]:
        lint.err(where, "schema", "matrix context in a job without strategy.matrix")


def _walk_strings(lint, where, value, job):
    if isinstance(value, str):
        bare = where.endswith(".if") and "${{" not in value    # if: is an expression
        for e in [value] if bare else _expressions(value):
            _check_expr(lint, where, e, job)
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk_strings(lint, "%s.%s" % (where, k), v, job)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _walk_strings(lint, "%s[%d]" % (where, i), v, job)


def _keys(lint, where, d, allowed):
    if not isinstance(d, dict):
        lint.err(where, "schema", "must be a mapping")
        return False
    for k in d:
        if k not in allowed:
            lint.err(where, "schema", "unknown key %r" % (k,))
    return True


def _permissions(lint, where, p):
    if p in ("read-all", "write-all"):
        return
    if not isinstance(p, dict):
        lint.err(where, "schema", "permissions must be a mapping, read-all or write-all")
        return
    for k, v in p.items():
        if k not in SCOPES:
            lint.err(where, "schema", "unknown permission scope %r" % (k,))
        if v not in ("read", "write", "none"):
            lint.err(where, "schema", "permission %s: %r is not read, write or none" % (k, v))


def _triggers(lint, on):
    if isinstance(on, str):
        on = {on: None}
    elif isinstance(on, list):
        on = {e: None for e in on}
    if not isinstance(on, dict) or not on:
        lint.err("on", "schema", "on: must name at least one event")
        return {}
    for e, cfg in on.items():
        if e not in EVENTS:
            lint.err("on", "schema", "unknown event %r" % (e,))
        if cfg is not None and not isinstance(cfg, (dict, list)):
            lint.err("on.%s" % e, "schema", "must be a mapping")
    return on


def _schema(lint, wf):
    if not _keys(lint, "", wf, TOP_KEYS):
        return None
    for k in ("on", "jobs"):
        if k not in wf:
            lint.err("", "schema", "missing %r" % k)
    on = _triggers(lint, wf.get("on"))
    if "permissions" in wf:
        _permissions(lint, "permissions", wf["permissions"])
    jobs = wf.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        lint.err("jobs", "schema", "jobs must be a non-empty mapping")
        return on
    _walk_strings(lint, "concurrency", wf.get("concurrency"), None)
    _walk_strings(lint, "env", wf.get("env"), None)
    for jid, job in jobs.items():
        where = "jobs.%s" % jid
        if not isinstance(jid, str) or not _ID.fullmatch(jid):
            lint.err(where, "schema", "job id must match [A-Za-z_][A-Za-z0-9_-]*")
        if not _keys(lint, where, job, JOB_KEYS):
            continue
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        for n in needs if isinstance(needs, list) else []:
            if n not in jobs or n == jid:
                lint.err(where, "schema", "needs %r: no such other job" % (n,))
        if "permissions" in job:
            _permissions(lint, where + ".permissions", job["permissions"])
        if "uses" not in job and "runs-on" not in job:
            lint.err(where, "schema", "missing 'runs-on'")
        if isinstance(job.get("container"), dict):
            _keys(lint, where + ".container", job["container"], CONTAINER_KEYS)
        strategy = job.get("strategy")
        if strategy is not None:
            _keys(lint, where + ".strategy", strategy, {"matrix", "fail-fast", "max-parallel"})
        ctx = {"needs": set(needs) if isinstance(needs, list) else set(), "step_ids": set(),
               "matrix": isinstance(strategy, dict) and "matrix" in strategy}
        for k, v in job.items():
            if k not in ("steps", "outputs"):
                _walk_strings(lint, "%s.%s" % (where, k), v, ctx)
        steps = job.get("steps")
        if "uses" in job:
            _walk_strings(lint, where + ".outputs", job.get("outputs"), ctx)
            continue
        if not isinstance(steps, list) or not steps:
            lint.err(where, "schema", "steps must be a non-empty list")
            continue
        for i, step in enumerate(steps):
            sw = "%s.steps[%d]" % (where, i)
            if not _keys(lint, sw, step, STEP_KEYS):
                continue
            if ("uses" in step) == ("run" in step):
                lint.err(sw, "schema", "a step has exactly one of 'uses' and 'run'")
            for k in ("uses", "run", "id", "name", "shell"):
                if k in step and not isinstance(step[k], str):
                    lint.err(sw, "schema", "%s must be a string" % k)
            _walk_strings(lint, sw, step, ctx)
            if "id" in step:
                if step["id"] in ctx["step_ids"]:
                    lint.err(sw, "schema", "duplicate step id %r" % step["id"])
                ctx["step_ids"].add(step["id"])
        _walk_strings(lint, where + ".outputs", job.get("outputs"), ctx)
    return on


# ------------------------------------------------------------------ rules

def _trusted_refs(on):
    refs = {"${{ github.event.pull_request.base.sha || github.sha }}"}
    if "pull_request" not in on:
        refs.add("${{ github.sha }}")
    return refs


def _body_places(lint, where, value, allowed):
    if isinstance(value, str):
        if BODY in value and not allowed:
            lint.err(where, "body-outside-env", "the comment body may only reach code "
                     "through env:")
    elif isinstance(value, dict):
        for k, v in value.items():
            _body_places(lint, "%s.%s" % (where, k), v, allowed or k in ("env", "if"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _body_places(lint, "%s[%d]" % (where, i), v, allowed)


def _rules(lint, wf, on):
    if "permissions" not in wf:
        lint.err("", "permissions-missing", "no top-level permissions: (use `permissions: {}`)")
    elif wf["permissions"] != {}:
        lint.err("permissions", "permissions-top", "top-level permissions must be {} "
                 "(grant per job)")
    if "pull_request_target" in on:
        lint.err("on", "pull-request-target", "pull_request_target runs fork code with a "
                 "write token; not allowed")
    if "issue_comment" in on:
        cfg = on["issue_comment"]
        if not isinstance(cfg, dict) or cfg.get("types") != ["created"]:
            lint.err("on.issue_comment", "comment-types", "issue_comment needs "
                     "`types: [created]` (edits must not start runs)")
    if on.keys() & {"pull_request", "issue_comment"}:
        c = wf.get("concurrency")
        if not isinstance(c, dict) or not c.get("group") or c.get("cancel-in-progress") is not True:
            lint.err("concurrency", "concurrency", "needs a concurrency group per pull "
                     "request with cancel-in-progress: true")
    for k, v in wf.items():
        if k != "jobs":
            _body_places(lint, k, v, k == "concurrency")
    trusted = _trusted_refs(on)
    for jid, job in (wf.get("jobs") or {}).items():
        where = "jobs.%s" % jid
        if not isinstance(job, dict):
            continue
        if "permissions" not in job:
            lint.err(where, "permissions-missing", "no job-level permissions:")
        for k, v in job.items():
            if k != "steps":
                _body_places(lint, "%s.%s" % (where, k), v, k in ("env", "if"))
        pr_code = False
        for i, step in enumerate(job.get("steps") or []):
            sw = "%s.steps[%d]" % (where, i)
            if not isinstance(step, dict):
                continue
            _body_places(lint, sw, {k: v for k, v in step.items() if k != "run"}, False)
            uses, run = step.get("uses"), step.get("run")
            if isinstance(uses, str) and not uses.startswith("./"):
                if uses.startswith("docker://"):
                    if not re.search(r"@sha256:[0-9a-f]{64}$", uses):
                        lint.err(sw, "unpinned-action", "%s: pin the image by digest" % uses)
                elif not _PINNED.fullmatch(uses):
                    lint.err(sw, "unpinned-action", "%s: pin to a full 40-hex commit id" % uses)
            if isinstance(uses, str) and uses.startswith(CHECKOUT):
                w = step.get("with") or {}
                if w.get("persist-credentials") is not False:
                    lint.err(sw, "persist-credentials", "checkout needs "
                             "`persist-credentials: false`")
                if w.get("path") == "trusted":
                    if w.get("ref") not in trusted:
                        lint.err(sw, "trusted-checkout-ref", "ref %r is not trusted here "
                                 "(allowed: %s)" % (w.get("ref"), ", ".join(sorted(trusted))))
                else:
                    pr_code = True
                    if "container" not in job:
                        lint.err(where, "pr-code-on-host", "PR code outside a container "
                                 "(the hosted runner's user has password-less sudo)")
                    _pr_job_token(lint, where, job)
            if isinstance(run, str):
                for e in _expressions(run):
                    if e is not None and re.search(r"\bgithub\s*\.\s*event\b", e):
                        lint.err(sw, "event-in-run", "${{%s}} inside run: (pass it "
                                 "through env:)" % e)
                    elif e is not None:
                        lint.err(sw, "expression-in-run", "${{%s}} inside run: (pass it "
                                 "through env:)" % e)
                if BODY in run:
                    lint.err(sw, "body-outside-env", "the comment body inside run:")
                if pr_code:
                    if re.search(r"(?<![\w-])sudo(?![\w-])", run):
                        lint.err(sw, "sudo-pr-code", "sudo in a step that runs PR code")
                    if not _EXEC.fullmatch(run.strip()):
                        lint.err(sw, "pr-code-as-root", "after the PR checkout, run only "
                                 "`python3 trusted/ci/trigger.py exec ... --as-user USER`")


def _pr_job_token(lint, where, job):
    perms = job.get("permissions")
    if perms == "write-all" or (isinstance(perms, dict) and "write" in perms.values()):
        lint.err(where, "pr-code-token", "a job holding PR code has a write scope")
    text = yaml.safe_dump(job)
    if re.search(r"\bsecrets\s*\.|\bgithub\s*\.\s*token\b", text):
        lint.err(where, "pr-code-token", "a job holding PR code uses secrets or github.token")


def lint_text(name, text):
    """Findings for one workflow's text (a list of strings; empty: clean)."""
    lint = Lint(name)
    try:
        wf = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        lint.err("", "schema", "not valid YAML: %s" % str(e).replace("\n", " "))
        return lint.findings
    if not isinstance(wf, dict):
        lint.err("", "schema", "a workflow is a mapping")
        return lint.findings
    on = _schema(lint, wf)
    if on is not None:
        _rules(lint, wf, on)
    return lint.findings


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    findings = []
    for path in argv[1:]:
        with open(path, encoding="utf-8") as f:
            findings += lint_text(path, f.read())
    for line in findings:
        print(line)
    print("lint_workflows: %d file(s), %d finding(s)" % (len(argv) - 1, len(findings)))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

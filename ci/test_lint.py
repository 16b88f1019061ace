#!/usr/bin/env python3
"""Tests for ci/lint_workflows.py: the committed workflows are clean, a
small good workflow is clean, and each schema check and each project rule
fires on a workflow that breaks it (and names the rule)."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import lint_workflows as lint  # noqa: E402

PIN = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"
GOOD = """\
name: t
on:
  issue_comment:
    types: [created]
permissions: {}
concurrency:
  group: t-${{ github.event.issue.number }}
  cancel-in-progress: true
jobs:
  gate:
    if: startsWith(github.event.comment.body, '!')
    runs-on: ubuntu-latest
    container: debian:12
    permissions:
      contents: read
    outputs:
      sha: ${{ steps.g.outputs.sha }}
    steps:
      - uses: PIN
        with:
          ref: ${{ github.sha }}
          path: trusted
          persist-credentials: false
      - id: g
        env:
          BODY: ${{ github.event.comment.body }}
        run: python3 trusted/ci/gate.py gate
  run:
    needs: gate
    runs-on: ubuntu-latest
    container: debian:12
    strategy:
      matrix:
        job: [test]
    permissions:
      contents: read
    steps:
      - uses: PIN
        with:
          ref: ${{ github.sha }}
          path: trusted
          persist-credentials: false
      - run: bash trusted/ci/setup_container.sh
      - id: pr
        uses: PIN
        with:
          ref: ${{ needs.gate.outputs.sha }}
          path: pr
          persist-credentials: false
      - env:
          JOB: ${{ matrix.job }}
          AT: ${{ steps.pr.outputs.commit }}
        run: python3 trusted/ci/trigger.py exec --job "$JOB" --dir pr --as-user kilnci
""".replace("PIN", PIN)

EXEC = 'python3 trusted/ci/trigger.py exec --job "$JOB" --dir pr --as-user kilnci'

# (rule id, [(old, new) replacements that break GOOD])
BAD = [
    ("permissions-missing", [("permissions: {}\n", "")]),
    ("permissions-missing", [("    permissions:\n      contents: read\n    outputs:",
                              "    outputs:")]),
    ("permissions-top", [("permissions: {}\n", "permissions: read-all\n")]),
    ("permissions-top", [("permissions: {}\n", "permissions:\n  contents: read\n")]),
    ("unpinned-action", [("      - uses: " + PIN + "\n        with:\n          ref: ${{ github.sha }}\n"
                          "          path: trusted\n          persist-credentials: false\n      - id: g",
                          "      - uses: actions/checkout@v4\n        with:\n          ref: ${{ github.sha }}\n"
                          "          path: trusted\n          persist-credentials: false\n      - id: g")]),
    ("unpinned-action", [("      - run: bash trusted/ci/setup_container.sh",
                          "      - uses: actions/setup-python@main")]),
    ("unpinned-action", [("      - run: bash trusted/ci/setup_container.sh",
                          "      - uses: actions/setup-python@0123456")]),
    ("unpinned-action", [("      - run: bash trusted/ci/setup_container.sh",
                          "      - uses: docker://alpine:3")]),
    ("event-in-run", [("python3 trusted/ci/gate.py gate",
                       'echo "${{ github.event.comment.body }}" | python3 trusted/ci/gate.py gate')]),
    ("event-in-run", [("python3 trusted/ci/gate.py gate",
                       "python3 trusted/ci/gate.py gate ${{ github.event.issue.title }}")]),
    ("event-in-run", [("python3 trusted/ci/gate.py gate",
                       "python3 trusted/ci/gate.py gate ${{github.event.pull_request.head.ref}}")]),
    ("expression-in-run", [("python3 trusted/ci/gate.py gate",
                            "python3 trusted/ci/gate.py gate ${{ github.head_ref }}")]),
    ("expression-in-run", [("--job \"$JOB\"", "--job ${{ matrix.job }}")]),
    ("body-outside-env", [("      - run: bash trusted/ci/setup_container.sh",
                           "      - uses: " + PIN + "\n        with:\n          path: trusted\n"
                           "          ref: ${{ github.sha }}\n          persist-credentials: false\n"
                           "          token: ${{ github.event.comment.body }}")]),
    ("body-outside-env", [("    outputs:\n      sha: ${{ steps.g.outputs.sha }}",
                           "    outputs:\n      sha: ${{ github.event.comment.body }}")]),
    ("sudo-pr-code", [(EXEC, "sudo " + EXEC)]),
    ("sudo-pr-code", [(EXEC, EXEC + "\n      - run: sudo -E make test")]),
    ("pr-code-as-root", [(EXEC, "make deps test")]),
    ("pr-code-as-root", [(EXEC, EXEC + "\n      - run: cd pr && make test")]),
    ("pr-code-as-root", [(EXEC, "python3 pr/ci/trigger.py exec --job x --dir pr --as-user kilnci")]),
    ("pr-code-as-root", [(EXEC, "python3 trusted/ci/trigger.py exec --job x --dir pr")]),
    ("pr-code-as-root", [(EXEC, EXEC + "; make test")]),
    ("pr-code-on-host", [("    container: debian:12\n    strategy:", "    strategy:")]),
    ("pr-code-token", [("    permissions:\n      contents: read\n    steps:\n      - uses: " + PIN +
                        "\n        with:\n          ref: ${{ github.sha }}\n          path: trusted\n"
                        "          persist-credentials: false\n      - run: bash",
                        "    permissions:\n      contents: write\n    steps:\n      - uses: " + PIN +
                        "\n        with:\n          ref: ${{ github.sha }}\n          path: trusted\n"
                        "          persist-credentials: false\n      - run: bash")]),
    ("pr-code-token", [("          AT: ${{ steps.pr.outputs.commit }}",
                        "          AT: ${{ steps.pr.outputs.commit }}\n"
                        "          TOKEN: ${{ secrets.DEPLOY_KEY }}")]),
    ("pr-code-token", [("          AT: ${{ steps.pr.outputs.commit }}",
                        "          AT: ${{ steps.pr.outputs.commit }}\n"
                        "          TOKEN: ${{ github.token }}")]),
    ("persist-credentials", [("          path: pr\n          persist-credentials: false\n",
                              "          path: pr\n")]),
    ("persist-credentials", [("          path: pr\n          persist-credentials: false\n",
                              "          path: pr\n          persist-credentials: true\n")]),
    ("trusted-checkout-ref", [("          ref: ${{ needs.gate.outputs.sha }}\n          path: pr",
                               "          ref: ${{ needs.gate.outputs.sha }}\n          path: trusted")]),
    ("trusted-checkout-ref", [("on:\n  issue_comment:\n    types: [created]\n",
                               "on:\n  issue_comment:\n    types: [created]\n  pull_request:\n")]),
    ("comment-types", [("    types: [created]\n", "")]),
    ("comment-types", [("    types: [created]\n", "    types: [created, edited]\n")]),
    ("concurrency", [("concurrency:\n  group: t-${{ github.event.issue.number }}\n"
                      "  cancel-in-progress: true\n", "")]),
    ("concurrency", [("  cancel-in-progress: true\n", "  cancel-in-progress: false\n")]),
    ("pull-request-target", [("on:\n  issue_comment:\n", "on:\n  pull_request_target:\n"
                              "  issue_comment:\n")]),
    # Schema checks.
    ("schema", [("name: t\n", "name: t\nnmae: typo\n")]),
    ("schema", [("name: t\n", "name: t\nname: twice\n")]),
    ("schema", [("    runs-on: ubuntu-latest\n    container: debian:12\n    permissions:\n"
                 "      contents: read\n    outputs:",
                 "    container: debian:12\n    permissions:\n      contents: read\n    outputs:")]),
    ("schema", [("      - id: g\n", "      - id: g\n        uses: " + PIN + "\n")]),
    ("schema", [("      - id: g\n", "      - id: g\n        shel: bash\n")]),
    ("schema", [("    needs: gate\n", "    needs: gat\n")]),
    ("schema", [("${{ steps.g.outputs.sha }}", "${{ steps.h.outputs.sha }}")]),
    ("schema", [("${{ needs.gate.outputs.sha }}", "${{ needs.other.outputs.sha }}")]),
    ("schema", [("${{ github.sha }}", "${{ gihtub.sha }}")]),
    ("schema", [("startsWith(github", "beginsWith(github")]),
    ("schema", [("if: startsWith(github.event", "if: startsWith(gthub.event")]),
    ("schema", [("${{ matrix.job }}", "${{ matrix.job }")]),
    ("schema", [("    strategy:\n      matrix:\n        job: [test]\n", "")]),
    ("schema", [("      contents: read\n    outputs:", "      contents: admin\n    outputs:")]),
    ("schema", [("      contents: read\n    outputs:", "      code: read\n    outputs:")]),
    ("schema", [("  issue_comment:\n", "  issue_coment:\n")]),
    ("schema", [("jobs:\n  gate:", "jobs:\n  1gate:")]),
]


def lint_of(text):
    return lint.lint_text("t.yml", text)


class Lint(unittest.TestCase):
    def test_committed_workflows_are_clean(self):
        d = os.path.join(ROOT, ".github", "workflows")
        names = sorted(n for n in os.listdir(d) if n.endswith((".yml", ".yaml")))
        self.assertEqual(names, ["comment.yml", "test.yml"])
        for n in names:
            with open(os.path.join(d, n)) as f:
                self.assertEqual(lint.lint_text(n, f.read()), [])

    def test_good_is_clean(self):
        self.assertEqual(lint_of(GOOD), [])

    def test_each_rule_fires(self):
        for rule, edits in BAD:
            text = GOOD
            for old, new in edits:
                self.assertIn(old, text, "the test's edit no longer applies")
                text = text.replace(old, new, 1)
            with self.subTest(rule=rule, edit=edits[0][1][:60]):
                findings = lint_of(text)
                self.assertTrue(any("[%s]" % rule in f for f in findings), findings)

    def test_every_rule_has_a_test(self):
        rules = {line.split()[0] for line in lint.__doc__.split("each with an id:")[1]
                 .split("A step")[0].strip().splitlines() if line[:3].strip()}
        self.assertEqual(rules, {r for r, _ in BAD} - {"schema"})

    def test_yaml_details(self):
        self.assertIn("[schema] not valid YAML", lint_of("on: [\n")[0])
        self.assertIn("a workflow is a mapping", lint_of("- a\n")[0])
        # `on` must stay a key named "on" (YAML 1.1 would read it as true).
        self.assertEqual(lint.yaml.load("on: push\nyes: no\n", Loader=lint._Loader),
                         {"on": "push", "yes": "no"})

    def test_cli(self):
        path = os.path.join(ROOT, ".github", "workflows", "comment.yml")
        p = subprocess.run([sys.executable, os.path.join(HERE, "lint_workflows.py"), path],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("1 file(s), 0 finding(s)", p.stdout)
        bad = os.path.join(ROOT, "build", "lint-test-bad.yml")
        os.makedirs(os.path.dirname(bad), exist_ok=True)
        with open(bad, "w") as f:
            f.write(GOOD.replace("permissions: {}\n", ""))
        try:
            p = subprocess.run([sys.executable, os.path.join(HERE, "lint_workflows.py"), bad],
                               capture_output=True, text=True)
        finally:
            os.unlink(bad)
        self.assertEqual(p.returncode, 1)
        self.assertIn("[permissions-missing]", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=1)

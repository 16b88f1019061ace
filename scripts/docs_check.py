#!/usr/bin/env python3
"""docs_check.py KILN -- check that docs/*.md say what the code does.

Usage: python3 scripts/docs_check.py build/kiln [--python PY]
       (`make docs-check` passes --python $(PYTHON_SYS))

Run from the repository root (or anywhere: paths are taken relative to the
repository that holds this script).  Python 3 standard library only.  Exit
status 0 when every check passes, 1 with a diff for each mismatch, 2 on a
usage error.

Conventions, for every docs/*.md file:

1. Console examples.  A fenced block whose info string is exactly `console`
   holds worked examples:

       ```console
       $ KILN_ENABLE=fast_math build/kiln options --level kernel
       enable=fast_math
       $ build/kiln options --enable 'fast_math(1)'
       kiln options: execute enable[0]: invalid argument at byte 9: ...
       [exit 1]
       ```

   - A line starting with "$ " is a command.  A command line ending in "\\"
     continues on the next line (as in the shell).
   - The lines after a command, up to the next "$ " line or the end of the
     block, are its expected output: stdout and stderr as one stream
     (the command runs as `bash -c CMD` with stderr joined to stdout),
     compared byte for byte.  An empty line stands for an empty output line.
   - A last expected line "[exit N]" says that the command exits with
     status N; without it the command must exit 0.
   - Every command runs in the repository root with a clean environment
     (PATH, HOME and LC_ALL=C only: no KILN_* variable unless the command
     sets it), and every word `build/kiln` is replaced by the KILN path
     given on the command line.
   Blocks with any other info string (or none) are never run.

2. Marked tables, checked against the JSON the tool prints:
   - between <!-- option-catalogue:begin --> and <!-- option-catalogue:end -->
     (required in docs/options.md): one row per option of
     `KILN options --catalogue-json`, in catalogue order:
     | `NAME` | SET | ARGUMENT | LEVEL | IMPLEMENTED | DESCRIPTION |
     where ARGUMENT is `none`, `integer (default D)` or
     `names: W1, W2, ...` (the vocabulary), IMPLEMENTED is yes/no and
     DESCRIPTION is the catalogue's text;
   - between <!-- option-edge-cases:begin --> and <!-- option-edge-cases:end -->:
     | SOURCE | SET | INPUT | RESULT |
     SOURCE is `env` (the string is the set's KILN_* variable) or `execute`
     (the string is the one element of `--enable`/`--disable`); INPUT is a
     code span taken literally, or (empty); RESULT is a code span with the
     canonical text, (empty) for empty canonical text, or
     `KIND at OFFSET, token TOKEN` with KIND one of syntax, unknown,
     argument, element and TOKEN a code span or (empty).  Each row is run
     through `KILN options` and the message on stderr must report that
     kind, source, offset and token;
   - between <!-- op-table:begin --> and <!-- op-table:end --> (optional):
     | VALUE | NAME | ARITY | DTYPES | RESULT | REDUCE | from
     `KILN fusion --op-table-json`
     (the format is described in docs/fusion-format.md).
   The header row and the | --- | row of each table are skipped.

3. When testgen/check_catalogue.py exists, it is run with KILN too: the
   vector generator's hand-written copy of the catalogue must not drift.

4. Python examples.  Fenced blocks whose info string is exactly `pycon`, in
   docs/*.md and README.md, are doctests (">>> " and "... " lines, then the
   expected output, compared exactly by the standard library's doctest).
   The blocks of one file run in order in one interpreter session (PY,
   default: this interpreter), from the repository root, with the clean
   environment above plus PYTHONPATH=python and KILN_LIBRARY=the
   libkiln.so next to KILN.

5. References.  In docs/*.md, README.md and the other README.md files of
   the tree, every relative Markdown link [text](PATH#ANCHOR) must name a
   file that exists (relative to the linking file), and ANCHOR a heading of
   it (GitHub's slugs); an in-page link (#ANCHOR) a heading of the page.
   Every other mention of a file name ending in .md outside code (fenced
   blocks and `code spans`, which show commands and output files) must
   name an existing file, relative to the linking file, its directory's docs/, or the
   repository root (so a reference to a document that does not exist,
   such as a "coord.md", fails).
"""

import difflib
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KILN_WORD = re.compile(r"(?<![\w/.-])build/kiln(?![\w/.-])")
FENCE = re.compile(r"^(```+|~~~+)\s*(\S*)\s*$")
KIND_WORDS = {"syntax": "syntax error", "unknown": "unknown option",
              "argument": "invalid argument", "element": "invalid element"}
ENV_VARS = {"enable": "KILN_ENABLE", "disable": "KILN_DISABLE",
            "dump": "KILN_DUMP"}

failures = []


def fail(where, what, expected=None, got=None):
    text = "%s: %s" % (where, what)
    if expected is not None:
        diff = difflib.unified_diff(
            expected.splitlines(True), got.splitlines(True),
            "expected (docs)", "actual (code)")
        text += "\n" + "".join(
            d if d.endswith("\n") else d + "\n\\ no newline\n" for d in diff)
    failures.append(text)


def clean_env(extra=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": os.environ.get("HOME", "/tmp"), "LC_ALL": "C"}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update(extra or {})
    return env


def run(argv, env=None):
    p = subprocess.run(argv, cwd=ROOT, env=clean_env(env),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return (p.returncode, p.stdout.decode("utf-8", "surrogateescape"),
            p.stderr.decode("utf-8", "surrogateescape"))


def tool_json(kiln, args, where):
    rc, out, err = run([kiln] + args)
    if rc != 0:
        fail(where, "`kiln %s` failed (exit %d): %s" % (" ".join(args), rc,
                                                      err.strip()))
        return None
    try:
        return json.loads(out)
    except ValueError as e:
        fail(where, "`kiln %s` printed invalid JSON: %s" % (" ".join(args), e))
        return None


# ------------------------------------------------------------ examples

def console_blocks(path, kind="console"):
    """Yield (line number, [lines]) for every ```KIND block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2), i + 1
        j = start
        while j < len(lines) and not lines[j].startswith(fence[:3]):
            j += 1
        if info == kind:
            yield start + 1, lines[start:j]
        i = j + 1


def check_examples(path, kiln):
    rel = os.path.relpath(path, ROOT)
    count = 0
    for first, block in console_blocks(path):
        i = 0
        while i < len(block):
            if not block[i].startswith("$ "):
                if block[i].strip():
                    fail("%s:%d" % (rel, first + i),
                         "console block line is not under a `$ ` command")
                i += 1
                continue
            lineno = first + i
            cmd = block[i][2:]
            while cmd.endswith("\\") and i + 1 < len(block):
                i += 1
                cmd = cmd + "\n" + block[i]  # bash joins "\\\n"
            i += 1
            exp = []
            while i < len(block) and not block[i].startswith("$ "):
                exp.append(block[i])
                i += 1
            want_rc = 0
            if exp and re.fullmatch(r"\[exit \d+\]", exp[-1]):
                want_rc = int(exp[-1][6:-1])
                exp = exp[:-1]
            expected = "".join(l + "\n" for l in exp)
            real = KILN_WORD.sub(kiln.replace("\\", "\\\\"), cmd)
            p = subprocess.run(["bash", "-c", real], cwd=ROOT, env=clean_env(),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            got = p.stdout.decode("utf-8", "surrogateescape")
            where = "%s:%d: $ %s" % (rel, lineno, cmd.replace("\n", " "))
            if got != expected:
                fail(where, "output differs", expected, got)
            if p.returncode != want_rc:
                fail(where, "exit status %d, docs say %d" % (p.returncode,
                                                              want_rc))
            count += 1
    return count


# ------------------------------------------------------ python examples

PYCON_RUNNER = r"""
import doctest, json, sys
globs = {"__name__": "__docs__"}
failed = 0
for name, lineno, text in json.load(sys.stdin):
    test = doctest.DocTestParser().get_doctest(text, globs, name, name, lineno)
    runner = doctest.DocTestRunner(verbose=False)
    failed += runner.run(test, out=sys.stdout.write, clear_globs=False).failed
    globs = test.globs  # a DocTest works on a copy: carry it on
sys.exit(1 if failed else 0)
"""


def check_pycon(path, python, kiln):
    rel = os.path.relpath(path, ROOT)
    blocks = [(rel, first - 1, "\n".join(b) + "\n")
              for first, b in console_blocks(path, "pycon")]
    if not blocks:
        return 0
    env = clean_env({"PYTHONPATH": os.path.join(ROOT, "python"),
                     "KILN_LIBRARY": os.path.join(os.path.dirname(kiln),
                                                  "libkiln.so")})
    p = subprocess.run([python, "-c", PYCON_RUNNER], cwd=ROOT, env=env,
                       input=json.dumps(blocks).encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode != 0:
        fail(rel, "Python examples failed (%s):\n%s" % (python, out))
    return sum(t.count(">>> ") for _, _, t in blocks)


# --------------------------------------------------------------- tables

def marked_rows(path, name):
    """Rows (lists of cells) between the markers, or None if absent."""
    text = open(path, encoding="utf-8").read().split("\n")
    begin, end = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
    try:
        b = next(i for i, l in enumerate(text) if l.strip() == begin)
        e = next(i for i, l in enumerate(text) if l.strip() == end and i > b)
    except StopIteration:
        return None
    rows = []
    for lineno, line in enumerate(text[b + 1:e], b + 2):
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in split_row(line)]
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        rows.append((lineno, cells))
    return rows[1:] if rows else rows  # drop the header row


def split_row(line):
    """Split a table row at "|" outside code spans."""
    cells, cur, in_code = [], "", False
    for ch in line.strip()[1:]:
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(cur)
            cur = ""
        else:
            cur += ch
    return cells


def code_or_empty(cell):
    if cell == "(empty)":
        return ""
    m = re.fullmatch(r"`(.*)`", cell)
    return None if m is None else m.group(1)


def compare_rows(where, code_rows, doc_rows):
    """code_rows: rows rendered from the tool's JSON; doc_rows: as written."""
    code = "".join("| " + " | ".join(r) + " |\n" for r in code_rows)
    docs = "".join("| " + " | ".join(c) + " |\n" for _, c in doc_rows)
    if docs != code:
        fail(where, "table differs from the code", docs, code)


def check_catalogue(kiln):
    path = os.path.join(ROOT, "docs", "options.md")
    where = "docs/options.md (option-catalogue)"
    rows = marked_rows(path, "option-catalogue") if os.path.exists(path) else None
    if rows is None:
        fail(where, "no <!-- option-catalogue:begin/end --> table")
        return
    cat = tool_json(kiln, ["options", "--catalogue-json"], where)
    if cat is None:
        return
    want = []
    for o in cat["options"]:
        if o["arg"] == "none":
            arg = "none"
        elif o["arg"] == "int":
            arg = "integer (default %d)" % o["default"]
        else:
            arg = "names: " + ", ".join(o["vocabulary"])
        want.append(["`%s`" % o["name"], o["set"], arg, o["level"],
                     "yes" if o["implemented"] else "no", o["description"]])
    compare_rows(where, want, rows)


def escape_token(tok):
    """The message's quoting of a token (runtime/options.c, quote())."""
    out = ""
    for b in tok.encode("utf-8", "surrogateescape"):
        if b < 0x20 or b >= 0x7f or b in (0x27, 0x5c):
            out += "\\x%02x" % b
        else:
            out += chr(b)
    return "'" + out + "'"


def check_edge_cases(kiln):
    path = os.path.join(ROOT, "docs", "options.md")
    rows = marked_rows(path, "option-edge-cases") if os.path.exists(path) else None
    if rows is None:
        return 0
    for lineno, cells in rows:
        where = "docs/options.md:%d" % lineno
        if len(cells) != 4:
            fail(where, "edge-case row needs 4 cells: %r" % cells)
            continue
        source, set_, inp, result = cells
        inp = code_or_empty(inp)
        if source not in ("env", "execute") or set_ not in ENV_VARS or \
                inp is None or (source == "execute" and set_ == "dump"):
            fail(where, "bad edge-case row: %r" % cells)
            continue
        if source == "env":
            argv, env = [kiln, "options"], {ENV_VARS[set_]: inp}
            src = ENV_VARS[set_]
        else:
            argv, env = [kiln, "options", "--%s=%s" % (set_, inp)], {}
            src = "execute %s[0]" % set_
        p = subprocess.run(argv, cwd=ROOT, env=clean_env(env),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = p.stdout.decode("utf-8", "surrogateescape")
        err = p.stderr.decode("utf-8", "surrogateescape")
        canon = code_or_empty(result)
        if canon is not None:
            if p.returncode != 0 or out != canon + "\n":
                fail(where, "%s %s %r: docs say %r, got exit %d, %r %r" % (
                    source, set_, inp, canon, p.returncode, out, err.strip()))
            continue
        m = re.fullmatch(r"(syntax|unknown|argument|element) at (\d+), "
                         r"token (`.*`|\(empty\))", result)
        if m is None:
            fail(where, "bad result cell %r" % result)
            continue
        tok = code_or_empty(m.group(3))
        frag = "kiln options: %s: %s at byte %s: %s" % (
            src, KIND_WORDS[m.group(1)], m.group(2), escape_token(tok))
        if p.returncode != 1 or out != "" or not err.startswith(frag):
            fail(where, "%s %s %r: docs say %r, got exit %d, %r %r" % (
                source, set_, inp, frag, p.returncode, out, err.strip()))
    return len(rows)


def check_op_table(kiln):
    n = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        rows = marked_rows(path, "op-table")
        if rows is None:
            continue
        where = "%s (op-table)" % os.path.relpath(path, ROOT)
        ops = tool_json(kiln, ["fusion", "--op-table-json"], where)
        if ops is None:
            continue
        want = [[str(o["value"]), o["name"], str(o["arity"]),
                 ", ".join(o["dtypes"]), o["result"], o["reduce"]]
                for o in ops["ops"]]
        compare_rows(where, want, rows)
        n += 1
    return n


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MD_NAME = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)\b")


def slugs(path):
    """GitHub's anchors of the headings of a Markdown file."""
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line.rstrip("\n")):
            fence = not fence
            continue
        m = re.match(r"(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if fence or not m:
            continue
        s = re.sub(r"[^\w\- ]", "", m.group(2).strip().lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def link_files():
    files = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    for extra in ("README.md", "conformance/examples/README.md",
                  "testgen/README.md"):
        if os.path.exists(os.path.join(ROOT, extra)):
            files.append(os.path.join(ROOT, extra))
    return files


def check_links():
    n = 0
    for path in link_files():
        rel = os.path.relpath(path, ROOT)
        here = os.path.dirname(path)
        fence = False
        for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
            if FENCE.match(line.rstrip("\n")):
                fence = not fence
            if fence:
                continue
            line = re.sub(r"`[^`]*`", "", line)
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue            # a URL
                n += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(here, file_part)) \
                    if file_part else path
                if not os.path.exists(dest):
                    fail("%s:%d" % (rel, lineno), "link to a missing file: %s"
                         % target)
                elif anchor and dest.endswith(".md") and \
                        anchor not in slugs(dest):
                    fail("%s:%d" % (rel, lineno), "link to a missing heading: "
                         "%s (no '#%s' in %s)" % (target, anchor,
                                                   os.path.relpath(dest, ROOT)))
            for name in MD_NAME.findall(LINK.sub("", line)):
                if re.search(r"https?://\S*" + re.escape(name), line):
                    continue
                n += 1
                where = [os.path.join(here, name), os.path.join(ROOT, name),
                         os.path.join(here, "docs", name),
                         os.path.join(ROOT, "docs", name)]
                if not any(os.path.exists(w) for w in where):
                    fail("%s:%d" % (rel, lineno), "mention of a missing "
                         "document: %s" % name)
    return n


def check_testgen_catalogue(kiln):
    """testgen mirrors the catalogue by hand; its own checker finds drift."""
    script = os.path.join(ROOT, "testgen", "check_catalogue.py")
    if not os.path.exists(script):
        return 0
    p = subprocess.run([sys.executable, script, kiln], cwd=ROOT,
                       env=clean_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if p.returncode != 0:
        fail("testgen/check_catalogue.py", "testgen's catalogue copy differs "
             "from the code:\n" + p.stdout.decode("utf-8", "replace"))
    return 1


def main():
    args = sys.argv[1:]
    python = sys.executable
    if len(args) == 3 and args[1] == "--python":
        python = args[2]
        args = args[:1]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(args) == 1 else 2
    kiln = os.path.abspath(args[0])
    if not os.access(kiln, os.X_OK):
        print("docs-check: %s is not an executable" % args[0],
              file=sys.stderr)
        return 2
    check_catalogue(kiln)
    edges = check_edge_cases(kiln)
    tables = check_op_table(kiln)
    mirrors = check_testgen_catalogue(kiln)
    links = check_links()
    examples = 0
    pycon = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        examples += check_examples(path, kiln)
        pycon += check_pycon(path, python, kiln)
    pycon += check_pycon(os.path.join(ROOT, "README.md"), python, kiln)
    for f in failures:
        print("docs-check: " + f, file=sys.stderr)
    if failures:
        print("docs-check: %d mismatch(es)" % len(failures), file=sys.stderr)
        return 1
    print("docs-check: catalogue ok, %d edge cases, %d op table(s), "
          "%d examples, %d Python examples, %d catalogue mirror(s), "
          "%d references: all match"
          % (edges, tables, examples, pycon, mirrors, links))
    return 0


if __name__ == "__main__":
    sys.exit(main())

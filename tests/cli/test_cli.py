#!/usr/bin/env python3
"""test_cli.py KILN PLUGIN -- the command line end to end (make test-cli).

KILN is build/kiln, PLUGIN build/plugins/libkiln_test_plugin.so.  Python 3
standard library only; runs from anywhere (paths are taken relative to the
repository holding this file).  Every test runs; the exit status is 1 when
any fails, with one line per failure.

What is checked (docs/runtime.md, "Command line"; docs/conformance.md,
"Reports"):
  - reports made from vector files full of hostile strings: the JUnit file
    parses with a real XML parser (xml.etree) and holds exactly the
    elements and strings expected; the TAP stream has exactly its plan and
    its test lines; every Markdown table row has the table's column count;
  - report files are replaced, never rewritten in place; two `kiln
    conform` writing the same paths at once leave one complete report;
  - output paths are checked before anything runs; `run --out` creates
    its directory;
  - `--opt=value` and `--opt value` in every subcommand; precise usage
    errors naming the option and --help; --help of every subcommand lists
    every option it accepts;
  - on failure nothing reaches stdout;
  - `run --info`, f16/bf16 values, %name binding through the parser, a
    `--backend NAME.so` in the current directory, the CUDA header check.
"""
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = 'tests/conformance_fixtures'
KILN = PLUGIN = None


def run(*args, cwd=ROOT, timeout=600, env=None):
    """(exit status, stdout, stderr) of KILN ARGS."""
    p = subprocess.run([KILN] + list(args), cwd=cwd, capture_output=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def tmpdir():
    return tempfile.mkdtemp(prefix='kiln-cli-test-')


# ------------------------------------------------------------ report checks

ALLOWED_XML = {'testsuites', 'testsuite', 'properties', 'property',
               'testcase', 'failure', 'skipped'}


def xml_clean(s):
    """What an XML 1.0 report can carry of s (report.c, xml_put)."""
    out = []
    for ch in s:
        o = ord(ch)
        if (o < 0x20 and ch not in '\t\n\r') or o in (0xfffe, 0xffff):
            out.append('\ufffd')
        else:
            out.append(ch)
    return ''.join(out)


def tap_visible(s):
    """A TAP description as report.c writes it, before TAP's own escapes."""
    out = []
    for ch in s:
        o = ord(ch)
        out.append('\\x%02x' % o if o < 0x20 or 0x7f <= o <= 0x9f else ch)
    return ''.join(out)


def tap_unescape(desc):
    """TAP description -> (text, directive or None): '\\\\' and '\\#' are
    escapes; the first unescaped '#' starts the directive."""
    text, i = [], 0
    while i < len(desc):
        c = desc[i]
        if c == '\\' and i + 1 < len(desc) and desc[i + 1] in '\\#':
            text.append(desc[i + 1])
            i += 2
            continue
        if c == '#':
            return ''.join(text), desc[i + 1:].strip()
        text.append(c)
        i += 1
    return ''.join(text), None


def yaml_dq(s):
    """Decode a YAML double-quoted scalar body (the escapes report.c uses)."""
    def rep(m):
        e = m.group(1)
        return {'n': '\n', '\\': '\\', '"': '"', 't': '\t'}.get(e[0]) or chr(int(e[1:], 16))
    return re.sub(r'\\(x[0-9a-f]{2}|u[0-9a-f]{4}|[n\\"t])', rep, s)


def parse_tap(text):
    """[(ok, number, description, yaml message or None)]; checks the plan
    and that nothing else is in the stream."""
    lines = text.split('\n')
    check(lines[0] == 'TAP version 13', 'TAP: first line %r' % lines[0])
    m = re.fullmatch(r'1\.\.(\d+)', lines[1])
    check(m is not None, 'TAP: plan line %r' % lines[1])
    planned = int(m.group(1))
    tests, i = [], 2
    while i < len(lines):
        line = lines[i]
        if line == '' and i == len(lines) - 1:
            break
        if line.startswith('# ') and len(tests) == planned:
            i += 1  # the summary diagnostics after the last test line
            continue
        m = re.fullmatch(r'(ok|not ok) (\d+) - (.*)', line)
        check(m is not None, 'TAP: unexpected line %d: %r' % (i + 1, line))
        msg = None
        if m.group(1) == 'not ok':
            check(lines[i + 1] == '  ---', 'TAP: no YAML block after %r' % line)
            y = re.fullmatch(r'  message: "((?:[^"\\]|\\.)*)"', lines[i + 2])
            check(y is not None, 'TAP: bad message line %r' % lines[i + 2])
            msg = yaml_dq(y.group(1))
            check(lines[i + 3] == '  severity: fail' and lines[i + 4] == '  ...',
                  'TAP: bad YAML block after %r' % line)
            i += 4
        tests.append((m.group(1) == 'ok', int(m.group(2)), m.group(3), msg))
        i += 1
    check([t[1] for t in tests] == list(range(1, int(lines[1][3:]) + 1)),
          'TAP: plan %s but test numbers %s' % (lines[1], [t[1] for t in tests]))
    return tests


def md_cells(line):
    """Cells of a Markdown table row ('\\' escapes the next character)."""
    cells, cur, i = [], [], 0
    while i < len(line):
        if line[i] == '\\' and i + 1 < len(line):
            cur.append(line[i:i + 2])
            i += 2
            continue
        if line[i] == '|':
            cells.append(''.join(cur))
            cur = []
        else:
            cur.append(line[i])
        i += 1
    cells.append(''.join(cur))
    return cells[1:-1]  # text outside the outer pipes


def md_tables(text):
    """{heading: [rows as cell lists]} with every row checked to have the
    header's column count; no raw '<' and no control character anywhere."""
    check(re.search(r'(?<!\\)<', text) is None, 'Markdown: raw "<" in %r' % text)
    check(re.search(r'[\x00-\x09\x0b-\x1f\x7f]', text) is None,
          'Markdown: a control character')
    tables, heading, rows = {}, None, None
    for line in text.split('\n'):
        if line.startswith('## '):
            heading = line[3:]
            continue
        if line.startswith('|'):
            cells = md_cells(line)
            if rows is None:
                rows, ncol = [], len(cells)
                tables[heading] = rows
                continue
            check(len(cells) == ncol, 'Markdown: %d cells, the table has %d: %r'
                  % (len(cells), ncol, line))
            if not re.fullmatch(r'\|(:?-+:?\|)+', line):  # not the |---| row
                rows.append(cells)
            continue
        rows = None
    return tables


def validate_reports(d, ids_of_run):
    """Each of the three reports in d is complete and comes from exactly
    one run (ids_of_run: the test ids of each run).  Files are replaced
    one by one, so two concurrent runs may each leave some of the three."""
    root = ET.parse(os.path.join(d, 'r.xml')).getroot()
    cases = root.findall('testsuite/testcase')
    check(int(root.get('tests')) == len(cases), 'JUnit: tests=%s but %d testcases'
          % (root.get('tests'), len(cases)))
    xml_ids = {c.get('name').split(':')[0] for c in cases}
    tap = parse_tap(open(os.path.join(d, 'r.tap'), encoding='utf-8').read())
    tap_ids = {t[2].split(' ')[0] for t in tap}
    md = open(os.path.join(d, 'r.md'), encoding='utf-8').read()
    m = re.search(r'\((\d+) tests\)', md)
    tables = md_tables(md)
    md_ids = {r[0].strip() for r in tables.get('Failures', []) + tables.get('Skipped', [])}
    check(xml_ids in ids_of_run, 'JUnit: not the tests of one run')
    check(tap_ids in ids_of_run and len(tap) == len(tap_ids), 'TAP: not the tests of one run')
    n = int(m.group(1)) if m else -1
    k = [i for i, ids in enumerate(ids_of_run) if md_ids <= ids and len(ids) == n]
    check(len(k) == 1, 'Markdown: not the report of one run')


def test_hostile_reports():
    d = tmpdir()
    rc, out, err = run('conform', '--backend', 'ref', '--vectors', FIX + '/hostile',
                       '--junit', d + '/r.xml', '--tap', d + '/r.tap', '--report', d + '/r.md')
    check(rc == 1, 'rc %d: %s' % (rc, err))
    num = json.load(open(os.path.join(ROOT, FIX, 'hostile/numerics.json')))
    oth = json.load(open(os.path.join(ROOT, FIX, 'hostile/other.json')))
    cat = oth['category']
    comments = [('numerics/%d' % t['tcId'], t['comment']) for t in num['testGroups'][0]['tests']]
    for t in oth['testGroups'][0]['tests']:
        # the id buffer holds 95 bytes: the cut falls inside a character
        raw = ('%s/%d' % (cat, t['tcId'])).encode()[:95]
        check(len(raw) == 95, 'fixture category too short')
        comments.append((raw.decode('utf-8', 'replace'), t['comment']))
    check(sum(k.endswith('\ufffd') for k, _ in comments) == 2,
          'fixture: ids are not cut mid-character')
    for name in ('r.xml', 'r.tap', 'r.md'):
        open(os.path.join(d, name), encoding='utf-8').read()  # strict UTF-8

    # JUnit: a real XML parser; only our elements; every string intact
    root = ET.parse(os.path.join(d, 'r.xml')).getroot()
    tags = {e.tag for e in root.iter()}
    check(tags <= ALLOWED_XML, 'JUnit: foreign elements %s' % (tags - ALLOWED_XML))
    check((root.get('tests'), root.get('failures'), root.get('skipped')) == ('5', '2', '2'),
          'JUnit: counts %s' % root.attrib)
    suites = root.findall('testsuite')
    check([s.get('name') for s in suites] == ['numerics', xml_clean(cat)],
          'JUnit: suite names %r' % [s.get('name') for s in suites])
    names = [c.get('name') for c in root.iter('testcase')]
    want = ['%s: %s' % (xml_clean(i), xml_clean(c)) for i, c in comments]
    check(names == want, 'JUnit: testcase names\n%r\n%r' % (names, want))
    check([c.get('classname') for c in root.iter('testcase')] ==
          ['numerics'] * 3 + [xml_clean(cat)] * 2, 'JUnit: classnames')
    fails = root.findall('.//failure')
    check(len(fails) == 2 and all(f.get('message') == f.text for f in fails),
          'JUnit: failure message and text differ')
    check("'0x<evil/>|\nok 998 - forged # SKIP'" in fails[0].get('message'),
          'JUnit: message %r' % fails[0].get('message'))
    check(len(root.findall('.//skipped')) == 2, 'JUnit: skipped elements')

    # TAP: exactly the plan and the five test lines
    tests = parse_tap(open(os.path.join(d, 'r.tap'), encoding='utf-8').read())
    check([t[0] for t in tests] == [True, False, False, True, True], 'TAP: statuses')
    for (ok, n, desc, msg), (tid, comment) in zip(tests, comments):
        text, directive = tap_unescape(desc)
        want = '%s %s' % (tap_visible(tid), tap_visible(comment))
        check(text.rstrip() == want.rstrip(), 'TAP %d: description\n%r\n%r' % (n, text, want))
        if n <= 3:
            check(directive is None, 'TAP %d: a forged directive %r' % (n, directive))
        else:
            check(directive.startswith('SKIP category'), 'TAP %d: directive %r' % (n, directive))
    check("'0x<evil/>|\nok 998 - forged # SKIP'" in tests[1][3], 'TAP: YAML message %r' % tests[1][3])

    # Markdown: every row has its table's column count
    tables = md_tables(open(os.path.join(d, 'r.md'), encoding='utf-8').read())
    check(len(tables['Categories']) == 2 and len(tables['Failures']) == 2 and
          len(tables['Skipped']) == 2, 'Markdown: rows per table %r'
          % {k: len(v) for k, v in tables.items()})

    # the terminal: no control character, one line per failure
    check(re.search(r'[\x00-\x09\x0b-\x1f\x7f]', out) is None, 'stdout: a control character')
    check(len([l for l in out.split('\n') if l.startswith(('FAIL ', 'INVALID '))]) == 2,
          'stdout: FAIL lines')
    rc, out, err = run('conform', '--list', '--vectors', FIX + '/hostile')
    check(rc == 0 and out.count('\n') == 5, '--list: %r' % out)
    shutil.rmtree(d)


def test_reports_replaced_not_rewritten():
    d = tmpdir()
    paths = {n: os.path.join(d, 'r.' + n) for n in ('md', 'xml', 'tap')}
    inode = {}
    for n, p in paths.items():
        with open(p, 'w') as fh:
            fh.write('OLD\n')
        os.chmod(p, 0o640)
        inode[n] = os.stat(p).st_ino
    os.symlink('r.xml', os.path.join(d, 'link.xml'))
    rc, out, err = run('conform', '--backend', 'ref', '--vectors', FIX + '/basic',
                       '--category', 'options.parse', '--report', paths['md'],
                       '--junit', d + '/link.xml', '--tap', paths['tap'])
    # options.parse alone runs nothing on a backend: no evidence, exit 1
    check(rc == 1 and 'no test ran on the backend under test' in out, 'rc %d: %s' % (rc, err))
    for n, p in paths.items():
        st = os.stat(p)
        check(st.st_ino != inode[n], '%s was rewritten in place (same inode)' % p)
        check(stat.S_IMODE(st.st_mode) == 0o640, '%s: mode %o' % (p, st.st_mode))
        check(open(p).read() != 'OLD\n', '%s not written' % p)
    check(os.path.islink(d + '/link.xml'), 'the symbolic link was replaced')
    check(sorted(os.listdir(d)) == ['link.xml', 'r.md', 'r.tap', 'r.xml'],
          'left behind: %s' % os.listdir(d))
    validate_reports(d, [{'options.parse/%d' % i for i in range(1, 5)}])
    # a device is written directly
    rc, out, err = run('conform', '--backend', 'ref', '--vectors', FIX + '/basic',
                       '--category', 'numerics', '--tap', '/dev/null')
    check(rc == 0, '--tap /dev/null: rc %d: %s' % (rc, err))
    shutil.rmtree(d)


def test_concurrent_reports():
    """Two runs write the same three report paths at the same moment, six
    times: each time every file is complete and wholly from one run."""
    d = tmpdir()
    vec = d + '/vectors'
    os.mkdir(vec)
    tests = [{'tcId': i, 'comment': 'test %d %s' % (i, 'pad ' * 150), 'flags': [],
              'result': 'valid', 'input': 'fast_math', 'source': 'env', 'set': 'enable',
              'canonical': 'enable=fast_math' if i % 4 < 2 else 'enable=wrong'}
             for i in range(1, 61)]
    with open(vec + '/options.parse.json', 'w') as fh:
        json.dump({'suite': 'kiln-conformance', 'suiteVersion': '1.0.0',
                   'category': 'options.parse', 'numberOfTests': len(tests), 'notes': {},
                   'testGroups': [{'type': 'OptionParse', 'comment': 'many', 'tests': tests}]}, fh)
    runs = []
    for shard in ('1/2', '2/2'):
        rc, out, err = run('conform', '--list', '--vectors', vec, '--shard', shard)
        check(rc == 0 and out.count('\n') == 30, '--list %s: %r' % (shard, err))
        runs.append(set(out.split()))
    out_dir = d + '/out'
    os.mkdir(out_dir)
    for rnd in range(6):
        procs = [subprocess.Popen(
            [KILN, 'conform', '--backend', 'ref', '--vectors', vec, '--shard', shard,
             '--report', out_dir + '/r.md', '--junit', out_dir + '/r.xml',
             '--tap', out_dir + '/r.tap'], cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL) for shard in ('1/2', '2/2')]
        for p in procs:
            check(p.wait(timeout=600) == 1, 'round %d: not the 15 expected failures' % rnd)
        validate_reports(out_dir, runs)
        check(sorted(os.listdir(out_dir)) == ['r.md', 'r.tap', 'r.xml'],
              'left behind: %s' % os.listdir(out_dir))
    shutil.rmtree(d)


# ------------------------------------------------------------ output paths

def test_output_paths_checked_first():
    d = tmpdir()
    base = ['conform', '--backend', 'ref', '--vectors', FIX + '/basic']
    cases = [
        (['--report', '/nonexistent-kiln-dir/r.md'],
         "--report /nonexistent-kiln-dir/r.md: directory '/nonexistent-kiln-dir' does not exist"),
        (['--junit', d], '--junit %s: is a directory' % d),
        (['--tap', '/etc/passwd/x.tap'], "--tap /etc/passwd/x.tap: '/etc/passwd' is not a directory"),
        (['--junit', d + '/a', '--tap', d + '/a'], "--junit and --tap name the same file"),
    ]
    for extra, needle in cases:
        rc, out, err = run(*(base + extra))
        check(rc == 2, '%s: rc %d' % (extra, rc))
        check(out == '', '%s: something ran: %r' % (extra, out))
        check(needle in err and "(see 'kiln conform --help')" in err, '%s: %r' % (extra, err))
    rc, out, err = run('run', 'examples/relu_mul_add.kf', '--random', '1', '--backend', 'ref',
                       '--out', '/etc/passwd/sub')
    check(rc == 2 and out == '' and '--out /etc/passwd/sub' in err, 'run --out: %d %r' % (rc, err))
    # --out creates the directory and its parents
    rc, out, err = run('run', 'examples/relu_mul_add.kf', '--random', '1', '--backend', 'ref',
                       '--size', '2', '--out', d + '/new/deeper')
    check(rc == 0, 'run --out new dir: %s' % err)
    check(os.listdir(d + '/new/deeper') == ['out0.npy'], 'run --out: %s' % os.listdir(d + '/new/deeper'))
    t0 = time.time()
    rc, out, err = run('bench', 'overhead', '--json', '/nonexistent-kiln-dir/b.json')
    check(rc == 2 and out == '' and time.time() - t0 < 5 and
          "--json /nonexistent-kiln-dir/b.json: directory" in err, 'bench: %d %r' % (rc, err))
    rc, out, err = run('bench', 'gpu', '--json=/nonexistent-kiln-dir/g.json')
    check(rc == 2 and "--json /nonexistent-kiln-dir/g.json" in err, 'bench gpu: %d %r' % (rc, err))
    shutil.rmtree(d)


# ----------------------------------------------------------------- options

def test_option_value_forms():
    d = tmpdir()
    pairs = [
        (['options', '--enable', 'fast_math', '--level', 'kernel', '--disable', 'fma'],
         ['options', '--enable=fast_math', '--level=kernel', '--disable=fma']),
        (['run', 'examples/relu_mul_add.kf', '--random', '3', '--size', '2', '--backend', 'ref',
          '--disable', 'fma', '--shape', '%a=2x2', '--repeat', '2'],
         ['run', 'examples/relu_mul_add.kf', '--random=3', '--size=2', '--backend=ref',
          '--disable=fma', '--shape=%a=2x2', '--repeat=2']),
        (['conform', '--list', '--vectors', FIX + '/basic', '--category', 'numerics',
          '--shard', '1/2', '--filter', 'f32', '--exclude', 'NaN'],
         ['conform', '--list', '--vectors=' + FIX + '/basic', '--category=numerics',
          '--shard=1/2', '--filter=f32', '--exclude=NaN']),
        (['cache', '--backend', 'ref', '--plan-capacity', '8', '--kernel-capacity', '9', '--json',
          'examples/relu_mul_add.kf', '--repeat', '2', '--enable', 'fast_math'],
         ['cache', '--backend=ref', '--plan-capacity=8', '--kernel-capacity=9', '--json',
          'examples/relu_mul_add.kf', '--repeat=2', '--enable=fast_math']),
        (['fusion', '--hash-only', 'examples/relu_mul_add.kf'],
         ['fusion', '--hash-only', '--', 'examples/relu_mul_add.kf']),
    ]
    for a, b in pairs:
        ra, rb = run(*a), run(*b)
        check(ra[0] == 0 and ra == rb, '%s vs %s: %r %r' % (a, b, ra, rb))
    check('plan_capacity": 8' in run(*pairs[3][1])[1], 'cache: --plan-capacity=8 ignored')
    # bench: --json=FILE writes FILE (the overhead benchmark, about a second)
    rc, out, err = run('bench', 'overhead', '--json=' + d + '/o.json')
    check(rc == 0 and out == '', 'bench --json=FILE: %d %r' % (rc, err))
    check(json.load(open(d + '/o.json'))['bench'] == 'overhead', 'bench JSON')
    # bench gpu parses its options before it looks for a GPU
    rc, out, err = run('bench', 'gpu', '--reps=abc')
    check(rc == 2 and "--reps needs an integer from 1 to 10000, not 'abc'" in err, err)
    shutil.rmtree(d)


COMMANDS = {  # subcommand: (every option it accepts, '=' marking those with a value)
    'options': ['--enable=', '--disable=', '--level=', '--json', '--catalogue-json'],
    'fusion': ['--hash-only', '--op-table-json'],
    'run': ['--input=', '--random=', '--shape=', '--size=', '--enable=', '--disable=',
            '--repeat=', '--out=', '--info', '--backend='],
    'conform': ['--backend=', '--device=', '--vectors=', '--category=', '--filter=',
                '--exclude=', '--shard=', '--list', '--tap=', '--junit=', '--report=',
                '--timeout=', '--serde', '--serde-record=', '--serde-check=', '--strict', '--allow-unavailable', '--skip-flag=',
                '--expectations=', '--write-expectations=', '--results=', '--check-results=',
                '--sweep=', '--sweep-shard='],
    'cache': ['--json', '--backend=', '--plan-capacity=', '--kernel-capacity=', '--repeat=',
              '--enable=', '--disable='],
    'cache counters': ['--backend=', '--plan-capacity=', '--kernel-capacity=', '--repeat=',
                       '--enable=', '--disable='],
    'cache list': ['--dir='],
    'cache stats': ['--dir='],
    'cache verify': ['--dir='],
    'cache clear': ['--dir='],
    'bench overhead': ['--json'],
    'bench gpu': ['--json', '--reps=', '--device=', '--quick'],
    'bench kdb': ['--backend=', '--device=', '--runs=', '--json'],
}


def test_usage_errors():
    for cmd, opts in COMMANDS.items():
        words = cmd.split()
        label = 'kiln ' + ('bench' if cmd == 'bench overhead' else cmd)
        cases = [(['--bogus'], "%s: unknown option '--bogus' (see '%s --help')" % (label, label)),
                 (['--bogus=1'], "%s: unknown option '--bogus' (see '%s --help')" % (label, label))]
        for o in opts:
            if o.endswith('='):  # the value missing at the end
                cases.append(([o[:-1]], "%s: option '%s' needs a value (see '%s --help')"
                              % (label, o[:-1], label)))
            elif o != '--json' or cmd == 'options' or cmd == 'cache':  # a flag given a value
                cases.append(([o + '=1'], "%s: option '%s' takes no value (got '%s=1')"
                              % (label, o, o)))
        for extra, needle in cases:
            rc, out, err = run(*(words + extra))
            check(rc == 2 and out == '' and needle in err,
                  '%s %s: rc %d, %r lacks %r' % (cmd, extra, rc, err, needle))


def test_sweep_options():
    """--sweep and --sweep-shard (docs/conformance.md, "sweep"): bad values
    are usage errors; --sweep all runs the shard's range of the 2^32 f32
    inputs and prints its line."""
    for extra, needle in ((['--sweep', 'some'], "--sweep needs 'sample' or 'all'"),
                          (['--sweep-shard', '0/4'], '--sweep-shard needs I/N'),
                          (['--sweep-shard', '5/4'], '--sweep-shard needs I/N')):
        rc, out, err = run('conform', '--backend', 'ref', *extra)
        check(rc == 2 and needle in err, '%s: rc %d, %r' % (extra, rc, err))
    rc, out, err = run('conform', '--backend', 'ref', '--category', 'sweep',
                       '--filter', '^sweep/13$', '--sweep', 'all',
                       '--sweep-shard', '4096/4096')
    check(rc == 0, 'sweep all shard: rc %d\n%s%s' % (rc, out[-2000:], err[-2000:]))
    check('sweep: sweep/13 neg f32->f32 default: 1048576 inputs '
          '[4293918720, 4294967296), worst 0 ulp' in err, err[-2000:])
    rc, out, err = run('conform', '--backend', 'ref', '--category', 'sweep',
                       '--filter', '^sweep/13$')
    check(rc == 0 and 'sweep:' not in err, 'no --sweep: no lines\n' + err[-2000:])


def test_help():
    rc, out, err = run('--help')
    check(rc == 0 and all(c.split()[0] in out for c in COMMANDS), 'kiln --help: %r' % out)
    for cmd, opts in COMMANDS.items():
        words = cmd.split()
        for form in (words + ['--help'], ['help'] + words[:1] if len(words) == 1 else words + ['-h']):
            rc, out, err = run(*form)
            check(rc == 0 and err == '', '%s: rc %d %r' % (form, rc, err))
            check(out.startswith('usage: kiln ' + words[0]), '%s: %r' % (form, out[:80]))
            for o in opts:
                check(o.rstrip('=') in out, '%s does not document %s' % (form, o))
        for o in opts:  # every documented option is accepted: the parser
            # takes it (and a value, which may be judged invalid) and stops
            # at the unknown option after it, before any work
            name = o.rstrip('=')
            args = words + ([name, 'x'] if o.endswith('=') else [o]) + ['--zzz']
            rc, out, err = run(*args)
            check(rc == 2 and out == '' and "unknown option '%s'" % name not in err,
                  '%s: %r' % (args, err))
    rc, out, err = run('help', 'version')
    check(rc == 0 and out.startswith('usage: kiln version'), 'help version: %r' % out)


def test_no_stdout_on_failure():
    cases = [
        ['cache', '--backend', 'ref', '/nonexistent.kf'],
        ['cache', '--backend', 'ref', '--json', '/nonexistent.kf'],
        ['cache', '--backend', 'ref', 'examples/relu_mul_add.kf', '--disable', 'fma,fallback'],
        ['cache', '--backend', 'ref', '--json', 'examples/relu_mul_add.kf', '--disable', 'fma,fallback'],
        ['cache', '--backend', 'nonsense'],
        ['run', 'examples/relu_mul_add.kf', '--random', '1', '--info', '--repeat', '2',
         '--disable', 'fma,fallback'],
        ['run', 'examples/relu_mul_add.kf', '--random', '1', '--info', '--shape', '0=2x3'],
        ['options', '--enable', 'nonsense'],
        ['fusion', '/nonexistent.kf'],
        ['conform', '--vectors', '/nonexistent-kiln-dir'],
        ['conform', '--backend', 'ref', '--vectors', FIX + '/basic', '--filter', 'zzz'],
        ['bench', 'gpu', '--device', '1023'],
    ]
    for args in cases:
        rc, out, err = run(*args)
        check(rc == 1 and out == '' and err != '', '%s: rc %d, stdout %r' % (args, rc, out))
    # an unreadable plugin is a usage error (docs/conformance.md, "Exit status")
    rc, out, err = run('conform', '--backend', './nonexistent-plugin.so', '--vectors',
                       FIX + '/basic')
    check(rc == 2 and out == '' and 'cannot read the plugin' in err, 'plugin: rc %d' % rc)


# --------------------------------------------------------------------- run

def npy(path, descr, shape, raw):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ''.join('%d,' % s for s in shape))
    hdr += ' ' * ((64 - (10 + len(hdr) + 1) % 64) % 64) + '\n'
    with open(path, 'wb') as fh:
        fh.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode() + raw)


def test_run_info_and_values():
    rc, out, err = run('run', 'examples/relu_mul_add.kf', '--random', '1', '--size', '2',
                       '--info', '--repeat', '2')
    lines = out.split('\n')
    check(rc == 0 and len(lines) == 5 and lines[4] == '', 'run --info: %r' % out)
    check(re.fullmatch(r'backend (cuda \(auto: cuda is usable\)|ref \(auto: cuda not usable: .+\))',
                       lines[0]), 'backend line %r' % lines[0])
    for l in lines[1:3]:
        check(json.loads(l)['backend'] in ('ref', 'cuda'), 'info line %r' % l)
    check(re.fullmatch(r'output 0: f32 \[2, 2\]:( \S+){4}', lines[3]), 'summary %r' % lines[3])
    rc, out, err = run('run', 'examples/relu_mul_add.kf', '--random', '1', '--size', '2',
                       '--info', '--backend', 'ref')
    check(rc == 0 and out.split('\n')[0] == 'backend ref', 'explicit backend: %r' % out)
    # f16 and bf16 print as numbers
    d = tmpdir()
    for dt, descr, bits, want in (
            ('f16', '<f2', [0x3e00, 0xc000, 0x7bff, 0x0001], '-1.5 2 -65504 -5.9605e-08'),
            ('bf16', '<V2', [0x3fc0, 0xc000, 0x4b80, 0x7f80], '-1.5 2 -1.678e+07 -inf')):
        with open(d + '/h.kf', 'w') as fh:
            fh.write('kiln.fusion 1\n%%x = input %s [?]\n%%f = cast %%x f32\n%%n = neg %%f\n'
                     '%%y = cast %%n %s\noutput %%y\n' % (dt, dt))
        npy(d + '/x.npy', descr, [4], struct.pack('<4H', *bits))
        rc, out, err = run('run', d + '/h.kf', '--backend', 'ref', '--input', '%x=' + d + '/x.npy')
        check(rc == 0 and out == 'output 0: %s [4]: %s\n' % (dt, want), '%s: %r %r' % (dt, out, err))
    shutil.rmtree(d)


def test_run_names_bind_through_the_parser():
    d = tmpdir()
    texts = ['kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n%c = sub %a %b\noutput %c\n',
             'kiln.fusion 1\r\n%a\r= input f32 [?]\r\n\r%b = input f32 [?]\r\n%c = sub %a %b\r\n'
             'output %c\r\n']
    npy(d + '/a.npy', '<f4', [2], struct.pack('<2f', 1, 2))
    npy(d + '/b.npy', '<f4', [2], struct.pack('<2f', 10, 20))
    for k, t in enumerate(texts):
        with open('%s/%d.kf' % (d, k), 'w', newline='') as fh:
            fh.write(t)
        for args in (['--input', '%b=' + d + '/b.npy', '--input', '%a=' + d + '/a.npy'],
                     ['--input', '1=' + d + '/b.npy', '--input', '0=' + d + '/a.npy']):
            rc, out, err = run('run', '%s/%d.kf' % (d, k), '--backend', 'ref', *args)
            check(rc == 0 and out == 'output 0: f32 [2]: -9 -18\n',
                  'file %d %s: %r %r' % (k, args, out, err))
    rc, out, err = run('run', d + '/1.kf', '--backend', 'ref', '--input', '%z=' + d + '/a.npy')
    check(rc == 2 and "--input '%z=" in err, 'unknown name: %r' % err)
    shutil.rmtree(d)


def test_backend_so_in_current_directory():
    d = tmpdir()
    shutil.copy(PLUGIN, d + '/my_backend.so')
    rc, out, err = run('run', os.path.join(ROOT, 'examples/relu_mul_add.kf'), '--random', '1',
                       '--size', '2', '--info', '--backend', 'my_backend.so', cwd=d)
    check(rc == 0 and out.startswith('backend test-plugin\n'), 'run: %r %r' % (out, err))
    rc, out, err = run('conform', '--backend', 'my_backend.so', '--vectors',
                       os.path.join(ROOT, FIX, 'basic'), '--category', 'numerics', cwd=d)
    check(rc == 0, 'conform: %r %r' % (out, err))
    rc, out, err = run('run', 'examples/relu_mul_add.kf', '--random', '1',
                       '--backend', 'my_backend.so')  # not in this directory
    check(rc == 1 and './my_backend.so' in err, 'elsewhere: %r' % err)
    shutil.rmtree(d)


# -------------------------------------------------------------------- build

def test_cuda_headers_required():
    d = tmpdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith('MAKE')}
    env.pop('MFLAGS', None)

    def make(*args):
        p = subprocess.run(['make', '-s', '-C', ROOT] + list(args), capture_output=True,
                           env=env, timeout=600)
        return p.returncode, p.stderr.decode()
    rc, err = make('check-cuda-headers', 'CUDA_INC=' + d)
    check(rc != 0 and 'missing CUDA toolkit headers in CUDA_INC=%s: cuda.h nvrtc.h '
          'cublas_api.h' % d in err, 'check-cuda-headers: %d %r' % (rc, err))
    open(d + '/cuda.h', 'w').close()
    rc, err = make('BUILD=' + d + '/build', 'CUDA_INC=' + d, 'lib')
    check(rc != 0 and 'CUDA_INC=%s: nvrtc.h cublas_api.h\n' % d in err, 'make lib: %r' % err)
    check(not os.path.exists(d + '/build/obj'), 'make compiled before the header check')
    p = subprocess.run(['bash', 'scripts/deps.sh', '--cuda-headers'], cwd=ROOT,
                       capture_output=True, env=dict(env, CUDA_INC=d))
    check(p.returncode == 1 and b'Install the CUDA toolkit' in p.stderr, 'deps.sh: %r' % p.stderr)
    rc, err = make('check-cuda-headers')
    check(rc == 0, 'the default CUDA_INC fails the check: %r' % err)
    shutil.rmtree(d)


def test_fuzz_flags():
    """--seed/--count make the fuzz category (docs/conformance.md, "The fuzz
    category"): the ids and seeds asked for, added to the selection; bad
    values are usage errors."""
    rc, out, err = run('conform', '--list', '--category', 'fuzz', '--seed', '7',
                       '--count', '3')
    check(rc == 0 and out == 'fuzz/1\nfuzz/2\nfuzz/3\n', 'list: %d %r %r' % (rc, out, err))
    rc, out, err = run('conform', '--list', '--count', '2')
    ids = out.splitlines()
    check(rc == 0 and ids[-2:] == ['fuzz/1', 'fuzz/2'] and len(ids) > 100,
          '--count adds fuzz to the whole suite: %d %r' % (rc, ids[-3:]))
    rc, out, err = run('conform', '--list', '--category', 'numerics')
    check(rc == 0 and 'fuzz/' not in out, 'fuzz only when asked for')
    rc, out, err = run('conform', '--backend', 'ref', '--category', 'fuzz',
                       '--seed', '40', '--count', '5')
    check(rc == 0 and 'PASS on ref: 5 tests passed' in out,
          'run: %d %r %r' % (rc, out[-600:], err))
    for bad in (['--count', '0'], ['--count', '1000001'], ['--seed', '-1'],
                ['--seed', 'x'], ['--seed', '9223372036854775808']):
        rc, out, err = run('conform', '--list', '--category', 'fuzz', *bad)
        check(rc == 2 and 'needs an integer' in err, '%r: %d %r' % (bad, rc, err))
    rc, out, err = run('conform', '--backend', 'ref', '--category', 'fuzz',
                       '--results', tmpdir() + '/r.json')
    check(rc == 2 and '--results does not cover the fuzz category' in err,
          'results: %d %r' % (rc, err))
    rc, out, err = run('conform', '--list', '--category', 'fuzz', '--seed',
                       '9223372036854775807', '--count', '2')
    check(rc == 2 and 'below 2^63' in err, 'seed range: %d %r' % (rc, err))



def test_run_layout():
    """kiln run --layout passes a random input as the fuzz category's
    strided views: the same values, so ref prints the same outputs; an
    unknown layout is a usage error."""
    kf = 'examples/fuzz_seed33.kf'
    base = ['run', kf, '--random', '33', '--shape', '0=3x2', '--shape', '1=2x4',
            '--shape', '2=1x4', '--backend', 'ref']
    rc, dense, err = run(*base)
    check(rc == 0 and dense.startswith('output 0: f32 [3, 4]:'), 'dense: %r %r' % (dense, err))
    for lay in ('0=column-major', '0=pitched', '1=pitched', '1=column-major'):
        rc, out, err = run(*(base + ['--layout', lay]))
        check(rc == 0 and out == dense, '%s: %r vs %r %r' % (lay, out, dense, err))
    rc, out, err = run(*(base + ['--layout', '0=diagonal']))
    check(rc == 2 and 'pitched or column-major' in err and out == '', 'bad: %d %r' % (rc, err))
    rc, out, err = run(*(base + ['--layout', '7=pitched']))
    check(rc == 2 and '--layout' in err, 'bad input: %d %r' % (rc, err))

def main():
    global KILN, PLUGIN
    if len(sys.argv) != 3:
        print(__doc__.split('\n')[0], file=sys.stderr)
        return 2
    KILN, PLUGIN = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    return harness.run_tests(globals(), 'test_cli')


if __name__ == '__main__':
    sys.exit(main())

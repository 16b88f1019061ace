#!/usr/bin/env python3
"""test_verdict.py BUILD -- the verdict of `kiln conform` end to end
(make test-verdict; docs/conformance.md, "Results", "Exit status",
"Expectations files", "Results file", "Where the vectors come from").

BUILD is the build directory holding kiln and plugins/.  Python 3
standard library only; runs from anywhere.  Every test runs; the exit
status is 1 when any fails, with one line per failure.

The cases of issue 12's "Done means", each with the behaviour it pins:
  - a mistyped backend is a usage error before anything runs (exit 2);
  - cuda without a driver is exit 1 with the reason, 77 with
    --allow-unavailable, and nothing runs;
  - an empty plugin (every compile KILN_ERR_UNSUPPORTED) passes no numerics
    test: what executes is unsupported, the tests that reach no backend are
    skips, and the run exits 1;
  - the five-op example shows its native counts per op and dtype, and ULP
    figures only for what it computed;
  - an expectations file that goes stale (the backend now passes what it
    lists) fails the run and names each stale entry; a fresh one passes;
  - a results file checks against the installed suite; one with a record
    removed, duplicated or changed, or a vector hash changed, fails;
  - plus the vectors' lookup order and `make install` building kiln.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = KILN = None


def run(*args, cwd=ROOT, env=None, timeout=900):
    p = subprocess.run([KILN] + list(args), cwd=cwd, capture_output=True,
                       timeout=timeout, env=env)
    return (p.returncode, p.stdout.decode('utf-8', 'replace'),
            p.stderr.decode('utf-8', 'replace'))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith('KILN_')}
    env.update(extra)
    return env


def table(out, category):
    """The per-category table row of `category` as a dict."""
    m = re.search(r'^%s +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) ' %
                  re.escape(category), out, re.M)
    check(m is not None, 'no table row for %s in:\n%s' % (category, out[-3000:]))
    keys = ('pass', 'fail', 'unsupported', 'skip', 'invalid', 'native', 'fallback')
    return dict(zip(keys, map(int, m.groups())))


def op_row(out, category, op, dtype):
    m = re.search(r'^%s +%s +%s +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) +(\S+)$'
                  % (re.escape(category), op, dtype), out, re.M)
    check(m is not None, 'no op row %s %s %s' % (category, op, dtype))
    keys = ('pass', 'fail', 'unsupported', 'skip', 'invalid', 'native',
            'fallback', 'max_ulp')
    vals = list(m.groups())
    return dict(zip(keys, list(map(int, vals[:7])) + [vals[7]]))


def example_plugin(d):
    """conformance/examples/my_backend.c built into d (as its Makefile does,
    with the tree's headers)."""
    so = os.path.join(d, 'my_backend.so')
    subprocess.run(['cc', '-O2', '-std=c11', '-Wall', '-Wextra', '-Werror', '-fPIC',
                    '-fvisibility=hidden', '-ffp-contract=off', '-shared',
                    '-I' + os.path.join(ROOT, 'runtime/include'),
                    '-I' + os.path.join(ROOT, 'runtime'), '-o', so,
                    os.path.join(ROOT, 'conformance/examples/my_backend.c'), '-lm'],
                   check=True)
    return so


# ---------------------------------------------------------------- backends

def test_typo_is_a_usage_error():
    rc, out, err = run('conform', '--backend', 'rf')
    check(rc == 2 and out == '', 'rc %d, stdout %r' % (rc, out))
    check("unknown backend 'rf'" in err and 'ref, cuda, nvrtc' in err, err)
    d = tempfile.mkdtemp()
    for args, needle in ((['--backend', './missing.so'], "cannot read the plugin './missing.so'"),
                         (['--backend', 'missing.so'], "cannot read the plugin './missing.so'"),
                         (['--backend', '/etc/hostname'], 'is not a shared object'),
                         (['--backend', d], 'is not a file')):
        rc, out, err = run('conform', *args)
        check(rc == 2 and out == '' and needle in err, '%s: rc %d %r' % (args, rc, err))
    # a shared object that is not a Kiln backend: a usage error too
    rc, out, err = run('conform', '--backend', os.path.join(BUILD, 'plugins',
                                                             'libkiln_data_entry.so'))
    check(rc == 2 and 'not a usable Kiln backend plugin' in err, 'data entry: %d %r' % (rc, err))
    shutil.rmtree(d)


def test_unavailable_backend():
    # no driver here (make test runs without a GPU); on a GPU machine this
    # test says so and checks nothing it cannot
    probe = subprocess.run([KILN, 'run', os.path.join(ROOT, 'examples/relu_mul_add.kf'),
                            '--random', '1', '--backend', 'cuda'], capture_output=True)
    if probe.returncode == 0:
        print('     (cuda is available here: the unavailable case needs a machine without it)')
        return
    rc, out, err = run('conform', '--backend', 'cuda')
    check(rc == 1 and out == '', 'rc %d, stdout %r' % (rc, out))
    check('backend cuda is not available here: cuda: no driver' in err and
          'nothing ran' in err, err)
    rc, out, err = run('conform', '--backend', 'cuda', '--allow-unavailable',
                       '--results', '/tmp/kiln-should-not-exist.json')
    check(rc == 77 and out == '' and 'exit 77 (--allow-unavailable)' in err, '%d %r' % (rc, err))
    check(not os.path.exists('/tmp/kiln-should-not-exist.json'), 'a results file was written')


def test_plugin_without_slash():
    d = tempfile.mkdtemp()
    shutil.copy(os.path.join(BUILD, 'plugins', 'libkiln_test_plugin.so'),
                os.path.join(d, 'plug.so'))
    rc, out, err = run('conform', '--backend', 'plug.so', '--category', 'numerics',
                       '--shard', '1/50', cwd=d)
    check(rc == 0 and 'kiln conform: PASS on plug.so' in out, '%d %s %s' % (rc, out[-500:], err))
    shutil.rmtree(d)


def test_empty_plugin():
    plugin = os.path.join(BUILD, 'plugins', 'libkiln_empty_plugin.so')
    rc, out, err = run('conform', '--backend', plugin, '--category', 'numerics')
    check(rc == 1, 'rc %d' % rc)
    row = table(out, 'numerics')
    check(row['pass'] == 0 and row['native'] == 0 and row['fail'] == 0 and
          row['unsupported'] > 1000, 'numerics row %r' % row)
    # skipped: only the tests that expect an execute error, which no segment
    # reaches on any backend (they judge Kiln's input validation)
    n_invalid = sum(1 for g in json.load(open(os.path.join(
        ROOT, 'conformance/vectors/numerics.json')))['testGroups']
        for t in g['tests'] if t['result'] == 'invalid')
    check(row['skip'] == n_invalid, 'numerics skips %d, tests expecting an error %d'
          % (row['skip'], n_invalid))
    check("no segment ran on any backend: the test judges Kiln's own runtime" in out, out[-900:])
    check('no test ran on the backend under test and passed (0 passed' in out, out[-600:])
    # no ULP figure for outputs it never computed
    for op in ('exp', 'log', 'sin', 'add'):
        r = op_row(out, 'numerics', op, 'f32')
        check(r['max_ulp'] == '-' and r['native'] == 0 and r['fallback'] > 0 and
              r['pass'] == 0, '%s: %r' % (op, r))
    # with ref (Kiln itself under test) the same error tests are passes
    rc, out, err = run('conform', '--backend', 'ref', '--category', 'numerics',
                       '--filter', 'empty axis fails|K mismatch')
    check(rc == 1 and table(out, 'numerics')['pass'] == 11 and
          '(11 passed without a native segment)' in out, out[-600:])
    # --strict: each unsupported test is a failure
    rc, out, err = run('conform', '--backend', plugin, '--category', 'numerics',
                       '--shard', '1/40', '--strict')
    check(rc == 1 and 'UNSUPPORTED (--strict) numerics/' in out, out[-500:])


def test_five_op_example_native_counts():
    d = tempfile.mkdtemp()
    so = example_plugin(d)
    rc, out, err = run('conform', '--backend', so, '--category', 'numerics',
                       '--category', 'cache.isolation', '--report', d + '/r.md',
                       '--junit', d + '/r.xml', '--tap', d + '/r.tap')
    check(rc == 0, 'rc %d: %s' % (rc, out[-800:]))
    for op in ('add', 'sub', 'mul', 'neg', 'fma'):
        r = op_row(out, 'numerics', op, 'f32')
        check(r['pass'] > 0 and r['native'] > 0 and r['fail'] == 0 and r['max_ulp'] == '0',
              '%s f32: %r' % (op, r))
    for op in ('exp', 'log', 'sin', 'sqrt'):
        r = op_row(out, 'numerics', op, 'f32')
        check(r['pass'] == 0 and r['native'] == 0 and r['unsupported'] > 0 and
              r['max_ulp'] == '-', '%s f32: %r' % (op, r))
    num = table(out, 'numerics')
    check(0 < num['native'] < num['fallback'], 'numerics %r' % num)
    # every report carries the per-category and per op x dtype counts
    md = open(d + '/r.md').read()
    check('| numerics | %d | 0 | %d |' % (num['pass'], num['unsupported']) in md, 'Markdown categories')
    check(re.search(r'\| numerics \| exp \| f32 \| 0 \| 0 \| \d+ \| 0 \| 0 \| 0 \| \d+ \| - \|', md),
          'Markdown op row')
    xml = open(d + '/r.xml').read()
    check('name="results" value="pass %d, fail 0, unsupported %d' % (
        num['pass'], num['unsupported']) in xml, 'JUnit category properties')
    check(re.search(r'name="op exp f32" value="pass 0, fail 0, unsupported \d+, skip 0, '
                    r'invalid-vector 0, native segments 0, fallback segments \d+, max ulp -"', xml),
          'JUnit op property')
    tap = open(d + '/r.tap').read()
    # (add f32 also appears in the many-input vectors beside reductions the
    # example declines: those tests are unsupported, the rest native)
    check(re.search(r'^# op numerics add f32: pass [1-9]\d*, fail 0, unsupported \d+, skip \d+, '
                    r'invalid-vector 0, native segments [1-9]\d*', tap, re.M), 'TAP op diagnostic')
    check(re.search(r'^ok \d+ - numerics/\d+ .* # SKIP unsupported: ', tap, re.M), 'TAP unsupported')
    check(tap.rstrip().endswith('# verdict: PASS'), 'TAP verdict')
    shutil.rmtree(d)


# ------------------------------------------------------------ expectations

def test_expectations_go_stale():
    d = tempfile.mkdtemp()
    empty = os.path.join(BUILD, 'plugins', 'libkiln_empty_plugin.so')
    sel = ['--category', 'numerics', '--filter', '^(add|exp) f32 (special|random|rank)']
    # a baseline of the empty backend: every test unsupported
    rc, out, err = run('conform', '--backend', empty, *sel,
                       '--write-expectations', d + '/exp.txt')
    check(rc == 1, 'baseline run: rc %d' % rc)
    lines = [l for l in open(d + '/exp.txt') if not l.startswith('#')]
    check(len(lines) == 6 and all(re.match(r'numerics/\d+ unsupported \S', l) for l in lines),
          'written expectations:\n%s' % ''.join(lines))
    # it still describes the empty backend: every result as expected, but
    # nothing ran natively, so no green
    rc, out, err = run('conform', '--backend', empty, *sel, '--expectations', d + '/exp.txt')
    check(rc == 1 and 'EXPECTED 6 results' in out and 'no test ran on the backend' in out,
          out[-800:])
    # the backend improved (the five-op example): the f32 add tests pass
    # now, so their entries are stale and the run fails, naming them
    so = example_plugin(d)
    rc, out, err = run('conform', '--backend', so, *sel, '--expectations', d + '/exp.txt')
    stale = re.findall(r'^UNEXPECTED (numerics/\d+) .*: pass, expected unsupported', out, re.M)
    check(rc == 1 and len(stale) > 0, 'rc %d: %s' % (rc, out[-1500:]))
    check('results contradict the expectations file' in out, out[-500:])
    # pruned (written afresh from that run): it passes
    rc, out, err = run('conform', '--backend', so, *sel, '--write-expectations', d + '/new.txt')
    rc, out, err = run('conform', '--backend', so, *sel, '--expectations', d + '/new.txt')
    check(rc == 0 and 'EXPECTED' in out and 'UNEXPECTED' not in out, 'pruned: %d %s' % (rc, out[-800:]))
    new = open(d + '/new.txt').read()
    for tid in stale:
        check(tid + ' ' not in new, '%s is still in the pruned file' % tid)
    # a skip entry keeps its tests from running at all
    with open(d + '/skip.txt', 'w') as fh:
        fh.write('# comment\n\nnumerics/1[0-9] skip hangs our device (bug 7)\n')
    rc, out, err = run('conform', '--backend', 'ref', '--category', 'numerics',
                       '--filter', '^numerics/[12][0-9]$', '--expectations', d + '/skip.txt')
    check(rc == 0 and ' 20 of ' in out and ', 10 to run' in out, out[:400])
    # malformed files are usage errors that name the line
    for text, needle in (('numerics/1 fail\n', 'has no reason'),
                         ('numerics/1 passes fine\n', "result 'passes' is not fail"),
                         ('a fail x\na skip y\n', 'already on line 1')):
        with open(d + '/bad.txt', 'w') as fh:
            fh.write(text)
        rc, out, err = run('conform', '--backend', 'ref', '--expectations', d + '/bad.txt')
        check(rc == 2 and needle in err and 'bad.txt:' in err, '%r: %d %r' % (text, rc, err))
    shutil.rmtree(d)


# ------------------------------------------------------------ results file

def test_results_file_checks_and_tampering_fails():
    d = tempfile.mkdtemp()
    sel = ['--category', 'numerics', '--shard', '3/20']
    rc, out, err = run('conform', '--backend', 'ref', *sel, '--results', d + '/r.json')
    check(rc == 0, 'rc %d %s' % (rc, err))
    doc = json.load(open(d + '/r.json'))
    check(doc['format'] == 'kiln-conformance-results' and doc['suite']['version'] and
          re.fullmatch(r'[0-9a-f]{64}', doc['suite']['vectorsSha256']), 'stamp %r' % doc['suite'])
    check(doc['runner']['gitRevision'] != '' and doc['backend']['identity'].startswith('ref kiln-'),
          'runner/backend %r %r' % (doc['runner'], doc['backend']))
    check(doc['backend']['device'] == 'host' and doc['commandLine'][:2] == ['kiln', 'conform'],
          'device/command line')
    check(doc['options']['shard'] == '3/20' and doc['options']['categories'] == ['numerics'],
          'options %r' % doc['options'])
    rec = doc['results'][0]
    check(set(rec) >= {'id', 'result', 'ms', 'segments'}, 'record %r' % rec)
    check(any('maxUlp' in r for r in doc['results']), 'no worst error recorded')
    # the suite hash is what sha256sum says of the vector files
    vec = os.path.join(ROOT, 'conformance/vectors')
    lines = subprocess.run('cd %s && LC_ALL=C sha256sum *.json' % vec, shell=True,
                           capture_output=True, check=True).stdout
    check(hashlib.sha256(lines).hexdigest() == doc['suite']['vectorsSha256'], 'suite hash')
    rc, out, err = run('conform', '--check-results', d + '/r.json')
    check(rc == 0 and 'check-results: OK' in out, '%d %s %s' % (rc, out, err))

    def tampered(name, change, needle):
        t = json.loads(json.dumps(doc))
        change(t)
        with open(d + '/t.json', 'w') as fh:
            json.dump(t, fh)
        rc, out, err = run('conform', '--check-results', d + '/t.json')
        check(rc == 1 and needle in out, '%s: rc %d: %s %s' % (name, rc, out, err))
    tampered('record removed', lambda t: t['results'].pop(3), 'is selected but has no record')
    tampered('record duplicated', lambda t: t['results'].append(t['results'][0]),
             'has more than one record')
    tampered('a test added', lambda t: t['results'].append(dict(t['results'][0], id='numerics/1')),
             "'numerics/1' is not a selected test")
    tampered('vector hash', lambda t: t['suite']['files'][3].update(sha256='0' * 64),
             'SHA-256 0000')
    tampered('summary', lambda t: t['summary'].update(fail=1), 'summary.fail')
    tampered('a pass made a fail', lambda t: t['results'][5].update(result='fail'),
             "summary.verdict is not 'fail'")
    tampered('a failing run', lambda t: [t['results'][5].update(result='fail'),
                                         t['summary'].update(fail=1, verdict='fail', **{
                                             'pass': t['summary']['pass'] - 1})],
             'the run it records did not pass')
    tampered('shard', lambda t: t['options'].update(shard='4/20'), 'is not a selected test')
    # an expectation recorded in the file must hold
    tampered('expectation', lambda t: t['results'][2].update(
        expected={'result': 'fail', 'reason': 'x', 'line': 1}), 'contradicting its expectation fail')
    rc, out, err = run('conform', '--check-results', d + '/r.json', '--backend', 'ref')
    check(rc == 2, '--check-results with a run option: %d' % rc)
    shutil.rmtree(d)


# ----------------------------------------------------------------- vectors

def test_where_the_vectors_come_from():
    d = tempfile.mkdtemp()
    os.makedirs(d + '/bin')
    shutil.copy(KILN, d + '/bin/kiln')
    alone = d + '/bin/kiln'
    fix = os.path.join(ROOT, 'tests/conformance_fixtures/basic')
    env = clean_env()

    def list_with(env, *args):
        p = subprocess.run([alone, 'conform', '--list'] + list(args), capture_output=True,
                           env=env, cwd='/')
        return p.returncode, p.stdout.decode(), p.stderr.decode()
    rc, out, err = list_with(env)
    check(rc == 1 and all(s in err for s in ('--vectors DIR', 'KILN_VECTORS',
                                             'share/kiln/vectors')),
          'missing vectors: %d %r' % (rc, err))
    os.makedirs(d + '/share/kiln')
    shutil.copytree(fix, d + '/share/kiln/vectors')     # an installed suite
    rc, out, err = list_with(env)
    check(rc == 0 and out.count('\n') == 16, 'installed: %d %r' % (rc, err))
    rc, out, err = list_with(clean_env(KILN_VECTORS=os.path.join(ROOT, 'conformance/vectors')))
    check(rc == 0 and out.count('\n') > 1000, 'KILN_VECTORS wins over the installed suite')
    rc, out, err = list_with(clean_env(KILN_VECTORS='/nonexistent'), '--vectors', fix)
    check(rc == 0 and out.count('\n') == 16, '--vectors wins over KILN_VECTORS')
    rc, out, err = list_with(clean_env(KILN_VECTORS='/nonexistent'))
    check(rc == 1 and "'/nonexistent'" in err, 'a KILN_VECTORS that is missing: %r' % err)
    shutil.rmtree(d)


def test_install_builds_kiln():
    # a fresh build directory: `make install` must build bin/kiln, not skip it
    p = subprocess.run(['make', '-n', '-C', ROOT, 'install', 'BUILD=/nonexistent/kiln-build',
                        'PREFIX=/nonexistent/prefix'], capture_output=True,
                       env={k: v for k, v in os.environ.items() if not k.startswith('MAKE')})
    text = p.stdout.decode()
    check(' -o /nonexistent/kiln-build/kiln ' in text, 'make install does not build kiln')
    check('install -m 755 /nonexistent/kiln-build/kiln /nonexistent/prefix/bin/' in text,
          'make install does not install kiln')
    check('/nonexistent/prefix/share/kiln/vectors/' in text, 'make install does not install the suite')


def main():
    global BUILD, KILN
    if len(sys.argv) != 2:
        print(__doc__.split('\n')[0], file=sys.stderr)
        return 2
    BUILD = os.path.abspath(sys.argv[1])
    KILN = os.path.join(BUILD, 'kiln')
    return harness.run_tests(globals(), 'test_verdict')


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""test_conform_options.py KILN -- `kiln conform`'s selection options and
the suite checks of --check-results (make test-cli).

docs/conformance.md: --skip-flag skips the tests that carry a flag, counted
as skipped with the reason, and refuses a flag no test carries; a vectors
directory with no vector file, or two files of one category, is refused;
--check-results compares the results file's suite (version, files, hash)
with the installed one and names every difference.

Python 3 standard library only; every test runs, the exit status is 1 when
any fails.
"""
import json
import os
import re
import shutil
import sys
import tempfile

import harness

ROOT = harness.ROOT
KILN = harness.kiln_binary()
VECTORS = os.path.join(ROOT, 'conformance', 'vectors')


check = harness.check


def kiln(*args):
    return harness.run_kiln(KILN, *args)


def test_skip_flag():
    rc, out, err = kiln('conform', '--backend', 'ref', '--category', 'options.parse',
                        '--skip-flag', 'EdgeCase')
    m = re.search(r'^SKIP (\d+) tests \(options\.parse/\d+, \.\.\.\): flag EdgeCase \(--skip-flag\)$',
                  out, re.M)
    check(m, 'no skip line: %r' % out[-800:])
    with open(os.path.join(VECTORS, 'options.parse.json')) as f:
        d = json.load(f)
    n = sum(1 for g in d['testGroups'] for t in g['tests'] if 'EdgeCase' in t['flags'])
    check(int(m.group(1)) == n, 'skipped %s, the file has %d EdgeCase tests' % (m.group(1), n))
    row = [ln.split() for ln in out.splitlines() if ln.startswith('options.parse ')][0]
    check(row[4] == str(n), 'the skip column: %r' % row)
    rc, out, err = kiln('conform', '--backend', 'ref', '--category', 'options.parse',
                        '--skip-flag', 'NoSuchFlag')
    check(rc == 2 and out == '', '--skip-flag of an unknown flag: exit %d %r' % (rc, out))
    check('--skip-flag NoSuchFlag: no test in' in err and 'carries this flag' in err, err)


def test_vector_directories_refused():
    empty = tempfile.mkdtemp(prefix='kiln-conform-opt.')
    try:
        rc, out, err = kiln('conform', '--backend', 'ref', '--vectors', empty)
        check(rc == 1 and "no *.json vector files in '%s'" % empty in err, '%d %r' % (rc, err))
        for name in ('a.json', 'b.json'):
            shutil.copy(os.path.join(VECTORS, 'options.parse.json'), os.path.join(empty, name))
        rc, out, err = kiln('conform', '--backend', 'ref', '--vectors', empty)
        check(rc == 1 and "both hold category 'options.parse'" in err, '%d %r' % (rc, err))
    finally:
        shutil.rmtree(empty)


def test_check_results_names_suite_differences():
    tmp = tempfile.mkdtemp(prefix='kiln-conform-opt.')
    try:
        path = os.path.join(tmp, 'r.json')
        kiln('conform', '--backend', 'ref', '--category', 'options.parse', '--results', path)
        with open(path) as f:
            base = json.load(f)
        cases = [
            ('another suite version', lambda s: s.update(version='1.0.9'),
             'suite version 1.0.9 in the results file'),
            ('another suite hash', lambda s: s.update(vectorsSha256='0' * 64),
             'suite hash %s in the results file' % ('0' * 64)),
            ('a file not installed', lambda s: s['files'][0].update(name='other.json'),
             'other.json: in the results file, not in the installed'),
            ('another number of files', lambda s: s['files'].append(dict(s['files'][1], name='x.json')),
             '%d vector files in the results file, %d installed' % (
                 len(base['suite']['files']) + 1, len(base['suite']['files']))),
        ]
        # every difference is named in one run (the checks do not stop at the first)
        d = json.loads(json.dumps(base))
        for _, fn, _ in cases:
            fn(d['suite'])
        p = os.path.join(tmp, 'case.json')
        with open(p, 'w') as f:
            json.dump(d, f)
        rc, out, err = kiln('conform', '--check-results', p)
        check(rc == 1, '--check-results of another suite: exit %d' % rc)
        missing = [what for what, _, want in cases if want not in out + err]
        check(not missing, 'not named: %r in %r' % (missing, (out + err)[-800:]))
    finally:
        shutil.rmtree(tmp)


def test_serde_passes_the_selection():
    """--serde runs the suite twice, in two processes: both get the same
    selection (--filter, --exclude, --skip-flag, --strict, --expectations)."""
    tmp = tempfile.mkdtemp(prefix='kiln-conform-opt.')
    try:
        exp = os.path.join(tmp, 'exp.txt')
        with open(exp, 'w') as f:
            f.write('options.parse/1 fail recorded here on purpose\n')
        rc, out, err = kiln('conform', '--serde', '--backend', 'nvrtc', '--category', 'options.parse',
                            '--filter', 'options.parse/1*', '--exclude', 'options.parse/19',
                            '--strict', '--skip-flag', 'Duplicate', '--expectations', exp)
        text = out + err
        check(rc == 1 and 'pass 1 exit 1, pass 2 exit 1: FAILED' in text, 'exit %d: %r' % (rc, text[-600:]))
        check(text.count('1 results contradict the expectations file') == 2,
              'both passes read the expectations file: %r' % text[-1500:])
        check(text.count('flag Duplicate (--skip-flag)') == 2, 'both passes skip: %r' % text[-1500:])
        check('options.parse/19 ' not in text and 'options.parse/19)' not in text,
              'an excluded test ran: %r' % text[-1500:])
    finally:
        shutil.rmtree(tmp)


def test_serde_record_and_check_files():
    """Pass 2 (--serde-check) judges each test against pass 1's record: a
    missing, malformed or failed record fails that test; an unreadable or
    malformed record file stops the run."""
    tmp = tempfile.mkdtemp(prefix='kiln-conform-opt.')
    try:
        rec = os.path.join(tmp, 'rec.jsonl')
        sel = ['--backend', 'nvrtc', '--category', 'options.parse', '--filter', 'options.parse/1?']
        kiln('conform', *sel, '--serde-record', rec)
        with open(rec) as f:
            lines = [json.loads(ln) for ln in f]
        ids = [ln['id'] for ln in lines]
        check('options.parse/11' in ids and 'options.parse/12' in ids and 'options.parse/13' in ids,
              'record %r' % ids[:5])
        by = {ln['id']: ln for ln in lines}
        by.pop('options.parse/11')                       # no record
        by['options.parse/12']['serde'] = {'pass': 'one'}  # malformed
        by['options.parse/13']['status'] = 'fail'        # failed in pass 1
        by['options.parse/14']['status'] = 'skip'        # skipped in pass 1
        bad = os.path.join(tmp, 'bad.jsonl')
        with open(bad, 'w') as f:
            for ln in by.values():
                f.write(json.dumps(ln) + '\n')
        rc, out, err = kiln('conform', *sel, '--serde-check', bad)
        want = {'11': 'serde: pass 1 left no record of this test',
                '12': 'serde: the pass-1 record is malformed',
                '13': 'serde: the test failed in pass 1',
                '14': 'serde: the test was skipped in pass 1'}
        for k, msg in want.items():
            check(re.search(r'^FAIL options\.parse/%s \(.*\): %s' % (k, re.escape(msg)), out, re.M),
                  'options.parse/%s: %r not in %r' % (k, msg, out[-1500:]))
        check(rc == 1, '--serde-check with bad records: exit %d' % rc)
        rc, out, err = kiln('conform', *sel, '--serde-check', os.path.join(tmp, 'absent.jsonl'))
        check(rc == 1 and 'kiln conform: --serde-check: ' in err and 'absent.jsonl' in err, err)
        with open(bad, 'w') as f:
            f.write('{"id": "options.parse/11"}\nnot json\n')
        rc, out, err = kiln('conform', *sel, '--serde-check', bad)
        check(rc == 1 and '--serde-check: %s: a malformed line' % bad in err, '%d %r' % (rc, err))
    finally:
        shutil.rmtree(tmp)


def test_unused_expectation_and_skip_flag_in_results():
    tmp = tempfile.mkdtemp(prefix='kiln-conform-opt.')
    try:
        exp = os.path.join(tmp, 'exp.txt')
        with open(exp, 'w') as f:
            f.write('options.parse/99999 fail a test that does not exist\n')
        res = os.path.join(tmp, 'r.json')
        rc, out, err = kiln('conform', '--backend', 'ref', '--category', 'options.parse',
                            '--expectations', exp, '--results', res)
        check("NOTE %s:1: 'options.parse/99999' matches no selected test" % exp in out,
              'no note for an expectation that matches nothing: %r' % out[-800:])
        # a results file that claims --skip-flag EdgeCase, yet EdgeCase tests ran
        with open(res) as f:
            d = json.load(f)
        d['options']['skipFlags'] = ['EdgeCase']
        with open(res, 'w') as f:
            json.dump(d, f)
        rc, out, err = kiln('conform', '--check-results', res)
        check(rc == 1 and re.search(r"'options\.parse/\d+' carries skipped flag EdgeCase but is pass",
                                    out + err), '%d %r' % (rc, (out + err)[-800:]))
    finally:
        shutil.rmtree(tmp)


if __name__ == '__main__':
    sys.exit(harness.run_tests(globals(), 'test_conform_options'))

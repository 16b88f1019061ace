#!/usr/bin/env python3
"""test_results_file.py KILN -- `kiln conform --check-results` refuses a
malformed results file, naming the field (make test-cli).

docs/conformance.md ("Results files"): a results file is read back field by
field before it is checked against the suite; one that is not JSON, is of
another format or version, or has a field of the wrong type is refused with
a message naming the file and the field, and the check fails.  Each case
below takes a real results file (`kiln conform --results`) and breaks one
thing.  (A well-formed but tampered file is tests/cli/test_verdict.py's.)

Python 3 standard library only; every test runs, the exit status is 1 when
any fails.
"""
import copy
import json
import os
import shutil
import sys
import tempfile

import harness

ROOT = harness.ROOT
KILN = harness.kiln_binary()
TMP = tempfile.mkdtemp(prefix='kiln-results.')


check = harness.check


def kiln(*args):
    return harness.run_kiln(KILN, *args)


_BASE = {}


def base():
    if 'doc' not in _BASE:
        path = os.path.join(TMP, 'base.json')
        rc, out, err = kiln('conform', '--backend', 'ref', '--category', 'options.parse',
                            '--results', path)
        check(os.path.exists(path), 'no results file: exit %d: %s' % (rc, err))
        with open(path) as f:
            _BASE['doc'] = json.load(f)
    return copy.deepcopy(_BASE['doc'])


def results_of(doc, name):
    path = os.path.join(TMP, name + '.json')
    with open(path, 'w') as f:
        if isinstance(doc, str):
            f.write(doc)
        else:
            json.dump(doc, f)
    return path


def mut(fn):
    def f(d):
        fn(d)
        return d
    return f


CASES = [
    ('not JSON', lambda d: '{"format": ', 'invalid JSON'),
    ('another format', mut(lambda d: d.update(format='junit')), 'not a results file of format'),
    ('another version', mut(lambda d: d.update(formatVersion=2)), 'not a results file of format'),
    ('suite missing', mut(lambda d: d.pop('suite')), 'suite'),
    ('options a list', mut(lambda d: d.update(options=[])), 'options'),
    ('summary missing', mut(lambda d: d.pop('summary')), 'summary'),
    ('results an object', mut(lambda d: d.update(results={})), 'results'),
    ('suite file not an object', mut(lambda d: d['suite']['files'].insert(0, 'x')),
     'suite.files[0]: must be an object'),
    ('suite file without sha256', mut(lambda d: d['suite']['files'][0].pop('sha256')),
     'suite.files[0].sha256'),
    ('categories not a list', mut(lambda d: d['options'].update(categories='numerics')),
     'options.categories'),
    ('category not a string', mut(lambda d: d['options'].update(categories=[1])),
     'options.categories[0]: must be a string'),
    ('skipFlags item not a string', mut(lambda d: d['options'].update(skipFlags=[None])),
     'options.skipFlags[0]: must be a string'),
    ('filter a number', mut(lambda d: d['options'].update(filter=3)),
     'options.filter: must be a string or null'),
    ('exclude missing', mut(lambda d: d['options'].pop('exclude')),
     'options.exclude: must be a string or null'),
    ('shard missing', mut(lambda d: d['options'].pop('shard')), 'options.shard'),
    ('strict a string', mut(lambda d: d['options'].update(strict='no')),
     'options.strict: must be true or false'),
    ('expectations a list', mut(lambda d: d['options'].update(expectations=[])),
     'options.expectations: must be an object or null'),
    ('expectations without sha256', mut(lambda d: d['options'].update(expectations={'path': 'x'})),
     'options.expectations.sha256'),
    ('result not an object', mut(lambda d: d['results'].insert(0, 5)), 'results[0]: must be an object'),
    ('result without id', mut(lambda d: d['results'][0].pop('id')), 'results[0].id'),
    ('result unknown', mut(lambda d: d['results'][0].update(result='maybe')),
     "results[0].result: 'maybe' is not pass, fail, unsupported, skip or invalid-vector"),
    ('segments missing', mut(lambda d: d['results'][0].pop('segments')), 'results[0].segments'),
    ('native not an integer', mut(lambda d: d['results'][0]['segments'].update(native='1')),
     'results[0].segments.native'),
    ('expected a pass', mut(lambda d: d['results'][0].update(expected={'result': 'pass'})),
     'results[0].expected: must be an object whose result is fail, unsupported or skip'),
    ('expected not an object', mut(lambda d: d['results'][0].update(expected=[])),
     'results[0].expected: must be an object whose result is'),
]


def test_malformed_results_files():
    bad = []
    for k, (what, fn, want) in enumerate(CASES):
        path = results_of(fn(base()), 'case%d' % k)
        rc, out, err = kiln('conform', '--check-results', path)
        if rc == 0 or want not in err or path not in err:
            bad.append('%s: exit %d, stderr %r' % (what, rc, err[-400:]))
    check(not bad, '\n  '.join(bad))


def test_missing_results_file():
    path = os.path.join(TMP, 'absent.json')
    rc, out, err = kiln('conform', '--check-results', path)
    check(rc != 0 and path in err, 'a missing results file: exit %d %r' % (rc, err))


def test_results_file_unwritable():
    d = os.path.join(TMP, 'no-such-dir', 'r.json')
    rc, out, err = kiln('conform', '--backend', 'ref', '--category', 'options.parse',
                        '--filter', 'options.parse/1', '--results', d)
    check(rc != 0 and 'no-such-dir' in err, '--results into a missing directory: %d %r' % (rc, err))


if __name__ == '__main__':
    try:
        sys.exit(harness.run_tests(globals(), 'test_results_file'))
    finally:
        shutil.rmtree(TMP, ignore_errors=True)

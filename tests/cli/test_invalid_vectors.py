#!/usr/bin/env python3
"""test_invalid_vectors.py KILN -- every way a vector file or a test can be
malformed is reported, precisely, and never runs (make test-cli).

docs/conformance.md ("Vector files"): a file that breaks the format is
refused as a whole, naming the file and the field (`kiln conform` exits 1,
nothing runs); a test that breaks its category's schema is counted INVALID,
with a message naming the field, while the file's other tests run.  Each
case below takes a real test of conformance/vectors/, breaks one thing, and
checks the message that comes back.

Python 3 standard library only; every test runs, the exit status is 1 when
any fails.
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import harness

ROOT = harness.ROOT
KILN = harness.kiln_binary()
VECTORS = os.path.join(ROOT, 'conformance', 'vectors')


check = harness.check


def load(category):
    with open(os.path.join(VECTORS, category + '.json')) as f:
        return json.load(f)


def first(category, pred=lambda t: True):
    d = load(category)
    for g in d['testGroups']:
        for t in g['tests']:
            if pred(t):
                return g['type'], copy.deepcopy(t)
    raise AssertionError('%s: no such test' % category)


def conform(vdir, category, *extra, backend='ref'):
    p = subprocess.run([KILN, 'conform', '--backend', backend, '--vectors', vdir,
                        '--category', category, '--timeout', '60'] + list(extra),
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def write(vdir, category, group_type, tests, **top):
    doc = {'suite': 'kiln-conformance', 'suiteVersion': '1.1.0', 'category': category,
           'notes': {}, 'numberOfTests': len(tests),
           'testGroups': [{'type': group_type, 'tests': tests}]}
    doc.update(top)
    for t in tests:
        for fl in t.get('flags', []) if isinstance(t, dict) and isinstance(t.get('flags'), list) else []:
            if isinstance(fl, str):
                doc['notes'].setdefault(fl, 'a flag')
    with open(os.path.join(vdir, category + '.json'), 'w') as f:
        json.dump(doc, f)
    return doc


def mutated_tests(base, cases, last):
    """One copy of base per case (tcId k, comment 'case k'), changed by the
    case's mutate(test), then base itself unchanged, commented `last`."""
    tests = []
    for k, (_, mutate, _) in enumerate(cases, 1):
        t = copy.deepcopy(base)
        t['tcId'] = k
        t['comment'] = 'case %d' % k
        mutate(t)
        tests.append(t)
    ok = copy.deepcopy(base)
    ok['tcId'] = len(cases) + 1
    ok['comment'] = last
    tests.append(ok)
    return tests


def run_invalid(category, pred, cases):
    """cases: (what, mutate(test) -> None, expected substring of the message).
    All go into one file; each must come back INVALID with its message."""
    group, base = first(category, pred)
    tests = mutated_tests(base, cases, 'the unbroken test')
    vdir = tempfile.mkdtemp(prefix='kiln-invalid.')
    try:
        write(vdir, category, group, tests)
        rc, out, err = conform(vdir, category)
    finally:
        shutil.rmtree(vdir)
    got = {}
    for m in re.finditer(r'^INVALID %s/(\d+) \(case \d+\): invalid vector: (.*)$' %
                         re.escape(category), out, re.M):
        got[int(m.group(1))] = m.group(2)
    bad = []
    for k, (what, _, want) in enumerate(cases, 1):
        if k not in got:
            bad.append('%s: not reported invalid' % what)
        elif want not in got[k]:
            bad.append('%s: message %r lacks %r' % (what, got[k], want))
    check(not bad, '%s:\n  ' % category + '\n  '.join(bad) + '\n' + err[-2000:])
    check(rc == 1, '%s: exit %d with invalid tests' % (category, rc))
    summary = [ln for ln in out.splitlines() if ln.startswith(category + ' ')]
    check(summary and summary[0].split()[1] == '1' and summary[0].split()[5] == str(len(cases)),
          '%s: the unbroken test passes and the others are invalid: %r' % (category, summary))


def setk(key, value):
    def f(t):
        t[key] = value
    return f


def delk(key):
    def f(t):
        del t[key]
    return f


def test_options_parse():
    valid = lambda t: t['result'] == 'valid'
    run_invalid('options.parse', valid, [
        ('unknown set', setk('set', 'bogus'), "set: 'bogus' is not enable, disable or dump"),
        ('unknown source', setk('source', 'file'), "source: 'file' is not env or execute"),
        ('unknown field', setk('colour', 'red'), 'colour: unknown field'),
        ('missing input', delk('input'), 'input: missing field'),
        ('input not a string', setk('input', 5), 'input: must be a string, not an integer'),
        ('dump from execute', lambda t: t.update(source='execute', set='dump'),
         "'dump' has no execute list"),
        ('error on a valid test', setk('error', {}), 'error: does not apply to a valid'),
        ('invalid without error', lambda t: t.update(result='invalid'),
         'canonical: does not apply to an invalid test'),
        ('canonical not a string', setk('canonical', None), 'canonical: must be a string, not null'),
    ])


ERR = {'kind': 'unknown', 'offset': 0, 'source': 'KILN_ENABLE', 'token': 'bogus'}


def test_options_precedence():
    plain = lambda t: 'createError' not in t and t['result'] == 'valid' and t['steps']
    def step0(fn):
        def f(t):
            fn(t['steps'][0])
        return f
    run_invalid('options.precedence', plain, [
        ('step not an object', lambda t: t['steps'].insert(0, 7), 'steps[0]: must be an object, not an integer'),
        ('unknown action', step0(lambda s: s.update(action='jump')), "steps[0].action: 'jump' is not"),
        ('levels missing', step0(lambda s: s.pop('levels')), 'steps[0].levels: missing field'),
        ('levels key unknown', step0(lambda s: s['levels'].update(device='')), 'steps[0].levels.device: unknown field'),
        ('levels value not a string', step0(lambda s: s['levels'].update(plan=1)), 'steps[0].levels.plan: must be a string'),
        ('enable not a list', step0(lambda s: s.update(enable='fma')), 'steps[0].enable: must be a list'),
        ('enable item not a string', step0(lambda s: s.update(enable=[1])), 'steps[0].enable[0]: must be a string'),
        ('error and canonical', step0(lambda s: s.update(error=dict(ERR, source='execute enable[0]'))),
         'canonical: does not apply to a step that expects an error'),
        ('createError with steps', setk('createError', ERR), 'steps: must be empty when'),
        ('env not an object', setk('env', []), 'env: must be an object or null, not a list'),
        ('env value not a string', setk('env', {'enable': 3}), 'env.enable: must be a string or null'),
        ('setenv step with levels', lambda t: t['steps'].insert(0, {'action': 'setenv', 'env': {}, 'levels': {}}),
         'steps[0].levels: unknown field'),
        ('invalid but no error', setk('result', 'invalid'), "result: 'invalid', but no step expects an error"),
        ('steps not a list', setk('steps', {}), 'steps: must be a list'),
    ])


def test_cache_isolation():
    plain = lambda t: not t.get('concurrent') and 'env' not in t
    def step0(fn):
        def f(t):
            fn(t['steps'][0])
        return f
    run_invalid('cache.isolation', plain, [
        ('no steps', setk('steps', []), 'steps: must list at least one step'),
        ('threads without concurrent', setk('threads', 4), 'threads: applies only with'),
        ('concurrent a string', setk('concurrent', 'yes'), 'concurrent: must be true or false, not a string'),
        ('threads out of range', lambda t: t.update(concurrent=True, threads=65), 'threads: 65 is outside 1..64'),
        ('threads not an integer', lambda t: t.update(concurrent=True, threads='2'),
         'threads: must be an integer in 1..64'),
        ('step not an object', lambda t: t['steps'].insert(0, []), 'steps[0]: must be an object, not a list'),
        ('expect.plan unknown', step0(lambda s: s['expect'].update(plan='maybe')), "steps[0].expect.plan: 'maybe' is not"),
        ('expect.db unknown', step0(lambda s: s['expect'].update(db='lost')), "steps[0].expect.db: 'lost' is not"),
        ('pass out of range', step0(lambda s: s.update(**{'pass': 3})), 'steps[0].pass: 3 is outside 1..2'),
        ('compiles negative', step0(lambda s: s['expect'].update(compiles=-1)), 'steps[0].expect.compiles: -1 is outside'),
        ('expect missing', step0(lambda s: s.pop('expect')), 'steps[0].expect: missing field'),
        ('inputs not a list', step0(lambda s: s.update(inputs={})), 'steps[0].inputs: must be a list'),
        ('input not a tensor', step0(lambda s: s.update(inputs=[3])), 'steps[0].inputs[0]: must be a tensor object, not an integer'),
        ('input unknown field', step0(lambda s: s['inputs'][0].update(layout='nchw')), 'steps[0].inputs[0].layout: unknown field'),
        ('output check missing', step0(lambda s: s['outputs'][0].pop('check')), 'steps[0].outputs[0].check: missing field'),
        ('output check kind unknown', step0(lambda s: s['outputs'][0].update(check={'kind': 'close'})),
         "steps[0].outputs[0].check.kind: 'close' is not exact, ulp or abs"),
        ('max on an exact check', step0(lambda s: s['outputs'][0].update(check={'kind': 'exact', 'max': 1})),
         'steps[0].outputs[0].check.max: does not apply to this check kind'),
        ('bounds on an ulp check', step0(lambda s: s['outputs'][0].update(check={'kind': 'ulp', 'max': 1, 'bounds': []})),
         'steps[0].outputs[0].check.bounds: does not apply to this check kind'),
        ('fusion missing', delk('fusion'), 'fusion: missing field'),
    ])


def test_numerics():
    plain = lambda t: t['result'] == 'valid' and 'options' in t
    run_invalid('numerics', plain, [
        ('outputs on an invalid test', setk('result', 'invalid'), 'outputs: does not apply to an invalid test'),
        ('options not an object', setk('options', 'fast'), 'options: must be an object'),
        ('options.enable not a list', lambda t: t['options'].update(enable='fma'), 'options.enable: must be a list'),
        ('inputs missing', delk('inputs'), 'inputs: missing field'),
        ('dtype unknown', lambda t: t['inputs'][0].update(dtype='f8'), 'dtype'),
        ('data too short', lambda t: t['inputs'][0].update(data=[]), 'inputs[0]'),
        ('output check not an object', lambda t: t['outputs'][0].update(check=[]),
         'outputs[0].check: must be an object, not a list'),
        ('error with outputs', setk('error', {'status': 'KILN_ERR_INVALID'}),
         'error: does not apply to a valid or acceptable test'),
    ])


def test_file_level_errors():
    group, base = first('options.parse', lambda t: t['result'] == 'valid')
    cases = [
        ('top level a list', lambda d: [], 'top level must be an object'),
        ('wrong suite', lambda d: dict(d, suite='other'), "'suite' is 'other', expected 'kiln-conformance'"),
        ('suite version 2', lambda d: dict(d, suiteVersion='2.0.0'), "suiteVersion '2.0.0' is not supported"),
        ('suite missing', lambda d: {k: v for k, v in d.items() if k != 'suite'}, "suite"),
        ('notes a list', lambda d: dict(d, notes=[]), "'notes' must be an object"),
        ('note not a string', lambda d: dict(d, notes={'EdgeCase': 1}), 'notes.EdgeCase: must be a string'),
        ('testGroups not a list', lambda d: dict(d, testGroups={}), "'testGroups' must be a list"),
        ('numberOfTests negative', lambda d: dict(d, numberOfTests=-1), "'numberOfTests' must be a non-negative integer"),
        ('numberOfTests wrong', lambda d: dict(d, numberOfTests=5), "'numberOfTests' is 5 but the groups hold 1 tests"),
        ('group without tests', lambda d: dict(d, testGroups=[{'type': group}], numberOfTests=0),
         "testGroups[0]: must be an object with a 'tests' list"),
        ('group without type', lambda d: dict(d, testGroups=[{'tests': d['testGroups'][0]['tests']}]),
         "type"),
        ('test not an object', lambda d: dict(d, testGroups=[{'type': group, 'tests': [1]}]),
         'a test must be an object'),
        ('flags missing', lambda d: dict(d, testGroups=[{'type': group, 'tests': [
            {k: v for k, v in base.items() if k != 'flags'}]}]), "missing field 'flags'"),
        ('flags not a list', lambda d: dict(d, testGroups=[{'type': group, 'tests': [dict(base, flags='x')]}]),
         "'flags' must be a list"),
        ('flag not a string', lambda d: dict(d, testGroups=[{'type': group, 'tests': [dict(base, flags=[1])]}]),
         'flags[0] must be a string'),
        ('tcId twice', lambda d: dict(d, numberOfTests=2, testGroups=[{'type': group, 'tests': [base, base]}]),
         'tcId %d appears twice' % base['tcId']),
        ('not JSON', None, 'options.parse.json'),
    ]
    bad = []
    for what, mutate, want in cases:
        vdir = tempfile.mkdtemp(prefix='kiln-invalid.')
        try:
            doc = write(vdir, 'options.parse', group, [copy.deepcopy(base)])
            path = os.path.join(vdir, 'options.parse.json')
            with open(path, 'w') as f:
                if mutate is None:
                    f.write('{"suite": ')
                else:
                    json.dump(mutate(doc), f)
            rc, out, err = conform(vdir, 'options.parse')
        finally:
            shutil.rmtree(vdir)
        if rc == 0 or want not in err or path not in err:
            bad.append('%s: exit %d, stderr %r' % (what, rc, err[-300:]))
        elif re.search(r'^(ok|not ok|PASS|FAIL|INVALID) ', out, re.M):
            bad.append('%s: a test ran from a refused file: %r' % (what, out[-300:]))
    check(not bad, '\n  '.join(bad))


if __name__ == '__main__':
    sys.exit(harness.run_tests(globals(), 'test_invalid_vectors'))

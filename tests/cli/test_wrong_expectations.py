#!/usr/bin/env python3
"""test_wrong_expectations.py KILN PLUGIN -- a test whose expectation the backend
does not meet FAILS, with a message that says what was expected and what
came (make test-cli).

Each case takes a real, well-formed test of conformance/vectors/ and changes
what it expects (a canonical text, an error's kind, an output's bits, dtype
or shape, a cache outcome, a compile count, the generated inputs of a
differential test) so that the reference backend, which passes the real
test, must fail this one.  All cases of a category go into one file with
the unchanged test, which must still pass.  This is the runner's failure
reporting (conformance/cases.c), which the real suite on a correct backend
never reaches.

Python 3 standard library only; every test runs, the exit status is 1 when
any fails.
"""
import copy
import os
import re
import shutil
import sys
import tempfile

import harness
from test_invalid_vectors import check, conform, first, mutated_tests, write

# differential tests compare a backend with ref, so they need another one:
# the test plugin (tests/plugins/kiln_test_plugin.c)
PLUGIN = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    'build', 'plugins', 'libkiln_test_plugin.so')
ERR = {'kind': 'unknown', 'offset': 0, 'source': 'KILN_ENABLE', 'token': 'bogus'}


def run_failing(category, pred, cases, backend='ref'):
    group, base = first(category, pred)
    tests = mutated_tests(base, cases, 'the unchanged test')
    vdir = tempfile.mkdtemp(prefix='kiln-wrong.')
    try:
        write(vdir, category, group, tests)
        rc, out, err = conform(vdir, category, backend=backend)
    finally:
        shutil.rmtree(vdir)
    got = {}
    for m in re.finditer(r'^FAIL %s/(\d+) \(case \d+\): (.*)$' % re.escape(category), out, re.M):
        got[int(m.group(1))] = m.group(2)
    bad = []
    for k, (what, _, want) in enumerate(cases, 1):
        if k not in got:
            bad.append('%s: did not fail' % what)
        elif not re.search(want, got[k]):
            bad.append('%s: message %r does not match %r' % (what, got[k], want))
    check(not bad, '%s:\n  ' % category + '\n  '.join(bad) + '\n' + out[-1500:] + err[-1500:])
    check(rc == 1, '%s: exit %d with failing tests' % (category, rc))
    summary = [ln for ln in out.splitlines() if ln.startswith(category + ' ')]
    check(summary and summary[0].split()[1:3] == ['1', str(len(cases))],
          '%s: the unchanged test passes, the others fail: %r' % (category, summary))


def test_options_parse():
    valid = lambda t: t['result'] == 'valid' and t['source'] == 'env' and t['set'] == 'enable' and t['input']
    def as_invalid(t):
        t['result'] = 'invalid'
        del t['canonical']
        t['error'] = dict(ERR)
    def wrong_error(t):
        as_invalid(t)
        t['input'] = 'bogus_option'
        t['error'] = dict(ERR, kind='syntax', offset=3)
    run_failing('options.parse', valid, [
        ('another canonical text', lambda t: t.update(canonical='fast_math'),
         r'canonical text of ".*": got ".*", expected "fast_math"'),
        ('an error that does not come', as_invalid, r'kiln_options_from_env succeeded; expected KILN_ERR_OPTION_UNKNOWN at offset 0'),
        ('another error', wrong_error, r"expected KILN_ERR_OPTION_SYNTAX at offset 3, token 'bogus', source 'KILN_ENABLE'; got KILN_ERR_OPTION_UNKNOWN at offset 0, token 'bogus_option'"),
    ])


def test_options_precedence():
    plain = lambda t: 'createError' not in t and t['result'] == 'valid' and t['steps'] and \
        t['steps'][0]['action'] == 'execute'
    def step0(fn):
        def f(t):
            fn(t['steps'][0])
        return f
    run_failing('options.precedence', plain, [
        ('another plan level', step0(lambda s: s['levels'].update(plan='enable=fast_math')),
         r'plan-level options ".*", expected "enable=fast_math"'),
        ('another canonical', step0(lambda s: s.update(canonical='disable=fma')),
         r'expected "disable=fma"'),
        ('an execute error that does not come',
         lambda t: t.update(result='invalid', steps=[{'action': 'execute', 'enable': [], 'disable': [],
                                                      'error': dict(ERR, source='execute enable[0]')}]),
         r'step 0 \(execute\): kiln_execute succeeded; expected KILN_ERR_OPTION_UNKNOWN at offset 0'),
        ('a create error that does not come',
         lambda t: t.update(result='invalid', steps=[], createError=ERR),
         r'kiln_context_create succeeded; expected KILN_ERR_OPTION_UNKNOWN at offset 0'),
    ])


def test_cache_isolation():
    plain = lambda t: not t.get('concurrent') and 'env' not in t and len(t['steps']) >= 3
    def step(i, fn):
        def f(t):
            fn(t['steps'][i])
        return f
    run_failing('cache.isolation', plain, [
        ('a plan hit on the first execute', step(0, lambda s: s['expect'].update(plan='hit')),
         r'plan'),
        ('a kernel hit on the first execute', step(0, lambda s: s['expect'].update(kernels='hit')),
         r'kernel'),
        ('a plan miss on a repeat', step(2, lambda s: s['expect'].update(plan='miss')), r'plan'),
        ('compiles on a hit', step(2, lambda s: s['expect'].update(compiles=3)),
         r'0 compiles, expected 3'),
        ('other output bits', step(0, lambda s: s['outputs'][0].update(
            data=['0x7f800000'] * len(s['outputs'][0]['data']))), r'outputs\[0\]'),
    ])


def test_numerics():
    plain = lambda t: t['result'] == 'valid' and 'dtype=f32' in t['flags'] and \
        any(f == 'op=add' for f in t['flags']) and t['outputs'][0]['check']['kind'] == 'exact' and \
        len(t['outputs'][0]['data']) > 0
    def out0(fn):
        def f(t):
            fn(t['outputs'][0])
        return f
    def flip(o):
        o['data'] = ['0x%08x' % (int(o['data'][0], 16) ^ 1)] + o['data'][1:]
    run_failing('numerics', plain, [
        ('one bit off', out0(flip), r'outputs\[0\]'),
        ('another dtype', out0(lambda o: o.update(dtype='f64', data=['0x0000000000000000'] * len(o['data']))),
         r'outputs\[0\]: dtype f32, expected f64'),
        ('another shape', out0(lambda o: o.update(shape=o['shape'] + [1])),
         r'outputs\[0\]: shape'),
        ('an error that does not come', lambda t: (t.pop('outputs'), t.update(
            result='invalid', error={'status': 'KILN_ERR_SHAPE'})),
         r'kiln_execute succeeded; expected KILN_ERR_SHAPE'),
    ])
    invalid = lambda t: t['result'] == 'invalid' and t['error']['status'] == 'KILN_ERR_SHAPE'
    run_failing('numerics', invalid, [
        ('another error status', lambda t: t.update(error={'status': 'KILN_ERR_DTYPE'}),
         r'kiln_execute: KILN_ERR_SHAPE, expected KILN_ERR_DTYPE'),
    ])


def test_differential():
    small = lambda t: t['result'] == 'valid' and all(
        x['shape'] and x['shape'][0] <= 1 << 20 for x in t['inputs'])
    def first_input(t):
        t['inputsFirst'][0][0] = '0x%08x' % (int(t['inputsFirst'][0][0], 16) ^ 1)
    run_failing('differential', small, [
        ('other generated inputs', first_input, r'input generation disagrees with the vector'),
        ('another seed', lambda t: t.update(seed=t['seed'] + 1), r'input generation disagrees'),
    ], backend=PLUGIN)


if __name__ == '__main__':
    sys.exit(harness.run_tests(globals(), 'test_wrong_expectations'))

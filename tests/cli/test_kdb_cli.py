#!/usr/bin/env python3
"""test_kdb_cli.py KILN -- `kiln cache` end to end (make test-cli).

The kernel database commands of docs/kernel-db.md on a database that a real
run filled (`kiln run --backend nvrtc --enable kernel_db`: NVRTC compiles
without a GPU): `list` and `stats` (text and JSON) agree with the files in
the directory; `verify` passes a sound database, and reports and removes a
corrupted entry, a foreign file and a stale temporary file of a writer
(exit 1); `clear` empties it; a directory that breaks the security rules or
does not exist is refused with nothing on stdout, and is never created;
usage errors exit 2; JSON output stays valid for a directory name that
needs escaping.  Also `kiln cache counters` after runs of a fusion.

Python 3 standard library only; every test runs, the exit status is 1 when
any fails.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import harness

ROOT = harness.ROOT
KILN = harness.kiln_binary()
FUSION = os.path.join(ROOT, 'examples', 'relu_mul_add.kf')
STALE_S = 3600  # older than KILN__KDB_STALE_SECONDS (runtime/kernel_db.h)


def kiln(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith('KILN_')}
    e.update(env or {})
    p = subprocess.run([KILN] + list(args), cwd=ROOT, env=e, capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


check = harness.check


def new_dir(name='kdb'):
    d = os.path.join(tempfile.mkdtemp(prefix='kiln-kdb-cli.'), name)
    os.mkdir(d, 0o700)
    return d


def fill(d, *extra):
    rc, out, err = kiln('run', FUSION, '--backend', 'nvrtc', '--random', '1',
                        '--enable', 'kernel_db', *extra, env={'KILN_CACHE_DIR': d})
    check(rc == 0, 'run --enable kernel_db: exit %d: %s' % (rc, err))


def entries(d):
    return sorted(f for f in os.listdir(d) if f.endswith('.kdb'))


_FILLED = {}


def filled():
    """A directory with two entries (the default options and disable=fma)."""
    if 'd' not in _FILLED:
        d = new_dir()
        fill(d)
        fill(d, '--disable', 'fma')
        _FILLED['d'] = d
    return _FILLED['d']


def copy_db(src):
    d = new_dir()
    for f in os.listdir(src):
        with open(os.path.join(src, f), 'rb') as a, open(os.path.join(d, f), 'wb') as b:
            b.write(a.read())
        os.chmod(os.path.join(d, f), 0o600)
    return d


def test_list_text_and_json():
    d = filled()
    names = entries(d)
    check(len(names) == 2, 'two runs with different options: %d entries' % len(names))
    rc, out, err = kiln('cache', 'list', '--dir', d, '--json')
    check(rc == 0 and err == '', 'list --json: exit %d: %s' % (rc, err))
    items = json.loads(out)
    check(sorted(i['name'] for i in items) == names, 'list --json names %r' % items)
    sizes = {n: os.path.getsize(os.path.join(d, n)) for n in names}
    for i in items:
        check(i['readable'] is True and i['backend'] == 'nvrtc', 'entry %r' % i)
        check(i['bytes'] == sizes[i['name']], 'bytes %r vs %r' % (i, sizes))
        check(0 < i['payload_bytes'] < i['bytes'], 'payload bytes %r' % i)
        check(i['versions'].startswith('nvrtc '), 'versions %r' % i)
        check('archs=sm_90,sm_80' in i['identity'], 'identity %r' % i)
        check(0 <= i['age_s'] < 600, 'age %r' % i)
    check(sorted(i['options'] for i in items) == ['', 'disable=fma'],
          'options of the two entries: %r' % [i['options'] for i in items])
    rc, out, err = kiln('cache', 'list', '--dir=' + d)
    check(rc == 0, 'list: exit %d' % rc)
    lines = out.splitlines()
    check(lines[-1] == '2 entries, %d bytes in %s' % (sum(sizes.values()), d),
          'list summary %r' % lines[-1])
    check(sum(1 for ln in lines if ln.split()[0] in names) == 2, 'list lines %r' % lines)
    check("options 'disable=fma'" in out, 'list shows the options: %r' % out)


def test_stats_text_and_json_and_env_dir():
    d = filled()
    size = sum(os.path.getsize(os.path.join(d, n)) for n in entries(d))
    rc, out, err = kiln('cache', 'stats', '--json', env={'KILN_CACHE_DIR': d})
    check(rc == 0, 'stats --json: exit %d: %s' % (rc, err))
    s = json.loads(out)
    check(s['dir'] == d and s['entries'] == 2 and s['bytes'] == size, 'stats %r' % s)
    # a cold lookup that stores is a store, not a miss (docs/kernel-db.md)
    check(s['stores'] == 2 and s['misses'] == 0 and s['hits'] == 0, 'counters %r' % s)
    check(s['temporary_files'] == 0 and s['corrupt'] == 0 and s['max_bytes'] > size, 'stats %r' % s)
    rc, out, _ = kiln('cache', 'stats', '--dir', d)
    check(rc == 0, 'stats: exit %d' % rc)
    check('entries          2 (%d bytes; cap %d bytes)' % (size, s['max_bytes']) in out,
          'stats text %r' % out)
    check('counters         0 hits, 0 misses, 0 corrupt, 2 stores, 0 refused, 0 evictions'
          in out, 'stats counters %r' % out)
    # a hit is counted by the next process
    fill(d)
    rc, out, _ = kiln('cache', 'stats', '--dir', d, '--json')
    check(json.loads(out)['hits'] == 1, 'a warm run is a hit: %r' % out)


def test_verify_sound_then_damaged():
    d = copy_db(filled())
    rc, out, err = kiln('cache', 'verify', '--dir', d)
    check(rc == 0, 'verify of a sound database: exit %d: %s%s' % (rc, out, err))
    check(out == '2 entries checked in %s: 0 bad, 0 removed\n' % d, 'verify %r' % out)
    victim = entries(d)[0]
    path = os.path.join(d, victim)
    with open(path, 'r+b') as f:
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xff]))
    tmp = os.path.join(d, '.tmp.12345.stale')
    with open(tmp, 'wb') as f:
        f.write(b'half an entry')
    old = time.time() - STALE_S * 2
    os.utime(tmp, (old, old))
    fresh = os.path.join(d, '.tmp.12346.fresh')  # a writer still at work
    with open(fresh, 'wb') as f:
        f.write(b'x')
    rc, out, err = kiln('cache', 'list', '--dir', d, '--json')
    items = json.loads(out)
    check(sum(1 for i in items if i.get('temporary')) == 2, 'list shows temporary files %r' % items)
    check([i['readable'] for i in items if i['name'] == victim] == [False],
          'a corrupted entry is listed unreadable: %r' % items)
    rc, out, err = kiln('cache', 'list', '--dir', d)
    check('unreadable: ' in out and '(temporary file of a writer)' in out, 'list text %r' % out)
    rc, out, err = kiln('cache', 'verify', '--dir', d, '--json')
    check(rc == 1, 'verify of a damaged database: exit %d' % rc)
    v = json.loads(out)
    bad = {b['name']: b for b in v['bad']}
    check(set(bad) == {victim, '.tmp.12345.stale'}, 'bad %r' % v)
    check(all(b['removed'] for b in bad.values()), 'removed %r' % v)
    check('stale temporary file' in bad['.tmp.12345.stale']['why'], 'why %r' % v)
    check(v['entries'] == 2 and v['removed'] == 2, 'verify counts %r' % v)
    check(not os.path.exists(path) and not os.path.exists(tmp), 'bad files still there')
    check(os.path.exists(fresh), 'a fresh temporary file must be left alone')
    rc, out, err = kiln('cache', 'verify', '--dir', d)
    check(rc == 0 and out == '1 entries checked in %s: 0 bad, 0 removed\n' % d,
          'verify after the repair: %d %r' % (rc, out))


def test_verify_text_reports_each_bad_entry():
    d = copy_db(filled())
    victim = entries(d)[1]
    with open(os.path.join(d, victim), 'r+b') as f:
        f.truncate(10)
    rc, out, err = kiln('cache', 'verify', '--dir', d)
    check(rc == 1, 'verify: exit %d' % rc)
    check(out.startswith('removed %s: ' % victim), 'verify text %r' % out)
    check(out.splitlines()[-1] == '2 entries checked in %s: 1 bad, 1 removed' % d, 'verify %r' % out)


def test_clear():
    d = copy_db(filled())
    n = len(os.listdir(d))
    rc, out, err = kiln('cache', 'clear', '--dir', d)
    check(rc == 0, 'clear: exit %d: %s' % (rc, err))
    check(out.startswith('removed ') and out.endswith(' files from %s\n' % d), 'clear %r' % out)
    check(entries(d) == [] and os.path.isdir(d), 'clear left %r' % os.listdir(d))
    check(int(out.split()[1]) >= 2 and int(out.split()[1]) <= n, 'clear count %r' % out)
    rc, out, _ = kiln('cache', 'list', '--dir', d)
    check(rc == 0 and out == '0 entries, 0 bytes in %s\n' % d, 'list after clear %r' % out)


def test_json_escapes_the_directory():
    # a directory name with a quote and a backslash: every --json output parses
    d = copy_db(filled())
    odd = os.path.join(os.path.dirname(d), 'a"b\\c')
    os.rename(d, odd)
    for sub in ('stats', 'verify', 'clear'):
        rc, out, err = kiln('cache', sub, '--dir', odd, '--json')
        check(rc == 0, '%s --json: exit %d: %s' % (sub, rc, err))
        try:
            v = json.loads(out)
        except ValueError as e:
            raise AssertionError('%s --json is not JSON (%s): %r' % (sub, e, out))
        if 'dir' in v:
            check(v['dir'] == odd, '%s: dir %r' % (sub, v['dir']))


def test_refused_directories():
    base = tempfile.mkdtemp(prefix='kiln-kdb-cli.')
    missing = os.path.join(base, 'missing')
    for sub in ('list', 'stats', 'verify', 'clear'):
        rc, out, err = kiln('cache', sub, '--dir', missing)
        check(rc == 1 and out == '', '%s on a missing directory: exit %d, stdout %r' % (sub, rc, out))
        check(missing in err and 'No such file' in err, '%s: %r' % (sub, err))
        check(not os.path.exists(missing), '%s created the directory' % sub)
    open_dir = os.path.join(base, 'open')
    os.mkdir(open_dir)
    os.chmod(open_dir, 0o777)
    for sub in ('list', 'stats', 'verify', 'clear', 'list --json'):
        rc, out, err = kiln('cache', *sub.split(), '--dir', open_dir)
        check(rc == 1 and out == '', '%s on a world-writable directory: exit %d, %r' % (sub, rc, out))
        check(err.startswith('kiln cache %s: ' % sub.split()[0]) and 'writable' in err,
              '%s: %r' % (sub, err))
    # no directory at all: no --dir, no KILN_CACHE_DIR, XDG_CACHE_HOME or HOME
    e = {k: v for k, v in os.environ.items() if k not in ('HOME', 'XDG_CACHE_HOME')}
    p = subprocess.run([KILN, 'cache', 'stats'], env={k: v for k, v in e.items()
                                                      if not k.startswith('KILN_')},
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 1 and p.stdout == '', 'no directory: exit %d %r' % (p.returncode, p.stdout))


def test_usage_errors():
    for args, what in ((['cache', 'list', 'extra'], "unexpected argument 'extra'"),
                       (['cache', 'stats', '--bogus'], '--bogus'),
                       (['cache', 'verify', '--dir'], '--dir')):
        rc, out, err = kiln(*args)
        check(rc == 2 and out == '', '%r: exit %d, stdout %r' % (args, rc, out))
        check(what in err, '%r: %r' % (args, err))
    for sub in ('list', 'clear'):
        rc, out, err = kiln('cache', sub, '--help')
        check(rc == 0 and out.startswith('usage: kiln cache list|stats|verify|clear'),
              '%s --help: %d %r' % (sub, rc, out[:80]))


def test_counters_after_runs():
    rc, out, err = kiln('cache', 'counters', '--backend', 'ref', '--json', FUSION, '--repeat', '3')
    check(rc == 0, 'cache counters: exit %d: %s' % (rc, err))
    c = json.loads(out)
    check(c['backend'] == 'ref' and c['executes'] == 3, 'counters %r' % c)
    check(c['plan_misses'] == 1 and c['plan_hits'] == 2, 'plan cache %r' % c)
    rc, out, err = kiln('cache', '--backend', 'ref', FUSION, '--repeat', '2',
                        '--plan-capacity', '4')
    check(rc == 0, 'cache: exit %d: %s' % (rc, err))
    check('plan cache       capacity 4: 1 hits, 1 misses, 0 evictions' in out, 'text %r' % out)
    check('executes         2' in out, 'text %r' % out)
    d = new_dir()
    rc, out, err = kiln('cache', '--backend', 'ref', '--json', FUSION, '--enable', 'kernel_db',
                        env={'KILN_CACHE_DIR': d})
    check(rc == 0, 'cache with kernel_db on ref: exit %d: %s' % (rc, err))
    check(json.loads(out)['kernel_db_stores'] == 0, 'ref compiles nothing to store: %r' % out)
    for bad in (['--repeat', '0'], ['--repeat', 'x'], ['--plan-capacity', '-1']):
        rc, out, err = kiln('cache', '--backend', 'ref', FUSION, *bad)
        check(rc == 2 and out == '', '%r: exit %d %r' % (bad, rc, out))


if __name__ == '__main__':
    sys.exit(harness.run_tests(globals(), 'test_kdb_cli'))

"""Context.execute on the reference backend: the seed's scenario (options
per call, cache isolation), option errors, precedence with the environment,
NumPy round trips for every dtype and views, errors naming the input,
outputs, the info record, counters, threads, the GIL, and leaks."""

import gc
import json
import os
import sys
import threading
import time
import tracemalloc
import unittest

import numpy as np

import kiln
from util import MATMUL_RELU, clean_env, run_python


def ctx_ref(**kw):
    return kiln.Context("ref", env=kw.pop("env", {}), **kw)


class SeedScenario(unittest.TestCase):
    """fd.execute(inputs, _enable_options=["fuse_matmul"]) as the seed asked
    for it: with, without, with again."""

    def test_fuse_matmul_with_without_with(self):
        f = kiln.Fusion(MATMUL_RELU)
        rng = np.random.default_rng(1)
        a = rng.standard_normal((5, 7)).astype(np.float32)
        b = rng.standard_normal((7, 3)).astype(np.float32)
        want = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0)
        with ctx_ref() as ctx:
            (y1,), i1 = ctx.execute(f, [a, b], enable_options=["fuse_matmul"],
                                    info=True)
            (y2,), i2 = ctx.execute(f, [a, b], info=True)
            (y3,), i3 = ctx.execute(f, [a, b], enable_options=["fuse_matmul"],
                                    info=True)
            stats = ctx.stats()
        for y in (y1, y2, y3):
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
        # different plans and kernels, no reuse across options
        self.assertEqual(i1["options"], "enable=fuse_matmul")
        self.assertEqual(i2["options"], "")
        self.assertEqual([s["what"] for s in i1["segments"]], ["matmul_epilogue"])
        self.assertEqual([s["what"] for s in i2["segments"]],
                         ["matmul_fallback", "pointwise"])
        self.assertNotEqual(i1["plan_id"], i2["plan_id"])
        self.assertFalse(set(i1["kernels"]) & set(i2["kernels"]))
        self.assertFalse(i1["plan_hit"])
        self.assertFalse(i2["plan_hit"])
        self.assertEqual(i1["compiles"], 1)
        self.assertEqual(i2["compiles"], 2)
        # the third call reuses the first one's plan and kernel
        self.assertTrue(i3["plan_hit"])
        self.assertEqual(i3["plan_id"], i1["plan_id"])
        self.assertEqual(i3["kernels"], i1["kernels"])
        self.assertEqual(i3["compiles"], 0)
        self.assertTrue(all(s["hit"] for s in i3["segments"]))
        self.assertEqual((stats["plan_misses"], stats["plan_hits"]), (2, 1))
        self.assertEqual(stats["compiles"], 3)
        self.assertEqual(stats["executes"], 3)

    def test_items_never_leak_into_the_next_call(self):
        f = kiln.Fusion(MATMUL_RELU)
        a, b = np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)
        with ctx_ref() as ctx:
            ctx.execute(f, [a, b], disable_options=["fma"],
                        enable_options=["fast_math"])
            _, rec = ctx.execute(f, [a, b], info=True)
            self.assertEqual(rec["options"], "")
            self.assertEqual(ctx.env_options(), "")


class OptionErrors(unittest.TestCase):
    def setUp(self):
        self.f = kiln.Fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = neg %x\n"
                             "output %y\n")
        self.ctx = ctx_ref()
        self.x = np.ones(3, np.float32)

    def tearDown(self):
        self.ctx.close()

    def run_items(self, **kw):
        with self.assertRaises(kiln.OptionError) as cm:
            self.ctx.execute(self.f, [self.x], **kw)
        return cm.exception

    def test_unknown_name(self):
        e = self.run_items(enable_options=["fast_math", "fuse_matmull"])
        self.assertIsInstance(e, kiln.OptionUnknownError)
        self.assertEqual(e.status_name, "KILN_ERR_OPTION_UNKNOWN")
        self.assertEqual((e.source, e.offset, e.token),
                         ("execute enable[1]", 0, "fuse_matmull"))
        self.assertEqual(e.valid_names, [o.name for o in kiln.options.catalogue()
                                         if o.set == "enable"])
        self.assertIn("valid enable options: fast_math, fuse_matmul", str(e))

    def test_malformed_argument(self):
        e = self.run_items(disable_options=["expr_simplify(fold,nope)"])
        self.assertIsInstance(e, kiln.OptionArgumentError)
        self.assertEqual((e.source, e.offset, e.token),
                         ("execute disable[0]", 19, "nope"))
        e = self.run_items(enable_options=["warn_register_spill(x)"])
        self.assertIsInstance(e, kiln.OptionArgumentError)
        self.assertEqual(e.offset, 20)
        self.assertEqual(e.valid_names[-1], "warn_register_spill")

    def test_item_with_a_comma(self):
        e = self.run_items(enable_options=["fast_math,fuse_matmul"])
        self.assertIsInstance(e, kiln.OptionElementError)
        self.assertEqual((e.source, e.offset, e.token),
                         ("execute enable[0]", 9, ","))

    def test_syntax(self):
        e = self.run_items(enable_options=["fast_math("])
        self.assertIsInstance(e, kiln.OptionSyntaxError)
        self.assertEqual((e.offset, e.token), (9, "("))

    def test_the_failed_call_ran_nothing(self):
        before = self.ctx.stats()["executes"]
        self.run_items(enable_options=["nope"])
        self.assertEqual(self.ctx.stats()["executes"], before)

    def test_python_misuse(self):
        with self.assertRaises(TypeError):
            self.ctx.execute(self.f, [self.x], enable_options="fast_math")
        with self.assertRaises(TypeError):
            self.ctx.execute(self.f, [self.x], enable_options=[3])
        with self.assertRaises(kiln.InvalidArgumentError) as cm:
            self.ctx.execute(self.f, [self.x], enable_options=["fast_math\0x"])
        self.assertIn("NUL", str(cm.exception))
        with self.assertRaises(TypeError):
            self.ctx.execute("not a fusion", [self.x])


class Precedence(unittest.TestCase):
    """KILN_ENABLE / KILN_DISABLE in a subprocess's environment: read at
    context creation as the C library reads them, execute items after."""

    CODE = r"""
import json, numpy as np, kiln
f = kiln.Fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = neg %x\noutput %y\n")
x = np.ones(2, np.float32)
try:
    ctx = kiln.Context("ref")
except kiln.KilnError as e:
    print(json.dumps({"error": type(e).__name__, "source": e.source,
                      "offset": e.offset}))
    raise SystemExit(0)
_, a = ctx.execute(f, [x], info=True)
_, b = ctx.execute(f, [x], enable_options=["warn_register_spill(32)"],
                   disable_options=["expr_simplify(cse)"], info=True)
print(json.dumps({"plain": a["options"], "items": b["options"],
                  "env": ctx.env_options()}))
"""

    def run_env(self, **env):
        p = run_python(self.CODE, env=clean_env(**env))
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_environment_then_items(self):
        r = self.run_env(KILN_ENABLE="fast_math,warn_register_spill(8)",
                         KILN_DISABLE="expr_simplify(fold)")
        self.assertEqual(r["plain"], "enable=fast_math,warn_register_spill(8);"
                         "disable=expr_simplify(fold)")
        self.assertEqual(r["env"], r["plain"])
        # items add and replace arguments; nothing switches fast_math off
        self.assertEqual(r["items"], "enable=fast_math,warn_register_spill(32);"
                         "disable=expr_simplify(cse)")
        self.assertEqual(r["items"], kiln.options.canonical(
            "fast_math,warn_register_spill(8)", "expr_simplify(fold)",
            enable_options=["warn_register_spill(32)"],
            disable_options=["expr_simplify(cse)"]))

    def test_no_environment(self):
        r = self.run_env()
        self.assertEqual(r["plain"], "")
        self.assertEqual(r["items"], "enable=warn_register_spill(32);"
                         "disable=expr_simplify(cse)")

    def test_malformed_environment_fails_at_creation(self):
        r = self.run_env(KILN_DISABLE="fma,,fallback")
        self.assertEqual(r, {"error": "OptionSyntaxError",
                             "source": "KILN_DISABLE", "offset": 4})

    def test_env_dict_replaces_the_environment(self):
        os.environ["KILN_ENABLE"] = "kernel_profile"
        try:
            with kiln.Context("ref", env={"KILN_DISABLE": "fma"}) as c:
                self.assertEqual(c.env_options(), "disable=fma")
            with kiln.Context("ref") as c:  # the process environment
                self.assertEqual(c.env_options(), "enable=kernel_profile")
                os.environ["KILN_ENABLE"] = "fast_math"
                self.assertEqual(c.env_options(), "enable=kernel_profile")
                c.reload_env()
                self.assertEqual(c.env_options(), "enable=fast_math")
                os.environ["KILN_ENABLE"] = "nope"
                with self.assertRaises(kiln.OptionUnknownError):
                    c.reload_env()
                self.assertEqual(c.env_options(), "enable=fast_math")
        finally:
            del os.environ["KILN_ENABLE"]
        with self.assertRaises(ValueError):
            kiln.Context("ref", env={"KILN_ENABLED": "x"})


# ------------------------------------------------------------ round trips

def bf16_bits(values):
    """bf16 bit patterns (round to nearest even) of float32 values."""
    u = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


class RoundTrips(unittest.TestCase):
    """where(c, a, b) and an identity output, for every dtype, on
    contiguous arrays and on views (sliced, transposed, broadcast)."""

    def setUp(self):
        self.ctx = ctx_ref()
        self.rng = np.random.default_rng(7)

    def tearDown(self):
        self.ctx.close()

    def values(self, dt, shape):
        r = self.rng
        if dt == "bool":
            return r.integers(0, 2, shape).astype(np.bool_)
        if dt in ("i32", "i64"):
            return r.integers(-1000, 1000, shape).astype(
                np.int32 if dt == "i32" else np.int64)
        if dt == "bf16":
            return bf16_bits(r.standard_normal(shape)).view("V2")
        return r.standard_normal(shape).astype(
            {"f16": np.float16, "f32": np.float32, "f64": np.float64}[dt])

    def test_every_dtype(self):
        for dt in kiln._arrays.DTYPE_NAMES:
            with self.subTest(dtype=dt):
                f = kiln.Fusion(
                    "kiln.fusion 1\n%%c = input bool [?, ?]\n%%a = input %s [?, ?]\n"
                    "%%b = input %s [?, ?]\n%%y = where %%c %%a %%b\noutput %%y\n"
                    "output %%a\n" % (dt, dt))
                c = self.values("bool", (6, 8))
                a, b = self.values(dt, (6, 8)), self.values(dt, (8, 6))
                cases = [
                    ("contiguous", c, a, b.T.copy()),
                    ("views", c[::2, 1::3].T.copy().T, a[::2, 1::3],
                     b.T[::2, 1::3]),
                    ("broadcast", np.broadcast_to(c[:1], (6, 8)), a,
                     np.broadcast_to(b[:1, :].T[:, :1], (6, 8))),
                ]
                for name, cc, aa, bb in cases:
                    y, ident = self.ctx.execute(f, [cc, aa, bb])
                    self.assertEqual(y.dtype, a.dtype, name)
                    self.assertTrue(y.flags.c_contiguous)
                    want = np.where(cc, aa.view(np.uint16) if dt == "bf16" else aa,
                                    bb.view(np.uint16) if dt == "bf16" else bb)
                    got = y.view(np.uint16) if dt == "bf16" else y
                    np.testing.assert_array_equal(got, want, name)
                    np.testing.assert_array_equal(
                        ident.view(np.uint16) if dt == "bf16" else ident,
                        aa.view(np.uint16) if dt == "bf16" else aa, name)

    def test_casts_and_arithmetic_on_views(self):
        f = kiln.Fusion("kiln.fusion 1\n%a = input f16 [?, ?]\n%b = input f64 [?, 1]\n"
                        "%x = cast %a f64\n%y = mul %x %b\n%z = cast %y f32\n"
                        "output %z\n")
        a = self.values("f16", (9, 10))[::3, ::-1][:, ::-1]  # positive strides
        b = self.values("f64", (3, 4))[:, 2:3]
        z, = self.ctx.execute(f, [a, b])
        want = (a.astype(np.float64) * b).astype(np.float32)
        np.testing.assert_array_equal(z, want)
        self.assertEqual(z.dtype, np.float32)

    def test_rank_zero_and_empty(self):
        f = kiln.Fusion("kiln.fusion 1\n%a = input i64 []\n%b = input i64 []\n"
                        "%y = add %a %b\noutput %y\n")
        y, = self.ctx.execute(f, [np.array(3, np.int64), np.array(4, np.int64)])
        self.assertEqual(y.shape, ())
        self.assertEqual(int(y), 7)
        g = kiln.Fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n%y = neg %a\noutput %y\n")
        y, = self.ctx.execute(g, [np.zeros((0, 5), np.float32)])
        self.assertEqual(y.shape, (0, 5))

    def test_outputs_given_written_in_place(self):
        f = kiln.Fusion("kiln.fusion 1\n%a = input f32 [?]\n%s = sum %a axes=[0]\n"
                        "%y = neg %a\noutput %y\noutput %s\n")
        a = np.arange(4, dtype=np.float32)
        y, s = np.empty(4, np.float32), np.empty((), np.float32)
        out = self.ctx.execute(f, [a], outputs=[y, s])
        self.assertIs(out[0], y)
        self.assertIs(out[1], s)
        np.testing.assert_array_equal(y, -a)
        self.assertEqual(float(s), 6.0)
        # a None entry is allocated, the other written in place
        out = self.ctx.execute(f, [a], outputs=[None, s])
        self.assertIs(out[1], s)
        np.testing.assert_array_equal(out[0], -a)
        # ml_dtypes-free bf16 output is 2-byte void bit patterns
        g = kiln.Fusion("kiln.fusion 1\n%a = input f32 [?]\n%y = cast %a bf16\noutput %y\n")
        y, = self.ctx.execute(g, [np.array([1.0, -2.5], np.float32)])
        self.assertEqual(y.dtype.itemsize, 2)
        np.testing.assert_array_equal(y.view(np.uint16), [0x3F80, 0xC020])


class BadInputs(unittest.TestCase):
    def setUp(self):
        self.ctx = ctx_ref()
        self.f = kiln.Fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                             "%b = input f32 [1, ?]\n%y = add %x %b\noutput %y\n")
        self.x = np.ones((3, 4), np.float32)
        self.b = np.ones((1, 4), np.float32)

    def tearDown(self):
        self.ctx.close()

    def raises(self, cls, inputs, **kw):
        with self.assertRaises(cls) as cm:
            self.ctx.execute(self.f, inputs, **kw)
        return str(cm.exception)

    def test_dtype(self):
        msg = self.raises(kiln.DtypeError, [self.x.astype(np.float64), self.b])
        self.assertIn("input 0 (x): dtype f64 does not match the declared f32", msg)
        msg = self.raises(kiln.DtypeError, [self.x.astype(np.uint8), self.b])
        self.assertIn("input 0 (x): NumPy dtype uint8 has no Kiln dtype", msg)
        msg = self.raises(kiln.DtypeError, [self.x.astype(">f4"), self.b])
        self.assertIn("big-endian", msg)
        msg = self.raises(kiln.DtypeError, [self.x, self.b.astype(np.complex64)])
        self.assertIn("input 1 (b)", msg)

    def test_shape(self):
        msg = self.raises(kiln.ShapeError, [self.x, np.ones((2, 4), np.float32)])
        self.assertIn("input 1 (b) axis 0: size 2", msg)
        msg = self.raises(kiln.ShapeError, [self.x, np.ones((1, 5), np.float32)])
        self.assertIn("does not match", msg)
        msg = self.raises(kiln.ShapeError, [self.x[0], self.b])
        self.assertIn("rank 1 does not match the declared rank 2", msg)
        msg = self.raises(kiln.ShapeError, [self.x[::-1], self.b])
        self.assertIn("input 0 (x): axis 0 has a stride of -16 bytes", msg)
        msg = self.raises(kiln.LimitError, [np.ones((1,) * 9, np.float32), self.b])
        self.assertIn("input 0 (x): rank 9", msg)

    def test_views_kiln_cannot_describe_are_never_copied(self):
        raw = np.zeros(64, np.uint8)
        odd = np.ndarray((3, 4), np.float32, raw.data, offset=0, strides=(16, 3))
        msg = self.raises(kiln.AlignmentError, [odd, self.b])
        self.assertIn("input 0 (x): axis 1 has a stride of 3 bytes", msg)
        y = np.ones((4, 3), np.float32).T  # transposed: not dense
        msg = self.raises(kiln.AlignmentError, [self.x, self.b], outputs=[y])
        self.assertIn("output 0 (y): must be dense row-major", msg)
        ro = np.empty((3, 4), np.float32)
        ro.flags.writeable = False
        msg = self.raises(kiln.InvalidArgumentError, [self.x, self.b], outputs=[ro])
        self.assertIn("output 0 (y): the array is read-only", msg)
        msg = self.raises(kiln.AlignmentError, [self.x, self.b], outputs=[self.x])
        self.assertIn("overlaps input 0", msg)

    def test_not_arrays(self):
        msg = self.raises(kiln.InvalidArgumentError, [[[1.0]], self.b])
        self.assertIn("input 0 (x): list is not an array", msg)
        msg = self.raises(kiln.InvalidArgumentError, [self.x])
        self.assertIn("the fusion takes 2 inputs, 1 given", msg)
        msg = self.raises(kiln.InvalidArgumentError, [self.x, self.b],
                          outputs=[None, None])
        self.assertIn("the fusion has 1 output, 2 given", msg)

    def test_array_interface_objects_are_views(self):
        class Wrapped:
            def __init__(self, a):
                self.__array_interface__ = a.__array_interface__
                self.keep = a
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        y, = self.ctx.execute(self.f, [Wrapped(x), self.b])
        np.testing.assert_array_equal(y, x + 1)
        out = np.zeros((3, 4), np.float32)
        self.ctx.execute(self.f, [x, self.b], outputs=[Wrapped(out)])
        np.testing.assert_array_equal(out, x + 1)


class ContextApi(unittest.TestCase):
    def test_lifetime_and_stats(self):
        f = kiln.Fusion("kiln.fusion 1\n%x = input i32 [?]\n%y = neg %x\noutput %y\n")
        ctx = kiln.Context("ref", env={}, plan_cache_capacity=4,
                           kernel_cache_capacity=4)
        self.assertEqual(ctx.backend, "ref")
        self.assertIn("ref", repr(ctx))
        x = np.arange(3, dtype=np.int32)
        ctx.execute(f, [x])
        ctx.execute(f, [x])
        s = ctx.stats()
        self.assertEqual(set(s), {"executes", "plan_hits", "plan_misses",
                                  "plan_evictions", "kernel_hits",
                                  "kernel_misses", "kernel_evictions",
                                  "compiles", "kernel_loads"})
        self.assertEqual((s["plan_hits"], s["plan_misses"], s["compiles"]),
                         (1, 1, 1))
        ctx.clear_caches()
        s2 = ctx.stats()
        self.assertEqual(s2["plan_evictions"], 1)
        self.assertEqual(s2["kernel_evictions"], 1)
        _, rec = ctx.execute(f, [x], info=True)
        self.assertFalse(rec["plan_hit"])
        self.assertEqual(ctx.stats()["compiles"], 2)
        ctx.close()
        ctx.close()
        self.assertIn("closed", repr(ctx))
        for call in (lambda: ctx.execute(f, [x]), ctx.stats, ctx.clear_caches,
                     ctx.reload_env, ctx.env_options):
            with self.assertRaises(kiln.StateError):
                call()

    def test_backends(self):
        self.assertEqual(kiln.backend_probe("ref"), "")
        self.assertNotEqual(kiln.backend_probe("/nonexistent/plugin.so"), "")
        with self.assertRaises(kiln.BackendUnavailableError):
            kiln.Context("/nonexistent/plugin.so")
        with self.assertRaises(kiln.InvalidArgumentError):
            kiln.Context("r\0ef")
        with kiln.Context("auto", env={}) as c:  # cuda here only with a GPU
            self.assertIn(c.backend, ("ref", "cuda"))

    def test_info_record(self):
        f = kiln.Fusion("kiln.fusion 1\n%x = input f32 [?]\n%y = exp %x\noutput %y\n")
        with ctx_ref(env={"KILN_ENABLE": "kernel_profile"}) as ctx:
            (y,), rec = ctx.execute(f, [np.zeros(3, np.float32)],
                                    disable_options=["fma"], info=True)
        np.testing.assert_array_equal(y, np.ones(3, np.float32))
        self.assertEqual(rec["backend"], "ref")
        self.assertEqual(rec["options"], "enable=kernel_profile;disable=fma")
        self.assertEqual(rec["levels"], {"plan": "", "kernel": "disable=fma",
                                         "none": "enable=kernel_profile"})
        seg, = rec["segments"]
        self.assertEqual((seg["kind"], seg["what"], seg["path"], seg["device"]),
                         ("generated", "pointwise", "generated", -1))
        self.assertEqual(rec["kernels"], [seg["kernel_id"]])
        self.assertEqual(len(rec["plan_id"]), 16)


class Threads(unittest.TestCase):
    def test_eight_threads_one_context_options_per_call(self):
        f = kiln.Fusion(MATMUL_RELU)
        a = np.random.default_rng(3).standard_normal((8, 8)).astype(np.float32)
        want = np.maximum(a.astype(np.float64) @ a.astype(np.float64), 0)
        sets = [([], []), (["fuse_matmul"], []), (["fast_math"], ["fma"]),
                ([], ["matmul_expr_eval"])]
        errors = []
        with ctx_ref() as ctx:
            def work(k):
                try:
                    en, dis = sets[k % len(sets)]
                    for _ in range(100):
                        (y,), rec = ctx.execute(f, [a, a], enable_options=en,
                                                disable_options=dis, info=True)
                        want_opts = kiln.options.canonical(
                            enable_options=en, disable_options=dis)
                        if rec["options"] != want_opts:
                            errors.append((k, rec["options"], want_opts))
                        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
                except Exception as e:  # reported below
                    errors.append((k, repr(e)))
            ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            s = ctx.stats()
        self.assertEqual(errors, [])
        self.assertEqual(s["executes"], 800)
        # one plan per plan-level set: default (also fast_math / fma, which
        # are kernel-level), fuse_matmul, matmul_expr_eval
        self.assertEqual(s["plan_misses"], 3)

    def test_close_waits_for_running_calls(self):
        f = kiln.Fusion("kiln.fusion 1\n%x = input f64 [?]\n%y = exp %x\noutput %y\n")
        x = np.zeros(3_000_000)
        ctx = ctx_ref()
        done = []
        t = threading.Thread(target=lambda: done.append(ctx.execute(f, [x])))
        t.start()
        time.sleep(0.05)
        ctx.close()
        t.join()
        self.assertEqual(len(done), 1)
        self.assertEqual(float(done[0][0][-1]), 1.0)

    def test_gil_is_released_during_execute(self):
        """ctypes.CDLL calls drop the GIL: a Python thread keeps counting
        while execute runs in another thread, at about its free-running rate
        (measured here: 70-100% of it with CDLL; 0.1-3% with ctypes.PyDLL,
        which holds the GIL, where only the Python parts of execute let the
        counter run).  The threshold is 20%."""
        f = kiln.Fusion("kiln.fusion 1\n%x = input f64 [?]\n%y = exp %x\n"
                        "%z = sin %y\n%w = tanh %z\noutput %w\n")
        x = np.linspace(0, 1, 1_000_000)
        out = np.empty_like(x)
        with ctx_ref() as ctx:
            ctx.execute(f, [x[:10]])  # compile first
            counts, stop = [0], threading.Event()

            def count():
                while not stop.is_set():
                    counts[0] += 1
            t = threading.Thread(target=count)
            sys_interval = sys.getswitchinterval()
            sys.setswitchinterval(0.0005)
            try:
                t.start()
                time.sleep(0.01)
                b0, t0 = counts[0], time.perf_counter()
                time.sleep(0.2)  # the free-running rate, GIL idle
                base = (counts[0] - b0) / ((time.perf_counter() - t0) * 1e3)
                t0 = time.perf_counter()
                before = counts[0]
                ctx.execute(f, [x], outputs=[out])
                during = counts[0] - before
                elapsed_ms = (time.perf_counter() - t0) * 1e3
            finally:
                stop.set()
                t.join()
                sys.setswitchinterval(sys_interval)
        self.assertGreater(elapsed_ms, 20, "the workload is too small to tell")
        self.assertGreater(during / elapsed_ms, 0.2 * base,
                           (during, elapsed_ms, base))
        np.testing.assert_allclose(out, np.tanh(np.sin(np.exp(x))), rtol=1e-12)


class Leaks(unittest.TestCase):
    def test_ten_thousand_executes(self):
        """No growth over 10,000 executes: Python allocations (tracemalloc),
        the process's resident memory (C allocations), and the library's
        counters show one plan and one kernel, all hits after the first."""
        f = kiln.Fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n%b = input f32 [?, ?]\n"
                        "%y = add %a %b\noutput %y\n")
        a = np.ones((4, 4), np.float32)
        b = np.ones((4, 4), np.float32)[:, ::1]
        out = np.empty((4, 4), np.float32)
        with ctx_ref() as ctx:
            def burst(n):
                for i in range(n):
                    if i % 3 == 0:
                        ctx.execute(f, [a, b], outputs=[out])
                    elif i % 3 == 1:
                        ctx.execute(f, [a, b])
                    else:
                        ctx.execute(f, [a, b], disable_options=["fma"],
                                    info=(i % 2 == 0))
            burst(1000)
            gc.collect()
            tracemalloc.start()
            rss0 = rss_bytes()
            snap0 = tracemalloc.take_snapshot()
            burst(10000)
            gc.collect()
            snap1 = tracemalloc.take_snapshot()
            rss1 = rss_bytes()
            tracemalloc.stop()
            s = ctx.stats()
        grown = sum(d.size_diff for d in snap1.compare_to(snap0, "filename")
                    if "tracemalloc" not in str(d.traceback))
        self.assertLess(grown, 64 * 1024, "Python memory grew by %d bytes" % grown)
        # one leaked 200-byte block per call would be 2 MB
        self.assertLess(rss1 - rss0, 1024 * 1024,
                        "resident memory grew by %d bytes" % (rss1 - rss0))
        self.assertEqual(s["executes"], 11000)
        self.assertEqual(s["plan_misses"], 1)
        self.assertEqual(s["kernel_misses"], 2)  # with and without fma
        self.assertEqual(s["compiles"], 2)
        self.assertEqual(s["plan_hits"], 10999)


def rss_bytes():
    with open("/proc/self/statm") as fp:
        return int(fp.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


if __name__ == "__main__":
    unittest.main()

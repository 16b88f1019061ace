#!/usr/bin/env python3
"""gpu_check.py -- the Python frontend on the CUDA backend (run on the GPU
machine by `bash scripts/gpu_run.sh python`, also part of `quick`/`full`).

    KILN_LIBRARY=carry/build/libkiln.so PYTHONPATH=python python3 python/tests/gpu_check.py

Checks (each prints PASS/FAIL and its evidence; the last line is
"N passed, M failed"; exit 1 on any failure):
  torch / CuPy tensors in and out, the data pointers Kiln gets are the
  tensors' own (no copies); outputs allocated by the first input's library;
  views (slices, transposes) on the device; every dtype through torch;
  a torch producer on a side stream (a 0.1 s sleep kernel, then the write)
  ordered before the execute by the DLPack stream protocol -- and, as a
  control, the race that appears when the protocol is bypassed;
  an explicit stream= (torch side stream) with intermediates;
  a __cuda_array_interface__-only producer whose 'stream' is waited for;
  JAX inputs; enable=kernel_profile; 8 threads executing at once on one
  context with different options.
It never skips: no GPU, no torch, no CuPy or no JAX is a failure.
"""

import os
import sys
import threading
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402

import kiln  # noqa: E402
from kiln import _arrays  # noqa: E402

RESULTS = []


def check(fn):
    t0 = time.time()
    try:
        note = fn()
        RESULTS.append((fn.__name__, True))
        print("PASS %-40s %5.2fs %s" % (fn.__name__, time.time() - t0, note or ""),
              flush=True)
    except Exception:
        RESULTS.append((fn.__name__, False))
        print("FAIL %-40s\n%s" % (fn.__name__, traceback.format_exc()), flush=True)
    return fn


ADD = kiln.Fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n%b = input f32 [?, ?]\n"
                  "%y = add %a %b\noutput %y\n")
SOFTMAX = kiln.Fusion("kiln.fusion 1\n%x = input f32 [?, ?]\n"
                      "%m = max %x axes=[1] keepdim\n%d = sub %x %m\n%e = exp %d\n"
                      "%s = sum %e axes=[1] keepdim\n%y = div %e %s\noutput %y\n")

try:
    import torch
    import cupy
    assert torch.cuda.is_available(), "torch sees no GPU"
    CTX = kiln.Context("cuda", env={})
except Exception:
    traceback.print_exc()
    print("0 passed, 1 failed")
    sys.exit(1)


def ptr_of(x, what="input 0"):
    """The data pointer the frontend hands to Kiln for x."""
    return _arrays.describe(x, what, 0, 0).data


@check
def torch_in_out_zero_copy():
    a = torch.randn(64, 128, device="cuda")
    b = torch.randn(64, 128, device="cuda")
    y = torch.empty(64, 128, device="cuda")
    for t in (a, b, y):
        assert ptr_of(t) == t.data_ptr(), (ptr_of(t), t.data_ptr())
    out = CTX.execute(ADD, [a, b], outputs=[y])
    assert out[0] is y
    torch.cuda.synchronize()
    assert torch.equal(y, a + b)
    # views: a column slice and a transpose, passed as strided views
    big = torch.randn(64, 256, device="cuda")
    v1, v2 = big[:, ::2], torch.randn(128, 64, device="cuda").t()
    assert ptr_of(v1) == v1.data_ptr() and ptr_of(v2) == v2.data_ptr()
    (z,), info = CTX.execute(ADD, [v1, v2], info=True)
    torch.cuda.synchronize()
    assert isinstance(z, torch.Tensor) and z.is_cuda and z.is_contiguous()
    assert torch.equal(z, v1 + v2)
    seg = info["segments"][0]
    assert seg["device"] == 0 and seg["kind"] == "generated", info
    return "pointers match: %#x %#x; view result exact" % (a.data_ptr(), y.data_ptr())


@check
def torch_every_dtype():
    for name, tdt in (("bool", torch.bool), ("i32", torch.int32),
                      ("i64", torch.int64), ("f16", torch.float16),
                      ("bf16", torch.bfloat16), ("f32", torch.float32),
                      ("f64", torch.float64)):
        f = kiln.Fusion("kiln.fusion 1\n%%c = input bool [?]\n%%a = input %s [?]\n"
                        "%%b = input %s [?]\n%%y = where %%c %%a %%b\noutput %%y\n"
                        % (name, name))
        c = torch.rand(500, device="cuda") > 0.5
        a = (torch.randn(1000, device="cuda") * 100).to(tdt)
        b = (torch.randn(1000, device="cuda") * 100).to(tdt)
        y, = CTX.execute(f, [c, a[::2].clone()[:500], b[1::2]])
        torch.cuda.synchronize()
        assert y.dtype == tdt, (name, y.dtype)
        assert torch.equal(y, torch.where(c, a[::2][:500], b[1::2])), name


@check
def cupy_in_out_zero_copy():
    a = cupy.random.standard_normal((32, 48), dtype=cupy.float32)
    b = cupy.random.standard_normal((48, 32), dtype=cupy.float32).T
    assert ptr_of(a) == a.data.ptr and ptr_of(b) == b.data.ptr
    y, = CTX.execute(ADD, [a, b])
    assert isinstance(y, cupy.ndarray) and y.flags.c_contiguous
    out = cupy.empty((32, 48), cupy.float32)
    r = CTX.execute(ADD, [a, b], outputs=[out])
    assert r[0] is out and ptr_of(out) == out.data.ptr
    cupy.cuda.get_current_stream().synchronize()
    cupy.testing.assert_array_equal(y, a + b)
    cupy.testing.assert_array_equal(out, a + b)
    return "pointers match: %#x" % a.data.ptr


def produce_on(p, a, value):
    """On torch stream p (the producer's current stream while it runs):
    sleep ~0.1 s on the GPU, then write `value` into a."""
    torch.cuda._sleep(int(2e8))
    a.fill_(value)


@check
def dlpack_stream_protocol_orders_a_side_stream_producer():
    # The DLPack protocol orders the PRODUCER's current stream before the
    # consumer's: torch's __dlpack__(stream=c) makes c wait for torch's
    # current stream.  So the producer writes `a` on its current stream p,
    # and Kiln consumes on another stream c, named explicitly.
    a = torch.zeros(1024, 1024, device="cuda")
    b = torch.ones(1024, 1024, device="cuda")
    p = torch.cuda.Stream()
    c = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(p):
        produce_on(p, a, 3.0)
        y = torch.empty_like(b)
        CTX.execute(ADD, [a, b], outputs=[y], stream=c)
    torch.cuda.synchronize()
    assert bool((y == 4.0).all()), "raced: %s" % y.unique()

    # control: the same with a producer that ignores the consumer's stream
    class NoSync:
        def __init__(self, t):
            self.t = t

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=-1)  # -1: "do not synchronize"
    a.zero_()
    torch.cuda.synchronize()
    with torch.cuda.stream(p):
        produce_on(p, a, 3.0)
        z = torch.empty_like(b)
        CTX.execute(ADD, [NoSync(a), b], outputs=[z], stream=c)
    torch.cuda.synchronize()
    raced = not bool((z == 4.0).all())
    return ("control without the protocol: %s" %
            ("raced as expected (the test can see a race)" if raced
             else "did not race (the control could not show one)"))


@check
def explicit_stream_with_intermediates():
    x = torch.randn(256, 4096, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = torch.empty_like(x)
    CTX.execute(SOFTMAX, [x], outputs=[y], stream=s)
    s.synchronize()
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)
    # an int stream handle and a cupy stream object work too
    cs = cupy.cuda.Stream(non_blocking=True)
    y2 = torch.empty_like(x)
    torch.cuda.synchronize()
    CTX.execute(SOFTMAX, [x], outputs=[y2], stream=cs)
    cs.synchronize()
    torch.testing.assert_close(y2, y)
    y3 = torch.empty_like(x)
    CTX.execute(SOFTMAX, [x], outputs=[y3], stream=s.cuda_stream)
    s.synchronize()
    torch.testing.assert_close(y3, y)


@check
def cuda_array_interface_stream_is_waited_for():
    class CaiOnly:
        def __init__(self, arr, stream):
            d = dict(arr.__cuda_array_interface__)
            d["stream"] = stream
            self.__cuda_array_interface__ = d
            self.arr = arr
    a = cupy.zeros((512, 512), cupy.float32)
    b = cupy.ones((512, 512), cupy.float32)
    cupy.cuda.Device().synchronize()
    ta = torch.as_tensor(a, device="cuda")  # the same memory
    s = torch.cuda.Stream()  # the CAI "stream" key names where it was written
    with torch.cuda.stream(s):
        produce_on(s, ta, 5.0)
    out = cupy.empty((512, 512), cupy.float32)
    CTX.execute(ADD, [CaiOnly(a, s.cuda_stream), CaiOnly(b, None)],
                outputs=[CaiOnly(out, None)])
    cupy.cuda.Device().synchronize()
    assert bool((out == 6.0).all()), "raced: %s" % cupy.unique(out)


@check
def jax_inputs():
    import jax
    import jax.numpy as jnp
    x = jnp.arange(4096, dtype=jnp.float32).reshape(64, 64)
    assert x.devices().pop().platform == "gpu"
    y = torch.empty(64, 64, device="cuda")
    CTX.execute(ADD, [x, x], outputs=[y])
    torch.cuda.synchronize()
    assert torch.equal(y.cpu(), torch.from_numpy(np.asarray(x) * 2))
    try:
        CTX.execute(ADD, [x, x])
    except kiln.UnsupportedError as e:
        assert "immutable" in str(e)
    else:
        raise AssertionError("JAX outputs were allocated")
    return "jax %s" % jax.__version__


@check
def kernel_profile_on_the_stream():
    a = torch.randn(1 << 20, device="cuda").view(1024, 1024)
    (y,), info = CTX.execute(ADD, [a, a], enable_options=["kernel_profile"],
                             info=True)
    assert info["segments"][0]["gpu_ms"] >= 0, info
    return "gpu_ms %.4f" % info["segments"][0]["gpu_ms"]


@check
def eight_threads_one_context():
    a = torch.randn(128, 256, device="cuda")
    b = torch.randn(128, 256, device="cuda")
    want_add = a + b
    x = torch.randn(64, 1000, device="cuda")
    want_sm = torch.softmax(x, dim=1)
    torch.cuda.synchronize()
    sets = [([], []), (["fast_math"], []), ([], ["fma"]),
            (["kernel_lineinfo"], ["expr_simplify(fold)"])]
    errors = []
    before = CTX.stats()["executes"]

    def work(k):
        try:
            s = torch.cuda.Stream()
            en, dis = sets[k % len(sets)]
            for i in range(100):
                with torch.cuda.stream(s):
                    (y,), rec = CTX.execute(ADD, [a, b], enable_options=en,
                                            disable_options=dis, info=True)
                    z, = CTX.execute(SOFTMAX, [x], enable_options=en,
                                     disable_options=dis)
                s.synchronize()
                want = kiln.options.canonical(enable_options=en,
                                              disable_options=dis)
                if rec["options"] != want:
                    errors.append((k, rec["options"], want))
                if not torch.equal(y, want_add):
                    errors.append((k, i, "add differs"))
                torch.testing.assert_close(z, want_sm, rtol=1e-4, atol=1e-5)
        except Exception as e:
            errors.append((k, repr(e)))
    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == [], errors[:5]
    n = CTX.stats()["executes"] - before
    assert n == 1600, n
    return "1600 executes in %.2fs" % (time.time() - t0)


if __name__ == "__main__":
    CTX.close()
    passed = sum(ok for _, ok in RESULTS)
    print("%d passed, %d failed" % (passed, len(RESULTS) - passed))
    sys.exit(0 if passed == len(RESULTS) else 1)

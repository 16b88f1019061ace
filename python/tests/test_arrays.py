"""The array protocols without a GPU: DLPack producers (host memory through
NumPy's own __dlpack__, so the capsule path is the real one), the stream
a CUDA producer is asked for, __cuda_array_interface__ objects, stream
arguments, and output allocation by the first input's library."""

import ctypes
import unittest

import numpy as np

import kiln
from kiln import _arrays


class HostDLPack:
    """A producer that only speaks DLPack (host memory)."""

    def __init__(self, a):
        self.a = a
        self.streams = []

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.a.__dlpack__()


class FakeCudaDLPack(HostDLPack):
    """Claims CUDA memory; records the stream it is asked to order on."""

    def __dlpack_device__(self):
        return (2, 0)


class FakeStream:
    def __init__(self, handle):
        self.cuda_stream = handle


class DLPackInputs(unittest.TestCase):
    def setUp(self):
        self.ctx = kiln.Context("ref", env={})
        self.f = kiln.Fusion("kiln.fusion 1\n%a = input f32 [?, ?]\n"
                             "%b = input f32 [?, ?]\n%y = sub %a %b\noutput %y\n")

    def tearDown(self):
        self.ctx.close()

    def test_host_dlpack_views_without_copies(self):
        a = np.arange(20, dtype=np.float32).reshape(4, 5)
        b = np.ones((5, 4), np.float32)
        pa, pb = HostDLPack(a[1:, ::2]), HostDLPack(b.T[1:, ::2])
        out = np.empty((3, 3), np.float32)
        self.ctx.execute(self.f, [pa, pb], outputs=[HostDLPack(out)])
        np.testing.assert_array_equal(out, a[1:, ::2] - 1)
        self.assertEqual(pa.streams, [None])  # host: no stream asked for
        # a DLPack first input whose library is unknown: outputs= needed
        with self.assertRaises(kiln.UnsupportedError) as cm:
            self.ctx.execute(self.f, [pa, pb])
        self.assertIn("pass outputs=", str(cm.exception))

    def test_dlpack_dtypes(self):
        for dt in (np.int32, np.int64, np.float16, np.float64):
            name = {np.int32: "i32", np.int64: "i64", np.float16: "f16",
                    np.float64: "f64"}[dt]
            f = kiln.Fusion("kiln.fusion 1\n%%a = input %s [?]\n%%y = cast %%a f64\n"
                            "output %%y\n" % name)
            a = np.arange(5).astype(dt)
            y = np.empty(5)
            self.ctx.execute(f, [HostDLPack(a)], outputs=[y])
            np.testing.assert_array_equal(y, a.astype(np.float64))
        c = np.zeros(3, np.complex64)
        with self.assertRaises(kiln.DtypeError) as cm:
            self.ctx.execute(self.f, [HostDLPack(c), HostDLPack(c)])
        self.assertIn("input 0 (a): DLPack dtype (code 5, 64 bits", str(cm.exception))

    def test_cuda_producer_is_asked_for_the_consumer_stream(self):
        a = np.ones((2, 2), np.float32)
        out = np.empty((2, 2), np.float32)
        for given, want in ((None, 1), (0, 1), (1, 1), (2, 2),
                            (0x7f00dead, 0x7f00dead),
                            (FakeStream(1234), 1234)):
            with self.subTest(stream=given):
                p = FakeCudaDLPack(a)
                # ref takes host memory: the call fails after describing,
                # which is when the producer was asked for the stream
                with self.assertRaises(kiln.InvalidArgumentError) as cm:
                    self.ctx.execute(self.f, [p, a], outputs=[out], stream=given)
                self.assertIn("input 0 (a): device memory, backend ref needs "
                              "host memory", str(cm.exception))
                self.assertEqual(p.streams, [want])

    def test_device_of_the_array_must_be_the_contexts(self):
        class OnDevice3(FakeCudaDLPack):
            def __dlpack_device__(self):
                return (2, 3)
        a = np.ones((2, 2), np.float32)
        with self.assertRaises(kiln.InvalidArgumentError) as cm:
            self.ctx.execute(self.f, [OnDevice3(a), a], outputs=[a.copy()])
        self.assertIn("input 0 (a): the array is on device 3, the context on "
                      "device 0", str(cm.exception))

    def test_capsule_must_be_fresh(self):
        class Used(HostDLPack):
            def __dlpack__(self, stream=None):
                cap = self.a.__dlpack__()
                ctypes.pythonapi.PyCapsule_SetName.argtypes = [ctypes.py_object,
                                                               ctypes.c_char_p]
                ctypes.pythonapi.PyCapsule_SetName(cap, b"used_dltensor")
                return cap
        a = np.ones(2, np.float32)
        f = kiln.Fusion("kiln.fusion 1\n%a = input f32 [?]\n%y = neg %a\noutput %y\n")
        with self.assertRaises(kiln.InvalidArgumentError) as cm:
            self.ctx.execute(f, [Used(a)], outputs=[np.empty(2, np.float32)])
        self.assertIn("unconsumed 'dltensor' capsule", str(cm.exception))


class CudaArrayInterface(unittest.TestCase):
    def test_checks_before_the_driver(self):
        f = kiln.Fusion("kiln.fusion 1\n%a = input f32 [?]\n%y = neg %a\noutput %y\n")

        class Cai:
            def __init__(self, **kw):
                self.__cuda_array_interface__ = dict(
                    shape=(2,), typestr="<f4", data=(0, False), version=3,
                    strides=None, stream=None, **kw)
        with kiln.Context("ref", env={}) as ctx:
            out = np.empty(2, np.float32)
            with self.assertRaises(kiln.InvalidArgumentError) as cm:
                ctx.execute(f, [Cai(mask=object())], outputs=[out])
            self.assertIn("masked", str(cm.exception))
            bad = Cai()
            bad.__cuda_array_interface__["typestr"] = "<u2"
            with self.assertRaises(kiln.DtypeError):
                ctx.execute(f, [bad], outputs=[out])
            ro = Cai()
            with self.assertRaises(kiln.InvalidArgumentError):
                ro.__cuda_array_interface__["data"] = (0, True)
                ctx.execute(f, [np.ones(2, np.float32)], outputs=[ro])
            # a NULL (empty) array never touches the driver: ref refuses
            # device memory
            e = Cai()
            e.__cuda_array_interface__["shape"] = (0,)
            with self.assertRaises(kiln.InvalidArgumentError) as cm:
                ctx.execute(f, [e], outputs=[np.empty(0, np.float32)])
            self.assertIn("device memory", str(cm.exception))

    def test_views_strides(self):
        class Cai:
            __cuda_array_interface__ = dict(shape=(2, 3), typestr="<f8",
                                            data=(0, False), version=2,
                                            strides=(8, 16))
        v = _arrays.from_cai(Cai(), "input 0", 0, 0, False)
        self.assertEqual((v.shape, v.byte_strides, v.mem), ((2, 3), (8, 16), 1))
        Cai.__cuda_array_interface__["strides"] = None
        v = _arrays.from_cai(Cai(), "input 0", 0, 0, False)
        self.assertEqual(v.byte_strides, (24, 8))


class Streams(unittest.TestCase):
    def test_stream_handles(self):
        h = _arrays.stream_handle
        self.assertEqual(h(5), 5)
        self.assertEqual(h(FakeStream(77)), 77)

        class Ptr:
            ptr = 88

        class Proto:
            def __cuda_stream__(self):
                return (0, 99)
        self.assertEqual(h(Ptr()), 88)
        self.assertEqual(h(Proto()), 99)
        with self.assertRaises(TypeError):
            h("stream")
        with self.assertRaises(TypeError):
            h(True)
        with self.assertRaises(kiln.InvalidArgumentError):
            h(-1)
        # an unknown producer's current stream is the legacy default one
        self.assertEqual(_arrays.current_stream(HostDLPack(np.ones(1))), 0)


class Allocation(unittest.TestCase):
    def test_numpy_outputs_for_every_dtype(self):
        with kiln.Context("ref", env={}) as ctx:
            for name in _arrays.DTYPE_NAMES:
                f = kiln.Fusion("kiln.fusion 1\n%%a = input f32 [?, 1]\n"
                                "%%y = cast %%a %s\noutput %%y\n" % name)
                y, = ctx.execute(f, [np.ones((3, 1), np.float32)])
                self.assertEqual(y.shape, (3, 1))
                self.assertEqual(y.dtype.itemsize, _arrays.SIZES[name])
                self.assertTrue(y.flags.c_contiguous)
        # bf16 inputs of a given NumPy dtype give outputs of that dtype
        # (raw 2-byte patterns even where ml_dtypes is installed)
        a = np.zeros(2, "V2")
        v = _arrays.from_numpy(a, "input 0", False)
        got = _arrays.allocate(None, v, [a], _arrays.DTYPE["bf16"], (4,))
        self.assertEqual(got.dtype, np.dtype("V2"))
        odd = _arrays.View(0, 0, (1,), (1,), 1, 0, None, "jax")
        with self.assertRaises(kiln.UnsupportedError) as cm:
            _arrays.allocate(None, odd, [odd], 0, (1,))
        self.assertIn("immutable", str(cm.exception))


if __name__ == "__main__":
    unittest.main()

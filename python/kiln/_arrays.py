"""Describing the caller's arrays to Kiln, without copies.

An array becomes a kiln_tensor that borrows its memory: data pointer, dtype,
sizes and element strides.  Three kinds of object are understood:

- NumPy arrays (and objects with __array_interface__): host memory;
- objects with __dlpack__ / __dlpack_device__ (torch, CuPy, JAX, NumPy):
  host (kDLCPU, kDLCUDAHost) or device (kDLCUDA, kDLCUDAManaged) memory;
  for device memory the consumer's stream is passed to __dlpack__(stream=),
  so the producer orders its pending work before it (the DLPack stream
  protocol);
- objects with __cuda_array_interface__ (version 2 or 3): device memory; a
  'stream' entry that differs from the consumer's stream makes the
  consumer's stream wait for it (an event, kiln._cuda).

What Kiln cannot describe is an error naming the input, never a silent
copy: a negative stride (ShapeError), a byte stride that is not a multiple
of the element size (AlignmentError) -- both found by kiln_execute_views --,
a dtype Kiln does not have (DtypeError), a rank above 8 (LimitError), a
masked or non-array object (InvalidArgumentError).

Outputs that the caller does not give are allocated by the library of the
first input (numpy.empty, torch.empty on its device, cupy.empty), with the
sizes kiln_fusion_output_sizes reports.
"""

import ctypes
import sys

from ._lib import api, MAX_RANK
from . import errors

# Kiln dtypes, from the library's table.
DTYPE_NAMES = []
while True:
    _n = api.kiln_dtype_name(len(DTYPE_NAMES))
    if _n is None:
        break
    DTYPE_NAMES.append(_n.decode())
DTYPE = {n: i for i, n in enumerate(DTYPE_NAMES)}

SIZES = {n: api.kiln_dtype_size(i) for i, n in enumerate(DTYPE_NAMES)}

HOST, DEVICE = 0, 1

# DLPack (dlpack.h, v0.8+ layout of DLTensor / DLManagedTensor)
kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool = 0, 1, 2, 4, 6
_DL_TO_KILN = {(kDLInt, 32): "i32", (kDLInt, 64): "i64", (kDLFloat, 16): "f16",
               (kDLFloat, 32): "f32", (kDLFloat, 64): "f64",
               (kDLBfloat, 16): "bf16", (kDLBool, 8): "bool"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# __cuda_array_interface__ / __array_interface__ typestrs
_TYPESTR = {"|b1": "bool", "<i4": "i32", "<i8": "i64", "<f2": "f16",
            "<f4": "f32", "<f8": "f64", "<V2": "bf16", "|V2": "bf16"}

try:
    import numpy as _np
except ImportError:  # the package also serves device-only users
    _np = None


def _fail(status_name, what, text):
    cls = errors.CLASSES[status_name]
    return cls("%s: %s" % (what, text))


def _np_dtype_code(dt, what):
    """Kiln dtype of a NumPy dtype (native byte order only)."""
    if dt.byteorder == ">" or (dt.byteorder == "=" and sys.byteorder == "big"):
        raise _fail("DtypeError", what, "NumPy dtype %s is big-endian; Kiln "
                    "reads native little-endian data (convert it explicitly)"
                    % dt.str)
    k, n = dt.kind, dt.itemsize
    name = {("b", 1): "bool", ("i", 4): "i32", ("i", 8): "i64",
            ("f", 2): "f16", ("f", 4): "f32", ("f", 8): "f64"}.get((k, n))
    if name is None and n == 2 and (dt.name == "bfloat16" or
                                    (k == "V" and dt.fields is None)):
        name = "bf16"  # ml_dtypes.bfloat16, or raw bit patterns (<V2)
    if name is None:
        raise _fail("DtypeError", what, "NumPy dtype %s has no Kiln dtype "
                    "(Kiln has %s; bf16 as ml_dtypes.bfloat16 or 2-byte "
                    "void bit patterns)" % (dt, ", ".join(DTYPE_NAMES)))
    return DTYPE[name]


class View:
    """A borrowed view of one array, and what keeps its memory alive.
    byte_strides are in bytes, unchecked: kiln_execute_views checks them
    (a negative stride is a ShapeError, one that is not a multiple of the
    element size an AlignmentError, each naming the array)."""

    __slots__ = ("data", "dtype", "shape", "byte_strides", "mem", "device",
                 "keep", "lib", "np_dtype")

    def __init__(self, data, dtype, shape, byte_strides, mem, device, keep,
                 lib, np_dtype=None):
        self.data, self.dtype, self.shape = data, dtype, shape
        self.byte_strides, self.mem, self.device = byte_strides, mem, device
        self.keep, self.lib, self.np_dtype = keep, lib, np_dtype


def _contiguous(shape, itemsize):
    out, acc = [0] * len(shape), itemsize
    for i in range(len(shape) - 1, -1, -1):
        out[i] = acc
        acc *= max(shape[i], 1)
    return tuple(out)


def check_rank(nd, what):
    if nd > MAX_RANK:
        raise _fail("LimitError", what, "rank %d is above Kiln's maximum %d"
                    % (nd, MAX_RANK))


# dtype object -> Kiln code, filled as dtypes are met (read-only use after)
NP_CODES = {}


def np_code(dt, what):
    code = NP_CODES.get(dt)
    if code is None:
        code = NP_CODES[dt] = _np_dtype_code(dt, what)
    return code


def from_numpy(a, what, writable):
    code = np_code(a.dtype, what)
    if writable and not a.flags.writeable:
        raise _fail("InvalidArgumentError", what, "the array is read-only")
    check_rank(a.ndim, what)
    return View(a.ctypes.data, code, a.shape, a.strides, HOST, -1, a, "numpy",
                a.dtype)


def _stream_arg(stream):
    """The DLPack / CAI integer for a consumer stream handle (0: legacy)."""
    return 1 if stream in (0, None) else stream


def from_dlpack(x, what, stream):
    dev_type, dev_id = x.__dlpack_device__()
    dev_type = int(dev_type)
    if dev_type in (kDLCUDA, kDLCUDAManaged):
        mem = DEVICE
        cap = x.__dlpack__(stream=_stream_arg(stream))
    elif dev_type in (kDLCPU, kDLCUDAHost):
        mem, dev_id = HOST, -1
        cap = x.__dlpack__()
    else:
        raise _fail("InvalidArgumentError", what, "DLPack device type %d is "
                    "neither host nor CUDA memory" % dev_type)
    try:
        ptr = _capsule_pointer(cap, b"dltensor")
    except ValueError:
        raise _fail("InvalidArgumentError", what, "__dlpack__() did not return "
                    "an unconsumed 'dltensor' capsule") from None
    t = _DLManagedTensor.from_address(ptr).dl_tensor
    name = _DL_TO_KILN.get((t.dtype.code, t.dtype.bits))
    if name is None or t.dtype.lanes != 1:
        raise _fail("DtypeError", what, "DLPack dtype (code %d, %d bits, %d "
                    "lanes) has no Kiln dtype (Kiln has %s)"
                    % (t.dtype.code, t.dtype.bits, t.dtype.lanes,
                       ", ".join(DTYPE_NAMES)))
    nd = t.ndim
    check_rank(nd, what)
    shape = tuple(t.shape[i] for i in range(nd))
    itemsize = t.dtype.bits // 8
    if t.strides:
        bstrides = tuple(t.strides[i] * itemsize for i in range(nd))
    else:
        bstrides = _contiguous(shape, itemsize)
    lib = type(x).__module__.partition(".")[0]
    # the capsule keeps the producer's tensor alive; dropping it after the
    # call lets its destructor run the deleter (it was never renamed)
    return View((t.data or 0) + t.byte_offset, DTYPE[name], shape, bstrides,
                mem, dev_id, (x, cap), lib)


def from_cai(x, what, stream, device, writable):
    cai = x.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise _fail("InvalidArgumentError", what, "masked arrays "
                    "(__cuda_array_interface__ 'mask') are not supported")
    name = _TYPESTR.get(cai["typestr"])
    if name is None:
        raise _fail("DtypeError", what, "typestr %r has no Kiln dtype (Kiln "
                    "has %s)" % (cai["typestr"], ", ".join(DTYPE_NAMES)))
    ptr, readonly = cai["data"]
    if writable and readonly:
        raise _fail("InvalidArgumentError", what, "the array is read-only")
    shape = tuple(cai["shape"])
    check_rank(len(shape), what)
    bstrides = cai.get("strides")
    bstrides = (_contiguous(shape, SIZES[name]) if bstrides is None
                else tuple(bstrides))
    from . import _cuda
    if ptr:
        _cuda.check_device(ptr, device, what)
    producer = cai.get("stream")
    if producer is not None and _stream_arg(producer) != _stream_arg(stream):
        _cuda.wait(_stream_arg(stream), producer, device)
    lib = type(x).__module__.partition(".")[0]
    return View(ptr, DTYPE[name], shape, bstrides, DEVICE, device, x, lib)


def is_device(x):
    """Whether x is device memory (decides whether a stream is needed)."""
    if _np is not None and isinstance(x, _np.ndarray):
        return False
    if hasattr(x, "__dlpack_device__"):
        return int(x.__dlpack_device__()[0]) in (kDLCUDA, kDLCUDAManaged)
    return hasattr(x, "__cuda_array_interface__")


def describe(x, what, stream, device, writable=False):
    """A View of x; `what` names it in errors ("input 1 (%b)")."""
    if _np is not None and isinstance(x, _np.ndarray):
        return from_numpy(x, what, writable)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        v = from_dlpack(x, what, stream)
        if v.mem == DEVICE and v.device != device:
            raise _fail("InvalidArgumentError", what, "the array is on device "
                        "%d, the context on device %d" % (v.device, device))
        if writable and v.lib == "torch" and getattr(x, "requires_grad", False):
            raise _fail("InvalidArgumentError", what, "a tensor that requires "
                        "grad cannot be written")
        return v
    if hasattr(x, "__cuda_array_interface__"):
        return from_cai(x, what, stream, device, writable)
    if hasattr(x, "__array_interface__") and _np is not None:
        return from_numpy(_np.asarray(x), what, writable)  # a view, no copy
    raise _fail("InvalidArgumentError", what, "%s is not an array (NumPy, or "
                "an object with __dlpack__ or __cuda_array_interface__); "
                "nothing is converted implicitly" % type(x).__name__)


# ------------------------------------------------------------ allocation

def _bf16_numpy(inputs):
    """The NumPy dtype for a bf16 output: that of the first bf16 NumPy
    input (ml_dtypes.bfloat16 or raw 2-byte patterns, as the caller chose),
    else ml_dtypes.bfloat16 when it is installed, else raw patterns."""
    for a in inputs:
        if isinstance(a, _np.ndarray) and NP_CODES.get(a.dtype) == DTYPE["bf16"]:
            return a.dtype
    try:
        import ml_dtypes
        return _np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return _np.dtype("V2")  # bit patterns, as `kiln run` writes them


_NP_NAMES = {"bool": "bool", "i32": "int32", "i64": "int64", "f16": "float16",
             "f32": "float32", "f64": "float64"}


def allocate(first, like, inputs, code, shape):
    """A new array of dtype `code` and `shape`, made by the library of the
    first input `first` (whose View is `like`); `inputs` are the caller's
    input arrays."""
    name = DTYPE_NAMES[code]
    if like.lib == "numpy":
        dt = _bf16_numpy(inputs) if name == "bf16" else _np.dtype(_NP_NAMES[name])
        return _np.empty(shape, dtype=dt)
    if like.lib == "torch":
        import torch
        tdt = {"bool": torch.bool, "i32": torch.int32, "i64": torch.int64,
               "f16": torch.float16, "bf16": torch.bfloat16,
               "f32": torch.float32, "f64": torch.float64}[name]
        return torch.empty(shape, dtype=tdt, device=first.device)
    if like.lib == "cupy":
        import cupy
        if name == "bf16":
            raise _fail("UnsupportedError", "outputs", "CuPy has no bfloat16 "
                        "dtype: pass outputs= for bf16 results")
        with cupy.cuda.Device(like.device):
            return cupy.empty(shape, dtype=_NP_NAMES[name])
    raise _fail("UnsupportedError", "outputs", "cannot allocate outputs "
                "with the library of input 0 (%s%s); pass outputs="
                % (like.lib, ": its arrays are immutable" if like.lib in
                   ("jax", "jaxlib") else ""))


def current_stream(first):
    """The consumer stream when the caller names none: the current stream
    of the first device input's library (torch, CuPy), else 0 (the legacy
    default stream)."""
    lib = type(first).__module__.partition(".")[0]
    if lib == "torch":
        import torch
        return torch.cuda.current_stream(first.device).cuda_stream
    if lib == "cupy":
        import cupy
        return cupy.cuda.get_current_stream().ptr
    return 0


def stream_handle(stream):
    """An integer CUstream from what the caller passed as stream=."""
    if isinstance(stream, bool):
        raise TypeError("stream must be a CUDA stream, not a bool")
    if isinstance(stream, int):
        h = stream
    elif hasattr(stream, "__cuda_stream__"):
        h = stream.__cuda_stream__()[1]
    elif hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        h = stream.cuda_stream
    elif hasattr(stream, "ptr"):          # cupy.cuda.Stream
        h = stream.ptr
    else:
        raise TypeError("stream must be an int (a CUstream), an object with "
                        "__cuda_stream__, .cuda_stream or .ptr, not %s"
                        % type(stream).__name__)
    if h < 0:
        raise errors.CLASSES["InvalidArgumentError"](
            "stream %d is not a CUDA stream handle" % h)
    return h

"""The few CUDA driver calls the frontend makes itself, through ctypes on
libcuda.so.1 (loaded on first use, only for __cuda_array_interface__
inputs): checking which device a pointer lives on, and making the consumer's
stream wait for a producer's stream (event record + cuStreamWaitEvent, so
the host never blocks).  Every failure is a kiln.CudaError naming the call.
"""

import ctypes
import threading

from . import errors

_lock = threading.Lock()
_state = {}

CU_EVENT_DISABLE_TIMING = 0x2
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


def _driver():
    with _lock:
        if "dll" not in _state:
            try:
                dll = ctypes.CDLL("libcuda.so.1")
            except OSError as e:
                raise errors.CLASSES["BackendUnavailableError"](
                    "cuda: no driver (libcuda.so.1: %s)" % e) from None
            if dll.cuInit(0) != 0:
                raise errors.CLASSES["BackendUnavailableError"](
                    "cuda: cuInit failed")
            _state["dll"] = dll
        return _state["dll"]


def _call(name, *args):
    dll = _driver()
    # cuda.h maps cuEventDestroy to the versioned symbol
    fn = getattr(dll, "cuEventDestroy_v2" if name == "cuEventDestroy" else name)
    r = fn(*args)
    if r != 0:
        text = ctypes.c_char_p()
        dll.cuGetErrorName(r, ctypes.byref(text))
        raise errors.CLASSES["CudaError"](
            "cuda: %s failed: %s [code %d]"
            % (name, text.value.decode() if text.value else "unknown", r))


def _make_current(device):
    cur = ctypes.c_void_p()
    _call("cuCtxGetCurrent", ctypes.byref(cur))
    if cur.value:
        return
    with _lock:
        ctx = _state.get(("ctx", device))
    if ctx is None:
        dev, c = ctypes.c_int(), ctypes.c_void_p()
        _call("cuDeviceGet", ctypes.byref(dev), device)
        _call("cuDevicePrimaryCtxRetain", ctypes.byref(c), dev)
        with _lock:
            ctx = _state.setdefault(("ctx", device), c.value)
    _call("cuCtxSetCurrent", ctypes.c_void_p(ctx))


def check_device(ptr, device, what):
    """Raise InvalidArgumentError unless ptr is memory of CUDA `device`."""
    _make_current(device)
    ordinal = ctypes.c_int(-1)
    r = _driver().cuPointerGetAttribute(
        ctypes.byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        ctypes.c_uint64(ptr))
    if r != 0:
        raise errors.CLASSES["InvalidArgumentError"](
            "%s: data 0x%x is not CUDA device memory" % (what, ptr))
    if ordinal.value != device:
        raise errors.CLASSES["InvalidArgumentError"](
            "%s: the array is on device %d, the context on device %d"
            % (what, ordinal.value, device))


def wait(consumer, producer, device):
    """Make stream `consumer` wait for the work queued so far on stream
    `producer` (CUstream integers; 1 and 2 are the legacy and per-thread
    default streams)."""
    _make_current(device)
    ev = ctypes.c_void_p()
    _call("cuEventCreate", ctypes.byref(ev), CU_EVENT_DISABLE_TIMING)
    try:
        _call("cuEventRecord", ev, ctypes.c_void_p(producer))
        _call("cuStreamWaitEvent", ctypes.c_void_p(consumer), ev, 0)
    finally:
        _call("cuEventDestroy", ev)

"""Finding and loading libkiln, and the ctypes declarations of its C API.

The library is searched in this order (the first that applies wins):

1. ``KILN_LIBRARY``: a path to the shared library.  When it is set, nothing
   else is tried: a path that does not load is an ImportError.
2. Next to the package: ``kiln/libkiln.so`` or ``kiln/libkiln.so.0``.
3. ``pkg-config kiln``: ``$(pkg-config --variable=libdir kiln)/libkiln.so.0``
   (what ``make install`` writes; set PKG_CONFIG_PATH for a prefix that
   pkg-config does not search by default).
4. The build tree of a source checkout: ``<repo>/build/libkiln.so`` when the
   package is imported from ``<repo>/python``.

The library is loaded with ctypes.CDLL, whose foreign calls release the GIL
for their whole duration (ctypes.PyDLL would hold it).  Everything here is
read-only after import.
"""

import ctypes
import os
import subprocess
from collections import namedtuple

from ctypes import (POINTER, Structure, c_char_p, c_int, c_int64, c_long,
                    c_size_t, c_uint64, c_void_p)

HERE = os.path.dirname(os.path.abspath(__file__))

Library = namedtuple("Library", "path found_by")

MAX_RANK = 8


def _pkg_config_libdir():
    try:
        p = subprocess.run(["pkg-config", "--variable=libdir", "kiln"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    out = p.stdout.decode("utf-8", "replace").strip()
    return out if p.returncode == 0 and out else None


def candidates():
    """(path, found_by) pairs in search order (KILN_LIBRARY alone if set)."""
    env = os.environ.get("KILN_LIBRARY")
    if env:
        return [(env, "KILN_LIBRARY")]
    out = [(os.path.join(HERE, n), "next to the package")
           for n in ("libkiln.so", "libkiln.so.0")]
    libdir = _pkg_config_libdir()
    if libdir is not None:
        out += [(os.path.join(libdir, n), "pkg-config kiln")
                for n in ("libkiln.so.0", "libkiln.so")]
    out.append((os.path.normpath(os.path.join(HERE, "..", "..", "build",
                                              "libkiln.so")), "build tree"))
    return out


def load():
    tried = []
    for path, how in candidates():
        if how != "KILN_LIBRARY" and not os.path.exists(path):
            tried.append("%s (%s): not there" % (path, how))
            continue
        try:
            return ctypes.CDLL(path), Library(os.path.abspath(path), how)
        except OSError as e:
            if how == "KILN_LIBRARY":
                raise ImportError("kiln: KILN_LIBRARY=%s does not load: %s"
                                  % (path, e)) from None
            tried.append("%s (%s): %s" % (path, how, e))
    raise ImportError(
        "kiln: libkiln not found.  Set KILN_LIBRARY to the library, install "
        "it with `make install` (found through `pkg-config kiln`), or build "
        "it with `make` in the source tree.  Tried:\n  " + "\n  ".join(tried))


# ----------------------------------------------------------------- structs

class ErrorInfo(Structure):
    _fields_ = [("struct_size", c_size_t), ("status", c_int),
                ("message", c_char_p), ("source", c_char_p),
                ("offset", c_long), ("token", c_char_p)]


class OptionDesc(Structure):
    _fields_ = [("name", c_char_p), ("set", c_int), ("arg", c_int),
                ("level", c_int), ("description", c_char_p),
                ("vocabulary", POINTER(c_char_p)), ("int_default", c_uint64),
                ("implemented", c_int)]


class ContextConfig(Structure):
    _fields_ = [("struct_size", c_size_t), ("backend", c_char_p),
                ("device", c_int), ("plan_cache_capacity", c_size_t),
                ("kernel_cache_capacity", c_size_t),
                ("use_env_override", c_int), ("env_enable", c_char_p),
                ("env_disable", c_char_p), ("env_dump", c_char_p),
                ("dump_stream", c_void_p)]


class Counters(Structure):
    _fields_ = [("struct_size", c_size_t)] + [
        (n, c_uint64) for n in ("executes", "plan_hits", "plan_misses",
                                "plan_evictions", "kernel_hits",
                                "kernel_misses", "kernel_evictions",
                                "compiles", "kernel_loads")]


class ExecOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("enable", POINTER(c_char_p)),
                ("n_enable", c_size_t), ("disable", POINTER(c_char_p)),
                ("n_disable", c_size_t), ("stream", c_void_p)]


class View(Structure):
    _fields_ = [("data", c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("memory", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("sizes", c_int64 * MAX_RANK),
                ("byte_strides", c_int64 * MAX_RANK)]


# name: (restype, argtypes).  int results are kiln_status.
_PROTOS = {
    "kiln_status_name": (c_char_p, [c_int]),
    "kiln_strerror": (c_char_p, [c_int]),
    "kiln_last_error_info": (c_int, [POINTER(ErrorInfo)]),
    "kiln_version": (c_char_p, [c_void_p, c_void_p, c_void_p]),
    "kiln_free": (None, [c_void_p]),
    "kiln_option_catalogue": (POINTER(OptionDesc), [POINTER(c_size_t)]),
    "kiln_options_from_env": (c_int, [c_char_p, c_char_p, c_char_p,
                                      POINTER(c_void_p)]),
    "kiln_options_apply": (c_int, [c_void_p, c_int, c_char_p, c_size_t]),
    "kiln_options_copy": (c_int, [c_void_p, POINTER(c_void_p)]),
    "kiln_options_destroy": (None, [c_void_p]),
    "kiln_options_canonical": (c_int, [c_void_p, c_int, c_char_p, c_size_t,
                                       POINTER(c_size_t)]),
    "kiln_options_hash": (c_int, [c_void_p, c_int, POINTER(c_uint64)]),
    "kiln_options_get": (c_int, [c_void_p, c_int, c_char_p, POINTER(c_int),
                                 POINTER(c_uint64)]),
    "kiln_options_json": (c_int, [c_void_p, POINTER(c_void_p)]),
    "kiln_dtype_name": (c_char_p, [c_int]),
    "kiln_dtype_size": (c_size_t, [c_int]),
    "kiln_fusion_destroy": (None, [c_void_p]),
    "kiln_fusion_parse": (c_int, [c_char_p, c_size_t, POINTER(c_void_p)]),
    "kiln_fusion_print": (c_int, [c_void_p, POINTER(c_void_p)]),
    "kiln_fusion_hash": (c_int, [c_void_p, POINTER(c_uint64)]),
    "kiln_fusion_equal": (c_int, [c_void_p, c_void_p]),
    "kiln_fusion_num_inputs": (c_int, [c_void_p, POINTER(c_int)]),
    "kiln_fusion_num_outputs": (c_int, [c_void_p, POINTER(c_int)]),
    "kiln_fusion_io": (c_int, [c_void_p, c_int, c_int, POINTER(c_int),
                               POINTER(c_int), POINTER(ctypes.c_uint8)]),
    "kiln_fusion_output_sizes": (c_int, [c_void_p, c_void_p, c_size_t,
                                         c_void_p, c_size_t]),
    "kiln_execute_views": (c_int, [c_void_p, c_void_p, c_void_p, c_size_t,
                                   c_void_p, c_size_t, c_void_p, c_void_p]),
    "kiln_tensor_create": (c_int, [c_void_p, c_int, c_int, c_void_p, c_void_p,
                                   c_int, c_void_p, POINTER(c_void_p)]),
    "kiln_tensor_destroy": (None, [c_void_p]),
    "kiln_context_create": (c_int, [POINTER(ContextConfig),
                                    POINTER(c_void_p)]),
    "kiln_context_destroy": (None, [c_void_p]),
    "kiln_context_reload_env": (c_int, [c_void_p]),
    "kiln_context_backend": (c_char_p, [c_void_p]),
    "kiln_context_env_options": (c_void_p, [c_void_p]),
    "kiln_context_counters": (c_int, [c_void_p, POINTER(Counters)]),
    "kiln_context_clear_caches": (c_int, [c_void_p]),
    "kiln_backend_probe": (c_int, [c_char_p, c_char_p, c_size_t]),
    "kiln_exec_info_create": (c_int, [POINTER(c_void_p)]),
    "kiln_exec_info_destroy": (None, [c_void_p]),
    "kiln_exec_info_json": (c_int, [c_void_p, POINTER(c_void_p)]),
    "kiln_execute": (c_int, [c_void_p, c_void_p, c_void_p, c_size_t,
                             c_void_p, c_size_t, c_void_p, c_void_p]),
}


class Api:
    """The loaded library's functions as attributes (lib.kiln_execute...)."""

    def __init__(self, dll):
        self.dll = dll
        for name, (res, args) in _PROTOS.items():
            fn = getattr(dll, name)
            fn.restype = res
            fn.argtypes = args
            setattr(self, name, fn)


DLL, LIBRARY = load()
api = Api(DLL)


def take_text(ptr):
    """Decode and kiln_free a char* the library returned."""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "surrogateescape")
    finally:
        api.kiln_free(ptr)


__all__ = ["api", "LIBRARY", "MAX_RANK", "ErrorInfo", "OptionDesc",
           "ContextConfig", "Counters", "ExecOptions", "View", "take_text"]

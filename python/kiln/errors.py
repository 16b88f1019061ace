"""The exception classes, generated from the library's status table.

Every kiln_status other than KILN_OK has exactly one class, named after its
status: KILN_ERR_SHAPE -> ShapeError, KILN_ERR_OPTION_UNKNOWN ->
OptionUnknownError, and so on.  The table is read from the loaded library
(kiln_status_name / kiln_strerror for 1, 2, ... until the library answers
KILN_UNKNOWN_STATUS), so a status appended in C appears here without a
change.  All derive from KilnError; the four KILN_ERR_OPTION_* classes also
derive from OptionError, and ParseError from FusionError (the class of
KILN_ERR_FUSION): every error of Fusion(text) is a FusionError.

Every exception carries: status (the integer), status_name
("KILN_ERR_SHAPE"), message (the library's detailed text, or the frontend's
for what it checks itself), and for option errors source ("KILN_ENABLE",
"execute enable[2]"), offset (byte offset, -1 when none), token and
valid_names (the valid names the message lists).  FusionError has line and
column (1-based, None when the message has none).
"""

import ctypes
import re

from ._lib import api, ErrorInfo


class KilnError(Exception):
    """Base class of every error Kiln raises."""

    status = None
    status_name = None

    def __init__(self, message, *, source=None, offset=-1, token=None):
        super().__init__(message)
        self.message = message
        self.source = source or None
        self.offset = offset
        self.token = token

    def __str__(self):
        return "%s: %s" % (self.status_name, self.message)


class OptionError(KilnError):
    """An option string or execute item that does not parse or validate."""

    @property
    def valid_names(self):
        m = re.search(r"; valid (?:enable|disable|dump) options: (.*)$",
                      self.message)
        return m.group(1).split(", ") if m else []


class FusionError(KilnError):
    """An invalid fusion; parse errors carry line and column."""

    @property
    def line(self):
        m = re.match(r"(\d+):(\d+): ", self.message)
        return int(m.group(1)) if m else None

    @property
    def column(self):
        m = re.match(r"(\d+):(\d+): ", self.message)
        return int(m.group(2)) if m else None


def _class_name(status_name):
    words = status_name[len("KILN_ERR_"):].split("_")
    return "".join(w.capitalize() for w in words) + "Error"


def _status_table():
    out, i = [], 1
    while True:
        name = api.kiln_status_name(i).decode()
        if name == "KILN_UNKNOWN_STATUS":
            return out
        out.append((i, name, api.kiln_strerror(i).decode()))
        i += 1


BY_STATUS = {}
CLASSES = {}
for _value, _name, _desc in _status_table():
    _cls_name = _class_name(_name)
    if _name == "KILN_ERR_FUSION":
        _cls = FusionError  # the status class is the group's base
    else:
        _base = (OptionError if _name.startswith("KILN_ERR_OPTION_")
                 else FusionError if _name == "KILN_ERR_PARSE"
                 else KilnError)
        _cls = type(_cls_name, (_base,), {"__doc__": _desc + "."})
    _cls.status = _value
    _cls.status_name = _name
    _cls.description = _desc
    BY_STATUS[_value] = _cls
    CLASSES[_cls_name] = _cls
FusionError.__doc__ = "An invalid fusion (KILN_ERR_FUSION, and the base of " \
    "ParseError); parse errors carry line and column."


def error(status, message, **kw):
    """An exception of the class of `status` with this message."""
    return BY_STATUS[status](message, **kw)


def last_error(status):
    """The exception for `status` from this thread's last-error record."""
    info = ErrorInfo()
    info.struct_size = ctypes.sizeof(info)
    api.kiln_last_error_info(ctypes.byref(info))
    dec = (lambda b: b.decode("utf-8", "surrogateescape") if b else "")
    return BY_STATUS[status](dec(info.message) or api.kiln_strerror(status).decode(),
               source=dec(info.source), offset=info.offset,
               token=dec(info.token) if info.source else None)


def check(status):
    if status != 0:
        raise last_error(status)


globals().update(CLASSES)
__all__ = ["KilnError", "OptionError", "FusionError"] + sorted(CLASSES)

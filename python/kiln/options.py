"""kiln.options: the option catalogue, parsing and canonical text.

Everything here calls the C library's own parser (runtime/options.c), so
the grammar, the errors (OptionSyntaxError, OptionUnknownError,
OptionArgumentError, OptionElementError, all OptionError) and the canonical
text are exactly the library's (docs/options.md).

    parse(text, set="enable")      one environment string -> Options
    from_env(enable, disable, dump) the three strings (None: unset) -> Options
    canonical(enable=None, disable=None, dump=None, *, enable_options=(),
              disable_options=(), level="all")
                                   the effective canonical text of an execute
    catalogue()                    the catalogue rows, as OptionInfo tuples
"""

import ctypes
import json
from collections import namedtuple

from ._lib import api, take_text
from .errors import check

SETS = {"enable": 0, "disable": 1, "dump": 2}
SET_NAMES = {v: k for k, v in SETS.items()}
LEVELS = {"all": -1, "plan": 0, "kernel": 1, "none": 2}
LEVEL_NAMES = {v: k for k, v in LEVELS.items()}
ARGS = {0: "none", 1: "int", 2: "names"}

OptionInfo = namedtuple(
    "OptionInfo",
    "name set arg level description vocabulary int_default implemented")


def _enc(s, what):
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError("%s must be a str, not %s" % (what, type(s).__name__))
    return s.encode("utf-8", "surrogateescape")


def _set(set_):
    if set_ not in SETS:
        raise ValueError("set must be one of %s, not %r" % (", ".join(SETS),
                                                            set_))
    return SETS[set_]


def _level(level):
    if level not in LEVELS:
        raise ValueError("level must be one of %s, not %r"
                         % (", ".join(LEVELS), level))
    return LEVELS[level]


class Options:
    """An effective option set (a kiln_options value, owned)."""

    def __init__(self, _handle):
        self._h = _handle

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            api.kiln_options_destroy(h)

    def apply(self, set, item, index=0):
        """Apply one execute item (exactly one item of the grammar) of set
        "enable" or "disable"; `index` names it in errors ("execute
        enable[INDEX]").  On error the options are unchanged."""
        check(api.kiln_options_apply(self._h, _set(set), _enc(item, "item"),
                                     index))
        return self

    def copy(self):
        out = ctypes.c_void_p()
        check(api.kiln_options_copy(self._h, ctypes.byref(out)))
        return Options(out.value)

    def canonical(self, level="all"):
        """The canonical text of the options of `level` ("all", "plan",
        "kernel" or "none")."""
        lv, n = _level(level), ctypes.c_size_t()
        api.kiln_options_canonical(self._h, lv, None, 0, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value + 1)
        check(api.kiln_options_canonical(self._h, lv, buf, len(buf),
                                         ctypes.byref(n)))
        return buf.value.decode("utf-8", "surrogateescape")

    def hash(self, level="all"):
        """The 64-bit FNV-1a hash of canonical(level)."""
        out = ctypes.c_uint64()
        check(api.kiln_options_hash(self._h, _level(level), ctypes.byref(out)))
        return out.value

    def get(self, set, name):
        """(on, arg) of option `name` in `set`: arg is the integer of an
        integer option or the vocabulary bit mask of a name-list option,
        0 when off."""
        on, arg = ctypes.c_int(), ctypes.c_uint64()
        check(api.kiln_options_get(self._h, _set(set), _enc(name, "name"),
                                   ctypes.byref(on), ctypes.byref(arg)))
        return bool(on.value), arg.value

    def to_dict(self):
        """The library's JSON description of the options, as a dict."""
        out = ctypes.c_void_p()
        check(api.kiln_options_json(self._h, ctypes.byref(out)))
        return json.loads(take_text(out.value))

    def __str__(self):
        return self.canonical()

    def __repr__(self):
        return "kiln.options.Options(%r)" % self.canonical()


def from_env(enable=None, disable=None, dump=None):
    """Options from the three environment strings, parsed as KILN_ENABLE,
    KILN_DISABLE and KILN_DUMP are (None: unset).  Errors name the
    variable."""
    out = ctypes.c_void_p()
    check(api.kiln_options_from_env(_enc(enable, "enable"),
                                    _enc(disable, "disable"),
                                    _enc(dump, "dump"), ctypes.byref(out)))
    return Options(out.value)


def parse(text, set="enable"):
    """Parse one option string of `set` in the environment grammar
    (docs/options.md): parse("fast_math,kernel_db") -> Options."""
    s = _set(set)
    return from_env(*[text if i == s else None for i in range(3)])


def canonical(enable=None, disable=None, dump=None, *, enable_options=(),
              disable_options=(), level="all"):
    """The canonical text an execute with these execute items would run
    under, in an environment holding these strings: the environment's
    options, then each enable item, then each disable item."""
    o = from_env(enable, disable, dump)
    for i, item in enumerate(enable_options or ()):
        o.apply("enable", item, i)
    for i, item in enumerate(disable_options or ()):
        o.apply("disable", item, i)
    return o.canonical(level)


def catalogue():
    """Every catalogue row, in catalogue order."""
    n = ctypes.c_size_t()
    rows = api.kiln_option_catalogue(ctypes.byref(n))
    out = []
    for i in range(n.value):
        r = rows[i]
        vocab = []
        if r.vocabulary:
            j = 0
            while r.vocabulary[j] is not None:
                vocab.append(r.vocabulary[j].decode())
                j += 1
        out.append(OptionInfo(r.name.decode(), SET_NAMES[r.set], ARGS[r.arg],
                              LEVEL_NAMES[r.level], r.description.decode(),
                              tuple(vocab), r.int_default,
                              bool(r.implemented)))
    return out


__all__ = ["Options", "OptionInfo", "parse", "from_env", "canonical",
           "catalogue"]

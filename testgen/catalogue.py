"""The option catalogue, a Python copy of KILN_OPTION_TABLE (runtime/internal.h).

Generation must not depend on a build, so the table is mirrored here by hand.
testgen/check_catalogue.py compares this copy with `kiln options
--catalogue-json` and exits 1 on any drift (wired into `make docs-check`).

Each row: name, set, arg shape, cache level, vocabulary, integer default.
"""

ENABLE, DISABLE, DUMP = "enable", "disable", "dump"
SETS = (ENABLE, DISABLE, DUMP)
ARG_NONE, ARG_INT, ARG_NAMES = "none", "int", "names"
LEVELS = ("plan", "kernel", "none")

# Vocabulary of expr_simplify (kiln__simplify_passes), sorted bytewise.
SIMPLIFY_PASSES = ("cse", "fold", "identity", "index", "strength")

INT_MAX = 2147483647

# (name, set, arg, level, vocabulary, int_default)
CATALOGUE = (
    ("fast_math", ENABLE, ARG_NONE, "kernel", None, 0),
    ("fuse_matmul", ENABLE, ARG_NONE, "plan", None, 0),
    ("kernel_db", ENABLE, ARG_NONE, "none", None, 0),
    ("kernel_debug", ENABLE, ARG_NONE, "kernel", None, 0),
    ("kernel_lineinfo", ENABLE, ARG_NONE, "kernel", None, 0),
    ("kernel_profile", ENABLE, ARG_NONE, "none", None, 0),
    ("warn_register_spill", ENABLE, ARG_INT, "none", None, 0),
    ("compile_to_sass", DISABLE, ARG_NONE, "kernel", None, 0),
    ("expr_simplify", DISABLE, ARG_NAMES, "kernel", SIMPLIFY_PASSES, 0),
    ("fallback", DISABLE, ARG_NONE, "plan", None, 0),
    ("fma", DISABLE, ARG_NONE, "kernel", None, 0),
    ("kernel_reuse", DISABLE, ARG_NONE, "plan", None, 0),
    ("matmul_expr_eval", DISABLE, ARG_NONE, "plan", None, 0),
    ("nvrtc_caching", DISABLE, ARG_NONE, "none", None, 0),
    ("parallel_compile", DISABLE, ARG_NONE, "none", None, 0),
    ("cache", DUMP, ARG_NONE, "none", None, 0),
    ("cuda_kernel", DUMP, ARG_NONE, "none", None, 0),
    ("fusion_ir", DUMP, ARG_NONE, "none", None, 0),
    ("launch_params", DUMP, ARG_NONE, "none", None, 0),
    ("options", DUMP, ARG_NONE, "none", None, 0),
)


class Opt:
    __slots__ = ("name", "set", "arg", "level", "vocab", "default")

    def __init__(self, row):
        (self.name, self.set, self.arg, self.level, self.vocab,
         self.default) = row


OPTIONS = {}          # (set, name) -> Opt
NAMES = {s: [] for s in SETS}   # set -> sorted names
for _row in CATALOGUE:
    _o = Opt(_row)
    OPTIONS[(_o.set, _o.name)] = _o
    NAMES[_o.set].append(_o.name)
for _s in SETS:
    NAMES[_s].sort()


def lookup(set_, name):
    """The Opt for `name` in `set_`, or None."""
    return OPTIONS.get((set_, name))


def names_of(set_, arg=None, level=None):
    """Sorted option names of a set, optionally filtered."""
    out = []
    for n in NAMES[set_]:
        o = OPTIONS[(set_, n)]
        if arg is not None and o.arg != arg:
            continue
        if level is not None and o.level != level:
            continue
        out.append(n)
    return out

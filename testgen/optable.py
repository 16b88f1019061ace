"""The op table and the dtype table: testgen's copy of runtime/fusion.c's op
table and kiln.h's KILN_DTYPE_TABLE, and the ULP bounds of the numerics
contract (docs/numerics.md, "Transcendentals").

Generation must not depend on a build, so the C tables are mirrored here by
hand; testgen/check_tables.py compares this copy with `kiln fusion
--op-table-json` (every column: value, name, arity, kind, dtypes, result,
reduce; dtype values, sizes and float formats) and exits 1 on any drift.  It
also holds the reference reader's own copies (check_vectors.OPS, .FLOAT,
.WIDTH) and the ULP table of docs/numerics.md to this file.  `make
docs-check` runs it.

This module is the single Python source of the op rules (numerics.py), the
float formats (fp.py) and the ULP bounds (numerics.py, differential.py).
C has no ULP table: the bounds live in the vectors; docs/numerics.md states
them for readers.
"""

import collections

# (name, value, size in bytes, exponent bits, fraction bits); the last two
# are 0 for bool and the integers.  Values are ABI: append only.
DTYPES = (
    ("bool", 0, 1, 0, 0),
    ("i32", 1, 4, 0, 0),
    ("i64", 2, 8, 0, 0),
    ("f16", 3, 2, 5, 10),
    ("bf16", 4, 2, 8, 7),
    ("f32", 5, 4, 8, 23),
    ("f64", 6, 8, 11, 52),
)
DTYPE_NAMES = tuple(d[0] for d in DTYPES)
# float dtype -> (exponent bits, stored fraction bits)
FORMATS = {d[0]: (d[3], d[4]) for d in DTYPES if d[3]}

_ALL = DTYPE_NAMES
_NUM = ("i32", "i64", "f32", "f64")
_FLT = ("f32", "f64")
_EQ = ("bool",) + _NUM
_BOOL = ("bool",)
_MM = ("f16", "bf16", "f32")

Op = collections.namedtuple(
    "Op", "name value arity kind dtypes result reduce")

# One row per op, in value order.  kind: u unary, b binary, c compare,
# l logical, w where, s special.  dtypes: the accepted operand dtypes (for
# where, of the two value operands; the condition is bool).  result: a
# dtype, "same" or "given".  reduce: "none", "sum", "max" or "min".
OPS = tuple(Op(*row) for row in (
    ("input", 0, 0, "s", _ALL, "given", "none"),
    ("const", 1, 0, "s", _ALL, "given", "none"),
    ("neg", 2, 1, "u", _NUM, "same", "none"),
    ("abs", 3, 1, "u", _NUM, "same", "none"),
    ("exp", 4, 1, "u", _FLT, "same", "none"),
    ("log", 5, 1, "u", _FLT, "same", "none"),
    ("sqrt", 6, 1, "u", _FLT, "same", "none"),
    ("rsqrt", 7, 1, "u", _FLT, "same", "none"),
    ("reciprocal", 8, 1, "u", _FLT, "same", "none"),
    ("sin", 9, 1, "u", _FLT, "same", "none"),
    ("cos", 10, 1, "u", _FLT, "same", "none"),
    ("tanh", 11, 1, "u", _FLT, "same", "none"),
    ("sigmoid", 12, 1, "u", _FLT, "same", "none"),
    ("relu", 13, 1, "u", _NUM, "same", "none"),
    ("erf", 14, 1, "u", _FLT, "same", "none"),
    ("floor", 15, 1, "u", _FLT, "same", "none"),
    ("ceil", 16, 1, "u", _FLT, "same", "none"),
    ("add", 17, 2, "b", _NUM, "same", "none"),
    ("sub", 18, 2, "b", _NUM, "same", "none"),
    ("mul", 19, 2, "b", _NUM, "same", "none"),
    ("div", 20, 2, "b", _FLT, "same", "none"),
    ("pow", 21, 2, "b", _FLT, "same", "none"),
    ("maximum", 22, 2, "b", _NUM, "same", "none"),
    ("minimum", 23, 2, "b", _NUM, "same", "none"),
    ("eq", 24, 2, "c", _EQ, "bool", "none"),
    ("ne", 25, 2, "c", _EQ, "bool", "none"),
    ("lt", 26, 2, "c", _NUM, "bool", "none"),
    ("le", 27, 2, "c", _NUM, "bool", "none"),
    ("gt", 28, 2, "c", _NUM, "bool", "none"),
    ("ge", 29, 2, "c", _NUM, "bool", "none"),
    ("and", 30, 2, "l", _BOOL, "same", "none"),
    ("or", 31, 2, "l", _BOOL, "same", "none"),
    ("not", 32, 1, "l", _BOOL, "same", "none"),
    ("where", 33, 3, "w", _ALL, "same", "none"),
    ("fma", 34, 3, "s", _FLT, "same", "none"),
    ("cast", 35, 1, "s", _ALL, "given", "none"),
    ("broadcast", 36, 1, "s", _ALL, "same", "none"),
    ("sum", 37, 1, "s", _NUM, "same", "sum"),
    ("max", 38, 1, "s", _NUM, "same", "max"),
    ("min", 39, 1, "s", _NUM, "same", "min"),
    ("matmul", 40, 2, "s", _MM, "f32", "none"),
))
OP = {o.name: o for o in OPS}


def op_dtypes(kind):
    """{op name: accepted dtypes} of the ops of one kind (u, b, c, l, w)."""
    return {o.name: o.dtypes for o in OPS if o.kind == kind}


# The ULP bounds of the default profile (the CUDA Math API's documented
# maxima; docs/numerics.md's table, which check_tables.py compares): dtype
# -> op -> the largest ordered-integer distance from the correctly rounded
# result.  fast_math's looser bounds are formulas in numerics.py.
ULP = {"f32": {"exp": 2, "log": 1, "tanh": 2, "sin": 2, "cos": 2, "pow": 4,
               "rsqrt": 2, "erf": 2, "sigmoid": 4},
       "f64": {"exp": 1, "log": 1, "tanh": 1, "sin": 2, "cos": 2, "pow": 2,
               "rsqrt": 1, "erf": 2, "sigmoid": 4}}


def ulp_bound(op, dt):
    """The default-profile ULP bound of op on dt, or None (not bounded in
    ULP: exact, or not a transcendental)."""
    return ULP.get(dt, {}).get(op)

"""Category options.parse: the option grammar, validation and canonical text.

Two sources of expectations that must agree (build() asserts it):
  * EDGE_CASES, a hand-written table of the rules in docs/options.md, and
  * optmodel.py, an independent model of the grammar.
Generated tests (every option of every set, bare / with arguments / in the
wrong set / as execute elements) take their expectation from the model only.

Test fields: "source" ("env" | "execute"), "set", "input"; valid ->
"canonical" (env: only this variable set; execute: empty environment plus this
one element); invalid -> "error": {"kind", "offset", "token"}.
"""

from catalogue import (ARG_INT, ARG_NAMES, ARG_NONE, NAMES, SETS,
                       SIMPLIFY_PASSES, lookup)
from optmodel import OptError, Options, parse_element, parse_list
from vecfile import VectorFile

NOTES = {
    "Grammar": "A rule of the list/item grammar (separators, parentheses, "
               "trailing comma, empty tokens).",
    "EdgeCase": "One of the hand-written edge cases of the grammar table in "
                "docs/options.md.",
    "Unknown": "An option name that is not in the catalogue of that set "
               "(names are case-sensitive, never trimmed, per set).",
    "NoArgument": "Kiln departs from nvFuser: an argument list on an option "
                  "that takes none is an argument error at the '('.",
    "IntArgument": "Kiln departs from nvFuser: an integer argument must be "
                   "exactly one argument of 1+ ASCII digits <= 2147483647.",
    "NameArgument": "Kiln departs from nvFuser: each name-list argument must "
                    "come from the option's vocabulary.",
    "Duplicate": "The last occurrence of an option wins and replaces its "
                 "arguments.",
    "Canonical": "Canonical text: items sorted bytewise, integers in plain "
                 "decimal, name lists sorted and de-duplicated.",
    "ExecuteElement": "An execute element must hold exactly one item.",
    "ErrorOrder": "Several rules are broken; the first error in the string "
                  "(as ordered in docs/conformance.md) is the one reported.",
    "Whitespace": "Whitespace is never trimmed.",
    "NonAscii": "Non-ASCII bytes in a name; offsets are byte offsets of the "
                "UTF-8 text.",
    "AllOptions": "Generated: one test per catalogue option.",
}

V = "valid"

# Hand-written edge cases: (source, set, input, expected, flags) where
# expected is the canonical text (str) or (kind, offset, token).
EDGE_CASES = [
    # empty / separators
    ("env", "enable", "", "", ["Grammar"]),
    ("env", "disable", "", "", ["Grammar"]),
    ("env", "dump", "", "", ["Grammar"]),
    ("env", "enable", "fast_math,", "enable=fast_math", ["Grammar"]),
    ("env", "enable", ",", ("syntax", 0, ","), ["Grammar"]),
    ("env", "enable", ",fast_math", ("syntax", 0, ","), ["Grammar"]),
    ("env", "enable", "fast_math,,kernel_debug", ("syntax", 10, ","),
     ["Grammar"]),
    ("env", "enable", "fast_math,,", ("syntax", 10, ","), ["Grammar"]),
    ("env", "disable", "fma,,", ("syntax", 4, ","), ["Grammar"]),
    ("env", "dump", ",,", ("syntax", 0, ","), ["Grammar"]),
    ("env", "enable", "fast_math,kernel_debug,",
     "enable=fast_math,kernel_debug", ["Grammar"]),
    # whitespace is not trimmed
    ("env", "enable", "fast_math, kernel_debug", ("unknown", 10, " kernel_debug"),
     ["Whitespace", "Unknown"]),
    ("env", "enable", " fast_math", ("unknown", 0, " fast_math"),
     ["Whitespace", "Unknown"]),
    ("env", "enable", "fast_math ", ("unknown", 0, "fast_math "),
     ["Whitespace", "Unknown"]),
    ("env", "disable", "fma\t", ("unknown", 0, "fma\t"),
     ["Whitespace", "Unknown"]),
    ("env", "enable", " ", ("unknown", 0, " "), ["Whitespace", "Unknown"]),
    ("env", "enable", "warn_register_spill( 1)", ("argument", 20, " 1"),
     ["Whitespace", "IntArgument"]),
    ("env", "enable", "warn_register_spill(1 )", ("argument", 20, "1 "),
     ["Whitespace", "IntArgument"]),
    ("env", "disable", "expr_simplify(cse, fold)", ("argument", 18, " fold"),
     ["Whitespace", "NameArgument"]),
    ("env", "disable", "fma ,fallback", ("unknown", 0, "fma "),
     ["Whitespace", "Unknown"]),
    # case sensitivity, per-set namespaces
    ("env", "enable", "Fast_math", ("unknown", 0, "Fast_math"), ["Unknown"]),
    ("env", "disable", "FMA", ("unknown", 0, "FMA"), ["Unknown"]),
    ("env", "enable", "fma", ("unknown", 0, "fma"), ["Unknown"]),
    ("env", "disable", "fast_math", ("unknown", 0, "fast_math"), ["Unknown"]),
    ("env", "dump", "fast_math", ("unknown", 0, "fast_math"), ["Unknown"]),
    ("env", "enable", "options", ("unknown", 0, "options"), ["Unknown"]),
    ("env", "enable", "fast_math,bogus", ("unknown", 10, "bogus"), ["Unknown"]),
    ("env", "enable", "f\u00e4st_math", ("unknown", 0, "f\u00e4st_math"),
     ["Unknown", "NonAscii"]),
    ("env", "enable", "fast_math,\u00e9,kernel_debug", ("unknown", 10, "\u00e9"),
     ["Unknown", "NonAscii"]),
    ("env", "enable", "\u00e9(x),fast_math", ("unknown", 0, "\u00e9"),
     ["Unknown", "NonAscii"]),
    ("env", "enable", "fast_math(\u00e9)", ("argument", 9, "("),
     ["NoArgument", "NonAscii"]),
    # parentheses
    ("env", "enable", "warn_register_spill(", ("syntax", 19, "("), ["Grammar"]),
    ("env", "enable", "warn_register_spill(5", ("syntax", 19, "("), ["Grammar"]),
    ("env", "enable", "warn_register_spill(5,6", ("syntax", 19, "("),
     ["Grammar", "ErrorOrder"]),
    ("env", "enable", "warn_register_spill(x", ("syntax", 19, "("),
     ["Grammar", "ErrorOrder"]),
    ("env", "enable", "warn_register_spill(5)x", ("syntax", 22, "x"),
     ["Grammar"]),
    ("env", "enable", "warn_register_spill(5)(", ("syntax", 22, "("),
     ["Grammar"]),
    ("env", "enable", "warn_register_spill(5))", ("syntax", 22, ")"),
     ["Grammar"]),
    ("env", "enable", "warn_register_spill(5) ,fast_math", ("syntax", 22, " "),
     ["Grammar", "Whitespace"]),
    ("env", "enable", "warn_register_spill((5))", ("syntax", 20, "("),
     ["Grammar"]),
    ("env", "enable", "warn_register_spill(5(6))", ("syntax", 21, "("),
     ["Grammar"]),
    ("env", "enable", "warn_register_spill(x(6))", ("argument", 20, "x"),
     ["Grammar", "ErrorOrder", "IntArgument"]),
    ("env", "disable", "expr_simplify(cse(fold))", ("syntax", 17, "("),
     ["Grammar"]),
    ("env", "disable", "expr_simplify(cse,(fold))", ("syntax", 18, "("),
     ["Grammar"]),
    ("env", "disable", "expr_simplify(nope(fold))", ("argument", 14, "nope"),
     ["Grammar", "ErrorOrder", "NameArgument"]),
    ("env", "enable", "fast_math)", ("syntax", 9, ")"), ["Grammar"]),
    ("env", "enable", "fast_math)kernel_debug", ("syntax", 9, ")"), ["Grammar"]),
    ("env", "enable", ")", ("syntax", 0, ")"), ["Grammar"]),
    ("env", "enable", "(", ("syntax", 0, "("), ["Grammar"]),
    ("env", "enable", "()", ("syntax", 0, "("), ["Grammar"]),
    ("env", "enable", "(fast_math)", ("syntax", 0, "("), ["Grammar"]),
    ("env", "enable", "fast_math,)", ("syntax", 10, ")"), ["Grammar"]),
    ("env", "enable", "fast_math,(", ("syntax", 10, "("), ["Grammar"]),
    ("env", "enable", "bogus)", ("unknown", 0, "bogus"),
     ["Unknown", "ErrorOrder"]),
    ("env", "enable", "bogus(", ("unknown", 0, "bogus"),
     ["Unknown", "ErrorOrder"]),
    ("env", "enable", "bogus,,", ("unknown", 0, "bogus"),
     ["Unknown", "ErrorOrder"]),
    ("env", "enable", "fast_math,,bogus", ("syntax", 10, ","),
     ["Grammar", "ErrorOrder"]),
    ("env", "enable", "bogus,fast_math(1)", ("unknown", 0, "bogus"),
     ["Unknown", "ErrorOrder"]),
    ("env", "enable", "fast_math(1),bogus", ("argument", 9, "("),
     ["NoArgument", "ErrorOrder"]),
    # no argument allowed
    ("env", "enable", "fast_math()", ("argument", 9, "("), ["NoArgument"]),
    ("env", "enable", "fast_math(1)", ("argument", 9, "("), ["NoArgument"]),
    ("env", "enable", "fast_math(", ("syntax", 9, "("),
     ["NoArgument", "ErrorOrder"]),
    ("env", "enable", "fast_math(1", ("syntax", 9, "("),
     ["NoArgument", "ErrorOrder"]),
    ("env", "enable", "fast_math((", ("argument", 9, "("),
     ["NoArgument", "ErrorOrder"]),
    ("env", "enable", "warn_register_spill(1,(2)", ("syntax", 22, "("),
     ["Grammar", "ErrorOrder"]),
    ("env", "enable", "fast_math(a(b)", ("argument", 9, "("),
     ["NoArgument", "ErrorOrder"]),
    ("env", "disable", "fma(x,y)", ("argument", 3, "("), ["NoArgument"]),
    ("env", "dump", "cache(1)", ("argument", 5, "("), ["NoArgument"]),
    ("env", "enable", "kernel_debug,fast_math()", ("argument", 22, "("),
     ["NoArgument"]),
    # integer arguments
    ("env", "enable", "warn_register_spill", "enable=warn_register_spill(0)",
     ["IntArgument", "Canonical"]),
    ("env", "enable", "warn_register_spill(64)",
     "enable=warn_register_spill(64)", ["IntArgument"]),
    ("env", "enable", "warn_register_spill(064)",
     "enable=warn_register_spill(64)", ["IntArgument", "Canonical"]),
    ("env", "enable", "warn_register_spill(0)",
     "enable=warn_register_spill(0)", ["IntArgument"]),
    ("env", "enable", "warn_register_spill(000)",
     "enable=warn_register_spill(0)", ["IntArgument", "Canonical"]),
    ("env", "enable", "warn_register_spill(2147483647)",
     "enable=warn_register_spill(2147483647)", ["IntArgument"]),
    ("env", "enable", "warn_register_spill(0002147483647)",
     "enable=warn_register_spill(2147483647)", ["IntArgument", "Canonical"]),
    ("env", "enable", "warn_register_spill(2147483648)",
     ("argument", 20, "2147483648"), ["IntArgument"]),
    ("env", "enable", "warn_register_spill(99999999999999999999999)",
     ("argument", 20, "99999999999999999999999"), ["IntArgument"]),
    ("env", "enable", "warn_register_spill(18446744073709551617)",
     ("argument", 20, "18446744073709551617"), ["IntArgument"]),
    ("env", "enable", "warn_register_spill()", ("argument", 20, ""),
     ["IntArgument", "EdgeCase"]),
    ("env", "enable", "warn_register_spill(-1)", ("argument", 20, "-1"),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(+1)", ("argument", 20, "+1"),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(0x10)", ("argument", 20, "0x10"),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(1e3)", ("argument", 20, "1e3"),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(1.5)", ("argument", 20, "1.5"),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(abc)", ("argument", 20, "abc"),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(1,2)", ("argument", 22, "2"),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(1,)", ("argument", 22, ""),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(,1)", ("argument", 20, ""),
     ["IntArgument"]),
    ("env", "enable", "warn_register_spill(x,1)", ("argument", 20, "x"),
     ["IntArgument", "ErrorOrder"]),
    ("env", "enable", "warn_register_spill(\u0661)", ("argument", 20, "\u0661"),
     ["IntArgument", "NonAscii"]),
    # name-list arguments
    ("env", "disable", "expr_simplify", "disable=expr_simplify",
     ["NameArgument", "Canonical"]),
    ("env", "disable", "expr_simplify(fold,cse,fold)",
     "disable=expr_simplify(cse,fold)", ["NameArgument", "Canonical"]),
    ("env", "disable", "expr_simplify(strength,index,identity,fold,cse)",
     "disable=expr_simplify(cse,fold,identity,index,strength)",
     ["NameArgument", "Canonical"]),
    ("env", "disable", "expr_simplify()", ("argument", 14, ""),
     ["NameArgument", "EdgeCase"]),
    ("env", "disable", "expr_simplify(cse,)", ("argument", 18, ""),
     ["NameArgument"]),
    ("env", "disable", "expr_simplify(,cse)", ("argument", 14, ""),
     ["NameArgument"]),
    ("env", "disable", "expr_simplify(CSE)", ("argument", 14, "CSE"),
     ["NameArgument"]),
    ("env", "disable", "expr_simplify(cse,bogus,alsobad)",
     ("argument", 18, "bogus"), ["NameArgument", "ErrorOrder"]),
    ("env", "disable", "expr_simplify(all)", ("argument", 14, "all"),
     ["NameArgument"]),
    # duplicates
    ("env", "enable", "warn_register_spill(5),warn_register_spill(7)",
     "enable=warn_register_spill(7)", ["Duplicate"]),
    ("env", "enable", "warn_register_spill(5),warn_register_spill",
     "enable=warn_register_spill(0)", ["Duplicate"]),
    ("env", "disable", "expr_simplify(cse),expr_simplify(fold)",
     "disable=expr_simplify(fold)", ["Duplicate"]),
    ("env", "disable", "expr_simplify(cse),expr_simplify",
     "disable=expr_simplify", ["Duplicate"]),
    ("env", "disable", "expr_simplify,expr_simplify(index)",
     "disable=expr_simplify(index)", ["Duplicate"]),
    ("env", "enable", "fast_math,fast_math", "enable=fast_math", ["Duplicate"]),
    ("env", "enable", "warn_register_spill(5),warn_register_spill(x)",
     ("argument", 43, "x"), ["Duplicate", "IntArgument"]),
    # canonical ordering
    ("env", "enable", "kernel_lineinfo,fast_math",
     "enable=fast_math,kernel_lineinfo", ["Canonical"]),
    ("env", "disable", "parallel_compile,fma,compile_to_sass",
     "disable=compile_to_sass,fma,parallel_compile", ["Canonical"]),
    ("env", "dump", "options,cache,fusion_ir,launch_params,cuda_kernel",
     "dump=cache,cuda_kernel,fusion_ir,launch_params,options", ["Canonical"]),
    # execute elements
    ("execute", "enable", "", ("element", 0, ""), ["ExecuteElement"]),
    ("execute", "disable", "", ("element", 0, ""), ["ExecuteElement"]),
    ("execute", "enable", "fast_math,kernel_debug", ("element", 9, ","),
     ["ExecuteElement"]),
    ("execute", "enable", "fast_math,", ("element", 9, ","),
     ["ExecuteElement"]),
    ("execute", "disable", "fma,", ("element", 3, ","), ["ExecuteElement"]),
    ("execute", "disable", "fma,,", ("element", 3, ","), ["ExecuteElement"]),
    ("execute", "enable", "warn_register_spill(64)",
     "enable=warn_register_spill(64)", ["ExecuteElement", "IntArgument"]),
    ("execute", "enable", "warn_register_spill(64),fast_math",
     ("element", 23, ","), ["ExecuteElement"]),
    ("execute", "disable", "expr_simplify(cse,fold)",
     "disable=expr_simplify(cse,fold)", ["ExecuteElement", "NameArgument"]),
    ("execute", "enable", ",", ("syntax", 0, ","), ["ExecuteElement"]),
    ("execute", "enable", ",fast_math", ("syntax", 0, ","), ["ExecuteElement"]),
    ("execute", "enable", "bogus,fast_math", ("unknown", 0, "bogus"),
     ["ExecuteElement", "ErrorOrder"]),
    ("execute", "enable", "fast_math(1),bogus", ("argument", 9, "("),
     ["ExecuteElement", "ErrorOrder"]),
    ("execute", "enable", "fast_math)", ("syntax", 9, ")"), ["ExecuteElement"]),
    ("execute", "enable", "warn_register_spill(1)x", ("syntax", 22, "x"),
     ["ExecuteElement"]),
    ("execute", "enable", "warn_register_spill(1", ("syntax", 19, "("),
     ["ExecuteElement"]),
    ("execute", "enable", " fast_math", ("unknown", 0, " fast_math"),
     ["ExecuteElement", "Whitespace"]),
    ("execute", "disable", "fast_math", ("unknown", 0, "fast_math"),
     ["ExecuteElement", "Unknown"]),
    ("execute", "enable", "fma", ("unknown", 0, "fma"),
     ["ExecuteElement", "Unknown"]),
]


def _expect(source, set_, text):
    """Model expectation: canonical str or (kind, offset, token)."""
    try:
        o = Options()
        if source == "env":
            for item in parse_list(text, set_):
                o.apply(set_, item)
        else:
            o.apply(set_, parse_element(text, set_))
        return o.canonical()
    except OptError as e:
        return (e.kind, e.offset, e.token)


def _generated():
    """(source, set, input, flags) for every catalogue option."""
    out = []
    for set_ in SETS:
        srcs = ("env",) if set_ == "dump" else ("env", "execute")
        for name in NAMES[set_]:
            opt = lookup(set_, name)
            for src in srcs:
                out.append((src, set_, name, ["AllOptions"]))
                out.append((src, set_, name.upper(), ["AllOptions", "Unknown"]))
                out.append((src, set_, name + "()", ["AllOptions"]))
                out.append((src, set_, name + "(1)", ["AllOptions"]))
                if src == "env":
                    out.append((src, set_, name + ",", ["AllOptions", "Grammar"]))
                    out.append((src, set_, name + "," + name,
                                ["AllOptions", "Duplicate"]))
                    out.append((src, set_, "," + name,
                                ["AllOptions", "Grammar"]))
                else:
                    out.append((src, set_, name + ",",
                                ["AllOptions", "ExecuteElement"]))
                if opt.arg == ARG_NAMES:
                    for w in opt.vocab:
                        out.append((src, set_, "%s(%s)" % (name, w),
                                    ["AllOptions", "NameArgument"]))
                if opt.arg == ARG_INT:
                    for a in ("7", "4294967296", "2147483646", "12a"):
                        out.append((src, set_, "%s(%s)" % (name, a),
                                    ["AllOptions", "IntArgument"]))
            # the same name in the other sets is unknown there
            for s2 in SETS:
                if s2 != set_ and lookup(s2, name) is None:
                    out.append(("env", s2, name, ["AllOptions", "Unknown"]))
        # all options of the set at once, reversed order
        out.append(("env", set_, ",".join(reversed(NAMES[set_])),
                    ["AllOptions", "Canonical"]))
    return out


def build():
    vf = VectorFile("options.parse", NOTES)
    seen = set()

    def add(src, set_, text, flags, expected, comment):
        key = (src, set_, text)
        if key in seen:
            return
        seen.add(key)
        t = {"comment": comment, "flags": flags, "source": src, "set": set_,
             "input": text}
        if isinstance(expected, str):
            t["result"] = "valid"
            t["canonical"] = expected
        else:
            t["result"] = "invalid"
            t["error"] = {"kind": expected[0], "offset": expected[1],
                          "token": expected[2]}
        grp = "environment strings" if src == "env" else "execute elements"
        vf.add("OptionParse", grp, t)

    for src, set_, text, expected, flags in EDGE_CASES:
        model = _expect(src, set_, text)
        if model != expected:
            raise AssertionError("options model disagrees with the edge-case "
                                 "table for %r %r %r: model %r, table %r"
                                 % (src, set_, text, model, expected))
        add(src, set_, text, flags + ["EdgeCase"], expected,
            "edge case: %s %s %r" % (src, set_, text))
    for src, set_, text, flags in _generated():
        add(src, set_, text, flags, _expect(src, set_, text),
            "%s %s %r" % (src, set_, text))
    return {"options.parse.json": vf.finish()}

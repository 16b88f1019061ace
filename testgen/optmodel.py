"""An independent Python model of the Kiln option grammar (docs/options.md).

It computes the expected canonical text or the expected error (kind, byte
offset, token) for option strings; options_parse.py cross-checks it against a
hand-written edge-case table.  Strings are handled as UTF-8 bytes, so offsets
are byte offsets.

The grammar (nvFuser-compatible):
    list    = [ item { "," item } [ "," ] ] ;     "" = no items
    item    = name [ "(" arglist ")" ] ;
    arglist = arg { "," arg } ;                   "a()" = one empty argument
    name    = 1*( any byte except "," "(" ")" ) ;
    arg     = *( any byte except "," "(" ")" ) ;

Error order: the error at the smallest byte offset wins; at equal offsets
a syntax error wins over an argument error.  One item is fully validated
before the next is read.  Concretely:
  1. empty name -> syntax at the name's offset; token = the byte there
     ("" at the end of the string).
  2. unknown name -> unknown at the name's offset; token = the name.
  3. "(" after a name:
     a. the argument list runs to the end of the string without meeting
        ")" or "(" -> syntax at the "(" (token "(").
     b. option takes no argument -> argument error at the "(" (token "(").
     c. arguments are validated left to right; the first bad one -> argument
        error at its offset, token = the argument text (maybe "").
        INT: exactly one argument of 1+ ASCII digits, value <= 2^31-1
        (a second argument is the bad one).  NAMES: each in the vocabulary.
     d. the list ended at a "(" -> syntax at that "(" (token "(").  An empty
        argument directly before that "(" has the same offset, so the
        syntax error wins ("x((5))" -> syntax at the second "(").
  4. after the item the next byte must be "," or the end -> else syntax at
     that byte (token = that byte).
  5. after a ",": end of string is fine (trailing comma) in a list; an empty
     item otherwise -> rule 1.
Execute element: exactly one item.  "" -> element error at 0 (token "");
after the first item, a "," -> element error at that comma (token ",").
"""

from catalogue import (ARG_INT, ARG_NAMES, ARG_NONE, INT_MAX, LEVELS, SETS,
                       lookup, OPTIONS)

SEP = b",()"


class OptError(Exception):
    def __init__(self, kind, offset, token):
        Exception.__init__(self, "%s at %d: %r" % (kind, offset, token))
        self.kind = kind
        self.offset = offset
        self.token = token

    def as_dict(self):
        return {"kind": self.kind, "offset": self.offset, "token": self.token}


def _tok(b):
    return b.decode("utf-8", "surrogateescape")


def _byte_at(s, i):
    return _tok(s[i:i + 1])


def _parse_item(s, i, set_):
    """Parse one item starting at byte i.  Returns ((name, value), j) where
    j is the offset just after the item.  Raises OptError."""
    n = len(s)
    j = i
    while j < n and s[j:j + 1] not in (b",", b"(", b")"):
        j += 1
    name = s[i:j]
    if not name:
        raise OptError("syntax", i, _byte_at(s, i))
    opt = lookup(set_, _tok(name))
    if opt is None:
        raise OptError("unknown", i, _tok(name))
    if opt.arg == ARG_INT:
        value = opt.default
    else:
        value = None            # NONE: no value; NAMES: bare = all passes
    if j < n and s[j:j + 1] == b"(":
        lp = j
        k = lp + 1
        while k < n and s[k:k + 1] not in (b"(", b")"):
            k += 1
        if k == n:
            raise OptError("syntax", lp, "(")
        if opt.arg == ARG_NONE:
            raise OptError("argument", lp, "(")
        # the list ended at "(" right after "(" or ",": its last (empty)
        # argument sits at the same offset as that "(": syntax wins ties
        empty_before_paren = (s[k:k + 1] == b"(" and
                              s[k - 1:k] in (b"(", b","))
        # arguments: pieces of s[lp+1:k] split on ","
        args = []
        a0 = lp + 1
        for piece in s[lp + 1:k].split(b","):
            args.append((a0, piece))
            a0 += len(piece) + 1
        if empty_before_paren:
            args.pop()          # the empty piece at k: reported as syntax
            if not args:
                raise OptError("syntax", k, "(")
        if opt.arg == ARG_INT:
            off, a = args[0]
            if not a or not all(48 <= c <= 57 for c in a) or int(a) > INT_MAX:
                raise OptError("argument", off, _tok(a))
            if len(args) > 1:
                raise OptError("argument", args[1][0], _tok(args[1][1]))
            value = int(args[0][1])
        else:
            names = []
            for off, a in args:
                if _tok(a) not in opt.vocab:
                    raise OptError("argument", off, _tok(a))
                names.append(_tok(a))
            value = tuple(sorted(set(names)))
        if s[k:k + 1] == b"(":
            raise OptError("syntax", k, "(")
        j = k + 1
    if j < n and s[j:j + 1] != b",":
        raise OptError("syntax", j, _byte_at(s, j))
    return (opt.name, value), j


def parse_list(text, set_):
    """Parse an environment string; returns the items in order."""
    s = text.encode("utf-8", "surrogateescape")
    items = []
    i = 0
    n = len(s)
    if n == 0:
        return items
    while True:
        item, j = _parse_item(s, i, set_)
        items.append(item)
        if j == n:
            return items
        # s[j] == ","
        i = j + 1
        if i == n:
            return items          # trailing comma


def parse_element(text, set_):
    """Parse one execute element; returns the single item."""
    s = text.encode("utf-8", "surrogateescape")
    if len(s) == 0:
        raise OptError("element", 0, "")
    item, j = _parse_item(s, 0, set_)
    if j < len(s):
        raise OptError("element", j, ",")
    return item


class Options:
    """An effective option set: {(set, name): value}."""

    def __init__(self):
        self.on = {}

    def copy(self):
        o = Options()
        o.on = dict(self.on)
        return o

    def apply(self, set_, item):
        name, value = item
        self.on[(set_, name)] = value

    def canonical(self, level=None):
        parts = []
        for set_ in SETS:
            items = []
            for (st, name), value in self.on.items():
                if st != set_:
                    continue
                opt = OPTIONS[(st, name)]
                if level is not None and opt.level != level:
                    continue
                if opt.arg == ARG_NONE or (opt.arg == ARG_NAMES and
                                           value is None):
                    txt = name
                elif opt.arg == ARG_INT:
                    txt = "%s(%d)" % (name, value)
                else:
                    txt = "%s(%s)" % (name, ",".join(value))
                items.append((name.encode(), txt))
            if items:
                items.sort()
                parts.append(set_ + "=" + ",".join(t for _, t in items))
        return ";".join(parts)

    def levels(self):
        return {lv: self.canonical(lv) for lv in LEVELS}


def env_options(enable, disable, dump):
    """Options from the three environment strings (None = unset).
    Raises OptError with .source set."""
    o = Options()
    for set_, var, text in (("enable", "KILN_ENABLE", enable),
                            ("disable", "KILN_DISABLE", disable),
                            ("dump", "KILN_DUMP", dump)):
        if text is None:
            continue
        try:
            for item in parse_list(text, set_):
                o.apply(set_, item)
        except OptError as e:
            e.source = var
            raise
    return o


def apply_execute(base, enable, disable):
    """Effective options of one execute: base + enable items + disable
    items.  Raises OptError with .source set."""
    o = base.copy()
    for set_, lst in (("enable", enable), ("disable", disable)):
        for idx, el in enumerate(lst):
            try:
                o.apply(set_, parse_element(el, set_))
            except OptError as e:
                e.source = "execute %s[%d]" % (set_, idx)
                raise
    return o


def fnv1a64(text):
    h = 0xcbf29ce484222325
    for c in text.encode():
        h ^= c
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return h

/*
** fusion_text.c -- the .kf text format, version 1: kiln_fusion_parse and
** kiln_fusion_print.  docs/fusion-format.md is the specification (grammar,
** statements, constants, errors); this file follows it exactly.
**
** The parser is a line-oriented recursive-descent reader over a small lexer
** (value names, words, "=", "[", "]", ",", "?").  Every definition statement
** becomes exactly one node through the public builder, so the builder's
** validation applies unchanged and the node order equals the statement
** order.  The printer names values %0..%N-1 by node index; therefore
** print -> parse -> print is byte-identical and the structural hash, which
** covers only the node array and the outputs, survives the round trip.
**
** Failure contract: any input (arbitrary bytes, any length) yields either a
** finalized fusion or KILN_ERR_PARSE with "LINE:COL: message" (1-based,
** columns count bytes), or KILN_ERR_NO_MEMORY; nothing leaks and *out is
** untouched on failure.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ------------------------------------------------------------------ lexer */

enum {
    TK_EOL, /* end of line, comment or end of input */
    TK_NAME, /* %name (s/n include the '%') */
    TK_WORD, /* [A-Za-z0-9_.+-]+ */
    TK_EQ,
    TK_LBRACK,
    TK_RBRACK,
    TK_COMMA,
    TK_QUERY
};

typedef struct tok {
    int kind;
    const char *s;
    size_t n;
    unsigned long line, col;
} tok;

/* One name -> value id binding (open addressing, names point into text). */
typedef struct name_slot {
    const char *s; /* NULL: empty */
    size_t n;
    kiln_value id;
} name_slot;

typedef struct parser {
    const char *text;
    size_t len, pos;
    unsigned long line;
    size_t line_start;
    kiln_fusion *f;
    name_slot *names;
    size_t cap_names, n_names;
} parser;

static int is_name_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

static int is_word_char(int c)
{
    return is_name_char(c) || c == '.' || c == '+' || c == '-';
}

static unsigned long col_of(const parser *p, size_t pos)
{
    return (unsigned long)(pos - p->line_start) + 1;
}

/* A parse error at (line, col): "LINE:COL: message". */
static kiln_status perr(unsigned long line, unsigned long col, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));
static kiln_status perr(unsigned long line, unsigned long col, const char *fmt,
                        ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kiln__err(KILN_ERR_PARSE, "%lu:%lu: %s", line, col, msg);
}

/* Quote a token for messages: at most 32 bytes, non-printables escaped. */
static const char *quote(const tok *t, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < t->n && i < 32 && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)t->s[i];
        if (c >= 0x20 && c < 0x7f)
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    if (t->n > 32 && o + 4 < cap) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

static const char *tok_desc(const tok *t, char *buf, size_t cap)
{
    if (t->kind == TK_EOL)
        return "end of line";
    char q[160];
    snprintf(buf, cap, "'%s'", quote(t, q, sizeof q));
    return buf;
}

/* Read the next token of the current line (never crosses a newline). */
static kiln_status lex(parser *p, tok *t)
{
    while (p->pos < p->len &&
           (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' ||
            p->text[p->pos] == '\r'))
        p->pos++;
    t->line = p->line;
    t->col = col_of(p, p->pos);
    t->s = p->text + p->pos;
    t->n = 0;
    if (p->pos >= p->len || p->text[p->pos] == '\n') {
        t->kind = TK_EOL;
        return KILN_OK;
    }
    unsigned char c = (unsigned char)p->text[p->pos];
    if (c == '#') {
        while (p->pos < p->len && p->text[p->pos] != '\n')
            p->pos++;
        t->kind = TK_EOL;
        return KILN_OK;
    }
    if (c == '%') {
        size_t e = p->pos + 1;
        while (e < p->len && is_name_char((unsigned char)p->text[e]))
            e++;
        if (e == p->pos + 1)
            return perr(t->line, t->col,
                        "expected a value name ([A-Za-z0-9_]+) after '%%'");
        t->kind = TK_NAME;
        t->n = e - p->pos;
        p->pos = e;
        return KILN_OK;
    }
    if (is_word_char(c)) {
        size_t e = p->pos;
        while (e < p->len && is_word_char((unsigned char)p->text[e]))
            e++;
        t->kind = TK_WORD;
        t->n = e - p->pos;
        p->pos = e;
        return KILN_OK;
    }
    t->n = 1;
    p->pos++;
    switch (c) {
    case '=': t->kind = TK_EQ; return KILN_OK;
    case '[': t->kind = TK_LBRACK; return KILN_OK;
    case ']': t->kind = TK_RBRACK; return KILN_OK;
    case ',': t->kind = TK_COMMA; return KILN_OK;
    case '?': t->kind = TK_QUERY; return KILN_OK;
    default: break;
    }
    if (c >= 0x20 && c < 0x7f)
        return perr(t->line, t->col, "unexpected character '%c'", c);
    return perr(t->line, t->col, "unexpected byte 0x%02x", c);
}

static int word_is(const tok *t, const char *w)
{
    size_t n = strlen(w);
    return t->kind == TK_WORD && t->n == n && memcmp(t->s, w, n) == 0;
}

/* The reduction op (the op table's rows with a reduce kind) named by word
** t, or KILN_OP_COUNT. */
static kiln_op reduction_named(const tok *t)
{
    for (int k = 0; k < KILN_OP_COUNT; k++)
        if (kiln__op_is_reduce(k) && word_is(t, kiln_op_name((kiln_op)k)))
            return (kiln_op)k;
    return KILN_OP_COUNT;
}

/* Read a token and require its kind; `what` describes what was expected. */
static kiln_status expect(parser *p, tok *t, int kind, const char *what)
{
    kiln_status s = lex(p, t);
    if (s != KILN_OK)
        return s;
    if (t->kind != kind) {
        char d[200];
        return perr(t->line, t->col, "expected %s, found %s", what,
                    tok_desc(t, d, sizeof d));
    }
    return KILN_OK;
}

static kiln_status expect_eol(parser *p)
{
    tok t;
    kiln_status s = lex(p, &t);
    if (s != KILN_OK)
        return s;
    if (t.kind != TK_EOL) {
        char d[200];
        return perr(t.line, t.col, "unexpected %s after the statement",
                    tok_desc(&t, d, sizeof d));
    }
    return KILN_OK;
}

/* ------------------------------------------------------------ name table */

static size_t name_hash(const char *s, size_t n)
{
    return (size_t)kiln__fnv1a(s, n, KILN_FNV_SEED);
}

static name_slot *name_find(parser *p, const tok *t)
{
    if (p->cap_names == 0)
        return NULL;
    size_t mask = p->cap_names - 1;
    for (size_t i = name_hash(t->s, t->n) & mask;; i = (i + 1) & mask) {
        name_slot *e = &p->names[i];
        if (e->s == NULL)
            return NULL;
        if (e->n == t->n && memcmp(e->s, t->s, t->n) == 0)
            return e;
    }
}

static kiln_status name_add(parser *p, const tok *t, kiln_value id)
{
    if (2 * (p->n_names + 1) > p->cap_names) {
        size_t nc = p->cap_names ? 2 * p->cap_names : 64;
        name_slot *ns = kiln__calloc(nc, sizeof *ns);
        if (ns == NULL)
            return kiln__err(KILN_ERR_NO_MEMORY, "fusion parse: out of memory");
        for (size_t i = 0; i < p->cap_names; i++) {
            name_slot *e = &p->names[i];
            if (e->s == NULL)
                continue;
            size_t j = name_hash(e->s, e->n) & (nc - 1);
            while (ns[j].s != NULL)
                j = (j + 1) & (nc - 1);
            ns[j] = *e;
        }
        kiln__free(p->names);
        p->names = ns;
        p->cap_names = nc;
    }
    size_t mask = p->cap_names - 1;
    size_t i = name_hash(t->s, t->n) & mask;
    while (p->names[i].s != NULL)
        i = (i + 1) & mask;
    p->names[i].s = t->s;
    p->names[i].n = t->n;
    p->names[i].id = id;
    p->n_names++;
    return KILN_OK;
}

/* Read a %name operand that must already be defined. */
static kiln_status operand(parser *p, kiln_value *v, const char *what)
{
    tok t;
    kiln_status s = expect(p, &t, TK_NAME, what);
    if (s != KILN_OK)
        return s;
    name_slot *e = name_find(p, &t);
    if (e == NULL) {
        char q[160];
        return perr(t.line, t.col, "undefined value %s", quote(&t, q, sizeof q));
    }
    *v = e->id;
    return KILN_OK;
}

/* ------------------------------------------------------------ literals */

static kiln_status parse_dtype(const tok *t, kiln_dtype *out)
{
    if (t->kind == TK_WORD)
        for (int d = 0; d < KILN_DTYPE_COUNT; d++) {
            const char *nm = kiln_dtype_name((kiln_dtype)d);
            if (strlen(nm) == t->n && memcmp(nm, t->s, t->n) == 0) {
                *out = (kiln_dtype)d;
                return KILN_OK;
            }
        }
    char d[200];
    return perr(t->line, t->col,
                "expected a dtype (bool, i32, i64, f16, bf16, f32, f64), "
                "found %s",
                tok_desc(t, d, sizeof d));
}

/* A small non-negative decimal integer (ranks and axes), at most 99. */
static kiln_status parse_small(const tok *t, int *out, const char *what)
{
    int v = 0;
    int ok = t->kind == TK_WORD && t->n >= 1 && t->n <= 2;
    for (size_t i = 0; ok && i < t->n; i++) {
        if (t->s[i] < '0' || t->s[i] > '9')
            ok = 0;
        else
            v = v * 10 + (t->s[i] - '0');
    }
    if (!ok) {
        char d[200];
        return perr(t->line, t->col, "expected %s (0..99), found %s", what,
                    tok_desc(t, d, sizeof d));
    }
    *out = v;
    return KILN_OK;
}

/* "0x" + 1 or more hex digits, value < 2^64. Returns 1 if t is hex-shaped. */
static int hex_shaped(const tok *t)
{
    return t->n >= 2 && t->s[0] == '0' && t->s[1] == 'x';
}

static kiln_status parse_hex(const tok *t, uint64_t *out)
{
    uint64_t v = 0;
    size_t sig = 0;
    if (t->n == 2)
        return perr(t->line, t->col, "expected hex digits after '0x'");
    for (size_t i = 2; i < t->n; i++) {
        int c = (unsigned char)t->s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return perr(t->line, t->col + i, "invalid hex digit '%c'", c);
        if (sig > 0 || d != 0)
            sig++;
        if (sig > 16)
            return perr(t->line, t->col, "hex constant exceeds 64 bits");
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return KILN_OK;
}

/* The bit pattern of a constant literal of dtype dt. */
static kiln_status parse_literal(const tok *t, kiln_dtype dt, uint64_t *bits)
{
    if (t->kind != TK_WORD) {
        char d[200];
        return perr(t->line, t->col, "expected a constant value, found %s",
                    tok_desc(t, d, sizeof d));
    }
    if (hex_shaped(t))
        return parse_hex(t, bits);
    char q[160];
    char buf[80];
    if (t->n >= sizeof buf)
        return perr(t->line, t->col, "constant literal is too long");
    memcpy(buf, t->s, t->n);
    buf[t->n] = '\0';
    char *end = NULL;
    if (strchr(buf, 'x') != NULL || strchr(buf, 'X') != NULL)
        return perr(t->line, t->col,
                    "invalid %s constant '%s' (hex bit patterns are written "
                    "0x followed by hex digits)",
                    kiln_dtype_name(dt), quote(t, q, sizeof q));
    switch (dt) {
    case KILN_BOOL:
        if (strcmp(buf, "true") == 0 || strcmp(buf, "false") == 0) {
            *bits = buf[0] == 't';
            return KILN_OK;
        }
        return perr(t->line, t->col,
                    "invalid bool constant '%s' (true, false, 0x0 or 0x1)",
                    quote(t, q, sizeof q));
    case KILN_I32:
    case KILN_I64: {
        int digit0 = (buf[0] == '-' || buf[0] == '+') ? 1 : 0;
        if (buf[digit0] < '0' || buf[digit0] > '9')
            return perr(t->line, t->col, "invalid %s constant '%s'",
                        kiln_dtype_name(dt), quote(t, q, sizeof q));
        errno = 0;
        long long v = strtoll(buf, &end, 10);
        if (*end != '\0')
            return perr(t->line, t->col, "invalid %s constant '%s'",
                        kiln_dtype_name(dt), quote(t, q, sizeof q));
        if (errno == ERANGE ||
            (dt == KILN_I32 && (v < INT32_MIN || v > INT32_MAX)))
            return perr(t->line, t->col, "%s constant '%s' is out of range",
                        kiln_dtype_name(dt), quote(t, q, sizeof q));
        *bits = dt == KILN_I32 ? (uint64_t)(uint32_t)(int32_t)v : (uint64_t)v;
        return KILN_OK;
    }
    case KILN_F32: {
        float v = strtof(buf, &end);
        if (end == buf || *end != '\0')
            return perr(t->line, t->col, "invalid f32 constant '%s'",
                        quote(t, q, sizeof q));
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        *bits = u;
        return KILN_OK;
    }
    case KILN_F64: {
        double v = strtod(buf, &end);
        if (end == buf || *end != '\0')
            return perr(t->line, t->col, "invalid f64 constant '%s'",
                        quote(t, q, sizeof q));
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        *bits = u;
        return KILN_OK;
    }
    default:
        return perr(t->line, t->col,
                    "%s constants take a hex bit pattern (0x...), not '%s'",
                    kiln_dtype_name(dt), quote(t, q, sizeof q));
    }
}

/* "[" [ item { "," item } ] "]" where each item is read by `item`; stores
** at most KILN_MAX_RANK values and their columns (more is an error). */
typedef kiln_status (*item_fn)(const tok *t, int *v);

static kiln_status dim_item(const tok *t, int *v)
{
    if (t->kind == TK_QUERY) {
        *v = 0;
        return KILN_OK;
    }
    if (word_is(t, "1")) {
        *v = 1;
        return KILN_OK;
    }
    char d[200];
    return perr(t->line, t->col,
                "expected '?' (an axis) or '1' (a broadcast axis), found %s",
                tok_desc(t, d, sizeof d));
}

static kiln_status axis_item(const tok *t, int *v)
{
    return parse_small(t, v, "an axis number");
}

static kiln_status bracket_list(parser *p, item_fn item, int *vals,
                                unsigned long *cols, int *n, const char *what)
{
    tok t;
    kiln_status s = expect(p, &t, TK_LBRACK, what);
    if (s != KILN_OK)
        return s;
    *n = 0;
    if ((s = lex(p, &t)) != KILN_OK)
        return s;
    if (t.kind == TK_RBRACK)
        return KILN_OK;
    for (;;) {
        if (*n == KILN_MAX_RANK)
            return perr(t.line, t.col, "more than %d entries (the maximum "
                        "rank is %d)", KILN_MAX_RANK, KILN_MAX_RANK);
        if ((s = item(&t, &vals[*n])) != KILN_OK)
            return s;
        cols[*n] = t.col;
        (*n)++;
        if ((s = lex(p, &t)) != KILN_OK)
            return s;
        if (t.kind == TK_RBRACK)
            return KILN_OK;
        if (t.kind != TK_COMMA) {
            char d[200];
            return perr(t.line, t.col, "expected ',' or ']', found %s",
                        tok_desc(&t, d, sizeof d));
        }
        if ((s = lex(p, &t)) != KILN_OK)
            return s;
    }
}

/* "key" "=" : a keyword argument introducer. */
static kiln_status keyword(parser *p, const char *key)
{
    tok t;
    kiln_status s = lex(p, &t);
    if (s != KILN_OK)
        return s;
    if (!word_is(&t, key)) {
        char d[200];
        return perr(t.line, t.col, "expected '%s=', found %s", key,
                    tok_desc(&t, d, sizeof d));
    }
    return expect(p, &t, TK_EQ, "'='");
}

/* --------------------------------------------------------- statements */

/* Turn a builder failure into a parse error at (line, col). */
static kiln_status builder_fail(kiln_status s, const tok *at)
{
    if (s == KILN_ERR_NO_MEMORY)
        return s;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kiln_last_error());
    return perr(at->line, at->col, "%s", msg);
}

/* The right-hand side after "%name =": one node; *v receives its id. */
static kiln_status definition(parser *p, kiln_value *v)
{
    kiln_fusion *f = p->f;
    tok op;
    kiln_status s = expect(p, &op, TK_WORD, "an op name");
    if (s != KILN_OK)
        return s;
    kiln_value a = -1, b = -1;
    tok t;
    kiln_dtype dt = KILN_F32;

    if (word_is(&op, "input")) {
        int dims[KILN_MAX_RANK], n;
        unsigned long cols[KILN_MAX_RANK];
        uint8_t bc[KILN_MAX_RANK];
        if ((s = lex(p, &t)) != KILN_OK || (s = parse_dtype(&t, &dt)) != KILN_OK)
            return s;
        if ((s = bracket_list(p, dim_item, dims, cols, &n,
                              "'[' (the axes, e.g. [?, 1])")) != KILN_OK)
            return s;
        for (int i = 0; i < n; i++)
            bc[i] = (uint8_t)dims[i];
        if ((s = expect_eol(p)) != KILN_OK)
            return s;
        s = kiln_fusion_input(f, dt, n, bc, v);
    } else if (word_is(&op, "const")) {
        uint64_t bits = 0;
        if ((s = lex(p, &t)) != KILN_OK || (s = parse_dtype(&t, &dt)) != KILN_OK)
            return s;
        if ((s = lex(p, &t)) != KILN_OK ||
            (s = parse_literal(&t, dt, &bits)) != KILN_OK)
            return s;
        if ((s = expect_eol(p)) != KILN_OK)
            return s;
        s = kiln_fusion_const(f, dt, bits, v);
    } else if (word_is(&op, "cast")) {
        if ((s = operand(p, &a, "a value (%name)")) != KILN_OK)
            return s;
        if ((s = lex(p, &t)) != KILN_OK || (s = parse_dtype(&t, &dt)) != KILN_OK)
            return s;
        if ((s = expect_eol(p)) != KILN_OK)
            return s;
        s = kiln_fusion_cast(f, a, dt, v);
    } else if (word_is(&op, "broadcast")) {
        int rank, axes[KILN_MAX_RANK], n;
        unsigned long cols[KILN_MAX_RANK];
        uint8_t is_new[KILN_MAX_RANK] = {0};
        if ((s = operand(p, &a, "a value (%name)")) != KILN_OK ||
            (s = keyword(p, "rank")) != KILN_OK)
            return s;
        if ((s = lex(p, &t)) != KILN_OK ||
            (s = parse_small(&t, &rank, "a rank")) != KILN_OK)
            return s;
        if (rank > KILN_MAX_RANK)
            return perr(t.line, t.col, "rank %d exceeds the maximum rank %d",
                        rank, KILN_MAX_RANK);
        if ((s = keyword(p, "new")) != KILN_OK)
            return s;
        if ((s = bracket_list(p, axis_item, axes, cols, &n,
                              "'[' (the new axes, e.g. [0])")) != KILN_OK)
            return s;
        for (int i = 0; i < n; i++) {
            if (axes[i] >= rank)
                return perr(p->line, cols[i],
                            "new axis %d is out of range for rank %d", axes[i],
                            rank);
            if (is_new[axes[i]])
                return perr(p->line, cols[i], "new axis %d is listed twice",
                            axes[i]);
            is_new[axes[i]] = 1;
        }
        if ((s = expect_eol(p)) != KILN_OK)
            return s;
        s = kiln_fusion_broadcast(f, a, rank, is_new, v);
    } else if (reduction_named(&op) != KILN_OP_COUNT) {
        kiln_op rop = reduction_named(&op);
        int axes[KILN_MAX_RANK], n, keep = 0;
        unsigned long cols[KILN_MAX_RANK];
        if ((s = operand(p, &a, "a value (%name)")) != KILN_OK ||
            (s = keyword(p, "axes")) != KILN_OK ||
            (s = bracket_list(p, axis_item, axes, cols, &n,
                              "'[' (the reduced axes, e.g. [1])")) != KILN_OK)
            return s;
        if ((s = lex(p, &t)) != KILN_OK)
            return s;
        if (word_is(&t, "keepdim")) {
            keep = 1;
            if ((s = expect_eol(p)) != KILN_OK)
                return s;
        } else if (t.kind != TK_EOL) {
            char d[200];
            return perr(t.line, t.col, "expected 'keepdim' or end of line, "
                        "found %s", tok_desc(&t, d, sizeof d));
        }
        s = kiln_fusion_reduce(f, rop, a, axes, n, keep, v);
    } else if (word_is(&op, "matmul")) {
        if ((s = operand(p, &a, "a value (%name)")) != KILN_OK ||
            (s = operand(p, &b, "a value (%name)")) != KILN_OK ||
            (s = expect_eol(p)) != KILN_OK)
            return s;
        s = kiln_fusion_matmul(f, a, b, v);
    } else {
        const kiln_op_desc *info = NULL;
        kiln_op pop = KILN_OP_COUNT;
        for (int k = 0; k < KILN_OP_COUNT; k++) {
            const kiln_op_desc *r = kiln__op_desc((kiln_op)k);
            if (strlen(r->name) == op.n && memcmp(r->name, op.s, op.n) == 0 &&
                (r->kind != 's' || k == KILN_OP_FMA)) {
                info = r;
                pop = (kiln_op)k;
            }
        }
        if (info == NULL) {
            char q[160];
            return perr(op.line, op.col, "unknown op '%s'",
                        quote(&op, q, sizeof q));
        }
        kiln_value args[3];
        char what[64];
        for (int i = 0; i < info->arity; i++) {
            snprintf(what, sizeof what, "operand %d of %s (%%name)", i + 1,
                     info->name);
            if ((s = operand(p, &args[i], what)) != KILN_OK)
                return s;
        }
        if ((s = expect_eol(p)) != KILN_OK)
            return s;
        s = kiln_fusion_op(f, pop, args, info->arity, v);
    }
    return s == KILN_OK ? KILN_OK : builder_fail(s, &op);
}

static kiln_status statement(parser *p, int *header_seen)
{
    tok t;
    kiln_status s = lex(p, &t);
    if (s != KILN_OK || t.kind == TK_EOL)
        return s;
    char d[200];
    if (!*header_seen) {
        if (!word_is(&t, "kiln.fusion"))
            return perr(t.line, t.col,
                        "expected the header 'kiln.fusion 1', found %s",
                        tok_desc(&t, d, sizeof d));
        if ((s = expect(p, &t, TK_WORD, "the format version")) != KILN_OK)
            return s;
        if (!word_is(&t, "1")) {
            char q[160];
            return perr(t.line, t.col,
                        "unsupported format version '%s' (this build reads "
                        "version 1)",
                        quote(&t, q, sizeof q));
        }
        *header_seen = 1;
        return expect_eol(p);
    }
    if (word_is(&t, "output")) {
        kiln_value v;
        if ((s = operand(p, &v, "a value (%name)")) != KILN_OK ||
            (s = expect_eol(p)) != KILN_OK)
            return s;
        s = kiln_fusion_output(p->f, v);
        return s == KILN_OK ? KILN_OK : builder_fail(s, &t);
    }
    if (t.kind != TK_NAME)
        return perr(t.line, t.col,
                    "expected a statement ('%%name = OP ...' or 'output "
                    "%%name'), found %s",
                    tok_desc(&t, d, sizeof d));
    name_slot *e = name_find(p, &t);
    if (e != NULL) {
        char q[160];
        return perr(t.line, t.col, "value %s is already defined (as %%%ld)",
                    quote(&t, q, sizeof q), (long)e->id);
    }
    tok eq;
    if ((s = expect(p, &eq, TK_EQ, "'='")) != KILN_OK)
        return s;
    kiln_value v;
    if ((s = definition(p, &v)) != KILN_OK)
        return s;
    return name_add(p, &t, v);
}

/* Record each input's %name on the fusion (kiln_fusion_input_name): the
** name table is the parser's, so a name means the same here as in the
** statements that use it. */
static kiln_status keep_input_names(parser *p)
{
    kiln_fusion *f = p->f;
    size_t bytes = (size_t)f->n_inputs * sizeof(char *);
    for (size_t i = 0; i < p->cap_names; i++)
        if (p->names[i].s != NULL &&
            f->nodes[p->names[i].id].op == KILN_OP_INPUT)
            bytes += p->names[i].n; /* the name without '%', and a NUL */
    char **names = kiln__calloc(1, bytes ? bytes : 1);
    if (names == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_fusion_parse: out of memory");
    char *pool = (char *)(names + f->n_inputs);
    for (size_t i = 0; i < p->cap_names; i++) {
        const name_slot *e = &p->names[i];
        if (e->s == NULL || f->nodes[e->id].op != KILN_OP_INPUT)
            continue;
        names[f->nodes[e->id].io] = pool;
        memcpy(pool, e->s + 1, e->n - 1);
        pool[e->n - 1] = '\0';
        pool += e->n;
    }
    f->input_names = names;
    return KILN_OK;
}

kiln_status kiln_fusion_input_name(const kiln_fusion *f, int i,
                                   const char **name)
{
    if (f == NULL || name == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_fusion_input_name: NULL argument");
    if (i < 0 || (uint32_t)i >= f->n_inputs)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_fusion_input_name: input %d out of range (the "
                         "fusion has %u inputs)", i, f->n_inputs);
    *name = f->input_names != NULL ? f->input_names[i] : NULL;
    kiln__err_clear();
    return KILN_OK;
}

kiln_status kiln_fusion_parse(const char *text, size_t len, kiln_fusion **out)
{
    if (out == NULL || (text == NULL && len > 0))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_fusion_parse: NULL argument");
    parser p;
    memset(&p, 0, sizeof p);
    p.text = text ? text : "";
    p.len = len;
    p.line = 1;
    kiln_status s = kiln_fusion_create(&p.f);
    if (s != KILN_OK)
        return s;
    int header_seen = 0;
    while (s == KILN_OK) {
        s = statement(&p, &header_seen);
        if (s != KILN_OK)
            break;
        /* skip the rest of the line (only a newline can remain) */
        while (p.pos < p.len && p.text[p.pos] != '\n')
            p.pos++;
        if (p.pos >= p.len)
            break;
        p.pos++;
        p.line++;
        p.line_start = p.pos;
    }
    if (s == KILN_OK) {
        unsigned long col = col_of(&p, p.pos);
        if (!header_seen)
            s = perr(p.line, col,
                     "expected the header 'kiln.fusion 1', found end of "
                     "input");
        else if (p.f->n_outputs == 0)
            s = perr(p.line, col, "no 'output' statement (a fusion needs at "
                     "least one output)");
        else if ((s = kiln_fusion_finalize(p.f)) != KILN_OK) {
            tok end = {TK_EOL, NULL, 0, p.line, col};
            s = builder_fail(s, &end);
        } else
            s = keep_input_names(&p);
    }
    kiln__free(p.names);
    if (s != KILN_OK) {
        kiln_fusion_destroy(p.f);
        return s;
    }
    *out = p.f;
    kiln__err_clear();
    return KILN_OK;
}

/* -------------------------------------------------------------- printer */

static void print_axes(kiln_buf *b, uint32_t mask, int limit)
{
    int first = 1;
    kiln__buf_puts(b, "[");
    for (int i = 0; i < limit; i++)
        if (mask & (1u << i)) {
            kiln__buf_printf(b, "%s%d", first ? "" : ", ", i);
            first = 0;
        }
    kiln__buf_puts(b, "]");
}

kiln_status kiln_fusion_print(const kiln_fusion *f, char **out)
{
    if (f == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_fusion_print: NULL argument");
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n");
    for (uint32_t i = 0; i < f->n_nodes; i++) {
        const kiln_ir_node *n = &f->nodes[i];
        const char *dt = kiln_dtype_name((kiln_dtype)n->dtype);
        kiln__buf_printf(&b, "%%%u = %s", i, kiln_op_name((kiln_op)n->op));
        switch ((kiln_op)n->op) {
        case KILN_OP_INPUT:
            kiln__buf_printf(&b, " %s [", dt);
            for (int a = 0; a < n->rank; a++)
                kiln__buf_printf(&b, "%s%s", a ? ", " : "",
                                 (n->bcast >> a) & 1u ? "1" : "?");
            kiln__buf_puts(&b, "]");
            break;
        case KILN_OP_CONST:
            kiln__buf_printf(&b, " %s 0x%llx", dt,
                             (unsigned long long)n->bits);
            break;
        case KILN_OP_CAST:
            kiln__buf_printf(&b, " %%%ld %s", (long)n->args[0], dt);
            break;
        case KILN_OP_BROADCAST:
            kiln__buf_printf(&b, " %%%ld rank=%d new=", (long)n->args[0],
                             n->rank);
            print_axes(&b, n->axes, n->rank);
            break;
        case KILN_OP_SUM:
        case KILN_OP_RMAX:
        case KILN_OP_RMIN:
            kiln__buf_printf(&b, " %%%ld axes=", (long)n->args[0]);
            print_axes(&b, n->axes, KILN_MAX_RANK);
            if (n->flags & KILN_IR_KEEPDIM)
                kiln__buf_puts(&b, " keepdim");
            break;
        default:
            for (int k = 0; k < 3 && n->args[k] >= 0; k++)
                kiln__buf_printf(&b, " %%%ld", (long)n->args[k]);
            break;
        }
        kiln__buf_puts(&b, "\n");
    }
    for (uint32_t i = 0; i < f->n_outputs; i++)
        kiln__buf_printf(&b, "output %%%ld\n", (long)f->outputs[i]);
    if (b.failed) {
        kiln__buf_free(&b);
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_fusion_print: out of memory");
    }
    *out = b.data;
    kiln__err_clear();
    return KILN_OK;
}

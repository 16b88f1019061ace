/*
** options.c -- the option system: catalogue, parser, validation, merge,
** canonical text and hash (docs/options.md is the contract).
**
** The catalogue is expanded from KILN_OPTION_TABLE (internal.h), the single
** source of truth.  An effective option set is a plain value (struct
** kiln_options: two bit masks and one argument word per option) with no
** hidden global state, so every execute call can copy the context's
** environment snapshot, apply its own items, and never affect another call
** or thread.
**
** Parsing is one left-to-right pass that allocates nothing.  Invariants:
**   - an item is fully checked (syntax of its argument list, name, then
**     arguments) before it is applied, and a failed parse never modifies the
**     target set (env strings are parsed into a local copy first);
**   - among the errors of one item the one at the smallest byte offset is
**     reported; at equal offsets a syntax error wins over an argument error.
**     The token of a syntax error is the one byte at its offset ("" at the
**     end), of an unknown name the name, of an argument error the argument
**     ("(" for an argument list on an option that takes none), of an
**     element error the "," after the first item ("" for an empty element).
**     Items are processed in order, so the first error in the string wins;
**   - canonical text depends only on the struct value, and equal canonical
**     text means equal behaviour (bare expr_simplify = "all passes").
**
** It stays one file past 800 lines: the parser, its error messages, the
** level masks (kiln__level_mask, the one reader of the table's level
** column) and the canonical text all walk the same static expansions of
** KILN_OPTION_TABLE, which splitting would have to export.
*/
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *const kiln__simplify_passes[] = {
#define KILN_X_(id, name) name,
    KILN_SIMPLIFY_PASS_TABLE(KILN_X_)
#undef KILN_X_
        NULL};

static const kiln_option_desc catalogue[KOPT_COUNT] = {
#define KILN_X_(id, nm, st, ar, lv, vo, de, im, ds)                            \
    {nm, st, ar, lv, ds, vo, de, im},
    KILN_OPTION_TABLE(KILN_X_)
#undef KILN_X_
};

/* Name lengths, computed at compile time (the parser compares these first). */
static const size_t name_len[KOPT_COUNT] = {
#define KILN_X_(id, nm, st, ar, lv, vo, de, im, ds) sizeof(nm) - 1,
    KILN_OPTION_TABLE(KILN_X_)
#undef KILN_X_
};

_Static_assert(KOPT_COUNT <= 64, "option bit masks are 64 bits wide");

/* Bit masks of the options of each set and each level (constant
** expressions), so that canonical text only visits the options that are on. */
#define KILN_BIT_(id) ((uint64_t)1 << KOPT_##id)
#define KILN_X_(id, nm, st, ar, lv, vo, de, im, ds) | (((st) == KILN_SET_ENABLE) ? KILN_BIT_(id) : 0)
static const uint64_t enable_mask = 0 KILN_OPTION_TABLE(KILN_X_);
#undef KILN_X_
#define KILN_X_(id, nm, st, ar, lv, vo, de, im, ds) | (((st) == KILN_SET_DISABLE) ? KILN_BIT_(id) : 0)
static const uint64_t disable_mask = 0 KILN_OPTION_TABLE(KILN_X_);
#undef KILN_X_
#define KILN_X_(id, nm, st, ar, lv, vo, de, im, ds) | (((st) == KILN_SET_DUMP) ? KILN_BIT_(id) : 0)
static const uint64_t dump_mask = 0 KILN_OPTION_TABLE(KILN_X_);
#undef KILN_X_
#define KILN_X_(id, nm, st, ar, lv, vo, de, im, ds) | (((lv) == KILN_LEVEL_PLAN) ? KILN_BIT_(id) : 0)
static const uint64_t plan_mask = 0 KILN_OPTION_TABLE(KILN_X_);
#undef KILN_X_
#define KILN_X_(id, nm, st, ar, lv, vo, de, im, ds) | (((lv) == KILN_LEVEL_KERNEL) ? KILN_BIT_(id) : 0)
static const uint64_t kernel_mask = 0 KILN_OPTION_TABLE(KILN_X_);
#undef KILN_X_
#define KILN_X_(id, nm, st, ar, lv, vo, de, im, ds) | (((lv) == KILN_LEVEL_NONE) ? KILN_BIT_(id) : 0)
static const uint64_t none_mask = 0 KILN_OPTION_TABLE(KILN_X_);
#undef KILN_X_
#undef KILN_BIT_

static uint64_t set_bits(int set)
{
    return set == KILN_SET_ENABLE    ? enable_mask
           : set == KILN_SET_DISABLE ? disable_mask
                                     : dump_mask;
}

static uint64_t level_bits(kiln_level level)
{
    return level == KILN_LEVEL_PLAN     ? plan_mask
           : level == KILN_LEVEL_KERNEL ? kernel_mask
           : level == KILN_LEVEL_NONE   ? none_mask
                                        : plan_mask | kernel_mask | none_mask;
}

uint64_t kiln__level_mask(kiln_level level)
{
    return level_bits(level);
}

void kiln__options_mask(const struct kiln_options *o, kiln_level level,
                        struct kiln_options *out)
{
    uint64_t m = level_bits(level);
    memset(out, 0, sizeof *out);
    out->on = o->on & m;
    out->has_list = o->has_list & m;
    for (uint64_t b = out->on; b != 0; b &= b - 1)
        out->arg[__builtin_ctzll(b)] = o->arg[__builtin_ctzll(b)];
}

static const char *const set_names[3] = {"enable", "disable", "dump"};
static const char *const env_names[3] = {"KILN_ENABLE", "KILN_DISABLE",
                                         "KILN_DUMP"};
static const char *const level_names[3] = {"plan", "kernel", "none"};

#define INT_ARG_MAX 2147483647u

const kiln_option_desc *kiln_option_catalogue(size_t *count)
{
    if (count != NULL)
        *count = KOPT_COUNT;
    return catalogue;
}

/* ------------------------------------------------------------- parsing */

/* Error kinds; each maps to a status and one message template. */
enum perr_kind {
    PE_NONE = 0,
    PE_EMPTY,        /* empty item: ",a", "a,,b", "," */
    PE_NAME_EXPECT,  /* "(" or ")" where a name starts */
    PE_AFTER_NAME,   /* ")" right after a name */
    PE_UNCLOSED,     /* "(" never closed */
    PE_NESTED,       /* "(" inside an argument list */
    PE_AFTER_CLOSE,  /* byte after ")" is neither "," nor the end */
    PE_UNKNOWN,      /* name not in the set */
    PE_NO_ARGS,      /* argument list on a KILN_ARG_NONE option */
    PE_INT_BAD,      /* not 1+ digits, or > INT_ARG_MAX */
    PE_INT_EXTRA,    /* a second argument to an INT option */
    PE_NAME_BAD,     /* argument not in the vocabulary */
    PE_ELEMENT,      /* execute element holds more than one item */
    PE_ELEMENT_EMPTY /* execute element is "" */
};

typedef struct perr {
    enum perr_kind kind;
    size_t off;     /* byte offset of the error */
    size_t tok_len; /* token = s[off .. off+tok_len) */
    int id;         /* option involved, or -1 */
} perr;

/* One parsed item, applied only once it is fully valid. */
typedef struct pitem {
    int id;
    int has_list;
    uint64_t arg;
} pitem;

static int is_delim(unsigned char c) { return c == ',' || c == '(' || c == ')'; }

static int lookup(kiln_opt_set set, const char *s, size_t n)
{
    for (int id = 0; id < KOPT_COUNT; id++)
        if (catalogue[id].set == set && name_len[id] == n &&
            memcmp(catalogue[id].name, s, n) == 0)
            return id;
    return -1;
}

static void set_err(perr *e, enum perr_kind k, size_t off, size_t tok_len,
                    int id)
{
    e->kind = k;
    e->off = off;
    e->tok_len = tok_len;
    e->id = id;
}

/* Length of the argument starting at s[a], ending at "," or lim. */
static size_t arg_len(const char *s, size_t a, size_t lim)
{
    size_t j = a;
    while (j < lim && s[j] != ',')
        j++;
    return j - a;
}

/* Validate the arguments s[p+1 .. lim) of option id into *it.  Returns 0,
** or 1 with *e set to the first (leftmost) bad argument. */
static int check_args(const char *s, size_t p, size_t lim, int id, pitem *it,
                      perr *e)
{
    size_t a = p + 1;
    if (catalogue[id].arg == KILN_ARG_INT) {
        size_t n = arg_len(s, a, lim);
        uint64_t v = 0;
        int ok = n > 0;
        for (size_t j = 0; j < n && ok; j++) {
            unsigned char c = (unsigned char)s[a + j];
            if (c < '0' || c > '9')
                ok = 0;
            else if ((v = v * 10 + (c - '0')) > INT_ARG_MAX)
                ok = 0; /* stops before v can overflow 64 bits */
        }
        if (!ok) {
            set_err(e, PE_INT_BAD, a, n, id);
            return 1;
        }
        if (a + n < lim) { /* a "," follows: a second argument */
            size_t b = a + n + 1;
            set_err(e, PE_INT_EXTRA, b, arg_len(s, b, lim), id);
            return 1;
        }
        it->arg = v;
        return 0;
    }
    /* KILN_ARG_NAMES */
    const char *const *vocab = catalogue[id].vocabulary;
    uint64_t mask = 0;
    for (;;) {
        size_t n = arg_len(s, a, lim);
        int w = 0;
        for (; vocab[w] != NULL; w++)
            if (strlen(vocab[w]) == n && memcmp(vocab[w], s + a, n) == 0)
                break;
        if (vocab[w] == NULL) {
            set_err(e, PE_NAME_BAD, a, n, id);
            return 1;
        }
        mask |= (uint64_t)1 << w;
        if (a + n >= lim)
            break;
        a += n + 1;
    }
    it->has_list = 1;
    it->arg = mask;
    return 0;
}

/* Parse the item at s[pos] of set `set` (s has length n).  On success fills
** *it and *end (the byte after the item: a "," or n) and returns 0; else
** returns 1 with *e set.  Allocates nothing. */
static int parse_item(const char *s, size_t n, size_t pos, kiln_opt_set set,
                      pitem *it, size_t *end, perr *e)
{
    size_t i = pos;
    while (i < n && !is_delim((unsigned char)s[i]))
        i++;
    if (i == pos) { /* empty name */
        if (i == n || s[i] == ',') /* token: the "," there */
            set_err(e, PE_EMPTY, pos, i < n, -1);
        else
            set_err(e, PE_NAME_EXPECT, pos, 1, -1);
        return 1;
    }
    int id = lookup(set, s + pos, i - pos);
    if (id < 0) {
        set_err(e, PE_UNKNOWN, pos, i - pos, -1);
        return 1;
    }
    it->id = id;
    it->has_list = 0;
    it->arg = catalogue[id].int_default;
    if (i == n || s[i] == ',') {
        *end = i;
        return 0;
    }
    if (s[i] == ')') {
        set_err(e, PE_AFTER_NAME, i, 1, id);
        return 1;
    }
    /* s[i] == '(': find the structure of the list first */
    size_t p = i, j = p + 1;
    while (j < n && s[j] != ')' && s[j] != '(')
        j++;
    if (j == n) {
        set_err(e, PE_UNCLOSED, p, 1, id); /* at p: before any argument */
        return 1;
    }
    perr syn = {PE_NONE, 0, 0, id};
    size_t after = j + 1;
    if (s[j] == '(')
        set_err(&syn, PE_NESTED, j, 1, id);
    else if (after < n && s[after] != ',')
        set_err(&syn, PE_AFTER_CLOSE, after, 1, id);
    if (catalogue[id].arg == KILN_ARG_NONE) {
        set_err(e, PE_NO_ARGS, p, 1, id); /* p < any syntax error here */
        return 1;
    }
    perr sem;
    if (check_args(s, p, j, id, it, &sem)) {
        /* leftmost wins; a tie (empty argument right before a nested "(")
        ** goes to the syntax error */
        *e = (syn.kind != PE_NONE && syn.off <= sem.off) ? syn : sem;
        return 1;
    }
    if (syn.kind != PE_NONE) {
        *e = syn;
        return 1;
    }
    *end = after;
    return 0;
}

static void apply(struct kiln_options *o, const pitem *it)
{
    uint64_t bit = (uint64_t)1 << it->id;
    o->on |= bit;
    if (it->has_list)
        o->has_list |= bit;
    else
        o->has_list &= ~bit;
    o->arg[it->id] = it->arg;
}

/* Parse a whole list (env string) into *o. */
static int parse_list(const char *s, kiln_opt_set set, struct kiln_options *o,
                      perr *e)
{
    size_t n = strlen(s), pos = 0;
    while (pos < n) {
        pitem it;
        size_t end;
        if (parse_item(s, n, pos, set, &it, &end, e))
            return 1;
        apply(o, &it);
        pos = end + 1; /* skip the ","; a trailing "," ends the loop */
    }
    return 0;
}

/* Parse one execute element. */
static int parse_element(const char *s, kiln_opt_set set, pitem *it, perr *e)
{
    size_t n = strlen(s), end;
    if (n == 0) {
        set_err(e, PE_ELEMENT_EMPTY, 0, 0, -1);
        return 1;
    }
    if (parse_item(s, n, 0, set, it, &end, e))
        return 1;
    if (end < n) {
        set_err(e, PE_ELEMENT, end, 1, -1);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------- error messages */

/* Messages are built in a fixed buffer on the stack, so reporting an error
** never allocates (it must work under fault injection and on the execute
** path); text beyond the buffer is cut off. */
typedef struct mbuf {
    char data[1536];
    size_t len;
} mbuf;

static void mb_printf(mbuf *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void mb_printf(mbuf *m, const char *fmt, ...)
{
    if (m->len + 1 >= sizeof m->data)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m->data + m->len, sizeof m->data - m->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        m->len += (size_t)n;
    if (m->len >= sizeof m->data)
        m->len = sizeof m->data - 1;
}

/* Append `s[0..n)` quoted, with non-printable bytes, quotes and backslashes
** as \xHH and long text shortened (the full token is in
** kiln_error_info.token). */
static void quote(mbuf *m, const char *s, size_t n)
{
    mb_printf(m, "'");
    size_t shown = n > 120 ? 120 : n;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f || c == '\'' || c == '\\')
            mb_printf(m, "\\x%02x", c);
        else
            mb_printf(m, "%c", c);
    }
    if (shown < n)
        mb_printf(m, "...(%zu bytes)", n);
    mb_printf(m, "'");
}

static void list_names(mbuf *m, kiln_opt_set set)
{
    mb_printf(m, "; valid %s options: ", set_names[set]);
    int first = 1;
    for (int id = 0; id < KOPT_COUNT; id++) {
        if (catalogue[id].set != set)
            continue;
        mb_printf(m, "%s%s", first ? "" : ", ", catalogue[id].name);
        first = 0;
    }
}

static void list_vocab(mbuf *m, int id)
{
    mb_printf(m, " (valid passes of %s: ", catalogue[id].name);
    for (int w = 0; catalogue[id].vocabulary[w] != NULL; w++)
        mb_printf(m, "%s%s", w ? ", " : "", catalogue[id].vocabulary[w]);
    mb_printf(m, ")");
}

static kiln_status status_of(enum perr_kind k)
{
    switch (k) {
    case PE_UNKNOWN:
        return KILN_ERR_OPTION_UNKNOWN;
    case PE_NO_ARGS:
    case PE_INT_BAD:
    case PE_INT_EXTRA:
    case PE_NAME_BAD:
        return KILN_ERR_OPTION_ARGUMENT;
    case PE_ELEMENT:
    case PE_ELEMENT_EMPTY:
        return KILN_ERR_OPTION_ELEMENT;
    default:
        return KILN_ERR_OPTION_SYNTAX;
    }
}

/* Record the error e found in s (source `src`, set `set`) and return its
** status.  The message names the source, byte offset and token, and lists
** the valid names of the set (plus the vocabulary for a bad pass name).
** Allocates nothing. */
static kiln_status report(const perr *e, const char *src, const char *s,
                          kiln_opt_set set)
{
    kiln_status st = status_of(e->kind);
    const char *tok = s + e->off;
    const char *nm = e->id >= 0 ? catalogue[e->id].name : "";
    mbuf m;
    m.len = 0;
    m.data[0] = '\0';
    mb_printf(&m, "%s: %s at byte %zu: ", src,
              st == KILN_ERR_OPTION_SYNTAX     ? "syntax error"
              : st == KILN_ERR_OPTION_UNKNOWN  ? "unknown option"
              : st == KILN_ERR_OPTION_ARGUMENT ? "invalid argument"
                                               : "invalid element",
              e->off);
    quote(&m, tok, e->tok_len);
    switch (e->kind) {
    case PE_EMPTY:
        mb_printf(&m, " where an option name was expected (empty item: items "
                      "are separated by single commas; one trailing comma is "
                      "allowed)");
        break;
    case PE_NAME_EXPECT:
        mb_printf(&m, " where an option name was expected");
        break;
    case PE_AFTER_NAME:
        mb_printf(&m, " after '%s' (expected '(', ',' or the end)", nm);
        break;
    case PE_UNCLOSED:
        mb_printf(&m, " of '%s' is never closed by ')'", nm);
        break;
    case PE_NESTED:
        mb_printf(&m, " inside the argument list of '%s'", nm);
        break;
    case PE_AFTER_CLOSE:
        mb_printf(&m, " after the argument list of '%s' (expected ',' or "
                      "the end)", nm);
        break;
    case PE_UNKNOWN:
        mb_printf(&m, " is not a%s %s option (names are case-sensitive and "
                      "never trimmed)",
                  set == KILN_SET_ENABLE ? "n" : "", set_names[set]);
        break;
    case PE_NO_ARGS:
        mb_printf(&m, ": option '%s' takes no arguments", nm);
        break;
    case PE_INT_BAD:
        mb_printf(&m, " for '%s' (expected one decimal integer 0..2147483647: "
                      "digits only, no sign or spaces)", nm);
        break;
    case PE_INT_EXTRA:
        mb_printf(&m, ": '%s' takes exactly one integer argument", nm);
        break;
    case PE_NAME_BAD:
        mb_printf(&m, " is not a pass name of '%s'", nm);
        list_vocab(&m, e->id);
        break;
    case PE_ELEMENT:
        mb_printf(&m, ": an execute element holds exactly one item; pass each "
                      "item as its own element");
        break;
    case PE_ELEMENT_EMPTY:
        mb_printf(&m, ": an execute element must hold one item, not an empty "
                      "string");
        break;
    case PE_NONE:
        break;
    }
    list_names(&m, set);
    return kiln__opt_err(st, src, (long)e->off, tok, e->tok_len, "%s", m.data);
}

static void exec_source(char *dst, size_t cap, kiln_opt_set set, size_t index)
{
    snprintf(dst, cap, "execute %s[%zu]", set_names[set], index);
}

/* ------------------------------------------------------------ public API */

kiln_status kiln_options_from_env(const char *enable, const char *disable,
                                  const char *dump, kiln_options **out)
{
    if (out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_options_from_env: out is NULL");
    struct kiln_options tmp;
    memset(&tmp, 0, sizeof tmp);
    const char *src[3] = {enable, disable, dump};
    for (int set = 0; set < 3; set++) {
        perr e;
        if (src[set] != NULL &&
            parse_list(src[set], (kiln_opt_set)set, &tmp, &e))
            return report(&e, env_names[set], src[set], (kiln_opt_set)set);
    }
    struct kiln_options *o = kiln__malloc(sizeof *o);
    if (o == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY,
                         "kiln_options_from_env: out of memory");
    *o = tmp;
    *out = o;
    kiln__err_clear();
    return KILN_OK;
}

kiln_status kiln__options_apply_item(struct kiln_options *o, kiln_opt_set set,
                                     const char *item, size_t index)
{
    if (o == NULL || item == NULL ||
        (set != KILN_SET_ENABLE && set != KILN_SET_DISABLE))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_options_apply: %s",
                         o == NULL      ? "options are NULL"
                         : item == NULL ? "item is NULL"
                                        : "set must be enable or disable "
                                          "(dump comes from KILN_DUMP only)");
    pitem it;
    perr e;
    if (parse_element(item, set, &it, &e)) {
        char src[64];
        exec_source(src, sizeof src, set, index);
        return report(&e, src, item, set);
    }
    apply(o, &it);
    return KILN_OK;
}

kiln_status kiln_options_apply(kiln_options *opts, kiln_opt_set set,
                               const char *item, size_t index)
{
    kiln_status st = kiln__options_apply_item(opts, set, item, index);
    if (st == KILN_OK)
        kiln__err_clear();
    return st;
}

kiln_status kiln_options_copy(const kiln_options *src, kiln_options **out)
{
    if (src == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_options_copy: NULL argument");
    struct kiln_options *o = kiln__malloc(sizeof *o);
    if (o == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY,
                         "kiln_options_copy: out of memory");
    *o = *src;
    *out = o;
    kiln__err_clear();
    return KILN_OK;
}

void kiln_options_destroy(kiln_options *opts) { kiln__free(opts); }

/* ------------------------------------------------------- canonical text */

/* A sink that counts, copies what fits, and (when `hashing`) hashes as it
** goes, so that canonical text and hash never allocate. */
typedef struct sink {
    char *dst;
    size_t cap; /* bytes of dst usable for text (NUL not included) */
    size_t len;
    uint64_t hash;
    int hashing;
} sink;

static void put(sink *k, const char *s, size_t n)
{
    if (k->dst != NULL && k->len < k->cap) {
        size_t room = k->cap - k->len;
        memcpy(k->dst + k->len, s, n < room ? n : room);
    }
    k->len += n;
    if (k->hashing)
        k->hash = kiln__fnv1a(s, n, k->hash);
}

static void put_str(sink *k, const char *s) { put(k, s, strlen(s)); }

/* The ids of set `set` (filtered by level) that are on, sorted bytewise by
** name.  Returns the count.  The catalogue need not be sorted: the few ids
** that are on are insertion-sorted here. */
static int sorted_ids(const struct kiln_options *o, kiln_opt_set set,
                      kiln_level level, int ids[KOPT_COUNT])
{
    uint64_t bits = o->on & set_bits(set) & level_bits(level);
    int n = 0;
    while (bits != 0) {
        int id = __builtin_ctzll(bits);
        bits &= bits - 1;
        int j = n++;
        while (j > 0 && strcmp(catalogue[ids[j - 1]].name,
                               catalogue[id].name) > 0) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = id;
    }
    return n;
}

static void put_u64(sink *k, uint64_t v)
{
    char d[24];
    size_t i = sizeof d;
    do
        d[--i] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    put(k, d + i, sizeof d - i);
}

static void canonical(const struct kiln_options *o, kiln_level level, sink *k)
{
    int first_set = 1;
    for (int set = 0; set < 3; set++) {
        int ids[KOPT_COUNT];
        int n = sorted_ids(o, (kiln_opt_set)set, level, ids);
        if (n == 0)
            continue;
        if (!first_set)
            put(k, ";", 1);
        first_set = 0;
        put_str(k, set_names[set]);
        put(k, "=", 1);
        for (int i = 0; i < n; i++) {
            int id = ids[i];
            if (i > 0)
                put(k, ",", 1);
            put(k, catalogue[id].name, name_len[id]);
            if (catalogue[id].arg == KILN_ARG_INT) {
                put(k, "(", 1);
                put_u64(k, o->arg[id]);
                put(k, ")", 1);
            } else if (catalogue[id].arg == KILN_ARG_NAMES &&
                       ((o->has_list >> id) & 1u)) {
                /* vocabulary is sorted, so mask order is sorted order and
                ** each word appears once (de-duplicated) */
                put(k, "(", 1);
                int w_first = 1;
                for (int w = 0; catalogue[id].vocabulary[w] != NULL; w++) {
                    if (!((o->arg[id] >> w) & 1u))
                        continue;
                    if (!w_first)
                        put(k, ",", 1);
                    w_first = 0;
                    put_str(k, catalogue[id].vocabulary[w]);
                }
                put(k, ")", 1);
            }
        }
    }
}

/* Write the canonical text of `level` NUL-terminated into buf (cap bytes)
** when it fits, else leave buf untouched; return its length either way.
** One pass through a stack buffer in the common case. */
static size_t canonical_copy(const struct kiln_options *o, kiln_level level,
                             char *buf, size_t cap)
{
    char tmp[1024];
    sink k = {tmp, sizeof tmp, 0, 0, 0};
    canonical(o, level, &k);
    if (k.len + 1 > cap)
        return k.len;
    if (k.len <= sizeof tmp)
        memcpy(buf, tmp, k.len);
    else { /* longer than any text of today's table */
        sink w = {buf, cap - 1, 0, 0, 0};
        canonical(o, level, &w);
    }
    buf[k.len] = '\0';
    return k.len;
}

static int level_ok(kiln_level level)
{
    return level >= KILN_LEVEL_ALL && level <= KILN_LEVEL_NONE;
}

kiln_status kiln_options_canonical(const kiln_options *opts, kiln_level level,
                                   char *buf, size_t cap, size_t *len)
{
    if (opts == NULL || (buf == NULL && cap != 0) || !level_ok(level))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_options_canonical: %s",
                         opts == NULL ? "options are NULL"
                         : !level_ok(level) ? "invalid level"
                                            : "buf is NULL but cap is not 0");
    size_t n = canonical_copy(opts, level, buf, cap);
    if (len != NULL)
        *len = n;
    if (n + 1 > cap)
        return kiln__err(KILN_ERR_LIMIT,
                         "kiln_options_canonical: text needs %zu bytes plus "
                         "NUL, buffer has %zu",
                         n, cap);
    kiln__err_clear();
    return KILN_OK;
}

kiln_status kiln_options_hash(const kiln_options *opts, kiln_level level,
                              uint64_t *out)
{
    if (opts == NULL || out == NULL || !level_ok(level))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_options_hash: NULL argument or invalid level");
    sink k = {NULL, 0, 0, KILN_FNV_SEED, 1};
    canonical(opts, level, &k);
    *out = k.hash;
    kiln__err_clear();
    return KILN_OK;
}

void kiln__options_canonical_buf(const struct kiln_options *o,
                                 kiln_level level, kiln_buf *b)
{
    char small[512];
    sink k = {small, sizeof small, 0, 0, 0};
    canonical(o, level, &k);
    if (k.len <= sizeof small) {
        kiln__buf_add(b, small, k.len);
        return;
    }
    char *big = kiln__malloc(k.len); /* cannot happen with today's table */
    if (big == NULL) {
        b->failed = 1;
        return;
    }
    sink w = {big, k.len, 0, 0, 0};
    canonical(o, level, &w);
    kiln__buf_add(b, big, w.len);
    kiln__free(big);
}

kiln_status kiln__kernel_options(const struct kiln_options *o,
                                 kiln_kernel_options *ko, char *buf,
                                 size_t cap)
{
    if (o == NULL || ko == NULL || buf == NULL || cap == 0)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln__kernel_options: NULL argument");
    size_t n = canonical_copy(o, KILN_LEVEL_KERNEL, buf, cap);
    if (n + 1 > cap)
        return kiln__err(KILN_ERR_LIMIT,
                         "kernel options: canonical text needs %zu bytes, "
                         "buffer has %zu",
                         n + 1, cap);
    uint64_t all = 0;
    for (int i = 0; kiln__simplify_passes[i] != NULL; i++)
        all |= (uint64_t)1 << i;
    memset(ko, 0, sizeof *ko);
    ko->struct_size = sizeof *ko;
    ko->fast_math = kiln__opt_on(o, KOPT_EN_FAST_MATH);
    ko->lineinfo = kiln__opt_on(o, KOPT_EN_KERNEL_LINEINFO);
    ko->debug = kiln__opt_on(o, KOPT_EN_KERNEL_DEBUG);
    /* disable=fma wins over fast_math's contraction (docs: conflicts) */
    ko->contract = !kiln__opt_on(o, KOPT_DIS_FMA);
    ko->sass = !kiln__opt_on(o, KOPT_DIS_COMPILE_TO_SASS);
    if (kiln__opt_on(o, KOPT_DIS_EXPR_SIMPLIFY))
        ko->simplify_off = ((o->has_list >> KOPT_DIS_EXPR_SIMPLIFY) & 1u)
                               ? o->arg[KOPT_DIS_EXPR_SIMPLIFY]
                               : all;
    ko->canonical = buf;
    return KILN_OK;
}

kiln_status kiln_options_get(const kiln_options *opts, kiln_opt_set set,
                             const char *name, int *on, uint64_t *int_arg)
{
    if (opts == NULL || name == NULL || on == NULL || (int)set < 0 ||
        (int)set > 2)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_options_get: NULL argument or invalid set");
    int id = lookup(set, name, strlen(name));
    if (id < 0) {
        mbuf m;
        m.len = 0;
        m.data[0] = '\0';
        mb_printf(&m, "kiln_options_get: unknown %s option ", set_names[set]);
        quote(&m, name, strlen(name));
        list_names(&m, set);
        kiln__opt_err(KILN_ERR_OPTION_UNKNOWN, "kiln_options_get", -1, name,
                      strlen(name), "%s", m.data);
        return KILN_ERR_OPTION_UNKNOWN;
    }
    int is_on = kiln__opt_on(opts, id);
    uint64_t v = 0;
    if (is_on && catalogue[id].arg == KILN_ARG_INT)
        v = opts->arg[id];
    else if (is_on && catalogue[id].arg == KILN_ARG_NAMES) {
        if ((opts->has_list >> id) & 1u)
            v = opts->arg[id];
        else
            for (int w = 0; catalogue[id].vocabulary[w] != NULL; w++)
                v |= (uint64_t)1 << w;
    }
    *on = is_on;
    if (int_arg != NULL)
        *int_arg = v;
    kiln__err_clear();
    return KILN_OK;
}

/* ------------------------------------------------------------------ JSON */

static void json_canonical(kiln_buf *b, const struct kiln_options *o,
                           kiln_level level)
{
    /* canonical text holds only names, digits and ",;=()": no escaping */
    kiln__buf_add(b, "\"", 1);
    kiln__options_canonical_buf(o, level, b);
    kiln__buf_add(b, "\"", 1);
}

kiln_status kiln_options_json(const kiln_options *opts, char **out)
{
    if (opts == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_options_json: NULL argument");
    static const char *const arg_names[3] = {"none", "int", "names"};
    kiln_buf b = {0};
    kiln__buf_puts(&b, "{\"options\":[");
    int first = 1;
    for (int set = 0; set < 3; set++) {
        int ids[KOPT_COUNT];
        int n = sorted_ids(opts, (kiln_opt_set)set, KILN_LEVEL_ALL, ids);
        for (int i = 0; i < n; i++) {
            int id = ids[i];
            const kiln_option_desc *d = &catalogue[id];
            kiln__buf_printf(&b, "%s{\"name\":\"%s\",\"set\":\"%s\","
                                 "\"level\":\"%s\",\"arg\":\"%s\",\"args\":",
                             first ? "" : ",", d->name, set_names[set],
                             level_names[d->level], arg_names[d->arg]);
            first = 0;
            if (d->arg == KILN_ARG_INT)
                kiln__buf_printf(&b, "[%" PRIu64 "]", opts->arg[id]);
            else if (d->arg == KILN_ARG_NAMES &&
                     !((opts->has_list >> id) & 1u))
                kiln__buf_puts(&b, "null");
            else if (d->arg == KILN_ARG_NAMES) {
                kiln__buf_puts(&b, "[");
                int wf = 1;
                for (int w = 0; d->vocabulary[w] != NULL; w++)
                    if ((opts->arg[id] >> w) & 1u) {
                        kiln__buf_printf(&b, "%s\"%s\"", wf ? "" : ",",
                                         d->vocabulary[w]);
                        wf = 0;
                    }
                kiln__buf_puts(&b, "]");
            } else
                kiln__buf_puts(&b, "[]");
            kiln__buf_puts(&b, "}");
        }
    }
    static const kiln_level levels[4] = {KILN_LEVEL_ALL, KILN_LEVEL_PLAN,
                                         KILN_LEVEL_KERNEL, KILN_LEVEL_NONE};
    static const char *const lnames[4] = {"all", "plan", "kernel", "none"};
    kiln__buf_puts(&b, "],\"canonical\":{");
    for (int l = 0; l < 4; l++) {
        kiln__buf_printf(&b, "%s\"%s\":", l ? "," : "", lnames[l]);
        json_canonical(&b, opts, levels[l]);
    }
    kiln__buf_puts(&b, "},\"hash\":{");
    for (int l = 0; l < 4; l++) {
        sink k = {NULL, 0, 0, KILN_FNV_SEED, 1};
        canonical(opts, levels[l], &k);
        kiln__buf_printf(&b, "%s\"%s\":\"0x%016" PRIx64 "\"", l ? "," : "",
                         lnames[l], k.hash);
    }
    kiln__buf_puts(&b, "}}");
    if (b.failed || b.data == NULL) {
        kiln__buf_free(&b);
        return kiln__err(KILN_ERR_NO_MEMORY,
                         "kiln_options_json: out of memory");
    }
    *out = b.data;
    kiln__err_clear();
    return KILN_OK;
}

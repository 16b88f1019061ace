/*
** vectors.c -- loading conformance vector files (docs/conformance.md,
** "Vector format") with jansson, and decoding their hex bit patterns and
** tensors.
**
** Invariants: a loaded cf_file has every common field validated (suite,
** suiteVersion major 1, category, numberOfTests == the tests counted,
** every flag defined in notes, tcIds unique and >= 1) and its tests sorted
** by tcId; the cf_test entries borrow strings from the JSON tree the file
** owns.  Category-specific fields are decoded lazily, when a test runs, so
** that one malformed test fails alone with a precise message.  Nothing here
** aborts on bad input: every error is text naming the file and JSON path.
*/
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

#define CF_MAX_ELEMENTS ((size_t)1 << 28) /* per tensor; guards allocation */

/* Format a message into err (cap bytes, may truncate) and return 1. */
int cf_fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && cap)
        vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return 1;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* ----------------------------------------------------------- JSON helpers */

int cf_json_string(const json_t *obj, const char *key, const char *where,
                   const char **out, char *err, size_t cap)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL)
        return cf_fail(err, cap, "%s: missing field '%s'", where, key);
    if (!json_is_string(v))
        return cf_fail(err, cap, "%s: field '%s' must be a string", where, key);
    *out = json_string_value(v);
    return 0;
}

int cf_json_strings(const json_t *obj, const char *key, const char *where,
                    const char ***out, size_t *n, char *err, size_t cap)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    *n = 0;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return cf_fail(err, cap, "%s: field '%s' must be a list of strings",
                    where, key);
    size_t len = json_array_size(v);
    const char **list = calloc(len ? len : 1, sizeof *list);
    if (list == NULL)
        return cf_fail(err, cap, "%s: out of memory", where);
    for (size_t i = 0; i < len; i++) {
        const json_t *s = json_array_get(v, i);
        if (!json_is_string(s)) {
            free(list);
            return cf_fail(err, cap, "%s: %s[%zu] must be a string", where, key,
                        i);
        }
        list[i] = json_string_value(s);
    }
    *out = list;
    *n = len;
    return 0;
}

/* ------------------------------------------------------------------ files */

void cf_file_free(cf_file *f)
{
    if (f == NULL)
        return;
    free(f->path);
    free(f->category);
    free(f->suite_version);
    free(f->tests);
    free(f->pool);
    memset(f, 0, sizeof *f);
}

static int cmp_tcid(const void *a, const void *b)
{
    const cf_test *x = a, *y = b;
    return (x->tcid > y->tcid) - (x->tcid < y->tcid);
}

/* Validate one test object and fill *t.  `where` names it. */
static int load_test(const json_t *jt, const json_t *notes, const char *where,
                     cf_test *t, char *err, size_t cap)
{
    if (!json_is_object(jt))
        return cf_fail(err, cap, "%s: a test must be an object", where);
    const json_t *id = json_object_get(jt, "tcId");
    if (id == NULL)
        return cf_fail(err, cap, "%s: missing field 'tcId'", where);
    if (!json_is_integer(id) || json_integer_value(id) < 1 ||
        json_integer_value(id) > 0x7fffffff)
        return cf_fail(err, cap, "%s: 'tcId' must be an integer >= 1", where);
    t->tcid = (int)json_integer_value(id);
    char w[160];
    snprintf(w, sizeof w, "%s (tcId %d)", where, t->tcid);
    if (cf_json_string(jt, "comment", w, &t->comment, err, cap) ||
        cf_json_string(jt, "result", w, &t->result, err, cap))
        return 1;
    if (strcmp(t->result, "valid") != 0 && strcmp(t->result, "invalid") != 0 &&
        strcmp(t->result, "acceptable") != 0)
        return cf_fail(err, cap,
                    "%s: 'result' is '%s'; expected valid, invalid or "
                    "acceptable", w, t->result);
    const json_t *flags = json_object_get(jt, "flags");
    if (flags == NULL)
        return cf_fail(err, cap, "%s: missing field 'flags'", w);
    if (!json_is_array(flags))
        return cf_fail(err, cap, "%s: 'flags' must be a list", w);
    for (size_t i = 0; i < json_array_size(flags); i++) {
        const json_t *f = json_array_get(flags, i);
        if (!json_is_string(f))
            return cf_fail(err, cap, "%s: flags[%zu] must be a string", w, i);
        if (json_object_get(notes, json_string_value(f)) == NULL)
            return cf_fail(err, cap, "%s: flag '%s' is not defined in 'notes'", w,
                        json_string_value(f));
    }
    t->json = (json_t *)jt;
    return 0;
}

/* Copy s into the pool at *p and return where it went. */
static const char *put(char **p, const char *s)
{
    size_t n = strlen(s) + 1;
    char *at = *p;
    memcpy(at, s, n);
    *p += n;
    return at;
}

/* Move every test's strings and its JSON object (as compact text) into one
** pool, so the tree can be freed.  Non-zero on allocation failure. */
static int pack(cf_file *f)
{
    char **texts = calloc(f->n_tests + 1, sizeof *texts);
    size_t total = 1;
    int rc = texts == NULL;
    for (size_t i = 0; i < f->n_tests && !rc; i++) {
        cf_test *t = &f->tests[i];
        texts[i] = json_dumps(t->json, JSON_COMPACT);
        if (texts[i] == NULL)
            rc = 1;
        else
            total += strlen(texts[i]) + strlen(t->comment) +
                     strlen(t->result) + strlen(t->group_type) + 4;
    }
    if (!rc && (f->pool = malloc(total)) == NULL)
        rc = 1;
    char *p = f->pool;
    for (size_t i = 0; i < f->n_tests && !rc; i++) {
        cf_test *t = &f->tests[i];
        t->category = f->category;
        t->comment = put(&p, t->comment);
        t->result = put(&p, t->result);
        t->group_type = put(&p, t->group_type);
        t->text = put(&p, texts[i]);
        t->json = NULL;
    }
    for (size_t i = 0; texts && i < f->n_tests; i++)
        free(texts[i]);
    free(texts);
    return rc;
}

int cf_file_load(const char *path, cf_file *out, char *err, size_t cap)
{
    char e[CF_MSG];
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        return cf_fail(err, cap, "%s:%d:%d: invalid JSON: %s", path, je.line,
                    je.column, je.text);
    cf_file f;
    memset(&f, 0, sizeof f);
    const char *suite = NULL, *version = NULL, *category = NULL;
    const json_t *notes, *groups, *count;
    if (!json_is_object(root)) {
        cf_fail(e, sizeof e, "top level must be an object");
        goto bad;
    }
    if (cf_json_string(root, "suite", "top level", &suite, e, sizeof e) ||
        cf_json_string(root, "suiteVersion", "top level", &version, e,
                       sizeof e) ||
        cf_json_string(root, "category", "top level", &category, e, sizeof e))
        goto bad;
    if (strcmp(suite, "kiln-conformance") != 0) {
        cf_fail(e, sizeof e, "'suite' is '%s', expected 'kiln-conformance'",
             suite);
        goto bad;
    }
    if (strncmp(version, "1.", 2) != 0) {
        cf_fail(e, sizeof e,
             "suiteVersion '%s' is not supported (this runner reads 1.x)",
             version);
        goto bad;
    }
    notes = json_object_get(root, "notes");
    if (!json_is_object(notes)) {
        cf_fail(e, sizeof e, "'notes' must be an object (flag -> definition)");
        goto bad;
    }
    groups = json_object_get(root, "testGroups");
    if (!json_is_array(groups)) {
        cf_fail(e, sizeof e, "'testGroups' must be a list");
        goto bad;
    }
    count = json_object_get(root, "numberOfTests");
    if (!json_is_integer(count) || json_integer_value(count) < 0) {
        cf_fail(e, sizeof e, "'numberOfTests' must be a non-negative integer");
        goto bad;
    }
    size_t total = 0;
    for (size_t g = 0; g < json_array_size(groups); g++) {
        const json_t *grp = json_array_get(groups, g);
        const json_t *tests = json_object_get(grp, "tests");
        if (!json_is_object(grp) || !json_is_array(tests)) {
            cf_fail(e, sizeof e, "testGroups[%zu]: must be an object with a "
                 "'tests' list", g);
            goto bad;
        }
        total += json_array_size(tests);
    }
    if ((size_t)json_integer_value(count) != total) {
        cf_fail(e, sizeof e, "'numberOfTests' is %" JSON_INTEGER_FORMAT
             " but the groups hold %zu tests", json_integer_value(count),
             total);
        goto bad;
    }
    f.tests = calloc(total ? total : 1, sizeof *f.tests);
    if (f.tests == NULL) {
        cf_fail(e, sizeof e, "out of memory");
        goto bad;
    }
    for (size_t g = 0; g < json_array_size(groups); g++) {
        const json_t *grp = json_array_get(groups, g);
        const json_t *tests = json_object_get(grp, "tests");
        const char *type = NULL;
        char w[96];
        snprintf(w, sizeof w, "testGroups[%zu]", g);
        if (cf_json_string(grp, "type", w, &type, e, sizeof e))
            goto bad;
        for (size_t i = 0; i < json_array_size(tests); i++) {
            cf_test *t = &f.tests[f.n_tests];
            snprintf(w, sizeof w, "testGroups[%zu].tests[%zu]", g, i);
            if (load_test(json_array_get(tests, i), notes, w, t, e, sizeof e))
                goto bad;
            t->group_type = type;
            f.n_tests++;
        }
    }
    if (f.n_tests > 0)
        qsort(f.tests, f.n_tests, sizeof *f.tests, cmp_tcid);
    for (size_t i = 1; i < f.n_tests; i++)
        if (f.tests[i].tcid == f.tests[i - 1].tcid) {
            cf_fail(e, sizeof e, "tcId %d appears twice", f.tests[i].tcid);
            goto bad;
        }
    f.path = dup_str(path);
    f.category = dup_str(category);
    f.suite_version = dup_str(version);
    if (!f.path || !f.category || !f.suite_version || pack(&f)) {
        cf_fail(e, sizeof e, "out of memory");
        goto bad;
    }
    json_decref(root); /* the tests live on as text in the pool */
    *out = f;
    return 0;
bad:
    cf_file_free(&f);
    json_decref(root);
    return cf_fail(err, cap, "%s: %s", path, e);
}

/* -------------------------------------------------------------- hex, bits */

int cf_hex_parse(const char *s, kiln_dtype dt, uint64_t *bits, char *err,
                 size_t cap)
{
    size_t width = kiln_dtype_size(dt) * 8;
    if (width == 0)
        return cf_fail(err, cap, "invalid dtype");
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || s[2] == '\0')
        return cf_fail(err, cap, "'%.40s' is not a hex bit pattern (0x...)", s);
    uint64_t v = 0;
    for (const char *p = s + 2; *p; p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            return cf_fail(err, cap, "'%.40s': bad hex digit '%c'", s, *p);
        if (v >> 60)
            return cf_fail(err, cap, "'%.40s' does not fit %s", s,
                        kiln_dtype_name(dt));
        v = v << 4 | (uint64_t)d;
    }
    if (dt == KILN_BOOL ? v > 1 : (width < 64 && (v >> width) != 0))
        return cf_fail(err, cap, "'%.40s' does not fit %s", s,
                    kiln_dtype_name(dt));
    *bits = v;
    return 0;
}

uint64_t cf_load_bits(kiln_dtype dt, const void *data, size_t k)
{
    const unsigned char *p = data;
    switch (kiln_dtype_size(dt)) {
    case 1: return p[k];
    case 2: { uint16_t v; memcpy(&v, p + 2 * k, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p + 4 * k, 4); return v; }
    default: { uint64_t v; memcpy(&v, p + 8 * k, 8); return v; }
    }
}

void cf_store_bits(kiln_dtype dt, void *data, size_t k, uint64_t bits)
{
    unsigned char *p = data;
    switch (kiln_dtype_size(dt)) {
    case 1: p[k] = (unsigned char)bits; break;
    case 2: { uint16_t v = (uint16_t)bits; memcpy(p + 2 * k, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)bits; memcpy(p + 4 * k, &v, 4); break; }
    default: memcpy(p + 8 * k, &bits, 8); break;
    }
}

/* ---------------------------------------------------------------- tensors */

void cf_tensor_free(cf_tensor *t)
{
    if (t == NULL)
        return;
    free(t->data);
    t->data = NULL;
}

static int int_list(const json_t *v, const char *where, const char *key,
                    int64_t *out, int *n, char *err, size_t cap)
{
    if (!json_is_array(v))
        return cf_fail(err, cap, "%s: '%s' must be a list of integers", where,
                    key);
    if (json_array_size(v) > KILN_MAX_RANK)
        return cf_fail(err, cap, "%s: '%s' has %zu entries (rank limit %d)",
                    where, key, json_array_size(v), KILN_MAX_RANK);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0 ||
            json_integer_value(x) > ((json_int_t)1 << 40))
            return cf_fail(err, cap,
                        "%s: %s[%zu] must be a non-negative integer", where,
                        key, i);
        out[i] = json_integer_value(x);
    }
    *n = (int)json_array_size(v);
    return 0;
}

int cf_tensor_from_json(const json_t *j, const char *where, int need_data,
                        cf_tensor *out, char *err, size_t cap)
{
    cf_tensor t;
    memset(&t, 0, sizeof t);
    const char *dts = NULL;
    if (!json_is_object(j))
        return cf_fail(err, cap, "%s: a tensor must be an object", where);
    if (cf_json_string(j, "dtype", where, &dts, err, cap))
        return 1;
    if (kiln_dtype_parse(dts, &t.dtype) != KILN_OK)
        return cf_fail(err, cap, "%s: unknown dtype '%s'", where, dts);
    const json_t *shape = json_object_get(j, "shape");
    if (shape == NULL)
        return cf_fail(err, cap, "%s: missing field 'shape'", where);
    if (int_list(shape, where, "shape", t.shape, &t.rank, err, cap))
        return 1;
    size_t numel = 1;
    for (int i = 0; i < t.rank; i++) {
        if (t.shape[i] != 0 && numel > CF_MAX_ELEMENTS / (size_t)t.shape[i])
            return cf_fail(err, cap, "%s: too many elements", where);
        numel *= (size_t)t.shape[i];
    }
    if (numel > CF_MAX_ELEMENTS)
        return cf_fail(err, cap, "%s: too many elements", where);
    t.numel = numel;
    const json_t *strides = json_object_get(j, "strides");
    if (strides != NULL && !json_is_null(strides)) {
        int n;
        if (int_list(strides, where, "strides", t.strides, &n, err, cap))
            return 1;
        if (n != t.rank)
            return cf_fail(err, cap, "%s: 'strides' has %d entries for rank %d",
                        where, n, t.rank);
        t.strided = 1;
        size_t last = 0;
        for (int i = 0; i < t.rank; i++)
            if (t.shape[i] > 0)
                last += (size_t)(t.shape[i] - 1) * (size_t)t.strides[i];
        t.storage = numel == 0 ? 0 : last + 1;
        if (t.storage > CF_MAX_ELEMENTS)
            return cf_fail(err, cap, "%s: storage too large", where);
    } else {
        int64_t s = 1;
        for (int i = t.rank - 1; i >= 0; i--) {
            t.strides[i] = s;
            s *= t.shape[i] ? t.shape[i] : 1;
        }
        t.storage = numel;
    }
    const json_t *data = json_object_get(j, "data");
    if (data == NULL) {
        if (need_data)
            return cf_fail(err, cap, "%s: missing field 'data'", where);
        *out = t;
        return 0;
    }
    size_t esz = kiln_dtype_size(t.dtype);
    t.data = calloc(t.storage ? t.storage : 1, esz);
    if (t.data == NULL)
        return cf_fail(err, cap, "%s: out of memory", where);
    const json_t *list = data;
    size_t n = 0;
    if (json_is_object(data)) {
        list = json_object_get(data, "repeat");
        const json_t *cnt = json_object_get(data, "count");
        if (!json_is_array(list) || json_array_size(list) == 0 ||
            !json_is_integer(cnt)) {
            cf_tensor_free(&t);
            return cf_fail(err, cap, "%s.data: expected {\"repeat\": [hex...], "
                        "\"count\": N}", where);
        }
        if (json_integer_value(cnt) < 0 ||
            (size_t)json_integer_value(cnt) != t.storage) {
            cf_tensor_free(&t);
            return cf_fail(err, cap, "%s.data: count %" JSON_INTEGER_FORMAT
                        " but the storage holds %zu elements", where,
                        json_integer_value(cnt), t.storage);
        }
        n = json_array_size(list);
    } else if (json_is_array(data)) {
        n = json_array_size(data);
        if (n != t.storage) {
            cf_tensor_free(&t);
            return cf_fail(err, cap, "%s.data: %zu elements but the storage "
                        "holds %zu", where, n, t.storage);
        }
    } else {
        cf_tensor_free(&t);
        return cf_fail(err, cap, "%s.data: must be a list or a repeat object",
                    where);
    }
    uint64_t *pattern = calloc(n ? n : 1, sizeof *pattern);
    if (pattern == NULL) {
        cf_tensor_free(&t);
        return cf_fail(err, cap, "%s: out of memory", where);
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *h = json_array_get(list, i);
        char e[256];
        if (!json_is_string(h)) {
            free(pattern);
            cf_tensor_free(&t);
            return cf_fail(err, cap, "%s.data[%zu]: must be a hex string", where,
                        i);
        }
        if (cf_hex_parse(json_string_value(h), t.dtype, &pattern[i], e,
                         sizeof e)) {
            free(pattern);
            cf_tensor_free(&t);
            return cf_fail(err, cap, "%s.data[%zu]: %s", where, i, e);
        }
    }
    for (size_t k = 0; k < t.storage; k++)
        cf_store_bits(t.dtype, t.data, k, pattern[k % n]);
    free(pattern);
    *out = t;
    return 0;
}

void cf_tensor_gather(const cf_tensor *t, void *dst)
{
    int64_t idx[KILN_MAX_RANK] = {0};
    size_t esz = kiln_dtype_size(t->dtype);
    for (size_t k = 0; k < t->numel; k++) {
        size_t off = 0;
        for (int i = 0; i < t->rank; i++)
            off += (size_t)idx[i] * (size_t)t->strides[i];
        memcpy((unsigned char *)dst + k * esz, t->data + off * esz, esz);
        for (int i = t->rank - 1; i >= 0; i--) { /* odometer increment */
            if (++idx[i] < t->shape[i])
                break;
            idx[i] = 0;
        }
    }
}

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

#include "ckd.h"
#include "conform.h"

#define CF_MAX_ELEMENTS CF_BUDGET_ELEMENTS /* per tensor; a test's total too */

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
        const json_t *fl = json_object_get(t->json, "flags");
        if (texts[i] == NULL)
            rc = 1;
        else
            total += strlen(texts[i]) + strlen(t->comment) +
                     strlen(t->result) + strlen(t->group_type) + 4;
        for (size_t k = 0; k < json_array_size(fl); k++)
            total += strlen(json_string_value(json_array_get(fl, k))) + 1;
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
        const json_t *fl = json_object_get(t->json, "flags"); /* validated */
        t->flags = p;
        t->n_flags = json_array_size(fl);
        for (size_t k = 0; k < t->n_flags; k++)
            put(&p, json_string_value(json_array_get(fl, k)));
        t->json = NULL;
    }
    for (size_t i = 0; texts && i < f->n_tests; i++)
        free(texts[i]);
    free(texts);
    return rc;
}

/* "1.MINOR.PATCH" with decimal parts: the versions this runner reads. */
static int semver_1(const char *v)
{
    if (strncmp(v, "1.", 2) != 0)
        return 0;
    v += 2;
    for (int part = 0; part < 2; part++) {
        if (!isdigit((unsigned char)*v))
            return 0;
        while (isdigit((unsigned char)*v))
            v++;
        if (*v != (part == 0 ? '.' : '\0'))
            return 0;
        v++;
    }
    return 1;
}

/* Validate the parsed file `root` (consumed) into *out; `path` names it. */
static int load_root(json_t *root, const char *path, cf_file *out, char *err,
                     size_t cap)
{
    char e[CF_MSG];
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
    if (!semver_1(version)) {
        cf_fail(e, sizeof e,
             "suiteVersion '%.40s' is not supported (this runner reads 1.x.y)",
             version);
        goto bad;
    }
    notes = json_object_get(root, "notes");
    if (!json_is_object(notes)) {
        cf_fail(e, sizeof e, "'notes' must be an object (flag -> definition)");
        goto bad;
    }
    const char *flag;
    json_t *def;
    json_object_foreach((json_t *)notes, flag, def)
        if (!json_is_string(def)) {
            cf_fail(e, sizeof e, "notes.%.40s: must be a string (the flag's "
                 "definition)", flag);
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

char *cf_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, capn = 0;
    if (f == NULL)
        return NULL;
    for (;;) {
        if (capn - n < 65536) {
            size_t nc = capn ? 2 * capn : 1 << 20;
            char *nb = realloc(buf, nc + 1);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            capn = nc;
        }
        size_t got = fread(buf + n, 1, capn - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int cf_file_load(const char *path, cf_file *out, char *err, size_t cap)
{
    size_t len = 0;
    char *buf = cf_read_file(path, &len);
    if (buf == NULL)
        return cf_fail(err, cap, "%s: cannot read: %s", path, strerror(errno));
    int rc = cf_file_load_buffer(buf, len, path, out, err, cap);
    free(buf);
    return rc;
}

int cf_file_load_buffer(const char *buf, size_t len, const char *name,
                        cf_file *out, char *err, size_t cap)
{
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        return cf_fail(err, cap, "%s:%d:%d: invalid JSON: %s", name, je.line,
                    je.column, je.text);
    if (load_root(root, name, out, err, cap))
        return 1;
    cf_sha256_hex(buf, len, out->sha256); /* the bytes the tests came from */
    return 0;
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

/* dtype, shape and strides of tensor j into *t (no data), with the element
** count and storage length computed with checked arithmetic and each held
** to CF_MAX_ELEMENTS; nothing is allocated. */
static int tensor_shape(const json_t *j, const char *where, cf_tensor *t,
                        char *err, size_t cap)
{
    const char *dts = NULL;
    memset(t, 0, sizeof *t);
    if (!json_is_object(j))
        return cf_fail(err, cap, "%s: a tensor must be an object", where);
    if (cf_json_string(j, "dtype", where, &dts, err, cap))
        return 1;
    if (kiln_dtype_parse(dts, &t->dtype) != KILN_OK)
        return cf_fail(err, cap, "%s: unknown dtype '%s'", where, dts);
    const json_t *shape = json_object_get(j, "shape");
    if (shape == NULL)
        return cf_fail(err, cap, "%s: missing field 'shape'", where);
    if (int_list(shape, where, "shape", t->shape, &t->rank, err, cap))
        return 1;
    int64_t numel, storage, span = 1;
    if (kiln_ckd_numel(t->rank, t->shape, &numel) || numel > CF_MAX_ELEMENTS)
        return cf_fail(err, cap, "%s: too many elements (at most %lld per "
                    "tensor)", where, (long long)CF_MAX_ELEMENTS);
    const json_t *strides = json_object_get(j, "strides");
    if (strides != NULL) {
        int n;
        if (int_list(strides, where, "strides", t->strides, &n, err, cap))
            return 1;
        if (n != t->rank)
            return cf_fail(err, cap, "%s: 'strides' has %d entries for rank %d",
                        where, n, t->rank);
        t->strided = 1;
    } else {
        for (int i = t->rank - 1; i >= 0; i--) {
            t->strides[i] = span;
            if (kiln_ckd_mul(span, t->shape[i] ? t->shape[i] : 1, &span))
                return cf_fail(err, cap, "%s: the sizes multiply past 64 bits",
                            where);
        }
    }
    /* "offset" (inputs): storage elements before element 0, so a vector
    ** can place an input at any address: an offset view, or one that is
    ** not 16-byte aligned (docs/conformance.md, "Tensors") */
    const json_t *off = json_object_get(j, "offset");
    if (off != NULL && (!json_is_integer(off) || json_integer_value(off) < 0 ||
                        json_integer_value(off) > CF_MAX_ELEMENTS))
        return cf_fail(err, cap, "%s: 'offset' must be an integer in "
                       "0..%lld", where, (long long)CF_MAX_ELEMENTS);
    t->offset = off != NULL ? (size_t)json_integer_value(off) : 0;
    if (kiln_ckd_extent(t->rank, t->shape, t->strides, &storage) ||
        kiln_ckd_add(storage, (int64_t)t->offset, &storage) ||
        storage > CF_MAX_ELEMENTS)
        return cf_fail(err, cap, "%s: storage too large (at most %lld "
                    "elements per tensor)", where, (long long)CF_MAX_ELEMENTS);
    t->numel = (size_t)numel;
    t->storage = (size_t)storage;
    return 0;
}

int cf_tensor_from_json(const json_t *j, const char *where, int need_data,
                        cf_tensor *out, char *err, size_t cap)
{
    cf_tensor t;
    if (tensor_shape(j, where, &t, err, cap))
        return 1;
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
        size_t off = t->offset;
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

/* --------------------------------------------------- per-test validation */

/* The state of one cf_test_validate: the cost so far and where errors go.
** Field paths follow the JSON ("steps[2].expect.plan"); the top level of
** the test is the empty path, so its fields print bare ("threads"). */
typedef struct vstate {
    cf_cost *cost;
    char *err;
    size_t cap;
} vstate;

static const char *const opt_error_keys[] = {"kind", "offset", "token",
                                             "source", NULL};
static const char *const opt_error_kinds[] = {"syntax", "unknown", "argument",
                                              "element", NULL};
static const char *const env_keys[] = {"enable", "disable", "dump", NULL};
static const char *const hit_miss_any[] = {"hit", "miss", "any", NULL};

/* "a.b" from where "a" and key "b" (or "b" at the top level). */
static void field(char *buf, size_t cap, const char *where, const char *key)
{
    if (snprintf(buf, cap, "%s%s%s", where, *where ? "." : "", key) < 0)
        buf[0] = '\0'; /* a long path is cut, never overrun */
}

static const char *jtype(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    default: return "null";
    }
}

/* "a, b or c" */
static void join(const char *const *words, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; words[i] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i == 0 ? ""
                              : words[i + 1] ? ", " : " or ", words[i]);
}

/* Every key of object obj (at `where`) is one of keys. */
static int v_keys(vstate *v, const json_t *obj, const char *where,
                  const char *const *keys)
{
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)obj, k, val) {
        size_t i = 0;
        if (*where == '\0' && strcmp(k, "rules") == 0)
            continue; /* every category: checked by v_rules */
        while (keys[i] && strcmp(keys[i], k) != 0)
            i++;
        if (keys[i] == NULL) {
            char f[256], list[256];
            field(f, sizeof f, where, k);
            join(keys, list, sizeof list);
            return cf_fail(v->err, v->cap, "%s: unknown field (the fields "
                        "here are %s)", f, list);
        }
    }
    return 0;
}

/* obj[key] into *out; absent: an error when required, else *out = NULL. */
static int v_get(vstate *v, const json_t *obj, const char *where,
                 const char *key, int required, const json_t **out)
{
    char f[256];
    *out = json_object_get(obj, key);
    if (*out == NULL && required) {
        field(f, sizeof f, where, key);
        return cf_fail(v->err, v->cap, "%s: missing field", f);
    }
    return 0;
}

/* A string field; with `allowed`, one of those words. */
static int v_string(vstate *v, const json_t *obj, const char *where,
                    const char *key, int required, const char *const *allowed,
                    const char **out)
{
    const json_t *j;
    char f[256], list[256];
    if (out)
        *out = NULL;
    if (v_get(v, obj, where, key, required, &j) || j == NULL)
        return j == NULL && required;
    field(f, sizeof f, where, key);
    if (!json_is_string(j))
        return cf_fail(v->err, v->cap, "%s: must be a string, not %s", f,
                    jtype(j));
    for (size_t i = 0; allowed && allowed[i]; i++)
        if (strcmp(allowed[i], json_string_value(j)) == 0)
            allowed = NULL;
    if (allowed) {
        join(allowed, list, sizeof list);
        return cf_fail(v->err, v->cap, "%s: '%.40s' is not %s", f,
                    json_string_value(j), list);
    }
    if (out)
        *out = json_string_value(j);
    return 0;
}

/* An integer field in lo..hi (a real number like 1.0 is not an integer). */
static int v_int(vstate *v, const json_t *obj, const char *where,
                 const char *key, int required, json_int_t lo, json_int_t hi,
                 json_int_t *out)
{
    const json_t *j;
    char f[256];
    if (v_get(v, obj, where, key, required, &j) || j == NULL)
        return j == NULL && required;
    field(f, sizeof f, where, key);
    if (!json_is_integer(j))
        return cf_fail(v->err, v->cap, "%s: must be an integer in %lld..%lld, "
                    "not %s", f, (long long)lo, (long long)hi, jtype(j));
    if (json_integer_value(j) < lo || json_integer_value(j) > hi)
        return cf_fail(v->err, v->cap, "%s: %lld is outside %lld..%lld", f,
                    (long long)json_integer_value(j), (long long)lo,
                    (long long)hi);
    if (out)
        *out = json_integer_value(j);
    return 0;
}

/* A field of JSON type `type` (JSON_OBJECT, JSON_ARRAY, JSON_TRUE for a
** boolean). */
static int v_typed(vstate *v, const json_t *obj, const char *where,
                   const char *key, int required, json_type type,
                   const json_t **out)
{
    static const char *const names[] = {"an object", "a list", "", "", "",
                                        "true or false"};
    char f[256];
    if (v_get(v, obj, where, key, required, out) || *out == NULL)
        return *out == NULL && required;
    field(f, sizeof f, where, key);
    int ok = type == JSON_TRUE ? json_is_boolean(*out)
                               : json_typeof(*out) == type;
    if (!ok)
        return cf_fail(v->err, v->cap, "%s: must be %s, not %s", f,
                    names[type], jtype(*out));
    return 0;
}

/* A list of strings (execute elements). */
static int v_strings(vstate *v, const json_t *obj, const char *where,
                     const char *key, int required)
{
    const json_t *l;
    char f[256];
    if (v_typed(v, obj, where, key, required, JSON_ARRAY, &l))
        return 1;
    if (l == NULL)
        return 0;
    field(f, sizeof f, where, key);
    for (size_t i = 0; i < json_array_size(l); i++)
        if (!json_is_string(json_array_get(l, i)))
            return cf_fail(v->err, v->cap, "%s[%zu]: must be a string, not %s",
                        f, i, jtype(json_array_get(l, i)));
    return 0;
}

/* {"enable", "disable"} execute elements; absent lists are empty. */
static int v_options(vstate *v, const json_t *obj, const char *where,
                     const char *key)
{
    static const char *const keys[] = {"enable", "disable", NULL};
    const json_t *o;
    char f[256];
    if (v_typed(v, obj, where, key, 0, JSON_OBJECT, &o))
        return 1;
    if (o == NULL)
        return 0;
    field(f, sizeof f, where, key);
    return v_keys(v, o, f, keys) || v_strings(v, o, f, "enable", 0) ||
           v_strings(v, o, f, "disable", 0);
}

/* An environment object: each of enable/disable/dump a string or null
** (absent = null). */
static int v_env(vstate *v, const json_t *obj, const char *where,
                 const char *key, int required)
{
    const json_t *e;
    char f[256];
    if (v_get(v, obj, where, key, required, &e) || e == NULL || json_is_null(e))
        return e == NULL && required;
    field(f, sizeof f, where, key);
    if (!json_is_object(e))
        return cf_fail(v->err, v->cap, "%s: must be an object or null, not %s",
                    f, jtype(e));
    if (v_keys(v, e, f, env_keys))
        return 1;
    for (int i = 0; env_keys[i]; i++) {
        const json_t *s = json_object_get(e, env_keys[i]);
        if (s != NULL && !json_is_string(s) && !json_is_null(s))
            return cf_fail(v->err, v->cap, "%s.%s: must be a string or null, "
                        "not %s", f, env_keys[i], jtype(s));
    }
    return 0;
}

/* An option error {"kind", "offset", "token", "source"?}. */
static int v_opt_error(vstate *v, const json_t *obj, const char *where,
                       const char *key)
{
    const json_t *e;
    char f[256];
    if (v_typed(v, obj, where, key, 1, JSON_OBJECT, &e))
        return 1;
    field(f, sizeof f, where, key);
    return v_keys(v, e, f, opt_error_keys) ||
           v_string(v, e, f, "kind", 1, opt_error_kinds, NULL) ||
           v_int(v, e, f, "offset", 1, 0, INT32_MAX, NULL) ||
           v_string(v, e, f, "token", 1, NULL, NULL) ||
           v_string(v, e, f, "source", 0, NULL, NULL);
}

/* `key` must be absent: it does not apply here (it would be ignored). */
static int v_absent(vstate *v, const json_t *obj, const char *where,
                    const char *key, const char *why)
{
    char f[256];
    if (json_object_get(obj, key) == NULL)
        return 0;
    field(f, sizeof f, where, key);
    return cf_fail(v->err, v->cap, "%s: does not apply %s", f, why);
}

/* Charge n elements, `times` times, to the test's element budget. */
static int v_charge(vstate *v, const char *where, int64_t n, int64_t times)
{
    int64_t total;
    if (kiln_ckd_mul(n, times, &n) ||
        kiln_ckd_add(v->cost->elements, n, &total) ||
        total > CF_BUDGET_ELEMENTS)
        return cf_fail(v->err, v->cap, "%s: the test's tensors exceed the "
                    "per-test budget of %lld elements here (storage plus "
                    "element count of every tensor; docs/conformance.md, "
                    "\"Per-test budget\")", where,
                    (long long)CF_BUDGET_ELEMENTS);
    v->cost->elements = total;
    return 0;
}

/* A tensor: known fields; its size charged to the budget before it is
** decoded; decoded (every hex digit) and freed.  kind 0: an input with
** data; 1: an expected output with its check, counted `times` times (once
** per thread); 2: a generated differential input (dtype, shape, dist). */
static int v_tensor(vstate *v, const json_t *j, const char *where, int kind,
                    int64_t times)
{
    static const char *const keys[3][6] = {
        {"dtype", "shape", "strides", "offset", "data", NULL},
        {"dtype", "shape", "data", "check", NULL, NULL},
        {"dtype", "shape", "dist", NULL, NULL, NULL}};
    cf_tensor t;
    if (!json_is_object(j))
        return cf_fail(v->err, v->cap, "%s: must be a tensor object, not %s",
                    where, jtype(j));
    if (v_keys(v, j, where, keys[kind]) ||
        tensor_shape(j, where, &t, v->err, v->cap) ||
        v_charge(v, where, (int64_t)(t.numel + t.storage), times))
        return 1;
    if (kind == 2) {
        cf_dist d;
        return cf_diff_dist(j, where, t.dtype, &d, v->err, v->cap);
    }
    if (cf_tensor_from_json(j, where, 1, &t, v->err, v->cap))
        return 1;
    int rc = 0;
    if (kind == 1) {
        static const char *const check_keys[] = {
            "kind", "max", "maxPerElement", "bounds", "ftz", "alternatives",
            NULL};
        static const char *const kinds[] = {"exact", "ulp", "abs", NULL};
        const json_t *c;
        const char *k;
        char f[256];
        cf_check chk;
        field(f, sizeof f, where, "check");
        rc = v_typed(v, j, where, "check", 1, JSON_OBJECT, &c) ||
             v_keys(v, c, f, check_keys) ||
             v_string(v, c, f, "kind", 1, kinds, &k) ||
             (strcmp(k, "ulp") != 0 &&
              (v_absent(v, c, f, "max", "to this check kind") ||
               v_absent(v, c, f, "maxPerElement", "to this check kind"))) ||
             (strcmp(k, "abs") != 0 &&
              v_absent(v, c, f, "bounds", "to this check kind")) ||
             cf_check_from_json(c, f, t.dtype, t.numel, &chk, v->err, v->cap);
        if (!rc)
            cf_check_free(&chk);
    }
    cf_tensor_free(&t);
    return rc;
}

/* A list of tensors at obj[key]. */
static int v_tensors(vstate *v, const json_t *obj, const char *where,
                     const char *key, int required, int kind, int64_t times)
{
    const json_t *l;
    char f[256], w[300];
    if (v_typed(v, obj, where, key, required, JSON_ARRAY, &l))
        return 1;
    if (l == NULL)
        return 0;
    field(f, sizeof f, where, key);
    for (size_t i = 0; i < json_array_size(l); i++) {
        if (snprintf(w, sizeof w, "%s[%zu]", f, i) < 0)
            w[0] = '\0';
        if (v_tensor(v, json_array_get(l, i), w, kind, times))
            return 1;
    }
    return 0;
}

/* valid/acceptable tests carry `want`, invalid ones `error`, never both. */
static int v_result_fields(vstate *v, const json_t *t, const char *result,
                           const char *want, const char *error)
{
    int invalid = strcmp(result, "invalid") == 0;
    const json_t *x;
    if (invalid)
        return v_absent(v, t, "", want, "to an invalid test") ||
               v_get(v, t, "", error, 1, &x);
    return v_absent(v, t, "", error, "to a valid or acceptable test") ||
           v_get(v, t, "", want, 1, &x);
}

static int v_parse(vstate *v, const json_t *t, const char *result)
{
    static const char *const keys[] = {"tcId", "comment", "flags", "result",
                                       "source", "set", "input", "canonical",
                                       "error", NULL};
    static const char *const sources[] = {"env", "execute", NULL};
    static const char *const sets[] = {"enable", "disable", "dump", NULL};
    const char *source, *set;
    if (v_keys(v, t, "", keys) ||
        v_string(v, t, "", "source", 1, sources, &source) ||
        v_string(v, t, "", "set", 1, sets, &set) ||
        v_string(v, t, "", "input", 1, NULL, NULL) ||
        v_result_fields(v, t, result, "canonical", "error"))
        return 1;
    if (strcmp(source, "execute") == 0 && strcmp(set, "dump") == 0)
        return cf_fail(v->err, v->cap, "set: 'dump' has no execute list "
                    "(source must be env)");
    return strcmp(result, "invalid") == 0
               ? v_opt_error(v, t, "", "error")
               : v_string(v, t, "", "canonical", 1, NULL, NULL);
}

static int v_precedence(vstate *v, const json_t *t, const char *result)
{
    static const char *const keys[] = {"tcId", "comment", "flags", "result",
                                       "env", "steps", "createError", NULL};
    static const char *const actions[] = {"execute", "setenv", "reload",
                                          NULL};
    static const char *const step_keys[3][7] = {
        {"action", "enable", "disable", "canonical", "levels", "error", NULL},
        {"action", "env", NULL},
        {"action", "error", NULL}};
    static const char *const level_keys[] = {"plan", "kernel", "none", NULL};
    const json_t *steps;
    int errors = json_object_get(t, "createError") != NULL;
    if (v_keys(v, t, "", keys) || v_env(v, t, "", "env", 0) ||
        v_typed(v, t, "", "steps", 1, JSON_ARRAY, &steps) ||
        (errors && v_opt_error(v, t, "", "createError")))
        return 1;
    if (errors && json_array_size(steps) > 0)
        return cf_fail(v->err, v->cap, "steps: must be empty when "
                    "'createError' is given (the context is never created)");
    for (size_t i = 0; i < json_array_size(steps); i++) {
        const json_t *s = json_array_get(steps, i), *lv;
        const char *a;
        char w[48], f[96];
        snprintf(w, sizeof w, "steps[%zu]", i);
        if (!json_is_object(s))
            return cf_fail(v->err, v->cap, "%s: must be an object, not %s", w,
                        jtype(s));
        if (v_string(v, s, w, "action", 1, actions, &a))
            return 1;
        int k = a[0] == 'e' ? 0 : a[0] == 's' ? 1 : 2;
        int has_error = json_object_get(s, "error") != NULL;
        errors += has_error;
        if (v_keys(v, s, w, step_keys[k]) ||
            (has_error && v_opt_error(v, s, w, "error")))
            return 1;
        if (k == 1 && v_env(v, s, w, "env", 1))
            return 1;
        if (k != 0)
            continue;
        v->cost->executes++;
        if (v_strings(v, s, w, "enable", 0) || v_strings(v, s, w, "disable", 0))
            return 1;
        if (has_error) {
            if (v_absent(v, s, w, "canonical", "to a step that expects an "
                                               "error") ||
                v_absent(v, s, w, "levels", "to a step that expects an error"))
                return 1;
            continue;
        }
        field(f, sizeof f, w, "levels");
        if (v_string(v, s, w, "canonical", 1, NULL, NULL) ||
            v_typed(v, s, w, "levels", 1, JSON_OBJECT, &lv) ||
            v_keys(v, lv, f, level_keys) ||
            v_string(v, lv, f, "plan", 1, NULL, NULL) ||
            v_string(v, lv, f, "kernel", 1, NULL, NULL) ||
            v_string(v, lv, f, "none", 1, NULL, NULL))
            return 1;
    }
    if ((errors > 0) != (strcmp(result, "invalid") == 0))
        return cf_fail(v->err, v->cap, "result: '%s', but %s", result,
                    errors ? "the test expects an error (it is 'invalid')"
                           : "no step expects an error");
    return 0;
}

static int v_cache(vstate *v, const json_t *t)
{
    static const char *const keys[] = {"tcId", "comment", "flags", "result",
                                       "fusion", "env", "steps", "threads",
                                       "concurrent", "capacities", NULL};
    static const char *const cap_keys[] = {"plan", "kernel", NULL};
    static const char *const step_keys[] = {"action", "enable", "disable",
                                            "inputs", "outputs", "expect",
                                            "pass", NULL};
    static const char *const cache_actions[] = {"execute", "setenv", "reload",
                                                NULL};
    static const char *const setenv_keys[] = {"action", "env", NULL};
    static const char *const reload_keys[] = {"action", NULL};
    static const char *const expect_keys[] = {"plan", "kernels", "compiles",
                                              "db", NULL};
    static const char *const db_outcomes[] = {"none",    "hit",     "miss",
                                              "stored",  "corrupt", "refused",
                                              NULL};
    const json_t *steps, *conc;
    json_int_t threads = 1;
    if (v_keys(v, t, "", keys) || v_string(v, t, "", "fusion", 1, NULL, NULL) ||
        v_env(v, t, "", "env", 0) ||
        v_typed(v, t, "", "concurrent", 0, JSON_TRUE, &conc) ||
        v_int(v, t, "", "threads", json_is_true(conc), 1, 64, &threads) ||
        v_typed(v, t, "", "steps", 1, JSON_ARRAY, &steps))
        return 1;
    const json_t *caps = NULL;
    if (v_typed(v, t, "", "capacities", 0, JSON_OBJECT, &caps) ||
        (caps && (v_keys(v, caps, "capacities", cap_keys) ||
                  v_int(v, caps, "capacities", "plan", 1, 1, 1 << 20, NULL) ||
                  v_int(v, caps, "capacities", "kernel", 1, 1, 1 << 20, NULL))))
        return 1;
    if (!json_is_true(conc) && json_object_get(t, "threads") != NULL)
        return cf_fail(v->err, v->cap, "threads: applies only with "
                    "\"concurrent\": true");
    if (json_array_size(steps) == 0)
        return cf_fail(v->err, v->cap, "steps: must list at least one step");
    size_t n_exec = 0;
    for (size_t i = 0; i < json_array_size(steps); i++) {
        const json_t *s = json_array_get(steps, i), *ex;
        const char *action = NULL;
        char w[48], f[96];
        snprintf(w, sizeof w, "steps[%zu]", i);
        field(f, sizeof f, w, "expect");
        if (!json_is_object(s))
            return cf_fail(v->err, v->cap, "%s: must be an object, not %s", w,
                        jtype(s));
        /* "action": "setenv" {"env"} / "reload": environment changes in
        ** the one context (not in concurrent tests); absent or "execute":
        ** an execute step */
        if (v_string(v, s, w, "action", 0, cache_actions, &action))
            return 1;
        if (action != NULL && strcmp(action, "execute") != 0) {
            if (json_is_true(conc))
                return cf_fail(v->err, v->cap, "%s.action: '%s' is not "
                               "allowed in a concurrent test", w, action);
            if (action[0] == 's' ? v_keys(v, s, w, setenv_keys) ||
                                       v_env(v, s, w, "env", 1)
                                 : v_keys(v, s, w, reload_keys))
                return 1;
            continue;
        }
        n_exec++;
        if (v_keys(v, s, w, step_keys) || v_strings(v, s, w, "enable", 0) ||
            v_strings(v, s, w, "disable", 0) ||
            v_tensors(v, s, w, "inputs", 1, 0, 1) ||
            v_tensors(v, s, w, "outputs", 1, 1, threads) ||
            v_int(v, s, w, "pass", 0, 1, 2, NULL) ||
            v_typed(v, s, w, "expect", 1, JSON_OBJECT, &ex) ||
            v_keys(v, ex, f, expect_keys) ||
            v_string(v, ex, f, "plan", 1, hit_miss_any, NULL) ||
            v_string(v, ex, f, "kernels", 1, hit_miss_any, NULL) ||
            v_int(v, ex, f, "compiles", 0, 0, INT64_MAX, NULL) ||
            v_string(v, ex, f, "db", 0, db_outcomes, NULL))
            return 1;
    }
    if (n_exec == 0)
        return cf_fail(v->err, v->cap, "steps: must list at least one "
                       "execute step");
    v->cost->executes = (int64_t)n_exec * threads;
    return 0;
}

/* A list of integers in lo..hi. */
static int v_ints(vstate *v, const json_t *obj, const char *where,
                  const char *key, int required, json_int_t lo, json_int_t hi,
                  const json_t **out)
{
    char f[256];
    if (v_typed(v, obj, where, key, required, JSON_ARRAY, out) || *out == NULL)
        return *out == NULL && required;
    field(f, sizeof f, where, key);
    for (size_t i = 0; i < json_array_size(*out); i++) {
        const json_t *j = json_array_get(*out, i);
        if (!json_is_integer(j) || json_integer_value(j) < lo ||
            json_integer_value(j) > hi)
            return cf_fail(v->err, v->cap, "%s[%zu]: must be an integer in "
                           "%lld..%lld", f, i, (long long)lo, (long long)hi);
    }
    return 0;
}

/* "givenOutputs" of an invalid numerics test (conformance/outputs.h):
** [{"dtype", "shape", "strides"?, "overlaps"?: {"input"|"output": k,
** "byteOffset": b}}]; an overlapped output is an earlier one. */
static int v_given_outputs(vstate *v, const json_t *t)
{
    static const char *const keys[] = {"dtype", "shape", "strides",
                                       "overlaps", NULL};
    static const char *const ov_keys[] = {"input", "output", "byteOffset",
                                          NULL};
    static const char *const dtypes[] = {"bool", "i32", "i64", "f16", "bf16",
                                         "f32", "f64", NULL};
    const json_t *g, *sh, *sd, *ov;
    json_int_t n_in = (json_int_t)json_array_size(json_object_get(t, "inputs"));
    if (v_typed(v, t, "", "givenOutputs", 1, JSON_ARRAY, &g))
        return 1;
    if (json_array_size(g) == 0)
        return cf_fail(v->err, v->cap, "givenOutputs: must list at least one "
                       "output");
    for (size_t j = 0; j < json_array_size(g); j++) {
        const json_t *o = json_array_get(g, j);
        char w[48], wo[64];
        snprintf(w, sizeof w, "givenOutputs[%zu]", j);
        snprintf(wo, sizeof wo, "%s.overlaps", w);
        if (!json_is_object(o))
            return cf_fail(v->err, v->cap, "%s: must be an object, not %s", w,
                           jtype(o));
        if (v_keys(v, o, w, keys) || v_string(v, o, w, "dtype", 1, dtypes, NULL) ||
            v_ints(v, o, w, "shape", 1, 0, (json_int_t)1 << 40, &sh) ||
            v_ints(v, o, w, "strides", 0, 0, (json_int_t)1 << 40, &sd) ||
            v_typed(v, o, w, "overlaps", 0, JSON_OBJECT, &ov))
            return 1;
        if (json_array_size(sh) > KILN_MAX_RANK)
            return cf_fail(v->err, v->cap, "%s.shape: rank %zu is above %d", w,
                           json_array_size(sh), KILN_MAX_RANK);
        if (sd != NULL && json_array_size(sd) != json_array_size(sh))
            return cf_fail(v->err, v->cap, "%s.strides: %zu strides for rank "
                           "%zu", w, json_array_size(sd), json_array_size(sh));
        if (ov == NULL)
            continue;
        int has_in = json_object_get(ov, "input") != NULL;
        if (v_keys(v, ov, wo, ov_keys) ||
            v_int(v, ov, wo, "byteOffset", 1, 0, INT32_MAX, NULL))
            return 1;
        if (has_in == (json_object_get(ov, "output") != NULL))
            return cf_fail(v->err, v->cap, "%s: needs exactly one of input "
                           "and output", wo);
        if (!has_in && j == 0)
            return cf_fail(v->err, v->cap, "%s.output: output 0 has no earlier "
                           "output", wo);
        if (has_in ? v_int(v, ov, wo, "input", 1, 0, n_in > 0 ? n_in - 1 : 0,
                           NULL)
                   : v_int(v, ov, wo, "output", 1, 0, (json_int_t)j - 1, NULL))
            return 1;
    }
    return 0;
}

static int v_numerics(vstate *v, const json_t *t, const char *result)
{
    static const char *const keys[] = {"tcId", "comment", "flags", "result",
                                       "fusion", "options", "inputs",
                                       "outputs", "error", "givenOutputs",
                                       NULL};
    static const char *const error_keys[] = {"status", NULL};
    const json_t *e;
    const char *status;
    v->cost->executes = 1;
    if (v_keys(v, t, "", keys) || v_string(v, t, "", "fusion", 1, NULL, NULL) ||
        v_options(v, t, "", "options") ||
        v_tensors(v, t, "", "inputs", 1, 0, 1) ||
        v_result_fields(v, t, result, "outputs", "error"))
        return 1;
    if (strcmp(result, "invalid") != 0)
        return v_absent(v, t, "", "givenOutputs", "to a valid or acceptable "
                        "test (the runner gives every output itself)") ||
               v_tensors(v, t, "", "outputs", 1, 1, 1);
    if (json_object_get(t, "givenOutputs") != NULL && v_given_outputs(v, t))
        return 1;
    if (v_typed(v, t, "", "error", 1, JSON_OBJECT, &e) ||
        v_keys(v, e, "error", error_keys) ||
        v_string(v, e, "error", "status", 1, NULL, &status))
        return 1;
    for (int s = 0; s < 256; s++)
        if (strcmp(kiln_status_name((kiln_status)s), status) == 0)
            return 0;
    return cf_fail(v->err, v->cap, "error.status: '%.40s' is not a Kiln "
                "status name (KILN_ERR_...)", status);
}

static int v_differential(vstate *v, const json_t *t)
{
    static const char *const keys[] = {"tcId", "comment", "flags", "result",
                                       "fusion", "options", "seed", "inputs",
                                       "inputsFirst", "tolerance", NULL};
    static const char *const tol_kinds[] = {"exact", "ulp", "sumBound", NULL};
    static const char *const tol_keys[3][4] = {
        {"kind", NULL}, {"kind", "max", NULL}, {"kind", "n", "absFusion", NULL}};
    const json_t *ins, *first, *tol;
    if (v_keys(v, t, "", keys) || v_string(v, t, "", "fusion", 1, NULL, NULL) ||
        v_options(v, t, "", "options") ||
        v_int(v, t, "", "seed", 1, 0, INT64_MAX, NULL) ||
        v_tensors(v, t, "", "inputs", 1, 2, 1) ||
        v_typed(v, t, "", "inputs", 1, JSON_ARRAY, &ins) ||
        v_typed(v, t, "", "inputsFirst", 0, JSON_ARRAY, &first) ||
        v_typed(v, t, "", "tolerance", 1, JSON_ARRAY, &tol))
        return 1;
    if (first && json_array_size(first) > json_array_size(ins))
        return cf_fail(v->err, v->cap, "inputsFirst: %zu rows for %zu inputs",
                    json_array_size(first), json_array_size(ins));
    for (size_t i = 0; first && i < json_array_size(first); i++) {
        const json_t *row = json_array_get(first, i);
        cf_tensor in;
        char w[48];
        snprintf(w, sizeof w, "inputsFirst[%zu]", i);
        if (!json_is_array(row))
            return cf_fail(v->err, v->cap, "%s: must be a list, not %s", w,
                        jtype(row));
        if (tensor_shape(json_array_get(ins, i), w, &in, v->err, v->cap))
            return 1;
        if (json_array_size(row) > in.numel)
            return cf_fail(v->err, v->cap, "%s: %zu values for %zu elements",
                        w, json_array_size(row), in.numel);
        for (size_t k = 0; k < json_array_size(row); k++) {
            const json_t *h = json_array_get(row, k);
            uint64_t bits;
            char e[160];
            if (!json_is_string(h))
                return cf_fail(v->err, v->cap, "%s[%zu]: must be a hex string, "
                            "not %s", w, k, jtype(h));
            if (cf_hex_parse(json_string_value(h), in.dtype, &bits, e, sizeof e))
                return cf_fail(v->err, v->cap, "%s[%zu]: %s", w, k, e);
        }
    }
    v->cost->executes = 2;
    for (size_t i = 0; i < json_array_size(tol); i++) {
        const json_t *c = json_array_get(tol, i);
        const char *k;
        char w[48];
        snprintf(w, sizeof w, "tolerance[%zu]", i);
        if (!json_is_object(c))
            return cf_fail(v->err, v->cap, "%s: must be an object, not %s", w,
                        jtype(c));
        if (v_string(v, c, w, "kind", 1, tol_kinds, &k))
            return 1;
        int n = k[0] == 'e' ? 0 : k[0] == 'u' ? 1 : 2;
        if (v_keys(v, c, w, tol_keys[n]) ||
            (n == 1 && v_int(v, c, w, "max", 1, 0, INT64_MAX, NULL)) ||
            (n == 2 && (v_int(v, c, w, "n", 1, 0, INT64_MAX, NULL) ||
                        v_string(v, c, w, "absFusion", 1, NULL, NULL))))
            return 1;
        v->cost->executes += n == 2; /* the absFusion run on ref */
    }
    return 0;
}

/* "rules" (optional, every category): {rule id: outcome}, an id being
** dot-separated words of [a-z0-9_] (at least two), an outcome a non-empty
** string.  Which ids exist is testgen/spec_coverage.py's business: the
** runner does not read the docs (docs/conformance.md, "Rule ids"). */
static int v_rules(vstate *v, const json_t *t)
{
    const json_t *r = json_object_get(t, "rules"), *val;
    const char *k;
    if (r == NULL)
        return 0;
    if (!json_is_object(r))
        return cf_fail(v->err, v->cap, "rules: must be an object, not %s",
                       jtype(r));
    json_object_foreach((json_t *)r, k, val) {
        size_t n = strlen(k), dots = 0;
        int ok = n > 0 && n <= 64 && k[0] != '.' && k[n - 1] != '.';
        for (size_t i = 0; ok && i < n; i++) {
            char c = k[i];
            if (c == '.')
                ok = k[i + 1] != '.', dots++;
            else
                ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '_';
        }
        if (!ok || dots == 0)
            return cf_fail(v->err, v->cap, "rules: '%.64s' is not a rule id "
                           "(area.name: lower-case words joined by dots)", k);
        if (!json_is_string(val) || json_string_length(val) == 0)
            return cf_fail(v->err, v->cap, "rules.%s: the outcome must be a "
                           "non-empty string", k);
    }
    return 0;
}

static int v_sweep(vstate *v, const json_t *t)
{
    static const char *const keys[] = {"tcId", "comment", "flags", "result",
                                       "fusion", "options", "sweep", "bound",
                                       "inputsAt", NULL};
    cf_sweep s;
    const json_t *at;
    if (v_keys(v, t, "", keys) || v_options(v, t, "", "options") ||
        v_typed(v, t, "", "inputsAt", 0, JSON_ARRAY, &at))
        return 1;
    if (cf_sweep_from_json(t, &s, v->err, v->cap) ||
        v_charge(v, "sweep.count", (int64_t)s.count, 2))
        return 1;
    /* "inputsAt": [k, hex] pairs of the sample (the runner's generator
    ** must agree) */
    for (size_t i = 0; at && i < json_array_size(at); i++) {
        const json_t *p = json_array_get(at, i);
        const json_t *k = json_array_get(p, 0), *h = json_array_get(p, 1);
        uint64_t bits;
        char e[160];
        if (!json_is_array(p) || json_array_size(p) != 2 ||
            !json_is_integer(k) || json_integer_value(k) < 0 ||
            (uint64_t)json_integer_value(k) >= s.count || !json_is_string(h) ||
            cf_hex_parse(json_string_value(h), s.from, &bits, e, sizeof e))
            return cf_fail(v->err, v->cap, "inputsAt[%zu]: must be [k, hex] "
                           "with 0 <= k < sweep.count", i);
        uint64_t want = cf_sweep_input(&s, (uint64_t)json_integer_value(k));
        if (bits != want)
            return cf_fail(v->err, v->cap, "inputsAt[%zu]: input %lld of the "
                           "sample is 0x%llx here, the vector says 0x%llx", i,
                           (long long)json_integer_value(k),
                           (unsigned long long)want, (unsigned long long)bits);
    }
    v->cost->executes = 1;
    return 0;
}

/* fuzz: the seed of a random fusion (fuzz.c); its executes: ref, the
** backend, the bounds' ref runs and the minimiser's reruns stay within
** the work budget as counted here. */
static int v_fuzz(vstate *v, const json_t *t)
{
    static const char *const keys[] = {"tcId", "comment", "flags", "result",
                                       "seed", NULL};
    if (v_keys(v, t, "", keys) ||
        v_int(v, t, "", "seed", 1, 0, INT64_MAX, NULL))
        return 1;
    v->cost->executes = 8;
    return 0;
}

int cf_test_validate(const char *category, const json_t *test, cf_cost *cost,
                     char *err, size_t cap)
{
    vstate v = {cost, err, cap};
    const char *result = NULL;
    memset(cost, 0, sizeof *cost);
    if (!json_is_object(test))
        return cf_fail(err, cap, "the test must be an object");
    if (cf_json_string(test, "result", "test", &result, err, cap) ||
        v_rules(&v, test))
        return 1;
    if (strcmp(category, "options.parse") == 0)
        return v_parse(&v, test, result);
    if (strcmp(category, "options.precedence") == 0)
        return v_precedence(&v, test, result);
    if (strcmp(category, "cache.isolation") == 0)
        return v_cache(&v, test);
    if (strcmp(category, "numerics") == 0)
        return v_numerics(&v, test, result);
    if (strcmp(category, "differential") == 0)
        return v_differential(&v, test);
    if (strcmp(category, "sweep") == 0)
        return v_sweep(&v, test);
    if (strcmp(category, "fuzz") == 0)
        return v_fuzz(&v, test);
    return cf_fail(err, cap, "category '%s' is not known to this runner",
                category);
}

/*
** verdict.c -- what a run of `kiln conform` proves (docs/conformance.md,
** "Results" and "Exit status").
**
**   - Where the work ran.  Every execute on the backend under test hands
**     its info record to cf_note_segments: a segment of kind REFERENCE ran
**     on the runtime's reference fallback (the backend declined it), every
**     other kind (GENERATED, FALLBACK = the backend's own library path) on
**     the backend itself.  The runner never guesses this from names.
**   - The result of a test (cf_finish_outcome): exactly one of pass, fail,
**     unsupported, skip, invalid-vector.  A test with a REFERENCE segment
**     is never a pass, unless it carries the flag CF_FALLBACK_FLAG, which
**     marks the tests that are about the fallback option itself.  With a
**     plugin under test, a test in which no segment ran anywhere judged
**     only Kiln's own runtime: a skip, not a pass of the plugin.
**   - The summary (cf_summarize): per category and per op x dtype, the
**     results and the segments that ran natively; the verdict, whose rule
**     is "no green without evidence": no fail, no invalid-vector, nothing
**     contradicting an expectation, no unsupported under --strict, and at
**     least one test that passed with native segments.
**
** Invariant: the results alone decide the verdict; nothing here reads the
** command line except through cf_summary (strict, expect).
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

static const char *const status_names[CF_N_STATUS] = {
    "pass", "fail", "skip", "unsupported", "invalid-vector"};

const char *cf_status_name(cf_status s)
{
    return (unsigned)s < CF_N_STATUS ? status_names[s] : "?";
}

int cf_status_parse(const char *s)
{
    for (int i = 0; i < CF_N_STATUS; i++)
        if (strcmp(status_names[i], s) == 0)
            return i;
    return -1;
}

int cf_test_has_flag(const cf_test *t, const char *name)
{
    const char *p = t->flags;
    for (size_t i = 0; p != NULL && i < t->n_flags; i++, p += strlen(p) + 1)
        if (strcmp(p, name) == 0)
            return 1;
    return 0;
}

/* -------------------------------------------------------------- outcome */

void cf_note_segments(cf_outcome *o, const kiln_exec_info *info)
{
    size_t n = info ? kiln_exec_info_segment_count(info) : 0;
    for (size_t i = 0; i < n; i++) {
        kiln_segment_info si;
        memset(&si, 0, sizeof si);
        si.struct_size = sizeof si;
        if (kiln_exec_info_segment(info, i, &si) != KILN_OK)
            break;
        if (si.kind == KILN_SEG_REFERENCE) {
            if (o->fallback++ == 0)
                snprintf(o->fallback_what, sizeof o->fallback_what, "%s",
                         si.what ? si.what : "?");
        } else {
            o->native++;
        }
    }
}

void cf_note_abs(cf_outcome *o, int seen, double max_abs)
{
    if (!seen)
        return;
    if (!o->abs_seen || max_abs > o->max_abs || isnan(max_abs))
        o->max_abs = max_abs;
    o->abs_seen = 1;
}

void cf_outcome_merge(cf_outcome *o, const cf_outcome *from)
{
    o->native += from->native;
    if (o->fallback == 0 && from->fallback > 0)
        snprintf(o->fallback_what, sizeof o->fallback_what, "%s",
                 from->fallback_what);
    o->fallback += from->fallback;
    o->acceptable |= from->acceptable;
    cf_note_abs(o, from->abs_seen, from->max_abs);
    if (from->status == CF_FAIL && o->status != CF_FAIL) {
        o->status = CF_FAIL;
        o->declined = from->declined;
        snprintf(o->msg, sizeof o->msg, "%s", from->msg);
    }
}

void cf_finish_outcome(cf_outcome *o, const cf_test *t, int plugin)
{
    static const char inv[] = "invalid vector: ";
    if (o->status == CF_FAIL && strncmp(o->msg, inv, sizeof inv - 1) == 0) {
        o->status = CF_INVALID;
    } else if (o->status == CF_FAIL && o->declined) {
        o->status = CF_UNSUPPORTED;
    } else if (o->status == CF_PASS && o->fallback > 0 &&
               !cf_test_has_flag(t, CF_FALLBACK_FLAG)) {
        o->status = CF_UNSUPPORTED;
        snprintf(o->msg, sizeof o->msg, "%llu of %llu segments ran on the "
                 "reference fallback, not on the backend (first: %s); the "
                 "outputs were right",
                 (unsigned long long)o->fallback,
                 (unsigned long long)(o->fallback + o->native),
                 o->fallback_what);
    } else if (o->status == CF_PASS && plugin && o->fallback == 0 &&
               o->native == 0) {
        o->status = CF_SKIP;
        snprintf(o->msg, sizeof o->msg, "no segment ran on any backend: the "
                 "test judges Kiln's own runtime (option parsing, input "
                 "validation, context creation), not the plugin under test");
    }
    if (o->status != CF_PASS)
        o->acceptable = 0;
}

/* ------------------------------------------------------------- op keys */

size_t cf_test_keys(const cf_test *t, cf_key *keys, size_t cap)
{
    json_error_t je;
    json_t *j = json_loads(t->text, 0, &je);
    const json_t *fj = j ? json_object_get(j, "fusion") : NULL;
    kiln_fusion *f = NULL;
    size_t n = 0;
    int outs = 0;
    if (json_is_string(fj) &&
        kiln_fusion_parse(json_string_value(fj), strlen(json_string_value(fj)),
                          &f) == KILN_OK &&
        kiln_fusion_num_outputs(f, &outs) == KILN_OK) {
        for (int i = 0; i < outs && n < cap; i++) {
            kiln_dtype dt;
            int rank;
            uint8_t bc[KILN_MAX_RANK];
            if (kiln_fusion_io(f, 1, i, &dt, &rank, bc) != KILN_OK)
                continue;
            cf_key k;
            memset(&k, 0, sizeof k);
            cf_output_op(json_string_value(fj), (size_t)i, k.op, sizeof k.op);
            snprintf(k.dtype, sizeof k.dtype, "%s", kiln_dtype_name(dt));
            size_t m = 0;
            while (m < n && (strcmp(keys[m].op, k.op) != 0 ||
                             strcmp(keys[m].dtype, k.dtype) != 0))
                m++;
            if (m == n)
                keys[n++] = k;
        }
    }
    kiln_fusion_destroy(f);
    json_decref(j);
    return n;
}

/* ------------------------------------------------------------ summary */

static void count(cf_counts *c, const cf_result *r)
{
    c->n[r->status]++;
    c->native += r->native;
    c->fallback += r->fallback;
}

static int cmp_op(const void *a, const void *b)
{
    const cf_op_row *x = a, *y = b;
    if (x->cat != y->cat)
        return x->cat < y->cat ? -1 : 1;
    int c = strcmp(x->op, y->op);
    return c ? c : strcmp(x->dtype, y->dtype);
}

/* The row of (category, op, dtype) in s->ops, appended when new; NULL when
** out of memory. */
static cf_op_row *op_row(cf_summary *s, size_t *cap, size_t cat,
                         const char *op, const char *dtype)
{
    for (size_t i = 0; i < s->n_ops; i++)
        if (s->ops[i].cat == cat && strcmp(s->ops[i].op, op) == 0 &&
            strcmp(s->ops[i].dtype, dtype) == 0)
            return &s->ops[i];
    if (s->n_ops == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        cf_op_row *n = realloc(s->ops, nc * sizeof *n);
        if (n == NULL)
            return NULL;
        s->ops = n;
        *cap = nc;
    }
    cf_op_row *r = &s->ops[s->n_ops++];
    memset(r, 0, sizeof *r);
    r->cat = cat;
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->dtype, sizeof r->dtype, "%s", dtype);
    return r;
}

/* Does result r make the run fail?  Sets r->unexpected. */
static int judge(const cf_summary *s, cf_result *r, cf_verdict *v)
{
    if (r->status == CF_INVALID) {
        v->invalid++; /* never expected: the vector must be fixed */
        return 1;
    }
    if (r->expect != NULL) {
        r->unexpected = r->status != r->expect->result;
        if (r->unexpected) {
            v->unexpected++;
            return 1;
        }
        v->expected++;
        return 0;
    }
    if (r->status == CF_FAIL) {
        v->failed++;
        return 1;
    }
    if (r->status == CF_UNSUPPORTED && s->strict) {
        v->strict++;
        return 1;
    }
    return 0;
}

int cf_summarize(cf_summary *s)
{
    size_t cap = 0;
    double c0 = 0, c1 = 0; /* wall span of the current category */
    memset(&s->total, 0, sizeof s->total);
    memset(&s->verdict, 0, sizeof s->verdict);
    s->cats = calloc(s->n_results + 1, sizeof *s->cats);
    s->n_cats = 0;
    if (s->cats == NULL)
        return 1;
    for (size_t i = 0; i < s->n_results; i++) {
        cf_result *r = &s->results[i];
        const char *cat = r->test->category;
        if (s->n_cats == 0 || strcmp(s->cats[s->n_cats - 1].category, cat) != 0) {
            s->cats[s->n_cats++].category = cat;
            c0 = c1 = 0;
        }
        cf_cat_row *cr = &s->cats[s->n_cats - 1];
        if (r->t1 > 0) { /* the category's time includes the forks */
            if (c0 == 0 || r->t0 < c0)
                c0 = r->t0;
            if (r->t1 > c1)
                c1 = r->t1;
            cr->ms = c1 - c0;
        }
        count(&cr->c, r);
        count(&s->total, r);
        r->fails_run = judge(s, r, &s->verdict);
        if (r->status == CF_PASS && r->native > 0)
            s->verdict.evidence++;
        cf_key keys[CF_MAX_KEYS];
        size_t nk = cf_test_keys(r->test, keys, CF_MAX_KEYS);
        /* ULP statistics only of outputs computed by the backend itself */
        int native_only = r->native > 0 && r->fallback == 0;
        for (size_t k = 0; k < nk; k++) {
            cf_op_row *row = op_row(s, &cap, s->n_cats - 1, keys[k].op,
                                    keys[k].dtype);
            if (row == NULL)
                return 1;
            count(&row->c, r);
        }
        for (size_t k = 0; native_only && k < r->n_ulp; k++) {
            cf_op_row *row = op_row(s, &cap, s->n_cats - 1, r->ulp[k].op,
                                    r->ulp[k].dtype);
            if (row == NULL)
                return 1;
            if (!row->ulp_seen || r->ulp[k].ulp > row->max_ulp)
                row->max_ulp = r->ulp[k].ulp;
            row->ulp_seen = 1;
            row->ulp_tests++;
        }
    }
    if (s->n_ops > 0)
        qsort(s->ops, s->n_ops, sizeof *s->ops, cmp_op);
    cf_verdict *v = &s->verdict;
    v->pass = v->failed == 0 && v->invalid == 0 && v->unexpected == 0 &&
              v->strict == 0 && v->evidence > 0;
    return 0;
}

void cf_summary_free(cf_summary *s)
{
    free(s->cats);
    free(s->ops);
    s->cats = NULL;
    s->ops = NULL;
    s->n_cats = s->n_ops = 0;
}

/* Append "; " (unless first) and the formatted text to buf[cap]. */
static void add(char *buf, size_t cap, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t cap, size_t *used, const char *fmt, ...)
{
    va_list ap;
    if (*used > 0 && *used + 2 < cap) {
        memcpy(buf + *used, "; ", 3);
        *used += 2;
    }
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (w > 0)
        *used = *used + (size_t)w < cap ? *used + (size_t)w : cap - 1;
}

void cf_verdict_text(const cf_summary *s, char *buf, size_t cap)
{
    const cf_verdict *v = &s->verdict;
    size_t used = 0;
    buf[0] = '\0';
    if (v->failed)
        add(buf, cap, &used, "%zu failed", v->failed);
    if (v->invalid)
        add(buf, cap, &used, "%zu invalid vectors", v->invalid);
    if (v->unexpected)
        add(buf, cap, &used, "%zu results contradict the expectations file",
            v->unexpected);
    if (v->strict)
        add(buf, cap, &used, "%zu unsupported (--strict)", v->strict);
    if (v->evidence == 0)
        add(buf, cap, &used, "no test ran on the backend under test and "
            "passed (%zu passed without a native segment)",
            s->total.n[CF_PASS]);
}

/*
** cases.c -- how each vector category is run against a backend
** (docs/conformance.md, "Runner semantics").  One function per category;
** each drives Kiln only through the public API of kiln.h and fills a
** cf_outcome: PASS, FAIL with the first failure's message, or SKIP with
** its reason, and the segments that ran where (cf_note_segments on the
** info record of every execute on the backend under test); cf_run_test
** then decides the final result (verdict.c).
**
** Invariants: every object a case creates (contexts, fusions, tensors,
** options, info records, buffers) is released on every path, so a case can
** run in the runner's own process (CK_FORK=no) as well as in a Check
** child.  A malformed vector fails its own test with the JSON path of the
** problem; nothing here aborts.
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckd.h"
#include "conform.h"
#include "outputs.h"

const char *const cf_categories[] = {
    "options.parse", "options.precedence", "cache.isolation", "numerics",
    "differential", "sweep", "fuzz", NULL};

int cf_category_known(const char *name)
{
    for (int i = 0; cf_categories[i]; i++)
        if (strcmp(cf_categories[i], name) == 0)
            return 1;
    return 0;
}

/* The fixed fusion that options.precedence executes on every step. */
static const char prec_kf[] =
    "kiln.fusion 1\n%0 = input f32 [?]\n%1 = neg %0\noutput %1\n";

/* Record the first failure (later ones keep the first message). */
static void failf(cf_outcome *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void failf(cf_outcome *o, const char *fmt, ...)
{
    if (o->status == CF_FAIL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->msg, sizeof o->msg, fmt, ap);
    va_end(ap);
    o->status = CF_FAIL;
}

/* A kiln_execute that failed where the test expects success; `who`
** prefixes the message ("step 2: ").  KILN_ERR_LIMIT is the runtime
** refusing a call whose work is over the context's max_work (this
** execute's share of the per-test budget) or whose sizes overflow: the
** vector asks for too much, so it is an invalid vector, not a backend
** failure (docs/conformance.md, "Per-test budget"). */
static void exec_failed(cf_outcome *o, const char *who, kiln_status st)
{
    if (st == KILN_ERR_FALLBACK_DISABLED) { /* the backend declined */
        o->declined = o->status != CF_FAIL; /* when this failure is first */
        failf(o, "%skiln_execute: %s: %s", who, kiln_status_name(st),
              kiln_last_error());
    } else if (st == KILN_ERR_LIMIT)
        failf(o, "invalid vector: %skiln_execute: %s: %s (the per-test "
              "budget is %lld element operations over all of the test's "
              "executes)", who, kiln_status_name(st), kiln_last_error(),
              (long long)CF_BUDGET_WORK);
    else
        failf(o, "%skiln_execute: %s: %s", who, kiln_status_name(st),
              kiln_last_error());
}

/* ------------------------------------------------------------ error info */

/* What the last failing call reported, copied at once (kiln_last_error_info
** strings live only until the next Kiln call). */
typedef struct errsnap {
    kiln_status status;
    long offset;
    char source[64];
    char token[128];
    char message[400];
} errsnap;

static void snap(kiln_status st, errsnap *e)
{
    kiln_error_info i;
    memset(&i, 0, sizeof i);
    memset(e, 0, sizeof *e);
    i.struct_size = sizeof i;
    e->status = st;
    e->offset = -1;
    if (kiln_last_error_info(&i) != KILN_OK)
        return;
    e->offset = i.offset;
    snprintf(e->source, sizeof e->source, "%s", i.source ? i.source : "");
    snprintf(e->token, sizeof e->token, "%s", i.token ? i.token : "");
    snprintf(e->message, sizeof e->message, "%s", i.message ? i.message : "");
}

static const struct {
    const char *kind;
    kiln_status status;
} opt_kinds[] = {
    {"syntax", KILN_ERR_OPTION_SYNTAX},
    {"unknown", KILN_ERR_OPTION_UNKNOWN},
    {"argument", KILN_ERR_OPTION_ARGUMENT},
    {"element", KILN_ERR_OPTION_ELEMENT},
};

/* Check an option error against the vector's {"kind","offset","token",
** "source"?}.  `what` names the call in the message. */
static void expect_opt_error(const json_t *ej, const errsnap *e,
                             const char *what, cf_outcome *o)
{
    const char *kind = NULL;
    char err[CF_MSG];
    if (cf_json_string(ej, "kind", "error", &kind, err, sizeof err)) {
        failf(o, "invalid vector: %s", err);
        return;
    }
    kiln_status want = KILN_OK;
    for (size_t i = 0; i < sizeof opt_kinds / sizeof opt_kinds[0]; i++)
        if (strcmp(opt_kinds[i].kind, kind) == 0)
            want = opt_kinds[i].status;
    if (want == KILN_OK) {
        failf(o, "invalid vector: error kind '%s' is not syntax/unknown/argument/"
              "element", kind);
        return;
    }
    const json_t *off = json_object_get(ej, "offset");
    const json_t *tok = json_object_get(ej, "token");
    const json_t *src = json_object_get(ej, "source");
    if (e->status == KILN_OK) {
        failf(o, "%s succeeded; expected %s at offset %lld", what,
              kiln_status_name(want),
              json_is_integer(off) ? (long long)json_integer_value(off) : -1LL);
        return;
    }
    int bad = e->status != want ||
              (json_is_integer(off) && json_integer_value(off) != e->offset) ||
              (json_is_string(tok) &&
               strcmp(json_string_value(tok), e->token) != 0) ||
              (json_is_string(src) &&
               strcmp(json_string_value(src), e->source) != 0);
    if (bad)
        failf(o, "%s: expected %s at offset %lld, token '%s'%s%s%s; got %s at "
              "offset %ld, token '%s', source '%s' (%s)", what,
              kiln_status_name(want),
              json_is_integer(off) ? (long long)json_integer_value(off) : -1LL,
              json_is_string(tok) ? json_string_value(tok) : "",
              json_is_string(src) ? ", source '" : "",
              json_is_string(src) ? json_string_value(src) : "",
              json_is_string(src) ? "'" : "", kiln_status_name(e->status),
              e->offset, e->token, e->source, e->message);
}

/* Canonical text of `level` into a malloc'd string (NULL on failure, with
** the reason in o). */
static char *canonical(const kiln_options *opts, kiln_level level,
                       cf_outcome *o)
{
    size_t len = 0;
    char small[1];
    kiln_status st = kiln_options_canonical(opts, level, small, sizeof small,
                                            &len);
    if (st != KILN_OK && st != KILN_ERR_LIMIT) {
        failf(o, "kiln_options_canonical: %s: %s", kiln_status_name(st),
              kiln_last_error());
        return NULL;
    }
    char *buf = malloc(len + 1);
    if (buf == NULL) {
        failf(o, "out of memory");
        return NULL;
    }
    st = kiln_options_canonical(opts, level, buf, len + 1, &len);
    if (st != KILN_OK) {
        failf(o, "kiln_options_canonical: %s: %s", kiln_status_name(st),
              kiln_last_error());
        free(buf);
        return NULL;
    }
    return buf;
}

static int parse_set(const char *s, kiln_opt_set *set)
{
    if (strcmp(s, "enable") == 0)
        *set = KILN_SET_ENABLE;
    else if (strcmp(s, "disable") == 0)
        *set = KILN_SET_DISABLE;
    else if (strcmp(s, "dump") == 0)
        *set = KILN_SET_DUMP;
    else
        return 1;
    return 0;
}

/* Optional string member: absent or null -> NULL; non-string -> error. */
static int opt_string(const json_t *obj, const char *key, const char **out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return 1;
    *out = json_string_value(v);
    return 0;
}

/* ---------------------------------------------------------- options.parse */

static void run_parse(const cf_test *t, cf_outcome *o)
{
    const char *source = NULL, *setname = NULL, *input = NULL;
    char err[CF_MSG];
    kiln_opt_set set;
    if (cf_json_string(t->json, "source", "test", &source, err, sizeof err) ||
        cf_json_string(t->json, "set", "test", &setname, err, sizeof err) ||
        cf_json_string(t->json, "input", "test", &input, err, sizeof err)) {
        failf(o, "invalid vector: %s", err);
        return;
    }
    if (parse_set(setname, &set)) {
        failf(o, "invalid vector: unknown set '%s'", setname);
        return;
    }
    int env = strcmp(source, "env") == 0;
    if (!env && strcmp(source, "execute") != 0) {
        failf(o, "invalid vector: source '%s' is not env or execute", source);
        return;
    }
    kiln_options *opts = NULL;
    kiln_status st;
    errsnap e;
    if (env) {
        st = kiln_options_from_env(set == KILN_SET_ENABLE ? input : NULL,
                                   set == KILN_SET_DISABLE ? input : NULL,
                                   set == KILN_SET_DUMP ? input : NULL, &opts);
        snap(st, &e);
    } else {
        st = kiln_options_from_env(NULL, NULL, NULL, &opts);
        if (st != KILN_OK) {
            failf(o, "kiln_options_from_env(empty): %s: %s",
                  kiln_status_name(st), kiln_last_error());
            return;
        }
        st = kiln_options_apply(opts, set, input, 0);
        snap(st, &e);
    }
    const char *what = env ? "kiln_options_from_env" : "kiln_options_apply";
    const json_t *ej = json_object_get(t->json, "error");
    if (strcmp(t->result, "invalid") == 0) {
        if (!json_is_object(ej))
            failf(o, "invalid vector: invalid test without 'error'");
        else
            expect_opt_error(ej, &e, what, o);
    } else if (st != KILN_OK) {
        failf(o, "%s(\"%s\") failed: %s at offset %ld: %s", what, input,
              kiln_status_name(st), e.offset, e.message);
    } else {
        const char *want = NULL;
        if (cf_json_string(t->json, "canonical", "test", &want, err,
                           sizeof err)) {
            failf(o, "invalid vector: %s", err);
        } else {
            char *got = canonical(opts, KILN_LEVEL_ALL, o);
            if (got && strcmp(got, want) != 0)
                failf(o, "canonical text of \"%s\": got \"%s\", expected "
                      "\"%s\"", input, got, want);
            free(got);
        }
    }
    kiln_options_destroy(opts);
}

/* ----------------------------------------------------------- tensors, io */

typedef struct inputs {
    cf_tensor *host;   /* decoded data */
    kiln_tensor **t;   /* Kiln tensors over it */
    kiln_tensor **base;/* device storage under strided device views */
    size_t n;
} inputs;

/* Destroy the Kiln tensors (views before their storage). */
static void inputs_unwrap(inputs *in)
{
    for (size_t i = 0; i < in->n; i++) {
        kiln_tensor_destroy(in->t ? in->t[i] : NULL);
        kiln_tensor_destroy(in->base ? in->base[i] : NULL);
    }
    free(in->t);
    free(in->base);
    in->t = in->base = NULL;
}

static void inputs_free(inputs *in)
{
    inputs_unwrap(in);
    for (size_t i = 0; i < in->n; i++)
        cf_tensor_free(in->host ? &in->host[i] : NULL);
    free(in->host);
    memset(in, 0, sizeof *in);
}

/* The backend's memory space, through the public API (a plugin too). */
static int use_device(kiln_context *ctx)
{
    return cf_backend_memory(ctx) == KILN_MEM_DEVICE;
}

/* Wrap decoded tensors into Kiln tensors.  On a device backend: a
** contiguous input is a device tensor written with kiln_tensor_write; a
** strided or offset one ("offset") is a device view (borrowed pointer) over
** a 1-D device tensor
** holding the stored elements as they are.  On a host backend: host
** tensors borrowing the decoded storage. */
static int wrap_inputs(kiln_context *ctx, inputs *in, cf_outcome *o)
{
    in->t = calloc(in->n + 1, sizeof *in->t);
    in->base = calloc(in->n + 1, sizeof *in->base);
    if (in->t == NULL || in->base == NULL) {
        failf(o, "out of memory");
        return 1;
    }
    int dev = use_device(ctx);
    for (size_t i = 0; i < in->n; i++) {
        cf_tensor *h = &in->host[i];
        size_t es = kiln_dtype_size(h->dtype);
        kiln_status st;
        if (dev && !h->strided && h->offset == 0) {
            st = kiln_tensor_create(ctx, h->dtype, h->rank, h->shape, NULL,
                                    KILN_MEM_DEVICE, NULL, &in->t[i]);
            if (st == KILN_OK)
                st = kiln_tensor_write(ctx, in->t[i], h->data, h->numel * es);
        } else if (dev) {
            int64_t len = (int64_t)h->storage;
            st = kiln_tensor_create(ctx, h->dtype, 1, &len, NULL,
                                    KILN_MEM_DEVICE, NULL, &in->base[i]);
            if (st == KILN_OK)
                st = kiln_tensor_write(ctx, in->base[i], h->data,
                                       h->storage * es);
            if (st == KILN_OK)
                st = kiln_tensor_create(ctx, h->dtype, h->rank, h->shape,
                                        h->strides, KILN_MEM_DEVICE,
                                        (unsigned char *)kiln_tensor_data(
                                            in->base[i]) + h->offset * es,
                                        &in->t[i]);
        } else {
            st = kiln_tensor_create(ctx, h->dtype, h->rank, h->shape,
                                    h->strided ? h->strides : NULL,
                                    KILN_MEM_HOST, h->data + h->offset * es,
                                    &in->t[i]);
        }
        if (st != KILN_OK) {
            failf(o, "inputs[%zu]: creating the tensor failed: %s: %s", i,
                  kiln_status_name(st), kiln_last_error());
            return 1;
        }
    }
    return 0;
}

/* Decode the "inputs" list of tensors with data. */
static int load_inputs(const json_t *list, const char *key, inputs *in,
                       cf_outcome *o)
{
    char err[CF_MSG], w[64];
    memset(in, 0, sizeof *in);
    if (!json_is_array(list)) {
        failf(o, "invalid vector: '%s' must be a list of tensors", key);
        return 1;
    }
    in->host = calloc(json_array_size(list) + 1, sizeof *in->host);
    if (in->host == NULL) {
        failf(o, "out of memory");
        return 1;
    }
    for (size_t i = 0; i < json_array_size(list); i++) {
        snprintf(w, sizeof w, "%s[%zu]", key, i);
        if (cf_tensor_from_json(json_array_get(list, i), w, 1, &in->host[i],
                                err, sizeof err)) {
            failf(o, "invalid vector: %s", err);
            return 1;
        }
        in->n = i + 1;
    }
    return 0;
}

/* The op that defines output `index` of a .kf text, for the ULP table
** ("?" when it cannot be told).  Reads the text only: no Kiln internals. */
void cf_output_op(const char *kf, size_t index, char *op, size_t cap)
{
    char names[64][32], ops[64][24], outs[16][32];
    size_t nn = 0, no = 0;
    snprintf(op, cap, "?");
    for (const char *p = kf; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[256], a[32] = "", b[32] = "", c[32] = "";
        snprintf(line, sizeof line, "%.*s", (int)(len < 255 ? len : 255), p);
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        int n = sscanf(line, "%31s %31s %31s", a, b, c);
        if (n >= 2 && strcmp(a, "output") == 0 && no < 16)
            snprintf(outs[no++], 32, "%s", b);
        else if (n == 3 && strcmp(b, "=") == 0 && nn < 64) {
            snprintf(names[nn], 32, "%s", a);
            snprintf(ops[nn++], 24, "%.23s", c);
        }
        p += len + (e != NULL);
    }
    if (index >= no)
        return;
    for (size_t i = 0; i < nn; i++)
        if (strcmp(names[i], outs[index]) == 0)
            snprintf(op, cap, "%.23s", ops[i]);
}

static void note_ulp(cf_outcome *o, const char *op, kiln_dtype dt,
                     uint64_t ulp)
{
    const char *dn = kiln_dtype_name(dt);
    for (size_t i = 0; i < o->n_ulp; i++)
        if (strcmp(o->ulp[i].op, op) == 0 && strcmp(o->ulp[i].dtype, dn) == 0) {
            if (ulp > o->ulp[i].ulp)
                o->ulp[i].ulp = ulp;
            return;
        }
    if (o->n_ulp == CF_MAX_ULP_STATS)
        return;
    cf_ulp_stat *s = &o->ulp[o->n_ulp++];
    snprintf(s->op, sizeof s->op, "%s", op);
    snprintf(s->dtype, sizeof s->dtype, "%s", dn);
    s->ulp = ulp;
}

/* Read output tensor `t` into a malloc'd contiguous buffer, checking its
** dtype and shape against the expectation. */
static void *read_output(kiln_context *ctx, const kiln_tensor *t,
                         const cf_tensor *want, const char *where,
                         cf_outcome *o)
{
    if (t == NULL) {
        failf(o, "%s: no output tensor", where);
        return NULL;
    }
    if (kiln_tensor_dtype(t) != want->dtype) {
        failf(o, "%s: dtype %s, expected %s", where,
              kiln_dtype_name(kiln_tensor_dtype(t)),
              kiln_dtype_name(want->dtype));
        return NULL;
    }
    int rank = kiln_tensor_rank(t);
    const int64_t *sz = kiln_tensor_sizes(t);
    int same = rank == want->rank;
    for (int i = 0; same && i < rank; i++)
        same = sz[i] == want->shape[i];
    if (!same) {
        char g[128] = "", w[128] = "";
        for (int i = 0; i < rank && i < KILN_MAX_RANK; i++)
            snprintf(g + strlen(g), sizeof g - strlen(g), "%s%lld",
                     i ? "," : "", (long long)sz[i]);
        for (int i = 0; i < want->rank; i++)
            snprintf(w + strlen(w), sizeof w - strlen(w), "%s%lld",
                     i ? "," : "", (long long)want->shape[i]);
        failf(o, "%s: shape [%s], expected [%s]", where, g, w);
        return NULL;
    }
    size_t nbytes = want->numel * kiln_dtype_size(want->dtype); /* budget */
    void *buf = malloc(nbytes ? nbytes : 1);
    if (buf == NULL) {
        failf(o, "out of memory");
        return NULL;
    }
    kiln_status st = kiln_tensor_read(ctx, t, buf, nbytes);
    if (st != KILN_OK) {
        failf(o, "%s: kiln_tensor_read: %s: %s", where, kiln_status_name(st),
              kiln_last_error());
        free(buf);
        return NULL;
    }
    return buf;
}

/* Check outputs[] of one execute against the vector's expected outputs
** (tensors with data and "check").  kf names the ops for the ULP table
** (NULL: no ULP statistics). */
static void check_outputs(kiln_context *ctx, kiln_tensor *const *outs,
                          size_t n_outs, const json_t *expect,
                          const char *prefix, const char *kf, cf_outcome *o)
{
    char err[CF_MSG], w[96];
    if (!json_is_array(expect) || json_array_size(expect) != n_outs) {
        failf(o, "invalid vector: %s'outputs' must list %zu tensors", prefix, n_outs);
        return;
    }
    for (size_t i = 0; i < n_outs; i++) {
        const json_t *ej = json_array_get(expect, i);
        cf_tensor want;
        cf_check chk;
        snprintf(w, sizeof w, "%soutputs[%zu]", prefix, i);
        if (cf_tensor_from_json(ej, w, 1, &want, err, sizeof err)) {
            failf(o, "invalid vector: %s", err);
            return;
        }
        if (want.strided) {
            cf_tensor_free(&want);
            failf(o, "invalid vector: %s: outputs are contiguous (no strides)", w);
            return;
        }
        const json_t *cj = json_object_get(ej, "check");
        if (cj == NULL) {
            cf_tensor_free(&want);
            failf(o, "invalid vector: %s: missing field 'check'", w);
            return;
        }
        char cw[112];
        snprintf(cw, sizeof cw, "%s.check", w);
        if (cf_check_from_json(cj, cw, want.dtype, want.numel, &chk, err,
                               sizeof err)) {
            cf_tensor_free(&want);
            failf(o, "invalid vector: %s", err);
            return;
        }
        void *got = read_output(ctx, outs[i], &want, w, o);
        if (got != NULL) {
            cf_serde_fold(o, got, want.numel * kiln_dtype_size(want.dtype));
            cf_cmp_stats stats;
            char msg[CF_MSG];
            memset(&stats, 0, sizeof stats);
            if (cf_compare(&chk, want.dtype, want.numel, got, want.data, NULL,
                           &stats, msg, sizeof msg))
                failf(o, "%s: %s", w, msg);
            if (stats.acceptable)
                o->acceptable = 1;
            cf_note_abs(o, chk.kind == CF_CHECK_ABS, stats.max_abs);
            if (kf && stats.ulp_seen) {
                char op[24];
                cf_output_op(kf, i, op, sizeof op);
                note_ulp(o, op, want.dtype, stats.max_ulp);
            }
            free(got);
        }
        cf_check_free(&chk);
        cf_tensor_free(&want);
    }
}

/* ---------------------------------------------------------------- context */

/* plan_cap, kernel_cap: the cache capacities (0 = the defaults). */
/* prejoined: en already ends in ",kernel_db" under --serde (the caller
** owns the strings for the context's life: cache tests that reload). */
static kiln_status make_context_caps(const cf_target *tg, const char *en,
                                     const char *dis, const char *dump,
                                     int override, size_t plan_cap,
                                     size_t kernel_cap, int prejoined,
                                     kiln_context **ctx)
{
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.plan_cache_capacity = plan_cap;
    cfg.kernel_cache_capacity = kernel_cap;
    cfg.backend = tg->backend;
    cfg.device = tg->device;
    cfg.use_env_override = override;
    cfg.env_enable = en;
    cfg.env_disable = dis;
    cfg.env_dump = dump;
    cfg.dump_stream = tg->dump_stream;
    cfg.max_work = tg->max_work; /* this execute's share of the budget */
    /* --serde: the kernel database for every context of the test (a
    ** none-level option: no key changes, nothing else the test sees) */
    char *joined = NULL;
    if (tg->serde != NULL && override && !prejoined) {
        size_t n = en ? strlen(en) : 0;
        joined = malloc(n + sizeof ",kernel_db");
        if (joined == NULL)
            return KILN_ERR_NO_MEMORY;
        snprintf(joined, n + sizeof ",kernel_db", "%s%skernel_db", en ? en : "",
                 en && en[0] ? "," : "");
        cfg.env_enable = joined;
    }
    kiln_status st = kiln_context_create(&cfg, ctx);
    free(joined);
    return st;
}

static kiln_status make_context(const cf_target *tg, const char *en,
                                const char *dis, const char *dump,
                                int override, kiln_context **ctx)
{
    return make_context_caps(tg, en, dis, dump, override, 0, 0, 0, ctx);
}

/* Destroy a context made by make_context; --serde first adds its counters
** to the test's. */
static void done_context(const cf_target *tg, kiln_context *ctx)
{
    cf_serde *sd = tg->serde;
    if (sd != NULL && ctx != NULL) {
        kiln_counters c;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        if (kiln_context_counters(ctx, &c) == KILN_OK) {
            sd->compiles += c.compiles;
            sd->hits += c.kernel_db_hits;
            sd->misses += c.kernel_db_misses;
            sd->stores += c.kernel_db_stores;
            sd->corrupt += c.kernel_db_corrupt;
            sd->refused += c.kernel_db_refused;
        }
    }
    kiln_context_destroy(ctx);
}

kiln_status cf_case_context(const cf_target *tg, kiln_context **ctx)
{
    return make_context(tg, NULL, NULL, NULL, 1, ctx);
}

void cf_case_context_done(const cf_target *tg, kiln_context *ctx)
{
    done_context(tg, ctx);
}

void cf_serde_fold(cf_outcome *o, const void *data, size_t n)
{
    if (o == NULL || o->serde == NULL)
        return;
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)data)[i]) * 0x100000001b3ULL;
    h ^= n;
    /* a sum: the same set of outputs in any order (threads) gives the same
    ** digest */
    __atomic_fetch_add(&o->serde->digest, h, __ATOMIC_RELAXED);
    __atomic_fetch_add(&o->serde->outputs, 1, __ATOMIC_RELAXED);
}

/* Execute options from the "enable"/"disable" lists of `obj`. */
typedef struct execopts {
    const char **en, **dis;
    size_t n_en, n_dis;
    kiln_exec_options eo;
} execopts;

static int load_execopts(const json_t *obj, const char *where, execopts *x,
                         cf_outcome *o)
{
    char err[CF_MSG];
    memset(x, 0, sizeof *x);
    if (obj == NULL || json_is_null(obj))
        goto done;
    if (cf_json_strings(obj, "enable", where, &x->en, &x->n_en, err,
                        sizeof err) ||
        cf_json_strings(obj, "disable", where, &x->dis, &x->n_dis, err,
                        sizeof err)) {
        failf(o, "invalid vector: %s", err);
        return 1;
    }
done:
    x->eo.struct_size = sizeof x->eo;
    x->eo.enable = x->en;
    x->eo.n_enable = x->n_en;
    x->eo.disable = x->dis;
    x->eo.n_disable = x->n_dis;
    return 0;
}

static void execopts_free(execopts *x)
{
    free(x->en);
    free(x->dis);
    memset(x, 0, sizeof *x);
}

static kiln_fusion *parse_fusion(const json_t *obj, const char **text,
                                 cf_outcome *o)
{
    char err[CF_MSG];
    if (cf_json_string(obj, "fusion", "test", text, err, sizeof err)) {
        failf(o, "invalid vector: %s", err);
        return NULL;
    }
    kiln_fusion *f = NULL;
    kiln_status st = kiln_fusion_parse(*text, strlen(*text), &f);
    if (st != KILN_OK) {
        failf(o, "kiln_fusion_parse: %s: %s", kiln_status_name(st),
              kiln_last_error());
        return NULL;
    }
    return f;
}

static size_t fusion_outputs(const kiln_fusion *f)
{
    int n = 0;
    return kiln_fusion_num_outputs(f, &n) == KILN_OK && n > 0 ? (size_t)n : 0;
}

/* A test that expects success gives every input its fusion declares;
** `where` prefixes the path ("steps[1]."). */
static int inputs_fit(const kiln_fusion *f, size_t n, const char *where,
                      cf_outcome *o)
{
    int want = 0;
    if (kiln_fusion_num_inputs(f, &want) == KILN_OK && (size_t)want == n)
        return 0;
    failf(o, "invalid vector: %sinputs: %zu tensors for a fusion of %d "
          "inputs", where, n, want);
    return 1;
}

static void destroy_outputs(kiln_tensor **outs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        kiln_tensor_destroy(outs[i]);
        outs[i] = NULL;
    }
}

/* ----------------------------------------------------- options.precedence */

static const char *const env_names[3] = {"KILN_ENABLE", "KILN_DISABLE",
                                         "KILN_DUMP"};
static const char *const env_keys[3] = {"enable", "disable", "dump"};

/* Apply a vector "env" object to the process environment: present keys are
** set (null unsets); absent keys stay as they are. */
static int apply_env(const json_t *env, int all, cf_outcome *o)
{
    for (int i = 0; i < 3; i++) {
        const json_t *v = json_object_get(env, env_keys[i]);
        if (v == NULL && !all)
            continue;
        if (v == NULL || json_is_null(v))
            unsetenv(env_names[i]);
        else if (json_is_string(v))
            setenv(env_names[i], json_string_value(v), 1);
        else {
            failf(o, "invalid vector: env.%s must be a string or null", env_keys[i]);
            return 1;
        }
    }
    return 0;
}

/* Expected per-level texts: the context's environment snapshot with the
** step's execute items applied, printed per level. */
static void check_levels(kiln_context *ctx, const json_t *levels,
                         const execopts *x, const char *where, cf_outcome *o)
{
    static const struct {
        const char *key;
        kiln_level level;
    } lv[] = {{"plan", KILN_LEVEL_PLAN},
              {"kernel", KILN_LEVEL_KERNEL},
              {"none", KILN_LEVEL_NONE}};
    const kiln_options *env = kiln_context_env_options(ctx);
    kiln_options *opts = NULL;
    if (env == NULL || kiln_options_copy(env, &opts) != KILN_OK) {
        failf(o, "%s: cannot copy the context's environment options: %s",
              where, kiln_last_error());
        return;
    }
    for (size_t i = 0; i < x->n_en; i++)
        if (kiln_options_apply(opts, KILN_SET_ENABLE, x->en[i], i) != KILN_OK)
            failf(o, "%s: kiln_options_apply(enable[%zu]): %s", where, i,
                  kiln_last_error());
    for (size_t i = 0; i < x->n_dis; i++)
        if (kiln_options_apply(opts, KILN_SET_DISABLE, x->dis[i], i) != KILN_OK)
            failf(o, "%s: kiln_options_apply(disable[%zu]): %s", where, i,
                  kiln_last_error());
    for (size_t i = 0; i < 3 && o->status != CF_FAIL; i++) {
        const json_t *w = json_object_get(levels, lv[i].key);
        if (w == NULL)
            continue;
        if (!json_is_string(w)) {
            failf(o, "invalid vector: %s: levels.%s must be a string", where, lv[i].key);
            break;
        }
        char *got = canonical(opts, lv[i].level, o);
        if (got && strcmp(got, json_string_value(w)) != 0)
            failf(o, "%s: %s-level options \"%s\", expected \"%s\"", where,
                  lv[i].key, got, json_string_value(w));
        free(got);
    }
    kiln_options_destroy(opts);
}

static void prec_execute(kiln_context *ctx, const kiln_fusion *f,
                         kiln_tensor *in, const json_t *step,
                         const char *where, cf_outcome *o)
{
    execopts x;
    if (load_execopts(step, where, &x, o))
        return;
    kiln_exec_info *info = NULL;
    kiln_tensor *out[1] = {NULL};
    if (kiln_exec_info_create(&info) != KILN_OK) {
        failf(o, "kiln_exec_info_create: %s", kiln_last_error());
        execopts_free(&x);
        return;
    }
    kiln_status st = kiln_execute(ctx, f, &in, 1, out, 1, &x.eo, info);
    errsnap e;
    snap(st, &e);
    const json_t *ej = json_object_get(step, "error");
    if (ej != NULL) {
        char what[96];
        snprintf(what, sizeof what, "%s: kiln_execute", where);
        expect_opt_error(ej, &e, what, o);
        if (st != KILN_OK && out[0] != NULL)
            failf(o, "%s: failed execute allocated an output", where);
    } else if (st != KILN_OK) {
        char who[64];
        snprintf(who, sizeof who, "%s: ", where);
        exec_failed(o, who, st);
    } else {
        cf_note_segments(o, info);
        const json_t *cj = json_object_get(step, "canonical");
        const char *got = kiln_exec_info_options(info);
        if (json_is_string(cj) &&
            (got == NULL || strcmp(got, json_string_value(cj)) != 0))
            failf(o, "%s: effective options \"%s\", expected \"%s\"", where,
                  got ? got : "(null)", json_string_value(cj));
        uint32_t r = 0;
        if (out[0] && kiln_tensor_numel(out[0]) == 1 &&
            kiln_tensor_read(ctx, out[0], &r, 4) == KILN_OK) {
            if (r != 0xbf800000u)
                failf(o, "%s: neg(1.0) gave 0x%08x, expected 0xbf800000",
                      where, r);
        } else {
            failf(o, "%s: cannot read the output: %s", where,
                  kiln_last_error());
        }
        const json_t *lv = json_object_get(step, "levels");
        if (json_is_object(lv))
            check_levels(ctx, lv, &x, where, o);
    }
    destroy_outputs(out, 1);
    kiln_exec_info_destroy(info);
    execopts_free(&x);
}

static void run_precedence(const cf_target *tg, const cf_test *t,
                           cf_outcome *o)
{
    const json_t *env = json_object_get(t->json, "env");
    const json_t *steps = json_object_get(t->json, "steps");
    if (!json_is_array(steps)) {
        failf(o, "invalid vector: missing 'steps' list");
        return;
    }
    if (env != NULL && !json_is_object(env) && !json_is_null(env)) {
        failf(o, "invalid vector: 'env' must be an object");
        return;
    }
    const char *ev[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        if (env && opt_string(env, env_keys[i], &ev[i])) {
            failf(o, "invalid vector: env.%s must be a string or null", env_keys[i]);
            return;
        }
    /* A "setenv" step changes the environment behind the context's back;
    ** only the real process environment can model that through the public
    ** API, so such tests use getenv (the process state is saved and
    ** restored).  The others use the override strings. */
    int process_env = 0;
    for (size_t i = 0; i < json_array_size(steps); i++) {
        const char *a = NULL;
        if (!opt_string(json_array_get(steps, i), "action", &a) && a &&
            strcmp(a, "setenv") == 0)
            process_env = 1;
    }
    char *saved[3] = {NULL, NULL, NULL};
    int had[3] = {0, 0, 0};
    if (process_env) {
        for (int i = 0; i < 3; i++) {
            const char *v = getenv(env_names[i]);
            had[i] = v != NULL;
            saved[i] = v ? strdup(v) : NULL;
        }
        if (apply_env(env, 1, o))
            goto restore;
    }
    kiln_context *ctx = NULL;
    kiln_status st = make_context(tg, ev[0], ev[1], ev[2], !process_env, &ctx);
    errsnap e;
    snap(st, &e);
    const json_t *ce = json_object_get(t->json, "createError");
    if (ce != NULL) {
        expect_opt_error(ce, &e, "kiln_context_create", o);
        kiln_context_destroy(ctx);
        goto restore;
    }
    if (st != KILN_OK) {
        failf(o, "kiln_context_create: %s: %s", kiln_status_name(st),
              e.message);
        goto restore;
    }
    kiln_fusion *f = NULL;
    inputs in1;
    memset(&in1, 0, sizeof in1);
    in1.host = calloc(1, sizeof *in1.host);
    if (in1.host != NULL) {
        in1.n = 1;
        in1.host[0].dtype = KILN_F32;
        in1.host[0].rank = 1;
        in1.host[0].shape[0] = 1;
        in1.host[0].strides[0] = 1;
        in1.host[0].numel = in1.host[0].storage = 1;
        in1.host[0].data = calloc(1, 4);
    }
    if (in1.host == NULL || in1.host[0].data == NULL) {
        failf(o, "out of memory");
    } else {
        cf_store_bits(KILN_F32, in1.host[0].data, 0, 0x3f800000); /* 1.0 */
        if ((st = kiln_fusion_parse(prec_kf, strlen(prec_kf), &f)) != KILN_OK)
            failf(o, "parsing neg(1-element f32): %s: %s",
                  kiln_status_name(st), kiln_last_error());
        else
            wrap_inputs(ctx, &in1, o);
    }
    kiln_tensor *in = in1.t ? in1.t[0] : NULL;
    for (size_t i = 0; i < json_array_size(steps) && o->status != CF_FAIL; i++) {
        const json_t *s = json_array_get(steps, i);
        const char *a = NULL;
        char where[48];
        if (opt_string(s, "action", &a) || a == NULL) {
            failf(o, "invalid vector: steps[%zu]: missing 'action'", i);
            break;
        }
        snprintf(where, sizeof where, "step %zu (%s)", i, a);
        if (strcmp(a, "execute") == 0) {
            prec_execute(ctx, f, in, s, where, o);
        } else if (strcmp(a, "setenv") == 0) {
            const json_t *ne = json_object_get(s, "env");
            if (!json_is_object(ne))
                failf(o, "invalid vector: %s: missing 'env' object", where);
            else
                apply_env(ne, 0, o);
        } else if (strcmp(a, "reload") == 0) {
            st = kiln_context_reload_env(ctx);
            snap(st, &e);
            const json_t *ej = json_object_get(s, "error");
            if (ej != NULL) {
                char what[96];
                snprintf(what, sizeof what, "%s: kiln_context_reload_env", where);
                expect_opt_error(ej, &e, what, o);
            } else if (st != KILN_OK) {
                failf(o, "%s: kiln_context_reload_env: %s: %s", where,
                      kiln_status_name(st), e.message);
            }
        } else {
            failf(o, "invalid vector: %s: unknown action", where);
        }
    }
    inputs_free(&in1);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
restore:
    if (process_env)
        for (int i = 0; i < 3; i++) {
            if (had[i])
                setenv(env_names[i], saved[i], 1);
            else
                unsetenv(env_names[i]);
            free(saved[i]);
        }
}

/* -------------------------------------------------------- cache.isolation */

typedef struct cstep {
    execopts x;
    inputs in;
    const json_t *outputs;
    const json_t *expect;
    int skip;      /* --serde: a step of the other pass */
    int action;    /* 0 execute, 1 setenv (env), 2 reload */
    const json_t *env;
} cstep;

typedef struct cshared {
    kiln_context *ctx;
    const kiln_fusion *f;
    const char *kf;
    cstep *steps;
    size_t n_steps, n_outs;
    pthread_mutex_t lock;
    cf_outcome *o;
    int thread;
    char *envbuf[3];  /* the strings the context reads (setenv/reload) */
    size_t envcap;
    int serde;        /* append ",kernel_db" to the enable string */
} cshared;

/* Write env (an object of strings or null; null/absent = "") into the
** buffers the context keeps; under --serde the enable string ends in
** ",kernel_db" as make_context would join it. */
static void set_env_strings(cshared *sh, const json_t *env)
{
    for (int i = 0; i < 3; i++) {
        const json_t *j = env ? json_object_get(env, env_keys[i]) : NULL;
        const char *v = json_is_string(j) ? json_string_value(j) : "";
        snprintf(sh->envbuf[i], sh->envcap, "%s%s%s", v,
                 i == 0 && sh->serde && v[0] ? "," : "",
                 i == 0 && sh->serde ? "kernel_db" : "");
    }
}

typedef struct cthread {
    cshared *sh;
    int id;
    cf_outcome local;
} cthread;

/* Run one step: execute, check outputs; with info/counters check the hit
** expectations too. */
static void cache_step(cshared *sh, size_t i, int check_hits, int thread,
                       cf_outcome *o)
{
    cstep *s = &sh->steps[i];
    char where[48];
    if (s->skip)
        return;
    if (s->action == 1) {
        set_env_strings(sh, s->env);
        return;
    }
    if (s->action == 2) {
        kiln_status rs = kiln_context_reload_env(sh->ctx);
        if (rs != KILN_OK)
            failf(o, "step %zu: kiln_context_reload_env: %s: %s", i,
                  kiln_status_name(rs), kiln_last_error());
        return;
    }
    if (thread >= 0)
        snprintf(where, sizeof where, "thread %d step %zu: ", thread, i);
    else
        snprintf(where, sizeof where, "step %zu: ", i);
    /* guarded, canary-filled outputs, 16-byte aligned as the runtime's own
    ** (the same plan and kernels: conformance/outputs.h) */
    cf_outset os;
    kiln_exec_info *info = NULL;
    kiln_counters c0, c1;
    char err[CF_MSG];
    memset(&c0, 0, sizeof c0);
    memset(&c1, 0, sizeof c1);
    c0.struct_size = c1.struct_size = sizeof c0;
    int rc = cf_outset_make(&os, sh->ctx, sh->f, s->in.t, s->in.n,
                            sh->n_outs, 0, err, sizeof err);
    if (rc > 0 || kiln_exec_info_create(&info) != KILN_OK) {
        failf(o, "%s%s", where, rc > 0 ? err : "out of memory");
        cf_outset_free(&os);
        return;
    }
    kiln_tensor **outs = os.t;
    if (check_hits)
        kiln_context_counters(sh->ctx, &c0);
    kiln_status st = kiln_execute(sh->ctx, sh->f, s->in.t, s->in.n, outs,
                                  sh->n_outs, &s->x.eo, info);
    if (st == KILN_OK)
        cf_note_segments(o, info);
    if (st != KILN_OK) {
        exec_failed(o, where, st);
    } else if (cf_outset_check(&os, sh->ctx, 1, err, sizeof err)) {
        failf(o, "%s%s", where, err);
    } else {
        check_outputs(sh->ctx, outs, sh->n_outs, s->outputs, where,
                      thread >= 0 ? NULL : sh->kf, o);
        const json_t *ex = s->expect;
        if (check_hits && ex != NULL && o->status != CF_FAIL) {
            const char *plan = NULL, *kern = NULL;
            uint64_t pid = 0;
            int phit = -1;
            kiln_context_counters(sh->ctx, &c1);
            kiln_exec_info_plan(info, &pid, &phit);
            opt_string(ex, "plan", &plan);
            opt_string(ex, "kernels", &kern);
            if (plan && strcmp(plan, "any") != 0 &&
                phit != (strcmp(plan, "hit") == 0))
                failf(o, "%splan %s, expected %s (options \"%s\")", where,
                      phit ? "hit" : "miss", plan,
                      kiln_exec_info_options(info));
            size_t nseg = kiln_exec_info_segment_count(info), hits = 0;
            for (size_t k = 0; k < nseg; k++) {
                kiln_segment_info si;
                memset(&si, 0, sizeof si);
                si.struct_size = sizeof si;
                if (kiln_exec_info_segment(info, k, &si) == KILN_OK &&
                    si.kernel_hit)
                    hits++;
            }
            /* "hit": every segment's kernel came from the cache; "miss":
            ** at least one segment's kernel was built for this call. */
            if (kern && strcmp(kern, "hit") == 0 && hits != nseg)
                failf(o, "%s%zu of %zu segment kernels hit, expected all "
                      "(options \"%s\")", where, hits, nseg,
                      kiln_exec_info_options(info));
            if (kern && strcmp(kern, "miss") == 0 && hits == nseg)
                failf(o, "%sall %zu segment kernels hit, expected a miss "
                      "(options \"%s\")", where, nseg,
                      kiln_exec_info_options(info));
            /* "db" (checked with the kernel database only, i.e. --serde):
            ** "hit": every segment's kernel came from the database; any
            ** other outcome X: at least one segment's is X, the others X
            ** or hit (as "kernels": "miss" allows hits beside a miss) */
            const char *db = NULL;
            size_t n_db = 0;
            opt_string(ex, "db", &db);
            for (size_t k = 0; db && o->serde && k < nseg; k++) {
                kiln_segment_info si;
                memset(&si, 0, sizeof si);
                si.struct_size = sizeof si;
                const char *got = kiln_exec_info_segment(info, k, &si) == KILN_OK
                                      ? kiln_db_outcome_name(si.kernel_db)
                                      : "?";
                n_db += strcmp(got, db) == 0;
                if (strcmp(got, db) != 0 &&
                    (strcmp(db, "hit") == 0 || strcmp(got, "hit") != 0))
                    failf(o, "%ssegment %zu: kernel database outcome '%s', "
                          "expected '%s' (options \"%s\")", where, k, got, db,
                          kiln_exec_info_options(info));
            }
            if (db && o->serde && nseg > 0 && n_db == 0)
                failf(o, "%sno segment's kernel database outcome is '%s' "
                      "(options \"%s\")", where, db, kiln_exec_info_options(info));
            /* "compiles": kernels built for this step.  Under --serde a
            ** kernel the database supplies stands in for a compile (the
            ** in-memory caches missed all the same; docs/kernel-db.md) */
            const json_t *cc = json_object_get(ex, "compiles");
            uint64_t built = c1.compiles - c0.compiles;
            if (o->serde)
                built += c1.kernel_db_hits - c0.kernel_db_hits;
            if (json_is_integer(cc) && built != (uint64_t)json_integer_value(cc))
                failf(o, "%s%llu compiles%s, expected %lld (options \"%s\")",
                      where, (unsigned long long)built,
                      o->serde ? " or kernel database loads" : "",
                      (long long)json_integer_value(cc),
                      kiln_exec_info_options(info));
        }
    }
    cf_outset_free(&os);
    kiln_exec_info_destroy(info);
}

static void *cache_thread(void *arg)
{
    cthread *ct = arg;
    ct->local.serde = ct->sh->o->serde;
    for (size_t i = 0; i < ct->sh->n_steps && ct->local.status != CF_FAIL; i++)
        cache_step(ct->sh, i, 0, ct->id, &ct->local);
    return NULL;
}

static void run_cache(const cf_target *tg, const cf_test *t, cf_outcome *o)
{
    const json_t *steps = json_object_get(t->json, "steps");
    const json_t *env = json_object_get(t->json, "env");
    const char *ev[3] = {NULL, NULL, NULL};
    if (!json_is_array(steps)) {
        failf(o, "invalid vector: missing 'steps' list");
        return;
    }
    for (int i = 0; i < 3; i++)
        if (env && json_is_object(env) && opt_string(env, env_keys[i], &ev[i])) {
            failf(o, "invalid vector: env.%s must be a string or null", env_keys[i]);
            return;
        }
    cshared sh;
    memset(&sh, 0, sizeof sh);
    kiln_fusion *f = parse_fusion(t->json, &sh.kf, o);
    if (f == NULL)
        return;
    sh.f = f;
    sh.n_outs = fusion_outputs(f);
    /* "capacities" (optional): {"plan": N, "kernel": N}, validated */
    const json_t *caps = json_object_get(t->json, "capacities");
    size_t cap[2] = {0, 0};
    for (int i = 0; i < 2 && caps != NULL; i++) {
        const json_t *c = json_object_get(caps, i ? "kernel" : "plan");
        cap[i] = json_is_integer(c) ? (size_t)json_integer_value(c) : 0;
    }
    /* setenv/reload steps: the context reads buffers this test owns, big
    ** enough for every string the test sets (unset = "": no options) */
    int env_steps = 0;
    size_t longest = 0;
    for (size_t i = 0; i < json_array_size(steps); i++) {
        const json_t *sj = json_array_get(steps, i);
        const json_t *se = json_object_get(sj, "env");
        const char *act = json_string_value(json_object_get(sj, "action"));
        env_steps |= act != NULL && strcmp(act, "execute") != 0;
        for (int k = 0; k < 3; k++) {
            const json_t *j = se ? json_object_get(se, env_keys[k]) : NULL;
            if (json_is_string(j) && json_string_length(j) > longest)
                longest = json_string_length(j);
        }
    }
    for (int k = 0; env_steps && k < 3; k++)
        if (ev[k] && strlen(ev[k]) > longest)
            longest = strlen(ev[k]);
    kiln_status st = KILN_OK;
    if (env_steps) {
        sh.envcap = longest + sizeof ",kernel_db";
        sh.serde = tg->serde != NULL;
        for (int k = 0; k < 3; k++)
            if ((sh.envbuf[k] = calloc(1, sh.envcap)) == NULL)
                st = KILN_ERR_NO_MEMORY;
        if (st == KILN_OK) {
            set_env_strings(&sh, env);
            st = make_context_caps(tg, sh.envbuf[0], sh.envbuf[1],
                                   sh.envbuf[2], 1, cap[0], cap[1], 1,
                                   &sh.ctx);
        }
    } else {
        st = make_context_caps(tg, ev[0], ev[1], ev[2], 1, cap[0], cap[1], 0,
                               &sh.ctx);
    }
    if (st != KILN_OK) {
        failf(o, "kiln_context_create: %s: %s", kiln_status_name(st),
              kiln_last_error());
        for (int k = 0; k < 3; k++)
            free(sh.envbuf[k]);
        kiln_fusion_destroy(f);
        return;
    }
    sh.n_steps = json_array_size(steps);
    sh.steps = calloc(sh.n_steps + 1, sizeof *sh.steps);
    sh.o = o;
    size_t built = 0;
    for (size_t i = 0; sh.steps && i < sh.n_steps; i++) {
        const json_t *s = json_array_get(steps, i);
        char w[32];
        snprintf(w, sizeof w, "steps[%zu]", i);
        built = i + 1;
        char wp[40];
        snprintf(wp, sizeof wp, "%s.", w);
        const char *act = json_string_value(json_object_get(s, "action"));
        if (act != NULL && strcmp(act, "execute") != 0) { /* validated */
            sh.steps[i].action = strcmp(act, "setenv") == 0 ? 1 : 2;
            sh.steps[i].env = json_object_get(s, "env");
            continue;
        }
        /* "pass": 1 or 2 -- with --serde the step runs in that pass only
        ** (its options change between the two runs); otherwise always */
        const json_t *pj = json_object_get(s, "pass");
        if (pj != NULL && (!json_is_integer(pj) || json_integer_value(pj) < 1 ||
                           json_integer_value(pj) > 2)) {
            failf(o, "vector: %s.pass must be 1 or 2", w);
            break;
        }
        if (pj != NULL && tg->serde != NULL) {
            tg->serde->pass_specific = 1;
            if (json_integer_value(pj) != tg->serde->pass) {
                sh.steps[i].skip = 1;
                continue;
            }
        }
        if (load_execopts(s, w, &sh.steps[i].x, o) ||
            load_inputs(json_object_get(s, "inputs"), "inputs",
                        &sh.steps[i].in, o) ||
            inputs_fit(f, sh.steps[i].in.n, wp, o) ||
            wrap_inputs(sh.ctx, &sh.steps[i].in, o))
            break;
        sh.steps[i].outputs = json_object_get(s, "outputs");
        sh.steps[i].expect = json_object_get(s, "expect");
    }
    if (sh.steps == NULL)
        failf(o, "out of memory");
    const json_t *conc = json_object_get(t->json, "concurrent");
    const json_t *thr = json_object_get(t->json, "threads");
    if (o->status != CF_FAIL && json_is_true(conc)) {
        int n = json_is_integer(thr) ? (int)json_integer_value(thr) : 0;
        if (n < 1 || n > 64) {
            failf(o, "invalid vector: concurrent test needs 'threads' in 1..64");
        } else {
            cthread ct[64];
            pthread_t tid[64];
            int started = 0;
            for (int k = 0; k < n; k++) {
                memset(&ct[k], 0, sizeof ct[k]);
                ct[k].sh = &sh;
                ct[k].id = k;
                if (pthread_create(&tid[k], NULL, cache_thread, &ct[k]) != 0)
                    break;
                started++;
            }
            for (int k = 0; k < started; k++)
                pthread_join(tid[k], NULL);
            if (started < n)
                failf(o, "could only start %d of %d threads", started, n);
            for (int k = 0; k < started; k++)
                cf_outcome_merge(o, &ct[k].local);
        }
    } else {
        for (size_t i = 0; i < sh.n_steps && o->status != CF_FAIL; i++)
            cache_step(&sh, i, 1, -1, o);
    }
    for (size_t i = 0; i < built; i++) {
        inputs_free(&sh.steps[i].in);
        execopts_free(&sh.steps[i].x);
    }
    free(sh.steps);
    done_context(tg, sh.ctx);
    for (int k = 0; k < 3; k++) /* after the context that read them */
        free(sh.envbuf[k]);
    kiln_fusion_destroy(f);
}

/* ---------------------------------------------------------------- numerics */

/* A numerics test that expects kiln_execute to fail: with the outputs the
** test states ("givenOutputs"), else guarded outputs of the sizes the
** inputs give (none when the inputs have none).  Nothing may be written. */
static void numerics_invalid(kiln_context *ctx, const kiln_fusion *f,
                             const cf_test *t, inputs *in, const execopts *x,
                             size_t n_outs, cf_outcome *o)
{
    const json_t *ej = json_object_get(t->json, "error");
    const json_t *given = json_object_get(t->json, "givenOutputs");
    const char *want = NULL;
    char err[CF_MSG];
    cf_outset os;
    int rc = given ? cf_outset_given(&os, ctx, given, in->t, in->n, n_outs,
                                     err, sizeof err)
                   : cf_outset_make(&os, ctx, f, in->t, in->n, n_outs, 0, err,
                                    sizeof err);
    if (rc > 0) {
        failf(o, "%s%s", given ? "invalid vector: " : "", err);
        cf_outset_free(&os);
        return;
    }
    kiln_status st = kiln_execute(ctx, f, in->t, in->n, os.t, n_outs, &x->eo,
                                  NULL);
    if (cf_json_string(ej, "status", "error", &want, err, sizeof err))
        failf(o, "invalid vector: %s", err);
    else if (st == KILN_OK)
        failf(o, "kiln_execute succeeded; expected %s", want);
    else if (strcmp(kiln_status_name(st), want) != 0)
        failf(o, "kiln_execute: %s, expected %s (%s)", kiln_status_name(st),
              want, kiln_last_error());
    if (st != KILN_OK && rc < 0) {
        for (size_t i = 0; i < n_outs; i++)
            if (os.t[i] != NULL) /* cf_outset_free destroys it */
                failf(o, "failed kiln_execute allocated outputs[%zu]", i);
    } else if (st != KILN_OK &&
               cf_outset_check(&os, ctx, 0, err, sizeof err)) {
        failf(o, "%s", err);
    }
    cf_outset_free(&os);
}

static void run_numerics(const cf_target *tg, const cf_test *t, cf_outcome *o)
{
    const char *kf = NULL;
    kiln_fusion *f = parse_fusion(t->json, &kf, o);
    if (f == NULL)
        return;
    size_t n_outs = fusion_outputs(f);
    kiln_context *ctx = NULL;
    kiln_exec_info *info = NULL;
    cf_outset os[2];
    execopts x;
    inputs in;
    memset(os, 0, sizeof os);
    memset(&in, 0, sizeof in);
    memset(&x, 0, sizeof x);
    kiln_status st = make_context(tg, NULL, NULL, NULL, 1, &ctx);
    if (st == KILN_OK)
        st = kiln_exec_info_create(&info);
    if (st != KILN_OK) {
        failf(o, "kiln_context_create: %s: %s", kiln_status_name(st),
              kiln_last_error());
        goto done;
    }
    if (load_execopts(json_object_get(t->json, "options"), "options", &x, o) ||
        load_inputs(json_object_get(t->json, "inputs"), "inputs", &in, o) ||
        (json_object_get(t->json, "error") == NULL &&
         inputs_fit(f, in.n, "", o)) ||
        wrap_inputs(ctx, &in, o))
        goto done;
    if (json_object_get(t->json, "error") != NULL) {
        numerics_invalid(ctx, f, t, &in, &x, n_outs, o);
        goto done;
    }
    /* Two runs on caller-provided, canary-filled, guarded outputs: 16-byte
    ** aligned with the first canary, then not aligned with the second. */
    for (int r = 0; r < 2; r++) {
        char err[CF_MSG];
        int rc = cf_outset_make(&os[r], ctx, f, in.t, in.n, n_outs, r, err,
                                sizeof err);
        if (rc != 0) {
            failf(o, "%s%s", rc > 0 ? "" : "kiln_fusion_output_sizes failed "
                  "for inputs that must execute: ",
                  rc > 0 ? err : kiln_last_error());
            goto done;
        }
        st = kiln_execute(ctx, f, in.t, in.n, os[r].t, n_outs, &x.eo, info);
        if (st != KILN_OK) {
            exec_failed(o, r ? "run 2 (unaligned outputs): " : "", st);
            goto done;
        }
        cf_note_segments(o, info);
        if (cf_outset_check(&os[r], ctx, 1, err, sizeof err)) {
            failf(o, "%s%s", r ? "run 2 (unaligned outputs, second canary): "
                                 : "", err);
            goto done;
        }
    }
    char err[CF_MSG];
    if (cf_outset_same(&os[0], &os[1], err, sizeof err))
        failf(o, "%s", err);
    else
        check_outputs(ctx, os[0].t, n_outs,
                      json_object_get(t->json, "outputs"), "", kf, o);
done:
    cf_outset_free(&os[0]);
    cf_outset_free(&os[1]);
    inputs_free(&in);
    execopts_free(&x);
    kiln_exec_info_destroy(info);
    done_context(tg, ctx);
    kiln_fusion_destroy(f);
}

/* ------------------------------------------------------------ differential */

/* Run the fusion once on ctx; outs receives host copies (malloc'd). */
/* With gs: the outputs are gs's guarded, canary-filled buffers (run
** `variant`), checked after the execute, and outs receives their views. */
static int diff_run(kiln_context *ctx, const kiln_fusion *f, inputs *in,
                    const execopts *x, kiln_tensor **outs, size_t n_outs,
                    const char *who, kiln_exec_info *info, cf_outset *gs,
                    int variant, cf_outcome *o)
{
    char err[CF_MSG];
    if (wrap_inputs(ctx, in, o))
        return 1;
    int rc = gs ? cf_outset_make(gs, ctx, f, in->t, in->n, n_outs, variant,
                                 err, sizeof err) : 0;
    if (rc != 0) {
        inputs_unwrap(in);
        failf(o, "%s: %s", who, rc > 0 ? err : kiln_last_error());
        return 1;
    }
    kiln_status st = kiln_execute(ctx, f, in->t, in->n, gs ? gs->t : outs,
                                  n_outs, &x->eo, info);
    inputs_unwrap(in); /* the tensors belong to this context */
    if (st != KILN_OK) {
        char w[64];
        snprintf(w, sizeof w, "%s: ", who);
        exec_failed(o, w, st);
        return 1;
    }
    if (gs && cf_outset_check(gs, ctx, 1, err, sizeof err)) {
        failf(o, "%s%s: %s", who, variant ? " (run 2: unaligned outputs, "
              "second canary)" : "", err);
        return 1;
    }
    return 0;
}

static void *host_copy(kiln_context *ctx, const kiln_tensor *t, cf_outcome *o)
{
    size_t nb = 0;
    void *b = NULL;
    if (kiln_ckd_bytes(kiln_tensor_numel(t), kiln_dtype_size(kiln_tensor_dtype(t)),
                       &nb) ||
        (b = malloc(nb ? nb : 1)) == NULL ||
        kiln_tensor_read(ctx, t, b, nb) != KILN_OK) {
        failf(o, "reading an output: %s", kiln_last_error());
        free(b);
        return NULL;
    }
    return b;
}

/* "; ran: <what> <path> [<flags>], ...": which kernels produced a
** differential result, for a failure message (a wrong answer is read
** against the flags it was compiled with). */
static void describe_run(const kiln_exec_info *info, char *buf, size_t cap)
{
    size_t n = info ? kiln_exec_info_segment_count(info) : 0, used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++) {
        kiln_segment_info si;
        memset(&si, 0, sizeof si);
        si.struct_size = sizeof si;
        if (kiln_exec_info_segment(info, i, &si) != KILN_OK)
            break;
        int w = snprintf(buf + used, cap - used, "%s%s %s [%s]",
                         i ? ", " : "; ran: ", si.what ? si.what : "?",
                         si.path ? si.path : "?", si.flags ? si.flags : "");
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static void run_differential(const cf_target *tg, const cf_test *t,
                             cf_outcome *o)
{
    if (strcmp(tg->backend, "ref") == 0) {
        o->status = CF_SKIP;
        snprintf(o->msg, sizeof o->msg, "differential: the backend under test "
                 "is ref itself (nothing to compare against)");
        return;
    }
    const char *kf = NULL;
    kiln_fusion *f = parse_fusion(t->json, &kf, o);
    if (f == NULL)
        return;
    size_t n_outs = fusion_outputs(f);
    const json_t *ins = json_object_get(t->json, "inputs");
    const json_t *tol = json_object_get(t->json, "tolerance");
    const json_t *seed = json_object_get(t->json, "seed");
    kiln_context *bt = NULL, *ref = NULL;
    kiln_exec_info *info = NULL;
    kiln_tensor **ob = calloc(n_outs + 1, sizeof *ob);
    kiln_tensor **orf = calloc(n_outs + 1, sizeof *orf);
    cf_outset gs[2];
    inputs in;
    execopts x;
    memset(&in, 0, sizeof in);
    memset(&x, 0, sizeof x);
    memset(gs, 0, sizeof gs);
    char err[CF_MSG];
    if (ob == NULL || orf == NULL) {
        failf(o, "out of memory");
        goto done;
    }
    if (!json_is_integer(seed) || !json_is_array(ins) || !json_is_array(tol) ||
        json_array_size(tol) != n_outs) {
        failf(o, "invalid vector: needs integer 'seed', 'inputs' list and one "
              "'tolerance' per output (%zu)", n_outs);
        goto done;
    }
    if (load_execopts(json_object_get(t->json, "options"), "options", &x, o))
        goto done;
    uint64_t state = (uint64_t)json_integer_value(seed);
    in.host = calloc(json_array_size(ins) + 1, sizeof *in.host);
    for (size_t i = 0; in.host && i < json_array_size(ins); i++) {
        char w[32];
        snprintf(w, sizeof w, "inputs[%zu]", i);
        if (cf_diff_generate(json_array_get(ins, i), w, &state, &in.host[i],
                             err, sizeof err)) {
            failf(o, "invalid vector: %s", err);
            goto done;
        }
        in.n = i + 1;
    }
    if (inputs_fit(f, in.n, "", o))
        goto done;
    /* "inputsFirst" (optional) lets the runner prove its generator agrees
    ** with the one that wrote the vector. */
    const json_t *first = json_object_get(t->json, "inputsFirst");
    for (size_t i = 0; json_is_array(first) && i < in.n; i++) {
        const json_t *row = json_array_get(first, i);
        for (size_t k = 0; k < json_array_size(row) && k < in.host[i].numel; k++) {
            uint64_t want;
            const json_t *h = json_array_get(row, k);
            if (!json_is_string(h) ||
                cf_hex_parse(json_string_value(h), in.host[i].dtype, &want,
                             err, sizeof err)) {
                failf(o, "invalid vector: inputsFirst[%zu][%zu]: %s", i, k,
                      json_is_string(h) ? err : "must be a hex string");
                goto done;
            }
            uint64_t got = cf_load_bits(in.host[i].dtype, in.host[i].data, k);
            if (got != want) {
                failf(o, "input generation disagrees with the vector: "
                      "inputs[%zu][%zu] is 0x%llx, inputsFirst says 0x%llx "
                      "(seed %lld)", i, k, (unsigned long long)got,
                      (unsigned long long)want,
                      (long long)json_integer_value(seed));
                goto done;
            }
        }
    }
    kiln_status st = make_context(tg, NULL, NULL, NULL, 1, &bt);
    if (st == KILN_OK) {
        cf_target rt = {.backend = "ref", .dump_stream = tg->dump_stream,
                        .max_work = tg->max_work};
        st = make_context(&rt, NULL, NULL, NULL, 1, &ref);
    }
    if (st != KILN_OK) {
        failf(o, "kiln_context_create: %s: %s", kiln_status_name(st),
              kiln_last_error());
        goto done;
    }
    if (kiln_exec_info_create(&info) != KILN_OK) {
        failf(o, "kiln_exec_info_create: %s", kiln_last_error());
        goto done;
    }
    /* the backend under test twice, on guarded canary-filled outputs */
    for (int r = 0; r < 2; r++) {
        if (diff_run(bt, f, &in, &x, NULL, n_outs, kiln_context_backend(bt),
                     info, &gs[r], r, o))
            goto done;
        cf_note_segments(o, info);
    }
    if (cf_outset_same(&gs[0], &gs[1], err, sizeof err)) {
        failf(o, "%s", err);
        goto done;
    }
    for (size_t i = 0; i < n_outs; i++)
        ob[i] = gs[0].t[i]; /* borrowed: gs[0] owns them */
    if (diff_run(ref, f, &in, &x, orf, n_outs, "ref", NULL, NULL, 0, o))
        goto done;
    for (size_t i = 0; i < n_outs && o->status != CF_FAIL; i++) {
        kiln_dtype dt = kiln_tensor_dtype(orf[i]);
        size_t numel = (size_t)kiln_tensor_numel(orf[i]);
        if (kiln_tensor_dtype(ob[i]) != dt ||
            (size_t)kiln_tensor_numel(ob[i]) != numel) {
            failf(o, "outputs[%zu]: dtype/size differ from ref", i);
            break;
        }
        cf_check chk;
        char w[48];
        snprintf(w, sizeof w, "tolerance[%zu]", i);
        if (cf_check_from_json(json_array_get(tol, i), w, dt, numel, &chk, err,
                               sizeof err)) {
            failf(o, "invalid vector: %s", err);
            break;
        }
        double *scale = NULL;
        if (chk.kind == CF_CHECK_SUMBOUND) {
            /* S per element = the ref result of "absFusion" (the reduction
            ** over |terms|) on the same inputs; n = its reduced extent. */
            const json_t *tj = json_array_get(tol, i);
            const json_t *nj = json_object_get(tj, "n");
            const json_t *aj = json_object_get(tj, "absFusion");
            kiln_fusion *af = NULL;
            kiln_tensor *ao[16] = {NULL};
            size_t an = 0;
            if (!json_is_integer(nj) || !json_is_string(aj) ||
                kiln_fusion_parse(json_string_value(aj),
                                  strlen(json_string_value(aj)),
                                  &af) != KILN_OK ||
                (an = fusion_outputs(af)) == 0 || an > 16 || i >= an) {
                failf(o, "invalid vector: %s: sumBound needs 'n' and an 'absFusion' "
                      "with output %zu (%s)", w, i, kiln_last_error());
            } else if (!diff_run(ref, af, &in, &x, ao, an, "ref absFusion", NULL,
                                 NULL, 0, o)) {
                /* S per element: the absFusion output must have exactly
                ** the main output's elements (it is read per element) */
                kiln_dtype sdt = kiln_tensor_dtype(ao[i]);
                if ((size_t)kiln_tensor_numel(ao[i]) != numel ||
                    !cf_is_float(sdt)) {
                    failf(o, "invalid vector: %s: output %zu of 'absFusion' "
                          "is %s of %lld elements; sumBound needs a float "
                          "output of the %zu elements output %zu has", w, i,
                          kiln_dtype_name(sdt),
                          (long long)kiln_tensor_numel(ao[i]), numel, i);
                } else {
                    chk.sum_n = json_integer_value(nj);
                    void *sb = host_copy(ref, ao[i], o);
                    scale = calloc(numel + 1, sizeof *scale);
                    if (scale == NULL)
                        failf(o, "out of memory");
                    for (size_t k = 0; sb && scale && k < numel; k++)
                        scale[k] = cf_to_double(sdt, cf_load_bits(sdt, sb, k));
                    free(sb);
                }
            }
            destroy_outputs(ao, an);
            kiln_fusion_destroy(af);
        }
        void *gb = host_copy(bt, ob[i], o), *rb = host_copy(ref, orf[i], o);
        if (gb != NULL)
            cf_serde_fold(o, gb, numel * kiln_dtype_size(dt));
        if (gb && rb && o->status != CF_FAIL) {
            cf_cmp_stats stats;
            char msg[CF_MSG];
            memset(&stats, 0, sizeof stats);
            int bad = cf_compare(&chk, dt, numel, gb, rb, scale, &stats, msg,
                                 sizeof msg);
            cf_note_abs(o, chk.kind == CF_CHECK_ABS ||
                               chk.kind == CF_CHECK_SUMBOUND, stats.max_abs);
            if (bad) {
                char ran[400];
                describe_run(info, ran, sizeof ran);
                failf(o, "outputs[%zu] vs ref (seed %lld): %s%s", i,
                      (long long)json_integer_value(seed), msg, ran);
            }
            if (stats.ulp_seen) {
                char op[24];
                cf_output_op(kf, i, op, sizeof op);
                note_ulp(o, op, dt, stats.max_ulp);
            }
        }
        free(gb);
        free(rb);
        free(scale);
        cf_check_free(&chk);
    }
done:
    cf_outset_free(&gs[0]);
    cf_outset_free(&gs[1]);
    if (orf)
        destroy_outputs(orf, n_outs);
    free(ob);
    free(orf);
    inputs_free(&in);
    execopts_free(&x);
    kiln_exec_info_destroy(info);
    done_context(tg, bt);
    kiln_context_destroy(ref);
    kiln_fusion_destroy(f);
}

/* ------------------------------------------------------------------ sweep */

/* One chunk of a sweep: inputs k in [k0, k0 + n) (bit patterns when
** `all`), executed in one kiln_execute and checked.  The output is a
** guarded, canary-filled buffer (outputs.c), 16-byte aligned in even
** chunks and not in odd ones (docs/conformance.md, "Outputs as callers
** hand them over"). */
static int sweep_chunk(kiln_context *ctx, const kiln_fusion *f,
                       const cf_sweep *s, const execopts *x, uint64_t k0,
                       size_t n, int all, kiln_exec_info *info,
                       cf_sweep_stats *st, cf_outcome *o)
{
    inputs in;
    kiln_tensor *out = NULL;
    cf_outset gs;
    int rc = 1;
    memset(&in, 0, sizeof in);
    memset(&gs, 0, sizeof gs);
    in.host = calloc(1, sizeof *in.host);
    if (in.host == NULL) {
        failf(o, "out of memory");
        return 1;
    }
    in.n = 1;
    cf_tensor *t = &in.host[0];
    t->dtype = s->from;
    t->rank = 1;
    t->shape[0] = (int64_t)n;
    t->numel = t->storage = n;
    t->data = malloc(n * kiln_dtype_size(s->from) + 1);
    if (t->data == NULL) {
        failf(o, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        cf_store_bits(s->from, t->data, i,
                      all ? k0 + i : cf_sweep_input(s, k0 + i));
    if (diff_run(ctx, f, &in, x, NULL, 1, kiln_context_backend(ctx), info,
                 &gs, (int)((k0 / (n ? n : 1)) & 1), o))
        goto done;
    out = gs.t[0]; /* borrowed: gs owns it */
    cf_note_segments(o, info);
    if (kiln_tensor_dtype(out) != s->to || (size_t)kiln_tensor_numel(out) != n) {
        failf(o, "the output is not %zu elements of %s", n,
              kiln_dtype_name(s->to));
        goto done;
    }
    void *got = host_copy(ctx, out, o);
    if (got != NULL) {
        cf_serde_fold(o, got, n * kiln_dtype_size(s->to));
        cf_sweep_check(s, n, t->data, got, st);
        free(got);
        rc = 0;
    }
done:
    cf_outset_free(&gs);
    inputs_free(&in);
    return rc;
}

static void run_sweep(const cf_target *tg, const cf_test *t, cf_outcome *o)
{
    cf_sweep s;
    char err[CF_MSG];
    if (cf_sweep_from_json(t->json, &s, err, sizeof err)) {
        failf(o, "invalid vector: %s", err);
        return;
    }
    const char *kf = NULL;
    kiln_fusion *f = parse_fusion(t->json, &kf, o);
    kiln_context *ctx = NULL;
    kiln_exec_info *info = NULL;
    execopts x;
    memset(&x, 0, sizeof x);
    if (f == NULL)
        return;
    if (load_execopts(json_object_get(t->json, "options"), "options", &x, o))
        goto done;
    kiln_status st = make_context(tg, NULL, NULL, NULL, 1, &ctx);
    if (st != KILN_OK) {
        failf(o, "kiln_context_create: %s: %s", kiln_status_name(st),
              kiln_last_error());
        goto done;
    }
    if (kiln_exec_info_create(&info) != KILN_OK) {
        failf(o, "kiln_exec_info_create: %s", kiln_last_error());
        goto done;
    }
    /* the inputs: the sample, or (--sweep all, f32) this shard's share of
    ** every bit pattern, in chunks of the sample's size */
    int all = tg->sweep_all && s.from == KILN_F32;
    uint64_t lo = 0, hi = s.count;
    if (all) {
        uint64_t sn = tg->sweep_n ? tg->sweep_n : 1;
        uint64_t si = tg->sweep_n ? tg->sweep_i - 1 : 0;
        lo = ((uint64_t)1 << 32) / sn * si;
        hi = si + 1 == sn ? (uint64_t)1 << 32 : ((uint64_t)1 << 32) / sn * (si + 1);
    }
    cf_sweep_stats ss;
    memset(&ss, 0, sizeof ss);
    for (uint64_t k = lo; k < hi && o->status != CF_FAIL; k += s.count) {
        size_t n = (size_t)(hi - k < s.count ? hi - k : s.count);
        if (sweep_chunk(ctx, f, &s, &x, k, n, all, info, &ss, o))
            break;
    }
    int w = kiln_dtype_size(s.from) * 2, wt = kiln_dtype_size(s.to) * 2;
    if (o->status != CF_FAIL && ss.over) {
        failf(o, "%s %s->%s: %llu of %llu inputs over the bound; first "
              "x=0x%0*llx (%.9g): got 0x%0*llx, correctly rounded 0x%0*llx, "
              "%llu ulp (allowed %s%llu)", cr_op_name(s.op),
              kiln_dtype_name(s.from), kiln_dtype_name(s.to),
              (unsigned long long)ss.over, (unsigned long long)ss.n, w,
              (unsigned long long)ss.fail_x, cf_to_double(s.from, ss.fail_x),
              wt, (unsigned long long)ss.fail_got, wt,
              (unsigned long long)ss.fail_want,
              (unsigned long long)ss.fail_ulp,
              ss.fail_abs ? "the abs bound, not ulp; " : "",
              (unsigned long long)ss.fail_allowed);
    }
    if (ss.worst_set)
        note_ulp(o, s.op == CR_CAST ? "cast" : cr_op_name(s.op), s.to,
                 ss.worst_ulp);
    if (tg->sweep_print)
        fprintf(stderr, "sweep: %s/%d %s %s->%s %s: %llu inputs [%llu, %llu), "
                "worst %llu ulp at x=0x%0*llx (%.9g): got 0x%0*llx, "
                "correctly rounded 0x%0*llx; %llu over the bound, %llu "
                "undecided, %llu unbounded%s\n", t->category, t->tcid,
                cr_op_name(s.op), kiln_dtype_name(s.from),
                kiln_dtype_name(s.to), s.ftz ? "fast_math" : "default",
                (unsigned long long)ss.n, (unsigned long long)lo,
                (unsigned long long)hi, (unsigned long long)ss.worst_ulp, w,
                (unsigned long long)ss.worst_x,
                cf_to_double(s.from, ss.worst_x), wt,
                (unsigned long long)ss.worst_got, wt,
                (unsigned long long)ss.worst_want,
                (unsigned long long)ss.over, (unsigned long long)ss.undecided,
                (unsigned long long)ss.unchecked,
                o->status == CF_FAIL ? " FAIL" : "");
done:
    execopts_free(&x);
    kiln_exec_info_destroy(info);
    done_context(tg, ctx);
    kiln_fusion_destroy(f);
}

/* ------------------------------------------------------------------ entry */

void cf_run_test(const cf_target *tg, const cf_test *test, cf_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->status = CF_PASS;
    cf_test copy = *test, *t = &copy;
    json_error_t je;
    copy.json = test->json ? json_incref(test->json)
                           : json_loads(test->text, 0, &je);
    if (copy.json == NULL) {
        failf(o, "invalid vector: test text does not parse: %s", je.text);
        return;
    }
    /* every field first, and the budget, before anything is allocated */
    cf_cost cost;
    char err[CF_MSG];
    o->serde = tg->serde;
    cf_target tb = *tg;
    if (!cf_category_known(t->category)) {
        o->status = CF_SKIP;
        snprintf(o->msg, sizeof o->msg, "category '%s' is not known to this "
                 "runner", t->category);
    } else if (cf_test_validate(t->category, copy.json, &cost, err,
                                sizeof err)) {
        failf(o, "invalid vector: %s", err);
    } else {
        tb.max_work = (uint64_t)(CF_BUDGET_WORK /
                                 (cost.executes > 0 ? cost.executes : 1));
        /* options.precedence judges option texts, which kernel_db would
        ** change: it runs without --serde's database */
        cf_target plain = tb;
        plain.serde = NULL;
        if (strcmp(t->category, "options.parse") == 0)
            run_parse(t, o);
        else if (strcmp(t->category, "options.precedence") == 0)
            run_precedence(&plain, t, o);
        else if (strcmp(t->category, "cache.isolation") == 0)
            run_cache(&tb, t, o);
        else if (strcmp(t->category, "numerics") == 0)
            run_numerics(&tb, t, o);
        else if (strcmp(t->category, "sweep") == 0)
            run_sweep(&tb, t, o);
        else if (strcmp(t->category, "fuzz") == 0)
            cf_run_fuzz(&tb, t, o);
        else
            run_differential(&tb, t, o);
    }
    if (o->status == CF_PASS && strcmp(t->result, "acceptable") == 0)
        o->acceptable = 1;
    cf_finish_outcome(o, t, tg->plugin);
    json_decref(copy.json);
}

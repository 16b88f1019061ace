/*
** results.c -- the results file of `kiln conform --results FILE.json`
** (docs/conformance.md, "Results file"): one record per test, stamped
** with what is needed to verify the claim elsewhere -- the suite version
** and the SHA-256 of every vector file, the runner's version and git
** revision, the backend's identity string and device, the command line
** and the options.  `kiln conform --check-results` reads it back
** (cf_results_read checks its structure; runner.c compares it with the
** installed suite).
**
** The git revision is baked in at build time (KILN_GIT_REVISION from the
** generated kiln_git_rev.h; "unknown" when the tree was not a git
** checkout).  Every string is written by jansson, so the file is valid
** JSON whatever the vectors hold.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/tool.h"
#include "conform.h"
#include "kiln_git_rev.h" /* KILN_GIT_REVISION (Makefile) */

#define FORMAT "kiln-conformance-results"
#define FORMAT_VERSION 1

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* A string list as JSON; invalid UTF-8 is replaced (json_string refuses
** it), so a hostile command line still yields a valid file. */
static json_t *strings(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *s = json_string(v[i]);
        if (s == NULL) {
            char buf[4096];
            cf_text_escape(v[i], buf, sizeof buf);
            s = json_string(buf);
        }
        json_array_append_new(a, s ? s : json_string("?"));
    }
    return a;
}

static json_t *text(const char *s)
{
    json_t *j = json_string(s ? s : "");
    if (j == NULL) { /* not valid UTF-8 */
        char buf[4 * CF_MSG];
        cf_text_escape(s, buf, sizeof buf);
        j = json_string(buf);
    }
    return j;
}

static json_t *counts_json(const cf_counts *c)
{
    json_t *o = json_object();
    for (int k = 0; k < CF_N_STATUS; k++)
        json_object_set_new(o, cf_status_name((cf_status)k),
                            json_integer((json_int_t)c->n[k]));
    json_object_set_new(o, "nativeSegments", json_integer((json_int_t)c->native));
    json_object_set_new(o, "fallbackSegments",
                        json_integer((json_int_t)c->fallback));
    return o;
}

static json_t *record(const cf_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", text(r->id));
    json_object_set_new(o, "result", json_string(cf_status_name(r->status)));
    json_object_set_new(o, "ms", json_real(r->ms));
    json_object_set_new(o, "segments",
                        json_pack("{sIsI}", "native", (json_int_t)r->native,
                                  "fallback", (json_int_t)r->fallback));
    uint64_t ulp = 0;
    for (size_t k = 0; k < r->n_ulp; k++)
        ulp = r->ulp[k].ulp > ulp ? r->ulp[k].ulp : ulp;
    if (r->n_ulp > 0) /* an infinite distance (NaN vs a number): 2^63-1 */
        json_object_set_new(o, "maxUlp",
                            json_integer(ulp > (uint64_t)INT64_MAX
                                             ? INT64_MAX
                                             : (json_int_t)ulp));
    if (r->abs_seen)
        json_object_set_new(o, "maxAbsError",
                            isfinite(r->max_abs) ? json_real(r->max_abs)
                            : json_string(isnan(r->max_abs) ? "nan" : "inf"));
    if (r->acceptable)
        json_object_set_new(o, "acceptable", json_true());
    if (r->msg != NULL && r->status != CF_PASS)
        json_object_set_new(o, "message", text(r->msg));
    if (r->expect != NULL)
        json_object_set_new(o, "expected",
                            json_pack("{sssosi}", "result",
                                      cf_status_name(r->expect->result),
                                      "reason", text(r->expect->reason),
                                      "line", r->expect->line));
    return o;
}

int cf_results_write(const cf_summary *s, const cf_run_info *ri,
                     const char *path)
{
    json_t *files = json_array();
    for (size_t i = 0; i < ri->n_files; i++) {
        const cf_file *f = &ri->files[i];
        const char *base = strrchr(f->path, '/');
        json_array_append_new(
            files, json_pack("{sosossso}", "name", text(base ? base + 1 : f->path),
                             "category", text(f->category), "sha256", f->sha256,
                             "tests", json_integer((json_int_t)f->n_tests)));
    }
    char why[2 * CF_MSG];
    cf_verdict_text(s, why, sizeof why);
    json_t *summary = counts_json(&s->total);
    json_object_set_new(summary, "tests", json_integer((json_int_t)s->n_results));
    json_object_set_new(summary, "evidence",
                        json_integer((json_int_t)s->verdict.evidence));
    json_object_set_new(summary, "unexpected",
                        json_integer((json_int_t)s->verdict.unexpected));
    json_object_set_new(summary, "verdict",
                        json_string(s->verdict.pass ? "pass" : "fail"));
    json_object_set_new(summary, "why", text(why));
    json_t *opts = json_object();
    json_object_set_new(opts, "categories",
                        strings(ri->categories, ri->n_categories));
    json_object_set_new(opts, "filter", ri->filter ? text(ri->filter) : json_null());
    json_object_set_new(opts, "exclude",
                        ri->exclude ? text(ri->exclude) : json_null());
    json_object_set_new(opts, "shard", text(s->shard));
    json_object_set_new(opts, "skipFlags",
                        strings(ri->skip_flags, ri->n_skip_flags));
    json_object_set_new(opts, "strict", json_boolean(s->strict));
    json_object_set_new(opts, "timeout", json_real(ri->timeout));
    json_object_set_new(opts, "vectors", text(s->vectors_dir));
    json_object_set_new(opts, "vectorsFrom", str_or_null(ri->vectors_source));
    json_object_set_new(opts, "expectations",
                        s->expect ? json_pack("{soss}", "path",
                                              text(s->expect->path), "sha256",
                                              s->expect->sha256)
                                  : json_null());
    json_t *recs = json_array();
    for (size_t i = 0; i < s->n_results; i++)
        json_array_append_new(recs, record(&s->results[i]));
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string(FORMAT));
    json_object_set_new(root, "formatVersion", json_integer(FORMAT_VERSION));
    json_object_set_new(root, "suite",
                        json_pack("{sssosssO}", "name", "kiln-conformance",
                                  "version", str_or_null(s->suite_version),
                                  "vectorsSha256", ri->vectors_sha256,
                                  "files", files));
    json_object_set_new(root, "runner",
                        json_pack("{ssssss}", "name", "kiln conform",
                                  "version", kiln_version(NULL, NULL, NULL),
                                  "gitRevision", KILN_GIT_REVISION));
    json_object_set_new(root, "backend",
                        json_pack("{sosososo}", "name", text(s->backend),
                                  "note", text(s->backend_note),
                                  "identity", text(s->backend_identity),
                                  "device", text(s->device)));
    json_object_set_new(root, "commandLine",
                        strings((const char *const *)ri->argv, (size_t)ri->argc));
    json_object_set_new(root, "options", opts);
    json_object_set_new(root, "summary", summary);
    json_object_set_new(root, "results", recs);
    json_decref(files); /* "O" took a reference */

    char err[1200];
    cli_out o;
    int rc = 1;
    if (cli_out_open(&o, path, err, sizeof err) != 0) {
        fprintf(stderr, "kiln conform: %s\n", err);
    } else if (json_dumpf(root, o.fp, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0 ||
               fputc('\n', o.fp) == EOF) {
        cli_out_abort(&o);
        fprintf(stderr, "kiln conform: %s: cannot write the results\n", path);
    } else if (cli_out_commit(&o, path, err, sizeof err) != 0) {
        fprintf(stderr, "kiln conform: %s\n", err);
    } else {
        rc = 0;
    }
    json_decref(root);
    return rc;
}

/* ----------------------------------------------------------------- read */

void cf_results_free(cf_results_doc *d)
{
    if (d == NULL)
        return;
    json_decref(d->root);
    memset(d, 0, sizeof *d);
}

/* Member `key` of obj when it has JSON type `type` (json_typeof value). */
static json_t *member(json_t *obj, const char *key, json_type type,
                      const char *where, char *err, size_t cap)
{
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_typeof(v) != type) {
        static const char *const names[] = {"an object", "a list", "a string",
                                            "an integer", "a number", "true",
                                            "false", "null"};
        cf_fail(err, cap, "%s.%s: %s %s", where, key,
                v == NULL ? "missing, expected" : "must be",
                names[type]);
        return NULL;
    }
    return v;
}

int cf_results_read(const char *path, cf_results_doc *d, char *err,
                    size_t cap)
{
    json_error_t je;
    cf_results_doc x;
    memset(&x, 0, sizeof x);
    x.root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (x.root == NULL)
        return cf_fail(err, cap, "%s:%d:%d: invalid JSON: %s", path, je.line,
                       je.column, je.text);
    char e[CF_MSG];
    json_t *fmt = member(x.root, "format", JSON_STRING, "top level", e, sizeof e);
    json_t *ver = fmt ? member(x.root, "formatVersion", JSON_INTEGER,
                               "top level", e, sizeof e)
                      : NULL;
    json_t *suite = ver ? member(x.root, "suite", JSON_OBJECT, "top level", e,
                                 sizeof e)
                        : NULL;
    if (suite && (strcmp(json_string_value(fmt), FORMAT) != 0 ||
                  json_integer_value(ver) != FORMAT_VERSION)) {
        cf_fail(e, sizeof e, "not a results file of format %s version %d",
                FORMAT, FORMAT_VERSION);
        suite = NULL;
    }
    json_t *sv = suite ? member(suite, "version", JSON_STRING, "suite", e,
                                sizeof e)
                       : NULL;
    json_t *vh = sv ? member(suite, "vectorsSha256", JSON_STRING, "suite", e,
                             sizeof e)
                    : NULL;
    x.files = vh ? member(suite, "files", JSON_ARRAY, "suite", e, sizeof e)
                 : NULL;
    x.options = x.files ? member(x.root, "options", JSON_OBJECT, "top level",
                                 e, sizeof e)
                        : NULL;
    x.summary = x.options ? member(x.root, "summary", JSON_OBJECT,
                                   "top level", e, sizeof e)
                          : NULL;
    x.results = x.summary ? member(x.root, "results", JSON_ARRAY, "top level",
                                   e, sizeof e)
                          : NULL;
    int ok = x.results != NULL;
    for (size_t i = 0; ok && i < json_array_size(x.files); i++) {
        char w[64];
        snprintf(w, sizeof w, "suite.files[%zu]", i);
        json_t *f = json_array_get(x.files, i);
        ok = json_is_object(f) && member(f, "name", JSON_STRING, w, e, sizeof e) &&
             member(f, "sha256", JSON_STRING, w, e, sizeof e) &&
             member(f, "tests", JSON_INTEGER, w, e, sizeof e);
        if (!json_is_object(f))
            cf_fail(e, sizeof e, "%s: must be an object", w);
    }
    static const char *const opt_lists[] = {"categories", "skipFlags"};
    for (size_t i = 0; ok && i < 2; i++) {
        json_t *l = member(x.options, opt_lists[i], JSON_ARRAY, "options", e,
                           sizeof e);
        ok = l != NULL;
        for (size_t k = 0; ok && k < json_array_size(l); k++)
            if (!json_is_string(json_array_get(l, k))) {
                cf_fail(e, sizeof e, "options.%s[%zu]: must be a string",
                        opt_lists[i], k);
                ok = 0;
            }
    }
    static const char *const opt_strs[] = {"filter", "exclude"};
    for (size_t i = 0; ok && i < 2; i++) {
        json_t *v = json_object_get(x.options, opt_strs[i]);
        if (v == NULL || !(json_is_string(v) || json_is_null(v))) {
            cf_fail(e, sizeof e, "options.%s: must be a string or null",
                    opt_strs[i]);
            ok = 0;
        }
    }
    ok = ok && member(x.options, "shard", JSON_STRING, "options", e, sizeof e);
    if (ok) {
        json_t *st = json_object_get(x.options, "strict");
        if (!json_is_boolean(st)) {
            cf_fail(e, sizeof e, "options.strict: must be true or false");
            ok = 0;
        }
        x.expectations = json_object_get(x.options, "expectations");
        if (json_is_null(x.expectations))
            x.expectations = NULL;
        else if (ok && !(json_is_object(x.expectations) &&
                         member(x.expectations, "sha256", JSON_STRING,
                                "options.expectations", e, sizeof e))) {
            if (!json_is_object(x.expectations))
                cf_fail(e, sizeof e, "options.expectations: must be an object "
                        "or null");
            ok = 0;
        }
    }
    for (size_t i = 0; ok && i < json_array_size(x.results); i++) {
        char w[64];
        snprintf(w, sizeof w, "results[%zu]", i);
        json_t *r = json_array_get(x.results, i);
        json_t *res, *seg, *ex;
        if (!json_is_object(r)) {
            cf_fail(e, sizeof e, "%s: must be an object", w);
            ok = 0;
        } else if (!member(r, "id", JSON_STRING, w, e, sizeof e) ||
                   !(res = member(r, "result", JSON_STRING, w, e, sizeof e)) ||
                   !(seg = member(r, "segments", JSON_OBJECT, w, e, sizeof e))) {
            ok = 0;
        } else if (cf_status_parse(json_string_value(res)) < 0) {
            cf_fail(e, sizeof e, "%s.result: '%.40s' is not pass, fail, "
                    "unsupported, skip or invalid-vector", w,
                    json_string_value(res));
            ok = 0;
        } else {
            char ws[80];
            snprintf(ws, sizeof ws, "%s.segments", w);
            ok = member(seg, "native", JSON_INTEGER, ws, e, sizeof e) &&
                 member(seg, "fallback", JSON_INTEGER, ws, e, sizeof e);
            ex = json_object_get(r, "expected");
            if (ok && ex != NULL) {
                snprintf(ws, sizeof ws, "%s.expected", w);
                json_t *er = json_is_object(ex)
                                 ? member(ex, "result", JSON_STRING, ws, e, sizeof e)
                                 : NULL;
                int es = er ? cf_status_parse(json_string_value(er)) : -1;
                if (es != CF_FAIL && es != CF_UNSUPPORTED && es != CF_SKIP) {
                    cf_fail(e, sizeof e, "%s: must be an object whose result is "
                            "fail, unsupported or skip", ws);
                    ok = 0;
                }
            }
        }
    }
    if (!ok) {
        json_decref(x.root);
        return cf_fail(err, cap, "%s: %s", path, e);
    }
    x.suite_version = json_string_value(sv);
    x.vectors_sha256 = json_string_value(vh);
    *d = x;
    return 0;
}

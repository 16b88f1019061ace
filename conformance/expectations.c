/*
** expectations.c -- expectations files for `kiln conform` (docs/
** conformance.md, "Expectations files"): which tests a backend is known
** to fail, to leave unsupported, or to skip, each with its reason.
**
** Format, one entry per line:
**
**     # a comment line; blank lines are ignored
**     PATTERN  RESULT  REASON...
**
** PATTERN is a test id (numerics/412) or a glob over ids (fnmatch(3):
** `*`, `?`, `[...]`; e.g. numerics/4[0-9]); RESULT is fail, unsupported
** or skip; REASON is the rest of the line and may not be empty.  The first line
** whose pattern matches a test decides its expectation.  A `skip` entry
** keeps the test from running at all (for a test that hangs or crashes a
** backend); the others compare: a result that differs from its
** expectation, in either direction, fails the run (verdict.c), so a
** stale entry (the test now passes) is reported and can be pruned.
**
** Invariant: a loaded cf_expectations holds only well-formed lines; a bad
** line fails the whole load with "FILE:LINE: what" (nothing is guessed).
*/
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/tool.h"
#include "conform.h"

void cf_expectations_free(cf_expectations *e)
{
    if (e == NULL)
        return;
    for (size_t i = 0; i < e->n; i++) {
        free(e->lines[i].pattern);
        free(e->lines[i].reason);
    }
    free(e->lines);
    free(e->path);
    memset(e, 0, sizeof *e);
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static int is_space(char c) { return c == ' ' || c == '\t'; }

/* Parse one line (len bytes, no newline) into *l.  0: an entry; 1: blank
** or comment; -1: malformed (err says why). */
static int parse_line(const char *s, size_t len, cf_expect_line *l, char *err,
                      size_t cap)
{
    size_t i = 0, a, b;
    while (len > 0 && (is_space(s[len - 1]) || s[len - 1] == '\r'))
        len--;
    while (i < len && is_space(s[i]))
        i++;
    if (i == len || s[i] == '#')
        return 1;
    for (size_t k = 0; k < len; k++)
        if ((unsigned char)s[k] < 0x20 && s[k] != '\t')
        {
            cf_fail(err, cap, "a control character (byte 0x%02x)",
                    (unsigned)(unsigned char)s[k]);
            return -1;
        }
    a = i;
    while (i < len && !is_space(s[i]))
        i++;
    b = i; /* pattern = s[a, b) */
    while (i < len && is_space(s[i]))
        i++;
    size_t r0 = i;
    while (i < len && !is_space(s[i]))
        i++;
    size_t r1 = i; /* result = s[r0, r1) */
    while (i < len && is_space(s[i]))
        i++;
    char result[32];
    snprintf(result, sizeof result, "%.*s", (int)(r1 - r0 < 31 ? r1 - r0 : 31),
             s + r0);
    int st = cf_status_parse(result);
    if (r0 == r1) {
        cf_fail(err, cap, "'%.*s' needs a result (fail, unsupported or skip) "
                "and a reason", (int)(b - a), s + a);
        return -1;
    }
    if (st != CF_FAIL && st != CF_UNSUPPORTED && st != CF_SKIP) {
        cf_fail(err, cap, "result '%s' is not fail, unsupported or skip",
                result);
        return -1;
    }
    if (i == len) {
        cf_fail(err, cap, "'%.*s %s' has no reason (a reason is mandatory)",
                (int)(b - a), s + a, result);
        return -1;
    }
    l->pattern = dup_n(s + a, b - a);
    l->reason = dup_n(s + i, len - i);
    l->result = (cf_status)st;
    if (l->pattern == NULL || l->reason == NULL) {
        free(l->pattern);
        free(l->reason);
        cf_fail(err, cap, "out of memory");
        return -1;
    }
    return 0;
}

int cf_expectations_parse(const char *text, size_t len, const char *name,
                          cf_expectations *e, char *err, size_t cap)
{
    cf_expectations x;
    memset(&x, 0, sizeof x);
    size_t capn = 0;
    int lineno = 0;
    for (size_t p = 0; p < len;) {
        const char *nl = memchr(text + p, '\n', len - p);
        size_t n = nl ? (size_t)(nl - (text + p)) : len - p;
        char why[CF_MSG];
        cf_expect_line l;
        memset(&l, 0, sizeof l);
        lineno++;
        if (memchr(text + p, '\0', n) != NULL) {
            cf_expectations_free(&x);
            return cf_fail(err, cap, "%s:%d: a NUL byte", name, lineno);
        }
        int r = parse_line(text + p, n, &l, why, sizeof why);
        p += n + (nl != NULL);
        if (r < 0) {
            cf_expectations_free(&x);
            return cf_fail(err, cap, "%s:%d: %s", name, lineno, why);
        }
        if (r > 0)
            continue;
        l.line = lineno;
        for (size_t k = 0; k < x.n; k++)
            if (strcmp(x.lines[k].pattern, l.pattern) == 0) {
                int first = x.lines[k].line;
                free(l.pattern);
                free(l.reason);
                cf_expectations_free(&x);
                return cf_fail(err, cap, "%s:%d: the pattern is already on "
                               "line %d", name, lineno, first);
            }
        if (x.n == capn) {
            size_t nc = capn ? 2 * capn : 16;
            cf_expect_line *nl2 = realloc(x.lines, nc * sizeof *nl2);
            if (nl2 == NULL) {
                free(l.pattern);
                free(l.reason);
                cf_expectations_free(&x);
                return cf_fail(err, cap, "%s: out of memory", name);
            }
            x.lines = nl2;
            capn = nc;
        }
        x.lines[x.n++] = l;
    }
    x.path = dup_n(name, strlen(name));
    cf_sha256_hex(text, len, x.sha256);
    if (x.path == NULL) {
        cf_expectations_free(&x);
        return cf_fail(err, cap, "%s: out of memory", name);
    }
    *e = x;
    return 0;
}

int cf_expectations_load(const char *path, cf_expectations *e, char *err,
                         size_t cap)
{
    size_t n = 0;
    char *buf = cf_read_file(path, &n);
    if (buf == NULL)
        return cf_fail(err, cap, "%s: %s", path, strerror(errno));
    int rc = cf_expectations_parse(buf, n, path, e, err, cap);
    free(buf);
    return rc;
}

cf_expect_line *cf_expectations_match(cf_expectations *e, const char *id,
                                      int count)
{
    for (size_t i = 0; e != NULL && i < e->n; i++)
        if (fnmatch(e->lines[i].pattern, id, 0) == 0) {
            if (count)
                e->lines[i].uses++;
            return &e->lines[i];
        }
    return NULL;
}

/* ----------------------------------------------------------------- write */

/* A message as one expectation reason: control characters become spaces,
** cut to 300 bytes at a character boundary. */
static void reason_put(FILE *f, const char *msg)
{
    char buf[4 * CF_MSG];
    cf_text_escape(msg ? msg : "", buf, sizeof buf);
    size_t n = strlen(buf);
    while (n > 0 && is_space(buf[n - 1]))
        n--;
    if (n > 300) {
        n = 300;
        while (n > 0 && ((unsigned char)buf[n] & 0xc0) == 0x80)
            n--;
    }
    if (n == 0)
        fputs("recorded by --write-expectations", f);
    else
        fprintf(f, "%.*s", (int)n, buf);
}

/* A test id as a pattern that matches it: glob characters escaped with
** '\\', a blank or control character (which cannot be in a pattern)
** written as '?'. */
static void pattern_put(FILE *f, const char *id)
{
    for (const char *p = id; *p; p++) {
        if (strchr("*?[]\\#", *p) != NULL)
            fputc('\\', f);
        fputc((unsigned char)*p <= 0x20 || *p == 0x7f ? '?' : *p, f);
    }
}

int cf_report_expectations(const cf_summary *s, const char *path)
{
    char err[1200];
    cli_out o;
    if (cli_out_open(&o, path, err, sizeof err) != 0) {
        fprintf(stderr, "kiln conform: %s\n", err);
        return 1;
    }
    FILE *f = o.fp;
    char e1[600];
    cf_text_escape(s->backend, e1, sizeof e1);
    fprintf(f, "# Kiln conformance expectations, written by kiln conform "
            "--write-expectations\n# backend %s; suite %s\n"
            "# PATTERN RESULT REASON (docs/conformance.md, \"Expectations "
            "files\")\n", e1, s->suite_version ? s->suite_version : "?");
    for (size_t i = 0; i < s->n_results; i++) {
        const cf_result *r = &s->results[i];
        int from_file = r->expect != NULL && r->status == r->expect->result;
        if (r->status != CF_FAIL && r->status != CF_UNSUPPORTED &&
            !(r->status == CF_SKIP && from_file))
            continue;
        pattern_put(f, r->id);
        fprintf(f, " %s ", cf_status_name(r->status));
        reason_put(f, from_file ? r->expect->reason : r->msg);
        fputc('\n', f);
    }
    if (cli_out_commit(&o, path, err, sizeof err) != 0) {
        fprintf(stderr, "kiln conform: %s\n", err);
        return 1;
    }
    return 0;
}

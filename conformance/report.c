/*
** report.c -- what `kiln conform` tells people and CI systems about a run:
** the per-category table and the per op x dtype table (results, segments
** run natively, largest ULP error of natively computed outputs) on the
** terminal, and the same as a Markdown report, a JUnit XML file and a TAP
** 13 stream (docs/conformance.md, "Output").
**
** Everything here reads a finished cf_summary; nothing runs tests.  Writers
** return 0 on success and non-zero (with a message on stderr) when the file
** cannot be written; each file is written through cli_out (a temporary file
** renamed into place), so a concurrent run never mixes two reports.
**
** Every string that is not this file's own text -- categories, test ids,
** comments and messages come from the vector files, backend names and
** directories from the command line -- goes through the one escaping
** function of its format: xml_put, tap_put, md_put, cf_text_escape.  Each
** decodes UTF-8 (an invalid byte becomes U+FFFD), so a report is always
** valid UTF-8 and no string can add an element, a TAP line or a table cell.
*/
#include <stdio.h>
#include <string.h>

#include "tool/tool.h"
#include "conform.h"

/* ------------------------------------------------------------- escaping */

size_t cf_text_escape(const char *s, char *buf, size_t cap)
{
    size_t o = 0, n;
    unsigned long cp;
    if (cap == 0)
        return 0;
    for (; s != NULL && (n = cli_utf8_next(s, &cp)) > 0; s += n) {
        char tmp[8];
        size_t k;
        if (cp < 0x20 || cp == 0x7f) /* no control reaches a terminal */
            k = (size_t)snprintf(tmp, sizeof tmp, "\\x%02lx", cp);
        else if (cp == 0xfffd && n == 1) /* an invalid byte */
            k = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x",
                                 (unsigned)(unsigned char)*s);
        else {
            k = n;
            memcpy(tmp, s, n);
        }
        if (o + k >= cap)
            break;
        memcpy(buf + o, tmp, k);
        o += k;
    }
    buf[o] = '\0';
    return o;
}

/* Markdown (GitHub tables): every character that could start markup, a
** link, raw HTML, an entity or a cell is backslash-escaped; line breaks
** and tabs become spaces; other controls U+FFFD. */
static void md_put(FILE *f, const char *s)
{
    unsigned long cp;
    size_t n;
    for (; s != NULL && (n = cli_utf8_next(s, &cp)) > 0; s += n) {
        if (cp != 0 && cp < 0x80 && strchr("\\`*_[]<>&|~", (int)cp) != NULL) {
            fputc('\\', f);
            fputc((int)cp, f);
        } else if (cp == '\n' || cp == '\r' || cp == '\t') {
            fputc(' ', f);
        } else if (cp < 0x20 || cp == 0x7f) {
            cli_put_utf8(f, 0xfffd);
        } else {
            cli_put_utf8(f, cp);
        }
    }
}

/* XML 1.0 character data (attr = 0) or an attribute value (attr = 1):
** markup characters as entities; in attributes also tab, newline and
** carriage return as character references (attribute normalisation would
** turn them into spaces); the characters XML 1.0 cannot carry at all
** (other C0 controls, U+FFFE, U+FFFF) become U+FFFD. */
static void xml_put(FILE *f, const char *s, int attr)
{
    unsigned long cp;
    size_t n;
    for (; s != NULL && (n = cli_utf8_next(s, &cp)) > 0; s += n) {
        switch (cp) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        case '\r': fputs("&#13;", f); break;
        case '\n':
        case '\t':
            if (attr)
                fprintf(f, "&#%lu;", cp);
            else
                fputc((int)cp, f);
            break;
        default:
            if (cp < 0x20 || cp == 0xfffe || cp == 0xffff)
                cp = 0xfffd;
            cli_put_utf8(f, cp);
        }
    }
}

/* TAP: in a test line's description (yaml = 0) '\' and '#' are escaped as
** TAP defines ("\\", "\#"), so nothing can start a directive, and a
** control character is written as the text \xNN, so nothing can start a
** line.  In a YAML double-quoted scalar (yaml = 1) '"' and '\' are
** escaped and every non-printable character uses a YAML escape. */
static void tap_put(FILE *f, const char *s, int yaml)
{
    unsigned long cp;
    size_t n;
    for (; s != NULL && (n = cli_utf8_next(s, &cp)) > 0; s += n) {
        if (cp == '\\' || (yaml ? cp == '"' : cp == '#')) {
            fputc('\\', f);
            fputc((int)cp, f);
        } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
            fprintf(f, yaml && cp == '\n' ? "\\n" : "\\x%02lx", cp);
        } else if (yaml && (cp == 0xfffe || cp == 0xffff || cp == 0xfeff)) {
            fprintf(f, "\\u%04lx", cp);
        } else {
            cli_put_utf8(f, cp);
        }
    }
}

/* ------------------------------------------------------------- results */

/* Did r come out as its expectations file said? */
static int expected(const cf_result *r)
{
    return r->expect != NULL && !r->unexpected;
}

/* Why r fails the run, or its message, into buf. */
static const char *result_text(const cf_result *r, char *buf, size_t cap)
{
    const char *msg = r->msg ? r->msg : "";
    if (r->unexpected)
        snprintf(buf, cap, "unexpected result %s, expected %s (expectations "
                 "line %d: %s)%s%s", cf_status_name(r->status),
                 cf_status_name(r->expect->result), r->expect->line,
                 r->expect->reason, *msg ? ": " : "", msg);
    else if (expected(r))
        snprintf(buf, cap, "expected %s (expectations line %d: %s)%s%s",
                 cf_status_name(r->status), r->expect->line, r->expect->reason,
                 *msg && r->status != CF_SKIP ? ": " : "",
                 r->status != CF_SKIP ? msg : "");
    else if (r->fails_run && r->status == CF_UNSUPPORTED)
        snprintf(buf, cap, "unsupported (--strict): %s", msg);
    else
        snprintf(buf, cap, "%s", msg);
    return buf;
}

/* The value of an op row's ULP column ("-" when no native output). */
static const char *ulp_text(const cf_op_row *o, char *buf, size_t cap)
{
    if (!o->ulp_seen)
        snprintf(buf, cap, "-");
    else if (o->max_ulp == CF_ULP_INF)
        snprintf(buf, cap, "inf");
    else
        snprintf(buf, cap, "%llu", (unsigned long long)o->max_ulp);
    return buf;
}

/* ------------------------------------------------------------- terminal */

#define COUNT_HEAD "%6s %6s %6s %6s %7s %8s %8s"

/* The count columns of a terminal table row (after a space). */
static void put_counts(FILE *out, const cf_counts *c)
{
    fprintf(out, " %6zu %6zu %6zu %6zu %7zu %8llu %8llu", c->n[CF_PASS],
            c->n[CF_FAIL], c->n[CF_UNSUPPORTED], c->n[CF_SKIP],
            c->n[CF_INVALID], (unsigned long long)c->native,
            (unsigned long long)c->fallback);
}

void cf_report_text(const cf_summary *s, FILE *out)
{
    char e1[256], e2[64], u[32];
    double tms = 0;
    fprintf(out, "\n%-20s " COUNT_HEAD " %9s\n", "category", "pass", "fail",
            "unsupp", "skip", "invalid", "native", "fallback", "time");
    for (size_t i = 0; i < s->n_cats; i++) {
        const cf_cat_row *c = &s->cats[i];
        cf_text_escape(c->category, e1, sizeof e1);
        fprintf(out, "%-20s", e1);
        put_counts(out, &c->c);
        fprintf(out, " %8.2fs\n", c->ms / 1000.0);
        tms += c->ms;
    }
    fprintf(out, "%-20s", "total");
    put_counts(out, &s->total);
    fprintf(out, " %8.2fs  (wall %.2fs)\n", tms / 1000.0, s->wall_s);
    fprintf(out, "(native, fallback: segments run by the backend under test "
            "and by the reference fallback)\n");
    if (s->n_ops == 0)
        return;
    fprintf(out, "\nper op and dtype (the op defining each output; max ulp: "
            "largest ULP error of outputs computed natively):\n");
    fprintf(out, "%-18s %-11s %-5s " COUNT_HEAD " %8s\n", "category", "op",
            "dtype", "pass", "fail", "unsupp", "skip", "invalid", "native",
            "fallback", "max ulp");
    for (size_t i = 0; i < s->n_ops; i++) {
        const cf_op_row *o = &s->ops[i];
        cf_text_escape(s->cats[o->cat].category, e1, sizeof e1);
        char op[100];
        cf_text_escape(o->op, op, sizeof op);
        cf_text_escape(o->dtype, e2, sizeof e2);
        fprintf(out, "%-18s %-11s %-5s", e1, op, e2);
        put_counts(out, &o->c);
        fprintf(out, " %8s\n", ulp_text(o, u, sizeof u));
    }
}

/* ---------------------------------------------------------------- files */

/* Write `path` with writer(s, f) through cli_out. */
static int write_file(const char *path, const cf_summary *s,
                      void (*writer)(const cf_summary *, FILE *))
{
    char err[1200];
    cli_out o;
    if (cli_out_open(&o, path, err, sizeof err) != 0) {
        fprintf(stderr, "kiln conform: %s\n", err);
        return 1;
    }
    writer(s, o.fp);
    if (cli_out_commit(&o, path, err, sizeof err) != 0) {
        fprintf(stderr, "kiln conform: %s\n", err);
        return 1;
    }
    return 0;
}

static void md_counts(FILE *f, const cf_counts *c)
{
    fprintf(f, " | %zu | %zu | %zu | %zu | %zu | %llu | %llu |", c->n[CF_PASS],
            c->n[CF_FAIL], c->n[CF_UNSUPPORTED], c->n[CF_SKIP],
            c->n[CF_INVALID], (unsigned long long)c->native,
            (unsigned long long)c->fallback);
}

/* One Markdown table of the results that `pick` selects. */
static void md_results(const cf_summary *s, FILE *f, const char *title,
                       int (*pick)(const cf_result *))
{
    char buf[3 * CF_MSG];
    int any = 0;
    for (size_t i = 0; i < s->n_results && !any; i++)
        any = pick(&s->results[i]);
    if (!any)
        return;
    fprintf(f, "\n## %s\n\n| test | comment | result | message |\n"
            "|---|---|---|---|\n", title);
    for (size_t i = 0; i < s->n_results; i++) {
        const cf_result *r = &s->results[i];
        if (!pick(r))
            continue;
        fputs("| ", f);
        md_put(f, r->id);
        fputs(" | ", f);
        md_put(f, r->test->comment);
        fprintf(f, " | %s | ", cf_status_name(r->status));
        md_put(f, result_text(r, buf, sizeof buf));
        fputs(" |\n", f);
    }
}

static int pick_fail(const cf_result *r) { return r->fails_run; }
static int pick_unsupported(const cf_result *r)
{
    return !r->fails_run && !expected(r) && r->status == CF_UNSUPPORTED;
}
static int pick_skip(const cf_result *r)
{
    return !r->fails_run && !expected(r) && r->status == CF_SKIP;
}
static int pick_expected(const cf_result *r) { return expected(r); }

static void write_markdown(const cf_summary *s, FILE *f)
{
    char why[2 * CF_MSG], u[32];
    cf_verdict_text(s, why, sizeof why);
    fprintf(f, "# Kiln conformance report\n\n");
    fprintf(f, "- Result: **%s**%s", s->verdict.pass ? "PASS" : "FAIL",
            s->verdict.pass ? "" : ": ");
    md_put(f, why);
    fprintf(f, "\n- Tests: %zu passed (%zu of them on segments the backend "
            "ran itself), %zu failed, %zu unsupported, %zu skipped, %zu "
            "invalid vectors (%zu tests)\n", s->total.n[CF_PASS],
            s->verdict.evidence, s->total.n[CF_FAIL],
            s->total.n[CF_UNSUPPORTED], s->total.n[CF_SKIP],
            s->total.n[CF_INVALID], s->n_results);
    fprintf(f, "- Backend: ");
    md_put(f, s->backend);
    if (s->backend_note && *s->backend_note) {
        fputs(" (", f);
        md_put(f, s->backend_note);
        fputc(')', f);
    }
    fputs("; identity: ", f);
    md_put(f, s->backend_identity ? s->backend_identity : "?");
    fputs("; device: ", f);
    md_put(f, s->device ? s->device : "?");
    fprintf(f, "\n- Kiln %s; vectors: ", kiln_version(NULL, NULL, NULL));
    md_put(f, s->vectors_dir);
    fputs(" (suite version ", f);
    md_put(f, s->suite_version ? s->suite_version : "?");
    fputs("); shard ", f);
    md_put(f, s->shard);
    fprintf(f, "%s", s->strict ? "; --strict" : "");
    if (s->expect) {
        fputs("; expectations ", f);
        md_put(f, s->expect->path);
    }
    fprintf(f, "\n- Wall time: %.2f s\n\n", s->wall_s);
    fprintf(f, "## Categories\n\n| category | pass | fail | unsupported | "
            "skip | invalid-vector | native segments | fallback segments | "
            "time (s) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < s->n_cats; i++) {
        fputs("| ", f);
        md_put(f, s->cats[i].category);
        md_counts(f, &s->cats[i].c);
        fprintf(f, " %.2f |\n", s->cats[i].ms / 1000.0);
    }
    if (s->n_ops) {
        fprintf(f, "\n## Ops and dtypes\n\nTests by the op defining their "
                "outputs; max ulp is the largest ULP error of outputs the "
                "backend computed itself.\n\n| category | op | dtype | pass | "
                "fail | unsupported | skip | invalid-vector | native "
                "segments | fallback segments | max ulp |\n"
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (size_t i = 0; i < s->n_ops; i++) {
            const cf_op_row *o = &s->ops[i];
            fputs("| ", f);
            md_put(f, s->cats[o->cat].category);
            fputs(" | ", f);
            md_put(f, o->op);
            fputs(" | ", f);
            md_put(f, o->dtype);
            md_counts(f, &o->c);
            fprintf(f, " %s |\n", ulp_text(o, u, sizeof u));
        }
    }
    md_results(s, f, "Failures", pick_fail);
    md_results(s, f, "Unsupported", pick_unsupported);
    md_results(s, f, "Skipped", pick_skip);
    md_results(s, f, "Expected", pick_expected);
}

int cf_report_markdown(const cf_summary *s, const char *path)
{
    return write_file(path, s, write_markdown);
}

static void xml_property(FILE *f, const char *name, const char *value)
{
    fputs("   <property name=\"", f);
    xml_put(f, name, 1);
    fputs("\" value=\"", f);
    xml_put(f, value, 1);
    fputs("\"/>\n", f);
}

static void counts_text(const cf_counts *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "pass %zu, fail %zu, unsupported %zu, skip %zu, "
             "invalid-vector %zu, native segments %llu, fallback segments "
             "%llu", c->n[CF_PASS], c->n[CF_FAIL], c->n[CF_UNSUPPORTED],
             c->n[CF_SKIP], c->n[CF_INVALID], (unsigned long long)c->native,
             (unsigned long long)c->fallback);
}

static void write_junit(const cf_summary *s, FILE *f)
{
    size_t failing = 0, skipped = 0;
    char buf[3 * CF_MSG], u[32];
    for (size_t i = 0; i < s->n_results; i++) {
        failing += s->results[i].fails_run != 0;
        skipped += !s->results[i].fails_run &&
                   s->results[i].status != CF_PASS;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites name=\"kiln-conformance\" tests=\"%zu\" "
            "failures=\"%zu\" skipped=\"%zu\" time=\"%.3f\">\n", s->n_results,
            failing, skipped, s->wall_s);
    for (size_t c = 0; c < s->n_cats; c++) {
        const cf_cat_row *cr = &s->cats[c];
        size_t cf = 0, cs = 0, ct = 0;
        for (size_t i = 0; i < s->n_results; i++) {
            const cf_result *r = &s->results[i];
            if (strcmp(r->test->category, cr->category) != 0)
                continue;
            ct++;
            cf += r->fails_run != 0;
            cs += !r->fails_run && r->status != CF_PASS;
        }
        fprintf(f, " <testsuite name=\"");
        xml_put(f, cr->category, 1);
        fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
                "skipped=\"%zu\" time=\"%.3f\">\n", ct, cf, cs, cr->ms / 1000.0);
        fprintf(f, "  <properties>\n");
        xml_property(f, "backend", s->backend);
        xml_property(f, "backend identity",
                     s->backend_identity ? s->backend_identity : "?");
        counts_text(&cr->c, buf, sizeof buf);
        xml_property(f, "results", buf);
        for (size_t k = 0; k < s->n_ops; k++) {
            const cf_op_row *o = &s->ops[k];
            if (o->cat != c)
                continue;
            char name[64], val[400];
            snprintf(name, sizeof name, "op %s %s", o->op, o->dtype);
            counts_text(&o->c, val, sizeof val - 48);
            snprintf(val + strlen(val), 48, ", max ulp %s",
                     ulp_text(o, u, sizeof u));
            xml_property(f, name, val);
        }
        fprintf(f, "  </properties>\n");
        for (size_t i = 0; i < s->n_results; i++) {
            const cf_result *r = &s->results[i];
            if (strcmp(r->test->category, cr->category) != 0)
                continue;
            fprintf(f, "  <testcase classname=\"");
            xml_put(f, cr->category, 1);
            fprintf(f, "\" name=\"");
            xml_put(f, r->id, 1);
            fprintf(f, ": ");
            xml_put(f, r->test->comment, 1);
            fprintf(f, "\" time=\"%.4f\"", r->ms / 1000.0);
            if (r->status == CF_PASS && !r->fails_run) {
                fprintf(f, "/>\n");
                continue;
            }
            result_text(r, buf, sizeof buf);
            if (r->fails_run) {
                fprintf(f, ">\n   <failure type=\"%s\" message=\"",
                        r->unexpected ? "unexpected"
                                      : cf_status_name(r->status));
                xml_put(f, buf, 1);
                fprintf(f, "\">");
                xml_put(f, buf, 0);
                fprintf(f, "</failure>\n");
            } else {
                fprintf(f, ">\n   <skipped message=\"");
                if (r->status == CF_UNSUPPORTED && !expected(r))
                    fputs("unsupported: ", f);
                xml_put(f, buf, 1);
                fprintf(f, "\"/>\n");
            }
            fprintf(f, "  </testcase>\n");
        }
        fprintf(f, " </testsuite>\n");
    }
    fprintf(f, "</testsuites>\n");
}

int cf_report_junit(const cf_summary *s, const char *path)
{
    return write_file(path, s, write_junit);
}

static void write_tap(const cf_summary *s, FILE *f)
{
    char buf[3 * CF_MSG], u[32];
    fprintf(f, "TAP version 13\n1..%zu\n", s->n_results);
    for (size_t i = 0; i < s->n_results; i++) {
        const cf_result *r = &s->results[i];
        int ok = !r->fails_run && r->status != CF_FAIL;
        fprintf(f, "%s %zu - ", ok ? "ok" : "not ok", i + 1);
        tap_put(f, r->id, 0);
        fputc(' ', f);
        tap_put(f, r->test->comment, 0);
        result_text(r, buf, sizeof buf);
        if (!r->fails_run && r->status == CF_FAIL) { /* an expected fail */
            fputs(" # TODO ", f);
            tap_put(f, buf, 0);
        } else if (!r->fails_run && r->status != CF_PASS) {
            fputs(" # SKIP ", f);
            if (r->status == CF_UNSUPPORTED && !expected(r))
                fputs("unsupported: ", f);
            tap_put(f, buf, 0);
        }
        fputc('\n', f);
        if (r->fails_run) {
            fputs("  ---\n  message: \"", f);
            tap_put(f, buf, 1);
            fprintf(f, "\"\n  severity: fail\n  ...\n");
        }
    }
    /* the summary tables as TAP diagnostics */
    for (size_t c = 0; c < s->n_cats; c++) {
        counts_text(&s->cats[c].c, buf, sizeof buf);
        fputs("# category ", f);
        tap_put(f, s->cats[c].category, 0);
        fprintf(f, ": %s\n", buf);
    }
    for (size_t k = 0; k < s->n_ops; k++) {
        const cf_op_row *o = &s->ops[k];
        counts_text(&o->c, buf, sizeof buf);
        fputs("# op ", f);
        tap_put(f, s->cats[o->cat].category, 0);
        fputc(' ', f);
        tap_put(f, o->op, 0);
        fputc(' ', f);
        tap_put(f, o->dtype, 0);
        fprintf(f, ": %s, max ulp %s\n", buf, ulp_text(o, u, sizeof u));
    }
    cf_verdict_text(s, buf, sizeof buf);
    fprintf(f, "# verdict: %s", s->verdict.pass ? "PASS" : "FAIL: ");
    tap_put(f, buf, 0);
    fputc('\n', f);
}

int cf_report_tap(const cf_summary *s, const char *path)
{
    return write_file(path, s, write_tap);
}

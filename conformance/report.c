/*
** report.c -- what `kiln conform` tells people and CI systems about a run:
** the per-category table and the largest-ULP table on the terminal, and
** the same as a Markdown report, a JUnit XML file and a TAP 13 stream
** (docs/conformance.md, "Running the suite").
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

#include "cli/cli.h"
#include "conform.h"

static size_t count(const cf_summary *s, cf_status st)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_results; i++)
        n += s->results[i].status == st;
    return n;
}

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

/* ------------------------------------------------------------- terminal */

void cf_report_text(const cf_summary *s, FILE *out)
{
    size_t tp = 0, tf = 0, ts = 0;
    double tms = 0;
    char e1[256], e2[64];
    fprintf(out, "\n%-22s %8s %8s %8s %9s\n", "category", "passed", "failed",
            "skipped", "time");
    for (size_t i = 0; i < s->n_cats; i++) {
        const cf_cat_row *c = &s->cats[i];
        cf_text_escape(c->category, e1, sizeof e1);
        fprintf(out, "%-22s %8zu %8zu %8zu %8.2fs\n", e1, c->passed,
                c->failed, c->skipped, c->ms / 1000.0);
        tp += c->passed;
        tf += c->failed;
        ts += c->skipped;
        tms += c->ms;
    }
    fprintf(out, "%-22s %8zu %8zu %8zu %8.2fs  (wall %.2fs)\n", "total", tp,
            tf, ts, tms / 1000.0, s->wall_s);
    if (s->n_ulps) {
        fprintf(out, "\nlargest ULP error observed per op and dtype:\n");
        fprintf(out, "%-14s %-6s %10s %7s\n", "op", "dtype", "max ulp",
                "tests");
        for (size_t i = 0; i < s->n_ulps; i++) {
            cf_text_escape(s->ulps[i].op, e1, sizeof e1);
            cf_text_escape(s->ulps[i].dtype, e2, sizeof e2);
            fprintf(out, "%-14s %-6s %10llu %7zu\n", e1, e2,
                    (unsigned long long)s->ulps[i].ulp, s->ulps[i].tests);
        }
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

static void write_markdown(const cf_summary *s, FILE *f)
{
    size_t np = count(s, CF_PASS), nf = count(s, CF_FAIL),
           ns = count(s, CF_SKIP);
    fprintf(f, "# Kiln conformance report\n\n");
    fprintf(f, "- Result: **%s**: %zu passed, %zu failed, %zu skipped "
            "(%zu tests)\n", nf ? "FAIL" : "PASS", np, nf, ns, s->n_results);
    fprintf(f, "- Backend: ");
    md_put(f, s->backend);
    if (s->backend_note && *s->backend_note) {
        fputs(" (", f);
        md_put(f, s->backend_note);
        fputc(')', f);
    }
    fprintf(f, "\n- Kiln %s; vectors: ", kiln_version(NULL, NULL, NULL));
    md_put(f, s->vectors_dir);
    fputs(" (suite version ", f);
    md_put(f, s->suite_version ? s->suite_version : "?");
    fputs("); shard ", f);
    md_put(f, s->shard);
    fprintf(f, "\n- Wall time: %.2f s\n\n", s->wall_s);
    fprintf(f, "## Categories\n\n| category | passed | failed | skipped | "
            "time (s) |\n|---|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < s->n_cats; i++) {
        fputs("| ", f);
        md_put(f, s->cats[i].category);
        fprintf(f, " | %zu | %zu | %zu | %.2f |\n", s->cats[i].passed,
                s->cats[i].failed, s->cats[i].skipped, s->cats[i].ms / 1000.0);
    }
    if (s->n_ulps) {
        fprintf(f, "\n## Largest ULP error observed per op and dtype\n\n"
                "| op | dtype | max ulp | tests |\n|---|---|---:|---:|\n");
        for (size_t i = 0; i < s->n_ulps; i++) {
            fputs("| ", f);
            md_put(f, s->ulps[i].op);
            fputs(" | ", f);
            md_put(f, s->ulps[i].dtype);
            fprintf(f, " | %llu | %zu |\n", (unsigned long long)s->ulps[i].ulp,
                    s->ulps[i].tests);
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        cf_status want = pass == 0 ? CF_FAIL : CF_SKIP;
        if ((pass == 0 ? nf : ns) == 0)
            continue;
        fprintf(f, "\n## %s\n\n| test | comment | %s |\n|---|---|---|\n",
                pass == 0 ? "Failures" : "Skipped",
                pass == 0 ? "message" : "reason");
        for (size_t i = 0; i < s->n_results; i++) {
            const cf_result *r = &s->results[i];
            if (r->status != want)
                continue;
            fputs("| ", f);
            md_put(f, r->id);
            fputs(" | ", f);
            md_put(f, r->test->comment);
            fputs(" | ", f);
            md_put(f, r->msg);
            fputs(" |\n", f);
        }
    }
}

int cf_report_markdown(const cf_summary *s, const char *path)
{
    return write_file(path, s, write_markdown);
}

static void write_junit(const cf_summary *s, FILE *f)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites name=\"kiln-conformance\" tests=\"%zu\" "
            "failures=\"%zu\" skipped=\"%zu\" time=\"%.3f\">\n", s->n_results,
            count(s, CF_FAIL), count(s, CF_SKIP), s->wall_s);
    for (size_t c = 0; c < s->n_cats; c++) {
        const cf_cat_row *cr = &s->cats[c];
        fprintf(f, " <testsuite name=\"");
        xml_put(f, cr->category, 1);
        fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
                "skipped=\"%zu\" time=\"%.3f\">\n",
                cr->passed + cr->failed + cr->skipped, cr->failed, cr->skipped,
                cr->ms / 1000.0);
        fprintf(f, "  <properties><property name=\"backend\" value=\"");
        xml_put(f, s->backend, 1);
        fprintf(f, "\"/></properties>\n");
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
            if (r->status == CF_PASS) {
                fprintf(f, "/>\n");
                continue;
            }
            fprintf(f, ">\n   <%s message=\"",
                    r->status == CF_FAIL ? "failure" : "skipped");
            xml_put(f, r->msg, 1);
            if (r->status == CF_FAIL) {
                fprintf(f, "\">");
                xml_put(f, r->msg, 0);
                fprintf(f, "</failure>\n");
            } else {
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
    fprintf(f, "TAP version 13\n1..%zu\n", s->n_results);
    for (size_t i = 0; i < s->n_results; i++) {
        const cf_result *r = &s->results[i];
        fprintf(f, "%s %zu - ", r->status == CF_FAIL ? "not ok" : "ok", i + 1);
        tap_put(f, r->id, 0);
        fputc(' ', f);
        tap_put(f, r->test->comment, 0);
        if (r->status == CF_SKIP) {
            fputs(" # SKIP ", f);
            tap_put(f, r->msg, 0);
        }
        fputc('\n', f);
        if (r->status == CF_FAIL) {
            fputs("  ---\n  message: \"", f);
            tap_put(f, r->msg, 1);
            fprintf(f, "\"\n  severity: fail\n  ...\n");
        }
    }
}

int cf_report_tap(const cf_summary *s, const char *path)
{
    return write_file(path, s, write_tap);
}

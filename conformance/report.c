/*
** report.c -- what `kiln conform` tells people and CI systems about a run:
** the per-category table and the largest-ULP table on the terminal, and
** the same as a Markdown report, a JUnit XML file and a TAP 13 stream
** (docs/conformance.md, "Running the suite").
**
** Everything here reads a finished cf_summary; nothing runs tests.  Writers
** return 0 on success and non-zero (with a message on stderr) when the file
** cannot be written.
*/
#include <stdio.h>
#include <string.h>

#include "conform.h"

static size_t count(const cf_summary *s, cf_status st)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_results; i++)
        n += s->results[i].status == st;
    return n;
}

void cf_report_text(const cf_summary *s, FILE *out)
{
    size_t tp = 0, tf = 0, ts = 0;
    double tms = 0;
    fprintf(out, "\n%-22s %8s %8s %8s %9s\n", "category", "passed", "failed",
            "skipped", "time");
    for (size_t i = 0; i < s->n_cats; i++) {
        const cf_cat_row *c = &s->cats[i];
        fprintf(out, "%-22s %8zu %8zu %8zu %8.2fs\n", c->category, c->passed,
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
        for (size_t i = 0; i < s->n_ulps; i++)
            fprintf(out, "%-14s %-6s %10llu %7zu\n", s->ulps[i].op,
                    s->ulps[i].dtype, (unsigned long long)s->ulps[i].ulp,
                    s->ulps[i].tests);
    }
}

/* Markdown table cells: no newlines, '|' escaped. */
static void md_cell(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', f);
        else
            fputc(*s, f);
    }
}

int cf_report_markdown(const cf_summary *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    size_t np = count(s, CF_PASS), nf = count(s, CF_FAIL),
           ns = count(s, CF_SKIP);
    fprintf(f, "# Kiln conformance report\n\n");
    fprintf(f, "- Result: **%s**: %zu passed, %zu failed, %zu skipped "
            "(%zu tests)\n", nf ? "FAIL" : "PASS", np, nf, ns, s->n_results);
    fprintf(f, "- Backend: `%s`%s", s->backend,
            s->backend_note && *s->backend_note ? " (" : "");
    if (s->backend_note && *s->backend_note) {
        md_cell(f, s->backend_note);
        fputc(')', f);
    }
    fprintf(f, "\n- Kiln %s; vectors: `%s` (suite version %s); shard %s\n",
            kiln_version(NULL, NULL, NULL), s->vectors_dir,
            s->suite_version ? s->suite_version : "?", s->shard);
    fprintf(f, "- Wall time: %.2f s\n\n", s->wall_s);
    fprintf(f, "## Categories\n\n| category | passed | failed | skipped | "
            "time (s) |\n|---|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < s->n_cats; i++)
        fprintf(f, "| %s | %zu | %zu | %zu | %.2f |\n", s->cats[i].category,
                s->cats[i].passed, s->cats[i].failed, s->cats[i].skipped,
                s->cats[i].ms / 1000.0);
    if (s->n_ulps) {
        fprintf(f, "\n## Largest ULP error observed per op and dtype\n\n"
                "| op | dtype | max ulp | tests |\n|---|---|---:|---:|\n");
        for (size_t i = 0; i < s->n_ulps; i++)
            fprintf(f, "| %s | %s | %llu | %zu |\n", s->ulps[i].op,
                    s->ulps[i].dtype, (unsigned long long)s->ulps[i].ulp,
                    s->ulps[i].tests);
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
            fprintf(f, "| `%s` | ", r->id);
            md_cell(f, r->test->comment);
            fputs(" | ", f);
            md_cell(f, r->msg);
            fputs(" |\n", f);
        }
    }
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

/* XML text: escape markup, drop control characters XML 1.0 forbids. */
static void xml_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if (c >= 0x20 || c == '\n' || c == '\t')
                fputc(c, f);
        }
    }
}

int cf_report_junit(const cf_summary *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites name=\"kiln-conformance\" tests=\"%zu\" "
            "failures=\"%zu\" skipped=\"%zu\" time=\"%.3f\">\n", s->n_results,
            count(s, CF_FAIL), count(s, CF_SKIP), s->wall_s);
    for (size_t c = 0; c < s->n_cats; c++) {
        const cf_cat_row *cr = &s->cats[c];
        fprintf(f, " <testsuite name=\"%s\" tests=\"%zu\" failures=\"%zu\" "
                "errors=\"0\" skipped=\"%zu\" time=\"%.3f\">\n", cr->category,
                cr->passed + cr->failed + cr->skipped, cr->failed, cr->skipped,
                cr->ms / 1000.0);
        fprintf(f, "  <properties><property name=\"backend\" value=\"");
        xml_text(f, s->backend);
        fprintf(f, "\"/></properties>\n");
        for (size_t i = 0; i < s->n_results; i++) {
            const cf_result *r = &s->results[i];
            if (strcmp(r->test->category, cr->category) != 0)
                continue;
            fprintf(f, "  <testcase classname=\"%s\" name=\"", cr->category);
            xml_text(f, r->id);
            fprintf(f, ": ");
            xml_text(f, r->test->comment);
            fprintf(f, "\" time=\"%.4f\"", r->ms / 1000.0);
            if (r->status == CF_PASS) {
                fprintf(f, "/>\n");
                continue;
            }
            fprintf(f, ">\n   <%s message=\"",
                    r->status == CF_FAIL ? "failure" : "skipped");
            xml_text(f, r->msg);
            if (r->status == CF_FAIL) {
                fprintf(f, "\">");
                xml_text(f, r->msg);
                fprintf(f, "</failure>\n");
            } else {
                fprintf(f, "\"/>\n");
            }
            fprintf(f, "  </testcase>\n");
        }
        fprintf(f, " </testsuite>\n");
    }
    fprintf(f, "</testsuites>\n");
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

/* TAP descriptions and directives: '#' starts a directive, so escape it. */
static void tap_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '#')
            fputs("\\#", f);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', f);
        else
            fputc(*s, f);
    }
}

int cf_report_tap(const cf_summary *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    fprintf(f, "TAP version 13\n1..%zu\n", s->n_results);
    for (size_t i = 0; i < s->n_results; i++) {
        const cf_result *r = &s->results[i];
        fprintf(f, "%s %zu - %s ", r->status == CF_FAIL ? "not ok" : "ok",
                i + 1, r->id);
        tap_text(f, r->test->comment);
        if (r->status == CF_SKIP) {
            fputs(" # SKIP ", f);
            tap_text(f, r->msg);
        }
        fputc('\n', f);
        if (r->status == CF_FAIL) {
            fputs("  ---\n  message: \"", f);
            for (const char *p = r->msg; p && *p; p++) {
                if (*p == '"' || *p == '\\')
                    fputc('\\', f);
                if (*p == '\n')
                    fputs("\\n", f);
                else
                    fputc(*p, f);
            }
            fprintf(f, "\"\n  severity: fail\n  ...\n");
        }
    }
    if (fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

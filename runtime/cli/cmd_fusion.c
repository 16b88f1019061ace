/*
** cmd_fusion.c -- `kiln fusion`: validate a .kf fusion and print its
** canonical text and structural hash; `--op-table-json` prints the op table
** (runtime/fusion.c, the single source of truth) for the docs check and the
** vector generator.  docs/fusion-format.md documents both.
**
** Exit status: 0 valid, 1 invalid fusion or unreadable file (message on
** stderr as FILE:LINE:COL: message), 2 usage error.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "cli/cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kiln fusion [--hash-only] FILE.kf\n"
            "       kiln fusion --op-table-json\n"
            "\n"
            "Validate a fusion in the .kf text format (docs/fusion-format.md).\n"
            "FILE may be \"-\" for standard input.  On success the canonical\n"
            "text is printed, then a line `hash 0x<16 hex digits>` with the\n"
            "structural hash.\n"
            "\n"
            "options:\n"
            "  --hash-only      print only the hash, as 0x<16 hex digits>\n"
            "  --op-table-json  print the op table (name, value, arity, kind,\n"
            "                   accepted dtypes, result, reduce) and the dtype\n"
            "                   table (name, value, size, float format) as\n"
            "                   JSON and exit\n"
            "  -h, --help       this text\n"
            "\n"
            "An operand after \"--\" is a file even if it starts with '-'.\n"
            "\n"
            "exit status: 0 valid, 1 invalid fusion (FILE:LINE:COL: message on\n"
            "stderr) or unreadable file, 2 usage error\n");
}

/* The result column of the op table: a dtype, "same" or "given". */
static const char *result_text(int result)
{
    if (result == KILN_RESULT_SAME)
        return "same";
    if (result == KILN_RESULT_GIVEN)
        return "given";
    const char *n = kiln_dtype_name((kiln_dtype)result);
    return n ? n : "?";
}

static const char *reduce_text(kiln_reduce r)
{
    switch (r) {
    case KILN_REDUCE_SUM: return "sum";
    case KILN_REDUCE_MAX: return "max";
    case KILN_REDUCE_MIN: return "min";
    default: return "none";
    }
}

/* The op table (runtime/fusion.c) and the dtype table (kiln.h), every
** column: what testgen/check_tables.py and `make docs-check` compare
** their copies with. */
static int op_table_json(void)
{
    printf("{\n \"ops\": [\n");
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        const kiln_op_desc *r = kiln__op_desc((kiln_op)op);
        printf("  {\"name\": \"%s\", \"value\": %d, \"arity\": %d, "
               "\"kind\": \"%c\", \"dtypes\": [",
               r->name, (int)r->op, r->arity, r->kind);
        int first = 1;
        for (int t = 0; t < KILN_DTYPE_COUNT; t++)
            if (r->accepts & (1u << t)) {
                printf("%s\"%s\"", first ? "" : ", ",
                       kiln_dtype_name((kiln_dtype)t));
                first = 0;
            }
        printf("], \"result\": \"%s\", \"reduce\": \"%s\"}%s\n",
               result_text(r->result), reduce_text(r->reduce),
               op + 1 < KILN_OP_COUNT ? "," : "");
    }
    static const struct {
        const char *name;
        int value, size, ebits, mbits;
    } dt[] = {
#define KILN_X_(id, value, text, size, ebits, mbits)                           \
    {text, value, size, ebits, mbits},
        KILN_DTYPE_TABLE(KILN_X_)
#undef KILN_X_
    };
    printf(" ],\n \"dtypes\": [\n");
    for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++) {
        printf("  {\"name\": \"%s\", \"value\": %d, \"size\": %d, \"format\": ",
               dt[i].name, dt[i].value, dt[i].size);
        if (dt[i].ebits == 0)
            printf("null");
        else
            printf("{\"exponentBits\": %d, \"fractionBits\": %d}", dt[i].ebits,
                   dt[i].mbits);
        printf("}%s\n", i + 1 < sizeof dt / sizeof dt[0] ? "," : "");
    }
    printf(" ]\n}\n");
    return 0;
}

int kiln_cmd_fusion(int argc, char **argv)
{
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    static const char cmd[] = "kiln fusion";
    static const cli_opt opts[] = {{"--hash-only", CLI_FLAG},
                                   {"--op-table-json", CLI_FLAG},
                                   {NULL, CLI_FLAG}};
    int hash_only = 0, table = 0;
    const char *path = NULL, *v;
    cli_args args;
    cli_args_init(&args, cmd, opts, argc, argv);
    int opt;
    while ((opt = cli_next(&args, &v)) != CLI_DONE) {
        if (opt == CLI_USAGE)
            return 2;
        if (opt == 0)
            hash_only = 1;
        else if (opt == 1)
            table = 1;
        else if (path == NULL)
            path = v;
        else
            return cli_usage(cmd, "more than one FILE given ('%s')", v);
    }
    if (table) {
        if (path != NULL || hash_only)
            return cli_usage(cmd, "--op-table-json takes no other argument");
        return op_table_json();
    }
    if (path == NULL)
        return cli_usage(cmd, "missing FILE (use - for stdin)");
    const char *shown = strcmp(path, "-") == 0 ? "<stdin>" : path;
    size_t len = 0;
    char err[4400];
    char *text = cli_read_file(path, &len, err, sizeof err);
    if (text == NULL) {
        fprintf(stderr, "kiln fusion: %s\n", err);
        return 1;
    }
    kiln_fusion *f = NULL;
    kiln_status s = kiln_fusion_parse(text, len, &f);
    free(text);
    if (s != KILN_OK) {
        fprintf(stderr, "%s:%s\n", shown, kiln_last_error());
        return 1;
    }
    uint64_t h = 0;
    char *canon = NULL;
    if ((s = kiln_fusion_hash(f, &h)) != KILN_OK ||
        (!hash_only && (s = kiln_fusion_print(f, &canon)) != KILN_OK)) {
        fprintf(stderr, "kiln fusion: %s: %s\n", shown, kiln_last_error());
        kiln_fusion_destroy(f);
        return 1;
    }
    if (hash_only)
        printf("0x%016llx\n", (unsigned long long)h);
    else
        printf("%shash 0x%016llx\n", canon, (unsigned long long)h);
    kiln_free(canon);
    kiln_fusion_destroy(f);
    return 0;
}

/*
** cmd_options.c -- `kiln options`: print the effective canonical options
** (docs/options.md).
**
** The command behaves like one execute call with an empty fusion: it reads
** KILN_ENABLE / KILN_DISABLE / KILN_DUMP from its own environment (the
** context snapshot), then applies every --enable / --disable item in
** command-line order as an execute element (the i-th --enable is
** "execute enable[i]").  Output contract: stdout holds exactly the canonical
** text (or JSON) plus "\n" on success and nothing on failure; messages go to
** stderr.  Exit 0 ok, 1 invalid options, 2 usage error.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"
#include "cli/cli.h"

static void help(FILE *out)
{
    fputs(
"usage: kiln options [--enable ITEM]... [--disable ITEM]...\n"
"                    [--level all|plan|kernel|none] [--json]\n"
"       kiln options --catalogue-json\n"
"\n"
"Print the effective options of one execute call, in canonical text.\n"
"\n"
"The environment variables KILN_ENABLE, KILN_DISABLE and KILN_DUMP are read\n"
"first (comma-separated items, e.g. KILN_ENABLE='fast_math,warn_register_spill(64)').\n"
"Then every --enable/--disable ITEM is applied in command-line order as an\n"
"execute element: the i-th --enable is \"execute enable[i]\" (0-based).  An\n"
"element is exactly one item, NAME or NAME(ARG,...); items only switch\n"
"options on and replace earlier arguments.\n"
"\n"
"options:\n"
"  --enable ITEM, --enable=ITEM    apply one enable item (repeatable)\n"
"  --disable ITEM, --disable=ITEM  apply one disable item (repeatable)\n"
"  --level LEVEL, --level=LEVEL    print only options of cache level LEVEL:\n"
"                                  all (default), plan, kernel or none\n"
"  --json                          print one JSON object instead: every\n"
"                                  effective option with its set, level and\n"
"                                  arguments, and the canonical text and hash\n"
"                                  of each level (so --level other than all\n"
"                                  cannot be combined with it)\n"
"  --catalogue-json                print the option catalogue as JSON (name,\n"
"                                  set, arg, level, description, vocabulary,\n"
"                                  default, implemented) and exit\n"
"  -h, --help                      show this help\n"
"\n"
"Canonical text: for each non-empty set, in the order enable, disable, dump,\n"
"SET=ITEM,ITEM,...; sets joined by ';'.  Items sorted by name; integers in\n"
"plain decimal; name lists sorted and de-duplicated.  No options: an empty\n"
"line.\n"
"\n"
"exit status: 0 success; 1 invalid options (the message on stderr names the\n"
"source, byte offset, offending token and the valid names; stdout stays\n"
"empty); 2 usage error.\n"
"\n"
"examples:\n"
"  $ KILN_ENABLE=kernel_lineinfo,fast_math kiln options \\\n"
"      --disable 'expr_simplify(fold,cse,fold)' --enable 'warn_register_spill(064)'\n"
"  enable=fast_math,kernel_lineinfo,warn_register_spill(64);disable=expr_simplify(cse,fold)\n"
"  $ KILN_ENABLE=fast_math kiln options --disable fallback --level plan\n"
"  disable=fallback\n"
"  $ kiln options --enable 'fast_math,kernel_debug'     # exit 1\n"
"\n"
"The full contract (grammar, edge cases, catalogue, precedence): docs/options.md.\n",
        out);
}

static void print_catalogue(FILE *out)
{
    static const char *const sets[] = {"enable", "disable", "dump"};
    static const char *const args[] = {"none", "int", "names"};
    static const char *const levels[] = {"plan", "kernel", "none"};
    size_t n = 0;
    const kiln_option_desc *c = kiln_option_catalogue(&n);
    fprintf(out, "{\"version\":");
    cli_json_string(out, kiln_version(NULL, NULL, NULL));
    fprintf(out, ",\"options\":[");
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s\n {\"name\":", i ? "," : "");
        cli_json_string(out, c[i].name);
        fprintf(out, ",\"set\":\"%s\",\"arg\":\"%s\",\"level\":\"%s\","
                     "\"description\":",
                sets[c[i].set], args[c[i].arg], levels[c[i].level]);
        cli_json_string(out, c[i].description);
        fprintf(out, ",\"vocabulary\":");
        if (c[i].vocabulary == NULL)
            fprintf(out, "null");
        else {
            fprintf(out, "[");
            for (size_t w = 0; c[i].vocabulary[w] != NULL; w++) {
                if (w)
                    fprintf(out, ",");
                cli_json_string(out, c[i].vocabulary[w]);
            }
            fprintf(out, "]");
        }
        if (c[i].arg == KILN_ARG_INT)
            fprintf(out, ",\"default\":%llu",
                    (unsigned long long)c[i].int_default);
        else
            fprintf(out, ",\"default\":null");
        fprintf(out, ",\"implemented\":%s}", c[i].implemented ? "true" : "false");
    }
    fprintf(out, "\n]}\n");
}

/* One --enable/--disable item in command-line order. */
typedef struct cli_item {
    kiln_opt_set set;
    const char *text;
} cli_item;

enum { P_ENABLE, P_DISABLE, P_LEVEL, P_JSON, P_CATALOGUE };
static const cli_opt options_opts[] = {
    [P_ENABLE] = {"--enable", CLI_VALUE},
    [P_DISABLE] = {"--disable", CLI_VALUE},
    [P_LEVEL] = {"--level", CLI_VALUE},
    [P_JSON] = {"--json", CLI_FLAG},
    [P_CATALOGUE] = {"--catalogue-json", CLI_FLAG},
    {NULL, CLI_FLAG},
};

int kiln_cmd_options(int argc, char **argv)
{
    if (kiln_cli_wants_help(argc, argv)) {
        help(stdout);
        return 0;
    }
    cli_item *items = calloc((size_t)argc + 1, sizeof *items);
    if (items == NULL) {
        fprintf(stderr, "kiln options: out of memory\n");
        return 1;
    }
    size_t n_items = 0;
    int json = 0, catalogue = 0, level_given = 0, rc = 2;
    kiln_level level = KILN_LEVEL_ALL;
    cli_args args;
    cli_args_init(&args, "kiln options", options_opts, argc, argv);
    const char *v;
    int opt;
    while ((opt = cli_next(&args, &v)) != CLI_DONE) {
        switch (opt) {
        case CLI_USAGE: goto usage;
        case CLI_POSITIONAL:
            fprintf(stderr, "kiln options: unexpected argument '%s'\n", v);
            goto usage;
        case P_ENABLE:
        case P_DISABLE:
            items[n_items].set = opt == P_ENABLE ? KILN_SET_ENABLE : KILN_SET_DISABLE;
            items[n_items++].text = v;
            break;
        case P_LEVEL:
            if (strcmp(v, "all") == 0)
                level = KILN_LEVEL_ALL;
            else if (strcmp(v, "plan") == 0)
                level = KILN_LEVEL_PLAN;
            else if (strcmp(v, "kernel") == 0)
                level = KILN_LEVEL_KERNEL;
            else if (strcmp(v, "none") == 0)
                level = KILN_LEVEL_NONE;
            else {
                fprintf(stderr, "kiln options: unknown level '%s' (valid: "
                                "all, plan, kernel, none)\n", v);
                goto usage;
            }
            level_given = 1;
            break;
        case P_JSON: json = 1; break;
        case P_CATALOGUE: catalogue = 1; break;
        default: goto usage;
        }
    }
    if (json && level_given && level != KILN_LEVEL_ALL) {
        fprintf(stderr, "kiln options: --json covers every level; it cannot "
                        "be combined with --level\n");
        goto usage;
    }
    if (catalogue && (json || level_given || n_items > 0)) {
        fprintf(stderr, "kiln options: --catalogue-json takes no other "
                        "arguments\n");
        goto usage;
    }
    if (catalogue) {
        print_catalogue(stdout);
        rc = 0;
        goto done;
    }

    rc = 1;
    kiln_options *o = NULL;
    kiln_status st = kiln_options_from_env(getenv("KILN_ENABLE"),
                                           getenv("KILN_DISABLE"),
                                           getenv("KILN_DUMP"), &o);
    size_t counts[2] = {0, 0};
    for (size_t k = 0; st == KILN_OK && k < n_items; k++)
        st = kiln_options_apply(o, items[k].set, items[k].text,
                                counts[items[k].set]++);
    char *text = NULL;
    if (st == KILN_OK && json)
        st = kiln_options_json(o, &text);
    else if (st == KILN_OK) {
        size_t len = 0;
        if (kiln_options_canonical(o, level, NULL, 0, &len) == KILN_ERR_LIMIT &&
            (text = malloc(len + 1)) != NULL)
            st = kiln_options_canonical(o, level, text, len + 1, &len);
        else
            st = KILN_ERR_NO_MEMORY;
    }
    if (st != KILN_OK) {
        fprintf(stderr, "kiln options: %s\n", kiln_last_error());
    } else {
        printf("%s\n", text);
        rc = fflush(stdout) == 0 ? 0 : 1;
    }
    if (json)
        kiln_free(text);
    else
        free(text);
    kiln_options_destroy(o);
    goto done;

usage:
    fprintf(stderr, "usage: kiln options [--enable ITEM]... [--disable ITEM]... "
                    "[--level all|plan|kernel|none] [--json] | "
                    "--catalogue-json  (--help for details)\n");
    rc = 2;
done:
    free(items);
    return rc;
}

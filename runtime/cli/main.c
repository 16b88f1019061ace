/*
** main.c -- entry point of the command-line tool: dispatches to the
** subcommands declared in cli.h.
*/
#include <stdio.h>
#include <string.h>

#include "kiln.h"
#include "cli/cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"options", kiln_cmd_options, "print the effective canonical options"},
    {"fusion", kiln_cmd_fusion, "validate a .kf fusion; print canonical text and hash"},
    {"run", kiln_cmd_run, "execute a .kf fusion on .npy inputs"},
    {"conform", kiln_cmd_conform, "run the conformance suite against a backend"},
    {"bench", kiln_cmd_bench, "benchmarks (overhead, gpu, all)"},
    {"cache", kiln_cmd_cache, "inspect the kernel cache settings and counters"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: kiln COMMAND [ARGS]...\n\n"
                 "Kiln %s: a reference fusion runtime and its conformance suite.\n\n"
                 "commands:\n", kiln_version(NULL, NULL, NULL));
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "  %-9s %s\n", "version", "print the library version");
    fprintf(out, "  %-9s %s\n", "help", "`kiln help COMMAND` is `kiln COMMAND --help`");
    fprintf(out, "\n`kiln COMMAND --help` documents each command.  Options take\n"
                 "their value as --opt VALUE or --opt=VALUE.\n"
                 "Environment: KILN_ENABLE, KILN_DISABLE, KILN_DUMP (docs/options.md).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 && argc >= 3) { /* kiln help COMMAND */
        char *sub[3] = {argv[2], "--help", NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[2], commands[i].name) == 0)
                return commands[i].fn(2, sub);
        if (strcmp(argv[2], "version") != 0) {
            fprintf(stderr, "kiln: unknown command '%s'\n", argv[2]);
            usage(stderr);
            return 2;
        }
        cmd = "version";
        argc = 3;
        argv[2] = "--help";
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        if (argc > 2 && kiln_cli_wants_help(argc - 1, argv + 1)) {
            printf("usage: kiln version\n\nPrint the library version "
                   "(kiln_version()).\n");
            return 0;
        }
        if (argc > 2) {
            fprintf(stderr, "kiln version: unexpected argument '%s' (see "
                            "'kiln version --help')\n", argv[2]);
            return 2;
        }
        printf("kiln %s\n", kiln_version(NULL, NULL, NULL));
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "kiln: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}

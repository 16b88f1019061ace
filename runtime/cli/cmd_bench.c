/* cmd_bench.c -- `kiln bench` (placeholder until its step lands). */
#include <stdio.h>
#include "cli/cli.h"

int kiln_cmd_bench(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kiln bench: not implemented in this build\n");
    return 2;
}

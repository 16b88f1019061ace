/* cmd_run.c -- `kiln run` (placeholder until its step lands). */
#include <stdio.h>
#include "cli/cli.h"

int kiln_cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kiln run: not implemented in this build\n");
    return 2;
}

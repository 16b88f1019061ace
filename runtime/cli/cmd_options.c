/* cmd_options.c -- `kiln options` (placeholder until its step lands). */
#include <stdio.h>
#include "cli/cli.h"

int kiln_cmd_options(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kiln options: not implemented in this build\n");
    return 2;
}

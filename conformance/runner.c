/* runner.c -- `kiln conform` (placeholder until Step 3 lands). */
#include <stdio.h>
#include "cli/cli.h"

int kiln_cmd_conform(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kiln conform: not implemented in this build\n");
    return 2;
}

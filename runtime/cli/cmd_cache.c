/* cmd_cache.c -- `kiln cache` (placeholder until its step lands). */
#include <stdio.h>
#include "cli/cli.h"

int kiln_cmd_cache(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kiln cache: not implemented in this build\n");
    return 2;
}

/* cmd_fusion.c -- `kiln fusion` (placeholder until its step lands). */
#include <stdio.h>
#include "cli/cli.h"

int kiln_cmd_fusion(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kiln fusion: not implemented in this build\n");
    return 2;
}

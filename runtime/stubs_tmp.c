/* stubs_tmp.c -- TEMPORARY weak stubs until other modules land (deleted
** before Step 2 is done). */
#include <stdio.h>

int kiln_bench_gpu(int argc, char **argv);

__attribute__((weak)) int kiln_bench_gpu(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "kiln bench gpu: not built into this binary yet\n");
    return 1;
}

/*
** fuzz_fusion_text.c -- libFuzzer target for the .kf parser (`make fuzz-kf`).
**
** Any input must either fail with KILN_ERR_PARSE (or KILN_ERR_LIMIT /
** KILN_ERR_NO_MEMORY) and a "LINE:COL:" message, or give a finalized fusion
** whose canonical text re-parses to an equal fusion with the same hash and
** prints identically (print -> parse -> print is a fixed point).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kiln_fusion *f = NULL;
    kiln_status s = kiln_fusion_parse((const char *)data, size, &f);
    if (s != KILN_OK) {
        if (f != NULL || (s != KILN_ERR_PARSE && s != KILN_ERR_LIMIT &&
                          s != KILN_ERR_NO_MEMORY))
            abort(); /* failure leaves the output alone, with a parse status */
        return 0;
    }
    char *t1 = NULL, *t2 = NULL;
    kiln_fusion *g = NULL;
    uint64_t h1 = 0, h2 = 0;
    if (kiln_fusion_print(f, &t1) != KILN_OK ||
        kiln_fusion_parse(t1, strlen(t1), &g) != KILN_OK ||
        kiln_fusion_print(g, &t2) != KILN_OK || strcmp(t1, t2) != 0 ||
        kiln_fusion_hash(f, &h1) != KILN_OK ||
        kiln_fusion_hash(g, &h2) != KILN_OK || h1 != h2 ||
        !kiln_fusion_equal(f, g))
        abort(); /* the canonical text must round-trip exactly */
    kiln_free(t1);
    kiln_free(t2);
    kiln_fusion_destroy(g);
    kiln_fusion_destroy(f);
    return 0;
}

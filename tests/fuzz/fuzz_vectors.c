/*
** fuzz_vectors.c -- libFuzzer target for the conformance runner's input
** (`make fuzz-vectors`): a vector file is loaded from the fuzz input
** (cf_file_load_buffer: the JSON loader and the file-level checks), then
** every test goes through cf_test_validate (every
** field the runner reads, every tensor and check decoded, the per-test
** element budget) and, for differential tests, through the input
** generator, which is what the runner does before it needs a backend.
**
** Nothing is executed on a backend: the runtime's own inputs have their
** own targets (`make fuzz`, `make fuzz-kf`), and a backend run per input
** would spend the time in the interpreter instead of in the runner's
** input handling.  The element budget is built smaller here
** (-DCF_BUDGET_ELEMENTS, same code paths) so that inputs declaring large
** tensors do not spend each run filling memory.
**
** Invariants: loading and validating never crash or leak, every message is
** NUL-terminated, and a validated test's cost stays within the budget.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../conformance/conform.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_file f;
    char err[CF_MSG];
    memset(err, 0x55, sizeof err);
    if (cf_file_load_buffer((const char *)data, size, "fuzz", &f, err,
                            sizeof err) != 0) {
        if (memchr(err, '\0', sizeof err) == NULL)
            abort();
        return 0;
    }
    for (size_t i = 0; i < f.n_tests; i++) {
        const cf_test *t = &f.tests[i];
        json_error_t je;
        json_t *j = json_loads(t->text, 0, &je);
        cf_cost cost;
        if (j == NULL)
            abort(); /* the loader wrote it: it must parse back */
        memset(err, 0x55, sizeof err);
        if (cf_test_validate(t->category, j, &cost, err, sizeof err) != 0) {
            if (memchr(err, '\0', sizeof err) == NULL)
                abort();
        } else if (cost.elements > CF_BUDGET_ELEMENTS || cost.executes < 0) {
            abort();
        } else if (strcmp(t->category, "differential") == 0) {
            const json_t *ins = json_object_get(j, "inputs");
            uint64_t state = 1;
            for (size_t k = 0; k < json_array_size(ins); k++) {
                cf_tensor in;
                if (cf_diff_generate(json_array_get(ins, k), "in", &state,
                                     &in, err, sizeof err) != 0)
                    abort(); /* validated inputs generate */
                cf_tensor_free(&in);
            }
        }
        json_decref(j);
    }
    cf_file_free(&f);
    return 0;
}

/*
** main.c -- the Check runner for the unit tests.  Every unit test
** file (tests/unit, *.c) defines `Suite *NAME_suite(void)`; the Makefile generates the list
** (suites.inc).  Check runs in fork mode (unless CK_FORK=no), so one
** crashing case fails alone.  KILN_TEST_FILTER=PREFIX runs only the suites
** whose function name starts with PREFIX (the TSan stage uses "threads").
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KILN_SUITE(fn) Suite *fn(void);
#include "suites.inc"
#undef KILN_SUITE

static const struct {
    const char *name;
    Suite *(*make)(void);
} suites[] = {
#define KILN_SUITE(fn) {#fn, fn},
#include "suites.inc"
#undef KILN_SUITE
};

int main(void)
{
    const char *filter = getenv("KILN_TEST_FILTER");
    SRunner *sr = NULL;
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        if (filter && strncmp(suites[i].name, filter, strlen(filter)) != 0)
            continue;
        if (sr == NULL)
            sr = srunner_create(suites[i].make());
        else
            srunner_add_suite(sr, suites[i].make());
    }
    if (sr == NULL) {
        fprintf(stderr, "unit_tests: no suite matches '%s'\n", filter ? filter : "");
        return 1;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

/*
** tu_skip.h -- visible, counted skips for the unit tests (main.c implements
** them).  A test that cannot run here (no plugin path, no kiln binary, no
** NVRTC, no GPU) never passes silently: it fails when the run requires
** what is missing, else it records a skip with its reason and returns.
** main.c lists every skip and prints their count after Check's summary
** (Check itself counts a test that returned early as passed).
**
** What a run requires is said by the environment: KILN_TEST_ENV_REQUIRED=1
** (make test-unit, test-asan, test-tsan, coverage) for the variables those
** targets set, KILN_TEST_NVRTC_REQUIRED=1 (make nvrtc-check) for NVRTC,
** KILN_TEST_GPU=1 (scripts/gpu_run.sh) for a GPU.
*/
#ifndef KILN_TEST_TU_SKIP_H
#define KILN_TEST_TU_SKIP_H

/* Record a skip of `test` (a function name; a trailing "_fn" is dropped)
** with the reason: printed on stderr and added to the run's skip log. */
void tu_skip(const char *test, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* 1 when `ok`.  Otherwise the test fails when the environment variable
** `required_by` is set to anything but "" or "0", and else the skip is
** recorded and 0 returned (the caller returns). */
int tu_require(int ok, const char *required_by, const char *test,
               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The value of environment variable `name` (set by the make targets that
** run the unit tests); unset or empty: a failure under
** KILN_TEST_ENV_REQUIRED, else a recorded skip and NULL. */
const char *tu_require_env(const char *name, const char *test);

#define TU_SKIP(...) tu_skip(__func__, __VA_ARGS__)
#define TU_REQUIRE(ok, required_by, ...)                                       \
    tu_require((ok), (required_by), __func__, __VA_ARGS__)
#define TU_REQUIRE_ENV(name) tu_require_env((name), __func__)

#endif

/*
** main.c -- the Check runner for the unit tests.  Every unit test
** file (tests/unit, *.c) defines `Suite *NAME_suite(void)`; the Makefile generates the list
** (suites.inc).  Check runs in fork mode (unless CK_FORK=no), so one
** crashing case fails alone.  KILN_TEST_FILTER=PREFIX runs only the suites
** whose function name starts with PREFIX (the TSan stage uses "threads").
**
** Skips (tu_skip.h): a test that cannot run records its reason in a log
** shared by every forked test process (an unlinked temporary file, its
** descriptor in KILN_TEST_SKIP_FD, opened O_APPEND so each line is one
** write); after the run the log is listed and counted, so that a skip is
** never mistaken for a pass.
*/
#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tu_skip.h"

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

/* ------------------------------------------------------------------ skips */

/* The length of test's name without START_TEST's "_fn" suffix. */
static int name_len(const char *test)
{
    size_t n = strlen(test);
    if (n > 3 && strcmp(test + n - 3, "_fn") == 0)
        n -= 3;
    return (int)n;
}

static void vskip(const char *test, const char *fmt, va_list ap)
{
    char why[1024], line[1200];
    vsnprintf(why, sizeof why, fmt, ap);
    int len = snprintf(line, sizeof line, "%.*s: %s\n", name_len(test), test, why);
    if (len < 0)
        return;
    if ((size_t)len >= sizeof line)
        len = (int)sizeof line - 1;
    fprintf(stderr, "SKIP %s", line);
    const char *fd = getenv("KILN_TEST_SKIP_FD");
    if (fd != NULL && fd[0] != '\0' &&
        write(atoi(fd), line, (size_t)len) != (ssize_t)len)
        fprintf(stderr, "unit_tests: cannot record the skip above\n");
}

void tu_skip(const char *test, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vskip(test, fmt, ap);
    va_end(ap);
}

static int required(const char *var)
{
    const char *v = getenv(var);
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

int tu_require(int ok, const char *required_by, const char *test,
               const char *fmt, ...)
{
    if (ok)
        return 1;
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    ck_assert_msg(!required(required_by), "%.*s: %s is set, but %s", name_len(test),
                  test, required_by, why);
    tu_skip(test, "%s", why);
    return 0;
}

const char *tu_require_env(const char *name, const char *test)
{
    const char *v = getenv(name);
    if (tu_require(v != NULL && v[0] != '\0', "KILN_TEST_ENV_REQUIRED", test,
                   "%s is not set (make test-unit sets it)", name))
        return v;
    return NULL;
}

/* An unlinked temporary file for the skip log; -1 when none can be made
** (skips are then only printed). */
static int skip_log_open(void)
{
    char path[] = "/tmp/kiln-unit-skips-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    unlink(path);
    if (fcntl(fd, F_SETFL, O_APPEND) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        close(fd);
        return -1;
    }
    char buf[16];
    snprintf(buf, sizeof buf, "%d", fd);
    setenv("KILN_TEST_SKIP_FD", buf, 1);
    return fd;
}

/* Print the skips of the run and their count. */
static void skip_log_report(int fd)
{
    if (fd < 0) {
        printf("unit_tests: skips were not counted (no temporary file)\n");
        return;
    }
    static char log[1 << 16];
    ssize_t n = pread(fd, log, sizeof log - 1, 0);
    close(fd);
    log[n > 0 ? n : 0] = '\0';
    int count = 0;
    for (const char *p = log; *p; p++)
        count += *p == '\n';
    if (count > 0)
        printf("unit_tests: skipped (each counted as passed above):\n%s", log);
    printf("unit_tests: %d test%s skipped\n", count, count == 1 ? "" : "s");
}

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
    int log = skip_log_open();
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    skip_log_report(log);
    return failed == 0 ? 0 : 1;
}

/*
** gcov_exit.c -- linked only into the coverage build's programs (SAN=cov:
** build/cov/kiln, build/cov/unit_tests and the mutants' kiln), with
** -Wl,--wrap=_exit.  _exit() skips the atexit handlers, and with them gcc's
** counter dump: Check's forked test process leaves through _exit(1) when a
** test fails, so without this the code that reports a failing conformance
** test (conformance/cases.c, what the mutants and tests/cli/
** test_wrong_expectations.py exercise) would run but never be counted.
** The wrapper writes the counters, then leaves as _exit() does.  Never part
** of the library or of a normal build.
*/
void __gcov_dump(void);
void __real__exit(int status) __attribute__((noreturn));
void __wrap__exit(int status) __attribute__((noreturn));

void __wrap__exit(int status)
{
    __gcov_dump();
    __real__exit(status);
}

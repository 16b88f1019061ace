/*
** runner.c -- `kiln conform`: load the vector files, select tests
** (--category, --filter, --shard), run each as a Check loop test in fork
** mode against the chosen backend, and report (docs/conformance.md,
** "Running the suite").
**
** How results travel: Check runs every test in a child process (so a
** crashing backend fails one test), and only pass/fail and a message come
** back through Check.  The rest -- skip reasons, times, ULP statistics --
** each child appends as one JSON line to a results file the parent opened
** (O_APPEND, one write per test).  Progress on a terminal comes from a
** small shared-memory counter the children update.  The parent merges
** Check's results (in run order) with the lines (keyed by test index).
**
** The one file-scope variable, `current`, points at the run being executed:
** Check's loop tests receive only an index, so the tests must find the
** selection somewhere.  It is set once before srunner_run_all and only
** read by the tests.
**
** The parent never touches a device: the backend probe runs in a child, so
** a CUDA driver is never initialised before fork.
*/
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "conform.h"

typedef struct progress { /* shared between the parent and the children */
    long done, failed, in_flight; /* in_flight: index + 1 of a started test */
} progress;

typedef struct run {
    cf_target tg;
    cf_file *files;
    size_t n_files;
    const cf_test **sel;   /* the selected tests, in run order */
    size_t n_sel;
    size_t *cat_pos;       /* position of sel[i] within its category */
    size_t *cat_total;     /* selected tests of sel[i]'s category */
    int chan;              /* results file, O_APPEND */
    progress *prog;
    int tty;
    int serde_pass;        /* --serde-record: 1, --serde-check: 2, else 0 */
    json_t *serde_records; /* pass 2: pass 1's records by test id */
} run;

static const run *current;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_id(const cf_test *t, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%d", t->category, t->tcid);
}

/* ------------------------------------------------------- the Check test */

static void progress_start(const run *r, size_t i)
{
    progress *p = r->prog;
    if (p->in_flight) { /* the previous test never finished: crash/timeout */
        p->done++;
        p->failed++;
    }
    p->in_flight = (long)i + 1;
}

static void progress_end(const run *r, size_t i, int failed)
{
    progress *p = r->prog;
    p->done++;
    p->failed += failed;
    p->in_flight = 0;
    if (r->tty)
        fprintf(stderr, "\r\033[K[%s] %zu/%zu  failures: %ld",
                r->sel[i]->category, r->cat_pos[i] + 1, r->cat_total[i],
                p->failed);
}

/* One JSON line per finished test into the results file. */
static void channel_write(const run *r, size_t i, const cf_outcome *o,
                          const cf_serde *sd, double t0, double t1)
{
    static const char *const st[] = {"pass", "fail", "skip"};
    json_t *ulp = json_array();
    for (size_t k = 0; k < o->n_ulp; k++)
        json_array_append_new(ulp, json_pack("[ssI]", o->ulp[k].op,
                                             o->ulp[k].dtype,
                                             (json_int_t)o->ulp[k].ulp));
    json_t *line = json_pack("{sIsssfsfsfsssbso}", "i", (json_int_t)i, "s",
                             st[o->status], "ms", t1 - t0, "t0", t0, "t1",
                             t1, "msg", o->msg, "acc", o->acceptable, "ulp",
                             ulp);
    if (line != NULL && sd != NULL)
        json_object_set_new(line, "serde", cf_serde_json(sd));
    char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
    if (text) {
        size_t n = strlen(text);
        text[n] = '\n'; /* json_dumps' NUL becomes the line end */
        ssize_t w = write(r->chan, text, n + 1);
        (void)w; /* a lost line only loses statistics; Check has the verdict */
        free(text);
    }
    json_decref(line);
}

START_TEST(conform_test)
{
    const run *r = current;
    const cf_test *t = r->sel[_i];
    char id[96];
    cf_outcome o;
    test_id(t, id, sizeof id);
    progress_start(r, (size_t)_i);
    double t0 = now_ms();
    cf_serde sd;
    memset(&sd, 0, sizeof sd);
    sd.pass = r->serde_pass;
    cf_target tg = r->tg;
    tg.serde = r->serde_pass ? &sd : NULL;
    cf_run_test(&tg, t, &o);
    if (r->serde_pass)
        cf_serde_judge(r->serde_records, id, &sd, &o);
    channel_write(r, (size_t)_i, &o, r->serde_pass ? &sd : NULL, t0, now_ms());
    progress_end(r, (size_t)_i, o.status == CF_FAIL);
    if (o.status == CF_FAIL)
        ck_abort_msg("%s: %s", id, o.msg);
}
END_TEST

/* ---------------------------------------------------------------- probing */

/* kiln_backend_probe in a child process (a CUDA driver must not be
** initialised in the parent, whose children would inherit it unusable).
** Returns the status; why receives the reason. */
static kiln_status probe(const char *backend, char *why, size_t cap)
{
    int fd[2];
    why[0] = '\0';
    if (pipe(fd) != 0) {
        snprintf(why, cap, "pipe: %s", strerror(errno));
        return KILN_ERR_IO;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        snprintf(why, cap, "fork: %s", strerror(errno));
        return KILN_ERR_IO;
    }
    if (pid == 0) {
        char msg[512];
        close(fd[0]);
        kiln_status st = kiln_backend_probe(backend, msg, sizeof msg);
        int code = (int)st;
        ssize_t w = write(fd[1], &code, sizeof code);
        w += write(fd[1], msg, strnlen(msg, sizeof msg - 1));
        _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    int code = -1;
    size_t got = 0;
    char buf[520];
    ssize_t n;
    while ((n = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    close(fd[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (got < sizeof code) {
        snprintf(why, cap, "the probe of '%s' crashed (status %d)", backend, ws);
        return KILN_ERR_BACKEND_UNAVAILABLE;
    }
    memcpy(&code, buf, sizeof code);
    buf[got] = '\0';
    snprintf(why, cap, "%.500s", buf + sizeof code);
    return (kiln_status)code;
}

/* ----------------------------------------------------------------- usage */

static void usage(FILE *out)
{
    fprintf(out,
"usage: kiln conform [OPTIONS]\n"
"\n"
"Run the conformance suite (conformance/vectors/*.json) against a backend.\n"
"Every vector test is a Check test run in its own process (fork mode), so a\n"
"crashing backend fails one test.  Exit status: 0 when every test that ran\n"
"passed (skips print their reason), 1 when a test failed or the vectors\n"
"could not be read, 2 on a usage error.\n"
"\n"
"options:\n"
"  --backend NAME     ref, cuda, nvrtc, auto (default: cuda when usable,\n"
"                     else ref), or a backend plugin: a path, or a file\n"
"                     name ending in .so (in the current directory)\n"
"  --device N         device ordinal for device backends (default 0)\n"
"  --vectors DIR      vector directory (default: conformance/vectors)\n"
"  --category NAME    run only this category (repeatable): options.parse,\n"
"                     options.precedence, cache.isolation, numerics,\n"
"                     differential\n"
"  --filter REGEX     run tests whose id (category/tcId) or comment matches\n"
"                     the POSIX extended REGEX\n"
"  --exclude REGEX    leave out tests whose id or comment matches REGEX\n"
"  --shard I/N        run the I-th of N deterministic shares (1 <= I <= N):\n"
"                     test k of the selection (suite order) runs in shard\n"
"                     (k mod N) + 1\n"
"  --list             print the selected test ids and exit\n"
"  --tap FILE         write TAP version 13\n"
"  --junit FILE       write JUnit XML\n"
"  --report FILE.md   write a Markdown report\n"
"  --timeout SECONDS  per-test time limit (default 60; fork mode only)\n"
"  --serde            run the selection twice, in two processes, on one fresh\n"
"                     kernel database (enable=kernel_db): the second run must\n"
"                     load every kernel the first compiled and reproduce its\n"
"                     outputs bit for bit.  Needs a backend that persists\n"
"                     kernels (auto: cuda when usable, else nvrtc)\n"
"  --serde-record FILE, --serde-check FILE\n"
"                     the two passes of --serde (internal: run by --serde)\n"
"  -h, --help         this text\n"
"\n"
"Options take their value as --opt VALUE or --opt=VALUE.  The --tap,\n"
"--junit and --report files are checked before any test runs (a path that\n"
"cannot be written is a usage error), and each is replaced in one step\n"
"when the run ends (written to a temporary file in the same directory,\n"
"then renamed), so concurrent runs never mix their reports.\n"
"\n"
"Environment: CK_FORK=no runs every test in this process (faster on a GPU,\n"
"but a crash ends the run); there the runner holds one context of the\n"
"backend for the whole run, unless KILN_CONFORM_KEEPALIVE=0.\n"
"KILN_ENABLE/KILN_DISABLE/KILN_DUMP do not affect the suite: each test\n"
"states its own environment.\n");
}

/* ------------------------------------------------------------ selection */

static int cat_rank(const char *c)
{
    for (int i = 0; cf_categories[i]; i++)
        if (strcmp(cf_categories[i], c) == 0)
            return i;
    return 1000;
}

static int cmp_files(const void *a, const void *b)
{
    const cf_file *x = a, *y = b;
    int ra = cat_rank(x->category), rb = cat_rank(y->category);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return strcmp(x->category, y->category);
}

/* Load every *.json of dir (sorted by suite order).  Non-zero + message on
** stderr on failure. */
static int load_dir(const char *dir, run *r)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "kiln conform: cannot open vector directory '%s': %s\n",
                dir, strerror(errno));
        return 1;
    }
    struct dirent *e;
    char **names = NULL;
    size_t n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char **nn = realloc(names, (n + 1) * sizeof *names);
        if (nn == NULL)
            break;
        names = nn;
        names[n] = malloc(strlen(dir) + len + 2);
        if (names[n] == NULL)
            break;
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    r->files = calloc(n + 1, sizeof *r->files);
    int rc = r->files == NULL;
    for (size_t i = 0; i < n && !rc; i++) {
        char err[CF_MSG];
        if (cf_file_load(names[i], &r->files[r->n_files], err, sizeof err)) {
            char esc[4 * CF_MSG];
            cf_text_escape(err, esc, sizeof esc);
            fprintf(stderr, "kiln conform: %s\n", esc);
            rc = 1;
        } else {
            r->n_files++;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc)
        return 1;
    if (r->n_files == 0) {
        fprintf(stderr, "kiln conform: no *.json vector files in '%s'\n", dir);
        return 1;
    }
#ifdef __GLIBC__
    /* The JSON trees are gone (the tests live on as packed text); hand their
    ** pages back so each fork copies a small process. */
    malloc_trim(0);
#endif
    if (r->n_files > 0)
        qsort(r->files, r->n_files, sizeof *r->files, cmp_files);
    for (size_t i = 1; i < r->n_files; i++)
        if (strcmp(r->files[i].category, r->files[i - 1].category) == 0) {
            char esc[400];
            cf_text_escape(r->files[i].category, esc, sizeof esc);
            fprintf(stderr, "kiln conform: %s and %s both hold category '%s'\n",
                    r->files[i - 1].path, r->files[i].path, esc);
            return 1;
        }
    return 0;
}

/* Default vector directory: ./conformance/vectors, else next to the
** binary (BUILD/kiln -> BUILD/../conformance/vectors). */
static const char *default_vectors(char *buf, size_t cap)
{
    DIR *d = opendir("conformance/vectors");
    if (d) {
        closedir(d);
        return "conformance/vectors";
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (int up = 0; up < 3; up++) {
            char *slash = strrchr(exe, '/');
            if (slash == NULL)
                break;
            *slash = '\0';
            snprintf(buf, cap, "%s/conformance/vectors", exe);
            if ((d = opendir(buf)) != NULL) {
                closedir(d);
                return buf;
            }
        }
    }
    return "conformance/vectors";
}

/* --------------------------------------------------------------- results */

/* The whole results file (malloc'd; NULL when empty), *got its length. */
static char *read_channel(const run *r, size_t *got)
{
    off_t size = lseek(r->chan, 0, SEEK_END);
    char *text = size > 0 ? malloc((size_t)size + 1) : NULL;
    *got = 0;
    while (text && *got < (size_t)size) {
        ssize_t n = pread(r->chan, text + *got, (size_t)size - *got, (off_t)*got);
        if (n <= 0)
            break;
        *got += (size_t)n;
    }
    return text;
}

/* Read the children's JSON lines back and merge them with Check's
** verdicts (results[k] is the k-th test run). */
static void collect(const run *r, SRunner *sr, cf_result *res,
                    cf_ulp_row **ulps, size_t *n_ulps)
{
    for (size_t i = 0; i < r->n_sel; i++) {
        res[i].test = r->sel[i];
        test_id(r->sel[i], res[i].id, sizeof res[i].id);
        res[i].status = CF_PASS;
    }
    /* The results file: one line per finished test. */
    size_t got = 0;
    char *text = read_channel(r, &got);
    int *seen = calloc(r->n_sel + 1, sizeof *seen);
    for (char *p = text, *e; text && seen && p < text + got; p = e + 1) {
        e = memchr(p, '\n', (size_t)(text + got - p));
        if (e == NULL)
            break;
        *e = '\0';
        json_t *j = json_loads(p, 0, NULL);
        json_t *ulp = NULL;
        json_int_t i = -1, acc = 0;
        const char *s = NULL, *msg = NULL;
        double ms = 0, t0 = 0, t1 = 0;
        if (j && json_unpack(j, "{sIsssFsFsFsssbso}", "i", &i, "s", &s, "ms",
                             &ms, "t0", &t0, "t1", &t1, "msg", &msg, "acc",
                             &acc, "ulp", &ulp) == 0 &&
            i >= 0 && (size_t)i < r->n_sel) {
            cf_result *rs = &res[i];
            seen[i] = 1;
            rs->ms = ms;
            rs->t0 = t0;
            rs->t1 = t1;
            rs->acceptable = (int)acc;
            rs->status = strcmp(s, "skip") == 0   ? CF_SKIP
                         : strcmp(s, "fail") == 0 ? CF_FAIL
                                                  : CF_PASS;
            if (rs->status != CF_PASS)
                rs->msg = strdup(msg);
            for (size_t k = 0; k < json_array_size(ulp); k++) {
                const char *op = NULL, *dt = NULL;
                json_int_t u;
                if (json_unpack(json_array_get(ulp, k), "[ssI]", &op, &dt, &u))
                    continue;
                size_t m = 0;
                while (m < *n_ulps && (strcmp((*ulps)[m].op, op) != 0 ||
                                       strcmp((*ulps)[m].dtype, dt) != 0))
                    m++;
                if (m == *n_ulps) {
                    cf_ulp_row *nu = realloc(*ulps, (m + 1) * sizeof **ulps);
                    if (nu == NULL)
                        continue;
                    *ulps = nu;
                    memset(&nu[m], 0, sizeof nu[m]);
                    snprintf(nu[m].op, sizeof nu[m].op, "%s", op);
                    snprintf(nu[m].dtype, sizeof nu[m].dtype, "%s", dt);
                    (*n_ulps)++;
                }
                if ((uint64_t)u > (*ulps)[m].ulp)
                    (*ulps)[m].ulp = (uint64_t)u;
                (*ulps)[m].tests++;
            }
        }
        json_decref(j);
    }
    /* Check's verdicts are authoritative: a crash or timeout leaves no
    ** line, only Check's message ("Received signal 11", "Test timeout"). */
    TestResult **tr = srunner_results(sr);
    size_t ntr = (size_t)srunner_ntests_run(sr);
    for (size_t k = 0; tr && k < ntr && k < r->n_sel; k++) {
        int rt = tr_rtype(tr[k]);
        cf_result *rs = &res[k];
        if (rt == CK_PASS) {
            if (rs->status == CF_FAIL) { /* cannot happen; be explicit */
                free(rs->msg);
                rs->msg = NULL;
                rs->status = CF_PASS;
            }
            continue;
        }
        if (rs->status != CF_FAIL || rs->msg == NULL || !seen[k]) {
            char m[CF_MSG];
            snprintf(m, sizeof m, "%s%s", rt == CK_ERROR ? "error: " : "",
                     tr_msg(tr[k]) ? tr_msg(tr[k]) : "failed");
            free(rs->msg);
            rs->msg = strdup(m);
        }
        rs->status = CF_FAIL;
    }
    free(tr);
    free(seen);
    free(text);
}

static int cmp_ulp(const void *a, const void *b)
{
    const cf_ulp_row *x = a, *y = b;
    int c = strcmp(x->op, y->op);
    return c ? c : strcmp(x->dtype, y->dtype);
}

/* ------------------------------------------------------------------ main */

/* regcomp with a usage message on failure (non-zero). */
static int compile_re(regex_t *re, const char *pattern, const char *flag)
{
    int e = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
    if (e != 0) {
        char m[256];
        regerror(e, re, m, sizeof m);
        fprintf(stderr, "kiln conform: %s '%s': %s\n", flag, pattern, m);
        return 1;
    }
    return 0;
}

static int parse_shard(const char *s, long *i, long *n)
{
    char *e;
    *i = strtol(s, &e, 10);
    if (e == s || *e != '/')
        return 1;
    const char *t = e + 1;
    *n = strtol(t, &e, 10);
    return e == t || *e != '\0' || *n < 1 || *i < 1 || *i > *n;
}

enum {
    O_BACKEND, O_DEVICE, O_VECTORS, O_CATEGORY, O_FILTER, O_EXCLUDE, O_SHARD,
    O_LIST, O_TAP, O_JUNIT, O_REPORT, O_TIMEOUT, O_SERDE, O_SERDE_RECORD,
    O_SERDE_CHECK
};
static const cli_opt conform_opts[] = {
    [O_BACKEND] = {"--backend", CLI_VALUE},
    [O_DEVICE] = {"--device", CLI_VALUE},
    [O_VECTORS] = {"--vectors", CLI_VALUE},
    [O_CATEGORY] = {"--category", CLI_VALUE},
    [O_FILTER] = {"--filter", CLI_VALUE},
    [O_EXCLUDE] = {"--exclude", CLI_VALUE},
    [O_SHARD] = {"--shard", CLI_VALUE},
    [O_LIST] = {"--list", CLI_FLAG},
    [O_TAP] = {"--tap", CLI_VALUE},
    [O_JUNIT] = {"--junit", CLI_VALUE},
    [O_REPORT] = {"--report", CLI_VALUE},
    [O_TIMEOUT] = {"--timeout", CLI_VALUE},
    [O_SERDE] = {"--serde", CLI_FLAG},
    [O_SERDE_RECORD] = {"--serde-record", CLI_VALUE},
    [O_SERDE_CHECK] = {"--serde-check", CLI_VALUE},
    {NULL, CLI_FLAG},
};

/* --serde-record: pass 1's record file from the results lines, and the
** run-level check that kernels were kept at all.  Non-zero on failure. */
static int serde_record_write(const run *r, const cf_result *res, const char *path)
{
    json_t **lines = calloc(r->n_sel + 1, sizeof *lines);
    size_t got = 0;
    char *text = read_channel(r, &got);
    for (char *p = text, *e; text && lines && p < text + got; p = e + 1) {
        if ((e = memchr(p, '\n', (size_t)(text + got - p))) == NULL)
            break;
        *e = '\0';
        json_t *j = json_loads(p, 0, NULL);
        json_int_t i = -1;
        json_t *sd = NULL;
        if (j && json_unpack(j, "{sIso}", "i", &i, "serde", &sd) == 0 && i >= 0 &&
            (size_t)i < r->n_sel && lines[i] == NULL)
            lines[i] = json_incref(sd);
        json_decref(j);
    }
    uint64_t compiles = 0, kept = 0;
    int rc = lines == NULL ||
             cf_serde_write(path, res, (const json_t *const *)lines, r->n_sel,
                            &compiles, &kept) != 0;
    if (!rc && compiles > 0 && kept == 0) {
        printf("kiln conform: --serde pass 1: %llu kernels were compiled and none was "
               "kept in the kernel database (backend %s cannot persist kernels?)\n",
               (unsigned long long)compiles, r->tg.backend);
        rc = 1;
    }
    for (size_t i = 0; lines && i < r->n_sel; i++)
        json_decref(lines[i]);
    free(lines);
    free(text);
    return rc;
}

/* --serde: choose the backend (it must persist kernels), then run the two
** passes (serde.c). */
static int serde_run(const char *backend, long device, const char *vectors,
                     const char **cats, size_t n_cats, const char *filter,
                     const char *exclude, const char *shard, double timeout,
                     const char *report, const char *junit, const char *tap)
{
    char why[512] = "", why2[512] = "";
    const char *chosen = backend;
    if (strcmp(backend, "auto") == 0) {
        if (probe("cuda", why, sizeof why) == KILN_OK)
            chosen = "cuda";
        else if (probe("nvrtc", why2, sizeof why2) == KILN_OK)
            chosen = "nvrtc";
        else {
            fprintf(stderr, "kiln conform: --serde needs a backend that compiles "
                            "and persists kernels; neither cuda (%s) nor nvrtc (%s) "
                            "is usable here\n", why, why2);
            return 1;
        }
    } else if (strcmp(backend, "ref") == 0) {
        return cli_usage("kiln conform", "--serde needs a backend that compiles "
                         "and persists kernels (cuda, nvrtc or a plugin); ref "
                         "compiles nothing");
    } else if (probe(backend, why, sizeof why) != KILN_OK) {
        fprintf(stderr, "kiln conform: --serde: backend '%s' is not usable: %s\n",
                backend, why);
        return 1;
    }
    cf_serde_run a = {chosen, device, vectors, cats, n_cats, filter, exclude, shard,
                      timeout, report, junit, tap};
    return cf_serde_drive(&a);
}

int kiln_cmd_conform(int argc, char **argv)
{
    static const char cmd[] = "kiln conform";
    const char *backend = "auto", *vectors = NULL, *filter = NULL;
    const char *exclude = NULL;
    const char *tap = NULL, *junit = NULL, *report = NULL, *shard = "1/1";
    const char **cats = calloc((size_t)argc + 1, sizeof *cats);
    size_t n_cats = 0;
    long device = 0, shard_i = 1, shard_n = 1;
    double timeout = 60;
    int list = 0, rc = 2, serde = 0;
    const char *serde_record = NULL, *serde_check = NULL;
    char vbuf[4200];
    if (cats == NULL)
        return 2;
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        free(cats);
        return 0;
    }
    cli_args args;
    cli_args_init(&args, cmd, conform_opts, argc, argv);
    const char *v;
    int opt;
    while ((opt = cli_next(&args, &v)) != CLI_DONE) {
        switch (opt) {
        case CLI_USAGE: goto out;
        case CLI_POSITIONAL:
            cli_usage(cmd, "unexpected argument '%s'", v);
            goto out;
        case O_BACKEND: backend = v; break;
        case O_DEVICE:
            if (cli_long(cmd, "--device", v, 0, 1023, &device) != 0)
                goto out;
            break;
        case O_VECTORS: vectors = v; break;
        case O_CATEGORY: cats[n_cats++] = v; break;
        case O_FILTER: filter = v; break;
        case O_EXCLUDE: exclude = v; break;
        case O_SHARD:
            shard = v;
            if (parse_shard(shard, &shard_i, &shard_n)) {
                cli_usage(cmd, "--shard needs I/N with 1 <= I <= N (got '%s')",
                          shard);
                goto out;
            }
            break;
        case O_LIST: list = 1; break;
        case O_TAP: tap = v; break;
        case O_JUNIT: junit = v; break;
        case O_REPORT: report = v; break;
        case O_TIMEOUT: {
            char *e;
            timeout = strtod(v, &e);
            if (e == v || *e || !(timeout > 0) || timeout > 1e6) {
                cli_usage(cmd, "--timeout needs seconds > 0, not '%s'", v);
                goto out;
            }
            break;
        }
        case O_SERDE: serde = 1; break;
        case O_SERDE_RECORD: serde_record = v; break;
        case O_SERDE_CHECK: serde_check = v; break;
        default: goto out;
        }
    }
    /* Report paths are checked now, not after the run. */
    if (!list) {
        const char *const names[] = {"--report", "--junit", "--tap"};
        const char *const paths[] = {report, junit, tap};
        if (cli_check_outputs(cmd, names, paths, 3) != 0)
            goto out;
    }
    if (serde + (serde_record != NULL) + (serde_check != NULL) > 1) {
        cli_usage(cmd, "--serde, --serde-record and --serde-check exclude "
                       "each other");
        goto out;
    }
    if (serde && !list) {
        rc = serde_run(backend, device, vectors, cats, n_cats, filter, exclude,
                       shard, timeout, report, junit, tap);
        goto out;
    }
    regex_t re, xre;
    int have_re = 0, have_xre = 0;
    if (filter && compile_re(&re, filter, "--filter") == 0)
        have_re = 1;
    else if (filter)
        goto out;
    if (exclude && compile_re(&xre, exclude, "--exclude") == 0)
        have_xre = 1;
    else if (exclude) {
        if (have_re)
            regfree(&re);
        goto out;
    }

    run r;
    FILE *devnull = NULL;
    memset(&r, 0, sizeof r);
    r.chan = -1;
    if (vectors == NULL)
        vectors = default_vectors(vbuf, sizeof vbuf);
    if (load_dir(vectors, &r)) {
        rc = 1;
        goto done;
    }
    for (size_t c = 0; c < n_cats; c++) {
        size_t f = 0;
        while (f < r.n_files && strcmp(r.files[f].category, cats[c]) != 0)
            f++;
        if (f == r.n_files) {
            fprintf(stderr, "kiln conform: no category '%s' in %s; present:",
                    cats[c], vectors);
            for (size_t k = 0; k < r.n_files; k++) {
                char e[400];
                cf_text_escape(r.files[k].category, e, sizeof e);
                fprintf(stderr, " %s", e);
            }
            fprintf(stderr, "\n");
            goto done;
        }
    }

    /* Selection: categories, filter, then the shard (suite order). */
    size_t total = 0, k = 0;
    for (size_t f = 0; f < r.n_files; f++)
        total += r.files[f].n_tests;
    r.sel = calloc(total + 1, sizeof *r.sel);
    r.cat_pos = calloc(total + 1, sizeof *r.cat_pos);
    r.cat_total = calloc(total + 1, sizeof *r.cat_total);
    if (!r.sel || !r.cat_pos || !r.cat_total)
        goto done;
    for (size_t f = 0; f < r.n_files; f++) {
        int want = n_cats == 0;
        for (size_t c = 0; c < n_cats; c++)
            want |= strcmp(cats[c], r.files[f].category) == 0;
        if (!want)
            continue;
        for (size_t t = 0; t < r.files[f].n_tests; t++) {
            const cf_test *ts = &r.files[f].tests[t];
            char id[96];
            test_id(ts, id, sizeof id);
            if (have_re && regexec(&re, id, 0, NULL, 0) != 0 &&
                regexec(&re, ts->comment, 0, NULL, 0) != 0)
                continue;
            if (have_xre && (regexec(&xre, id, 0, NULL, 0) == 0 ||
                             regexec(&xre, ts->comment, 0, NULL, 0) == 0))
                continue;
            if ((long)(k++ % (size_t)shard_n) != shard_i - 1)
                continue;
            r.sel[r.n_sel++] = ts;
        }
    }
    for (size_t i = 0, start = 0; i <= r.n_sel; i++) {
        if (i == r.n_sel || (i > start && r.sel[i]->category != r.sel[start]->category)) {
            for (size_t j = start; j < i; j++) {
                r.cat_pos[j] = j - start;
                r.cat_total[j] = i - start;
            }
            start = i;
        }
    }
    if (r.n_sel == 0 && shard_n == 1 && !list) {
        /* a typo in --filter must not pass; said before anything runs */
        fprintf(stderr, "kiln conform: no test matches the selection\n");
        rc = 1;
        goto done;
    }
    if (list) {
        for (size_t i = 0; i < r.n_sel; i++) {
            char id[96];
            test_id(r.sel[i], id, sizeof id);
            char e[400];
            cf_text_escape(id, e, sizeof e);
            printf("%s\n", e);
        }
        rc = 0;
        goto done;
    }

    /* The backend: auto = cuda when usable, else ref. */
    char why[512] = "", note[600] = "", skip_all[600] = "";
    const char *chosen = backend;
    if (strcmp(backend, "auto") == 0) {
        if (probe("cuda", why, sizeof why) == KILN_OK) {
            chosen = "cuda";
            snprintf(note, sizeof note, "auto: cuda is usable");
        } else {
            chosen = "ref";
            snprintf(note, sizeof note, "auto: cuda not usable: %s", why);
        }
    } else if (probe(backend, why, sizeof why) != KILN_OK) {
        if (strchr(backend, '/') != NULL || strstr(backend, ".so") != NULL) {
            fprintf(stderr, "kiln conform: backend '%s' is not usable: %s\n",
                    backend, why);
            rc = 1;
            goto done;
        }
        if (strncmp(why, backend, strlen(backend)) == 0)
            snprintf(skip_all, sizeof skip_all, "%s", why);
        else
            snprintf(skip_all, sizeof skip_all, "%s: %s", backend, why);
    }
    if (serde_record || serde_check) /* the reports say which run this is */
        snprintf(note, sizeof note, "--serde pass %d of 2: %s", serde_record ? 1 : 2,
                 serde_record ? "fills a fresh kernel database"
                              : "every kernel from the database, outputs as in pass 1");
    {
        char e1[400], e2[2400];
        cf_text_escape(chosen, e1, sizeof e1);
        cf_text_escape(note, e2, sizeof e2);
        printf("kiln conform: backend %s%s%s%s\n", e1, note[0] ? " (" : "", e2,
               note[0] ? ")" : "");
    }
    printf("kiln conform: %zu of %zu tests from %zu files in %s (shard %s)\n",
           r.n_sel, total, r.n_files, vectors, shard);
    fflush(stdout);
    r.tg.backend = chosen;
    r.tg.device = (int)device;
    r.serde_pass = serde_record ? 1 : serde_check ? 2 : 0;
    if (serde_check && cf_serde_load(serde_check, &r.serde_records) != 0) {
        rc = 1;
        goto done;
    }
    if (r.serde_pass && skip_all[0]) { /* a skipped round trip proves nothing */
        fprintf(stderr, "kiln conform: --serde: backend %s is not usable here: %s\n",
                chosen, skip_all);
        rc = 1;
        goto done;
    }
    /* Tests that set KILN_DUMP would print their dumps into our report:
    ** send them to /dev/null (the dump text is not what the suite judges). */
    devnull = fopen("/dev/null", "w");
    r.tg.dump_stream = devnull;
    r.tty = isatty(2);

    double t0 = now_ms();
    cf_result *res = calloc(r.n_sel + 1, sizeof *res);
    cf_ulp_row *ulps = NULL;
    size_t n_ulps = 0;
    SRunner *sr = NULL;
    int serde_failed = 0;
    if (res == NULL)
        goto done;
    if (skip_all[0]) { /* e.g. "cuda: no driver": every test skips */
        for (size_t i = 0; i < r.n_sel; i++) {
            res[i].test = r.sel[i];
            test_id(r.sel[i], res[i].id, sizeof res[i].id);
            res[i].status = CF_SKIP;
            res[i].msg = strdup(skip_all);
        }
    } else if (r.n_sel > 0) {
        const char *tmpdir = getenv("TMPDIR");
        char tmpl[4200];
        snprintf(tmpl, sizeof tmpl, "%s/kiln-conform-XXXXXX",
                 tmpdir && *tmpdir ? tmpdir : "/tmp");
        r.chan = mkstemp(tmpl);
        if (r.chan < 0) {
            fprintf(stderr, "kiln conform: results file: %s\n", strerror(errno));
            rc = 1;
            goto done;
        }
        unlink(tmpl);
        fcntl(r.chan, F_SETFL, O_APPEND);
        r.prog = mmap(NULL, sizeof *r.prog, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (r.prog == MAP_FAILED) {
            r.prog = NULL;
            fprintf(stderr, "kiln conform: mmap: %s\n", strerror(errno));
            rc = 1;
            goto done;
        }
        memset(r.prog, 0, sizeof *r.prog);
        Suite *s = suite_create("kiln-conformance");
        for (size_t i = 0, start = 0; i <= r.n_sel; i++) {
            if (i < r.n_sel && (i == start || r.sel[i]->category == r.sel[start]->category))
                continue;
            TCase *tc = tcase_create(r.sel[start]->category);
            tcase_set_timeout(tc, timeout);
            tcase_add_loop_test(tc, conform_test, (int)start, (int)i);
            suite_add_tcase(s, tc);
            start = i;
        }
        sr = srunner_create(s);
        /* Without fork mode every test runs in this process: one context
        ** of the backend held for the whole run keeps the device's context
        ** (and the loaded libraries) alive, so the tests' own contexts do
        ** not create and destroy it each time.  It compiles nothing and
        ** shares no cache with them.  Not in fork mode: CUDA must not be
        ** live in a process that forks. */
        kiln_context *keep = NULL;
        const char *ka = getenv("KILN_CONFORM_KEEPALIVE");
        if (srunner_fork_status(sr) == CK_NOFORK && strcmp(chosen, "ref") != 0 &&
            !(ka != NULL && strcmp(ka, "0") == 0)) {
            kiln_context_config kc;
            memset(&kc, 0, sizeof kc);
            kc.struct_size = sizeof kc;
            kc.backend = chosen;
            kc.device = (int)device;
            kc.use_env_override = 1;
            if (kiln_context_create(&kc, &keep) != KILN_OK)
                keep = NULL; /* only slower; the tests report the cause */
        }
        current = &r;
        srunner_run_all(sr, CK_SILENT);
        current = NULL;
        kiln_context_destroy(keep);
        if (r.tty)
            fprintf(stderr, "\r\033[K");
        collect(&r, sr, res, &ulps, &n_ulps);
        if (serde_record && serde_record_write(&r, res, serde_record) != 0)
            serde_failed = 1;
    }
    if (n_ulps > 0) /* qsort wants a non-NULL base even for 0 items */
        qsort(ulps, n_ulps, sizeof *ulps, cmp_ulp);

    /* Per-category rows, in suite order. */
    cf_cat_row *rows = calloc(r.n_files + 1, sizeof *rows);
    size_t n_rows = 0, failed = 0, skipped = 0;
    double c0 = 0, c1 = 0; /* wall span of the current category */
    for (size_t i = 0; rows && i < r.n_sel; i++) {
        if (n_rows == 0 || strcmp(rows[n_rows - 1].category, r.sel[i]->category) != 0) {
            rows[n_rows++].category = r.sel[i]->category;
            c0 = c1 = 0;
        }
        cf_cat_row *cr = &rows[n_rows - 1];
        if (res[i].t1 > 0) { /* the category's time includes the forks */
            if (c0 == 0 || res[i].t0 < c0)
                c0 = res[i].t0;
            if (res[i].t1 > c1)
                c1 = res[i].t1;
            cr->ms = c1 - c0;
        }
        if (res[i].status == CF_FAIL)
            cr->failed++, failed++;
        else if (res[i].status == CF_SKIP)
            cr->skipped++, skipped++;
        else
            cr->passed++;
    }
    /* Failures one per line; skips grouped by reason (each reason shown). */
    char e1[4 * CF_MSG], e2[4 * CF_MSG], e3[4 * CF_MSG];
    for (size_t i = 0; i < r.n_sel; i++)
        if (res[i].status == CF_FAIL) {
            cf_text_escape(res[i].id, e1, sizeof e1);
            cf_text_escape(r.sel[i]->comment, e2, sizeof e2);
            cf_text_escape(res[i].msg ? res[i].msg : "", e3, sizeof e3);
            printf("FAIL %s (%s): %s\n", e1, e2, e3);
        }
    for (size_t i = 0; i < r.n_sel; i++) {
        if (res[i].status != CF_SKIP || res[i].msg == NULL)
            continue;
        size_t same = 0, first = 1;
        for (size_t j = 0; j < i; j++)
            if (res[j].status == CF_SKIP && res[j].msg &&
                strcmp(res[j].msg, res[i].msg) == 0)
                first = 0;
        if (!first)
            continue;
        for (size_t j = i; j < r.n_sel; j++)
            same += res[j].status == CF_SKIP && res[j].msg &&
                    strcmp(res[j].msg, res[i].msg) == 0;
        cf_text_escape(res[i].id, e1, sizeof e1);
        cf_text_escape(res[i].msg, e3, sizeof e3);
        if (same == 1)
            printf("SKIP %s: %s\n", e1, e3);
        else
            printf("SKIP %zu tests (%s, ...): %s\n", same, e1, e3);
    }
    cf_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.backend = chosen;
    sum.backend_note = note;
    sum.vectors_dir = vectors;
    sum.shard = shard;
    sum.suite_version = r.n_files ? r.files[0].suite_version : NULL;
    sum.results = res;
    sum.n_results = r.n_sel;
    sum.cats = rows;
    sum.n_cats = n_rows;
    sum.ulps = ulps;
    sum.n_ulps = n_ulps;
    sum.wall_s = (now_ms() - t0) / 1000.0;
    cf_report_text(&sum, stdout);
    int werr = 0;
    if (report)
        werr |= cf_report_markdown(&sum, report);
    if (junit)
        werr |= cf_report_junit(&sum, junit);
    if (tap)
        werr |= cf_report_tap(&sum, tap);
    if (sr) {
        printf("\n");
        fflush(stdout);
        srunner_print(sr, CK_MINIMAL); /* Check's closing summary line */
    } else {
        printf("\n%zu tests: %zu skipped, none run\n", r.n_sel, skipped);
    }
    rc = failed || werr || serde_failed ? 1 : 0;
    if (sr)
        srunner_free(sr);
    for (size_t i = 0; i < r.n_sel; i++)
        free(res[i].msg);
    free(res);
    free(rows);
    free(ulps);
done:
    if (devnull)
        fclose(devnull);
    if (r.chan >= 0)
        close(r.chan);
    if (r.prog)
        munmap(r.prog, sizeof *r.prog);
    for (size_t f = 0; f < r.n_files; f++)
        cf_file_free(&r.files[f]);
    free(r.files);
    free(r.sel);
    free(r.cat_pos);
    free(r.cat_total);
    if (have_re)
        regfree(&re);
    if (have_xre)
        regfree(&xre);
    json_decref(r.serde_records);
out:
    free(cats);
    return rc;
}

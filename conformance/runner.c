/*
** runner.c -- `kiln conform`: load the vector files, select tests
** (--category, --filter, --exclude, --shard), run each as a Check loop
** test in fork mode against the chosen backend, decide every test's
** result and the run's verdict (verdict.c), and report (docs/
** conformance.md, "Running the suite").  `--check-results` verifies a
** results file against the installed suite instead of running.
**
** Before anything runs: the options, the output paths and the
** expectations file are checked (a bad one is a usage error, exit 2); the
** backend is named correctly (an unknown name or an unreadable plugin
** path is a usage error) and is available here (otherwise exit 1 with the
** reason, or EXIT_UNAVAILABLE with --allow-unavailable).  A run never
** turns an unusable backend into a run of skips.
**
** How results travel: Check runs every test in a child process (so a
** crashing backend fails one test), and only pass/fail and a message come
** back through Check.  The rest -- the result, skip reasons, times, where
** the segments ran, ULP statistics -- each child appends as one JSON line
** to a channel file the parent opened (O_APPEND, one write per test).
** Progress on a terminal comes from a small shared-memory counter the
** children update.  The parent merges Check's results (in run order) with
** the lines (keyed by test index); a crash or timeout, which leaves no
** line, is a fail.
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
#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tool/tool.h"
#include "conform.h"

/* The exit status of a run whose backend is not available here, with
** --allow-unavailable: automake's "skipped" status, which CI harnesses
** already know (docs/conformance.md, "Exit status"). */
#define EXIT_UNAVAILABLE 77

typedef struct progress { /* shared between the parent and the children */
    long done, failed, in_flight; /* in_flight: index + 1 of a started test */
} progress;

typedef struct run {
    cf_target tg;
    cf_file *files;
    size_t n_files;
    const cf_test **sel;   /* the selected tests, in suite order */
    size_t n_sel;
    size_t *todo;          /* indices into sel of the tests that run */
    size_t n_todo;
    size_t *cat_pos;       /* position of todo[k] within its category */
    size_t *cat_total;     /* tests to run of todo[k]'s category */
    int chan;              /* channel file, O_APPEND */
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

static void progress_start(const run *r, size_t k)
{
    progress *p = r->prog;
    if (p->in_flight) { /* the previous test never finished: crash/timeout */
        p->done++;
        p->failed++;
    }
    p->in_flight = (long)k + 1;
}

static void progress_end(const run *r, size_t k, int failed)
{
    progress *p = r->prog;
    p->done++;
    p->failed += failed;
    p->in_flight = 0;
    if (r->tty)
        fprintf(stderr, "\r\033[K[%s] %zu/%zu  failures: %ld",
                r->sel[r->todo[k]]->category, r->cat_pos[k] + 1,
                r->cat_total[k], p->failed);
    else if (r->cat_pos[k] + 1 == r->cat_total[k] || (p->done % 200) == 0)
        /* not a terminal (CI logs): a plain line every 200 tests and at
        ** the end of each category, so a long run shows it is alive */
        fprintf(stderr, "kiln conform: [%s] %zu/%zu, %ld/%zu tests done, "
                "failures: %ld\n", r->sel[r->todo[k]]->category,
                r->cat_pos[k] + 1, r->cat_total[k], p->done, r->n_todo,
                p->failed);
}

/* One JSON line per finished test into the channel file (i: the test's
** index in the selection). */
static void channel_write(const run *r, size_t i, const cf_outcome *o,
                          const cf_serde *sd, double t0, double t1)
{
    char esc[4 * CF_MSG];
    json_t *msg = json_string(o->msg);
    if (msg == NULL) { /* not UTF-8: what the terminal would show */
        cf_text_escape(o->msg, esc, sizeof esc);
        msg = json_string(esc);
    }
    json_t *ulp = json_array();
    for (size_t k = 0; k < o->n_ulp; k++)
        json_array_append_new(ulp, json_pack("[ssI]", o->ulp[k].op,
                                             o->ulp[k].dtype,
                                             (json_int_t)o->ulp[k].ulp));
    /* JSON has no infinity or NaN: -1 stands for them */
    double maxabs = !o->abs_seen ? 0.0 : isfinite(o->max_abs) ? o->max_abs
                                                               : -1.0;
    json_t *line = json_pack("{sIsIsfsfsfsosbsosIsIsbsf}", "i", (json_int_t)i,
                             "s", (json_int_t)o->status, "ms", t1 - t0, "t0",
                             t0, "t1", t1, "msg", msg, "acc", o->acceptable,
                             "ulp", ulp, "nat", (json_int_t)o->native, "fb",
                             (json_int_t)o->fallback, "abs", o->abs_seen,
                             "maxabs", maxabs);
    if (line != NULL && sd != NULL)
        json_object_set_new(line, "serde", cf_serde_json(sd));
    char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;
    if (text) {
        size_t n = strlen(text);
        text[n] = '\n'; /* json_dumps' NUL becomes the line end */
        ssize_t w = write(r->chan, text, n + 1);
        (void)w; /* a lost line fails the test in collect() */
        free(text);
    }
    json_decref(line);
}

START_TEST(conform_test)
{
    const run *r = current;
    size_t i = r->todo[_i];
    const cf_test *t = r->sel[i];
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
    channel_write(r, i, &o, r->serde_pass ? &sd : NULL, t0, now_ms());
    int bad = o.status == CF_FAIL || o.status == CF_INVALID;
    progress_end(r, (size_t)_i, bad);
    if (bad)
        ck_abort_msg("%s: %s", id, o.msg);
}
END_TEST

/* ---------------------------------------------------------------- probing */

typedef struct probe_out {
    int status;            /* kiln_status of kiln_backend_probe */
    char why[512];         /* why it is not usable */
    char name[64];         /* kiln_context_backend */
    char identity[512];    /* kiln_context_backend_identity */
    int device;            /* where a segment ran: -1 host, -2 unknown */
} probe_out;

/* The child's side of probe(): what `backend` is, in *p. */
static void probe_child(const char *backend, int device, probe_out *p)
{
    kiln_status st = kiln_backend_probe(backend, p->why, sizeof p->why);
    p->status = (int)st;
    p->device = -2;
    if (st != KILN_OK)
        return;
    kiln_context_config c;
    kiln_context *ctx = NULL;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.backend = backend;
    c.device = device;
    c.use_env_override = 1;
    if (kiln_context_create(&c, &ctx) != KILN_OK) {
        p->status = (int)KILN_ERR_BACKEND_UNAVAILABLE;
        snprintf(p->why, sizeof p->why, "%s", kiln_last_error());
        return;
    }
    snprintf(p->name, sizeof p->name, "%s", kiln_context_backend(ctx));
    if (kiln_context_backend_identity(ctx, p->identity, sizeof p->identity) !=
        KILN_OK)
        snprintf(p->identity, sizeof p->identity, "unknown (%s)",
                 kiln_last_error());
    /* One execute tells where this backend's segments run. */
    static const char kf[] =
        "kiln.fusion 1\n%0 = input f32 [?]\n%1 = neg %0\noutput %1\n";
    kiln_fusion *f = NULL;
    kiln_tensor *in = NULL, *out = NULL;
    kiln_exec_info *info = NULL;
    int64_t one = 1;
    float x = 1.0f;
    kiln_segment_info si;
    memset(&si, 0, sizeof si);
    si.struct_size = sizeof si;
    if (kiln_fusion_parse(kf, sizeof kf - 1, &f) == KILN_OK &&
        kiln_exec_info_create(&info) == KILN_OK &&
        kiln_tensor_create(NULL, KILN_F32, 1, &one, NULL, KILN_MEM_HOST, &x,
                           &in) == KILN_OK &&
        kiln_execute(ctx, f, &in, 1, &out, 1, NULL, info) == KILN_OK &&
        kiln_exec_info_segment(info, 0, &si) == KILN_OK &&
        si.kind != KILN_SEG_REFERENCE)
        p->device = si.device;
    kiln_tensor_destroy(out);
    kiln_tensor_destroy(in);
    kiln_exec_info_destroy(info);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
}

/* probe_child in a child process (a CUDA driver must not be initialised
** in the parent, whose children would inherit it unusable). */
static void probe(const char *backend, int device, probe_out *p)
{
    int fd[2];
    memset(p, 0, sizeof *p);
    p->device = -2;
    p->status = (int)KILN_ERR_IO;
    if (pipe(fd) != 0) {
        snprintf(p->why, sizeof p->why, "pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        snprintf(p->why, sizeof p->why, "fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        probe_out c;
        memset(&c, 0, sizeof c);
        close(fd[0]);
        probe_child(backend, device, &c);
        ssize_t w = write(fd[1], &c, sizeof c);
        _exit(w == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t n;
    probe_out c;
    while (got < sizeof c &&
           (n = read(fd[0], (char *)&c + got, sizeof c - got)) > 0)
        got += (size_t)n;
    close(fd[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (got < sizeof c) {
        p->status = (int)KILN_ERR_BACKEND_UNAVAILABLE;
        snprintf(p->why, sizeof p->why, "the probe of '%.300s' crashed "
                 "(wait status %d)", backend, ws);
        return;
    }
    *p = c;
    p->why[sizeof p->why - 1] = '\0';
    p->name[sizeof p->name - 1] = '\0';
    p->identity[sizeof p->identity - 1] = '\0';
}

/* ----------------------------------------------------------------- usage */

static void usage(FILE *out)
{
    fprintf(out,
"usage: kiln conform [OPTIONS]\n"
"       kiln conform --check-results FILE.json [--vectors DIR]\n"
"                    [--expectations FILE]\n"
"\n"
"Run the conformance suite against a backend.  Every vector test is a\n"
"Check test run in its own process (fork mode), so a crashing backend\n"
"fails one test.  Each test ends in one result: pass, fail, unsupported\n"
"(the backend declined a segment the test needs: it ran on the reference\n"
"fallback), skip (with its reason) or invalid-vector.\n"
"\n"
"Exit status: 0 when no test failed, no vector was invalid, no result\n"
"contradicts the expectations file, and at least one test ran on the\n"
"backend under test and passed; 1 otherwise, and when the backend is not\n"
"available here, the vectors cannot be read or a report cannot be\n"
"written; 2 on a usage error (an unknown backend or an unreadable plugin\n"
"included); 77 when the backend is not available and --allow-unavailable\n"
"was given.\n"
"\n"
"options:\n"
"  --backend NAME     ref, cuda, nvrtc, auto (default: cuda when usable,\n"
"                     else ref), or a backend plugin: a path, a file name\n"
"                     ending in .so (in the current directory), or a\n"
"                     versioned soname (the dynamic loader's search)\n"
"  --device N         device ordinal for device backends (default 0)\n"
"  --vectors DIR      vector directory (default: $KILN_VECTORS, else the\n"
"                     installed suite PREFIX/share/kiln/vectors next to\n"
"                     this kiln's bin directory, else the source tree's\n"
"                     conformance/vectors above this kiln)\n"
"  --category NAME    run only this category (repeatable): options.parse,\n"
"                     options.precedence, cache.isolation, numerics,\n"
"                     differential, sweep, fuzz\n"
"  --seed S, --count N  the fuzz category: N random fusions from seeds\n"
"                     S..S+N-1 (default 1 and 200; either adds the category\n"
"                     to the selection when --category is given)\n"
"  --filter REGEX     run tests whose id (category/tcId) or comment matches\n"
"                     the POSIX extended REGEX\n"
"  --exclude REGEX    leave out tests whose id or comment matches REGEX\n"
"  --shard I/N        run the I-th of N deterministic shares (1 <= I <= N):\n"
"                     test k of the selection (suite order) runs in shard\n"
"                     (k mod N) + 1\n"
"  --skip-flag NAME   skip (result skip, not run) the tests carrying flag\n"
"                     NAME (repeatable; a flag no vector file defines is\n"
"                     a usage error)\n"
"  --expectations FILE  known results: lines PATTERN RESULT REASON, RESULT\n"
"                     fail, unsupported or skip; any other result of a\n"
"                     listed test fails the run (an unexpected pass too)\n"
"  --write-expectations FILE  write the fail and unsupported results (and\n"
"                     the expected skips) of this run as an expectations\n"
"                     file\n"
"  --strict           unsupported is a failure (a backend that claims the\n"
"                     whole contract)\n"
"  --allow-unavailable  a backend not available here exits 77 instead of 1\n"
"  --results FILE.json  write one record per test, stamped with the suite\n"
"                     and runner versions, the vector hashes, the backend\n"
"                     identity, the command line and the options\n"
"  --check-results FILE.json  verify a results file against the suite:\n"
"                     hashes, every selected test exactly once, no result\n"
"                     contradicting its expectation, and a passing verdict\n"
"  --list             print the selected test ids and exit\n"
"  --tap FILE         write TAP version 13\n"
"  --junit FILE       write JUnit XML\n"
"  --report FILE.md   write a Markdown report\n"
"  --timeout SECONDS  per-test time limit (default 60; fork mode only)\n"
"  --sweep MODE       sweep tests: 'sample' (the vectors' sample, default)\n"
"                     or 'all' (every f32 input, 2^32 per op); either\n"
"                     prints each sweep test's worst ulp and its input\n"
"  --sweep-shard I/N  with --sweep all: the I-th of N equal ranges of the\n"
"                     2^32 inputs (1 <= I <= N)\n"
"  --serde            run the selection twice, in two processes, on one fresh\n"
"                     kernel database (enable=kernel_db): the second run must\n"
"                     load every kernel the first compiled and reproduce its\n"
"                     outputs bit for bit.  Needs a backend that persists\n"
"                     kernels (auto: cuda when usable, else nvrtc)\n"
"  --serde-record FILE, --serde-check FILE\n"
"                     the two passes of --serde (internal: run by --serde)\n"
"  -h, --help         this text\n"
"\n"
"Options take their value as --opt VALUE or --opt=VALUE.  The output\n"
"files (--tap, --junit, --report, --results, --write-expectations) are\n"
"checked before any test runs (a path that cannot be written is a usage\n"
"error), and each is replaced in one step when the run ends (written to a\n"
"temporary file in the same directory, then renamed), so concurrent runs\n"
"never mix their reports.\n"
"\n"
"Environment: KILN_VECTORS (see --vectors).  CK_FORK=no runs every test\n"
"in this process (faster on a GPU, but a crash ends the run); there the\n"
"runner holds one context of the backend for the whole run, unless\n"
"KILN_CONFORM_KEEPALIVE=0.  KILN_ENABLE/KILN_DISABLE/KILN_DUMP do not\n"
"affect the suite: each test states its own environment.\n");
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

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Where the vectors are (docs/conformance.md, "Where the vectors come
** from"): --vectors, else $KILN_VECTORS, else the installed suite
** (<bindir>/../share/kiln/vectors), else a source tree holding this kiln
** (conformance/vectors in the binary's directory or up to two above it).
** Returns the directory (option, environment, or buf) and *from; NULL,
** with the message on stderr, when none is found. */
static const char *find_vectors(const char *opt, char *buf, size_t cap,
                                const char **from)
{
    if (opt != NULL) {
        *from = "--vectors";
        return opt;
    }
    const char *env = getenv("KILN_VECTORS");
    if (env != NULL && *env) {
        *from = "KILN_VECTORS";
        return env;
    }
    char exe[4096], installed[4200] = "(unknown)", tree[4200] = "(unknown)";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
    if (slash != NULL) {
        *slash = '\0'; /* exe: the binary's directory */
        snprintf(installed, sizeof installed, "%s/../share/kiln/vectors", exe);
        if (is_dir(installed)) {
            *from = "installed suite";
            snprintf(buf, cap, "%s", installed);
            return buf;
        }
        snprintf(tree, sizeof tree, "%s/conformance/vectors", exe);
        for (int up = 0; up < 3; up++) {
            snprintf(buf, cap, "%s/conformance/vectors", exe);
            if (is_dir(buf)) {
                *from = "source tree";
                return buf;
            }
            char *s = strrchr(exe, '/');
            if (s == NULL)
                break;
            *s = '\0';
        }
    }
    fprintf(stderr,
            "kiln conform: no conformance vectors found: give --vectors DIR, "
            "or set KILN_VECTORS=DIR, or install the suite (`make install` "
            "puts it in PREFIX/share/kiln/vectors); looked in %s (installed "
            "suite) and in conformance/vectors from %s up two directories "
            "(source tree)\n", installed, tree);
    return NULL;
}

/* --------------------------------------------------------------- results */

/* The whole channel file (malloc'd; NULL when empty), *got its length. */
static char *read_channel(const run *r, size_t *got)
{
    off_t size = lseek(r->chan, 0, SEEK_END);
    char *text = size > 0 ? malloc((size_t)size + 1) : NULL;
    *got = 0;
    while (text && *got < (size_t)size) {
        ssize_t n = pread(r->chan, text + *got, (size_t)size - *got,
                          (off_t)*got);
        if (n <= 0)
            break;
        *got += (size_t)n;
    }
    return text;
}

/* Read the children's JSON lines back and merge them with Check's
** verdicts (Check's k-th result is test todo[k]).  res[] already holds
** every selected test, the ones that do not run as skips. */
static void collect(const run *r, SRunner *sr, cf_result *res)
{
    /* The channel file: one line per finished test. */
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
        json_int_t i = -1, st = -1, acc = 0, nat = 0, fb = 0, abs = 0;
        const char *msg = NULL;
        double ms = 0, t0 = 0, t1 = 0, maxabs = 0;
        if (j && json_unpack(j, "{sIsIsFsFsFsssbsosIsIsbsF}", "i", &i, "s",
                             &st, "ms", &ms, "t0", &t0, "t1", &t1, "msg",
                             &msg, "acc", &acc, "ulp", &ulp, "nat", &nat,
                             "fb", &fb, "abs", &abs, "maxabs", &maxabs) == 0 &&
            i >= 0 && (size_t)i < r->n_sel && st >= 0 && st < CF_N_STATUS) {
            cf_result *rs = &res[i];
            seen[i] = 1;
            rs->ms = ms;
            rs->t0 = t0;
            rs->t1 = t1;
            rs->acceptable = (int)acc;
            rs->status = (cf_status)st;
            rs->native = (uint64_t)nat;
            rs->fallback = (uint64_t)fb;
            rs->abs_seen = (int)abs;
            rs->max_abs = maxabs < 0 ? INFINITY : maxabs;
            if (rs->status != CF_PASS)
                rs->msg = strdup(msg);
            for (size_t k = 0; k < json_array_size(ulp) &&
                               rs->n_ulp < CF_MAX_ULP_STATS; k++) {
                const char *op = NULL, *dt = NULL;
                json_int_t u;
                if (json_unpack(json_array_get(ulp, k), "[ssI]", &op, &dt, &u))
                    continue;
                cf_ulp_stat *us = &rs->ulp[rs->n_ulp++];
                snprintf(us->op, sizeof us->op, "%s", op);
                snprintf(us->dtype, sizeof us->dtype, "%s", dt);
                us->ulp = (uint64_t)u;
            }
        }
        json_decref(j);
    }
    /* Check's verdicts are authoritative for failures: a crash or timeout
    ** leaves no line, only Check's message ("Received signal 11", "Test
    ** timeout"); a test Check saw pass without a line fails too. */
    TestResult **tr = srunner_results(sr);
    size_t ntr = (size_t)srunner_ntests_run(sr);
    for (size_t k = 0; k < r->n_todo; k++) {
        cf_result *rs = &res[r->todo[k]];
        int rt = tr && k < ntr ? tr_rtype(tr[k]) : CK_ERROR;
        int fails = rs->status == CF_FAIL || rs->status == CF_INVALID;
        if (rt == CK_PASS && seen && seen[r->todo[k]] && !fails)
            continue;
        if (rt != CK_PASS && fails && rs->msg != NULL)
            continue; /* the child's own failure message */
        char m[CF_MSG];
        snprintf(m, sizeof m, "%s%s", rt == CK_ERROR ? "error: " : "",
                 rt == CK_PASS ? "the test reported no result"
                 : tr && k < ntr && tr_msg(tr[k]) ? tr_msg(tr[k])
                                                  : "failed");
        free(rs->msg);
        rs->msg = strdup(m);
        rs->status = CF_FAIL;
    }
    free(tr);
    free(seen);
    free(text);
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

/* The selection options (also what a results file records). */
typedef struct selection {
    const char **cats;
    size_t n_cats;
    const char *filter, *exclude;
    long shard_i, shard_n;
} selection;

/* Select the tests of r->files into r->sel: categories, then filter and
** exclude, then the shard (suite order).  Non-zero with a message on
** stderr for a bad regex (2) or out of memory (1). */
static int select_tests(run *r, const selection *q)
{
    regex_t re, xre;
    int have_re = 0, have_xre = 0, rc = 0;
    if (q->filter && compile_re(&re, q->filter, "--filter"))
        return 2;
    have_re = q->filter != NULL;
    if (q->exclude && compile_re(&xre, q->exclude, "--exclude")) {
        if (have_re)
            regfree(&re);
        return 2;
    }
    have_xre = q->exclude != NULL;
    size_t total = 0, k = 0;
    for (size_t f = 0; f < r->n_files; f++)
        total += r->files[f].n_tests;
    free(r->sel);
    r->n_sel = 0;
    r->sel = calloc(total + 1, sizeof *r->sel);
    if (r->sel == NULL)
        rc = 1;
    for (size_t f = 0; !rc && f < r->n_files; f++) {
        int want = q->n_cats == 0;
        for (size_t c = 0; c < q->n_cats; c++)
            want |= strcmp(q->cats[c], r->files[f].category) == 0;
        if (!want)
            continue;
        for (size_t t = 0; t < r->files[f].n_tests; t++) {
            const cf_test *ts = &r->files[f].tests[t];
            char id[96];
            test_id(ts, id, sizeof id);
            if (have_re && regexec(&re, id, 0, NULL, 0) != 0 &&
                regexec(&re, ts->comment, 0, NULL, 0) != 0)
                continue;
            if (have_xre && (regexec(&xre, id, 0, NULL, 0) == 0 ||
                             regexec(&xre, ts->comment, 0, NULL, 0) == 0))
                continue;
            if ((long)(k++ % (size_t)q->shard_n) != q->shard_i - 1)
                continue;
            r->sel[r->n_sel++] = ts;
        }
    }
    if (have_re)
        regfree(&re);
    if (have_xre)
        regfree(&xre);
    return rc;
}

/* Every name of a category asked for exists in the files; 0 or 2. */
static int check_categories(const run *r, const selection *q,
                            const char *vectors)
{
    for (size_t c = 0; c < q->n_cats; c++) {
        size_t f = 0;
        while (f < r->n_files && strcmp(r->files[f].category, q->cats[c]) != 0)
            f++;
        if (f < r->n_files)
            continue;
        char e[400];
        cf_text_escape(q->cats[c], e, sizeof e);
        fprintf(stderr, "kiln conform: no category '%s' in %s; present:", e,
                vectors);
        for (size_t k = 0; k < r->n_files; k++) {
            cf_text_escape(r->files[k].category, e, sizeof e);
            fprintf(stderr, " %s", e);
        }
        fprintf(stderr, "\n");
        return 2;
    }
    return 0;
}

/* The fuzz category is made in memory (fuzz.c): added when it is asked
** for (--category fuzz) or --seed/--count is given; a fuzz file among the
** vectors is replaced then.  0, or 2 with a message. */
static int fuzz_add(run *r, const selection *q, int asked, uint64_t seed,
                    uint64_t count)
{
    for (size_t c = 0; c < q->n_cats; c++)
        asked |= strcmp(q->cats[c], "fuzz") == 0;
    if (!asked)
        return 0;
    size_t f = 0;
    while (f < r->n_files && strcmp(r->files[f].category, "fuzz") != 0)
        f++;
    cf_file *nf = realloc(r->files, (r->n_files + 2) * sizeof *nf);
    if (nf == NULL)
        return 2;
    r->files = nf;
    char err[CF_MSG];
    cf_file made;
    if (cf_fuzz_file(seed, count, r->files[0].suite_version, &made, err,
                     sizeof err)) {
        fprintf(stderr, "kiln conform: %s\n", err);
        return 2;
    }
    if (f < r->n_files)
        cf_file_free(&r->files[f]);
    else
        r->n_files++;
    r->files[f] = made;
    qsort(r->files, r->n_files, sizeof *r->files, cmp_files);
    return 0;
}

/* Is `name` defined in the notes of a loaded file (some test carries it)? */
static int flag_known(const run *r, const char *name)
{
    for (size_t f = 0; f < r->n_files; f++)
        for (size_t t = 0; t < r->files[f].n_tests; t++)
            if (cf_test_has_flag(&r->files[f].tests[t], name))
                return 1;
    return 0;
}

static void run_free(run *r)
{
    if (r->chan >= 0)
        close(r->chan);
    if (r->prog)
        munmap(r->prog, sizeof *r->prog);
    for (size_t f = 0; f < r->n_files; f++)
        cf_file_free(&r->files[f]);
    free(r->files);
    free(r->sel);
    free(r->todo);
    free(r->cat_pos);
    free(r->cat_total);
    memset(r, 0, sizeof *r);
    r->chan = -1;
}

/* ------------------------------------------------------ backend checks */

/* A plugin named by a path (a '/' in it) or by a file name ending in
** ".so" (a file in the current directory) must be a readable regular
** file; the rule mirrors runtime/context.c.  Returns 0, or 2 after a
** usage message (cli_usage's value). */
static int check_backend_name(const char *cmd, const char *b)
{
    static const char *const builtin[] = {"auto", "ref", "cuda", "nvrtc"};
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (strcmp(b, builtin[i]) == 0)
            return 0;
    size_t n = strlen(b);
    int slash = strchr(b, '/') != NULL;
    int so = n > 3 && strcmp(b + n - 3, ".so") == 0;
    if (!slash && !so) {
        if (strstr(b, ".so.") != NULL)
            return 0; /* a versioned soname: the loader's search decides */
        return cli_usage(cmd, "unknown backend '%s' (valid: ref, cuda, nvrtc, "
                         "auto, or a plugin: a path, a file name ending in "
                         ".so, or a versioned soname)", b);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s%s", slash ? "" : "./", b);
    struct stat st;
    if (stat(path, &st) != 0 || access(path, R_OK) != 0)
        return cli_usage(cmd, "--backend %s: cannot read the plugin '%s': %s",
                         b, path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cli_usage(cmd, "--backend %s: '%s' is not a file", b, path);
    unsigned char magic[4] = {0};
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(magic, 1, sizeof magic, f) : 0;
    if (f)
        fclose(f);
    if (got != 4 || memcmp(magic, "\x7f" "ELF", 4) != 0)
        return cli_usage(cmd, "--backend %s: '%s' is not a shared object (no "
                         "ELF header)", b, path);
    return 0;
}

/* Decide the backend: *chosen, the note, and what the probe found.
** Returns 0, 2 (usage: not a Kiln backend), 1 or EXIT_UNAVAILABLE (not
** available here), with the message on stderr. */
static int choose_backend(const char *cmd, const char *backend, int device,
                          int allow_unavailable, const char **chosen,
                          char *note, size_t note_cap, probe_out *p)
{
    *chosen = backend;
    note[0] = '\0';
    if (strcmp(backend, "auto") == 0) {
        probe("cuda", device, p);
        if (p->status == KILN_OK) {
            *chosen = "cuda";
            snprintf(note, note_cap, "auto: cuda is usable");
            return 0;
        }
        *chosen = "ref";
        snprintf(note, note_cap, "auto: cuda not usable: %s", p->why);
    }
    probe(*chosen, device, p);
    if (p->status == KILN_OK)
        return 0;
    char e1[400], e2[2100];
    cf_text_escape(*chosen, e1, sizeof e1);
    cf_text_escape(p->why, e2, sizeof e2);
    if (p->status == KILN_ERR_ABI) {
        cli_usage(cmd, "--backend %s is not a usable Kiln backend plugin: %s",
                  e1, e2);
        return 2;
    }
    fprintf(stderr, "kiln conform: backend %s is not available here: %s\n",
            e1, e2);
    if (allow_unavailable) {
        fprintf(stderr, "kiln conform: nothing ran; exit %d "
                "(--allow-unavailable)\n", EXIT_UNAVAILABLE);
        return EXIT_UNAVAILABLE;
    }
    fprintf(stderr, "kiln conform: nothing ran (--allow-unavailable makes "
            "this exit %d)\n", EXIT_UNAVAILABLE);
    return 1;
}

/* ------------------------------------------------------ terminal output */

/* Print results of status `st` grouped by message: one line per distinct
** message (at most `max_groups`, then a count of the rest). */
static void print_grouped(const cf_summary *s, cf_status st, const char *tag,
                          size_t max_groups)
{
    char e1[4 * CF_MSG], e3[4 * CF_MSG];
    size_t groups = 0, left = 0;
    for (size_t i = 0; i < s->n_results; i++) {
        const cf_result *r = &s->results[i];
        if (r->status != st || r->msg == NULL || r->expect != NULL)
            continue;
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = !(s->results[j].status == st && s->results[j].msg &&
                      s->results[j].expect == NULL &&
                      strcmp(s->results[j].msg, r->msg) == 0);
        if (!first)
            continue;
        size_t same = 0;
        for (size_t j = i; j < s->n_results; j++)
            same += s->results[j].status == st && s->results[j].msg &&
                    s->results[j].expect == NULL &&
                    strcmp(s->results[j].msg, r->msg) == 0;
        if (groups++ >= max_groups) {
            left += same;
            continue;
        }
        cf_text_escape(r->id, e1, sizeof e1);
        cf_text_escape(r->msg, e3, sizeof e3);
        if (same == 1)
            printf("%s %s: %s\n", tag, e1, e3);
        else
            printf("%s %zu tests (%s, ...): %s\n", tag, same, e1, e3);
    }
    if (left)
        printf("%s %zu more tests with %zu other reasons (--report lists "
               "every test)\n", tag, left, groups - max_groups);
}

static void print_results(const cf_summary *s)
{
    char e1[4 * CF_MSG], e2[4 * CF_MSG], e3[4 * CF_MSG];
    for (size_t i = 0; i < s->n_results; i++) {
        const cf_result *r = &s->results[i];
        if (!r->fails_run)
            continue;
        cf_text_escape(r->id, e1, sizeof e1);
        cf_text_escape(r->test->comment, e2, sizeof e2);
        cf_text_escape(r->msg ? r->msg : "", e3, sizeof e3);
        if (r->unexpected) {
            char e4[4 * CF_MSG];
            cf_text_escape(r->expect->reason, e4, sizeof e4);
            printf("UNEXPECTED %s (%s): %s, expected %s (line %d: %s)%s%s\n",
                   e1, e2, cf_status_name(r->status),
                   cf_status_name(r->expect->result), r->expect->line, e4,
                   r->msg ? ": " : "", e3);
        } else {
            printf("%s %s (%s): %s\n",
                   r->status == CF_INVALID       ? "INVALID"
                   : r->status == CF_UNSUPPORTED ? "UNSUPPORTED (--strict)"
                                                 : "FAIL",
                   e1, e2, e3);
        }
    }
    if (!s->strict)
        print_grouped(s, CF_UNSUPPORTED, "UNSUPPORTED", 20);
    print_grouped(s, CF_SKIP, "SKIP", 20);
    if (s->verdict.expected)
        printf("EXPECTED %zu results as the expectations file says\n",
               s->verdict.expected);
    if (s->expect != NULL)
        for (size_t i = 0; i < s->expect->n; i++)
            if (s->expect->lines[i].uses == 0) {
                cf_text_escape(s->expect->lines[i].pattern, e1, sizeof e1);
                printf("NOTE %s:%d: '%s' matches no selected test\n",
                       s->expect->path, s->expect->lines[i].line, e1);
            }
}

/* ---------------------------------------------------- --check-results */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A problem of a results file, printed; returns 1. */
static int problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int problem(const char *fmt, ...)
{
    char buf[2 * CF_MSG], esc[8 * CF_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cf_text_escape(buf, esc, sizeof esc);
    printf("check-results: %s\n", esc);
    return 1;
}

/* The strings of a JSON list (borrowed) into a malloc'd array. */
static const char **json_list(json_t *l, size_t *n)
{
    *n = json_array_size(l);
    const char **v = calloc(*n + 1, sizeof *v);
    for (size_t i = 0; v && i < *n; i++)
        v[i] = json_string_value(json_array_get(l, i));
    return v;
}

/* Compare the vector files of the results file with the loaded ones. */
static int check_files(const cf_results_doc *d, const run *r)
{
    int bad = 0;
    char all[65];
    const char *ver = r->n_files ? r->files[0].suite_version : "?";
    if (strcmp(d->suite_version, ver) != 0)
        bad |= problem("suite version %s in the results file, %s installed",
                       d->suite_version, ver);
    for (size_t i = 0; i < json_array_size(d->files); i++) {
        json_t *f = json_array_get(d->files, i);
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *sha = json_string_value(json_object_get(f, "sha256"));
        size_t k = 0;
        while (k < r->n_files) {
            const char *b = strrchr(r->files[k].path, '/');
            if (strcmp(b ? b + 1 : r->files[k].path, name) == 0)
                break;
            k++;
        }
        if (k == r->n_files)
            bad |= problem("%s: in the results file, not in the installed "
                           "suite", name);
        else if (strcmp(sha, r->files[k].sha256) != 0)
            bad |= problem("%s: SHA-256 %s in the results file, %s installed",
                           name, sha, r->files[k].sha256);
    }
    if (json_array_size(d->files) != r->n_files)
        bad |= problem("%zu vector files in the results file, %zu installed",
                       json_array_size(d->files), r->n_files);
    cf_vectors_hash(r->files, r->n_files, all);
    if (strcmp(all, d->vectors_sha256) != 0)
        bad |= problem("suite hash %s in the results file, %s installed",
                       d->vectors_sha256, all);
    return bad;
}

/* The records against the selection: every selected test exactly once,
** nothing else; results against expectations; the summary recounted. */
static int check_records(const cf_results_doc *d, const run *r,
                         cf_expectations *ex, const char **skip_flags,
                         size_t n_skip, int strict, size_t *evidence)
{
    int bad = 0;
    size_t n = r->n_sel, nrec = json_array_size(d->results);
    char (*ids)[96] = calloc(n + 1, sizeof *ids);
    const char **sorted = calloc(n + 1, sizeof *sorted);
    int *count = calloc(n + 1, sizeof *count);
    size_t tally[CF_N_STATUS] = {0}, fails = 0;
    uint64_t nat = 0, fb = 0;
    if (ids == NULL || sorted == NULL || count == NULL) {
        free(ids);
        free(sorted);
        free(count);
        return problem("out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        test_id(r->sel[i], ids[i], sizeof ids[i]);
        sorted[i] = ids[i];
    }
    if (n > 0)
        qsort(sorted, n, sizeof *sorted, cmp_str);
    *evidence = 0;
    for (size_t k = 0; k < nrec; k++) {
        json_t *rec = json_array_get(d->results, k);
        const char *id = json_string_value(json_object_get(rec, "id"));
        const char **hit = n ? bsearch(&id, sorted, n, sizeof *sorted, cmp_str)
                             : NULL;
        if (hit == NULL) {
            bad |= problem("results[%zu]: '%.96s' is not a selected test of "
                           "the suite", k, id);
            continue;
        }
        size_t pos = (size_t)(hit - sorted);
        if (++count[pos] == 2)
            bad |= problem("'%.96s' has more than one record", id);
        int st = cf_status_parse(json_string_value(json_object_get(rec, "result")));
        json_t *seg = json_object_get(rec, "segments");
        json_int_t sn = json_integer_value(json_object_get(seg, "native"));
        json_int_t sf = json_integer_value(json_object_get(seg, "fallback"));
        tally[st]++;
        nat += (uint64_t)sn;
        fb += (uint64_t)sf;
        if (st == CF_PASS && sn > 0)
            (*evidence)++;
        json_t *exp = json_object_get(rec, "expected");
        int want = exp ? cf_status_parse(json_string_value(
                             json_object_get(exp, "result")))
                       : -1;
        if (ex != NULL) {
            const cf_expect_line *l = cf_expectations_match(ex, id, 1);
            int fw = l ? (int)l->result : -1;
            if (fw != want)
                bad |= problem("'%.96s': the expectations file says %s, the "
                               "results file %s", id,
                               fw < 0 ? "nothing" : cf_status_name(fw),
                               want < 0 ? "nothing" : cf_status_name(want));
        }
        if (want >= 0 && want != st) { /* invalid-vector is never expected */
            fails++;
            bad |= problem("'%.96s' is %s, contradicting its expectation %s",
                           id, cf_status_name(st), cf_status_name(want));
        } else if (want < 0 && (st == CF_FAIL || st == CF_INVALID ||
                                (st == CF_UNSUPPORTED && strict))) {
            fails++;
        }
        const cf_test *t =
            r->sel[((const char *)sorted[pos] - (const char *)ids) / sizeof ids[0]];
        for (size_t f = 0; f < n_skip; f++)
            if (cf_test_has_flag(t, skip_flags[f]) && st != CF_SKIP)
                bad |= problem("'%.96s' carries skipped flag %s but is %s",
                               id, skip_flags[f], cf_status_name(st));
    }
    for (size_t i = 0; i < n; i++)
        if (count[i] == 0)
            bad |= problem("'%.96s' is selected but has no record", sorted[i]);
    /* the summary must say what the records say */
    for (int k = 0; k < CF_N_STATUS; k++) {
        json_t *v = json_object_get(d->summary, cf_status_name((cf_status)k));
        if (!json_is_integer(v) || (size_t)json_integer_value(v) != tally[k])
            bad |= problem("summary.%s is not the %zu records that say %s",
                           cf_status_name((cf_status)k), tally[k],
                           cf_status_name((cf_status)k));
    }
    json_t *sn = json_object_get(d->summary, "nativeSegments");
    json_t *sf = json_object_get(d->summary, "fallbackSegments");
    if (!json_is_integer(sn) || (uint64_t)json_integer_value(sn) != nat ||
        !json_is_integer(sf) || (uint64_t)json_integer_value(sf) != fb)
        bad |= problem("summary segment counts differ from the records' "
                       "(%llu native, %llu fallback)",
                       (unsigned long long)nat, (unsigned long long)fb);
    int pass = fails == 0 && *evidence > 0;
    json_t *vd = json_object_get(d->summary, "verdict");
    if (!json_is_string(vd) ||
        strcmp(json_string_value(vd), pass ? "pass" : "fail") != 0)
        bad |= problem("summary.verdict is not '%s', what the records show",
                       pass ? "pass" : "fail");
    if (!pass && !bad)
        problem("the run it records did not pass: %zu results fail it, %zu "
                "tests passed with native segments", fails, *evidence);
    free(ids);
    free(sorted);
    free(count);
    return bad || !pass;
}

static int check_results(const char *path, const char *vectors_opt,
                         const char *expect_path)
{
    cf_results_doc d;
    char err[2 * CF_MSG], vbuf[4200], esc[8 * CF_MSG];
    const char *from = NULL;
    int rc = 1;
    run r;
    memset(&r, 0, sizeof r);
    r.chan = -1;
    cf_expectations ex;
    memset(&ex, 0, sizeof ex);
    if (cf_results_read(path, &d, err, sizeof err)) {
        cf_text_escape(err, esc, sizeof esc);
        fprintf(stderr, "kiln conform: --check-results %s\n", esc);
        return 1;
    }
    if (expect_path && cf_expectations_load(expect_path, &ex, err, sizeof err)) {
        cf_text_escape(err, esc, sizeof esc);
        fprintf(stderr, "kiln conform: --expectations %s\n", esc);
        cf_results_free(&d);
        return 2;
    }
    const char *vectors = find_vectors(vectors_opt, vbuf, sizeof vbuf, &from);
    if (vectors == NULL || load_dir(vectors, &r) != 0)
        goto done;
    printf("check-results: %s against %s (%s)\n", path, vectors, from);
    int bad = check_files(&d, &r);
    selection q;
    memset(&q, 0, sizeof q);
    json_t *o = d.options;
    q.cats = json_list(json_object_get(o, "categories"), &q.n_cats);
    q.filter = json_string_value(json_object_get(o, "filter"));
    q.exclude = json_string_value(json_object_get(o, "exclude"));
    size_t n_skip = 0;
    const char **skips = json_list(json_object_get(o, "skipFlags"), &n_skip);
    if (q.cats == NULL || skips == NULL ||
        parse_shard(json_string_value(json_object_get(o, "shard")), &q.shard_i,
                    &q.shard_n) ||
        select_tests(&r, &q) != 0) {
        bad |= problem("options: the selection cannot be rebuilt");
    } else {
        if (expect_path && d.expectations &&
            strcmp(json_string_value(json_object_get(d.expectations, "sha256")),
                   ex.sha256) != 0)
            bad |= problem("%s is not the expectations file of the run "
                           "(SHA-256 %s, the run used %s)", expect_path,
                           ex.sha256, json_string_value(json_object_get(
                                          d.expectations, "sha256")));
        size_t evidence = 0;
        bad |= check_records(&d, &r, expect_path ? &ex : NULL, skips, n_skip,
                             json_is_true(json_object_get(o, "strict")),
                             &evidence);
        if (!bad)
            printf("check-results: OK: %zu records, every selected test once, "
                   "suite %s (%s), verdict pass (%zu tests passed with native "
                   "segments)\n", json_array_size(d.results), d.suite_version,
                   d.vectors_sha256, evidence);
    }
    free(q.cats);
    free(skips);
    rc = bad ? 1 : 0;
    if (bad)
        printf("check-results: FAILED\n");
done:
    cf_expectations_free(&ex);
    cf_results_free(&d);
    run_free(&r);
    return rc;
}

/* ----------------------------------------------------------------- run */

enum {
    O_BACKEND, O_DEVICE, O_VECTORS, O_CATEGORY, O_FILTER, O_EXCLUDE, O_SHARD,
    O_LIST, O_TAP, O_JUNIT, O_REPORT, O_TIMEOUT, O_SERDE, O_STRICT,
    O_ALLOW_UNAVAILABLE, O_SKIP_FLAG, O_EXPECTATIONS, O_WRITE_EXPECTATIONS,
    O_RESULTS, O_CHECK_RESULTS, O_SERDE_RECORD, O_SERDE_CHECK, O_SWEEP,
    O_SWEEP_SHARD, O_SEED, O_COUNT
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
    [O_STRICT] = {"--strict", CLI_FLAG},
    [O_ALLOW_UNAVAILABLE] = {"--allow-unavailable", CLI_FLAG},
    [O_SKIP_FLAG] = {"--skip-flag", CLI_VALUE},
    [O_EXPECTATIONS] = {"--expectations", CLI_VALUE},
    [O_WRITE_EXPECTATIONS] = {"--write-expectations", CLI_VALUE},
    [O_RESULTS] = {"--results", CLI_VALUE},
    [O_CHECK_RESULTS] = {"--check-results", CLI_VALUE},
    [O_SERDE_RECORD] = {"--serde-record", CLI_VALUE},
    [O_SERDE_CHECK] = {"--serde-check", CLI_VALUE},
    [O_SWEEP] = {"--sweep", CLI_VALUE},
    [O_SWEEP_SHARD] = {"--sweep-shard", CLI_VALUE},
    [O_SEED] = {"--seed", CLI_VALUE},
    [O_COUNT] = {"--count", CLI_VALUE},
    {NULL, CLI_FLAG},
};

/* --serde-record: pass 1's record file from the channel lines, and the
** run-level check that kernels were kept at all.  Non-zero on failure. */
static int serde_record_write(const run *r, const cf_result *res,
                              const char *path)
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
        if (j && json_unpack(j, "{sIso}", "i", &i, "serde", &sd) == 0 &&
            i >= 0 && (size_t)i < r->n_sel && lines[i] == NULL)
            lines[i] = json_incref(sd);
        json_decref(j);
    }
    uint64_t compiles = 0, kept = 0;
    int rc = lines == NULL ||
             cf_serde_write(path, res, (const json_t *const *)lines, r->n_sel,
                            &compiles, &kept) != 0;
    if (!rc && compiles > 0 && kept == 0) {
        printf("kiln conform: --serde pass 1: %llu kernels were compiled and "
               "none was kept in the kernel database (backend %s cannot "
               "persist kernels?)\n", (unsigned long long)compiles,
               r->tg.backend);
        rc = 1;
    }
    for (size_t i = 0; lines && i < r->n_sel; i++)
        json_decref(lines[i]);
    free(lines);
    free(text);
    return rc;
}

/* --serde: choose the backend (it must persist kernels), then run the two
** passes (serde.c).  a->backend is what was asked for. */
static int serde_run(cf_serde_run *a)
{
    probe_out p1, p2;
    if (strcmp(a->backend, "auto") == 0) {
        probe("cuda", (int)a->device, &p1);
        if (p1.status == KILN_OK) {
            a->backend = "cuda";
        } else {
            probe("nvrtc", (int)a->device, &p2);
            if (p2.status != KILN_OK) {
                fprintf(stderr, "kiln conform: --serde needs a backend that "
                        "compiles and persists kernels; neither cuda (%s) nor "
                        "nvrtc (%s) is usable here\n", p1.why, p2.why);
                return 1;
            }
            a->backend = "nvrtc";
        }
    } else if (strcmp(a->backend, "ref") == 0) {
        return cli_usage("kiln conform", "--serde needs a backend that "
                         "compiles and persists kernels (cuda, nvrtc or a "
                         "plugin); ref compiles nothing");
    } else {
        probe(a->backend, (int)a->device, &p1);
        if (p1.status != KILN_OK) {
            fprintf(stderr, "kiln conform: --serde: backend '%s' is not "
                    "usable: %s\n", a->backend, p1.why);
            return 1;
        }
    }
    return cf_serde_drive(a);
}

/* Run the Check suite over r->todo; fills res.  0, or 1 on a setup
** failure (message on stderr). */
static int run_tests(run *r, const char *chosen, int device, double timeout,
                     cf_result *res)
{
    const char *tmpdir = getenv("TMPDIR");
    char tmpl[4200];
    snprintf(tmpl, sizeof tmpl, "%s/kiln-conform-XXXXXX",
             tmpdir && *tmpdir ? tmpdir : "/tmp");
    r->chan = mkstemp(tmpl);
    if (r->chan < 0) {
        fprintf(stderr, "kiln conform: channel file: %s\n", strerror(errno));
        return 1;
    }
    unlink(tmpl);
    fcntl(r->chan, F_SETFL, O_APPEND);
    r->prog = mmap(NULL, sizeof *r->prog, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (r->prog == MAP_FAILED) {
        r->prog = NULL;
        fprintf(stderr, "kiln conform: mmap: %s\n", strerror(errno));
        return 1;
    }
    memset(r->prog, 0, sizeof *r->prog);
    Suite *s = suite_create("kiln-conformance");
    for (size_t k = 0, start = 0; k <= r->n_todo; k++) {
        if (k < r->n_todo &&
            (k == start || r->sel[r->todo[k]]->category ==
                               r->sel[r->todo[start]]->category))
            continue;
        TCase *tc = tcase_create(r->sel[r->todo[start]]->category);
        tcase_set_timeout(tc, timeout);
        tcase_add_loop_test(tc, conform_test, (int)start, (int)k);
        suite_add_tcase(s, tc);
        start = k;
    }
    SRunner *sr = srunner_create(s);
    /* Without fork mode every test runs in this process: one context of
    ** the backend held for the whole run keeps the device's context (and
    ** the loaded libraries) alive, so the tests' own contexts do not
    ** create and destroy it each time.  It compiles nothing and shares no
    ** cache with them.  Not in fork mode: CUDA must not be live in a
    ** process that forks. */
    kiln_context *keep = NULL;
    const char *ka = getenv("KILN_CONFORM_KEEPALIVE");
    if (srunner_fork_status(sr) == CK_NOFORK && strcmp(chosen, "ref") != 0 &&
        !(ka != NULL && strcmp(ka, "0") == 0)) {
        kiln_context_config kc;
        memset(&kc, 0, sizeof kc);
        kc.struct_size = sizeof kc;
        kc.backend = chosen;
        kc.device = device;
        kc.use_env_override = 1;
        if (kiln_context_create(&kc, &keep) != KILN_OK)
            keep = NULL; /* only slower; the tests report the cause */
    }
    /* Check's own selection variables (set when kiln conform runs under
    ** another Check suite) would silently drop tests from this run */
    static const char *const ck_vars[] = {"CK_RUN_SUITE", "CK_RUN_CASE",
                                          "CK_INCLUDE_TAGS", "CK_EXCLUDE_TAGS"};
    for (size_t k = 0; k < sizeof ck_vars / sizeof ck_vars[0]; k++)
        unsetenv(ck_vars[k]);
    current = r;
    srunner_run_all(sr, CK_SILENT);
    current = NULL;
    kiln_context_destroy(keep);
    if (r->tty)
        fprintf(stderr, "\r\033[K");
    collect(r, sr, res);
    printf("\n");
    fflush(stdout);
    srunner_print(sr, CK_MINIMAL); /* Check's closing summary line */
    srunner_free(sr);
    return 0;
}

int kiln_cmd_conform(int argc, char **argv)
{
    static const char cmd[] = "kiln conform";
    const char *backend = "auto", *vectors = NULL, *shard = "1/1";
    const char *tap = NULL, *junit = NULL, *report = NULL, *results = NULL;
    const char *check = NULL, *expect_path = NULL, *write_expect = NULL;
    const char **cats = calloc((size_t)argc + 1, sizeof *cats);
    const char **skip_flags = calloc((size_t)argc + 1, sizeof *skip_flags);
    size_t n_skip = 0;
    selection q;
    long device = 0;
    double timeout = 60;
    int list = 0, strict = 0, allow_unavailable = 0, rc = 2, serde = 0;
    int serde_failed = 0, sweep_all = 0, sweep_print = 0;
    long sweep_i = 1, sweep_n = 1;
    int fuzz_asked = 0;
    uint64_t fuzz_seed = CF_FUZZ_SEED, fuzz_count = CF_FUZZ_COUNT;
    const char *serde_record = NULL, *serde_check = NULL;
    char vbuf[4200], err[2 * CF_MSG], esc[8 * CF_MSG];
    const char *vectors_from = NULL;
    run r;
    cf_expectations ex;
    cf_result *res = NULL;
    FILE *devnull = NULL;
    memset(&q, 0, sizeof q);
    memset(&r, 0, sizeof r);
    memset(&ex, 0, sizeof ex);
    r.chan = -1;
    q.cats = cats;
    q.shard_i = q.shard_n = 1;
    if (cats == NULL || skip_flags == NULL) {
        free(cats);
        free(skip_flags);
        return 2;
    }
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        free(cats);
        free(skip_flags);
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
        case O_CATEGORY: cats[q.n_cats++] = v; break;
        case O_FILTER: q.filter = v; break;
        case O_EXCLUDE: q.exclude = v; break;
        case O_SHARD:
            shard = v;
            if (parse_shard(shard, &q.shard_i, &q.shard_n)) {
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
        case O_STRICT: strict = 1; break;
        case O_ALLOW_UNAVAILABLE: allow_unavailable = 1; break;
        case O_SKIP_FLAG: skip_flags[n_skip++] = v; break;
        case O_EXPECTATIONS: expect_path = v; break;
        case O_WRITE_EXPECTATIONS: write_expect = v; break;
        case O_RESULTS: results = v; break;
        case O_CHECK_RESULTS: check = v; break;
        case O_SWEEP: /* sweep.c; printing a line per sweep test */
            if (strcmp(v, "all") != 0 && strcmp(v, "sample") != 0) {
                cli_usage(cmd, "--sweep needs 'sample' or 'all', not '%s'", v);
                goto out;
            }
            sweep_all = strcmp(v, "all") == 0;
            sweep_print = 1;
            break;
        case O_SWEEP_SHARD:
            if (parse_shard(v, &sweep_i, &sweep_n)) {
                cli_usage(cmd, "--sweep-shard needs I/N with 1 <= I <= N "
                          "(got '%s')", v);
                goto out;
            }
            break;
        case O_SEED:
        case O_COUNT: {
            char *e;
            errno = 0;
            unsigned long long n = strtoull(v, &e, 10);
            if (errno || e == v || *e || v[0] == '-' ||
                n > (opt == O_SEED ? (unsigned long long)INT64_MAX
                                   : CF_FUZZ_MAX_COUNT) ||
                (opt == O_COUNT && n == 0)) {
                cli_usage(cmd, "%s needs an integer (seed 0..2^63-1, count "
                          "1..%d), not '%s'", opt == O_SEED ? "--seed" :
                          "--count", CF_FUZZ_MAX_COUNT, v);
                goto out;
            }
            *(opt == O_SEED ? &fuzz_seed : &fuzz_count) = (uint64_t)n;
            fuzz_asked = 1;
            break;
        }
        default: goto out;
        }
    }
    if (serde + (serde_record != NULL) + (serde_check != NULL) > 1) {
        cli_usage(cmd, "--serde, --serde-record and --serde-check exclude "
                       "each other");
        goto out;
    }
    if (check != NULL) {
        if (serde || serde_record || serde_check || list || tap || junit || report || results || write_expect ||
            q.n_cats || q.filter || q.exclude || n_skip || strict ||
            strcmp(shard, "1/1") != 0 || strcmp(backend, "auto") != 0) {
            cli_usage(cmd, "--check-results takes only --vectors and "
                      "--expectations (the rest comes from the results "
                      "file)");
            goto out;
        }
        rc = check_results(check, vectors, expect_path);
        goto out;
    }
    /* Output paths, the expectations file and the backend's name are
    ** checked now, before anything is read or run. */
    if (!list) {
        const char *const names[] = {"--report", "--junit", "--tap",
                                     "--results", "--write-expectations"};
        const char *const paths[] = {report, junit, tap, results, write_expect};
        if (cli_check_outputs(cmd, names, paths, 5) != 0)
            goto out;
    }
    if (expect_path && cf_expectations_load(expect_path, &ex, err, sizeof err)) {
        cf_text_escape(err, esc, sizeof esc);
        cli_usage(cmd, "--expectations %s", esc);
        goto out;
    }
    char note[600] = "";
    const char *chosen = backend;
    probe_out pr;
    memset(&pr, 0, sizeof pr);
    if ((rc = check_backend_name(cmd, backend)) != 0)
        goto out;
    if (serde && !list) {
        cf_serde_run a = {
            .backend = backend, .device = device, .vectors = vectors,
            .cats = cats, .n_cats = q.n_cats, .filter = q.filter,
            .exclude = q.exclude, .shard = shard, .timeout = timeout,
            .report = report, .junit = junit, .tap = tap, .strict = strict,
            .skip_flags = skip_flags, .n_skip = n_skip,
            .expectations = expect_path, .results = results,
            .write_expect = write_expect};
        rc = serde_run(&a);
        goto out;
    }
    if (!list) {
        rc = choose_backend(cmd, backend, (int)device, allow_unavailable,
                            &chosen, note, sizeof note, &pr);
        if (rc != 0)
            goto out;
    }
    if (serde_record || serde_check) /* the reports say which run this is */
        snprintf(note, sizeof note, "--serde pass %d of 2: %s",
                 serde_record ? 1 : 2,
                 serde_record ? "fills a fresh kernel database"
                              : "every kernel from the database, outputs as "
                                "in pass 1");
    r.serde_pass = serde_record ? 1 : serde_check ? 2 : 0;
    if (serde_check && cf_serde_load(serde_check, &r.serde_records) != 0) {
        rc = 1;
        goto done;
    }
    rc = 2;

    vectors = find_vectors(vectors, vbuf, sizeof vbuf, &vectors_from);
    if (vectors == NULL || load_dir(vectors, &r)) {
        rc = 1;
        goto done;
    }
    for (size_t c = 0; c < q.n_cats; c++)
        fuzz_asked |= strcmp(q.cats[c], "fuzz") == 0;
    if (fuzz_asked && results != NULL) {
        /* a results file certifies the installed vectors; the fuzz tests
        ** are made by this runner, so --check-results could not verify them */
        cli_usage(cmd, "--results does not cover the fuzz category (its "
                  "tests are not in the vector files); run fuzz separately");
        goto done;
    }
    if (fuzz_add(&r, &q, fuzz_asked, fuzz_seed, fuzz_count) != 0)
        goto done;
    if (check_categories(&r, &q, vectors) != 0)
        goto done;
    for (size_t f = 0; f < n_skip; f++)
        if (!flag_known(&r, skip_flags[f])) {
            cf_text_escape(skip_flags[f], esc, sizeof esc);
            cli_usage(cmd, "--skip-flag %s: no test in %s carries this flag "
                      "(the flags are the 'notes' of each vector file)", esc,
                      vectors);
            goto done;
        }
    int sr = select_tests(&r, &q);
    if (sr != 0) {
        rc = sr;
        goto done;
    }
    size_t total = 0;
    for (size_t f = 0; f < r.n_files; f++)
        total += r.files[f].n_tests;
    if (r.n_sel == 0 && q.shard_n == 1 && !list) {
        /* a typo in --filter must not pass; said before anything runs */
        fprintf(stderr, "kiln conform: no test matches the selection\n");
        rc = 1;
        goto done;
    }
    if (list) {
        for (size_t i = 0; i < r.n_sel; i++) {
            char id[96], e[400];
            test_id(r.sel[i], id, sizeof id);
            cf_text_escape(id, e, sizeof e);
            printf("%s\n", e);
        }
        rc = 0;
        goto done;
    }
    {
        char e1[400], e2[2400], e3[2400];
        cf_text_escape(chosen, e1, sizeof e1);
        cf_text_escape(note, e2, sizeof e2);
        cf_text_escape(pr.identity, e3, sizeof e3);
        printf("kiln conform: backend %s%s%s%s; identity: %s\n", e1,
               note[0] ? " (" : "", e2, note[0] ? ")" : "", e3);
    }
    char device_text[32];
    if (pr.device >= 0)
        snprintf(device_text, sizeof device_text, "device %d", pr.device);
    else
        snprintf(device_text, sizeof device_text, "%s",
                 pr.device == -1 ? "host" : "unknown");

    /* Which tests run: the others are skips decided here. */
    res = calloc(r.n_sel + 1, sizeof *res);
    r.todo = calloc(r.n_sel + 1, sizeof *r.todo);
    r.cat_pos = calloc(r.n_sel + 1, sizeof *r.cat_pos);
    r.cat_total = calloc(r.n_sel + 1, sizeof *r.cat_total);
    if (!res || !r.todo || !r.cat_pos || !r.cat_total) {
        rc = 1;
        goto done;
    }
    for (size_t i = 0; i < r.n_sel; i++) {
        cf_result *rs = &res[i];
        rs->test = r.sel[i];
        test_id(r.sel[i], rs->id, sizeof rs->id);
        rs->expect = cf_expectations_match(&ex, rs->id, 1);
        const char *flag = NULL;
        for (size_t f = 0; f < n_skip && flag == NULL; f++)
            if (cf_test_has_flag(r.sel[i], skip_flags[f]))
                flag = skip_flags[f];
        char why[CF_MSG];
        if (rs->expect && rs->expect->result == CF_SKIP)
            snprintf(why, sizeof why, "expected skip (%s:%d): %s", ex.path,
                     rs->expect->line, rs->expect->reason);
        else if (flag != NULL)
            snprintf(why, sizeof why, "flag %s (--skip-flag)", flag);
        else {
            r.todo[r.n_todo++] = i;
            continue;
        }
        rs->status = CF_SKIP;
        rs->msg = strdup(why);
    }
    for (size_t k = 0, start = 0; k <= r.n_todo; k++)
        if (k == r.n_todo || (k > start && r.sel[r.todo[k]]->category !=
                                               r.sel[r.todo[start]]->category)) {
            for (size_t j = start; j < k; j++) {
                r.cat_pos[j] = j - start;
                r.cat_total[j] = k - start;
            }
            start = k;
        }
    printf("kiln conform: %zu of %zu tests from %zu files in %s (%s; shard "
           "%s), %zu to run\n", r.n_sel, total, r.n_files, vectors,
           vectors_from, shard, r.n_todo);
    fflush(stdout);
    r.tg.backend = chosen;
    r.tg.sweep_all = sweep_all;
    r.tg.sweep_print = sweep_print;
    r.tg.sweep_i = (uint32_t)sweep_i;
    r.tg.sweep_n = (uint32_t)sweep_n;
    r.tg.device = (int)device;
    r.tg.plugin = strcmp(chosen, "ref") != 0 && strcmp(chosen, "cuda") != 0 &&
                  strcmp(chosen, "nvrtc") != 0;
    /* Tests that set KILN_DUMP would print their dumps into our report:
    ** send them to /dev/null (the dump text is not what the suite judges). */
    devnull = fopen("/dev/null", "w");
    r.tg.dump_stream = devnull;
    r.tty = isatty(2);
    double t0 = now_ms();
    if (r.n_todo > 0 && run_tests(&r, chosen, (int)device, timeout, res) != 0) {
        rc = 1;
        goto done;
    }
    if (serde_record && serde_record_write(&r, res, serde_record) != 0)
        serde_failed = 1;

    cf_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.backend = chosen;
    sum.backend_note = note;
    sum.backend_identity = pr.identity;
    sum.device = device_text;
    sum.vectors_dir = vectors;
    sum.shard = shard;
    sum.suite_version = r.n_files ? r.files[0].suite_version : NULL;
    sum.strict = strict;
    sum.expect = expect_path ? &ex : NULL;
    sum.results = res;
    sum.n_results = r.n_sel;
    sum.wall_s = (now_ms() - t0) / 1000.0;
    if (cf_summarize(&sum) != 0) {
        fprintf(stderr, "kiln conform: out of memory\n");
        rc = 1;
        goto done;
    }
    print_results(&sum);
    cf_report_text(&sum, stdout);
    int werr = 0;
    if (report)
        werr |= cf_report_markdown(&sum, report);
    if (junit)
        werr |= cf_report_junit(&sum, junit);
    if (tap)
        werr |= cf_report_tap(&sum, tap);
    if (write_expect)
        werr |= cf_report_expectations(&sum, write_expect);
    if (results) {
        cf_run_info ri;
        memset(&ri, 0, sizeof ri);
        char **cl = calloc((size_t)argc + 2, sizeof *cl);
        if (cl != NULL) {
            cl[0] = "kiln";
            for (int i = 0; i < argc; i++)
                cl[i + 1] = argv[i];
        }
        ri.argc = cl ? argc + 1 : 0;
        ri.argv = cl;
        ri.categories = cats;
        ri.n_categories = q.n_cats;
        ri.filter = q.filter;
        ri.exclude = q.exclude;
        ri.skip_flags = skip_flags;
        ri.n_skip_flags = n_skip;
        ri.timeout = timeout;
        ri.vectors_source = vectors_from;
        ri.files = r.files;
        ri.n_files = r.n_files;
        cf_vectors_hash(r.files, r.n_files, ri.vectors_sha256);
        werr |= cf_results_write(&sum, &ri, results);
        free(cl);
    }
    char why[2 * CF_MSG];
    cf_verdict_text(&sum, why, sizeof why);
    if (sum.verdict.pass)
        printf("kiln conform: PASS on %s: %zu tests passed, %zu of them on "
               "the backend's own segments\n", chosen, sum.total.n[CF_PASS],
               sum.verdict.evidence);
    else
        printf("kiln conform: FAIL on %s: %s\n", chosen, why);
    rc = sum.verdict.pass && !werr && !serde_failed ? 0 : 1;
    cf_summary_free(&sum);
done:
    for (size_t i = 0; res && i < r.n_sel; i++)
        free(res[i].msg);
    free(res);
    if (devnull)
        fclose(devnull);
    json_decref(r.serde_records);
    run_free(&r);
out:
    cf_expectations_free(&ex);
    free(cats);
    free(skip_flags);
    return rc;
}

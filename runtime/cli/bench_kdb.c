/*
** bench_kdb.c -- `kiln bench kdb`: what the kernel database buys
** (docs/kernel-db.md, "Measured").  Time to the first result of a
** 10-segment fusion (exp, then nine rounds of row sum x value -> tanh:
** one pointwise and nine reduction segments) in a FRESH PROCESS, cold (an
** empty database: every kernel compiled) against warm (the database the
** cold run filled: every kernel loaded), and the size on disk per kernel.
**
** Each run is this program started again ("kiln bench kdb --child DIR"),
** which creates a context with enable=kernel_db on DIR, executes the
** fusion once on a 64x64 f32 input, reads the output back, and prints
** one JSON line: the milliseconds of context creation, of the first
** execute (with the read-back), the segments' kernel_db outcomes and the
** compile count.  The input is small (64x64 f32) so that the time is the
** kernels' and not the arithmetic's (the nvrtc backend computes on the CPU).  The parent also times each child from fork to exit.
** Cold runs each start from an emptied directory.  A warm run that
** compiled anything, or a cold run that did not store every kernel, is an
** error: the numbers would not measure the database.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "kernel_db.h"
#include "kiln.h"

#define SEGMENTS 10

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The fusion: 1 pointwise + 9 reduction segments. */
static char *fusion_text(void)
{
    static char buf[2048];
    size_t n = (size_t)snprintf(buf, sizeof buf,
                                "kiln.fusion 1\n%%x = input f32 [?, ?]\n%%v0 = exp %%x\n");
    for (int i = 1; i < SEGMENTS; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "%%r%d = sum %%v%d axes=[1] keepdim\n%%m%d = mul %%v%d %%r%d\n"
                              "%%v%d = tanh %%m%d\n",
                              i, i - 1, i, i - 1, i, i, i);
    snprintf(buf + n, sizeof buf - n, "output %%v%d\n", SEGMENTS - 1);
    return buf;
}

/* The child: one fresh process, one first result. */
static int child(const char *backend, int device)
{
    double t0 = now_ms();
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = backend;
    cfg.device = device;
    cfg.use_env_override = 1;
    cfg.env_enable = "kernel_db";
    kiln_context *ctx = NULL;
    kiln_fusion *f = NULL;
    kiln_tensor *in = NULL, *out = NULL;
    kiln_exec_info *info = NULL;
    const char *kf = fusion_text();
    int64_t sz[2] = {64, 64};
    static float x[64 * 64], y[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        x[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    if (kiln_context_create(&cfg, &ctx) != KILN_OK) {
        fprintf(stderr, "kiln bench kdb: %s\n", kiln_last_error());
        return 1;
    }
    double t1 = now_ms();
    kiln_memory mem = strcmp(kiln_context_backend(ctx), "cuda") == 0 ? KILN_MEM_DEVICE
                                                                    : KILN_MEM_HOST;
    int rc = 1;
    if (kiln_fusion_parse(kf, strlen(kf), &f) != KILN_OK ||
        kiln_tensor_create(ctx, KILN_F32, 2, sz, NULL, mem, NULL, &in) != KILN_OK ||
        kiln_tensor_write(ctx, in, x, sizeof x) != KILN_OK ||
        kiln_exec_info_create(&info) != KILN_OK) {
        fprintf(stderr, "kiln bench kdb: setup: %s\n", kiln_last_error());
        goto done;
    }
    double t2 = now_ms();
    if (kiln_execute(ctx, f, &in, 1, &out, 1, NULL, info) != KILN_OK ||
        kiln_tensor_read(ctx, out, y, sizeof y) != KILN_OK) {
        fprintf(stderr, "kiln bench kdb: execute: %s\n", kiln_last_error());
        goto done;
    }
    double t3 = now_ms();
    kiln_counters c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    kiln_context_counters(ctx, &c);
    printf("{\"create_ms\": %.3f, \"first_ms\": %.3f, \"to_result_ms\": %.3f, "
           "\"compiles\": %llu, \"segments\": %zu, \"outcomes\": \"",
           t1 - t0, t3 - t2, t3 - t0, (unsigned long long)c.compiles,
           kiln_exec_info_segment_count(info));
    for (size_t i = 0; i < kiln_exec_info_segment_count(info); i++) {
        kiln_segment_info si;
        memset(&si, 0, sizeof si);
        si.struct_size = sizeof si;
        kiln_exec_info_segment(info, i, &si);
        printf("%s%s", i ? "," : "", kiln_db_outcome_name(si.kernel_db));
    }
    printf("\", \"y0\": \"%a\"}\n", (double)y[0]);
    rc = 0;
done:
    kiln_exec_info_destroy(info);
    kiln_tensor_destroy(in);
    kiln_tensor_destroy(out);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
    return rc;
}

typedef struct sample {
    double create, first, to_result, process;
    unsigned long long compiles;
    size_t segments;
    char outcomes[256], y0[64];
} sample;

/* Run one child on dir; parse its line. */
static int run_child(const char *backend, int device, const char *dir, sample *s)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    char dev[16];
    snprintf(dev, sizeof dev, "%d", device);
    fflush(NULL);
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("KILN_CACHE_DIR", dir, 1);
        setenv("KILN_CACHE_MODE", "rw", 1);
        unsetenv("KILN_CACHE_MAX_BYTES");
        char *argv[] = {"kiln", "bench", "kdb", "--child", (char *)backend, "--device",
                        dev, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fd[1]);
    char line[1024];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof line - 1 && (n = read(fd[0], line + got, sizeof line - 1 - got)) > 0)
        got += (size_t)n;
    line[got] = '\0';
    close(fd[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    s->process = now_ms() - t0;
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        return -1;
    if (sscanf(line, "{\"create_ms\": %lf, \"first_ms\": %lf, \"to_result_ms\": %lf, "
                     "\"compiles\": %llu, \"segments\": %zu, \"outcomes\": \"%255[^\"]\", "
                     "\"y0\": \"%63[^\"]\"",
               &s->create, &s->first, &s->to_result, &s->compiles, &s->segments,
               s->outcomes, s->y0) != 7)
        return -1;
    return 0;
}

static int all_are(const char *list, const char *word)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (strcmp(t, word) != 0)
            return 0;
    return 1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct sizes {
    uint64_t n, bytes, max;
} sizes;

static void add_size(void *arg, const kiln__kdb_item *it)
{
    sizes *s = arg;
    if (it->kind != KILN__KDB_ITEM_ENTRY)
        return;
    s->n++;
    s->bytes += it->size;
    if (it->size > s->max)
        s->max = it->size;
}

static void entry_sizes(kiln__kdb *db, uint64_t *n, uint64_t *bytes, uint64_t *max)
{
    sizes s = {0, 0, 0};
    char err[256];
    kiln__kdb_scan(db, 0, 0, add_size, &s, err, sizeof err);
    *n = s.n, *bytes = s.bytes, *max = s.max;
}

int kiln_bench_kdb(int argc, char **argv)
{
    static const char cmd[] = "kiln bench kdb";
    static const cli_opt opts[] = {{"--backend", CLI_VALUE}, {"--device", CLI_VALUE},
                                   {"--runs", CLI_VALUE},    {"--json", CLI_FLAG},
                                   {"--child", CLI_VALUE},   {NULL, CLI_FLAG}};
    if (kiln_cli_wants_help(argc, argv)) {
        printf("usage: kiln bench kdb [--backend nvrtc|cuda|PLUGIN] [--device N]\n"
               "                      [--runs N] [--json]\n\n"
               "Time to the first result of a 10-segment fusion in a fresh process,\n"
               "cold (an empty kernel database: every kernel compiled) and warm (the\n"
               "database the cold run filled: every kernel loaded), median of --runs\n"
               "pairs (default 5), and the size on disk per kernel.  Each run is a new\n"
               "process (this program again); the database is a fresh directory under\n"
               "$TMPDIR, removed at the end.  The default backend is nvrtc.\n"
               "Exit status: 0 measured, 1 a run failed or did not use the database as\n"
               "it should, 2 usage error.\n");
        return 0;
    }
    const char *backend = "nvrtc", *child_be = NULL, *v;
    long device = 0, runs = 5;
    int json = 0, opt;
    cli_args args;
    cli_args_init(&args, cmd, opts, argc, argv);
    while ((opt = cli_next(&args, &v)) != CLI_DONE) {
        switch (opt) {
        case CLI_USAGE: return 2;
        case CLI_POSITIONAL: return cli_usage(cmd, "unexpected argument '%s'", v);
        case 0: backend = v; break;
        case 1:
            if (cli_long(cmd, "--device", v, 0, 1023, &device) != 0)
                return 2;
            break;
        case 2:
            if (cli_long(cmd, "--runs", v, 1, 100, &runs) != 0)
                return 2;
            break;
        case 3: json = 1; break;
        case 4: child_be = v; break;
        default: return 2;
        }
    }
    if (child_be != NULL)
        return child(child_be, (int)device);
    const char *tmp = getenv("TMPDIR");
    char base[4096], dir[4200];
    snprintf(base, sizeof base, "%s/kiln-bench-kdb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(base) == NULL) {
        fprintf(stderr, "%s: mkdtemp: %s\n", cmd, strerror(errno));
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/db", base);
    kiln__kdb *db = kiln__kdb_create(dir, KILN__KDB_RW, 0, stderr);
    double cold_first[100], warm_first[100], cold_res[100], warm_res[100];
    double cold_proc[100], warm_proc[100], create[100];
    uint64_t n_ent = 0, bytes = 0, max = 0;
    int rc = 0;
    sample c, w;
    char err[256];
    for (long r = 0; r < runs && rc == 0; r++) {
        uint64_t removed;
        if (kiln__kdb_ready(db))
            kiln__kdb_clear(db, &removed, err, sizeof err);
        if (run_child(backend, (int)device, dir, &c) != 0 ||
            run_child(backend, (int)device, dir, &w) != 0) {
            fprintf(stderr, "%s: a run on backend %s failed\n", cmd, backend);
            rc = 1;
            break;
        }
        if (c.segments != SEGMENTS || !all_are(c.outcomes, "stored") ||
            !all_are(w.outcomes, "hit") || w.compiles != 0 || strcmp(c.y0, w.y0) != 0) {
            fprintf(stderr, "%s: the runs did not use the database as expected (cold: "
                            "%zu segments, %s; warm: %llu compiles, %s; first element "
                            "%s vs %s)\n",
                    cmd, c.segments, c.outcomes, w.compiles, w.outcomes, c.y0, w.y0);
            rc = 1;
            break;
        }
        if (r == 0)
            entry_sizes(db, &n_ent, &bytes, &max);
        cold_first[r] = c.first, warm_first[r] = w.first;
        cold_res[r] = c.to_result, warm_res[r] = w.to_result;
        cold_proc[r] = c.process, warm_proc[r] = w.process;
        create[r] = w.create;
    }
    uint64_t removed;
    if (kiln__kdb_ready(db))
        kiln__kdb_clear(db, &removed, err, sizeof err);
    kiln__kdb_destroy(db);
    char path[4300];
    snprintf(path, sizeof path, "%s/stats", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/stats.lock", dir);
    unlink(path);
    rmdir(dir);
    rmdir(base);
    if (rc != 0)
        return rc;
    int n = (int)runs;
    double cf = median(cold_first, n), wf = median(warm_first, n);
    double cr = median(cold_res, n), wr = median(warm_res, n);
    double cp = median(cold_proc, n), wp = median(warm_proc, n), cc = median(create, n);
    if (json) {
        printf("{\"bench\": \"kdb\", \"backend\": \"%s\", \"segments\": %d, \"runs\": %d, "
               "\"cold_first_execute_ms\": %.3f, \"warm_first_execute_ms\": %.3f, "
               "\"speedup_first_execute\": %.1f, \"cold_to_result_ms\": %.3f, "
               "\"warm_to_result_ms\": %.3f, \"speedup_to_result\": %.1f, "
               "\"context_create_ms\": %.3f, \"cold_process_ms\": %.3f, "
               "\"warm_process_ms\": %.3f, \"kernels\": %llu, \"bytes_per_kernel\": %llu, "
               "\"max_kernel_bytes\": %llu}\n",
               backend, SEGMENTS, n, cf, wf, cf / wf, cr, wr, cr / wr, cc, cp, wp,
               (unsigned long long)n_ent,
               (unsigned long long)(n_ent ? bytes / n_ent : 0), (unsigned long long)max);
    } else {
        printf("kiln bench kdb: a %d-segment fusion in a fresh process on %s, median "
               "of %d cold/warm pairs\n\n", SEGMENTS, backend, n);
        printf("%-44s %10s %10s %8s\n", "", "cold ms", "warm ms", "speedup");
        printf("%-44s %10.2f %10.2f %7.1fx\n", "first execute (+ read back)", cf, wf, cf / wf);
        printf("%-44s %10.2f %10.2f %7.1fx\n", "context creation to first result", cr, wr,
               cr / wr);
        printf("%-44s %10.2f %10.2f %7.1fx\n", "whole process (fork to exit)", cp, wp,
               cp / wp);
        printf("\ncontext creation (warm) %.2f ms; %llu kernels on disk, %llu bytes per "
               "kernel on average, %llu at most\n",
               cc, (unsigned long long)n_ent,
               (unsigned long long)(n_ent ? bytes / n_ent : 0), (unsigned long long)max);
    }
    return 0;
}

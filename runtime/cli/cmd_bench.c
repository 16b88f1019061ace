/*
** cmd_bench.c -- `kiln bench overhead|gpu|all [--json]`.
**
** overhead: host time of one cache-hit kiln_execute of a 1-element `neg`
** fusion on the reference backend, without and with a 2-item execute option
** list (enable=fast_math, disable=fma).  Each case runs RUNS timed loops of
** CALLS calls after a warm-up; the per-call time of each loop is recorded
** and the median is reported against the targets (<= 1 us, <= 1.3 us).
** The context reads no environment (override strings unset), so KILN_*
** variables cannot change what is measured.  A MISS is reported, not an
** error: the exit status is 0 whenever the measurement itself ran.
** gpu: implemented in bench_gpu.c (kiln_bench_gpu).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "kiln.h"

#define RUNS 21
#define CALLS 20000

static void usage(FILE *o)
{
    fprintf(o, "usage: kiln bench overhead|all [--json[=FILE]]\n"
               "       kiln bench gpu [--json[=FILE]] [--reps N] [--device N] [--quick]\n"
               "       kiln bench kdb [--backend B] [--runs N] [--json]\n\n"
               "  overhead  host time of a cache-hit execute of a 1-element fusion\n"
               "            on ref, without and with a 2-item execute option list;\n"
               "            median of %d runs x %d calls; targets 1 us / 1.3 us\n"
               "  gpu       GPU benchmarks (needs the cuda backend; `kiln bench gpu\n"
               "            --help` documents its options)\n"
               "  kdb       the kernel database: first result of a 10-segment fusion\n"
               "            in a fresh process, cold vs warm (`kiln bench kdb --help`)\n"
               "  all       both\n"
               "  --json    machine-readable output on stdout; --json FILE (or\n"
               "            --json=FILE) writes it to FILE instead (for `all`, FILE\n"
               "            receives the gpu rows and the overhead JSON goes to\n"
               "            stdout).  FILE is checked before anything runs and\n"
               "            replaced in one step when the benchmark ends.\n\n"
               "The benchmark name comes first.  Exit status: 0 when the\n"
               "measurement ran (a missed target is reported, not an error),\n"
               "1 when it could not run, 2 usage error.\n",
            RUNS, CALLS);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Run the overhead benchmark; the result goes to `dst` (stdout or a
** file), as JSON when json is set. */
static int bench_overhead(int json, FILE *dst)
{
    static const char kf[] = "kiln.fusion 1\n%0 = input f32 [?]\n%1 = neg %0\n"
                             "output %1\n";
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = "ref";
    cfg.use_env_override = 1; /* measure without any KILN_* influence */
    kiln_context *ctx = NULL;
    kiln_fusion *f = NULL;
    kiln_tensor *in = NULL, *out = NULL;
    float x = 1.5f, y = 0;
    int64_t one = 1;
    int rc = 1;
    if (kiln_context_create(&cfg, &ctx) != KILN_OK ||
        kiln_fusion_parse(kf, sizeof kf - 1, &f) != KILN_OK ||
        kiln_tensor_create(ctx, KILN_F32, 1, &one, NULL, KILN_MEM_HOST, &x, &in) != KILN_OK ||
        kiln_tensor_create(ctx, KILN_F32, 1, &one, NULL, KILN_MEM_HOST, &y, &out) != KILN_OK) {
        fprintf(stderr, "kiln bench overhead: setup: %s\n", kiln_last_error());
        goto done;
    }
    static const char *const en[] = {"fast_math"};
    static const char *const dis[] = {"fma"};
    const kiln_exec_options with = {sizeof with, en, 1, dis, 1, NULL};
    struct {
        const char *name, *label;
        const kiln_exec_options *opts;
        double target_us, median_us;
    } cases[] = {
        {"no_options", "no execute options", NULL, 1.0, 0},
        {"two_items", "2 execute items", &with, 1.3, 0},
    };
    for (size_t c = 0; c < 2; c++) {
        double per[RUNS];
        kiln_tensor *ins[1] = {in};
        for (int w = 0; w < 1000; w++) /* warm-up: plan + kernel cached */
            if (kiln_execute(ctx, f, ins, 1, &out, 1, cases[c].opts, NULL) != KILN_OK) {
                fprintf(stderr, "kiln bench overhead: execute: %s\n", kiln_last_error());
                goto done;
            }
        if (y != -1.5f) {
            fprintf(stderr, "kiln bench overhead: wrong result %g\n", (double)y);
            goto done;
        }
        for (int r = 0; r < RUNS; r++) {
            double t0 = now_s();
            for (int k = 0; k < CALLS; k++)
                kiln_execute(ctx, f, ins, 1, &out, 1, cases[c].opts, NULL);
            per[r] = (now_s() - t0) / CALLS * 1e6;
        }
        qsort(per, RUNS, sizeof per[0], cmp_double);
        cases[c].median_us = per[RUNS / 2];
    }
    if (json) {
        fprintf(dst, "{\"bench\": \"overhead\", \"backend\": \"ref\", \"runs\": %d, "
               "\"calls\": %d, \"results\": [",
               RUNS, CALLS);
        for (size_t c = 0; c < 2; c++)
            fprintf(dst, "%s{\"case\": \"%s\", \"median_us\": %.4f, \"target_us\": %.2f, "
                   "\"pass\": %s}",
                   c ? ", " : "", cases[c].name, cases[c].median_us,
                   cases[c].target_us,
                   cases[c].median_us <= cases[c].target_us ? "true" : "false");
        fprintf(dst, "]}\n");
    } else {
        fprintf(dst, "kiln bench overhead: cache-hit execute of a 1-element neg (f32) on "
               "ref\nmedian of %d runs x %d calls\n\n",
               RUNS, CALLS);
        fprintf(dst, "%-22s %10s %10s  %s\n", "case", "median_us", "target_us", "result");
        for (size_t c = 0; c < 2; c++)
            fprintf(dst, "%-22s %10.3f %10.2f  %s\n", cases[c].label, cases[c].median_us,
                   cases[c].target_us,
                   cases[c].median_us <= cases[c].target_us ? "PASS" : "MISS");
    }
    rc = 0;
done:
    kiln_tensor_destroy(in);
    kiln_tensor_destroy(out);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
    return rc;
}

int kiln_cmd_bench(int argc, char **argv)
{
    static const char cmd[] = "kiln bench";
    static const cli_opt opts[] = {{"--json", CLI_OPTIONAL}, {NULL, CLI_FLAG}};
    /* `kiln bench gpu ARGS...`: the GPU benchmark parses its own options
    ** (--json FILE, --reps N, --device N, --quick) and has its own help. */
    if (argc >= 2 && strcmp(argv[1], "gpu") == 0)
        return kiln_bench_gpu(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "kdb") == 0) /* bench_kdb.c */
        return kiln_bench_kdb(argc - 1, argv + 1);
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *what = argc >= 2 ? argv[1] : NULL;
    if (what == NULL || what[0] == '-')
        return cli_usage(cmd, "the first argument must name a benchmark "
                         "(overhead, gpu, kdb, all)");
    if (strcmp(what, "overhead") != 0 && strcmp(what, "all") != 0)
        return cli_usage(cmd, "unknown benchmark '%s' (overhead, gpu, kdb, all)",
                         what);
    const char *json_file = NULL, *v;
    int json = 0, opt;
    cli_args args;
    cli_args_init(&args, cmd, opts, argc - 1, argv + 1);
    while ((opt = cli_next(&args, &v)) != CLI_DONE) {
        if (opt == CLI_USAGE)
            return 2;
        if (opt == CLI_POSITIONAL)
            return cli_usage(cmd, "unexpected argument '%s'", v);
        json = 1;
        json_file = v;
    }
    const char *const names[] = {"--json"};
    if (cli_check_outputs(cmd, names, &json_file, 1) != 0)
        return 2;
    if (strcmp(what, "all") == 0) {
        int a = bench_overhead(json, stdout);
        char *gpu_argv[4] = {"gpu", json ? "--json" : NULL, (char *)json_file,
                             NULL};
        int b = kiln_bench_gpu(json ? (json_file ? 3 : 2) : 1, gpu_argv);
        return a > b ? a : b;
    }
    if (json_file == NULL)
        return bench_overhead(json, stdout);
    char err[4400];
    cli_out o;
    if (cli_out_open(&o, json_file, err, sizeof err) != 0) {
        fprintf(stderr, "kiln bench: %s\n", err);
        return 1;
    }
    int rc = bench_overhead(json, o.fp);
    if (rc != 0) {
        cli_out_abort(&o);
        return rc;
    }
    if (cli_out_commit(&o, json_file, err, sizeof err) != 0) {
        fprintf(stderr, "kiln bench: %s\n", err);
        return 1;
    }
    return 0;
}

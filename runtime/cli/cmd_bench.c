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
    fprintf(o, "usage: kiln bench overhead|all [--json [FILE]]\n       kiln bench gpu [--json FILE] [--reps N] [--device N] [--quick]\n\n"
               "  overhead  host time of a cache-hit execute of a 1-element fusion\n"
               "            on ref, without and with a 2-item execute option list;\n"
               "            median of %d runs x %d calls; targets 1 us / 1.3 us\n"
               "  gpu       GPU benchmarks (needs the cuda backend)\n"
               "  all       both\n"
               "  --json    machine-readable output\n",
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

static int bench_overhead(int json)
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
        printf("{\"bench\": \"overhead\", \"backend\": \"ref\", \"runs\": %d, "
               "\"calls\": %d, \"results\": [",
               RUNS, CALLS);
        for (size_t c = 0; c < 2; c++)
            printf("%s{\"case\": \"%s\", \"median_us\": %.4f, \"target_us\": %.2f, "
                   "\"pass\": %s}",
                   c ? ", " : "", cases[c].name, cases[c].median_us,
                   cases[c].target_us,
                   cases[c].median_us <= cases[c].target_us ? "true" : "false");
        printf("]}\n");
    } else {
        printf("kiln bench overhead: cache-hit execute of a 1-element neg (f32) on "
               "ref\nmedian of %d runs x %d calls\n\n",
               RUNS, CALLS);
        printf("%-22s %10s %10s  %s\n", "case", "median_us", "target_us", "result");
        for (size_t c = 0; c < 2; c++)
            printf("%-22s %10.3f %10.2f  %s\n", cases[c].label, cases[c].median_us,
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
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    /* `kiln bench gpu ARGS...`: the GPU benchmark parses its own options
    ** (--json FILE, --reps N, --device N, --quick). */
    if (argc >= 2 && strcmp(argv[1], "gpu") == 0)
        return kiln_bench_gpu(argc - 1, argv + 1);
    const char *what = NULL;
    const char *json_file = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-' && what != NULL)
                json_file = argv[++i]; /* for the gpu part of `all` */
        }
        else if (what == NULL && argv[i][0] != '-')
            what = argv[i];
        else {
            fprintf(stderr, "kiln bench: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (what == NULL) {
        usage(stderr);
        return 2;
    }
    char *gpu_argv[4] = {"gpu", json ? "--json" : NULL, (char *)json_file, NULL};
    int gpu_argc = json ? (json_file ? 3 : 2) : 1;
    if (strcmp(what, "overhead") == 0)
        return bench_overhead(json);
    if (strcmp(what, "all") == 0) {
        int a = bench_overhead(json);
        int b = kiln_bench_gpu(gpu_argc, gpu_argv);
        return a > b ? a : b;
    }
    fprintf(stderr, "kiln bench: unknown benchmark '%s' (overhead, gpu, all)\n", what);
    return 2;
}

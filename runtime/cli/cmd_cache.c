/*
** cmd_cache.c -- `kiln cache`: the cache capacities of a context and its
** counters, optionally after running a fusion a few times with random
** inputs (every `?` axis 4, seed 1), so the effect of options on the plan
** and kernel caches can be seen from a shell.  The counters belong to the
** context this command creates; nothing persists between invocations.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/npy.h"
#include "kiln.h"

#define DEFAULT_PLAN 256
#define DEFAULT_KERNEL 1024
#define MAX_ITEMS 64
#define MAX_IO 64

static void usage(FILE *o)
{
    fprintf(o,
            "usage: kiln cache [--json] [--backend B] [--plan-capacity N]\n"
            "                  [--kernel-capacity N] [FUSION.kf [--repeat N]\n"
            "                  [--enable ITEM]... [--disable ITEM]...]\n\n"
            "Print the plan/kernel cache capacities and the context counters\n"
            "(executes, plan hits/misses/evictions, kernel hits/misses/evictions,\n"
            "compiles, loads).  With FUSION.kf the fusion first runs N times\n"
            "(default 1) with random inputs (every ? axis 4, seed 1) under the\n"
            "given execute options.  Defaults: %d plans, %d kernels.\n",
            DEFAULT_PLAN, DEFAULT_KERNEL);
}

static int run_fusion(kiln_context *ctx, const char *path, long repeat,
                      const kiln_exec_options *eo)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        fprintf(stderr, "kiln cache: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    int c;
    while ((c = fgetc(fp)) != EOF) {
        if (len + 1 >= cap) {
            char *t = realloc(text, cap ? cap * 2 : 4096);
            if (t == NULL)
                break;
            text = t;
            cap = cap ? cap * 2 : 4096;
        }
        text[len++] = (char)c;
    }
    fclose(fp);
    kiln_fusion *f = NULL;
    kiln_tensor *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
    int n_in = 0, n_out = 0, rc = 1;
    if (kiln_fusion_parse(text ? text : "", len, &f) != KILN_OK) {
        fprintf(stderr, "kiln cache: %s:%s\n", path, kiln_last_error());
        goto done;
    }
    kiln_fusion_num_inputs(f, &n_in);
    kiln_fusion_num_outputs(f, &n_out);
    if (n_in > MAX_IO || n_out > MAX_IO) {
        fprintf(stderr, "kiln cache: too many inputs or outputs\n");
        goto done;
    }
    uint64_t state = 1;
    for (int i = 0; i < n_in; i++) {
        kiln_dtype dt;
        int rank;
        uint8_t bc[KILN_MAX_RANK];
        int64_t sz[KILN_MAX_RANK];
        kiln_fusion_io(f, 0, i, &dt, &rank, bc);
        size_t n = 1;
        for (int d = 0; d < rank; d++) {
            sz[d] = bc[d] ? 1 : 4;
            n *= (size_t)sz[d];
        }
        void *buf = malloc(n * kiln_dtype_size(dt) + 1);
        if (buf == NULL)
            goto done;
        kiln_npy_random(dt, n, &state, buf);
        kiln_memory mem = KILN_MEM_DEVICE;
        kiln_status s = kiln_tensor_create(ctx, dt, rank, sz, NULL, mem, NULL, &in[i]);
        if (s != KILN_OK)
            s = kiln_tensor_create(ctx, dt, rank, sz, NULL, KILN_MEM_HOST, NULL, &in[i]);
        if (s == KILN_OK)
            s = kiln_tensor_write(ctx, in[i], buf, n * kiln_dtype_size(dt));
        free(buf);
        if (s != KILN_OK) {
            fprintf(stderr, "kiln cache: input %d: %s\n", i, kiln_last_error());
            goto done;
        }
    }
    for (long r = 0; r < repeat; r++) {
        for (int j = 0; j < n_out; j++) {
            kiln_tensor_destroy(out[j]);
            out[j] = NULL;
        }
        if (kiln_execute(ctx, f, in, (size_t)n_in, out, (size_t)n_out, eo, NULL) !=
            KILN_OK) {
            fprintf(stderr, "kiln cache: execute: %s\n", kiln_last_error());
            goto done;
        }
    }
    rc = 0;
done:
    for (int i = 0; i < MAX_IO; i++) {
        kiln_tensor_destroy(in[i]);
        kiln_tensor_destroy(out[i]);
    }
    kiln_fusion_destroy(f);
    free(text);
    return rc;
}

static int parse_pos(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || v < 1)
        return -1;
    *out = v;
    return 0;
}

int kiln_cmd_cache(int argc, char **argv)
{
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    int json = 0;
    const char *backend = "auto", *path = NULL;
    long plan_cap = DEFAULT_PLAN, kern_cap = DEFAULT_KERNEL, repeat = 1;
    const char *en[MAX_ITEMS], *dis[MAX_ITEMS];
    size_t n_en = 0, n_dis = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = strcmp(a, "--backend") == 0 || strcmp(a, "--plan-capacity") == 0 ||
                    strcmp(a, "--kernel-capacity") == 0 || strcmp(a, "--repeat") == 0 ||
                    strcmp(a, "--enable") == 0 || strcmp(a, "--disable") == 0;
        if (takes && v == NULL) {
            fprintf(stderr, "kiln cache: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--backend") == 0) {
            backend = v, i++;
        } else if (strcmp(a, "--enable") == 0 && n_en < MAX_ITEMS) {
            en[n_en++] = v, i++;
        } else if (strcmp(a, "--disable") == 0 && n_dis < MAX_ITEMS) {
            dis[n_dis++] = v, i++;
        } else if (takes && strcmp(a, "--enable") != 0 && strcmp(a, "--disable") != 0) {
            long n;
            if (parse_pos(v, &n) != 0) {
                fprintf(stderr, "kiln cache: %s needs a positive integer, not '%s'\n", a, v);
                return 2;
            }
            if (strcmp(a, "--plan-capacity") == 0) plan_cap = n;
            else if (strcmp(a, "--kernel-capacity") == 0) kern_cap = n;
            else repeat = n;
            i++;
        } else if (a[0] != '-' && path == NULL) {
            path = a;
        } else {
            fprintf(stderr, "kiln cache: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = backend;
    cfg.plan_cache_capacity = (size_t)plan_cap;
    cfg.kernel_cache_capacity = (size_t)kern_cap;
    kiln_context *ctx = NULL;
    if (kiln_context_create(&cfg, &ctx) != KILN_OK) {
        fprintf(stderr, "kiln cache: %s\n", kiln_last_error());
        return 1;
    }
    int rc = 0;
    kiln_exec_options eo = {sizeof eo, en, n_en, dis, n_dis, NULL};
    if (path != NULL)
        rc = run_fusion(ctx, path, repeat, &eo);
    kiln_counters c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    kiln_context_counters(ctx, &c);
    if (json) {
        printf("{\"backend\": \"%s\", \"plan_capacity\": %ld, \"kernel_capacity\": %ld, "
               "\"executes\": %llu, \"plan_hits\": %llu, \"plan_misses\": %llu, "
               "\"plan_evictions\": %llu, \"kernel_hits\": %llu, \"kernel_misses\": %llu, "
               "\"kernel_evictions\": %llu, \"compiles\": %llu, \"kernel_loads\": %llu}\n",
               kiln_context_backend(ctx), plan_cap, kern_cap,
               (unsigned long long)c.executes, (unsigned long long)c.plan_hits,
               (unsigned long long)c.plan_misses, (unsigned long long)c.plan_evictions,
               (unsigned long long)c.kernel_hits, (unsigned long long)c.kernel_misses,
               (unsigned long long)c.kernel_evictions, (unsigned long long)c.compiles,
               (unsigned long long)c.kernel_loads);
    } else {
        printf("backend          %s\n", kiln_context_backend(ctx));
        printf("plan cache       capacity %ld: %llu hits, %llu misses, %llu evictions\n",
               plan_cap, (unsigned long long)c.plan_hits,
               (unsigned long long)c.plan_misses, (unsigned long long)c.plan_evictions);
        printf("kernel cache     capacity %ld: %llu hits, %llu misses, %llu evictions\n",
               kern_cap, (unsigned long long)c.kernel_hits,
               (unsigned long long)c.kernel_misses, (unsigned long long)c.kernel_evictions);
        printf("executes         %llu\ncompiles         %llu\nkernel loads     %llu\n",
               (unsigned long long)c.executes, (unsigned long long)c.compiles,
               (unsigned long long)c.kernel_loads);
    }
    kiln_context_destroy(ctx);
    return rc;
}

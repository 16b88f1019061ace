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
            "given execute options.  The counters belong to the context this\n"
            "command creates; nothing persists between invocations.\n\n"
            "  --json               one JSON object instead of the table\n"
            "  --backend B          ref, cuda, auto (default) or a plugin path\n"
            "  --plan-capacity N    plan cache entries (default %d)\n"
            "  --kernel-capacity N  kernel cache entries (default %d)\n"
            "  --repeat N           run FUSION.kf N times (default 1)\n"
            "  --enable/--disable ITEM  execute option elements (one item each)\n\n"
            "Options take their value as --opt VALUE or --opt=VALUE.  When the\n"
            "context or a run fails nothing is printed on stdout.\n"
            "Exit status: 0 ok, 1 the context or a run failed, 2 usage error.\n",
            DEFAULT_PLAN, DEFAULT_KERNEL);
}

static int run_fusion(kiln_context *ctx, const char *path, long repeat,
                      const kiln_exec_options *eo)
{
    size_t len = 0;
    char err[4400];
    char *text = cli_read_file(path, &len, err, sizeof err);
    if (text == NULL) {
        fprintf(stderr, "kiln cache: %s\n", err);
        return 1;
    }
    kiln_fusion *f = NULL;
    kiln_tensor *in[MAX_IO] = {0}, *out[MAX_IO] = {0};
    int n_in = 0, n_out = 0, rc = 1;
    if (kiln_fusion_parse(text, len, &f) != KILN_OK) {
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

enum { C_JSON, C_BACKEND, C_PLAN, C_KERNEL, C_REPEAT, C_ENABLE, C_DISABLE };
static const cli_opt cache_opts[] = {
    [C_JSON] = {"--json", CLI_FLAG},
    [C_BACKEND] = {"--backend", CLI_VALUE},
    [C_PLAN] = {"--plan-capacity", CLI_VALUE},
    [C_KERNEL] = {"--kernel-capacity", CLI_VALUE},
    [C_REPEAT] = {"--repeat", CLI_VALUE},
    [C_ENABLE] = {"--enable", CLI_VALUE},
    [C_DISABLE] = {"--disable", CLI_VALUE},
    {NULL, CLI_FLAG},
};

/* The capacities and counters, as text or one JSON object. */
static void print_counters(FILE *out, kiln_context *ctx, int json,
                           long plan_cap, long kern_cap)
{
    kiln_counters c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    kiln_context_counters(ctx, &c);
    if (json) {
        fprintf(out, "{\"backend\": ");
        cli_json_string(out, kiln_context_backend(ctx));
        fprintf(out, ", \"plan_capacity\": %ld, \"kernel_capacity\": %ld, "
               "\"executes\": %llu, \"plan_hits\": %llu, \"plan_misses\": %llu, "
               "\"plan_evictions\": %llu, \"kernel_hits\": %llu, \"kernel_misses\": %llu, "
               "\"kernel_evictions\": %llu, \"compiles\": %llu, \"kernel_loads\": %llu}\n",
               plan_cap, kern_cap,
               (unsigned long long)c.executes, (unsigned long long)c.plan_hits,
               (unsigned long long)c.plan_misses, (unsigned long long)c.plan_evictions,
               (unsigned long long)c.kernel_hits, (unsigned long long)c.kernel_misses,
               (unsigned long long)c.kernel_evictions, (unsigned long long)c.compiles,
               (unsigned long long)c.kernel_loads);
    } else {
        fprintf(out, "backend          %s\n", kiln_context_backend(ctx));
        fprintf(out, "plan cache       capacity %ld: %llu hits, %llu misses, %llu evictions\n",
               plan_cap, (unsigned long long)c.plan_hits,
               (unsigned long long)c.plan_misses, (unsigned long long)c.plan_evictions);
        fprintf(out, "kernel cache     capacity %ld: %llu hits, %llu misses, %llu evictions\n",
               kern_cap, (unsigned long long)c.kernel_hits,
               (unsigned long long)c.kernel_misses, (unsigned long long)c.kernel_evictions);
        fprintf(out, "executes         %llu\ncompiles         %llu\nkernel loads     %llu\n",
               (unsigned long long)c.executes, (unsigned long long)c.compiles,
               (unsigned long long)c.kernel_loads);
    }
}

int kiln_cmd_cache(int argc, char **argv)
{
    static const char cmd[] = "kiln cache";
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    int json = 0;
    const char *backend = "auto", *path = NULL;
    long plan_cap = DEFAULT_PLAN, kern_cap = DEFAULT_KERNEL, repeat = 1;
    const char *en[MAX_ITEMS], *dis[MAX_ITEMS];
    size_t n_en = 0, n_dis = 0;
    cli_args args;
    cli_args_init(&args, cmd, cache_opts, argc, argv);
    const char *v;
    int opt;
    while ((opt = cli_next(&args, &v)) != CLI_DONE) {
        switch (opt) {
        case CLI_USAGE: return 2;
        case CLI_POSITIONAL:
            if (path != NULL)
                return cli_usage(cmd, "more than one fusion file ('%s')", v);
            path = v;
            break;
        case C_JSON: json = 1; break;
        case C_BACKEND: backend = v; break;
        case C_PLAN:
        case C_KERNEL:
        case C_REPEAT:
            if (cli_long(cmd, cache_opts[opt].name, v, 1, 1L << 30,
                         opt == C_PLAN     ? &plan_cap
                         : opt == C_KERNEL ? &kern_cap
                                           : &repeat) != 0)
                return 2;
            break;
        case C_ENABLE:
        case C_DISABLE:
            if ((opt == C_ENABLE ? n_en : n_dis) == MAX_ITEMS)
                return cli_usage(cmd, "at most %d %s options", MAX_ITEMS,
                                 cache_opts[opt].name);
            if (opt == C_ENABLE)
                en[n_en++] = v;
            else
                dis[n_dis++] = v;
            break;
        default: return 2;
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
    if (rc == 0) /* a failed run prints no counters: they would mislead */
        print_counters(stdout, ctx, json, plan_cap, kern_cap);
    kiln_context_destroy(ctx);
    return rc;
}

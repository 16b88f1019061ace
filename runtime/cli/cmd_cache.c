/*
** cmd_cache.c -- `kiln cache`: the persistent kernel database
** (`list`, `stats`, `verify`, `clear`; docs/kernel-db.md) and the
** in-memory caches of one context (`counters`, also what `kiln cache` with
** no subcommand does): the cache capacities of a context and its counters,
** optionally after running a fusion a few times with random inputs (every
** `?` axis 4, seed 1), so the effect of options on the plan and kernel
** caches can be seen from a shell.  Those counters belong to the context
** this command creates; nothing of them persists between invocations.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "tool/npy.h"
#include "ckd.h"
#include "kernel_db.h"
#include "kiln.h"

#define DEFAULT_PLAN 256
#define DEFAULT_KERNEL 1024
#define MAX_ITEMS 64
#define MAX_IO 64

static void usage(FILE *o)
{
    fprintf(o,
            "usage: kiln cache list|stats|verify|clear [--dir D] [--json]\n"
            "       kiln cache [counters] [--json] [--backend B] [--plan-capacity N]\n"
            "                  [--kernel-capacity N] [FUSION.kf [--repeat N]\n"
            "                  [--enable ITEM]... [--disable ITEM]...]\n\n"
            "The kernel database (enable=kernel_db; docs/kernel-db.md), in D or\n"
            "else the directory the environment names (KILN_CACHE_DIR, else\n"
            "$XDG_CACHE_HOME/kiln, else ~/.cache/kiln):\n"
            "  list    every entry: name, size, age, payload bytes and its key\n"
            "          (backend, identity, versions, options, IR size)\n"
            "  stats   entries, bytes, the size cap, and the hit/miss/corrupt/\n"
            "          store/refused/eviction counters of every process that\n"
            "          used the directory read-write\n"
            "  verify  read and check every entry (format, checksum, name, owner,\n"
            "          mode); report and remove bad entries and stale temporary\n"
            "          files.  Exit status 1 when something was bad.\n"
            "  clear   remove every entry and temporary file\n"
            "The directory must pass the database's security rules (owned by\n"
            "this user or root, not writable by group or others).\n\n"
            "counters (the default): print the plan/kernel cache capacities and\n"
            "the counters of a fresh context (executes, plan hits/misses/evictions,\n"
            "kernel hits/misses/evictions, compiles, loads, kernel_db hits/misses/\n"
            "corrupt/stores/refused).  With FUSION.kf the fusion first runs N times\n"
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
            "context, a run or the directory fails nothing is printed on stdout.\n"
            "Exit status: 0 ok, 1 the context, a run or the directory failed (or\n"
            "verify found bad entries), 2 usage error.\n",
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
        for (int d = 0; d < rank; d++)
            sz[d] = bc[d] ? 1 : 4;
        int64_t n = 0;
        size_t nbytes = 0;
        if (kiln_ckd_numel(rank, sz, &n) ||
            kiln_ckd_bytes(n, kiln_dtype_size(dt), &nbytes)) {
            fprintf(stderr, "kiln cache: input %d: size overflows\n", i);
            goto done;
        }
        void *buf = malloc(nbytes + 1);
        if (buf == NULL)
            goto done;
        kiln_npy_random(dt, (size_t)n, &state, buf);
        kiln_memory mem = KILN_MEM_DEVICE;
        kiln_status s = kiln_tensor_create(ctx, dt, rank, sz, NULL, mem, NULL, &in[i]);
        if (s != KILN_OK)
            s = kiln_tensor_create(ctx, dt, rank, sz, NULL, KILN_MEM_HOST, NULL, &in[i]);
        if (s == KILN_OK)
            s = kiln_tensor_write(ctx, in[i], buf, nbytes);
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
               "\"kernel_evictions\": %llu, \"compiles\": %llu, \"kernel_loads\": %llu, "
               "\"kernel_db_hits\": %llu, \"kernel_db_misses\": %llu, "
               "\"kernel_db_corrupt\": %llu, \"kernel_db_stores\": %llu, "
               "\"kernel_db_refused\": %llu}\n",
               plan_cap, kern_cap,
               (unsigned long long)c.executes, (unsigned long long)c.plan_hits,
               (unsigned long long)c.plan_misses, (unsigned long long)c.plan_evictions,
               (unsigned long long)c.kernel_hits, (unsigned long long)c.kernel_misses,
               (unsigned long long)c.kernel_evictions, (unsigned long long)c.compiles,
               (unsigned long long)c.kernel_loads, (unsigned long long)c.kernel_db_hits,
               (unsigned long long)c.kernel_db_misses,
               (unsigned long long)c.kernel_db_corrupt,
               (unsigned long long)c.kernel_db_stores,
               (unsigned long long)c.kernel_db_refused);
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
        fprintf(out, "kernel database  %llu hits, %llu misses, %llu corrupt, %llu stores, "
                     "%llu refused\n",
                (unsigned long long)c.kernel_db_hits, (unsigned long long)c.kernel_db_misses,
                (unsigned long long)c.kernel_db_corrupt,
                (unsigned long long)c.kernel_db_stores,
                (unsigned long long)c.kernel_db_refused);
    }
}

/* ------------------------------------------------- the kernel database */

typedef struct db_out {
    FILE *out;      /* per-item lines; NULL prints none (stats) */
    int json, first, bad;
    uint64_t entries, bytes, temps, removed;
    time_t now;
} db_out;

/* The key's "name value" line `name` (into buf), "" when absent. */
static void key_line(const char *key, const char *name, char *buf, size_t cap)
{
    buf[0] = '\0';
    size_t l = strlen(name);
    for (const char *p = key; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, name, l) == 0 && p[l] == ' ') {
            const char *e = strchr(p, '\n');
            size_t n = e ? (size_t)(e - p - l - 1) : strlen(p + l + 1);
            snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p + l + 1);
            return;
        }
}

static void list_item(void *arg, const kiln__kdb_item *it)
{
    db_out *o = arg;
    long long age = (long long)(o->now - it->mtime.tv_sec);
    if (it->kind == KILN__KDB_ITEM_OTHER)
        return;
    if (it->kind == KILN__KDB_ITEM_TEMP) {
        o->temps++;
        if (o->out == NULL) {
            /* counted only */
        } else if (o->json) {
            fprintf(o->out, "%s{\"name\": ", o->first ? "" : ", ");
            cli_json_string(o->out, it->name);
            fprintf(o->out, ", \"temporary\": true, \"bytes\": %llu, \"age_s\": %lld}",
                   (unsigned long long)it->size, age);
        } else {
            fprintf(o->out, "%-36s %10llu B %8llds  (temporary file of a writer)\n", it->name,
                   (unsigned long long)it->size, age);
        }
        o->first = 0;
        return;
    }
    o->entries++;
    o->bytes += it->size;
    if (o->out == NULL)
        return;
    char be[128], id[512], ver[128], opt[256], ir[32];
    const char *k = it->key ? it->key : "";
    key_line(k, "backend", be, sizeof be);
    key_line(k, "identity", id, sizeof id);
    key_line(k, "versions", ver, sizeof ver);
    key_line(k, "options", opt, sizeof opt);
    if (o->json) {
        fprintf(o->out, "%s{\"name\": ", o->first ? "" : ", ");
        cli_json_string(o->out, it->name);
        fprintf(o->out, ", \"bytes\": %llu, \"age_s\": %lld, \"payload_bytes\": %llu, "
               "\"readable\": %s, \"backend\": ",
               (unsigned long long)it->size, age, (unsigned long long)it->payload,
               it->key ? "true" : "false");
        cli_json_string(o->out, be);
        fprintf(o->out, ", \"identity\": ");
        cli_json_string(o->out, id);
        fprintf(o->out, ", \"versions\": ");
        cli_json_string(o->out, ver);
        fprintf(o->out, ", \"options\": ");
        cli_json_string(o->out, opt);
        fprintf(o->out, "}");
    } else if (it->key == NULL) {
        fprintf(o->out, "%-36s %10llu B %8llds  unreadable: %s\n", it->name,
               (unsigned long long)it->size, age, it->why);
    } else {
        snprintf(ir, sizeof ir, "%llu", (unsigned long long)it->payload);
        fprintf(o->out, "%-36s %10llu B %8llds  %s [%s] options '%s' payload %s B\n"
               "%36s   %s\n", it->name, (unsigned long long)it->size, age, be, ver,
               opt, ir, "", id);
    }
    o->first = 0;
}

static void verify_item(void *arg, const kiln__kdb_item *it)
{
    db_out *o = arg;
    if (it->kind == KILN__KDB_ITEM_OTHER)
        return;
    if (it->kind == KILN__KDB_ITEM_ENTRY)
        o->entries++;
    if (!it->bad)
        return;
    o->bad++;
    o->removed += (uint64_t)it->removed;
    if (o->json) {
        fprintf(o->out, "%s{\"name\": ", o->first ? "" : ", ");
        cli_json_string(o->out, it->name);
        fprintf(o->out, ", \"why\": ");
        cli_json_string(o->out, it->why);
        fprintf(o->out, ", \"removed\": %s}", it->removed ? "true" : "false");
    } else {
        fprintf(o->out, "%s %s: %s\n", it->removed ? "removed" : "BAD (not removed)", it->name,
               it->why);
    }
    o->first = 0;
}

static const cli_opt db_opts[] = {
    {"--dir", CLI_VALUE},
    {"--json", CLI_FLAG},
    {NULL, CLI_FLAG},
};

static int db_command(int argc, char **argv)
{
    char cmd[32];
    snprintf(cmd, sizeof cmd, "kiln cache %s", argv[0]);
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *dir = NULL;
    int json = 0;
    cli_args args;
    cli_args_init(&args, cmd, db_opts, argc, argv);
    const char *v;
    int opt;
    while ((opt = cli_next(&args, &v)) != CLI_DONE) {
        switch (opt) {
        case CLI_USAGE: return 2;
        case CLI_POSITIONAL: return cli_usage(cmd, "unexpected argument '%s'", v);
        case 0: dir = v; break;
        case 1: json = 1; break;
        default: return 2;
        }
    }
    int verify = strcmp(argv[0], "verify") == 0, clear = strcmp(argv[0], "clear") == 0;
    /* the command reports a refusal itself: the database's own warning
    ** would say it twice */
    FILE *quiet = fopen("/dev/null", "w");
    kiln__kdb *db = kiln__kdb_create(dir, verify || clear ? KILN__KDB_RW : KILN__KDB_RO,
                                     0, quiet ? quiet : stderr);
    if (db == NULL) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        if (quiet)
            fclose(quiet);
        return 1;
    }
    struct stat st;
    char err[1024] = "";
    int rc = 0;
    /* never create the directory: a maintenance command on a typo must fail */
    if (stat(kiln__kdb_dir(db), &st) != 0) {
        fprintf(stderr, "%s: %s: %s\n", cmd, kiln__kdb_dir(db), strerror(errno));
        kiln__kdb_destroy(db);
        if (quiet)
            fclose(quiet);
        return 1;
    }
    if (!kiln__kdb_ready(db)) {
        fprintf(stderr, "%s: %s\n", cmd, kiln__kdb_why(db));
        kiln__kdb_destroy(db);
        if (quiet)
            fclose(quiet);
        return 1;
    }
    db_out o;
    memset(&o, 0, sizeof o);
    o.json = json;
    o.out = stdout;
    o.first = 1;
    o.now = time(NULL);
    if (clear) {
        uint64_t n = 0;
        rc = kiln__kdb_clear(db, &n, err, sizeof err) != 0;
        if (rc) {
            fprintf(stderr, "%s: %s\n", cmd, err);
        } else if (json) {
            printf("{\"dir\": ");
            cli_json_string(stdout, kiln__kdb_dir(db));
            printf(", \"removed\": %llu}\n", (unsigned long long)n);
        } else {
            printf("removed %llu files from %s\n", (unsigned long long)n, kiln__kdb_dir(db));
        }
    } else if (verify) {
        if (json)
            printf("{\"bad\": [");
        rc = kiln__kdb_scan(db, 1, 1, verify_item, &o, err, sizeof err) != 0;
        if (rc) {
            fprintf(stderr, "%s: %s\n", cmd, err);
        } else if (json) {
            printf("], \"entries\": %llu, \"removed\": %llu}\n",
                   (unsigned long long)o.entries, (unsigned long long)o.removed);
        } else {
            printf("%llu entries checked in %s: %llu bad, %llu removed\n",
                   (unsigned long long)o.entries, kiln__kdb_dir(db),
                   (unsigned long long)o.bad, (unsigned long long)o.removed);
        }
        rc = rc || o.bad > 0;
    } else {
        int stats = strcmp(argv[0], "stats") == 0;
        o.out = stats ? NULL : stdout;
        if (json && !stats)
            printf("[");
        rc = kiln__kdb_scan(db, 0, 0, list_item, &o, err, sizeof err) != 0;
        if (rc) {
            fprintf(stderr, "%s: %s\n", cmd, err[0] ? err : "cannot scan");
        } else if (!stats) {
            if (json)
                printf("]\n");
            else
                printf("%llu entries, %llu bytes in %s\n", (unsigned long long)o.entries,
                       (unsigned long long)o.bytes, kiln__kdb_dir(db));
        } else {
            kiln__kdb_counts c;
            kiln__kdb_read_stats(db, &c);
            if (json) {
                printf("{\"dir\": ");
                cli_json_string(stdout, kiln__kdb_dir(db));
                printf(", \"entries\": %llu, \"bytes\": %llu, \"max_bytes\": %llu, "
                       "\"temporary_files\": %llu, \"hits\": %llu, \"misses\": %llu, "
                       "\"corrupt\": %llu, \"stores\": %llu, \"refused\": %llu, "
                       "\"evictions\": %llu}\n",
                       (unsigned long long)o.entries, (unsigned long long)o.bytes,
                       (unsigned long long)kiln__kdb_max_bytes(db),
                       (unsigned long long)o.temps, (unsigned long long)c.hits,
                       (unsigned long long)c.misses, (unsigned long long)c.corrupt,
                       (unsigned long long)c.stores, (unsigned long long)c.refused,
                       (unsigned long long)c.evictions);
            } else {
                printf("directory        %s\n", kiln__kdb_dir(db));
                printf("entries          %llu (%llu bytes; cap %llu bytes)\n",
                       (unsigned long long)o.entries, (unsigned long long)o.bytes,
                       (unsigned long long)kiln__kdb_max_bytes(db));
                printf("temporary files  %llu\n", (unsigned long long)o.temps);
                printf("counters         %llu hits, %llu misses, %llu corrupt, %llu stores, "
                       "%llu refused, %llu evictions\n",
                       (unsigned long long)c.hits, (unsigned long long)c.misses,
                       (unsigned long long)c.corrupt, (unsigned long long)c.stores,
                       (unsigned long long)c.refused, (unsigned long long)c.evictions);
            }
        }
    }
    kiln__kdb_destroy(db);
    if (quiet)
        fclose(quiet);
    return rc;
}

int kiln_cmd_cache(int argc, char **argv)
{
    const char *cmd = "kiln cache";
    if (argc >= 2 && (strcmp(argv[1], "list") == 0 || strcmp(argv[1], "stats") == 0 ||
                      strcmp(argv[1], "verify") == 0 || strcmp(argv[1], "clear") == 0))
        return db_command(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "counters") == 0) {
        argc--; /* `kiln cache counters ...` is `kiln cache ...` */
        argv++;
        cmd = "kiln cache counters";
    }
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

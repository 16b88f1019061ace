/*
** serde.c -- `kiln conform --serde`: the suite round-tripped through the
** kernel database (docs/conformance.md, "--serde"; docs/kernel-db.md).
**
** The driver runs the selected tests twice, as two separate processes of
** this same program, against one fresh cache directory (KILN_CACHE_DIR,
** mode rw, no size cap that could evict):
**   pass 1 (--serde-record FILE) adds enable=kernel_db to every context on
**     the backend under test and fills the database; each test's counters
**     and output digest go into FILE;
**   pass 2 (--serde-check FILE) runs the same tests in a new process and
**     compares each with its pass-1 record: every kernel pass 1 compiled
**     and stored must now be a database hit (checked through kiln_counters:
**     nothing pass 1 stored is compiled again, nothing is missed, stored,
**     corrupt or refused) and every output read back must equal pass 1's
**     bit for bit (a digest of every output buffer).
** Tests with steps marked "pass" (cache.isolation's database tests) run
** different steps in the two passes; they are judged by their own
** expectations (outputs and per-step kernel_db outcomes), not compared.
** options.precedence runs without the database (its vectors judge the
** option texts, which kernel_db would change); options.parse compiles
** nothing.
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "tool/tool.h"
#include "conform.h"

/* ------------------------------------------------------------ records */

json_t *cf_serde_json(const cf_serde *sd)
{
    char d[20];
    snprintf(d, sizeof d, "%016llx", (unsigned long long)sd->digest);
    return json_pack("{sssIsIsIsIsIsIsIsIsb}", "digest", d, "outputs",
                     (json_int_t)sd->outputs, "compiles", (json_int_t)sd->compiles,
                     "hits", (json_int_t)sd->hits, "misses", (json_int_t)sd->misses,
                     "stores", (json_int_t)sd->stores, "corrupt",
                     (json_int_t)sd->corrupt, "refused", (json_int_t)sd->refused,
                     "pass", (json_int_t)sd->pass, "passSpecific",
                     sd->pass_specific);
}

static int from_json(const json_t *j, cf_serde *sd)
{
    const char *d = NULL;
    json_int_t v[8] = {0};
    int ps = 0;
    memset(sd, 0, sizeof *sd);
    if (json_unpack((json_t *)j, "{sssIsIsIsIsIsIsIsIsb}", "digest", &d, "outputs",
                    &v[0], "compiles", &v[1], "hits", &v[2], "misses", &v[3],
                    "stores", &v[4], "corrupt", &v[5], "refused", &v[6], "pass",
                    &v[7], "passSpecific", &ps) != 0)
        return -1;
    sd->digest = strtoull(d, NULL, 16);
    sd->outputs = (uint64_t)v[0];
    sd->compiles = (uint64_t)v[1];
    sd->hits = (uint64_t)v[2];
    sd->misses = (uint64_t)v[3];
    sd->stores = (uint64_t)v[4];
    sd->corrupt = (uint64_t)v[5];
    sd->refused = (uint64_t)v[6];
    sd->pass = (int)v[7];
    sd->pass_specific = ps;
    return 0;
}

/* Judge test `id` after it ran in pass sd->pass (o already holds the test's
** own verdict; a first failure is kept). */
void cf_serde_judge(const json_t *records, const char *id, const cf_serde *sd,
                    cf_outcome *o)
{
    char m[CF_MSG];
    m[0] = '\0';
    if (o->status != CF_PASS)
        return;
    if (sd->pass == 1) {
        if (sd->misses || sd->corrupt || sd->refused)
            snprintf(m, sizeof m, "serde pass 1: the kernel database did not store "
                     "every kernel compiled (%llu not stored, %llu corrupt, %llu "
                     "refused; the run prints why)",
                     (unsigned long long)sd->misses, (unsigned long long)sd->corrupt,
                     (unsigned long long)sd->refused);
    } else {
        const json_t *rec = json_object_get(records, id);
        const char *st = NULL;
        cf_serde p1;
        if (rec == NULL)
            snprintf(m, sizeof m, "serde: pass 1 left no record of this test (it "
                     "crashed or timed out there)");
        else if (json_unpack((json_t *)rec, "{ss}", "status", &st) != 0 ||
                 from_json(json_object_get(rec, "serde"), &p1) != 0)
            snprintf(m, sizeof m, "serde: the pass-1 record is malformed");
        else if (strcmp(st, "pass") != 0)
            snprintf(m, sizeof m, "serde: the test %s in pass 1",
                     strcmp(st, "skip") == 0 ? "was skipped" : "failed");
        else if (sd->corrupt || sd->refused)
            snprintf(m, sizeof m, "serde pass 2: %llu corrupt and %llu refused "
                     "database lookups in a directory pass 1 just filled",
                     (unsigned long long)sd->corrupt, (unsigned long long)sd->refused);
        else if (sd->pass_specific || p1.pass_specific)
            ; /* judged by its own steps */
        else if (sd->misses || sd->stores || sd->compiles + p1.stores != p1.compiles ||
                 sd->hits != p1.hits + p1.stores)
            snprintf(m, sizeof m, "serde pass 2: compiled %llu kernels (pass 1: %llu, "
                     "of which %llu were stored) and found %llu in the database "
                     "(expected %llu); %llu misses, %llu new stores: something pass 1 "
                     "compiled was compiled again",
                     (unsigned long long)sd->compiles, (unsigned long long)p1.compiles,
                     (unsigned long long)p1.stores, (unsigned long long)sd->hits,
                     (unsigned long long)(p1.hits + p1.stores),
                     (unsigned long long)sd->misses, (unsigned long long)sd->stores);
        else if (sd->digest != p1.digest || sd->outputs != p1.outputs)
            snprintf(m, sizeof m, "serde pass 2: the outputs differ from pass 1 "
                     "(%llu buffers, digest %016llx; pass 1: %llu buffers, digest "
                     "%016llx)",
                     (unsigned long long)sd->outputs, (unsigned long long)sd->digest,
                     (unsigned long long)p1.outputs, (unsigned long long)p1.digest);
    }
    if (m[0]) {
        o->status = CF_FAIL;
        snprintf(o->msg, sizeof o->msg, "%s", m);
    }
}

int cf_serde_load(const char *path, json_t **out)
{
    size_t len = 0;
    char err[CF_MSG];
    char *text = cli_read_file(path, &len, err, sizeof err);
    if (text == NULL) {
        fprintf(stderr, "kiln conform: --serde-check: %s\n", err);
        return 1;
    }
    json_t *all = json_object();
    int rc = all == NULL;
    for (char *p = text, *e; !rc && *p; p = e + 1) {
        e = strchr(p, '\n');
        if (e == NULL)
            break;
        *e = '\0';
        json_t *j = json_loads(p, 0, NULL);
        const char *id = NULL;
        if (j == NULL || json_unpack(j, "{ss}", "id", &id) != 0) {
            fprintf(stderr, "kiln conform: --serde-check: %s: a malformed line\n", path);
            rc = 1;
        } else {
            json_object_set(all, id, j);
        }
        json_decref(j);
    }
    free(text);
    if (rc) {
        json_decref(all);
        return 1;
    }
    *out = all;
    return 0;
}

int cf_serde_write(const char *path, const cf_result *res, const json_t *const *lines,
                   size_t n, uint64_t *compiles, uint64_t *kept)
{
    cli_out out;
    char err[CF_MSG];
    *compiles = *kept = 0;
    if (cli_out_open(&out, path, err, sizeof err) != 0) {
        fprintf(stderr, "kiln conform: --serde-record: %s\n", err);
        return 1;
    }
    static const char *const st[] = {"pass", "fail", "skip"};
    for (size_t i = 0; i < n; i++) {
        if (lines[i] == NULL)
            continue; /* no line: crashed; pass 2 says so */
        cf_serde sd;
        if (from_json(lines[i], &sd) == 0) {
            *compiles += sd.compiles;
            *kept += sd.stores + sd.hits;
        }
        json_t *j = json_pack("{sssssO}", "id", res[i].id, "status",
                              st[res[i].status], "serde", lines[i]);
        char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
        if (t)
            fprintf(out.fp, "%s\n", t);
        free(t);
        json_decref(j);
    }
    if (cli_out_commit(&out, path, err, sizeof err) != 0) {
        fprintf(stderr, "kiln conform: --serde-record: %s\n", err);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ the driver */

/* Remove dir's files (no subdirectories expected), then dir. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

/* Run this program with argv; its exit status (128 + signal when killed). */
static int spawn(char **argv)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "kiln conform --serde: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        execv("/proc/self/exe", argv);
        fprintf(stderr, "kiln conform --serde: exec /proc/self/exe: %s\n",
                strerror(errno));
        _exit(127);
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

int cf_serde_drive(const cf_serde_run *a)
{
    const char *tmp = getenv("TMPDIR");
    char base[4096], cache[4200], rec[4200], dev[32], tmo[64];
    snprintf(base, sizeof base, "%s/kiln-serde-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(base) == NULL) {
        fprintf(stderr, "kiln conform --serde: mkdtemp %s: %s\n", base, strerror(errno));
        return 1;
    }
    snprintf(cache, sizeof cache, "%s/cache", base);
    snprintf(rec, sizeof rec, "%s/pass1.jsonl", base);
    snprintf(dev, sizeof dev, "%ld", a->device);
    snprintf(tmo, sizeof tmo, "%g", a->timeout);
    /* the children's database: fresh, read-write, never evicting */
    setenv("KILN_CACHE_DIR", cache, 1);
    setenv("KILN_CACHE_MODE", "rw", 1);
    setenv("KILN_CACHE_MAX_BYTES", "1099511627776", 1);
    char **argv = calloc(40 + 2 * (a->n_cats + a->n_skip), sizeof *argv);
    if (argv == NULL) {
        remove_dir(base);
        return 1;
    }
    printf("kiln conform --serde: backend %s, kernel database %s (fresh)\n",
           a->backend, cache);
    int rc[2] = {0, 0};
    for (int pass = 1; pass <= 2; pass++) {
        size_t k = 0;
        argv[k++] = "kiln";
        argv[k++] = "conform";
        argv[k++] = "--backend";
        argv[k++] = (char *)a->backend;
        argv[k++] = "--device";
        argv[k++] = dev;
        argv[k++] = "--timeout";
        argv[k++] = tmo;
        argv[k++] = "--shard";
        argv[k++] = (char *)a->shard;
        if (a->vectors) {
            argv[k++] = "--vectors";
            argv[k++] = (char *)a->vectors;
        }
        for (size_t c = 0; c < a->n_cats; c++) {
            argv[k++] = "--category";
            argv[k++] = (char *)a->cats[c];
        }
        if (a->filter) {
            argv[k++] = "--filter";
            argv[k++] = (char *)a->filter;
        }
        if (a->exclude) {
            argv[k++] = "--exclude";
            argv[k++] = (char *)a->exclude;
        }
        if (a->strict)
            argv[k++] = "--strict";
        for (size_t f = 0; f < a->n_skip; f++) {
            argv[k++] = "--skip-flag";
            argv[k++] = (char *)a->skip_flags[f];
        }
        if (a->expectations) {
            argv[k++] = "--expectations";
            argv[k++] = (char *)a->expectations;
        }
        const char *rep[5][2] = {{"--report", a->report}, {"--junit", a->junit},
                                 {"--tap", a->tap}, {"--results", a->results},
                                 {"--write-expectations", a->write_expect}};
        for (int r = 0; r < 5 && pass == 2; r++)
            if (rep[r][1]) {
                argv[k++] = (char *)rep[r][0];
                argv[k++] = (char *)rep[r][1];
            }
        argv[k++] = pass == 1 ? "--serde-record" : "--serde-check";
        argv[k++] = rec;
        argv[k] = NULL;
        printf("\n== --serde pass %d of 2 (a new process): %s\n", pass,
               pass == 1 ? "every kernel compiled is stored in the database"
                         : "every kernel pass 1 stored must load from the database; "
                           "outputs bit for bit equal to pass 1's");
        rc[pass - 1] = spawn(argv);
        if (pass == 1 && (rc[0] == 2 || rc[0] > 100))
            break; /* a usage error or a crash: pass 2 could say nothing */
    }
    free(argv);
    int ok = rc[0] == 0 && rc[1] == 0;
    printf("\nkiln conform --serde: pass 1 exit %d, pass 2 exit %d: %s\n", rc[0], rc[1],
           ok ? "the round trip through the kernel database holds"
              : "FAILED (see the failures above)");
    remove_dir(cache);
    unlink(rec);
    remove_dir(base);
    if (ok)
        return 0;
    return rc[0] == 2 || rc[1] == 2 ? 2 : 1;
}

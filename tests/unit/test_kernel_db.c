/*
** test_kernel_db.c -- the kernel database (runtime/kernel_db.c,
** docs/kernel-db.md): the entry format and every bad-file case, the
** directory rules (creation, modes, owners, read-only, off), LRU eviction
** and its guarded delete, every file operation failed on purpose through
** the fault-injection VFS, several processes at once (writers racing a
** reader, eviction racing a reader, a writer killed mid-write), and the
** whole path through kiln_execute on the test plugin (which persists
** kernels like the nvrtc backend: its payload decides what runs).
**
** Every case that could hand out a wrong kernel counts "wrong kernels";
** every child process that dies by a signal it did not ask for counts a
** crash.  The counts go to stderr and, when KILN_KDB_TALLY names a file,
** into it (make test-unit prints the totals).  A case that cannot run here
** (chown to another user needs root) is counted as skipped and says so.
*/
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "exec_util.h"
#include "tu_skip.h"
#include "internal.h"
#include "kernel_db.h"

#define NOBODY 65534

/* ------------------------------------------------------------- helpers */

static void tally(const char *what, long trials, long wrong, long crashes,
                  long skipped)
{
    fprintf(stderr, "kdb-tally: %s: %ld trials, %ld wrong kernels, %ld crashes%s\n",
            what, trials, wrong, crashes, skipped ? ", SKIPPED (see above)" : "");
    const char *f = getenv("KILN_KDB_TALLY");
    if (f != NULL && f[0] != '\0') {
        FILE *o = fopen(f, "a");
        if (o != NULL) {
            fprintf(o, "%s %ld %ld %ld %ld\n", what, trials, wrong, crashes, skipped);
            fclose(o);
        }
    }
}

/* A fresh directory for one test: BASE (0700) with the cache at BASE/c. */
typedef struct tdir {
    char base[512], dir[600];
} tdir;

static void tdir_make(tdir *t)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(t->base, sizeof t->base, "%s/kiln-kdb-test-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    ck_assert_msg(mkdtemp(t->base) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(t->dir, sizeof t->dir, "%s/c", t->base);
}

static void rm_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            chmod(p, 0700);
            rm_files(p);
            rmdir(p);
        } else {
            unlink(p);
        }
    }
    closedir(d);
}

static void tdir_free(tdir *t)
{
    chmod(t->dir, 0700);
    rm_files(t->base);
    rmdir(t->base);
}

static kiln__kdb *open_db(const tdir *t, kiln__kdb_mode mode, uint64_t cap,
                          FILE *diag)
{
    kiln__kdb *db = kiln__kdb_create(t->dir, mode, cap, diag ? diag : stderr);
    ck_assert_ptr_nonnull(db);
    return db;
}

static void make_key(int k, char *key, size_t cap)
{
    snprintf(key, cap, "kiln kernel-db key v1\ntest key %d\nir 0\n", k);
}

/* A self-checking payload: [key][writer][length] then bytes from both. */
static size_t make_payload(int k, int writer, uint8_t *p, size_t n)
{
    memset(p, 0, n);
    memcpy(p, &k, 4);
    memcpy(p + 4, &writer, 4);
    uint32_t len = (uint32_t)n;
    memcpy(p + 8, &len, 4);
    for (size_t i = 12; i < n; i++)
        p[i] = (uint8_t)(k * 131 + writer * 7 + (int)i * 13);
    return n;
}

/* 1 when p is a payload made for key k (by any writer). */
static int payload_ok(int k, const uint8_t *p, size_t n)
{
    int kk, w;
    uint32_t len;
    if (n < 12)
        return 0;
    memcpy(&kk, p, 4);
    memcpy(&w, p + 4, 4);
    memcpy(&len, p + 8, 4);
    if (kk != k || len != n)
        return 0;
    for (size_t i = 12; i < n; i++)
        if (p[i] != (uint8_t)(k * 131 + w * 7 + (int)i * 13))
            return 0;
    return 1;
}

static int store_k(kiln__kdb *db, int k, int writer, size_t n)
{
    char key[128];
    uint8_t *p = malloc(n);
    make_key(k, key, sizeof key);
    make_payload(k, writer, p, n);
    int r = kiln__kdb_store(db, key, strlen(key), p, n);
    free(p);
    return r;
}

/* Load key k: HIT with a payload for k, HIT with a WRONG one (returns -1),
** or the other results. */
static int load_k(kiln__kdb *db, int k)
{
    char key[128];
    make_key(k, key, sizeof key);
    uint8_t *p = NULL;
    size_t n = 0;
    kiln__kdb_result r = kiln__kdb_load(db, key, strlen(key), &p, &n);
    int wrong = r == KILN__KDB_HIT && !payload_ok(k, p, n);
    if (r != KILN__KDB_HIT)
        ck_assert_ptr_null(p);
    free(p);
    return wrong ? -1 : (int)r;
}

static void entry_path(const tdir *t, int k, char *buf, size_t cap)
{
    char key[128], name[KILN__KDB_NAME_LEN + 1];
    make_key(k, key, sizeof key);
    kiln__kdb_name(key, strlen(key), name);
    snprintf(buf, cap, "%s/%s", t->dir, name);
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    rewind(f);
    uint8_t *b = malloc((size_t)sz + 1);
    ck_assert_int_eq(fread(b, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return b;
}

static void write_file(const char *path, const uint8_t *b, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, b, n), (ssize_t)n);
    close(fd);
}

static char *slurp(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    if (n > 0)
        ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    return s;
}

static int count_sub(const char *s, const char *sub)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, sub)) != NULL; p++)
        n++;
    return n;
}

static int count_temps(const tdir *t)
{
    DIR *d = opendir(t->dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, ".tmp.", 5) == 0 || strncmp(e->d_name, ".del.", 5) == 0;
    if (d)
        closedir(d);
    return n;
}

/* ------------------------------------------------------ fault-injecting VFS */

enum { F_MKDIR, F_OPEN, F_OPENAT, F_READ, F_WRITE, F_FSYNC, F_CLOSE, F_FSTAT,
       F_FSTATAT, F_RENAME, F_LINK, F_UNLINK, F_UTIME, F_FLOCK, F_LIST, F_N };
static const char *const fnames[F_N] = {"mkdir", "open", "openat", "read", "write",
                                        "fsync", "close", "fstat", "fstatat",
                                        "renameat", "linkat", "unlinkat",
                                        "futimens", "flock", "list"};

typedef struct fvfs {
    kiln__kdb_vfs v;
    long calls[F_N];
    long fail_at[F_N]; /* fail call number N (1-based); -1: every call */
    int err[F_N];
    long kill_write;   /* write number N writes half, then SIGKILL */
    int short_io;      /* reads and writes move at most 7 bytes */
    int eintr;         /* every other read/write fails with EINTR first */
} fvfs;

#define DV (kiln__kdb_vfs_default())

static int hit(void *a, int op)
{
    fvfs *f = a;
    long c = ++f->calls[op];
    if (f->fail_at[op] != 0 && (f->fail_at[op] < 0 || f->fail_at[op] == c)) {
        errno = f->err[op] ? f->err[op] : EIO;
        return 1;
    }
    return 0;
}

static int f_mkdir(void *a, const char *p, mode_t m)
{
    return hit(a, F_MKDIR) ? -1 : DV->mkdir(DV->arg, p, m);
}
static int f_open(void *a, const char *p, int fl)
{
    return hit(a, F_OPEN) ? -1 : DV->open(DV->arg, p, fl);
}
static int f_openat(void *a, int d, const char *n, int fl, mode_t m)
{
    return hit(a, F_OPENAT) ? -1 : DV->openat(DV->arg, d, n, fl, m);
}
static ssize_t f_read(void *a, int fd, void *b, size_t n)
{
    fvfs *f = a;
    if (hit(a, F_READ))
        return -1;
    if (f->eintr && f->calls[F_READ] % 2) {
        errno = EINTR;
        return -1;
    }
    return DV->read(DV->arg, fd, b, f->short_io && n > 7 ? 7 : n);
}
static ssize_t f_write(void *a, int fd, const void *b, size_t n)
{
    fvfs *f = a;
    if (hit(a, F_WRITE))
        return -1;
    if (f->kill_write && f->calls[F_WRITE] == f->kill_write) {
        ssize_t w = DV->write(DV->arg, fd, b, n / 2);
        (void)w;
        raise(SIGKILL);
    }
    if (f->eintr && f->calls[F_WRITE] % 2) {
        errno = EINTR;
        return -1;
    }
    return DV->write(DV->arg, fd, b, f->short_io && n > 7 ? 7 : n);
}
static int f_fsync(void *a, int fd)
{
    return hit(a, F_FSYNC) ? -1 : DV->fsync(DV->arg, fd);
}
static int f_close(void *a, int fd)
{
    if (hit(a, F_CLOSE)) {
        int e = errno;
        DV->close(DV->arg, fd); /* a failed close still releases the fd */
        errno = e;
        return -1;
    }
    return DV->close(DV->arg, fd);
}
static int f_fstat(void *a, int fd, struct stat *st)
{
    return hit(a, F_FSTAT) ? -1 : DV->fstat(DV->arg, fd, st);
}
static int f_fstatat(void *a, int d, const char *n, struct stat *st)
{
    return hit(a, F_FSTATAT) ? -1 : DV->fstatat(DV->arg, d, n, st);
}
static int f_renameat(void *a, int d, const char *x, const char *y)
{
    return hit(a, F_RENAME) ? -1 : DV->renameat(DV->arg, d, x, y);
}
static int f_linkat(void *a, int d, const char *x, const char *y)
{
    return hit(a, F_LINK) ? -1 : DV->linkat(DV->arg, d, x, y);
}
static int f_unlinkat(void *a, int d, const char *n)
{
    return hit(a, F_UNLINK) ? -1 : DV->unlinkat(DV->arg, d, n);
}
static int f_futimens(void *a, int fd)
{
    return hit(a, F_UTIME) ? -1 : DV->futimens(DV->arg, fd);
}
static int f_flock(void *a, int fd, int op)
{
    return hit(a, F_FLOCK) ? -1 : DV->flock(DV->arg, fd, op);
}
static int f_list(void *a, int d, int (*fn)(void *, const char *), void *cb)
{
    return hit(a, F_LIST) ? -1 : DV->list(DV->arg, d, fn, cb);
}

static void fvfs_init(fvfs *f)
{
    memset(f, 0, sizeof *f);
    kiln__kdb_vfs v = {f,        f_mkdir,   f_open,     f_openat, f_read,
                       f_write,  f_fsync,   f_close,    f_fstat,  f_fstatat,
                       f_renameat, f_linkat, f_unlinkat, f_futimens, f_flock,
                       f_list};
    f->v = v;
}

/* ---------------------------------------------------------------- format */

static void reseal(uint8_t *b, size_t n);

START_TEST(format_round_trip)
{
    const char key[] = "kiln kernel-db key v1\nx\nir 3\nabc";
    uint8_t pay[300];
    make_payload(3, 1, pay, sizeof pay);
    size_t n = 0;
    uint8_t *b = kiln__kdb_encode(key, sizeof key - 1, pay, sizeof pay, &n);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(n, 24 + (sizeof key - 1) + 8 + sizeof pay + 16);
    ck_assert_int_eq(memcmp(b, "KILNKDB", 8), 0);
    kiln__kdb_entry e;
    ck_assert_ptr_null(kiln__kdb_parse(b, n, &e));
    ck_assert_uint_eq(e.key_len, sizeof key - 1);
    ck_assert_int_eq(memcmp(e.key, key, e.key_len), 0);
    ck_assert_uint_eq(e.payload_len, sizeof pay);
    ck_assert_int_eq(memcmp(e.payload, pay, sizeof pay), 0);
    char name[KILN__KDB_NAME_LEN + 1];
    kiln__kdb_name(key, sizeof key - 1, name);
    ck_assert_uint_eq(strlen(name), 36);
    ck_assert_str_eq(name + 32, ".kdb");
    /* an empty key and payload still round-trip */
    uint8_t *z = kiln__kdb_encode("", 0, "", 0, &n);
    ck_assert_ptr_null(kiln__kdb_parse(z, n, &e));
    ck_assert_uint_eq(e.key_len + e.payload_len, 0);
    free(z);
    free(b);
}
END_TEST

/* Any single changed bit of the hashed bytes changes the 128-bit hash. */
START_TEST(hash_sees_every_bit)
{
    uint8_t buf[77];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 37 + 5);
    uint64_t h0[2], h[2];
    kiln__kdb_hash128(buf, sizeof buf, h0);
    for (size_t i = 0; i < sizeof buf; i++)
        for (int bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1u << bit);
            kiln__kdb_hash128(buf, sizeof buf, h);
            buf[i] ^= (uint8_t)(1u << bit);
            ck_assert_msg(h[0] != h0[0] && h[1] != h0[1], "byte %zu bit %d", i, bit);
        }
    /* a length change with the same bytes */
    kiln__kdb_hash128(buf, sizeof buf - 1, h);
    ck_assert(h[0] != h0[0] || h[1] != h0[1]);
}
END_TEST

/* Every truncation, every bit flip, and every inconsistent header of an
** entry is rejected by the parser, never read as an entry. */
START_TEST(parse_rejects_every_damage)
{
    const char key[] = "kiln kernel-db key v1\ndamage\nir 0\n";
    uint8_t pay[64];
    make_payload(9, 0, pay, sizeof pay);
    size_t n = 0;
    uint8_t *b = kiln__kdb_encode(key, sizeof key - 1, pay, sizeof pay, &n);
    kiln__kdb_entry e;
    long trials = 0, wrong = 0;
    for (size_t len = 0; len < n; len++, trials++)
        wrong += kiln__kdb_parse(b, len, &e) == NULL;
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++, trials++) {
            b[i] ^= (uint8_t)(1u << bit);
            wrong += kiln__kdb_parse(b, n, &e) == NULL;
            b[i] ^= (uint8_t)(1u << bit);
        }
    /* header fields that are wrong while the checksum is right */
    struct { size_t off; uint64_t v; int w8; const char *why; } cases[] = {
        {8, 2, 0, "unsupported format version"},
        {12, 1, 0, "unknown flags"},
        {16, 1u << 20, 1, "key length beyond the end of the file"},
        {24 + sizeof key - 1, sizeof pay - 1, 1,
         "bytes between the payload and the checksum"},
        {24 + sizeof key - 1, 1u << 30, 1, "payload length beyond the end of the file"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++, trials++) {
        uint8_t *x = malloc(n);
        memcpy(x, b, n);
        for (int k = 0; k < (cases[c].w8 ? 8 : 4); k++)
            x[cases[c].off + (size_t)k] = (uint8_t)(cases[c].v >> (8 * k));
        reseal(x, n);
        const char *why = kiln__kdb_parse(x, n, &e);
        ck_assert_msg(why != NULL, "case %zu parsed", c);
        ck_assert_str_eq(why, cases[c].why);
        free(x);
    }
    /* trailing bytes after a valid entry */
    uint8_t *y = malloc(n + 3);
    memcpy(y, b, n);
    memset(y + n, 0, 3);
    ck_assert_ptr_nonnull(kiln__kdb_parse(y, n + 3, &e));
    trials++;
    free(y);
    free(b);
    tally("parser: every truncation, bit flip and bad header", trials, wrong, 0, 0);
    ck_assert_int_eq(wrong, 0);
}
END_TEST

START_TEST(ir_codec_round_trip_and_damage)
{
    kiln_ir_node nodes[3];
    memset(nodes, 0, sizeof nodes);
    for (int i = 0; i < 3; i++) {
        nodes[i] = kiln__ir_node_blank(i < 2 ? KILN_OP_INPUT : KILN_OP_ADD, KILN_F32, 1);
        if (i < 2)
            nodes[i].io = i;
    }
    nodes[2].args[0] = 0;
    nodes[2].args[1] = 1;
    int32_t outs[1] = {2};
    uint32_t it[2] = {1, 3}, ot[1] = {1};
    kiln_ir_segment seg = {sizeof seg, KILN_SEGK_POINTWISE, nodes, 3, 2, outs, 1,
                           it, ot, 0};
    kiln_kernel_options ko;
    memset(&ko, 0, sizeof ko);
    ko.struct_size = sizeof ko;
    ko.contract = 1;
    ko.sass = 1;
    ko.simplify_off = 5;
    ko.canonical = "disable=expr_simplify(cse)";
    kiln_buf b = {0};
    kiln__kdb_ir_encode(&seg, &ko, &b);
    ck_assert(!b.failed);
    kiln__kdb_ir ir;
    size_t used = 0;
    ck_assert_int_eq(kiln__kdb_ir_decode((uint8_t *)b.data, b.len, &used, &ir), KILN_OK);
    ck_assert_uint_eq(used, b.len);
    ck_assert_uint_eq(ir.seg.n_nodes, 3);
    ck_assert_int_eq(memcmp(ir.seg.nodes, nodes, sizeof nodes), 0);
    ck_assert_int_eq(ir.seg.outputs[0], 2);
    ck_assert_uint_eq(ir.seg.input_traits[1], 3);
    ck_assert_int_eq(ir.ko.contract, 1);
    ck_assert_uint_eq(ir.ko.simplify_off, 5);
    ck_assert_str_eq(ir.ko.canonical, "disable=expr_simplify(cse)");
    kiln__kdb_ir_free(&ir);
    /* every prefix fails cleanly */
    for (size_t len = 0; len < b.len; len++)
        ck_assert_int_eq(kiln__kdb_ir_decode((uint8_t *)b.data, len, &used, &ir),
                         KILN_ERR_CORRUPT);
    /* an operand that is not an earlier node */
    kiln_ir_node bad[3];
    memcpy(bad, nodes, sizeof bad);
    bad[2].args[1] = 2;
    seg.nodes = bad;
    kiln_buf b2 = {0};
    kiln__kdb_ir_encode(&seg, &ko, &b2);
    ck_assert_int_eq(kiln__kdb_ir_decode((uint8_t *)b2.data, b2.len, &used, &ir),
                     KILN_ERR_CORRUPT);
    kiln__buf_free(&b);
    kiln__buf_free(&b2);
    /* a long segment (the decoder's size check must not reject it) */
    kiln_ir_node chain[64];
    for (int i = 0; i < 64; i++) {
        chain[i] = kiln__ir_node_blank(i < 2 ? KILN_OP_INPUT : KILN_OP_ADD, KILN_F32, 1);
        chain[i].io = i < 2 ? i : -1;
        chain[i].args[0] = i < 2 ? -1 : i - 1;
        chain[i].args[1] = i < 2 ? -1 : i - 2;
    }
    int32_t last[1] = {63};
    kiln_ir_segment long_seg = {sizeof long_seg, KILN_SEGK_POINTWISE, chain, 64, 2, last,
                                1, NULL, NULL, 0};
    kiln_buf b3 = {0};
    kiln__kdb_ir_encode(&long_seg, &ko, &b3);
    ck_assert_int_eq(kiln__kdb_ir_decode((uint8_t *)b3.data, b3.len, &used, &ir), KILN_OK);
    ck_assert_uint_eq(ir.seg.n_nodes, 64);
    ck_assert_ptr_null(ir.seg.input_traits);
    kiln__kdb_ir_free(&ir);
    kiln__buf_free(&b3);
}
END_TEST

/* ---------------------------------------------------------- bad files */

typedef void (*damage_fn)(const tdir *t, int k);

static void d_truncate(const tdir *t, int k)
{
    char p[700];
    entry_path(t, k, p, sizeof p);
    struct stat st;
    stat(p, &st);
    ck_assert_int_eq(truncate(p, st.st_size / 2), 0);
}
/* Rewrite entry k's file through edit(bytes, n). */
static void edit_entry(const tdir *t, int k, void (*edit)(uint8_t *, size_t))
{
    char p[700];
    size_t n;
    entry_path(t, k, p, sizeof p);
    uint8_t *b = read_file(p, &n);
    edit(b, n);
    write_file(p, b, n);
    free(b);
}

/* Recompute the checksum of an entry of n bytes. */
static void reseal(uint8_t *b, size_t n)
{
    uint64_t h[2];
    kiln__kdb_hash128(b, n - 16, h);
    for (int i = 0; i < 8; i++) {
        b[n - 16 + (size_t)i] = (uint8_t)(h[0] >> (8 * i));
        b[n - 8 + (size_t)i] = (uint8_t)(h[1] >> (8 * i));
    }
}

static void e_bitflip(uint8_t *b, size_t n) { b[n / 2] ^= 0x10; }
static void e_magic(uint8_t *b, size_t n) { (void)n; b[0] = 'X'; }
static void e_version(uint8_t *b, size_t n) { b[8] = 2; reseal(b, n); }
static void e_checksum(uint8_t *b, size_t n) { b[n - 1] ^= 1; }

static void d_bitflip(const tdir *t, int k) { edit_entry(t, k, e_bitflip); }
static void d_empty(const tdir *t, int k)
{
    char p[700];
    entry_path(t, k, p, sizeof p);
    ck_assert_int_eq(truncate(p, 0), 0);
}
static void d_magic(const tdir *t, int k) { edit_entry(t, k, e_magic); }
/* a valid entry of format version 2 (checksum right) */
static void d_version(const tdir *t, int k) { edit_entry(t, k, e_version); }
/* another key's valid entry under this key's name */
static void d_other_key(const tdir *t, int k)
{
    char p[700], q[700];
    size_t n;
    entry_path(t, k + 1000, q, sizeof q);
    entry_path(t, k, p, sizeof p);
    uint8_t *b = read_file(q, &n);
    write_file(p, b, n);
    free(b);
}
/* the checksum itself damaged */
static void d_checksum(const tdir *t, int k) { edit_entry(t, k, e_checksum); }
/* larger than any entry (a sparse file) */
static void d_huge(const tdir *t, int k)
{
    char p[700];
    entry_path(t, k, p, sizeof p);
    ck_assert_int_eq(truncate(p, (off_t)KILN__KDB_MAX_ENTRY + 1), 0);
}

START_TEST(bad_files_are_misses)
{
    static const struct { const char *name; damage_fn fn; } cases[] = {
        {"truncated", d_truncate}, {"bit-flipped", d_bitflip},
        {"zero-length", d_empty},   {"wrong magic", d_magic},
        {"wrong version", d_version}, {"key of another name", d_other_key},
        {"checksum damaged", d_checksum}, {"oversized", d_huge},
    };
    long trials = 0, wrong = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tdir t;
        tdir_make(&t);
        FILE *diag = tmpfile();
        kiln__kdb *db = open_db(&t, KILN__KDB_RW, 0, diag);
        ck_assert_int_eq(store_k(db, 1, 0, 5000), 1);
        ck_assert_int_eq(store_k(db, 1001, 0, 3000), 1);
        cases[c].fn(&t, 1);
        int r = load_k(db, 1);
        trials++;
        wrong += r == -1 || r == KILN__KDB_HIT;
        ck_assert_msg(r == KILN__KDB_CORRUPT, "%s: load gave %d", cases[c].name, r);
        kiln__kdb_counts cnt;
        kiln__kdb_counters(db, &cnt); /* counted by the caller (cache.c) */
        char *log = slurp(diag);
        ck_assert_msg(count_sub(log, "corrupt entry") == 1, "%s: %s", cases[c].name, log);
        free(log);
        /* compiled again and replaced: the next lookup is a good hit */
        ck_assert_int_eq(store_k(db, 1, 0, 5000), 1);
        ck_assert_int_eq(load_k(db, 1), KILN__KDB_HIT);
        ck_assert_int_eq(load_k(db, 1001), KILN__KDB_HIT);
        kiln__kdb_destroy(db);
        fclose(diag);
        tdir_free(&t);
    }
    tally("bad files (truncated, bit-flipped, empty, magic, version, key, checksum, "
          "oversized)", trials, wrong, 0, 0);
}
END_TEST

/* `kiln cache verify` logic: a scan finds and removes each bad entry. */
static void count_bad(void *arg, const kiln__kdb_item *it)
{
    long *n = arg;
    n[0] += it->kind == KILN__KDB_ITEM_ENTRY;
    n[1] += it->bad;
    n[2] += it->removed;
}

START_TEST(verify_finds_and_removes_bad)
{
    tdir t;
    tdir_make(&t);
    kiln__kdb *db = open_db(&t, KILN__KDB_RW, 0, NULL);
    for (int k = 0; k < 4; k++)
        store_k(db, k, 0, 2000);
    d_bitflip(&t, 1);
    d_empty(&t, 2);
    char err[256];
    long n[3] = {0, 0, 0};
    ck_assert_int_eq(kiln__kdb_scan(db, 1, 0, count_bad, n, err, sizeof err), 0);
    ck_assert_int_eq(n[0], 4);
    ck_assert_int_eq(n[1], 2);
    ck_assert_int_eq(n[2], 0);
    memset(n, 0, sizeof n);
    ck_assert_int_eq(kiln__kdb_scan(db, 1, 1, count_bad, n, err, sizeof err), 0);
    ck_assert_int_eq(n[2], 2);
    ck_assert_int_eq(load_k(db, 1), KILN__KDB_MISS);
    ck_assert_int_eq(load_k(db, 0), KILN__KDB_HIT);
    ck_assert_int_eq(load_k(db, 3), KILN__KDB_HIT);
    uint64_t removed = 0;
    ck_assert_int_eq(kiln__kdb_clear(db, &removed, err, sizeof err), 0);
    ck_assert_uint_eq(removed, 2);
    ck_assert_int_eq(load_k(db, 0), KILN__KDB_MISS);
    kiln__kdb_destroy(db);
    tdir_free(&t);
}
END_TEST

/* --------------------------------------------------- directory and modes */

START_TEST(dir_created_0700_with_parents)
{
    tdir t;
    tdir_make(&t);
    char deep[800];
    snprintf(deep, sizeof deep, "%s/a/b/kiln", t.base);
    mode_t old = umask(0);
    kiln__kdb *db = kiln__kdb_create(deep, KILN__KDB_RW, 0, NULL);
    ck_assert(kiln__kdb_ready(db));
    umask(old);
    struct stat st;
    ck_assert_int_eq(stat(deep, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    char mid[800];
    snprintf(mid, sizeof mid, "%s/a", t.base);
    ck_assert_int_eq(stat(mid, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    /* entries are 0600 */
    ck_assert_int_eq(store_k(db, 5, 0, 100), 1);
    kiln__kdb_destroy(db);
    kiln__kdb *db2 = kiln__kdb_create(deep, KILN__KDB_RW, 0, NULL);
    ck_assert_int_eq(load_k(db2, 5), KILN__KDB_HIT);
    kiln__kdb_destroy(db2);
    tdir_free(&t);
}
END_TEST

START_TEST(env_settings)
{
    tdir t;
    tdir_make(&t);
    setenv("KILN_CACHE_DIR", t.dir, 1);
    setenv("KILN_CACHE_MODE", "rw", 1);
    setenv("KILN_CACHE_MAX_BYTES", "64K", 1);
    kiln__kdb *db = kiln__kdb_from_env(NULL);
    ck_assert_str_eq(kiln__kdb_dir(db), t.dir);
    ck_assert_uint_eq(kiln__kdb_max_bytes(db), 65536);
    ck_assert_int_eq(kiln__kdb_get_mode(db), KILN__KDB_RW);
    ck_assert(kiln__kdb_ready(db));
    kiln__kdb_destroy(db);
    static const struct { const char *var, *val, *msg; } bad[] = {
        {"KILN_CACHE_MODE", "RW", "KILN_CACHE_MODE='RW' is not off, ro or rw"},
        {"KILN_CACHE_MAX_BYTES", "12X", "KILN_CACHE_MAX_BYTES='12X'"},
        {"KILN_CACHE_MAX_BYTES", "0", "KILN_CACHE_MAX_BYTES='0'"},
        {"KILN_CACHE_MAX_BYTES", "99999999999999999999", "KILN_CACHE_MAX_BYTES"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("KILN_CACHE_MODE", "rw", 1);
        setenv("KILN_CACHE_MAX_BYTES", "1M", 1);
        setenv(bad[i].var, bad[i].val, 1);
        FILE *diag = tmpfile();
        db = kiln__kdb_from_env(diag);
        ck_assert(!kiln__kdb_ready(db));
        ck_assert_msg(strstr(kiln__kdb_why(db), bad[i].msg) != NULL, "%s",
                      kiln__kdb_why(db));
        char *log = slurp(diag);
        ck_assert_int_eq(count_sub(log, "continuing without persistence"), 1);
        free(log);
        fclose(diag);
        kiln__kdb_destroy(db);
    }
    /* the directory: KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln (absolute
    ** only), else $HOME/.cache/kiln, else refused */
    unsetenv("KILN_CACHE_DIR");
    unsetenv("KILN_CACHE_MAX_BYTES");
    setenv("KILN_CACHE_MODE", "ro", 1);
    setenv("XDG_CACHE_HOME", "/x/y", 1);
    setenv("HOME", "/h", 1);
    db = kiln__kdb_from_env(NULL);
    ck_assert_str_eq(kiln__kdb_dir(db), "/x/y/kiln");
    ck_assert_int_eq(kiln__kdb_get_mode(db), KILN__KDB_RO);
    ck_assert_uint_eq(kiln__kdb_max_bytes(db), KILN__KDB_DEFAULT_MAX);
    kiln__kdb_destroy(db);
    setenv("XDG_CACHE_HOME", "relative", 1);
    db = kiln__kdb_from_env(NULL);
    ck_assert_str_eq(kiln__kdb_dir(db), "/h/.cache/kiln");
    kiln__kdb_destroy(db);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    FILE *diag = tmpfile();
    db = kiln__kdb_from_env(diag);
    ck_assert(!kiln__kdb_ready(db));
    ck_assert_ptr_nonnull(strstr(kiln__kdb_why(db), "no cache directory"));
    kiln__kdb_destroy(db);
    fclose(diag);
    /* off: refused without a warning */
    setenv("KILN_CACHE_DIR", t.dir, 1);
    setenv("KILN_CACHE_MODE", "off", 1);
    diag = tmpfile();
    db = kiln__kdb_from_env(diag);
    ck_assert(!kiln__kdb_ready(db));
    ck_assert_int_eq(load_k(db, 1), KILN__KDB_REFUSED);
    char *log = slurp(diag);
    ck_assert_str_eq(log, "");
    free(log);
    fclose(diag);
    kiln__kdb_destroy(db);
    tdir_free(&t);
}
END_TEST

START_TEST(read_only_mode)
{
    tdir t;
    tdir_make(&t);
    kiln__kdb *rw = open_db(&t, KILN__KDB_RW, 0, NULL);
    ck_assert_int_eq(store_k(rw, 1, 0, 500), 1);
    kiln__kdb_destroy(rw);
    char p[700];
    entry_path(&t, 1, p, sizeof p);
    struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, p, old, 0), 0);
    kiln__kdb *ro = open_db(&t, KILN__KDB_RO, 0, NULL);
    ck_assert_int_eq(load_k(ro, 1), KILN__KDB_HIT);
    ck_assert_int_eq(store_k(ro, 2, 0, 500), 0); /* never writes */
    ck_assert_int_eq(load_k(ro, 2), KILN__KDB_MISS);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mtim.tv_sec, 1000000000); /* no recency mark */
    kiln__kdb_destroy(ro);
    /* ro on a directory that does not exist: refused, never created */
    char none[800];
    snprintf(none, sizeof none, "%s/absent", t.base);
    FILE *diag = tmpfile();
    ro = kiln__kdb_create(none, KILN__KDB_RO, 0, diag);
    ck_assert(!kiln__kdb_ready(ro));
    ck_assert_int_ne(stat(none, &st), 0);
    kiln__kdb_destroy(ro);
    fclose(diag);
    tdir_free(&t);
}
END_TEST

/* ----------------------------------------------------------- security */

static int is_root(void) { return geteuid() == 0; }

static void skip_not_root(const char *what)
{
    tu_skip("kernel_db_security", "%s: needs root to chown to another user "
                                  "(running as uid %u)", what, (unsigned)geteuid());
    tally(what, 0, 0, 0, 1);
}

/* A database on t whose directory is changed by fn first; returns whether
** it was refused, and checks the one warning. */
static int refused_after(tdir *t, void (*fn)(const tdir *t), const char *expect)
{
    kiln__kdb *db = open_db(t, KILN__KDB_RW, 0, NULL);
    ck_assert(kiln__kdb_ready(db));
    ck_assert_int_eq(store_k(db, 1, 0, 300), 1);
    kiln__kdb_destroy(db);
    fn(t);
    FILE *diag = tmpfile();
    db = open_db(t, KILN__KDB_RW, 0, diag);
    int r1 = load_k(db, 1), r2 = load_k(db, 1);
    int st = store_k(db, 2, 0, 300);
    char *log = slurp(diag);
    int refused = r1 == KILN__KDB_REFUSED && r2 == KILN__KDB_REFUSED && st == 0;
    ck_assert_msg(!refused || count_sub(log, "continuing without persistence") == 1,
                  "%s", log);
    ck_assert_msg(!refused || strstr(log, expect) != NULL, "%s", log);
    free(log);
    fclose(diag);
    kiln__kdb_destroy(db);
    return refused;
}

static void dir_0777(const tdir *t) { chmod(t->dir, 0777); }
static void dir_0770(const tdir *t) { chmod(t->dir, 0770); }
static void entry_0666(const tdir *t)
{
    char p[700];
    entry_path(t, 1, p, sizeof p);
    chmod(p, 0666);
}
static void entry_symlink(const tdir *t)
{
    char p[700], q[800];
    entry_path(t, 1, p, sizeof p);
    snprintf(q, sizeof q, "%s/elsewhere", t->base);
    rename(p, q);
    ck_assert_int_eq(symlink(q, p), 0);
}
static void dir_nobody(const tdir *t) { ck_assert_int_eq(chown(t->dir, NOBODY, NOBODY), 0); }
static void entry_nobody(const tdir *t)
{
    char p[700];
    entry_path(t, 1, p, sizeof p);
    ck_assert_int_eq(chown(p, NOBODY, NOBODY), 0);
}

START_TEST(insecure_modes_refused)
{
    static const struct { void (*fn)(const tdir *); const char *expect; } cases[] = {
        {dir_0777, "mode 0777: writable by others"},
        {dir_0770, "mode 0770: writable by its group"},
        {entry_0666, "mode 0666"},
        {entry_symlink, "symbolic link"},
    };
    long trials = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++, trials++) {
        tdir t;
        tdir_make(&t);
        ck_assert_msg(refused_after(&t, cases[c].fn, cases[c].expect),
                      "case %zu not refused", c);
        tdir_free(&t);
    }
    tally("insecure modes (dir 0777, dir 0770, entry 0666, entry symlink)", trials, 0,
          0, 0);
}
END_TEST

START_TEST(other_owner_refused)
{
    if (!is_root()) {
        skip_not_root("directory and entry owned by another user");
        return;
    }
    tdir t;
    tdir_make(&t);
    ck_assert(refused_after(&t, dir_nobody, "owned by uid 65534"));
    tdir_free(&t);
    tdir_make(&t);
    ck_assert(refused_after(&t, entry_nobody, "owned by uid 65534"));
    tdir_free(&t);
    tally("owned by another user (dir, entry)", 2, 0, 0, 0);
}
END_TEST

/* A directory this process cannot write: stores fail (reported once),
** lookups still work, nothing crashes.  As root, a child that became
** nobody makes and uses a directory of its own mode 0500. */
START_TEST(unwritable_directory)
{
    tdir t;
    tdir_make(&t);
    chmod(t.base, 0777);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (is_root() && (setgid(NOBODY) != 0 || setuid(NOBODY) != 0))
            _exit(10);
        if (mkdir(t.dir, 0700) != 0)
            _exit(11);
        kiln__kdb *db = kiln__kdb_create(t.dir, KILN__KDB_RW, 0, stderr);
        if (store_k(db, 1, 0, 300) != 1)
            _exit(12);
        if (chmod(t.dir, 0500) != 0)
            _exit(13);
        FILE *diag = tmpfile();
        kiln__kdb_destroy(db);
        db = kiln__kdb_create(t.dir, KILN__KDB_RW, 0, diag);
        int s1 = store_k(db, 2, 0, 300), s2 = store_k(db, 3, 0, 300);
        int l1 = load_k(db, 1), l2 = load_k(db, 2);
        char *log = slurp(diag);
        int warned = count_sub(log, "cannot store a kernel");
        kiln__kdb_destroy(db);
        chmod(t.dir, 0700);
        _exit(s1 == 0 && s2 == 0 && l1 == KILN__KDB_HIT && l2 == KILN__KDB_MISS &&
                      warned == 1
                  ? 0
                  : 20 + s1 + 2 * s2);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    tdir_free(&t);
    ck_assert_msg(WIFEXITED(ws), "child died by signal %d", WTERMSIG(ws));
    tally("unwritable directory", 4, 0, WIFSIGNALED(ws), 0);
    ck_assert_int_eq(WEXITSTATUS(ws), 0);
}
END_TEST

/* --------------------------------------------------------- fault hooks */

/* Fail the Nth call of every file operation in turn, for each errno a
** full disk or a permission problem gives, around a store/load/evict
** sequence: every step returns cleanly, and afterwards (faults off) each
** key loads its own payload or misses -- never another's. */
START_TEST(every_operation_failed_in_turn)
{
    static const int errs[] = {ENOSPC, EACCES, EIO};
    long trials = 0, wrong = 0;
    for (int op = 0; op < F_N; op++)
        for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++)
            for (long nth = 1; nth <= 6; nth++) {
                tdir t;
                tdir_make(&t);
                FILE *diag = tmpfile();
                fvfs f;
                fvfs_init(&f);
                f.fail_at[op] = nth;
                f.err[op] = errs[e];
                kiln__kdb *db = kiln__kdb_create(t.dir, KILN__KDB_RW, 6000, diag);
                kiln__kdb_set_vfs(db, &f.v);
                for (int k = 0; k < 3; k++) {
                    store_k(db, k, 0, 2500);
                    wrong += load_k(db, k) == -1;
                }
                kiln__kdb_evict_to(db, 3000);
                for (int k = 0; k < 3; k++)
                    wrong += load_k(db, k) == -1;
                kiln__kdb_destroy(db);
                /* faults off: what is there is right */
                db = kiln__kdb_create(t.dir, KILN__KDB_RW, 0, diag);
                for (int k = 0; k < 3; k++) {
                    int r = load_k(db, k);
                    wrong += r == -1;
                    ck_assert_msg(r == KILN__KDB_HIT || r == KILN__KDB_MISS,
                                  "%s #%ld: key %d gave %d", fnames[op], nth, k, r);
                }
                kiln__kdb_destroy(db);
                trials++;
                fclose(diag);
                tdir_free(&t);
            }
    tally("every file operation failed in turn (ENOSPC, EACCES, EIO)", trials, wrong,
          0, 0);
    ck_assert_int_eq(wrong, 0);
}
END_TEST

/* A store that fails at write, fsync, close or rename leaves no file
** behind (the temporary one is removed), reports once, and stores again
** once the fault is gone. */
START_TEST(failed_store_leaves_nothing)
{
    static const int ops[] = {F_OPENAT, F_WRITE, F_FSYNC, F_CLOSE, F_RENAME};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        tdir t;
        tdir_make(&t);
        FILE *diag = tmpfile();
        fvfs f;
        fvfs_init(&f);
        f.fail_at[ops[i]] = -1;
        f.err[ops[i]] = ENOSPC;
        kiln__kdb *db = kiln__kdb_create(t.dir, KILN__KDB_RW, 0, diag);
        kiln__kdb_set_vfs(db, &f.v);
        ck_assert_int_eq(store_k(db, 1, 0, 1000), 0);
        ck_assert_int_eq(store_k(db, 2, 0, 1000), 0);
        ck_assert_int_eq(count_temps(&t), 0);
        f.fail_at[ops[i]] = 0;
        ck_assert_int_eq(load_k(db, 1), KILN__KDB_MISS);
        ck_assert_int_eq(store_k(db, 1, 0, 1000), 1);
        ck_assert_int_eq(load_k(db, 1), KILN__KDB_HIT);
        char *log = slurp(diag);
        ck_assert_msg(count_sub(log, "cannot store a kernel") == 1, "%s: %s",
                      fnames[ops[i]], log);
        ck_assert_ptr_nonnull(strstr(log, "No space left on device"));
        free(log);
        kiln__kdb_destroy(db);
        fclose(diag);
        tdir_free(&t);
    }
}
END_TEST

START_TEST(short_and_interrupted_io)
{
    tdir t;
    tdir_make(&t);
    fvfs f;
    fvfs_init(&f);
    f.short_io = 1;
    f.eintr = 1;
    kiln__kdb *db = kiln__kdb_create(t.dir, KILN__KDB_RW, 0, NULL);
    kiln__kdb_set_vfs(db, &f.v);
    ck_assert_int_eq(store_k(db, 4, 2, 777), 1);
    ck_assert_int_eq(load_k(db, 4), KILN__KDB_HIT);
    ck_assert_int_gt(f.calls[F_WRITE], 100);
    kiln__kdb_destroy(db);
    tdir_free(&t);
}
END_TEST

/* --------------------------------------------------- eviction and LRU */

static void set_mtime(const tdir *t, int k, time_t sec)
{
    char p[700];
    entry_path(t, k, p, sizeof p);
    struct timespec ts[2] = {{sec, 0}, {sec, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
}

START_TEST(lru_eviction_keeps_recent)
{
    tdir t;
    tdir_make(&t);
    kiln__kdb *db = open_db(&t, KILN__KDB_RW, 0, NULL);
    for (int k = 0; k < 6; k++) {
        ck_assert_int_eq(store_k(db, k, 0, 1000), 1);
        set_mtime(&t, k, 1000000000 + k); /* k = 0 is the oldest */
    }
    ck_assert_int_eq(load_k(db, 0), KILN__KDB_HIT); /* the recency mark */
    char p[700];
    entry_path(&t, 0, p, sizeof p);
    struct stat st;
    stat(p, &st);
    ck_assert_int_gt(st.st_mtim.tv_sec, 1000000010);
    uint64_t one = (uint64_t)st.st_size;
    ck_assert_uint_eq(kiln__kdb_evict_to(db, 3 * one), 3);
    ck_assert_int_eq(load_k(db, 0), KILN__KDB_HIT);
    ck_assert_int_eq(load_k(db, 1), KILN__KDB_MISS);
    ck_assert_int_eq(load_k(db, 2), KILN__KDB_MISS);
    ck_assert_int_eq(load_k(db, 3), KILN__KDB_MISS);
    ck_assert_int_eq(load_k(db, 4), KILN__KDB_HIT);
    ck_assert_int_eq(load_k(db, 5), KILN__KDB_HIT);
    kiln__kdb_destroy(db);
    /* the cap works by itself: a store beyond it evicts to 90% */
    db = open_db(&t, KILN__KDB_RW, 4 * one, NULL);
    for (int k = 10; k < 20; k++)
        ck_assert_int_eq(store_k(db, k, 0, 1000), 1);
    long present = 0;
    for (int k = 0; k < 20; k++)
        present += load_k(db, k) == KILN__KDB_HIT;
    ck_assert_int_le(present, 4);
    ck_assert_int_ge(present, 1);
    ck_assert_int_eq(load_k(db, 19), KILN__KDB_HIT); /* the newest stays */
    kiln__kdb_counts c;
    kiln__kdb_counters(db, &c);
    ck_assert_uint_ge(c.evictions, 6);
    kiln__kdb_destroy(db);
    tdir_free(&t);
}
END_TEST

/* The guarded delete: an entry replaced or used after the scan saw it is
** never removed. */
START_TEST(delete_guard)
{
    tdir t;
    tdir_make(&t);
    kiln__kdb *db = open_db(&t, KILN__KDB_RW, 0, NULL);
    char p[700], name[64];
    store_k(db, 1, 0, 800);
    entry_path(&t, 1, p, sizeof p);
    snprintf(name, sizeof name, "%s", strrchr(p, '/') + 1);
    struct stat seen;
    ck_assert_int_eq(stat(p, &seen), 0);
    /* replaced by another writer (a new inode) */
    store_k(db, 1, 7, 800);
    ck_assert_int_eq(kiln__kdb_remove_if(db, name, &seen), 0);
    ck_assert_int_eq(load_k(db, 1), KILN__KDB_HIT);
    /* used (recency mark) since the scan */
    ck_assert_int_eq(stat(p, &seen), 0);
    set_mtime(&t, 1, 1000000000);
    ck_assert_int_eq(stat(p, &seen), 0);
    ck_assert_int_eq(load_k(db, 1), KILN__KDB_HIT);
    ck_assert_int_eq(kiln__kdb_remove_if(db, name, &seen), 0);
    ck_assert_int_eq(load_k(db, 1), KILN__KDB_HIT);
    /* unchanged: removed */
    ck_assert_int_eq(stat(p, &seen), 0);
    ck_assert_int_eq(kiln__kdb_remove_if(db, name, &seen), 1);
    ck_assert_int_eq(load_k(db, 1), KILN__KDB_MISS);
    ck_assert_int_eq(count_temps(&t), 0);
    kiln__kdb_destroy(db);
    tdir_free(&t);
}
END_TEST

/* ------------------------------------------------------ several processes */

/* A writer killed in the middle of writing an entry leaves only its
** temporary file: the entry is a miss, and the stale file is swept. */
START_TEST(killed_mid_write)
{
    tdir t;
    tdir_make(&t);
    kiln__kdb *db0 = open_db(&t, KILN__KDB_RW, 0, NULL);
    ck_assert(kiln__kdb_ready(db0));
    kiln__kdb_destroy(db0);
    long crashes = 0, wrong = 0, trials = 0;
    for (int round = 0; round < 4; round++, trials++) {
        fflush(NULL);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            fvfs f;
            fvfs_init(&f);
            f.kill_write = 1;
            kiln__kdb *db = kiln__kdb_create(t.dir, KILN__KDB_RW, 0, stderr);
            kiln__kdb_set_vfs(db, &f.v);
            store_k(db, round, 0, 50000);
            _exit(3); /* not reached */
        }
        int ws = 0;
        waitpid(pid, &ws, 0);
        ck_assert_msg(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "status %d", ws);
        kiln__kdb *db = open_db(&t, KILN__KDB_RW, 0, NULL);
        int r = load_k(db, round);
        wrong += r == -1;
        ck_assert_int_eq(r, KILN__KDB_MISS);
        kiln__kdb_destroy(db);
    }
    ck_assert_int_eq(count_temps(&t), 4);
    /* fresh temporary files are a live writer's: kept; stale ones swept */
    kiln__kdb *db = open_db(&t, KILN__KDB_RW, 0, NULL);
    kiln__kdb_evict_to(db, UINT64_MAX);
    ck_assert_int_eq(count_temps(&t), 4);
    DIR *d = opendir(t.dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, ".tmp.", 5) == 0) {
            char p[1200];
            snprintf(p, sizeof p, "%s/%s", t.dir, e->d_name);
            struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
            utimensat(AT_FDCWD, p, ts, 0);
        }
    closedir(d);
    kiln__kdb_evict_to(db, UINT64_MAX);
    ck_assert_int_eq(count_temps(&t), 0);
    ck_assert_int_eq(store_k(db, 0, 0, 50000), 1);
    ck_assert_int_eq(load_k(db, 0), KILN__KDB_HIT);
    kiln__kdb_destroy(db);
    tdir_free(&t);
    tally("writer killed mid-write", trials, wrong, crashes, 0);
}
END_TEST

typedef struct race_result {
    long loads, hits, wrong;
} race_result;

/* Fork `writers` processes that run writer(db, id) until `ms` pass, while
** this process reads keys 0..nkeys-1 in turn; returns the reader's counts
** and adds the children that died to *crashes. */
static race_result race(const tdir *t, int writers, int nkeys, uint64_t cap, int ms,
                        void (*writer)(kiln__kdb *, int, int), long *crashes)
{
    pid_t pids[16];
    fflush(NULL);
    for (int w = 0; w < writers; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            kiln__kdb *db = kiln__kdb_create(t->dir, KILN__KDB_RW, cap, stderr);
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            do {
                writer(db, w, nkeys);
                clock_gettime(CLOCK_MONOTONIC, &b);
            } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
            kiln__kdb_destroy(db);
            _exit(0);
        }
    }
    race_result rr = {0, 0, 0};
    kiln__kdb *db = kiln__kdb_create(t->dir, KILN__KDB_RW, cap, stderr);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int k = 0; k < nkeys; k++) {
            int r = load_k(db, k);
            rr.loads++;
            rr.hits += r == KILN__KDB_HIT;
            rr.wrong += r == -1;
            ck_assert_msg(r != KILN__KDB_CORRUPT && r != KILN__KDB_REFUSED,
                          "a reader saw result %d", r);
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
    kiln__kdb_destroy(db);
    for (int w = 0; w < writers; w++) {
        int ws = 0;
        waitpid(pids[w], &ws, 0);
        *crashes += !WIFEXITED(ws) || WEXITSTATUS(ws) != 0;
    }
    return rr;
}

static void write_same_keys(kiln__kdb *db, int w, int nkeys)
{
    for (int k = 0; k < nkeys; k++)
        store_k(db, k, w, 3000 + 1000 * (size_t)w); /* sizes differ per writer */
}

START_TEST(writers_race_a_reader)
{
    tdir t;
    tdir_make(&t);
    long crashes = 0;
    race_result rr = race(&t, 6, 3, 0, 1200, write_same_keys, &crashes);
    tally("6 writer processes racing a reader on the same keys", rr.loads, rr.wrong,
          crashes, 0);
    ck_assert_int_eq(rr.wrong, 0);
    ck_assert_int_eq(crashes, 0);
    ck_assert_int_gt(rr.hits, 0);
    kiln__kdb *db = open_db(&t, KILN__KDB_RW, 0, NULL);
    for (int k = 0; k < 3; k++)
        ck_assert_int_eq(load_k(db, k), KILN__KDB_HIT);
    kiln__kdb_destroy(db);
    /* no temporary file survives the writers (each removed or renamed) */
    ck_assert_int_eq(count_temps(&t), 0);
    tdir_free(&t);
}
END_TEST

static void write_many_keys(kiln__kdb *db, int w, int nkeys)
{
    for (int k = w; k < nkeys; k += 3)
        store_k(db, k, w, 4000);
}

START_TEST(eviction_races_a_reader)
{
    tdir t;
    tdir_make(&t);
    long crashes = 0;
    /* 60 keys of ~4 KiB against a 40 KiB cap: evictions all the time */
    race_result rr = race(&t, 3, 60, 40 * 1024, 1200, write_many_keys, &crashes);
    tally("eviction (3 writers over a 40 KiB cap) racing a reader", rr.loads, rr.wrong,
          crashes, 0);
    ck_assert_int_eq(rr.wrong, 0);
    ck_assert_int_eq(crashes, 0);
    ck_assert_int_gt(rr.hits, 0);
    ck_assert_int_lt(rr.hits, rr.loads); /* evictions happened */
    tdir_free(&t);
}
END_TEST

/* ------------------------------------------------------ through execute */

static const char *plugin(void)
{
    const char *p = getenv("KILN_TEST_PLUGIN");
    ck_assert_msg(p != NULL && p[0] != '\0',
                  "KILN_TEST_PLUGIN is not set (make test-unit sets it)");
    return p;
}

/* A fresh cache directory named by KILN_CACHE_DIR; returns the plugin. */
static const char *exec_setup(tdir *t)
{
    tdir_make(t);
    setenv("KILN_CACHE_DIR", t->dir, 1);
    return plugin();
}

/* Execute `op` (neg, abs) on one f32 element x on ctx; info may be NULL. */
static float run_unary(kiln_context *ctx, const char *op, float x, kiln_exec_info *info)
{
    char kf[128];
    snprintf(kf, sizeof kf, "kiln.fusion 1\n%%a = input f32 [?]\n%%b = %s %%a\noutput %%b\n",
             op);
    kiln_fusion *f = tu_fusion(kf);
    float y = 0;
    int64_t one = 1;
    kiln_tensor *in = tu_tensor(KILN_F32, 1, &one, NULL, &x);
    kiln_tensor *out = tu_tensor(KILN_F32, 1, &one, NULL, &y);
    ck_assert_msg(kiln_execute(ctx, f, &in, 1, &out, 1, NULL, info) == KILN_OK, "%s",
                  kiln_last_error());
    kiln_tensor_destroy(in);
    kiln_tensor_destroy(out);
    kiln_fusion_destroy(f);
    return y;
}

static const char *FMA_KF =
    "kiln.fusion 1\n%a = input f32 [?]\n%b = input f32 [?]\n%c = input f32 [?]\n"
    "%m = mul %a %b\n%s = add %m %c\noutput %s\n";

typedef struct xrun {
    kiln_db_outcome db;
    int kernel_hit;
    uint32_t out0;
    kiln_counters c;
} xrun;

/* A context on backend (KILN_CACHE_* from the environment), dump into
** diag; run FMA_KF once with enable=kernel_db plus `dis`. */
static xrun exec_once(const char *backend, FILE *diag, const char *dis, int db_on)
{
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = backend;
    cfg.use_env_override = 1;
    cfg.dump_stream = diag;
    kiln_context *ctx = NULL;
    ck_assert_msg(kiln_context_create(&cfg, &ctx) == KILN_OK, "%s", kiln_last_error());
    kiln_fusion *f = tu_fusion(FMA_KF);
    /* a*b+c where fma and separate rounding differ: a*b = 1 + 2^-11 +
    ** 2^-24 exactly, which rounds (ties to even) to 1 + 2^-11 */
    float a[2] = {1.0f + 0x1p-12f, 3.0f}, b[2] = {1.0f + 0x1p-12f, 1.0f};
    float c[2] = {-(1.0f + 0x1p-11f), 0.5f}, o[2] = {0, 0};
    int64_t n = 2;
    kiln_tensor *in[3] = {tu_tensor(KILN_F32, 1, &n, NULL, a),
                          tu_tensor(KILN_F32, 1, &n, NULL, b),
                          tu_tensor(KILN_F32, 1, &n, NULL, c)};
    kiln_tensor *out[1] = {tu_tensor(KILN_F32, 1, &n, NULL, o)};
    const char *en[1] = {"kernel_db"}, *d1[1] = {dis};
    kiln_exec_options eo = tu_opts(en, db_on ? 1 : 0, d1, dis ? 1 : 0);
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    ck_assert_msg(kiln_execute(ctx, f, in, 3, out, 1, &eo, info) == KILN_OK, "%s",
                  kiln_last_error());
    xrun r;
    kiln_segment_info si = tu_seg(info, 0);
    r.db = si.kernel_db;
    r.kernel_hit = si.kernel_hit;
    r.out0 = tu_bits(o[0]);
    r.c = tu_counters(ctx);
    char *json = NULL;
    ck_assert_int_eq(kiln_exec_info_json(info, &json), KILN_OK);
    char want[64];
    snprintf(want, sizeof want, "\"kernel_db\": \"%s\"", kiln_db_outcome_name(r.db));
    ck_assert_msg(strstr(json, want) != NULL, "%s", json);
    kiln_free(json);
    kiln_exec_info_destroy(info);
    for (int i = 0; i < 3; i++)
        kiln_tensor_destroy(in[i]);
    kiln_tensor_destroy(out[0]);
    kiln_fusion_destroy(f);
    kiln_context_destroy(ctx);
    return r;
}

/* fma(a,b,c) = 2^-24 exactly; separately rounded: 0 */
#define FMA_BITS 0x33800000u
#define SEP_BITS 0x00000000u

START_TEST(execute_store_then_hit)
{
    tdir t;
    const char *be = exec_setup(&t);
    FILE *diag = tmpfile();
    xrun r1 = exec_once(be, diag, NULL, 1);
    ck_assert_int_eq(r1.db, KILN_DB_STORED);
    ck_assert_uint_eq(r1.out0, FMA_BITS);
    ck_assert_uint_eq(r1.c.compiles, 1);
    ck_assert_uint_eq(r1.c.kernel_db_stores, 1);
    xrun r2 = exec_once(be, diag, NULL, 1); /* a fresh context: from disk */
    ck_assert_int_eq(r2.db, KILN_DB_HIT);
    ck_assert_int_eq(r2.kernel_hit, 0);
    ck_assert_uint_eq(r2.out0, FMA_BITS);
    ck_assert_uint_eq(r2.c.compiles, 0);
    ck_assert_uint_eq(r2.c.kernel_db_hits, 1);
    /* another kernel-level option: another entry, never the first kernel */
    xrun r3 = exec_once(be, diag, "fma", 1);
    ck_assert_int_eq(r3.db, KILN_DB_STORED);
    ck_assert_uint_eq(r3.out0, SEP_BITS);
    xrun r4 = exec_once(be, diag, "fma", 1);
    ck_assert_int_eq(r4.db, KILN_DB_HIT);
    ck_assert_uint_eq(r4.out0, SEP_BITS);
    ck_assert_uint_eq(exec_once(be, diag, NULL, 1).out0, FMA_BITS);
    /* not asked: not consulted; nvrtc_caching: always recompiled */
    xrun r5 = exec_once(be, diag, NULL, 0);
    ck_assert_int_eq(r5.db, KILN_DB_NONE);
    ck_assert_uint_eq(r5.c.kernel_db_hits + r5.c.kernel_db_misses, 0);
    xrun r6 = exec_once(be, diag, "nvrtc_caching", 1);
    ck_assert_int_eq(r6.db, KILN_DB_NONE);
    ck_assert_uint_eq(r6.c.compiles, 1);
    char *log = slurp(diag);
    ck_assert_str_eq(log, ""); /* nothing to report */
    free(log);
    fclose(diag);
    tdir_free(&t);
}
END_TEST

START_TEST(execute_corrupt_entry_replaced)
{
    tdir t;
    const char *be = exec_setup(&t);
    FILE *diag = tmpfile();
    ck_assert_int_eq(exec_once(be, diag, NULL, 1).db, KILN_DB_STORED);
    DIR *d = opendir(t.dir);
    struct dirent *e;
    char p[1200] = "";
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".kdb"))
            snprintf(p, sizeof p, "%s/%s", t.dir, e->d_name);
    closedir(d);
    size_t n;
    uint8_t *b = read_file(p, &n);
    b[n / 3] ^= 4;
    write_file(p, b, n);
    free(b);
    xrun r = exec_once(be, diag, NULL, 1);
    ck_assert_int_eq(r.db, KILN_DB_CORRUPT);
    ck_assert_uint_eq(r.out0, FMA_BITS);
    ck_assert_uint_eq(r.c.kernel_db_corrupt, 1);
    ck_assert_uint_eq(r.c.kernel_db_stores, 1);
    xrun r2 = exec_once(be, diag, NULL, 1);
    ck_assert_int_eq(r2.db, KILN_DB_HIT);
    ck_assert_uint_eq(r2.out0, FMA_BITS);
    char *log = slurp(diag);
    ck_assert_int_eq(count_sub(log, "corrupt entry"), 1);
    free(log);
    /* a payload the backend cannot load is corrupt too (and replaced) */
    setenv("KILN_TEST_PLUGIN_DB", "bad-payload", 1);
    xrun r3 = exec_once(be, diag, NULL, 1);
    ck_assert_int_eq(r3.db, KILN_DB_CORRUPT);
    ck_assert_uint_eq(r3.out0, FMA_BITS);
    unsetenv("KILN_TEST_PLUGIN_DB");
    fclose(diag);
    tdir_free(&t);
}
END_TEST

/* Refusals never fail an execute; the reason is printed once per context. */
START_TEST(execute_refusals)
{
    tdir t;
    const char *be = exec_setup(&t);
    static const struct { const char *var, *val, *why; } cases[] = {
        {"KILN_TEST_PLUGIN_DB", "none", "cannot persist kernels"},
        {"KILN_TEST_PLUGIN_DB", "probe-fails", "the version probe failed"},
        {"KILN_CACHE_MODE", "sometimes", "KILN_CACHE_MODE='sometimes'"},
        {"KILN_TEST_PLUGIN_SIZE", NULL, "cannot persist kernels"},
    };
    char size[32];
    snprintf(size, sizeof size, "%zu", offsetof(kiln_backend, db_versions));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv(cases[i].var, cases[i].val ? cases[i].val : size, 1);
        FILE *diag = tmpfile();
        xrun r = exec_once(be, diag, NULL, 1);
        ck_assert_int_eq(r.db, KILN_DB_REFUSED);
        ck_assert_uint_eq(r.out0, FMA_BITS);
        ck_assert_uint_eq(r.c.kernel_db_refused, 1);
        char *log = slurp(diag);
        ck_assert_msg(count_sub(log, cases[i].why) == 1, "case %zu: %s", i, log);
        free(log);
        fclose(diag);
        unsetenv(cases[i].var);
    }
    /* the reference backend persists nothing */
    FILE *diag = tmpfile();
    ck_assert_int_eq(exec_once("ref", diag, NULL, 1).db, KILN_DB_REFUSED);
    fclose(diag);
    /* off: refused, silently */
    setenv("KILN_CACHE_MODE", "off", 1);
    diag = tmpfile();
    ck_assert_int_eq(exec_once(be, diag, NULL, 1).db, KILN_DB_REFUSED);
    char *log = slurp(diag);
    ck_assert_str_eq(log, "");
    free(log);
    fclose(diag);
    /* ro: found entries are hits, new kernels misses (nothing written) */
    setenv("KILN_CACHE_MODE", "rw", 1);
    diag = tmpfile();
    ck_assert_int_eq(exec_once(be, diag, NULL, 1).db, KILN_DB_STORED);
    setenv("KILN_CACHE_MODE", "ro", 1);
    ck_assert_int_eq(exec_once(be, diag, NULL, 1).db, KILN_DB_HIT);
    xrun m = exec_once(be, diag, "fma", 1);
    ck_assert_int_eq(m.db, KILN_DB_MISS);
    ck_assert_uint_eq(m.c.kernel_db_misses, 1);
    ck_assert_int_eq(exec_once(be, diag, "fma", 1).db, KILN_DB_MISS);
    fclose(diag);
    /* an insecure directory: one warning for the two kernels of a context */
    setenv("KILN_CACHE_MODE", "rw", 1);
    chmod(t.dir, 0777);
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = be;
    cfg.use_env_override = 1;
    cfg.env_enable = "kernel_db";
    diag = tmpfile();
    cfg.dump_stream = diag;
    kiln_context *ctx;
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
    ck_assert(run_unary(ctx, "neg", -2, NULL) == 2.0f);
    ck_assert(run_unary(ctx, "abs", -2, NULL) == 2.0f);
    kiln_counters c = tu_counters(ctx);
    ck_assert_uint_eq(c.kernel_db_refused, 2);
    log = slurp(diag);
    ck_assert_int_eq(count_sub(log, "writable by others"), 1);
    free(log);
    fclose(diag);
    kiln_context_destroy(ctx);
    tdir_free(&t);
}
END_TEST

/* A failing write (disk full) never fails the execute. */
START_TEST(execute_disk_full)
{
    tdir t;
    tdir_make(&t);
    setenv("KILN_CACHE_DIR", t.dir, 1);
    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = plugin();
    cfg.use_env_override = 1;
    cfg.env_enable = "kernel_db";
    FILE *diag = tmpfile();
    cfg.dump_stream = diag;
    kiln_context *ctx;
    ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
    fvfs f;
    fvfs_init(&f);
    f.fail_at[F_WRITE] = -1;
    f.err[F_WRITE] = ENOSPC;
    kiln__kdb_set_vfs(kiln__context_kdb(ctx), &f.v);
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    ck_assert(run_unary(ctx, "neg", 3, info) == -3.0f);
    ck_assert_int_eq(tu_seg(info, 0).kernel_db, KILN_DB_MISS);
    kiln_counters c = tu_counters(ctx);
    ck_assert_uint_eq(c.kernel_db_misses, 1);
    ck_assert_uint_eq(c.kernel_db_stores, 0);
    kiln_exec_info_destroy(info);
    kiln_context_destroy(ctx);
    char *log = slurp(diag);
    ck_assert_int_eq(count_sub(log, "No space left on device"), 1);
    free(log);
    fclose(diag);
    ck_assert_int_eq(count_temps(&t), 0);
    tdir_free(&t);
}
END_TEST

/* Callers built before the kernel_db fields pass the older struct sizes. */
START_TEST(older_struct_sizes)
{
    kiln_context *ctx = tu_ctx();
    kiln_counters c;
    memset(&c, 0xee, sizeof c);
    c.struct_size = offsetof(kiln_counters, kernel_db_hits);
    ck_assert_int_eq(kiln_context_counters(ctx, &c), KILN_OK);
    ck_assert_uint_eq(c.kernel_db_hits, 0xeeeeeeeeeeeeeeeeULL); /* untouched */
    c.struct_size = offsetof(kiln_counters, kernel_db_hits) - 1;
    ck_assert_int_eq(kiln_context_counters(ctx, &c), KILN_ERR_INVALID_ARGUMENT);
    kiln_exec_info *info;
    kiln_exec_info_create(&info);
    ck_assert(run_unary(ctx, "neg", 1, info) == -1.0f);
    kiln_segment_info si;
    memset(&si, 0x5a, sizeof si);
    si.struct_size = offsetof(kiln_segment_info, kernel_db);
    ck_assert_int_eq(kiln_exec_info_segment(info, 0, &si), KILN_OK);
    ck_assert_int_eq((int)si.kernel_db, 0x5a5a5a5a);
    ck_assert_str_eq(si.what, "pointwise");
    ck_assert_str_eq(kiln_db_outcome_name(KILN_DB_STORED), "stored");
    ck_assert_str_eq(kiln_db_outcome_name((kiln_db_outcome)99), "?");
    kiln_exec_info_destroy(info);
    kiln_context_destroy(ctx);
}
END_TEST

/* ---------------------------------------------------------------- threads */

typedef struct th_arg {
    kiln_context *ctx;
    int id;
    int bad;
} th_arg;

static void *th_run(void *p)
{
    th_arg *a = p;
    char kf[200];
    /* four distinct kernels, each run by two threads */
    snprintf(kf, sizeof kf, "kiln.fusion 1\n%%a = input f32 [?]\n%%k = const f32 0x%08x\n"
             "%%b = mul %%a %%k\noutput %%b\n", tu_bits((float)(a->id % 4 + 2)));
    kiln_fusion *f = NULL;
    if (kiln_fusion_parse(kf, strlen(kf), &f) != KILN_OK) {
        a->bad = 1;
        return NULL;
    }
    for (int r = 0; r < 20; r++) {
        float x = 1.5f, y = 0;
        int64_t one = 1;
        kiln_tensor *in = NULL, *out = NULL;
        kiln_tensor_create(NULL, KILN_F32, 1, &one, NULL, KILN_MEM_HOST, &x, &in);
        kiln_tensor_create(NULL, KILN_F32, 1, &one, NULL, KILN_MEM_HOST, &y, &out);
        if (kiln_execute(a->ctx, f, &in, 1, &out, 1, NULL, NULL) != KILN_OK ||
            y != 1.5f * (float)(a->id % 4 + 2))
            a->bad = 1;
        kiln_tensor_destroy(in);
        kiln_tensor_destroy(out);
    }
    kiln_fusion_destroy(f);
    return NULL;
}

START_TEST(threads_share_the_database)
{
    tdir t;
    tdir_make(&t);
    setenv("KILN_CACHE_DIR", t.dir, 1);
    for (int round = 0; round < 2; round++) { /* store, then load */
        kiln_context_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.struct_size = sizeof cfg;
        cfg.backend = plugin();
        cfg.use_env_override = 1;
        cfg.env_enable = "kernel_db";
        cfg.kernel_cache_capacity = 2; /* in-memory evictions: more lookups */
        kiln_context *ctx;
        ck_assert_int_eq(kiln_context_create(&cfg, &ctx), KILN_OK);
        pthread_t tid[8];
        th_arg args[8];
        for (int i = 0; i < 8; i++) {
            args[i] = (th_arg){ctx, i, 0};
            ck_assert_int_eq(pthread_create(&tid[i], NULL, th_run, &args[i]), 0);
        }
        for (int i = 0; i < 8; i++) {
            pthread_join(tid[i], NULL);
            ck_assert_int_eq(args[i].bad, 0);
        }
        kiln_counters c = tu_counters(ctx);
        ck_assert_uint_eq(c.kernel_db_corrupt + c.kernel_db_refused, 0);
        if (round == 0)
            ck_assert_uint_ge(c.kernel_db_stores, 4);
        else
            ck_assert_uint_eq(c.compiles, 0); /* everything from disk */
        kiln_context_destroy(ctx);
    }
    tdir_free(&t);
}
END_TEST

/* ---------------------------------------------------------------- suites */

Suite *kdb_suite(void)
{
    Suite *s = suite_create("kernel_db");
    TCase *tc = tcase_create("format");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, format_round_trip);
    tcase_add_test(tc, hash_sees_every_bit);
    tcase_add_test(tc, parse_rejects_every_damage);
    tcase_add_test(tc, ir_codec_round_trip_and_damage);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bad_files_are_misses);
    tcase_add_test(tc, verify_finds_and_removes_bad);
    tcase_add_test(tc, dir_created_0700_with_parents);
    tcase_add_test(tc, env_settings);
    tcase_add_test(tc, read_only_mode);
    tcase_add_test(tc, insecure_modes_refused);
    tcase_add_test(tc, other_owner_refused);
    tcase_add_test(tc, unwritable_directory);
    tcase_add_test(tc, lru_eviction_keeps_recent);
    tcase_add_test(tc, delete_guard);
    suite_add_tcase(s, tc);
    tc = tcase_create("faults");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_operation_failed_in_turn);
    tcase_add_test(tc, failed_store_leaves_nothing);
    tcase_add_test(tc, short_and_interrupted_io);
    suite_add_tcase(s, tc);
    tc = tcase_create("processes");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, killed_mid_write);
    tcase_add_test(tc, writers_race_a_reader);
    tcase_add_test(tc, eviction_races_a_reader);
    suite_add_tcase(s, tc);
    tc = tcase_create("execute");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, execute_store_then_hit);
    tcase_add_test(tc, execute_corrupt_entry_replaced);
    tcase_add_test(tc, execute_refusals);
    tcase_add_test(tc, execute_disk_full);
    tcase_add_test(tc, older_struct_sizes);
    suite_add_tcase(s, tc);
    return s;
}

Suite *threads_kdb_suite(void)
{
    Suite *s = suite_create("threads_kdb");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, threads_share_the_database);
    suite_add_tcase(s, tc);
    return s;
}

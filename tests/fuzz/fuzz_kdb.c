/*
** fuzz_kdb.c -- libFuzzer target on the kernel database's entry reader
** (`make fuzz-kdb`, FUZZ_SECONDS=60; docs/kernel-db.md).
**
** Each input is the content of one entry file.  It goes through:
**   - kiln__kdb_parse (the format, lengths, checksum);
**   - kiln__kdb_load, on a handle whose VFS serves the input from memory as
**     the file of the key asked for: the whole read path (sizes, short
**     reads, name check, key comparison), with no disk;
**   - kiln__kdb_ir_decode on the payload (what the nvrtc backend and the
**     test plugin rebuild kernels from), with and without the 4-byte
**     payload magic in front;
** and, for the key and payload it parsed (or the input split in two), the
** property that encode then parse gives them back and that a load of the
** encoded entry under its own key is a hit with the same payload.
** Each input also runs with its magic and checksum repaired, so inputs
** reach the code behind the checksum test.  Any crash, leak, undefined
** behaviour or failed property aborts.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel_db.h"

#define DIRFD 1000
#define FILEFD 1001

typedef struct memfs {
    const uint8_t *data;
    size_t n, at;
    int chunk; /* serve reads in pieces of this size */
} memfs;

static int m_mkdir(void *a, const char *p, mode_t m)
{
    (void)a, (void)p, (void)m;
    errno = EEXIST;
    return -1;
}
static int m_open(void *a, const char *p, int f)
{
    (void)a, (void)p, (void)f;
    return DIRFD;
}
static int m_openat(void *a, int d, const char *n, int f, mode_t m)
{
    (void)d, (void)n, (void)m;
    if (f & (O_WRONLY | O_RDWR)) {
        errno = EROFS;
        return -1;
    }
    ((memfs *)a)->at = 0;
    return FILEFD;
}
static ssize_t m_read(void *a, int fd, void *b, size_t n)
{
    memfs *m = a;
    (void)fd;
    size_t left = m->n - m->at;
    if (n > left)
        n = left;
    if (m->chunk > 0 && n > (size_t)m->chunk)
        n = (size_t)m->chunk;
    memcpy(b, m->data + m->at, n);
    m->at += n;
    return (ssize_t)n;
}
static ssize_t m_write(void *a, int fd, const void *b, size_t n)
{
    (void)a, (void)fd, (void)b, (void)n;
    errno = EROFS;
    return -1;
}
static int m_ok(void *a, int fd)
{
    (void)a, (void)fd;
    return 0;
}
static int m_fstat(void *a, int fd, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_uid = geteuid();
    st->st_mode = fd == DIRFD ? (S_IFDIR | 0700) : (S_IFREG | 0600);
    st->st_size = (off_t)((memfs *)a)->n;
    return 0;
}
static int m_fstatat(void *a, int d, const char *n, struct stat *st)
{
    (void)d, (void)n;
    return m_fstat(a, FILEFD, st);
}
static int m_fail2(void *a, int d, const char *x, const char *y)
{
    (void)a, (void)d, (void)x, (void)y;
    errno = EROFS;
    return -1;
}
static int m_unlinkat(void *a, int d, const char *n)
{
    (void)a, (void)d, (void)n;
    errno = EROFS;
    return -1;
}
static int m_flock(void *a, int fd, int op)
{
    (void)a, (void)fd, (void)op;
    return 0;
}
static int m_list(void *a, int d, int (*fn)(void *, const char *), void *cb)
{
    (void)a, (void)d, (void)fn, (void)cb;
    return 0;
}

static kiln__kdb_result load_from(const uint8_t *file, size_t n, int chunk,
                                  const void *key, size_t key_len,
                                  uint8_t **payload, size_t *pn)
{
    memfs m = {file, n, 0, chunk};
    kiln__kdb_vfs v = {&m,       m_mkdir, m_open,  m_openat, m_read,
                       m_write,  m_ok,    m_ok,    m_fstat,  m_fstatat,
                       m_fail2,  m_fail2, m_unlinkat, m_ok,  m_flock,
                       m_list};
    static FILE *devnull; /* the corrupt-entry reports go nowhere */
    if (devnull == NULL)
        devnull = fopen("/dev/null", "w");
    kiln__kdb *db = kiln__kdb_create("/fuzz", KILN__KDB_RO, 0, devnull);
    kiln__kdb_set_vfs(db, &v);
    kiln__kdb_result r = kiln__kdb_load(db, key, key_len, payload, pn);
    kiln__kdb_destroy(db);
    return r;
}

static void decode_payload(const uint8_t *p, size_t n)
{
    kiln__kdb_ir ir;
    size_t used;
    for (size_t skip = 0; skip <= 4 && skip <= n; skip += 4)
        if (kiln__kdb_ir_decode(p + skip, n - skip, &used, &ir) == KILN_OK) {
            if (used > n - skip)
                abort();
            kiln__kdb_ir_free(&ir);
        }
}

static int one_input(const uint8_t *data, size_t size);

/* Inputs whose last 16 bytes are the right checksum get past the checksum
** test, so the fuzzer also explores everything behind it (lengths, keys,
** names, payloads): each input runs as it is and with its checksum
** repaired. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_input(data, size);
    if (size >= 48) {
        uint8_t *fixed = malloc(size);
        memcpy(fixed, data, size);
        memcpy(fixed, "KILNKDB", 8);
        uint64_t h[2];
        kiln__kdb_hash128(fixed, size - 16, h);
        for (int i = 0; i < 8; i++) {
            fixed[size - 16 + i] = (uint8_t)(h[0] >> (8 * i));
            fixed[size - 8 + i] = (uint8_t)(h[1] >> (8 * i));
        }
        one_input(fixed, size);
        free(fixed);
    }
    return 0;
}

static int one_input(const uint8_t *data, size_t size)
{
    kiln__kdb_entry e;
    const uint8_t *key, *pay;
    size_t key_len, pay_len;
    if (kiln__kdb_parse(data, size, &e) == NULL) {
        if (e.key + e.key_len > data + size || e.payload + e.payload_len > data + size)
            abort();
        key = e.key, key_len = e.key_len, pay = e.payload, pay_len = e.payload_len;
        /* the file as it is, under its own key: a hit when its name fits */
        uint8_t *p = NULL;
        size_t pn = 0;
        kiln__kdb_result r = load_from(data, size, size % 5, key, key_len, &p, &pn);
        if (r == KILN__KDB_HIT && (pn != pay_len || memcmp(p, pay, pn) != 0))
            abort();
        free(p);
    } else {
        size_t half = size / 2;
        key = data, key_len = half, pay = data + half, pay_len = size - half;
    }
    /* the raw input as key "k"'s file: a hit only if it is k's entry */
    uint8_t *p = NULL;
    size_t pn = 0;
    if (load_from(data, size, 3, "k", 1, &p, &pn) == KILN__KDB_HIT &&
        (kiln__kdb_parse(data, size, &e) != NULL || e.key_len != 1 ||
         e.key[0] != 'k' || pn != e.payload_len || memcmp(p, e.payload, pn) != 0))
        abort();
    free(p);
    decode_payload(pay, pay_len);
    /* round trip */
    size_t n = 0;
    uint8_t *b = kiln__kdb_encode(key, key_len, pay, pay_len, &n);
    if (b == NULL)
        return 0;
    kiln__kdb_entry f;
    if (kiln__kdb_parse(b, n, &f) != NULL || f.key_len != key_len ||
        f.payload_len != pay_len || memcmp(f.key, key, key_len) != 0 ||
        memcmp(f.payload, pay, pay_len) != 0)
        abort();
    p = NULL;
    if (load_from(b, n, 0, key, key_len, &p, &pn) != KILN__KDB_HIT || pn != pay_len ||
        memcmp(p, pay, pn) != 0)
        abort();
    free(p);
    free(b);
    return 0;
}

/*
** kernel_db.h -- the persistent on-disk kernel database behind
** enable=kernel_db (docs/kernel-db.md).  kernel_db.c is the only code that
** touches the cache directory; everything it does to the file system goes
** through a kiln__kdb_vfs (fault injection in the style of SQLite's VFS).
**
** One kiln__kdb belongs to one context (or to one `kiln cache` command).
** It is created from the environment (KILN_CACHE_DIR, XDG_CACHE_HOME,
** HOME, KILN_CACHE_MODE, KILN_CACHE_MAX_BYTES) and opens the directory on
** first use.  A database that cannot be used (mode off, a directory that
** fails the security rules, a bad setting) is "refused": every lookup is
** answered KILN__KDB_REFUSED and the reason is printed once on the
** diagnostic stream.  Nothing here ever fails an execute: the worst
** outcome of any fault is a miss.
**
** Entry file format (version 1, all integers little-endian):
**   0   8  magic "KILNKDB\0"
**   8   4  format version (1)
**   12  4  flags (0)
**   16  8  key length K
**   24  K  key (the full database key, compared byte for byte on load)
**   ..  8  payload length P
**   ..  P  payload (what the backend's serialize() wrote)
**   .. 16  checksum: kiln__kdb_hash128 over every byte before it
** The file is named "<32 hex digits of kiln__kdb_hash128(key)>.kdb".
*/
#ifndef KILN_KERNEL_DB_H
#define KILN_KERNEL_DB_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "internal.h"

#define KILN__KDB_FORMAT 1u          /* entry file format version */
#define KILN__KDB_SCHEMA 1u          /* database key schema version */
#define KILN__KDB_DEFAULT_MAX ((uint64_t)1 << 30) /* 1 GiB */
#define KILN__KDB_MAX_ENTRY ((uint64_t)256 << 20) /* larger files: corrupt */
#define KILN__KDB_STALE_SECONDS 3600 /* temporary files older: swept */
#define KILN__KDB_NAME_LEN 36        /* 32 hex + ".kdb" */

typedef enum kiln__kdb_mode {
    KILN__KDB_OFF = 0,
    KILN__KDB_RO = 1,
    KILN__KDB_RW = 2
} kiln__kdb_mode;

/* Result of a lookup. */
typedef enum kiln__kdb_result {
    KILN__KDB_HIT = 0,
    KILN__KDB_MISS = 1,     /* no entry, or another key's entry */
    KILN__KDB_CORRUPT = 2,  /* a bad entry (reported once, counted) */
    KILN__KDB_REFUSED = 3   /* the database is not usable */
} kiln__kdb_result;

/* ------------------------------------------------------------------ VFS */

/* Every file operation of the database.  Each returns what the POSIX call
** of the same name returns and sets errno the same way.  `arg` is the
** vfs's own pointer.  kiln__kdb_vfs_default() calls the system; a test
** wraps it to fail the Nth call of any operation. */
typedef struct kiln__kdb_vfs {
    void *arg;
    int (*mkdir)(void *arg, const char *path, mode_t mode);
    int (*open)(void *arg, const char *path, int flags);      /* directories */
    int (*openat)(void *arg, int dirfd, const char *name, int flags,
                  mode_t mode);
    ssize_t (*read)(void *arg, int fd, void *buf, size_t n);
    ssize_t (*write)(void *arg, int fd, const void *buf, size_t n);
    int (*fsync)(void *arg, int fd);
    int (*close)(void *arg, int fd);
    int (*fstat)(void *arg, int fd, struct stat *st);
    int (*fstatat)(void *arg, int dirfd, const char *name, struct stat *st);
    int (*renameat)(void *arg, int dirfd, const char *from, const char *to);
    int (*linkat)(void *arg, int dirfd, const char *from, const char *to);
    int (*unlinkat)(void *arg, int dirfd, const char *name);
    int (*futimens)(void *arg, int fd);                        /* now */
    int (*flock)(void *arg, int fd, int op);
    /* Call fn(name) for each name in the directory (not "." or "..");
    ** stops when fn returns non-zero.  0, or -1 with errno. */
    int (*list)(void *arg, int dirfd, int (*fn)(void *cb, const char *name),
                void *cb);
} kiln__kdb_vfs;

const kiln__kdb_vfs *kiln__kdb_vfs_default(void);

/* ------------------------------------------------------------ the handle */

typedef struct kiln__kdb kiln__kdb;

/* Counters of one handle (what kiln_counters reports). */
typedef struct kiln__kdb_counts {
    uint64_t hits, misses, corrupt, stores, refused, evictions;
} kiln__kdb_counts;

/* A handle configured from the environment, read now (getenv).  Never
** opens anything; a malformed setting is remembered and refuses the
** database at first use.  diag: where warnings go (NULL: stderr).  Returns
** NULL only when out of memory. */
kiln__kdb *kiln__kdb_from_env(FILE *diag);
/* A handle on directory `dir` with the given mode and cap (the command
** line); dir NULL resolves it from the environment as above. */
kiln__kdb *kiln__kdb_create(const char *dir, kiln__kdb_mode mode,
                            uint64_t max_bytes, FILE *diag);
/* Flush this handle's counters into the directory's stats file (rw mode,
** best effort) and free it.  NULL-safe. */
void kiln__kdb_destroy(kiln__kdb *db);
/* Route every file operation through vfs (NULL: the default).  Call before
** the first use or between uses; the vfs must outlive the handle. */
void kiln__kdb_set_vfs(kiln__kdb *db, const kiln__kdb_vfs *vfs);

/* Open the directory if not yet done.  1 when usable; 0 when refused, with
** the reason from kiln__kdb_why().  Thread-safe. */
int kiln__kdb_ready(kiln__kdb *db);
const char *kiln__kdb_why(const kiln__kdb *db);
const char *kiln__kdb_dir(const kiln__kdb *db);
kiln__kdb_mode kiln__kdb_get_mode(const kiln__kdb *db);
uint64_t kiln__kdb_max_bytes(const kiln__kdb *db);
/* Refuse the database from now on (e.g. a failed version probe); the
** reason is printed once. */
void kiln__kdb_refuse(kiln__kdb *db, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Look up `key`.  HIT: *payload (kiln__malloc'd, the caller frees) and
** *n receive the payload, and the entry's recency mark is set (rw mode).
** Other results leave *payload NULL.  CORRUPT is reported on the
** diagnostic stream and counted; the caller recompiles and stores over
** it.  Thread-safe. */
kiln__kdb_result kiln__kdb_load(kiln__kdb *db, const void *key, size_t key_len,
                                uint8_t **payload, size_t *n);
/* Store payload under key (temporary file, fsync, rename), then evict
** least-recently-used entries beyond the size cap.  1 when stored; 0 when
** not (read-only, refused, or a failed write, which is reported once).
** Never fails otherwise.  Thread-safe. */
int kiln__kdb_store(kiln__kdb *db, const void *key, size_t key_len,
                    const void *payload, size_t n);
/* Count one kernel outcome (cache.c decides which applies). */
void kiln__kdb_count(kiln__kdb *db, kiln__kdb_result r, int stored);
void kiln__kdb_counters(const kiln__kdb *db, kiln__kdb_counts *out);

/* ------------------------------------------------------- maintenance */

typedef enum kiln__kdb_item_kind {
    KILN__KDB_ITEM_ENTRY = 0,   /* NAME.kdb */
    KILN__KDB_ITEM_TEMP = 1,    /* .tmp.* or .del.* left by a writer */
    KILN__KDB_ITEM_OTHER = 2    /* anything else (never touched) */
} kiln__kdb_item_kind;

typedef struct kiln__kdb_item {
    const char *name;
    kiln__kdb_item_kind kind;
    uint64_t size;
    struct timespec mtime;
    int bad;                 /* verify: the entry is corrupt or insecure */
    const char *why;         /* verify: the reason ("" when good) */
    int removed;             /* verify/clear: it was removed */
    const char *key;         /* verify/list: the key text (NUL-terminated,
                                up to the IR bytes), or NULL */
    uint64_t payload;        /* verify/list: payload bytes */
} kiln__kdb_item;

/* Call fn for every item of the directory, sorted by name.  With
** `verify`, each entry is read and checked (format, checksum, name, owner,
** mode); with `fix` as well, bad entries and stale temporary files are
** removed.  0 on success; non-zero (with a message in err) when the
** directory cannot be used. */
int kiln__kdb_scan(kiln__kdb *db, int verify, int fix,
                   void (*fn)(void *arg, const kiln__kdb_item *it), void *arg,
                   char *err, size_t cap);
/* Remove every entry and temporary file (nothing else).  *removed gets
** the count.  0 on success; non-zero with a message otherwise. */
int kiln__kdb_clear(kiln__kdb *db, uint64_t *removed, char *err, size_t cap);
/* The directory's stats file (cumulative counters of every process that
** used it in rw mode).  0 when read (zeros when absent). */
int kiln__kdb_read_stats(kiln__kdb *db, kiln__kdb_counts *out);
/* Evict LRU entries until the directory holds at most target bytes
** (tests and `kiln cache`).  Returns the number evicted. */
uint64_t kiln__kdb_evict_to(kiln__kdb *db, uint64_t target);
/* The guarded delete eviction uses: remove entry `name` only when it is
** still the file `seen` describes (inode, size, mtime); 1 when removed.
** Exposed for tests. */
int kiln__kdb_remove_if(kiln__kdb *db, const char *name,
                        const struct stat *seen);

/* ------------------------------------------------------- pure helpers */
/* (kernel_db_format.c: no file is touched) */

/* A bijection of 64-bit words (the hash's mix; also seeds private names). */
uint64_t kiln__kdb_mix64(uint64_t x);

/* A 128-bit hash (two 64-bit lanes): each 8-byte word goes through a
** bijective mix, so changing any one word of the input always changes the
** result.  out[0], out[1]. */
void kiln__kdb_hash128(const void *data, size_t n, uint64_t out[2]);
/* The file name of key: 32 lower-case hex digits + ".kdb" + NUL. */
void kiln__kdb_name(const void *key, size_t n,
                    char name[KILN__KDB_NAME_LEN + 1]);

typedef struct kiln__kdb_entry {
    const uint8_t *key;
    size_t key_len;
    const uint8_t *payload;
    size_t payload_len;
} kiln__kdb_entry;

/* Parse an entry file held in buf[n].  NULL on success (e pointing into
** buf); otherwise a static string saying what is wrong ("truncated",
** "bad magic", ...), e untouched.  Never reads outside buf. */
const char *kiln__kdb_parse(const uint8_t *buf, size_t n, kiln__kdb_entry *e);
/* The entry file for (key, payload) in a kiln__malloc'd buffer (*size
** bytes); NULL when out of memory or too large. */
uint8_t *kiln__kdb_encode(const void *key, size_t key_len, const void *payload,
                          size_t payload_len, size_t *size);

/* ------------------------------------------- payload helpers (backends) */

/* The segment IR and kernel options a kernel was compiled from, as the
** built-in backends put them into their payloads (the "nvrtc" backend and
** the test plugin rebuild a ref kernel from them, so a payload alone
** decides what runs).  Versioned, little-endian, every field explicit. */
void kiln__kdb_ir_encode(const kiln_ir_segment *seg,
                         const kiln_kernel_options *ko, kiln_buf *b);

typedef struct kiln__kdb_ir {
    kiln_ir_segment seg;
    kiln_kernel_options ko;
    kiln_ir_node *nodes;
    int32_t *outputs;
    uint32_t *in_traits, *out_traits;
    char canonical[512];
} kiln__kdb_ir;

/* Decode what kiln__kdb_ir_encode wrote at p[0..n): *used receives the
** bytes consumed.  Structural checks only (counts, bounds, node operands
** before the node, outputs in range); the backend's compile validates the
** rest.  KILN_ERR_CORRUPT with a message on any inconsistency (out
** untouched), NO_MEMORY.  Free with kiln__kdb_ir_free. */
kiln_status kiln__kdb_ir_decode(const uint8_t *p, size_t n, size_t *used,
                                kiln__kdb_ir *out);
void kiln__kdb_ir_free(kiln__kdb_ir *ir);

/* Little-endian readers/writers for payloads. */
void kiln__kdb_put_u32(kiln_buf *b, uint32_t v);
void kiln__kdb_put_u64(kiln_buf *b, uint64_t v);
void kiln__kdb_put_str(kiln_buf *b, const char *s);         /* u32 len + bytes */
void kiln__kdb_put_bytes(kiln_buf *b, const void *p, size_t n); /* u64 len + bytes */
typedef struct kiln__kdb_rd {
    const uint8_t *p;
    size_t n, at;
    int bad;                 /* set by any read past the end */
} kiln__kdb_rd;
uint32_t kiln__kdb_get_u32(kiln__kdb_rd *r);
uint64_t kiln__kdb_get_u64(kiln__kdb_rd *r);
/* A string into buf (cap bytes, NUL-terminated); too long sets bad. */
void kiln__kdb_get_str(kiln__kdb_rd *r, char *buf, size_t cap);
/* A u64-length byte run: *p points into the reader's buffer. */
size_t kiln__kdb_get_bytes(kiln__kdb_rd *r, const uint8_t **p);

/* The context's database (created with the context). */
kiln__kdb *kiln__context_kdb(kiln_context *ctx);

#endif /* KILN_KERNEL_DB_H */

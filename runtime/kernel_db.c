/*
** kernel_db.c -- the persistent kernel database (kernel_db.h for the API
** and the entry format; docs/kernel-db.md for the rules): the handle, the
** file system (VFS), reads, eviction and writes.  The bytes of an entry
** (its hash, encoding and parse, the payload codec) are
** kernel_db_format.c.  This is the only file that touches the cache
** directory, and it does so only through a kiln__kdb_vfs, so tests can
** fail any single file operation.  That is also why it stays one file past
** 800 lines: every file operation on the directory, and so every security
** invariant below, can be audited here and nowhere else.
**
** Invariants:
**   - A reader never sees half an entry: entries are written to a
**     temporary file in the same directory (O_EXCL, mode 0600), fsync'ed,
**     and renamed over the entry's name; rename is atomic.
**   - A lookup returns a payload only when the file parses, its checksum
**     holds, its key hashes to its own name, and the key equals the key
**     asked for byte for byte.  Any other file is a miss (CORRUPT when
**     the file is bad), never a wrong kernel.
**   - The directory and every entry read must be owned by the current user
**     (or root) and not writable by group or others; otherwise the whole
**     database is refused for this handle (warned once) and everything
**     runs without persistence.  Entries are opened with O_NOFOLLOW.
**   - Eviction never deletes an entry another process just replaced or
**     just used: the victim is renamed to a private name first and removed
**     only if it is still the file the scan saw (inode, size, mtime); a hit
**     sets the entry's mtime (the recency mark), so a used entry no longer
**     matches.  Otherwise it is linked back (never over a newer entry).
**   - Nothing here fails an execute: every failure becomes a miss or a
**     skipped store, reported once per handle on the diagnostic stream.
*/
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "kernel_db.h"

/* 1 when name is NAME.kdb with 32 lower-case hex digits. */
static int entry_name(const char *name)
{
    if (strlen(name) != KILN__KDB_NAME_LEN || strcmp(name + 32, ".kdb") != 0)
        return 0;
    for (int i = 0; i < 32; i++)
        if (!((name[i] >= '0' && name[i] <= '9') ||
              (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

static int temp_name(const char *name)
{
    return strncmp(name, ".tmp.", 5) == 0 || strncmp(name, ".del.", 5) == 0;
}

/* ---------------------------------------------------------- default VFS */

static int sys_mkdir(void *a, const char *path, mode_t mode)
{
    (void)a;
    return mkdir(path, mode);
}
static int sys_open(void *a, const char *path, int flags)
{
    (void)a;
    return open(path, flags);
}
static int sys_openat(void *a, int dirfd, const char *name, int flags,
                      mode_t mode)
{
    (void)a;
    return openat(dirfd, name, flags, mode);
}
static ssize_t sys_read(void *a, int fd, void *buf, size_t n)
{
    (void)a;
    return read(fd, buf, n);
}
static ssize_t sys_write(void *a, int fd, const void *buf, size_t n)
{
    (void)a;
    return write(fd, buf, n);
}
static int sys_fsync(void *a, int fd)
{
    (void)a;
    return fsync(fd);
}
static int sys_close(void *a, int fd)
{
    (void)a;
    return close(fd);
}
static int sys_fstat(void *a, int fd, struct stat *st)
{
    (void)a;
    return fstat(fd, st);
}
static int sys_fstatat(void *a, int dirfd, const char *name, struct stat *st)
{
    (void)a;
    return fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW);
}
static int sys_renameat(void *a, int dirfd, const char *from, const char *to)
{
    (void)a;
    return renameat(dirfd, from, dirfd, to);
}
static int sys_linkat(void *a, int dirfd, const char *from, const char *to)
{
    (void)a;
    return linkat(dirfd, from, dirfd, to, 0);
}
static int sys_unlinkat(void *a, int dirfd, const char *name)
{
    (void)a;
    return unlinkat(dirfd, name, 0);
}
static int sys_futimens(void *a, int fd)
{
    (void)a;
    return futimens(fd, NULL);
}
static int sys_flock(void *a, int fd, int op)
{
    (void)a;
    return flock(fd, op);
}
static int sys_list(void *a, int dirfd, int (*fn)(void *cb, const char *name),
                    void *cb)
{
    (void)a;
    int fd = dup(dirfd);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    rewinddir(d); /* the duplicate shares its offset with dirfd */
    struct dirent *e;
    int rc = 0;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fn(cb, e->d_name) != 0)
            break;
        errno = 0;
    }
    if (e == NULL && errno != 0)
        rc = -1;
    int saved = errno;
    closedir(d);
    errno = saved;
    return rc;
}

static const kiln__kdb_vfs default_vfs = {
    NULL,         sys_mkdir,   sys_open,     sys_openat, sys_read,
    sys_write,    sys_fsync,   sys_close,    sys_fstat,  sys_fstatat,
    sys_renameat, sys_linkat,  sys_unlinkat, sys_futimens, sys_flock,
    sys_list};

const kiln__kdb_vfs *kiln__kdb_vfs_default(void) { return &default_vfs; }

/* ------------------------------------------------------------ the handle */

enum { W_REFUSED = 1, W_READ = 2, W_WRITE = 4, W_EVICT = 8 };

struct kiln__kdb {
    pthread_mutex_t mu;
    FILE *diag;
    const kiln__kdb_vfs *vfs;
    kiln__kdb_mode mode;
    uint64_t max_bytes;
    char dir[PATH_MAX];
    char cfg_error[512];  /* a malformed setting: refused at first use */
    char why[768];        /* why the database is refused */
    int state;            /* 0 not yet opened, 1 usable, 2 refused */
    int dirfd;
    unsigned warned;      /* W_* already printed */
    kiln__kdb_counts n;
    uint64_t approx;      /* bytes of entries, as last scanned + stored */
    int scanned;
    unsigned stores_since_scan;
    int evicting;
    unsigned long seq;    /* temporary names */
};

#define V(db) ((db)->vfs)

/* Print a warning once per class (lock held or not: diag is a stdio
** stream, which locks itself). */
static void warn_once(kiln__kdb *db, unsigned cls, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn_once(kiln__kdb *db, unsigned cls, const char *fmt, ...)
{
    pthread_mutex_lock(&db->mu);
    int first = !(db->warned & cls);
    db->warned |= cls;
    pthread_mutex_unlock(&db->mu);
    if (!first)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(db->diag, "kiln: kernel_db: warning: %s\n", msg);
    fflush(db->diag);
}

/* Parse KILN_CACHE_MAX_BYTES: decimal, optional K/M/G (1024-based). */
static int parse_bytes(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    int shift = 0;
    if (*p == 'K' || *p == 'k') shift = 10, p++;
    else if (*p == 'M' || *p == 'm') shift = 20, p++;
    else if (*p == 'G' || *p == 'g') shift = 30, p++;
    if (*p != '\0' || v == 0 || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = v << shift;
    return 0;
}

/* The directory from the environment into dir; a message in err when none. */
static void env_dir(char *dir, size_t cap, char *err, size_t ecap)
{
    const char *d = getenv("KILN_CACHE_DIR");
    const char *x = getenv("XDG_CACHE_HOME");
    const char *h = getenv("HOME");
    int n = -1;
    if (d != NULL && d[0] != '\0')
        n = snprintf(dir, cap, "%s", d);
    else if (x != NULL && x[0] == '/') /* XDG: relative values are ignored */
        n = snprintf(dir, cap, "%s/kiln", x);
    else if (h != NULL && h[0] != '\0')
        n = snprintf(dir, cap, "%s/.cache/kiln", h);
    else
        snprintf(err, ecap, "no cache directory: KILN_CACHE_DIR, "
                            "XDG_CACHE_HOME and HOME are all unset");
    if (n >= (int)cap)
        snprintf(err, ecap, "the cache directory path is too long");
}

static kiln__kdb *alloc_handle(FILE *diag)
{
    kiln__kdb *db = kiln__calloc(1, sizeof *db);
    if (db == NULL)
        return NULL;
    if (pthread_mutex_init(&db->mu, NULL) != 0) {
        kiln__free(db);
        return NULL;
    }
    db->diag = diag != NULL ? diag : stderr;
    db->vfs = &default_vfs;
    db->dirfd = -1;
    db->mode = KILN__KDB_RW;
    db->max_bytes = KILN__KDB_DEFAULT_MAX;
    return db;
}

kiln__kdb *kiln__kdb_from_env(FILE *diag)
{
    kiln__kdb *db = alloc_handle(diag);
    if (db == NULL)
        return NULL;
    env_dir(db->dir, sizeof db->dir, db->cfg_error, sizeof db->cfg_error);
    const char *m = getenv("KILN_CACHE_MODE");
    if (m == NULL || m[0] == '\0' || strcmp(m, "rw") == 0)
        db->mode = KILN__KDB_RW;
    else if (strcmp(m, "ro") == 0)
        db->mode = KILN__KDB_RO;
    else if (strcmp(m, "off") == 0)
        db->mode = KILN__KDB_OFF;
    else
        snprintf(db->cfg_error, sizeof db->cfg_error,
                 "KILN_CACHE_MODE='%.200s' is not off, ro or rw", m);
    const char *mb = getenv("KILN_CACHE_MAX_BYTES");
    if (mb != NULL && mb[0] != '\0' && parse_bytes(mb, &db->max_bytes) != 0)
        snprintf(db->cfg_error, sizeof db->cfg_error,
                 "KILN_CACHE_MAX_BYTES='%.200s' is not a positive byte count "
                 "(digits, optionally followed by K, M or G)", mb);
    return db;
}

kiln__kdb *kiln__kdb_create(const char *dir, kiln__kdb_mode mode,
                            uint64_t max_bytes, FILE *diag)
{
    kiln__kdb *db = alloc_handle(diag);
    if (db == NULL)
        return NULL;
    if (dir != NULL) {
        if (snprintf(db->dir, sizeof db->dir, "%s", dir) >= (int)sizeof db->dir)
            snprintf(db->cfg_error, sizeof db->cfg_error,
                     "the cache directory path is too long");
    } else {
        env_dir(db->dir, sizeof db->dir, db->cfg_error, sizeof db->cfg_error);
    }
    db->mode = mode;
    db->max_bytes = max_bytes ? max_bytes : KILN__KDB_DEFAULT_MAX;
    return db;
}

void kiln__kdb_set_vfs(kiln__kdb *db, const kiln__kdb_vfs *vfs)
{
    if (db != NULL)
        db->vfs = vfs != NULL ? vfs : &default_vfs;
}

const char *kiln__kdb_why(const kiln__kdb *db) { return db->why; }
const char *kiln__kdb_dir(const kiln__kdb *db) { return db->dir; }
kiln__kdb_mode kiln__kdb_get_mode(const kiln__kdb *db) { return db->mode; }
uint64_t kiln__kdb_max_bytes(const kiln__kdb *db) { return db->max_bytes; }

/* Refuse (lock held); warn says whether to print the reason. */
static void refuse_locked(kiln__kdb *db, int warn, const char *msg)
{
    if (db->state != 2) {
        snprintf(db->why, sizeof db->why, "%s", msg);
        db->state = 2;
    }
    if (warn && !(db->warned & W_REFUSED)) {
        db->warned |= W_REFUSED;
        fprintf(db->diag, "kiln: kernel_db: warning: %s; continuing without "
                          "persistence\n", db->why);
        fflush(db->diag);
    }
}

void kiln__kdb_refuse(kiln__kdb *db, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&db->mu);
    refuse_locked(db, 1, msg);
    pthread_mutex_unlock(&db->mu);
}

/* Why st (a directory when want_dir, else a regular file) may not be
** trusted, into buf; 0 when it may. */
static int insecure(const struct stat *st, int want_dir, const char *what,
                    char *buf, size_t cap)
{
    if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
        snprintf(buf, cap, "%s is not a %s", what,
                 want_dir ? "directory" : "regular file");
        return 1;
    }
    if (st->st_uid != geteuid() && st->st_uid != 0) {
        snprintf(buf, cap, "%s is owned by uid %u, not by this user (uid %u) "
                           "or root: its kernels could run another user's code",
                 what, (unsigned)st->st_uid, (unsigned)geteuid());
        return 1;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(buf, cap, "%s has mode %04o: writable by %s, so anyone "
                           "there could plant kernels",
                 what, (unsigned)(st->st_mode & 07777),
                 (st->st_mode & S_IWOTH) ? "others" : "its group");
        return 1;
    }
    return 0;
}

/* mkdir -p with mode 0700 for every missing component. */
static void make_dirs(kiln__kdb *db)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", db->dir);
    for (char *p = path + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            V(db)->mkdir(V(db)->arg, path, 0700);
            *p = c;
            if (c == '\0')
                break;
        }
    }
}

int kiln__kdb_ready(kiln__kdb *db)
{
    if (db == NULL)
        return 0;
    pthread_mutex_lock(&db->mu);
    if (db->state != 0) {
        int ok = db->state == 1;
        pthread_mutex_unlock(&db->mu);
        return ok;
    }
    char msg[700];
    if (db->cfg_error[0]) {
        refuse_locked(db, 1, db->cfg_error);
    } else if (db->mode == KILN__KDB_OFF) {
        refuse_locked(db, 0, "KILN_CACHE_MODE=off");
    } else {
        if (db->mode == KILN__KDB_RW)
            make_dirs(db);
        int fd = V(db)->open(V(db)->arg, db->dir,
                             O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        if (fd < 0) {
            snprintf(msg, sizeof msg, "cannot open the cache directory %.400s: %s",
                     db->dir, strerror(errno));
            refuse_locked(db, 1, msg);
        } else if (V(db)->fstat(V(db)->arg, fd, &st) != 0) {
            snprintf(msg, sizeof msg, "cannot stat the cache directory %.400s: %s",
                     db->dir, strerror(errno));
            V(db)->close(V(db)->arg, fd);
            refuse_locked(db, 1, msg);
        } else {
            char what[PATH_MAX + 32], why[PATH_MAX + 200];
            snprintf(what, sizeof what, "the cache directory %s", db->dir);
            if (insecure(&st, 1, what, why, sizeof why)) {
                V(db)->close(V(db)->arg, fd);
                refuse_locked(db, 1, why);
            } else {
                db->dirfd = fd;
                db->state = 1;
            }
        }
    }
    int ok = db->state == 1;
    pthread_mutex_unlock(&db->mu);
    return ok;
}

void kiln__kdb_count(kiln__kdb *db, kiln__kdb_result r, int stored)
{
    if (db == NULL)
        return;
    pthread_mutex_lock(&db->mu);
    switch (r) {
    case KILN__KDB_HIT: db->n.hits++; break;
    case KILN__KDB_MISS: db->n.misses += !stored; break;
    case KILN__KDB_CORRUPT: db->n.corrupt++; break;
    case KILN__KDB_REFUSED: db->n.refused++; break;
    }
    db->n.stores += stored != 0;
    pthread_mutex_unlock(&db->mu);
}

void kiln__kdb_counters(const kiln__kdb *db, kiln__kdb_counts *out)
{
    memset(out, 0, sizeof *out);
    if (db == NULL)
        return;
    pthread_mutex_lock((pthread_mutex_t *)&db->mu);
    *out = db->n;
    pthread_mutex_unlock((pthread_mutex_t *)&db->mu);
}

/* ------------------------------------------------------------- reading */

/* Read the whole of fd (st_size bytes) into a fresh buffer.  0 on
** success; -1 with errno for an I/O error; -2 when the file is shorter
** than st_size (it changed under us: treated as corrupt). */
static int read_all(kiln__kdb *db, int fd, size_t size, uint8_t **out)
{
    uint8_t *b = kiln__malloc(size ? size : 1);
    if (b == NULL) {
        errno = ENOMEM;
        return -1;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = V(db)->read(V(db)->arg, fd, b + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            kiln__free(b);
            errno = e;
            return -1;
        }
        if (r == 0) {
            kiln__free(b);
            return -2;
        }
        got += (size_t)r;
    }
    *out = b;
    return 0;
}

/* Parse the file `name` held in buf[n] and check that its key belongs to
** its name: NULL when it is a good entry (e filled), else the reason. */
static const char *check_entry(const uint8_t *buf, size_t n, const char *name,
                               kiln__kdb_entry *e)
{
    const char *bad = kiln__kdb_parse(buf, n, e);
    char own[KILN__KDB_NAME_LEN + 1];
    if (bad == NULL) {
        kiln__kdb_name(e->key, e->key_len, own);
        if (strcmp(own, name) != 0)
            bad = "its key does not belong to its file name";
    }
    return bad;
}

static void report_corrupt(kiln__kdb *db, const char *name, const char *why)
{
    fprintf(db->diag, "kiln: kernel_db: corrupt entry %s/%s (%s): ignored; "
                      "the kernel is compiled again and the entry replaced\n",
            db->dir, name, why);
    fflush(db->diag);
}

kiln__kdb_result kiln__kdb_load(kiln__kdb *db, const void *key, size_t key_len,
                                uint8_t **payload, size_t *n)
{
    *payload = NULL;
    *n = 0;
    if (!kiln__kdb_ready(db))
        return KILN__KDB_REFUSED;
    char name[KILN__KDB_NAME_LEN + 1];
    kiln__kdb_name(key, key_len, name);
    int fd = V(db)->openat(V(db)->arg, db->dirfd, name,
                           O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
    if (fd < 0) {
        if (errno == ENOENT)
            return KILN__KDB_MISS;
        if (errno == ELOOP) {
            kiln__kdb_refuse(db, "entry %s/%s is a symbolic link", db->dir, name);
            return KILN__KDB_REFUSED;
        }
        warn_once(db, W_READ, "cannot read %s/%s: %s (treated as a miss)",
                  db->dir, name, strerror(errno));
        return KILN__KDB_MISS;
    }
    kiln__kdb_result res = KILN__KDB_MISS;
    struct stat st;
    uint8_t *buf = NULL;
    char why[PATH_MAX + 200];
    if (V(db)->fstat(V(db)->arg, fd, &st) != 0) {
        warn_once(db, W_READ, "cannot stat %s/%s: %s (treated as a miss)",
                  db->dir, name, strerror(errno));
        goto done;
    }
    char what[PATH_MAX + 64];
    snprintf(what, sizeof what, "entry %s/%s", db->dir, name);
    if (insecure(&st, 0, what, why, sizeof why)) {
        kiln__kdb_refuse(db, "%s", why);
        res = KILN__KDB_REFUSED;
        goto done;
    }
    if ((uint64_t)st.st_size > KILN__KDB_MAX_ENTRY) {
        report_corrupt(db, name, "larger than any entry");
        res = KILN__KDB_CORRUPT;
        goto done;
    }
    int r = read_all(db, fd, (size_t)st.st_size, &buf);
    if (r == -1) {
        warn_once(db, W_READ, "cannot read %s/%s: %s (treated as a miss)",
                  db->dir, name, strerror(errno));
        goto done;
    }
    if (r == -2) {
        report_corrupt(db, name, "shorter than its size");
        res = KILN__KDB_CORRUPT;
        goto done;
    }
    kiln__kdb_entry e;
    const char *bad = check_entry(buf, (size_t)st.st_size, name, &e);
    if (bad != NULL) {
        report_corrupt(db, name, bad);
        res = KILN__KDB_CORRUPT;
        goto done;
    }
    if (e.key_len != key_len || memcmp(e.key, key, key_len) != 0)
        goto done; /* another key with the same name: a miss */
    uint8_t *p = kiln__malloc(e.payload_len ? e.payload_len : 1);
    if (p == NULL)
        goto done;
    memcpy(p, e.payload, e.payload_len);
    *payload = p;
    *n = e.payload_len;
    res = KILN__KDB_HIT;
    if (db->mode == KILN__KDB_RW)
        V(db)->futimens(V(db)->arg, fd); /* the recency mark; best effort */
done:
    kiln__free(buf);
    V(db)->close(V(db)->arg, fd);
    return res;
}

/* ------------------------------------------------------------ eviction */

typedef struct scan_ent {
    char name[KILN__KDB_NAME_LEN + 1];
    struct stat st;
} scan_ent;

typedef struct scan_acc {
    kiln__kdb *db;
    scan_ent *ents;
    size_t n, cap;
    uint64_t total;
    int failed;
} scan_acc;

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
           a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void private_name(kiln__kdb *db, const char *prefix, char *buf,
                         size_t cap)
{
    pthread_mutex_lock(&db->mu);
    unsigned long s = ++db->seq;
    pthread_mutex_unlock(&db->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t r = kiln__kdb_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
                       (uint64_t)(uintptr_t)buf ^ s);
    snprintf(buf, cap, "%s%ld.%lu.%016llx", prefix, (long)getpid(), s,
             (unsigned long long)r);
}

int kiln__kdb_remove_if(kiln__kdb *db, const char *name, const struct stat *seen)
{
    if (!kiln__kdb_ready(db))
        return 0;
    char trash[96];
    private_name(db, ".del.", trash, sizeof trash);
    if (V(db)->renameat(V(db)->arg, db->dirfd, name, trash) != 0)
        return 0; /* gone already (another evictor) */
    struct stat now;
    if (V(db)->fstatat(V(db)->arg, db->dirfd, trash, &now) == 0 &&
        same_file(&now, seen)) {
        V(db)->unlinkat(V(db)->arg, db->dirfd, trash);
        return 1;
    }
    /* replaced or used since the scan: put it back, never over a newer
    ** entry (link fails with EEXIST then, and the newer one stays) */
    V(db)->linkat(V(db)->arg, db->dirfd, trash, name);
    V(db)->unlinkat(V(db)->arg, db->dirfd, trash);
    return 0;
}

static int scan_one(void *arg, const char *name)
{
    scan_acc *a = arg;
    kiln__kdb *db = a->db;
    struct stat st;
    if (temp_name(name)) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (V(db)->fstatat(V(db)->arg, db->dirfd, name, &st) == 0 &&
            S_ISREG(st.st_mode) &&
            now.tv_sec - st.st_mtim.tv_sec > KILN__KDB_STALE_SECONDS)
            V(db)->unlinkat(V(db)->arg, db->dirfd, name); /* a dead writer's */
        return 0;
    }
    if (!entry_name(name) ||
        V(db)->fstatat(V(db)->arg, db->dirfd, name, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return 0;
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 64;
        scan_ent *ne = kiln__realloc(a->ents, nc * sizeof *ne);
        if (ne == NULL) {
            a->failed = 1;
            return 1;
        }
        a->ents = ne;
        a->cap = nc;
    }
    snprintf(a->ents[a->n].name, sizeof a->ents[a->n].name, "%s", name);
    a->ents[a->n++].st = st;
    a->total += (uint64_t)st.st_size;
    return 0;
}

static int by_mtime(const void *x, const void *y)
{
    const struct stat *a = &((const scan_ent *)x)->st;
    const struct stat *b = &((const scan_ent *)y)->st;
    if (a->st_mtim.tv_sec != b->st_mtim.tv_sec)
        return a->st_mtim.tv_sec < b->st_mtim.tv_sec ? -1 : 1;
    if (a->st_mtim.tv_nsec != b->st_mtim.tv_nsec)
        return a->st_mtim.tv_nsec < b->st_mtim.tv_nsec ? -1 : 1;
    return strcmp(((const scan_ent *)x)->name, ((const scan_ent *)y)->name);
}

/* Scan the directory (sweeping stale temporary files); with target !=
** UINT64_MAX evict oldest-first down to target.  Returns evictions. */
static uint64_t scan_evict(kiln__kdb *db, uint64_t target)
{
    scan_acc a;
    memset(&a, 0, sizeof a);
    a.db = db;
    if (V(db)->list(V(db)->arg, db->dirfd, scan_one, &a) != 0 || a.failed) {
        warn_once(db, W_EVICT, "cannot list %s: %s (no eviction)", db->dir,
                  a.failed ? "out of memory" : strerror(errno));
        kiln__free(a.ents);
        return 0;
    }
    uint64_t evicted = 0;
    if (a.total > target) {
        qsort(a.ents, a.n, sizeof *a.ents, by_mtime);
        for (size_t i = 0; i < a.n && a.total > target; i++)
            if (kiln__kdb_remove_if(db, a.ents[i].name, &a.ents[i].st)) {
                a.total -= (uint64_t)a.ents[i].st.st_size;
                evicted++;
            }
    }
    pthread_mutex_lock(&db->mu);
    db->approx = a.total;
    db->scanned = 1;
    db->stores_since_scan = 0;
    db->n.evictions += evicted;
    pthread_mutex_unlock(&db->mu);
    kiln__free(a.ents);
    return evicted;
}

uint64_t kiln__kdb_evict_to(kiln__kdb *db, uint64_t target)
{
    if (!kiln__kdb_ready(db) || db->mode != KILN__KDB_RW)
        return 0;
    return scan_evict(db, target);
}

/* After a store: rescan now and then (other processes store too) and evict
** down to 90% of the cap when over it.  One thread of a handle at a time. */
static void maybe_evict(kiln__kdb *db, uint64_t added)
{
    pthread_mutex_lock(&db->mu);
    db->approx += added;
    db->stores_since_scan++;
    int go = !db->evicting && (!db->scanned || db->stores_since_scan >= 64 ||
                               db->approx > db->max_bytes);
    if (go)
        db->evicting = 1;
    pthread_mutex_unlock(&db->mu);
    if (!go)
        return;
    scan_evict(db, UINT64_MAX);
    pthread_mutex_lock(&db->mu);
    int over = db->approx > db->max_bytes;
    pthread_mutex_unlock(&db->mu);
    if (over)
        scan_evict(db, db->max_bytes / 10 * 9);
    pthread_mutex_lock(&db->mu);
    db->evicting = 0;
    pthread_mutex_unlock(&db->mu);
}

/* ------------------------------------------------------------- writing */

/* Write buf[n] to a new temporary file and rename it to `name`.  0 on
** success; -1 with errno and *op naming the failed operation. */
static int write_entry(kiln__kdb *db, const char *name, const uint8_t *buf,
                       size_t n, const char **op)
{
    char tmp[96];
    private_name(db, ".tmp.", tmp, sizeof tmp);
    *op = "create a temporary file";
    int fd = V(db)->openat(V(db)->arg, db->dirfd, tmp,
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           0600);
    if (fd < 0)
        return -1;
    size_t done = 0;
    int rc = 0;
    while (done < n) {
        ssize_t w = V(db)->write(V(db)->arg, fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            *op = "write";
            rc = -1;
            break;
        }
        done += (size_t)w;
    }
    if (rc == 0 && V(db)->fsync(V(db)->arg, fd) != 0) {
        *op = "fsync";
        rc = -1;
    }
    int e = errno;
    if (V(db)->close(V(db)->arg, fd) != 0 && rc == 0) {
        *op = "close";
        e = errno;
        rc = -1;
    }
    if (rc == 0 && V(db)->renameat(V(db)->arg, db->dirfd, tmp, name) != 0) {
        *op = "rename";
        e = errno;
        rc = -1;
    }
    if (rc != 0)
        V(db)->unlinkat(V(db)->arg, db->dirfd, tmp);
    errno = e;
    return rc;
}

int kiln__kdb_store(kiln__kdb *db, const void *key, size_t key_len,
                    const void *payload, size_t n)
{
    if (!kiln__kdb_ready(db) || db->mode != KILN__KDB_RW)
        return 0;
    size_t size = 0;
    uint8_t *buf = kiln__kdb_encode(key, key_len, payload, n, &size);
    if (buf == NULL) {
        warn_once(db, W_WRITE, "cannot store a kernel in %s: out of memory or "
                               "larger than %llu bytes", db->dir,
                  (unsigned long long)KILN__KDB_MAX_ENTRY);
        return 0;
    }
    char name[KILN__KDB_NAME_LEN + 1];
    kiln__kdb_name(key, key_len, name);
    const char *op = "";
    int rc = write_entry(db, name, buf, size, &op);
    kiln__free(buf);
    if (rc != 0) {
        warn_once(db, W_WRITE, "cannot store a kernel in %s (%s: %s); kernels "
                               "are used without being stored",
                  db->dir, op, strerror(errno));
        return 0;
    }
    maybe_evict(db, size);
    return 1;
}

/* --------------------------------------------------------------- stats */

static const char *const stat_names[] = {"hits", "misses", "corrupt",
                                         "stores", "refused", "evictions"};
#define N_STATS 6

static uint64_t *stat_field(kiln__kdb_counts *c, int i)
{
    uint64_t *f[N_STATS] = {&c->hits, &c->misses, &c->corrupt,
                            &c->stores, &c->refused, &c->evictions};
    return f[i];
}

/* Read the stats file into *c (zeros when absent or unreadable). */
static void stats_load(kiln__kdb *db, kiln__kdb_counts *c)
{
    memset(c, 0, sizeof *c);
    int fd = V(db)->openat(V(db)->arg, db->dirfd, "stats",
                           O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
    if (fd < 0)
        return;
    struct stat st;
    char why[256], text[1024];
    uint8_t *b = NULL;
    if (V(db)->fstat(V(db)->arg, fd, &st) == 0 &&
        !insecure(&st, 0, "stats", why, sizeof why) &&
        st.st_size < (off_t)sizeof text &&
        read_all(db, fd, (size_t)st.st_size, &b) == 0) {
        memcpy(text, b, (size_t)st.st_size);
        text[st.st_size] = '\0';
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save))
            for (int i = 0; i < N_STATS; i++) {
                size_t l = strlen(stat_names[i]);
                if (strncmp(line, stat_names[i], l) == 0 && line[l] == ' ')
                    *stat_field(c, i) = strtoull(line + l + 1, NULL, 10);
            }
    }
    kiln__free(b);
    V(db)->close(V(db)->arg, fd);
}

int kiln__kdb_read_stats(kiln__kdb *db, kiln__kdb_counts *out)
{
    memset(out, 0, sizeof *out);
    if (!kiln__kdb_ready(db))
        return -1;
    stats_load(db, out);
    return 0;
}

/* Add this handle's counters to the stats file under a lock (skipped when
** the lock is busy: statistics, unlike entries, may be lost). */
static void stats_flush(kiln__kdb *db)
{
    kiln__kdb_counts d = db->n;
    uint64_t any = 0;
    for (int i = 0; i < N_STATS; i++)
        any |= *stat_field(&d, i);
    if (!any || db->state != 1 || db->mode != KILN__KDB_RW)
        return;
    int lk = V(db)->openat(V(db)->arg, db->dirfd, "stats.lock",
                           O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lk < 0)
        return;
    int locked = 0;
    for (int t = 0; t < 50 && !locked; t++) {
        locked = V(db)->flock(V(db)->arg, lk, LOCK_EX | LOCK_NB) == 0;
        if (!locked) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    if (locked) {
        kiln__kdb_counts c;
        stats_load(db, &c);
        char text[512];
        size_t len = (size_t)snprintf(text, sizeof text, "kiln-kdb-stats 1\n");
        for (int i = 0; i < N_STATS; i++)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s %llu\n",
                                    stat_names[i],
                                    (unsigned long long)(*stat_field(&c, i) +
                                                         *stat_field(&d, i)));
        const char *op;
        write_entry(db, "stats", (const uint8_t *)text, len, &op);
        V(db)->flock(V(db)->arg, lk, LOCK_UN);
    }
    V(db)->close(V(db)->arg, lk);
}

void kiln__kdb_destroy(kiln__kdb *db)
{
    if (db == NULL)
        return;
    stats_flush(db);
    if (db->dirfd >= 0)
        V(db)->close(V(db)->arg, db->dirfd);
    pthread_mutex_destroy(&db->mu);
    kiln__free(db);
}

/* ---------------------------------------------------------- maintenance */

typedef struct name_list {
    char **v;
    size_t n, cap;
    int failed;
} name_list;

static int collect_name(void *arg, const char *name)
{
    name_list *l = arg;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        char **nv = kiln__realloc(l->v, nc * sizeof *nv);
        if (nv == NULL) {
            l->failed = 1;
            return 1;
        }
        l->v = nv;
        l->cap = nc;
    }
    if ((l->v[l->n] = kiln__strdup(name)) == NULL) {
        l->failed = 1;
        return 1;
    }
    l->n++;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        kiln__free(l->v[i]);
    kiln__free(l->v);
}

static int list_names(kiln__kdb *db, name_list *l, char *err, size_t cap)
{
    memset(l, 0, sizeof *l);
    if (!kiln__kdb_ready(db)) {
        snprintf(err, cap, "%s", db->why);
        return -1;
    }
    if (V(db)->list(V(db)->arg, db->dirfd, collect_name, l) != 0 || l->failed) {
        snprintf(err, cap, "cannot list %s: %s", db->dir,
                 l->failed ? "out of memory" : strerror(errno));
        names_free(l);
        return -1;
    }
    if (l->n > 1)
        qsort(l->v, l->n, sizeof *l->v, cmp_name);
    return 0;
}

/* Read and check entry `name` (item filled: bad/why/key/payload). */
static void verify_entry(kiln__kdb *db, const char *name, kiln__kdb_item *it,
                         char *why, size_t wcap, char **keytext)
{
    int fd = V(db)->openat(V(db)->arg, db->dirfd, name,
                           O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
    struct stat st;
    uint8_t *buf = NULL;
    it->bad = 1;
    if (fd < 0) {
        snprintf(why, wcap, "cannot open: %s", strerror(errno));
        return;
    }
    if (V(db)->fstat(V(db)->arg, fd, &st) != 0) {
        snprintf(why, wcap, "cannot stat: %s", strerror(errno));
    } else if (insecure(&st, 0, "the entry", why, wcap)) {
        /* why says it */
    } else if ((uint64_t)st.st_size > KILN__KDB_MAX_ENTRY) {
        snprintf(why, wcap, "larger than any entry");
    } else {
        int r = read_all(db, fd, (size_t)st.st_size, &buf);
        kiln__kdb_entry e = {NULL, 0, NULL, 0};
        const char *bad = r == -1 ? strerror(errno)
                          : r == -2 ? "shorter than its size"
                                    : check_entry(buf, (size_t)st.st_size, name, &e);
        if (bad != NULL) {
            snprintf(why, wcap, "%s", bad);
        } else {
            it->bad = 0;
            why[0] = '\0';
            it->payload = e.payload_len;
            /* the text part of the key: everything before the IR bytes */
            size_t tl = 0;
            while (tl < e.key_len && e.key[tl] != '\0' &&
                   !(tl + 3 < e.key_len && memcmp(e.key + tl, "\nir ", 4) == 0))
                tl++;
            *keytext = kiln__strndup((const char *)e.key, tl);
        }
    }
    kiln__free(buf);
    V(db)->close(V(db)->arg, fd);
}

int kiln__kdb_scan(kiln__kdb *db, int verify, int fix,
                   void (*fn)(void *arg, const kiln__kdb_item *it), void *arg,
                   char *err, size_t cap)
{
    name_list l;
    if (list_names(db, &l, err, cap) != 0)
        return -1;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (size_t i = 0; i < l.n; i++) {
        const char *name = l.v[i];
        kiln__kdb_item it;
        memset(&it, 0, sizeof it);
        it.name = name;
        it.why = "";
        it.kind = entry_name(name)  ? KILN__KDB_ITEM_ENTRY
                  : temp_name(name) ? KILN__KDB_ITEM_TEMP
                                    : KILN__KDB_ITEM_OTHER;
        struct stat st;
        if (V(db)->fstatat(V(db)->arg, db->dirfd, name, &st) != 0)
            continue; /* removed meanwhile */
        it.size = (uint64_t)st.st_size;
        it.mtime = st.st_mtim;
        char why[512] = "";
        char *keytext = NULL;
        if (it.kind == KILN__KDB_ITEM_ENTRY) {
            verify_entry(db, name, &it, why, sizeof why, &keytext);
            it.why = why;
            it.key = keytext;
            if (!verify)
                it.bad = 0; /* list: read for the key only */
            if (verify && fix && it.bad)
                it.removed = kiln__kdb_remove_if(db, name, &st);
        } else if (it.kind == KILN__KDB_ITEM_TEMP && verify &&
                   now.tv_sec - st.st_mtim.tv_sec > KILN__KDB_STALE_SECONDS) {
            it.bad = 1;
            it.why = "stale temporary file of a writer that did not finish";
            if (fix)
                it.removed = V(db)->unlinkat(V(db)->arg, db->dirfd, name) == 0;
        }
        fn(arg, &it);
        kiln__free(keytext);
    }
    names_free(&l);
    return 0;
}

int kiln__kdb_clear(kiln__kdb *db, uint64_t *removed, char *err, size_t cap)
{
    *removed = 0;
    name_list l;
    if (list_names(db, &l, err, cap) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!entry_name(l.v[i]) && !temp_name(l.v[i]))
            continue;
        if (V(db)->unlinkat(V(db)->arg, db->dirfd, l.v[i]) == 0)
            (*removed)++;
        else if (errno != ENOENT && rc == 0) {
            snprintf(err, cap, "cannot remove %s/%s: %s", db->dir, l.v[i],
                     strerror(errno));
            rc = -1;
        }
    }
    names_free(&l);
    return rc;
}

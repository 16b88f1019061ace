/*
** outfile.c -- every file build/kiln writes goes through here (tool.h,
** "output files"): reports, `kiln run --out` arrays, benchmark JSON; and
** the one reader of whole input files (cli_read_file).
**
** A regular file is never written in place.  The bytes go to a temporary
** file created with O_EXCL in the destination's directory; commit flushes
** and fsyncs it, then rename(2) replaces the destination in one step.  So
** a reader, a crash or a second `kiln` writing the same path at the same
** time sees the complete old file or one complete new file, never a mix
** or a truncated one.  The temporary file lives in the same directory
** because rename is atomic only within one file system.
**
** cli_out_check runs the same steps up to creating (and removing) the
** temporary file, so a path that cannot be written is reported before a
** command spends minutes on work whose result it could not save.
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool/tool.h"

/* Free what *o holds (the temporary file itself is not touched). */
static void release(cli_out *o)
{
    free(o->target);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

void cli_out_abort(cli_out *o)
{
    if (o == NULL)
        return;
    if (o->fp != NULL)
        fclose(o->fp);
    if (o->tmp != NULL)
        unlink(o->tmp);
    release(o);
}

/* The directory part of `target` as shown in messages ("." for none). */
static void dir_of(const char *target, char *dir, size_t cap)
{
    const char *slash = strrchr(target, '/');
    if (slash == NULL)
        snprintf(dir, cap, ".");
    else if (slash == target)
        snprintf(dir, cap, "/");
    else
        snprintf(dir, cap, "%.*s", (int)(slash - target), target);
}

/* Create the temporary file for o->target; 0 or -1 with err. */
static int make_tmp(cli_out *o, const char *path, const struct stat *old,
                    char *err, size_t cap)
{
    char dir[PATH_MAX];
    struct stat ds;
    dir_of(o->target, dir, sizeof dir);
    if (stat(dir, &ds) != 0) {
        snprintf(err, cap, "%s: directory '%s' %s", path, dir,
                 errno == ENOENT ? "does not exist" : errno == ENOTDIR ?
                 "cannot exist (a prefix is not a directory)" : strerror(errno));
        return -1;
    }
    if (!S_ISDIR(ds.st_mode)) {
        snprintf(err, cap, "%s: '%s' is not a directory", path, dir);
        return -1;
    }
    const char *slash = strrchr(o->target, '/');
    const char *base = slash ? slash + 1 : o->target;
    int plen = slash ? (int)(slash - o->target + 1) : 0;
    int blen = (int)strlen(base);
    if (blen > 200) /* room for the suffix within NAME_MAX */
        blen = 200;
    size_t need = strlen(o->target) + 64;
    o->tmp = malloc(need);
    if (o->tmp == NULL) {
        snprintf(err, cap, "%s: out of memory", path);
        return -1;
    }
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(o->tmp, need, "%.*s.%.*s.%ld.%d.tmp", plen, o->target, blen,
                 base, (long)getpid(), attempt);
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        snprintf(err, cap, "%s: cannot create a file in '%s': %s", path, dir,
                 strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    if (old != NULL) /* replacing a file: keep its permission bits */
        (void)fchmod(fd, old->st_mode & 07777);
    o->fp = fdopen(fd, "w");
    if (o->fp == NULL) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        return -1;
    }
    return 0;
}

/* Open for writing; direct != NULL receives whether the path is written
** in place (a device or FIFO).  With probe set a FIFO is not opened (that
** would wait for a reader); only its permission is checked. */
static int out_open(cli_out *o, const char *path, int probe, char *err,
                    size_t cap)
{
    struct stat st;
    memset(o, 0, sizeof *o);
    if (path == NULL || path[0] == '\0') {
        snprintf(err, cap, "empty file name");
        return -1;
    }
    int exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT && errno != ENOTDIR) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (exists && S_ISDIR(st.st_mode)) {
        snprintf(err, cap, "%s: is a directory", path);
        return -1;
    }
    if (exists && !S_ISREG(st.st_mode)) { /* /dev/null, /dev/stdout, FIFO */
        if (probe && S_ISFIFO(st.st_mode)) {
            if (access(path, W_OK) != 0) {
                snprintf(err, cap, "%s: %s", path, strerror(errno));
                return -1;
            }
            return 0;
        }
        o->fp = fopen(path, "w");
        if (o->fp == NULL) {
            snprintf(err, cap, "%s: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    /* A regular file is replaced where it really lives: through a symbolic
    ** link, the file it names (the link stays). */
    o->target = exists ? realpath(path, NULL) : strdup(path);
    if (o->target == NULL) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (make_tmp(o, path, exists ? &st : NULL, err, cap) != 0) {
        release(o);
        return -1;
    }
    return 0;
}

int cli_out_open(cli_out *o, const char *path, char *err, size_t cap)
{
    return out_open(o, path, 0, err, cap);
}

int cli_out_commit(cli_out *o, const char *path, char *err, size_t cap)
{
    if (o->fp == NULL) {
        snprintf(err, cap, "%s: not open", path);
        release(o);
        return -1;
    }
    int e = 0;
    if (fflush(o->fp) != 0 || ferror(o->fp))
        e = errno ? errno : EIO;
    if (e == 0 && o->tmp != NULL && fsync(fileno(o->fp)) != 0)
        e = errno;
    if (fclose(o->fp) != 0 && e == 0)
        e = errno;
    o->fp = NULL;
    if (e == 0 && o->tmp != NULL && rename(o->tmp, o->target) != 0)
        e = errno;
    if (e != 0) {
        snprintf(err, cap, "%s: write failed: %s", path, strerror(e));
        cli_out_abort(o);
        return -1;
    }
    if (o->tmp != NULL) { /* make the rename itself durable (best effort) */
        char dir[PATH_MAX];
        dir_of(o->target, dir, sizeof dir);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    release(o);
    return 0;
}

int cli_out_check(const char *path, char *err, size_t cap)
{
    cli_out o;
    if (out_open(&o, path, 1, err, cap) != 0)
        return -1;
    cli_out_abort(&o);
    return 0;
}

int cli_check_outputs(const char *cmd, const char *const *names,
                      const char *const *paths, int n)
{
    for (int i = 0; i < n; i++) {
        if (paths[i] == NULL)
            continue;
        for (int j = 0; j < i; j++)
            if (paths[j] != NULL && strcmp(paths[i], paths[j]) == 0)
                return cli_usage(cmd, "%s and %s name the same file '%s'",
                                 names[j], names[i], paths[i]);
        char err[PATH_MAX + 256];
        if (cli_out_check(paths[i], err, sizeof err) != 0)
            return cli_usage(cmd, "%s %s", names[i], err);
    }
    return 0;
}

int cli_make_dir(const char *dir, char *err, size_t cap)
{
    if (dir == NULL || dir[0] == '\0') {
        snprintf(err, cap, "empty directory name");
        return -1;
    }
    char *p = strdup(dir);
    if (p == NULL) {
        snprintf(err, cap, "%s: out of memory", dir);
        return -1;
    }
    int rc = 0;
    for (char *s = p + 1;; s++) { /* each prefix ending before a '/' */
        int last = *s == '\0';
        if (!last && *s != '/')
            continue;
        char keep = *s;
        *s = '\0';
        struct stat st;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            snprintf(err, cap, "%s: cannot create '%s': %s", dir, p,
                     strerror(errno));
            rc = -1;
        } else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, cap, "%s: '%s' is not a directory", dir, p);
            rc = -1;
        }
        *s = keep;
        if (rc != 0 || last)
            break;
    }
    free(p);
    if (rc != 0)
        return -1;
    /* a probe file shows that outputs can be created there */
    size_t n = strlen(dir) + 16;
    char *probe = malloc(n);
    if (probe == NULL) {
        snprintf(err, cap, "%s: out of memory", dir);
        return -1;
    }
    snprintf(probe, n, "%s/kiln-probe", dir);
    char e2[PATH_MAX + 256];
    rc = cli_out_check(probe, e2, sizeof e2);
    free(probe);
    if (rc != 0) {
        const char *why = strstr(e2, ": ");
        snprintf(err, cap, "%s: %s", dir, why ? why + 2 : e2);
    }
    return rc;
}

char *cli_read_file(const char *path, size_t *len, char *err, size_t cap)
{
    int is_stdin = strcmp(path, "-") == 0;
    FILE *fp = is_stdin ? stdin : fopen(path, "rb");
    if (fp == NULL) {
        snprintf(err, cap, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t size = 4096, n = 0;
    char *buf = malloc(size);
    int e = buf == NULL ? ENOMEM : 0;
    while (e == 0) {
        if (n + 1 == size) {
            char *nb = size < ((size_t)-1) / 2 ? realloc(buf, size * 2) : NULL;
            if (nb == NULL) {
                e = ENOMEM;
                break;
            }
            buf = nb;
            size *= 2;
        }
        size_t got = fread(buf + n, 1, size - n - 1, fp);
        n += got;
        if (got == 0) {
            e = ferror(fp) ? (errno ? errno : EIO) : 0;
            break;
        }
    }
    if (!is_stdin)
        fclose(fp);
    if (e != 0) {
        snprintf(err, cap, "%s: %s", is_stdin ? "<stdin>" : path,
                 e == ENOMEM ? "out of memory" : strerror(e));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

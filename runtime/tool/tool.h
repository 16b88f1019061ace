/*
** tool.h -- what build/kiln's subcommands (runtime/cli/) and the
** conformance runner (conformance/) share: one argument parser (args.c),
** atomic output files and whole-file reads (outfile.c), UTF-8 and JSON text
** (args.c).  It depends on neither folder, so the runner is a library the
** CLI calls and never includes from runtime/cli/ (docs/runtime.md,
** "Source layout"; scripts/check_layers.sh checks it).
**
** Contracts every subcommand keeps (docs/runtime.md, "Command line"):
**   - Arguments go through cli_next (one parser): `--opt VALUE` and
**     `--opt=VALUE` both work, `--` ends the options, and an unknown or
**     malformed option is a usage error naming the option and `--help`.
**   - Output paths are checked with cli_out_check before any work starts;
**     every file is written through cli_out (a temporary file in the same
**     directory, fsync'ed, then renamed over the path), so a reader or a
**     concurrent run sees the old file or the new one, never a mix.
*/
#ifndef KILN_TOOL_H
#define KILN_TOOL_H

#include <stdio.h>

/* 1 when argv holds -h or --help before any "--". */
int kiln_cli_wants_help(int argc, char **argv);

/* ------------------------------------------------------------ arguments */

typedef enum cli_kind {
    CLI_FLAG,     /* --name; "--name=x" is an error */
    CLI_VALUE,    /* --name VALUE or --name=VALUE */
    CLI_OPTIONAL  /* --name, --name=VALUE, or --name VALUE when VALUE does
                  ** not start with '-' */
} cli_kind;

typedef struct cli_opt {
    const char *name; /* "--out"; the table ends with {NULL} */
    cli_kind kind;
} cli_opt;

typedef struct cli_args {
    const char *cmd;     /* "kiln run": the prefix of every message */
    const cli_opt *opts;
    int argc;
    char **argv;
    int i;               /* the next argument */
    int opts_done;       /* "--" was seen */
} cli_args;

#define CLI_DONE (-1)       /* no argument left */
#define CLI_POSITIONAL (-2) /* *value is an operand */
#define CLI_USAGE (-3)      /* usage error; the message is on stderr */

/* Parse argv[1..argc-1] of subcommand `cmd` against opts. */
void cli_args_init(cli_args *a, const char *cmd, const cli_opt *opts,
                   int argc, char **argv);
/* The next argument: the index of its option in opts (*value: its value,
** NULL for a flag or an optional value not given), CLI_POSITIONAL (*value:
** the operand; "-" is an operand), CLI_DONE, or CLI_USAGE after printing
** "CMD: unknown option '--x' (see 'CMD --help')" or "CMD: option '--x'
** needs a value ..." or "... takes no value ...". */
int cli_next(cli_args *a, const char **value);
/* Print "CMD: MESSAGE (see 'CMD --help')" on stderr and return 2. */
int cli_usage(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Parse a decimal integer in [min, max] given to option `opt`.  0 on
** success; otherwise prints "CMD: OPT needs an integer from MIN to MAX,
** not 'V'" and returns 2 (a usage error). */
int cli_long(const char *cmd, const char *opt, const char *v, long min,
             long max, long *out);

/* ---------------------------------------------------------- output files */

/* A file being written.  For a regular file (or a new one) the bytes go to
** a temporary file in the same directory ("DIR/.NAME.PID.N.tmp"), which
** cli_out_commit fsyncs and renames over the path; a symbolic link is
** followed, so the file it names is replaced and the link kept.  A path
** that names something else that can be written (a character device such
** as /dev/null or /dev/stdout, a FIFO) is written directly. */
typedef struct cli_out {
    FILE *fp;       /* write here */
    char *target;   /* the path renamed over (symbolic links resolved) */
    char *tmp;      /* the temporary file, or NULL when writing directly */
} cli_out;

/* Start writing `path`.  0 on success; on failure -1 with "PATH: reason"
** in err, and *o holds nothing to release. */
int cli_out_open(cli_out *o, const char *path, char *err, size_t cap);
/* Finish: flush, fsync, close, rename.  0 on success; on failure -1 with
** "PATH: reason" in err, the temporary file removed and the old file at
** the path untouched.  *o is released either way. */
int cli_out_commit(cli_out *o, const char *path, char *err, size_t cap);
/* Give up: close and remove the temporary file (NULL-safe, idempotent). */
void cli_out_abort(cli_out *o);
/* Whether `path` can be written by cli_out: it is not a directory, its
** directory exists, and a temporary file can be created there (one is
** created and removed).  0 when it can; -1 with "PATH: reason" in err. */
int cli_out_check(const char *path, char *err, size_t cap);
/* cli_out_check for each non-NULL path of an output option: on the first
** failure prints "CMD: OPTION PATH: reason" and returns 2; 0 when all can
** be written.  names[i] is the option of paths[i]. */
int cli_check_outputs(const char *cmd, const char *const *names,
                      const char *const *paths, int n);
/* Create directory `dir` and any missing parents (like mkdir -p), then
** check that a file can be written in it.  0 on success; -1 with
** "DIR: reason" in err. */
int cli_make_dir(const char *dir, char *err, size_t cap);

/* The whole of file `path` ("-": standard input), NUL-terminated, in a
** malloc'd buffer (*len bytes before the NUL).  NULL on failure, with
** "PATH: reason" in err; a read error never yields a truncated text. */
char *cli_read_file(const char *path, size_t *len, char *err, size_t cap);

/* --------------------------------------------------------------- formats */

/* Decode the UTF-8 sequence at s: *cp receives its code point, or U+FFFD
** for an invalid, overlong, surrogate or truncated sequence (then one byte
** is consumed).  Returns the number of bytes consumed; 0 at the NUL. */
size_t cli_utf8_next(const char *s, unsigned long *cp);
/* Write code point cp (at most U+10FFFF) as UTF-8. */
void cli_put_utf8(FILE *out, unsigned long cp);

/* `s` as a JSON string (quotes included): '"', '\\' and control
** characters escaped; invalid UTF-8 becomes U+FFFD. */
void cli_json_string(FILE *out, const char *s);

#endif

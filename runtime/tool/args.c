/*
** args.c -- the one argument parser of build/kiln's subcommands (tool.h),
** its integer parsing, the UTF-8 decoder and the JSON string writer the
** subcommands share.
**
** Syntax (docs/runtime.md, "Command line"): options and operands may be
** mixed; `--name VALUE` and `--name=VALUE` are the same; `--` ends the
** options; a lone `-` is an operand.  Names are matched whole (no
** abbreviations), so a new option can never change what an old command
** line means.
*/
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/tool.h"

int kiln_cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

void cli_args_init(cli_args *a, const char *cmd, const cli_opt *opts,
                   int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->opts = opts;
    a->argc = argc;
    a->argv = argv;
    a->i = 1;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see '%s --help')\n", cmd);
    return 2;
}

int cli_next(cli_args *a, const char **value)
{
    *value = NULL;
    if (a->i >= a->argc)
        return CLI_DONE;
    const char *arg = a->argv[a->i++];
    if (!a->opts_done && strcmp(arg, "--") == 0) {
        a->opts_done = 1;
        return cli_next(a, value);
    }
    if (a->opts_done || arg[0] != '-' || arg[1] == '\0') {
        *value = arg;
        return CLI_POSITIONAL;
    }
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    for (int k = 0; a->opts[k].name != NULL; k++) {
        const cli_opt *o = &a->opts[k];
        if (strlen(o->name) != n || strncmp(o->name, arg, n) != 0)
            continue;
        if (eq != NULL) {
            if (o->kind == CLI_FLAG) {
                cli_usage(a->cmd, "option '%s' takes no value (got '%s')",
                          o->name, arg);
                return CLI_USAGE;
            }
            *value = eq + 1;
        } else if (o->kind == CLI_VALUE) {
            if (a->i >= a->argc) {
                cli_usage(a->cmd, "option '%s' needs a value", o->name);
                return CLI_USAGE;
            }
            *value = a->argv[a->i++];
        } else if (o->kind == CLI_OPTIONAL && a->i < a->argc &&
                   a->argv[a->i][0] != '-') {
            *value = a->argv[a->i++];
        }
        return k;
    }
    cli_usage(a->cmd, "unknown option '%.*s'", (int)n, arg);
    return CLI_USAGE;
}

int cli_long(const char *cmd, const char *opt, const char *v, long min,
             long max, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    int lead_ok = (v[0] >= '0' && v[0] <= '9') || (v[0] == '-' && min < 0);
    if (!lead_ok || errno != 0 || *end != '\0' || x < min || x > max) {
        fprintf(stderr, "%s: %s needs an integer from %ld to %ld, not '%s' "
                        "(see '%s --help')\n", cmd, opt, min, max, v, cmd);
        return 2;
    }
    *out = x;
    return 0;
}

/* --------------------------------------------------------------- UTF-8 */

size_t cli_utf8_next(const char *str, unsigned long *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    if (c == 0) {
        *cp = 0;
        return 0;
    }
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    unsigned long v, min;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, v = c & 0x1fu, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, v = c & 0x0fu, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, v = c & 0x07u, min = 0x10000;
    else
        goto bad; /* continuation byte, 0xc0/0xc1, 0xf5.. */
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0u) != 0x80u) /* also stops at the NUL */
            goto bad;
        v = (v << 6) | (s[k] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        goto bad;
    *cp = v;
    return len;
bad:
    *cp = 0xfffd;
    return 1;
}

void cli_put_utf8(FILE *out, unsigned long cp)
{
    if (cp < 0x80) {
        fputc((int)cp, out);
    } else if (cp < 0x800) {
        fputc((int)(0xc0 | (cp >> 6)), out);
        fputc((int)(0x80 | (cp & 0x3f)), out);
    } else if (cp < 0x10000) {
        fputc((int)(0xe0 | (cp >> 12)), out);
        fputc((int)(0x80 | ((cp >> 6) & 0x3f)), out);
        fputc((int)(0x80 | (cp & 0x3f)), out);
    } else {
        fputc((int)(0xf0 | (cp >> 18)), out);
        fputc((int)(0x80 | ((cp >> 12) & 0x3f)), out);
        fputc((int)(0x80 | ((cp >> 6) & 0x3f)), out);
        fputc((int)(0x80 | (cp & 0x3f)), out);
    }
}

void cli_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    unsigned long cp;
    size_t n;
    for (; s != NULL && (n = cli_utf8_next(s, &cp)) > 0; s += n) {
        if (cp == '"' || cp == '\\')
            fprintf(out, "\\%c", (int)cp);
        else if (cp < 0x20 || cp == 0x7f)
            fprintf(out, "\\u%04lx", cp);
        else
            cli_put_utf8(out, cp);
    }
    fputc('"', out);
}

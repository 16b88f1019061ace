/*
** fuzz_options.c -- libFuzzer target for the option parser (`make fuzz`).
**
** The input is split at '\n' into segments: segments 0, 1, 2 are the
** KILN_ENABLE, KILN_DISABLE and KILN_DUMP strings; every further segment is
** one execute element, alternately for the enable and the disable list.
** Besides "no crash, no leak, no UB" it checks the parser's contract:
**   - a failed parse leaves its output untouched and reports an option
**     status, the right source, an offset inside the string and a token
**     that is the text found at that offset;
**   - canonical text re-parses to the same canonical text (whole set and
**     each level), and the hash is FNV-1a of the canonical text;
**   - an execute element behaves exactly like the same text parsed as a
**     one-item environment string (same result or same first error).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_SEGS 64
#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_options: check failed: %s (line %d)\n", #c,  \
                    __LINE__);                                                 \
            abort();                                                           \
        }                                                                      \
    } while (0)

static const char *const env_src[3] = {"KILN_ENABLE", "KILN_DISABLE",
                                       "KILN_DUMP"};

static int is_option_error(kiln_status s)
{
    return s == KILN_ERR_OPTION_SYNTAX || s == KILN_ERR_OPTION_UNKNOWN ||
           s == KILN_ERR_OPTION_ARGUMENT || s == KILN_ERR_OPTION_ELEMENT;
}

/* The last error must point into `s` and carry the text found there. */
static void check_error(kiln_status st, const char *s, const char *source)
{
    kiln_error_info ei = {sizeof ei, 0, 0, 0, 0, 0};
    CHECK(kiln_last_error_info(&ei) == KILN_OK);
    CHECK(ei.status == st);
    CHECK(strcmp(ei.source, source) == 0);
    CHECK(strstr(ei.message, source) != NULL);
    size_t n = strlen(s), tl = strlen(ei.token);
    CHECK(ei.offset >= 0 && (size_t)ei.offset <= n);
    if (tl < 255) /* not truncated by the error record */
        CHECK(memcmp(s + ei.offset, ei.token, tl) == 0 &&
              (size_t)ei.offset + tl <= n);
}

static void canon(const kiln_options *o, kiln_level l, char *buf, size_t cap)
{
    size_t len = 0;
    CHECK(kiln_options_canonical(o, l, buf, cap, &len) == KILN_OK);
    CHECK(strlen(buf) == len);
    uint64_t h = 0;
    CHECK(kiln_options_hash(o, l, &h) == KILN_OK);
    CHECK(h == kiln__fnv1a(buf, len, KILN_FNV_SEED));
}

/* Split canonical text "enable=..;disable=..;dump=.." into env strings. */
static kiln_options *reparse(const char *text)
{
    char parts[3][1024];
    const char *env[3] = {NULL, NULL, NULL};
    const char *p = text;
    while (*p) {
        const char *semi = strchr(p, ';');
        size_t n = semi ? (size_t)(semi - p) : strlen(p);
        int set = strncmp(p, "enable=", 7) == 0    ? 0
                  : strncmp(p, "disable=", 8) == 0 ? 1
                                                   : 2;
        CHECK(set != 2 || strncmp(p, "dump=", 5) == 0);
        size_t skip = set == 0 ? 7 : set == 1 ? 8 : 5;
        CHECK(env[set] == NULL && n > skip && n - skip < sizeof parts[0]);
        memcpy(parts[set], p + skip, n - skip);
        parts[set][n - skip] = '\0';
        env[set] = parts[set];
        p += n;
        if (*p == ';')
            p++;
    }
    kiln_options *o = NULL;
    CHECK(kiln_options_from_env(env[0], env[1], env[2], &o) == KILN_OK);
    return o;
}

static void check_round_trip(const kiln_options *o)
{
    static const kiln_level lv[4] = {KILN_LEVEL_ALL, KILN_LEVEL_PLAN,
                                     KILN_LEVEL_KERNEL, KILN_LEVEL_NONE};
    char all[1024], a[1024], b[1024];
    canon(o, KILN_LEVEL_ALL, all, sizeof all);
    kiln_options *r = reparse(all);
    for (int i = 0; i < 4; i++) {
        canon(o, lv[i], a, sizeof a);
        canon(r, lv[i], b, sizeof b);
        CHECK(strcmp(a, b) == 0);
        kiln_options *r2 = reparse(a); /* a level's text is itself valid */
        char c[1024];
        canon(r2, lv[i], c, sizeof c);
        CHECK(strcmp(a, c) == 0);
        kiln_options_destroy(r2);
    }
    char *json = NULL;
    CHECK(kiln_options_json(o, &json) == KILN_OK);
    CHECK(json[0] == '{' && json[strlen(json) - 1] == '}');
    CHECK(strstr(json, all) != NULL);
    kiln_free(json);
    kiln_kernel_options ko;
    char kb[1024];
    CHECK(kiln__kernel_options(o, &ko, kb, sizeof kb) == KILN_OK);
    canon(o, KILN_LEVEL_KERNEL, a, sizeof a);
    CHECK(strcmp(ko.canonical, a) == 0);
    kiln_options_destroy(r);
}

/* An element must act like the same text as a one-variable env string. */
static void check_element(kiln_options *o, kiln_opt_set set, const char *e,
                          size_t index)
{
    char src[64];
    snprintf(src, sizeof src, "execute %s[%zu]",
             set == KILN_SET_ENABLE ? "enable" : "disable", index);
    struct kiln_options before = *o;
    kiln_status st = kiln_options_apply(o, set, e, index);
    kiln_error_info ei = {sizeof ei, 0, 0, 0, 0, 0};
    long off = -1;
    if (st != KILN_OK) {
        CHECK(is_option_error(st));
        CHECK(memcmp(&before, o, sizeof before) == 0);
        check_error(st, e, src);
        kiln_last_error_info(&ei);
        off = ei.offset;
    }
    /* the same text as an env string, on an empty set */
    kiln_options *env = NULL;
    kiln_status es = kiln_options_from_env(set == KILN_SET_ENABLE ? e : NULL,
                                           set == KILN_SET_DISABLE ? e : NULL,
                                           NULL, &env);
    if (st == KILN_OK) {
        CHECK(es == KILN_OK);
        kiln_options *one = NULL;
        CHECK(kiln_options_from_env(NULL, NULL, NULL, &one) == KILN_OK);
        CHECK(kiln_options_apply(one, set, e, 0) == KILN_OK);
        char a[1024], b[1024];
        canon(one, KILN_LEVEL_ALL, a, sizeof a);
        canon(env, KILN_LEVEL_ALL, b, sizeof b);
        CHECK(strcmp(a, b) == 0);
        kiln_options_destroy(one);
    } else if (st == KILN_ERR_OPTION_ELEMENT) {
        /* "" is a valid (empty) env string; "a,b": the first item is fine */
        if (es != KILN_OK) { /* a later item of the env string failed */
            kiln_last_error_info(&ei);
            CHECK(ei.offset > off);
        }
    } else {
        CHECK(es == st);
        kiln_last_error_info(&ei);
        CHECK(ei.offset == off);
    }
    kiln_options_destroy(env);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *segs[MAX_SEGS];
    int n = 0;
    char *p = buf;
    while (n < MAX_SEGS) {
        segs[n++] = p;
        char *nl = memchr(p, '\n', (size_t)(buf + size - p));
        if (nl == NULL)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    /* NUL bytes inside the input simply end a segment early (C strings). */
    const char *env[3] = {n > 0 ? segs[0] : NULL, n > 1 ? segs[1] : NULL,
                          n > 2 ? segs[2] : NULL};
    kiln_options *sentinel = (kiln_options *)(uintptr_t)0x1;
    kiln_options *o = sentinel;
    kiln_status st = kiln_options_from_env(env[0], env[1], env[2], &o);
    if (st != KILN_OK) {
        CHECK(is_option_error(st) && st != KILN_ERR_OPTION_ELEMENT);
        CHECK(o == sentinel);
        /* the first failing variable is reported, alone it fails alike */
        int bad = -1;
        for (int i = 0; i < 3 && bad < 0; i++) {
            kiln_options *t = NULL;
            const char *one[3] = {NULL, NULL, NULL};
            one[i] = env[i];
            if (kiln_options_from_env(one[0], one[1], one[2], &t) != KILN_OK)
                bad = i;
            kiln_options_destroy(t);
        }
        CHECK(bad >= 0);
        CHECK(kiln_options_from_env(env[0], env[1], env[2], &o) == st);
        check_error(st, env[bad], env_src[bad]);
        /* fall back to an empty snapshot so the elements still run */
        CHECK(kiln_options_from_env(NULL, NULL, NULL, &o) == KILN_OK);
    } else {
        check_round_trip(o);
    }
    size_t counts[2] = {0, 0};
    for (int i = 3; i < n; i++) {
        kiln_opt_set set = (i % 2) ? KILN_SET_ENABLE : KILN_SET_DISABLE;
        check_element(o, set, segs[i], counts[set]++);
    }
    check_round_trip(o);
    kiln_options_destroy(o);
    free(buf);
    return 0;
}

/*
** test_options.c -- the option system (runtime/options.c) and `kiln options`.
**
** Expected values are written out by hand from docs/options.md (or computed
** by the small independent model in this file), never by the code under
** test.  Suites: options_suite (grammar, errors, precedence, canonical text,
** levels, hash, JSON, faults), options_cli_suite (build/kiln options, run as
** a child process with a controlled environment; needs KILN_BIN) and
** threads_options_suite (also run under ThreadSanitizer).
*/
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#define ENABLE_NAMES                                                           \
    "fast_math, fuse_matmul, kernel_db, kernel_debug, kernel_lineinfo, "       \
    "kernel_profile, warn_register_spill"
#define DISABLE_NAMES                                                          \
    "compile_to_sass, expr_simplify, fallback, fma, kernel_reuse, "            \
    "matmul_expr_eval, nvrtc_caching, parallel_compile"
#define DUMP_NAMES "cache, cuda_kernel, fusion_ir, launch_params, options"
#define VOCAB "cse, fold, identity, index, strength"

static const char *const set_word[3] = {"enable", "disable", "dump"};
static const char *const env_word[3] = {"KILN_ENABLE", "KILN_DISABLE",
                                        "KILN_DUMP"};
static const char *const set_valid[3] = {ENABLE_NAMES, DISABLE_NAMES,
                                         DUMP_NAMES};

/* Independent FNV-1a 64 (the spec: offset basis 0xcbf29ce484222325,
** prime 0x100000001b3). */
static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static kiln_options *env3(const char *en, const char *dis, const char *dump)
{
    kiln_options *o = NULL;
    kiln_status st = kiln_options_from_env(en, dis, dump, &o);
    ck_assert_msg(st == KILN_OK, "env (%s|%s|%s): %s", en ? en : "-",
                  dis ? dis : "-", dump ? dump : "-", kiln_last_error());
    return o;
}

static void canon_is(const kiln_options *o, kiln_level l, const char *want)
{
    char buf[1024];
    size_t len = 99999;
    ck_assert_int_eq(kiln_options_canonical(o, l, buf, sizeof buf, &len),
                     KILN_OK);
    ck_assert_str_eq(buf, want);
    ck_assert_uint_eq(len, strlen(want));
    uint64_t h = 0;
    ck_assert_int_eq(kiln_options_hash(o, l, &h), KILN_OK);
    ck_assert_uint_eq(h, fnv(want));
}

/* The last error must be exactly (status, source, offset, token), and its
** message must name all of them and the valid names of the set. */
static void error_is(kiln_status want, const char *source, long off,
                     const char *token, int set)
{
    kiln_error_info ei = {sizeof ei, 0, 0, 0, 0, 0};
    ck_assert_int_eq(kiln_last_error_info(&ei), KILN_OK);
    ck_assert_int_eq(ei.status, want);
    ck_assert_str_eq(ei.source, source);
    ck_assert_int_eq(ei.offset, off);
    ck_assert_str_eq(ei.token, token);
    ck_assert_str_eq(ei.message, kiln_last_error());
    char frag[512];
    snprintf(frag, sizeof frag, "%s: ", source);
    ck_assert_msg(strncmp(ei.message, frag, strlen(frag)) == 0,
                  "message does not start with the source: %s", ei.message);
    snprintf(frag, sizeof frag, "at byte %ld: ", off);
    ck_assert_msg(strstr(ei.message, frag) != NULL, "no offset: %s",
                  ei.message);
    int printable = 1;
    for (const char *p = token; *p; p++)
        if (*p < 0x20 || *p >= 0x7f || *p == '\'' || *p == '\\')
            printable = 0;
    if (printable && strlen(token) < 100) {
        snprintf(frag, sizeof frag, "'%s'", token);
        ck_assert_msg(strstr(ei.message, frag) != NULL, "no token: %s",
                      ei.message);
    }
    snprintf(frag, sizeof frag, "valid %s options: %s", set_word[set],
             set_valid[set]);
    ck_assert_msg(strstr(ei.message, frag) != NULL, "no valid names: %s",
                  ei.message);
}

/* ---------------------------------------------------------- catalogue */

static const struct {
    const char *name;
    kiln_opt_set set;
    kiln_arg_shape arg;
    kiln_level level;
    int implemented;
} expected_rows[] = {
    {"fast_math", KILN_SET_ENABLE, KILN_ARG_NONE, KILN_LEVEL_KERNEL, 1},
    {"fuse_matmul", KILN_SET_ENABLE, KILN_ARG_NONE, KILN_LEVEL_PLAN, 1},
    {"kernel_db", KILN_SET_ENABLE, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
    {"kernel_debug", KILN_SET_ENABLE, KILN_ARG_NONE, KILN_LEVEL_KERNEL, 1},
    {"kernel_lineinfo", KILN_SET_ENABLE, KILN_ARG_NONE, KILN_LEVEL_KERNEL, 1},
    {"kernel_profile", KILN_SET_ENABLE, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
    {"warn_register_spill", KILN_SET_ENABLE, KILN_ARG_INT, KILN_LEVEL_NONE, 1},
    {"compile_to_sass", KILN_SET_DISABLE, KILN_ARG_NONE, KILN_LEVEL_KERNEL, 1},
    {"expr_simplify", KILN_SET_DISABLE, KILN_ARG_NAMES, KILN_LEVEL_KERNEL, 1},
    {"fallback", KILN_SET_DISABLE, KILN_ARG_NONE, KILN_LEVEL_PLAN, 1},
    {"fma", KILN_SET_DISABLE, KILN_ARG_NONE, KILN_LEVEL_KERNEL, 1},
    {"kernel_reuse", KILN_SET_DISABLE, KILN_ARG_NONE, KILN_LEVEL_PLAN, 1},
    {"matmul_expr_eval", KILN_SET_DISABLE, KILN_ARG_NONE, KILN_LEVEL_PLAN, 1},
    {"nvrtc_caching", KILN_SET_DISABLE, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
    {"parallel_compile", KILN_SET_DISABLE, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
    {"cache", KILN_SET_DUMP, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
    {"cuda_kernel", KILN_SET_DUMP, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
    {"fusion_ir", KILN_SET_DUMP, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
    {"launch_params", KILN_SET_DUMP, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
    {"options", KILN_SET_DUMP, KILN_ARG_NONE, KILN_LEVEL_NONE, 1},
};
#define N_ROWS (sizeof expected_rows / sizeof expected_rows[0])

START_TEST(catalogue_holds_every_design_option)
{
    size_t n = 0;
    const kiln_option_desc *c = kiln_option_catalogue(&n);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(n, N_ROWS);
    ck_assert_ptr_eq(kiln_option_catalogue(NULL), c);
    for (size_t i = 0; i < N_ROWS; i++) {
        size_t j = 0;
        while (j < n && !(strcmp(c[j].name, expected_rows[i].name) == 0 &&
                          c[j].set == expected_rows[i].set))
            j++;
        ck_assert_msg(j < n, "missing %s", expected_rows[i].name);
        ck_assert_int_eq(c[j].arg, expected_rows[i].arg);
        ck_assert_int_eq(c[j].level, expected_rows[i].level);
        ck_assert_int_eq(c[j].implemented, expected_rows[i].implemented);
        ck_assert(c[j].description != NULL && strlen(c[j].description) > 10);
        ck_assert_msg(strpbrk(c[j].name, ",()") == NULL, "%s", c[j].name);
        if (c[j].arg == KILN_ARG_NAMES)
            ck_assert_ptr_nonnull(c[j].vocabulary);
        else
            ck_assert_ptr_null(c[j].vocabulary);
        if (c[j].arg == KILN_ARG_INT)
            ck_assert_uint_eq(c[j].int_default, 0);
    }
    /* (set, name) unique */
    for (size_t a = 0; a < n; a++)
        for (size_t b = a + 1; b < n; b++)
            ck_assert(!(c[a].set == c[b].set &&
                        strcmp(c[a].name, c[b].name) == 0));
}
END_TEST

START_TEST(catalogue_vocabulary_sorted)
{
    static const char *const want[] = {"cse", "fold", "identity", "index",
                                       "strength"};
    size_t i = 0;
    for (; kiln__simplify_passes[i] != NULL; i++) {
        ck_assert_uint_lt(i, 5);
        ck_assert_str_eq(kiln__simplify_passes[i], want[i]);
        if (i > 0)
            ck_assert_int_lt(strcmp(kiln__simplify_passes[i - 1],
                                    kiln__simplify_passes[i]), 0);
    }
    ck_assert_uint_eq(i, 5);
    size_t n;
    const kiln_option_desc *c = kiln_option_catalogue(&n);
    for (size_t j = 0; j < n; j++)
        if (c[j].arg == KILN_ARG_NAMES)
            ck_assert_ptr_eq(c[j].vocabulary, kiln__simplify_passes);
}
END_TEST

/* ------------------------------------------------------ valid strings */

static const struct {
    int set;
    const char *in;
    const char *canonical;
} valid_env[] = {
    {0, "", ""},
    {0, "fast_math", "enable=fast_math"},
    {0, "fast_math,", "enable=fast_math"},
    {0, "kernel_lineinfo,fast_math", "enable=fast_math,kernel_lineinfo"},
    {0, "fast_math,fast_math", "enable=fast_math"},
    {0, "warn_register_spill", "enable=warn_register_spill(0)"},
    {0, "warn_register_spill(064)", "enable=warn_register_spill(64)"},
    {0, "warn_register_spill(0)", "enable=warn_register_spill(0)"},
    {0, "warn_register_spill(000)", "enable=warn_register_spill(0)"},
    {0, "warn_register_spill(00000000000000000000000000000007)",
     "enable=warn_register_spill(7)"},
    {0, "warn_register_spill(2147483647)",
     "enable=warn_register_spill(2147483647)"},
    {0, "warn_register_spill(5),warn_register_spill(7)",
     "enable=warn_register_spill(7)"},
    {0, "warn_register_spill(5),warn_register_spill",
     "enable=warn_register_spill(0)"},
    {0, "warn_register_spill(1),", "enable=warn_register_spill(1)"},
    {0, "warn_register_spill(3),fast_math",
     "enable=fast_math,warn_register_spill(3)"},
    {0, "kernel_profile,kernel_db,kernel_debug,fuse_matmul",
     "enable=fuse_matmul,kernel_db,kernel_debug,kernel_profile"},
    {1, "expr_simplify", "disable=expr_simplify"},
    {1, "expr_simplify(fold,cse,fold)", "disable=expr_simplify(cse,fold)"},
    {1, "expr_simplify(strength,index,identity,fold,cse)",
     "disable=expr_simplify(cse,fold,identity,index,strength)"},
    {1, "expr_simplify(cse),expr_simplify", "disable=expr_simplify"},
    {1, "expr_simplify,expr_simplify(index)", "disable=expr_simplify(index)"},
    {1, "expr_simplify(cse),expr_simplify(fold)", "disable=expr_simplify(fold)"},
    {1, "fma,fallback,compile_to_sass,",
     "disable=compile_to_sass,fallback,fma"},
    {1, "parallel_compile,nvrtc_caching,matmul_expr_eval,kernel_reuse",
     "disable=kernel_reuse,matmul_expr_eval,nvrtc_caching,parallel_compile"},
    {2, "options,cache", "dump=cache,options"},
    {2, "launch_params,fusion_ir,cuda_kernel",
     "dump=cuda_kernel,fusion_ir,launch_params"},
};

START_TEST(env_valid)
{
    const char *e[3] = {NULL, NULL, NULL};
    e[valid_env[_i].set] = valid_env[_i].in;
    kiln_options *o = env3(e[0], e[1], e[2]);
    canon_is(o, KILN_LEVEL_ALL, valid_env[_i].canonical);
    kiln_options_destroy(o);
    /* the same text as one execute element, when it is a single item */
    if (valid_env[_i].set != 2 && strchr(valid_env[_i].in, ',') == NULL &&
        valid_env[_i].in[0] != '\0') {
        o = env3(NULL, NULL, NULL);
        ck_assert_int_eq(kiln_options_apply(o, (kiln_opt_set)valid_env[_i].set,
                                            valid_env[_i].in, 0),
                         KILN_OK);
        canon_is(o, KILN_LEVEL_ALL, valid_env[_i].canonical);
        kiln_options_destroy(o);
    }
}
END_TEST

START_TEST(env_all_three_sets)
{
    kiln_options *o = env3("kernel_lineinfo,fast_math",
                           "expr_simplify(fold,cse,fold)", "options");
    canon_is(o, KILN_LEVEL_ALL,
             "enable=fast_math,kernel_lineinfo;disable=expr_simplify(cse,fold)"
             ";dump=options");
    kiln_options_destroy(o);
    o = env3(NULL, "fma", "cache");
    canon_is(o, KILN_LEVEL_ALL, "disable=fma;dump=cache");
    kiln_options_destroy(o);
    o = env3("", "", "");
    canon_is(o, KILN_LEVEL_ALL, "");
    kiln_options_destroy(o);
}
END_TEST

/* ------------------------------------------------------------ errors */

#define SYN KILN_ERR_OPTION_SYNTAX
#define UNK KILN_ERR_OPTION_UNKNOWN
#define ARG KILN_ERR_OPTION_ARGUMENT
#define ELE KILN_ERR_OPTION_ELEMENT

static const struct {
    int set;
    const char *in;
    kiln_status st;
    long off;
    const char *tok;
} bad_env[] = {
    /* whitespace is never trimmed */
    {0, "fast_math, kernel_debug", UNK, 10, " kernel_debug"},
    {0, " fast_math", UNK, 0, " fast_math"},
    {0, "fast_math ", UNK, 0, "fast_math "},
    /* empty tokens */
    {0, ",fast_math", SYN, 0, ","},
    {0, "fast_math,,kernel_debug", SYN, 10, ","},
    {0, ",", SYN, 0, ","},
    {0, ",,", SYN, 0, ","},
    {0, "fast_math,,", SYN, 10, ","},
    {2, "cache,,options", SYN, 6, ","},
    /* case-sensitive names, separate namespaces */
    {0, "Fast_math", UNK, 0, "Fast_math"},
    {0, "FAST_MATH", UNK, 0, "FAST_MATH"},
    {1, "fast_math", UNK, 0, "fast_math"},
    {2, "fma", UNK, 0, "fma"},
    {0, "fma", UNK, 0, "fma"},
    {0, "fast_math,bogus", UNK, 10, "bogus"},
    {0, "bogus(1", UNK, 0, "bogus"},
    {0, "bogus)", UNK, 0, "bogus"},
    {0, "fast\xc3\xa4math", UNK, 0, "fast\xc3\xa4math"},
    {0, "fast_math\x01", UNK, 0, "fast_math\x01"},
    /* parentheses where a name belongs, or right after a name */
    {0, ")", SYN, 0, ")"},
    {0, "(", SYN, 0, "("},
    {0, "()", SYN, 0, "("},
    {0, "(fast_math)", SYN, 0, "("},
    {0, "fast_math,)", SYN, 10, ")"},
    {0, "fast_math)", SYN, 9, ")"},
    {0, "fast_math)kernel_debug", SYN, 9, ")"},
    /* unclosed and nested lists */
    {0, "warn_register_spill(", SYN, 19, "("},
    {0, "warn_register_spill(64", SYN, 19, "("},
    {0, "warn_register_spill(x", SYN, 19, "("},
    {0, "warn_register_spill(1,2", SYN, 19, "("},
    {0, "warn_register_spill(6(4))", SYN, 21, "("},
    {0, "warn_register_spill((", SYN, 20, "("},     /* tie: syntax wins */
    {0, "warn_register_spill((5))", SYN, 20, "("},
    {0, "warn_register_spill(5,(", SYN, 22, "("},   /* tie: syntax wins */
    {0, "warn_register_spill(x(", ARG, 20, "x"},    /* leftmost wins */
    {1, "expr_simplify(cse(fold))", SYN, 17, "("},
    {1, "expr_simplify(cse,(fold))", SYN, 18, "("},
    {1, "expr_simplify(bogus(", ARG, 14, "bogus"},
    /* after ")" only "," or the end */
    {0, "warn_register_spill(64)x", SYN, 23, "x"},
    {0, "warn_register_spill(64)(", SYN, 23, "("},
    {0, "warn_register_spill(64))", SYN, 23, ")"},
    {0, "warn_register_spill(64) ,fast_math", SYN, 23, " "},
    {0, "warn_register_spill(x)y", ARG, 20, "x"},   /* leftmost wins */
    /* arguments on an option that takes none */
    {0, "fast_math()", ARG, 9, "("},
    {0, "fast_math(1)", ARG, 9, "("},
    {0, "fast_math(a(b)", ARG, 9, "("},
    {0, "fast_math(", SYN, 9, "("},                 /* tie: syntax wins */
    {0, "fast_math(1", SYN, 9, "("},
    {1, "fma(1),fallback", ARG, 3, "("},
    {2, "options(x)", ARG, 7, "("},
    /* integers */
    {0, "warn_register_spill()", ARG, 20, ""},
    {0, "warn_register_spill(-1)", ARG, 20, "-1"},
    {0, "warn_register_spill(+1)", ARG, 20, "+1"},
    {0, "warn_register_spill( 1)", ARG, 20, " 1"},
    {0, "warn_register_spill(1 )", ARG, 20, "1 "},
    {0, "warn_register_spill(0x10)", ARG, 20, "0x10"},
    {0, "warn_register_spill(1e3)", ARG, 20, "1e3"},
    {0, "warn_register_spill(2147483648)", ARG, 20, "2147483648"},
    {0, "warn_register_spill(4294967296)", ARG, 20, "4294967296"},
    {0, "warn_register_spill(99999999999999999999999)", ARG, 20,
     "99999999999999999999999"},
    {0, "warn_register_spill(1,2)", ARG, 22, "2"},
    {0, "warn_register_spill(1,)", ARG, 22, ""},
    {0, "warn_register_spill(,1)", ARG, 20, ""},
    {0, "warn_register_spill(x,1)", ARG, 20, "x"},
    {0, "warn_register_spill(1,x,y)", ARG, 22, "x"},
    /* name lists */
    {1, "expr_simplify()", ARG, 14, ""},
    {1, "expr_simplify(cse,bogus)", ARG, 18, "bogus"},
    {1, "expr_simplify(CSE)", ARG, 14, "CSE"},
    {1, "expr_simplify(cse,,fold)", ARG, 18, ""},
    {1, "expr_simplify(cse, fold)", ARG, 18, " fold"},
    {1, "expr_simplify(cse,)", ARG, 18, ""},
    {1, "expr_simplify(all)", ARG, 14, "all"},
    /* the first error in the string wins */
    {0, "bogus,fast_math(1)", UNK, 0, "bogus"},
    {0, "fast_math(1),bogus", ARG, 9, "("},
    {0, "fast_math,,bogus", SYN, 10, ","},
    {0, "warn_register_spill(1),warn_register_spill(x)", ARG, 43, "x"},
};

START_TEST(env_invalid)
{
    int set = bad_env[_i].set;
    const char *e[3] = {NULL, NULL, NULL};
    e[set] = bad_env[_i].in;
    kiln_options *sentinel = (kiln_options *)(uintptr_t)0x10;
    kiln_options *o = sentinel;
    kiln_status st = kiln_options_from_env(e[0], e[1], e[2], &o);
    ck_assert_msg(st == bad_env[_i].st, "'%s': status %s (%s)", bad_env[_i].in,
                  kiln_status_name(st), kiln_last_error());
    ck_assert_ptr_eq(o, sentinel); /* untouched */
    error_is(bad_env[_i].st, env_word[set], bad_env[_i].off, bad_env[_i].tok,
             set);
}
END_TEST

START_TEST(error_message_texts)
{
    kiln_options *o = NULL;
    ck_assert_int_eq(kiln_options_from_env(NULL, "expr_simplify(cse,bogus)",
                                           NULL, &o),
                     ARG);
    ck_assert_str_eq(kiln_last_error(),
                     "KILN_DISABLE: invalid argument at byte 18: 'bogus' is "
                     "not a pass name of 'expr_simplify' (valid passes of "
                     "expr_simplify: " VOCAB "); valid disable options: "
                     DISABLE_NAMES);
    ck_assert_int_eq(kiln_options_from_env("fast_math, kernel_debug", NULL,
                                           NULL, &o),
                     UNK);
    ck_assert_str_eq(kiln_last_error(),
                     "KILN_ENABLE: unknown option at byte 10: ' kernel_debug' "
                     "is not an enable option (names are case-sensitive and "
                     "never trimmed); valid enable options: " ENABLE_NAMES);
    /* non-printable bytes are escaped in the message, raw in the token */
    ck_assert_int_eq(kiln_options_from_env(NULL, NULL, "c\x01'", &o), UNK);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "'c\\x01\\x27'"));
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), DUMP_NAMES));
    /* a very long token is shortened in the message, cut in the record */
    char big[3000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ck_assert_int_eq(kiln_options_from_env(big, NULL, NULL, &o), UNK);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "...(2999 bytes)"));
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), ENABLE_NAMES));
    kiln_error_info ei = {sizeof ei, 0, 0, 0, 0, 0};
    kiln_last_error_info(&ei);
    ck_assert_uint_eq(strlen(ei.token), 255);
    ck_assert_int_eq(ei.offset, 0);
}
END_TEST

START_TEST(env_error_order_across_variables)
{
    kiln_options *o = NULL;
    /* enable is parsed first, then disable, then dump */
    ck_assert_int_eq(kiln_options_from_env("x", "y", "z", &o), UNK);
    error_is(UNK, "KILN_ENABLE", 0, "x", 0);
    ck_assert_int_eq(kiln_options_from_env("fast_math", "fma,,", "z", &o), SYN);
    error_is(SYN, "KILN_DISABLE", 4, ",", 1);
    ck_assert_int_eq(kiln_options_from_env("fast_math", "fma", "cache(", &o),
                     SYN);
    error_is(SYN, "KILN_DUMP", 5, "(", 2);
    ck_assert_int_eq(kiln_options_from_env(NULL, NULL, NULL, NULL),
                     KILN_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ------------------------------------------------------ execute items */

static const struct {
    int set;
    const char *in;
    kiln_status st; /* KILN_OK: canonical holds the result */
    long off;
    const char *tok;
    const char *canonical;
} exec_cases[] = {
    {0, "warn_register_spill(64)", KILN_OK, 0, "", "enable=warn_register_spill(64)"},
    {0, "warn_register_spill", KILN_OK, 0, "", "enable=warn_register_spill(0)"},
    {1, "expr_simplify(index,cse)", KILN_OK, 0, "", "disable=expr_simplify(cse,index)"},
    {1, "expr_simplify", KILN_OK, 0, "", "disable=expr_simplify"},
    {0, "", ELE, 0, "", NULL},
    {0, "fast_math,kernel_debug", ELE, 9, ",", NULL},
    {0, "fast_math,", ELE, 9, ",", NULL},
    {0, "warn_register_spill(64),", ELE, 23, ",", NULL},
    {1, "fma,bogus", ELE, 3, ",", NULL},
    {0, ",", SYN, 0, ",", NULL},
    {0, ",fast_math", SYN, 0, ",", NULL},
    {0, "bogus,fast_math", UNK, 0, "bogus", NULL},
    {0, "fast_math(1),x", ARG, 9, "(", NULL},
    {0, "warn_register_spill(1,2)", ARG, 22, "2", NULL},
    {0, "fast_math)", SYN, 9, ")", NULL},
    {0, "warn_register_spill(1)x", SYN, 22, "x", NULL},
    {0, "warn_register_spill(1", SYN, 19, "(", NULL},
    {1, "fast_math", UNK, 0, "fast_math", NULL},
    {0, "Fast_math", UNK, 0, "Fast_math", NULL},
    {0, " fast_math", UNK, 0, " fast_math", NULL},
};

START_TEST(execute_elements)
{
    int set = exec_cases[_i].set;
    kiln_options *o = env3("kernel_debug", "fallback", "cache");
    struct kiln_options before = *o;
    size_t index = (size_t)_i + 3;
    kiln_status st = kiln_options_apply(o, (kiln_opt_set)set, exec_cases[_i].in,
                                        index);
    ck_assert_msg(st == exec_cases[_i].st, "'%s': %s (%s)", exec_cases[_i].in,
                  kiln_status_name(st), kiln_last_error());
    if (st == KILN_OK) {
        ck_assert_str_eq(kiln_last_error(), "");
        kiln_options *e = env3(NULL, NULL, NULL);
        ck_assert_int_eq(kiln_options_apply(e, (kiln_opt_set)set,
                                            exec_cases[_i].in, 0),
                         KILN_OK);
        canon_is(e, KILN_LEVEL_ALL, exec_cases[_i].canonical);
        kiln_options_destroy(e);
    } else {
        ck_assert_mem_eq(&before, o, sizeof before); /* unchanged */
        char src[64];
        snprintf(src, sizeof src, "execute %s[%zu]", set_word[set], index);
        error_is(st, src, exec_cases[_i].off, exec_cases[_i].tok, set);
    }
    kiln_options_destroy(o);
}
END_TEST

START_TEST(execute_bad_calls)
{
    kiln_options *o = env3(NULL, NULL, NULL);
    ck_assert_int_eq(kiln_options_apply(o, KILN_SET_DUMP, "cache", 0),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "KILN_DUMP"));
    ck_assert_int_eq(kiln_options_apply(o, KILN_SET_ENABLE, NULL, 0),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_options_apply(NULL, KILN_SET_ENABLE, "fast_math", 0),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_options_apply(o, (kiln_opt_set)7, "fast_math", 0),
                     KILN_ERR_INVALID_ARGUMENT);
    canon_is(o, KILN_LEVEL_ALL, "");
    /* a huge index is printed in full */
    ck_assert_int_eq(kiln_options_apply(o, KILN_SET_DISABLE, "x", SIZE_MAX),
                     UNK);
    char src[64];
    snprintf(src, sizeof src, "execute disable[%zu]", (size_t)SIZE_MAX);
    error_is(UNK, src, 0, "x", 1);
    kiln_options_destroy(o);
}
END_TEST

/* -------------------------------------------------------- precedence */

START_TEST(precedence_env_then_execute)
{
    kiln_options *env = env3("warn_register_spill(5),fast_math",
                             "expr_simplify(cse)", "options");
    kiln_options *call = NULL;
    ck_assert_int_eq(kiln_options_copy(env, &call), KILN_OK);
    /* execute items replace arguments, in order */
    ck_assert_int_eq(kiln_options_apply(call, KILN_SET_ENABLE,
                                        "warn_register_spill(7)", 0), KILN_OK);
    ck_assert_int_eq(kiln_options_apply(call, KILN_SET_ENABLE,
                                        "warn_register_spill(8)", 1), KILN_OK);
    ck_assert_int_eq(kiln_options_apply(call, KILN_SET_DISABLE,
                                        "expr_simplify(fold)", 0), KILN_OK);
    ck_assert_int_eq(kiln_options_apply(call, KILN_SET_DISABLE, "fma", 1),
                     KILN_OK);
    canon_is(call, KILN_LEVEL_ALL,
             "enable=fast_math,warn_register_spill(8);"
             "disable=expr_simplify(fold),fma;dump=options");
    /* the environment snapshot is a separate value */
    canon_is(env, KILN_LEVEL_ALL,
             "enable=fast_math,warn_register_spill(5);"
             "disable=expr_simplify(cse);dump=options");
    /* a bare item replaces a list ("all passes") */
    ck_assert_int_eq(kiln_options_apply(call, KILN_SET_DISABLE,
                                        "expr_simplify", 2), KILN_OK);
    canon_is(call, KILN_LEVEL_KERNEL,
             "enable=fast_math;disable=expr_simplify,fma");
    /* a bare int item goes back to the default */
    ck_assert_int_eq(kiln_options_apply(call, KILN_SET_ENABLE,
                                        "warn_register_spill", 2), KILN_OK);
    canon_is(call, KILN_LEVEL_NONE,
             "enable=warn_register_spill(0);dump=options");
    /* a failed item changes nothing; nothing switches an env option off */
    struct kiln_options before = *call;
    ck_assert_int_eq(kiln_options_apply(call, KILN_SET_ENABLE,
                                        "fast_math(0)", 3), ARG);
    ck_assert_mem_eq(&before, call, sizeof before);
    int on = 0;
    ck_assert_int_eq(kiln_options_get(call, KILN_SET_ENABLE, "fast_math", &on,
                                      NULL), KILN_OK);
    ck_assert_int_eq(on, 1);
    kiln_options_destroy(call);
    kiln_options_destroy(env);
}
END_TEST

START_TEST(copy_and_destroy)
{
    kiln_options *a = env3("fast_math", NULL, NULL), *b = NULL;
    ck_assert_int_eq(kiln_options_copy(a, &b), KILN_OK);
    ck_assert_ptr_ne(a, b);
    ck_assert_mem_eq(a, b, sizeof *a);
    kiln_options_destroy(a);
    canon_is(b, KILN_LEVEL_ALL, "enable=fast_math");
    kiln_options_destroy(b);
    kiln_options_destroy(NULL);
    ck_assert_int_eq(kiln_options_copy(NULL, &b), KILN_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ---------------------------------------------------- canonical, levels */

START_TEST(levels_filter)
{
    kiln_options *o = env3(
        "warn_register_spill(9),kernel_profile,fuse_matmul,fast_math",
        "nvrtc_caching,expr_simplify(index),fma,fallback", "options");
    canon_is(o, KILN_LEVEL_ALL,
             "enable=fast_math,fuse_matmul,kernel_profile,"
             "warn_register_spill(9);disable=expr_simplify(index),fallback,"
             "fma,nvrtc_caching;dump=options");
    canon_is(o, KILN_LEVEL_PLAN, "enable=fuse_matmul;disable=fallback");
    canon_is(o, KILN_LEVEL_KERNEL,
             "enable=fast_math;disable=expr_simplify(index),fma");
    canon_is(o, KILN_LEVEL_NONE,
             "enable=kernel_profile,warn_register_spill(9);"
             "disable=nvrtc_caching;dump=options");
    kiln_options_destroy(o);
    o = env3("kernel_profile", NULL, "cache");
    canon_is(o, KILN_LEVEL_PLAN, "");
    canon_is(o, KILN_LEVEL_KERNEL, "");
    canon_is(o, KILN_LEVEL_NONE, "enable=kernel_profile;dump=cache");
    kiln_options_destroy(o);
    o = env3(NULL, "kernel_reuse,matmul_expr_eval,compile_to_sass", NULL);
    canon_is(o, KILN_LEVEL_PLAN, "disable=kernel_reuse,matmul_expr_eval");
    canon_is(o, KILN_LEVEL_KERNEL, "disable=compile_to_sass");
    canon_is(o, KILN_LEVEL_NONE, "");
    kiln_options_destroy(o);
}
END_TEST

START_TEST(canonical_buffer_contract)
{
    kiln_options *o = env3("fast_math", "fma", NULL);
    const char *want = "enable=fast_math;disable=fma"; /* 28 bytes */
    char buf[64];
    size_t len = 0;
    memset(buf, '#', sizeof buf);
    ck_assert_int_eq(kiln_options_canonical(o, KILN_LEVEL_ALL, buf, 28, &len),
                     KILN_ERR_LIMIT);
    ck_assert_uint_eq(len, 28);
    ck_assert_int_eq(buf[0], '#'); /* untouched */
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), "28"));
    ck_assert_int_eq(kiln_options_canonical(o, KILN_LEVEL_ALL, NULL, 0, &len),
                     KILN_ERR_LIMIT);
    ck_assert_uint_eq(len, 28);
    ck_assert_int_eq(kiln_options_canonical(o, KILN_LEVEL_ALL, buf, 29, &len),
                     KILN_OK);
    ck_assert_str_eq(buf, want);
    ck_assert_int_eq(buf[29], '#');
    ck_assert_int_eq(kiln_options_canonical(o, KILN_LEVEL_ALL, buf, 29, NULL),
                     KILN_OK);
    ck_assert_int_eq(kiln_options_canonical(o, (kiln_level)5, buf, 29, &len),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_options_canonical(NULL, KILN_LEVEL_ALL, buf, 29, &len),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_options_canonical(o, KILN_LEVEL_ALL, NULL, 5, &len),
                     KILN_ERR_INVALID_ARGUMENT);
    kiln_options *e = env3(NULL, NULL, NULL);
    ck_assert_int_eq(kiln_options_canonical(e, KILN_LEVEL_ALL, buf, 1, &len),
                     KILN_OK);
    ck_assert_str_eq(buf, "");
    ck_assert_uint_eq(len, 0);
    kiln_options_destroy(e);
    kiln_options_destroy(o);
}
END_TEST

START_TEST(hash_is_fnv1a_of_canonical)
{
    /* published FNV-1a 64 test values */
    ck_assert_uint_eq(fnv(""), 0xcbf29ce484222325ULL);
    ck_assert_uint_eq(fnv("a"), 0xaf63dc4c8601ec8cULL);
    ck_assert_uint_eq(fnv("foobar"), 0x85944171f73967e8ULL);
    kiln_options *o = env3(NULL, NULL, NULL);
    uint64_t h = 0;
    ck_assert_int_eq(kiln_options_hash(o, KILN_LEVEL_ALL, &h), KILN_OK);
    ck_assert_uint_eq(h, 0xcbf29ce484222325ULL);
    ck_assert_int_eq(kiln_options_hash(o, KILN_LEVEL_ALL, NULL),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_options_hash(o, (kiln_level)-2, &h),
                     KILN_ERR_INVALID_ARGUMENT);
    kiln_options_destroy(o);
    o = env3("fast_math", NULL, NULL);
    ck_assert_int_eq(kiln_options_hash(o, KILN_LEVEL_ALL, &h), KILN_OK);
    ck_assert_uint_eq(h, fnv("enable=fast_math"));
    ck_assert_int_eq(kiln_options_hash(o, KILN_LEVEL_PLAN, &h), KILN_OK);
    ck_assert_uint_eq(h, 0xcbf29ce484222325ULL);
    kiln_options_destroy(o);
    /* equal effective options give equal hashes however they were spelled */
    kiln_options *a = env3("kernel_debug,fast_math,kernel_debug", NULL, NULL);
    kiln_options *b = env3("fast_math,kernel_debug,", NULL, NULL);
    uint64_t ha, hb;
    kiln_options_hash(a, KILN_LEVEL_ALL, &ha);
    kiln_options_hash(b, KILN_LEVEL_ALL, &hb);
    ck_assert_uint_eq(ha, hb);
    kiln_options_destroy(a);
    kiln_options_destroy(b);
}
END_TEST

/* An independent model: option state as a tiny table; canonical text is
** built by sorting the names with qsort. */
typedef struct model {
    int on[3][8];
    long val[3][8];     /* INT value, or NAMES mask (-1 = bare) */
} model;

static const char *const m_names[3][8] = {
    {"fast_math", "fuse_matmul", "kernel_db", "kernel_debug",
     "kernel_lineinfo", "kernel_profile", "warn_register_spill", NULL},
    {"compile_to_sass", "expr_simplify", "fallback", "fma", "kernel_reuse",
     "matmul_expr_eval", "nvrtc_caching", "parallel_compile"},
    {"cache", "cuda_kernel", "fusion_ir", "launch_params", "options", NULL,
     NULL, NULL},
};
static const char *const m_vocab[5] = {"cse", "fold", "identity", "index",
                                       "strength"};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void model_text(const model *m, char *out, size_t cap)
{
    out[0] = '\0';
    for (int s = 0; s < 3; s++) {
        char items[8][128];
        const char *ptrs[8];
        int n = 0;
        for (int i = 0; i < 8; i++) {
            if (m_names[s][i] == NULL || !m->on[s][i])
                continue;
            if (s == 0 && i == 6)
                snprintf(items[n], 128, "%s(%ld)", m_names[s][i], m->val[s][i]);
            else if (s == 1 && i == 1 && m->val[s][i] >= 0) {
                char l[64] = "";
                for (int w = 0; w < 5; w++)
                    if (m->val[s][i] & (1L << w)) {
                        if (l[0])
                            strcat(l, ",");
                        strcat(l, m_vocab[w]);
                    }
                snprintf(items[n], 128, "%s(%s)", m_names[s][i], l);
            } else
                snprintf(items[n], 128, "%s", m_names[s][i]);
            ptrs[n] = items[n];
            n++;
        }
        if (n == 0)
            continue;
        qsort(ptrs, (size_t)n, sizeof ptrs[0], cmp_str);
        if (out[0])
            strncat(out, ";", cap - strlen(out) - 1);
        strncat(out, s == 0 ? "enable=" : s == 1 ? "disable=" : "dump=",
                cap - strlen(out) - 1);
        for (int i = 0; i < n; i++) {
            if (i)
                strncat(out, ",", cap - strlen(out) - 1);
            strncat(out, ptrs[i], cap - strlen(out) - 1);
        }
    }
}

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33) % n;
}

/* Append one random valid item of set s to buf and record it in m. */
static void random_item(model *m, int s, char *buf, size_t cap)
{
    int count = s == 0 ? 7 : s == 1 ? 8 : 5;
    int i = (int)rnd((uint32_t)count);
    char item[128];
    if (s == 0 && i == 6 && rnd(3) != 0) {
        long v = rnd(3) == 0 ? 2147483647L : (long)rnd(100000);
        snprintf(item, sizeof item, "%s(%s%ld)", m_names[s][i],
                 rnd(2) ? "00" : "", v);
        m->val[s][i] = v;
    } else if (s == 0 && i == 6) {
        snprintf(item, sizeof item, "%s", m_names[s][i]);
        m->val[s][i] = 0;
    } else if (s == 1 && i == 1 && rnd(3) != 0) {
        long mask = 0;
        char l[96] = "";
        int k = 1 + (int)rnd(6);
        for (int j = 0; j < k; j++) {
            int w = (int)rnd(5);
            mask |= 1L << w;
            if (l[0])
                strcat(l, ",");
            strcat(l, m_vocab[w]);
        }
        snprintf(item, sizeof item, "%s(%s)", m_names[s][i], l);
        m->val[s][i] = mask;
    } else {
        snprintf(item, sizeof item, "%s", m_names[s][i]);
        if (s == 1 && i == 1)
            m->val[s][i] = -1;
    }
    m->on[s][i] = 1;
    if (buf[0])
        strncat(buf, ",", cap - strlen(buf) - 1);
    strncat(buf, item, cap - strlen(buf) - 1);
}

START_TEST(canonical_matches_model)
{
    rng_state = 12345;
    for (int round = 0; round < 400; round++) {
        model m;
        memset(&m, 0, sizeof m);
        char env[3][1024] = {"", "", ""};
        for (int s = 0; s < 3; s++) {
            int k = (int)rnd(6);
            for (int j = 0; j < k; j++)
                random_item(&m, s, env[s], sizeof env[s]);
            if (k && rnd(4) == 0)
                strcat(env[s], ","); /* trailing comma */
        }
        kiln_options *o = env3(env[0], env[1], env[2]);
        char want[2048];
        /* execute elements on top, applied after the environment */
        char el[1024];
        for (int j = 0, k = (int)rnd(4); j < k; j++) {
            int s = (int)rnd(2);
            el[0] = '\0';
            random_item(&m, s, el, sizeof el);
            ck_assert_int_eq(kiln_options_apply(o, (kiln_opt_set)s, el,
                                                (size_t)j), KILN_OK);
        }
        model_text(&m, want, sizeof want);
        canon_is(o, KILN_LEVEL_ALL, want);
        /* canonical text re-parses to itself */
        char parts[3][1024] = {"", "", ""};
        const char *pe[3] = {NULL, NULL, NULL};
        char *save = NULL, copy[2048];
        snprintf(copy, sizeof copy, "%s", want);
        for (char *t = strtok_r(copy, ";", &save); t;
             t = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(t, '=');
            ck_assert_ptr_nonnull(eq);
            *eq = '\0';
            int s = strcmp(t, "enable") == 0 ? 0 : strcmp(t, "disable") == 0 ? 1 : 2;
            snprintf(parts[s], sizeof parts[s], "%s", eq + 1);
            pe[s] = parts[s];
        }
        kiln_options *r = env3(pe[0], pe[1], pe[2]);
        canon_is(r, KILN_LEVEL_ALL, want);
        kiln_options_destroy(r);
        kiln_options_destroy(o);
    }
}
END_TEST

/* ------------------------------------------------------------ get, json */

START_TEST(get_values)
{
    kiln_options *o = env3("warn_register_spill(77)", "expr_simplify(fold,index)",
                           NULL);
    int on = -1;
    uint64_t v = 99;
    ck_assert_int_eq(kiln_options_get(o, KILN_SET_ENABLE, "warn_register_spill",
                                      &on, &v), KILN_OK);
    ck_assert_int_eq(on, 1);
    ck_assert_uint_eq(v, 77);
    ck_assert_int_eq(kiln_options_get(o, KILN_SET_DISABLE, "expr_simplify",
                                      &on, &v), KILN_OK);
    ck_assert_int_eq(on, 1);
    ck_assert_uint_eq(v, (1u << 1) | (1u << 3)); /* fold, index */
    ck_assert_int_eq(kiln_options_get(o, KILN_SET_ENABLE, "fast_math", &on, &v),
                     KILN_OK);
    ck_assert_int_eq(on, 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(kiln_options_get(o, KILN_SET_DISABLE, "fast_math", &on, &v),
                     UNK);
    ck_assert_ptr_nonnull(strstr(kiln_last_error(), DISABLE_NAMES));
    ck_assert_int_eq(kiln_options_get(o, KILN_SET_ENABLE, "fast_math", NULL, &v),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_options_apply(o, KILN_SET_DISABLE, "expr_simplify", 0),
                     KILN_OK);
    ck_assert_int_eq(kiln_options_get(o, KILN_SET_DISABLE, "expr_simplify",
                                      &on, &v), KILN_OK);
    ck_assert_uint_eq(v, 0x1f); /* bare: all five passes */
    ck_assert_int_eq(kiln_options_get(o, KILN_SET_DUMP, "cache", &on, NULL),
                     KILN_OK);
    ck_assert_int_eq(on, 0);
    kiln_options_destroy(o);
}
END_TEST

START_TEST(kernel_options_decoded)
{
    kiln_options *o = env3("fast_math,kernel_lineinfo,fuse_matmul",
                           "fma,expr_simplify(strength,cse),fallback", NULL);
    kiln_kernel_options ko;
    char buf[256];
    ck_assert_int_eq(kiln__kernel_options(o, &ko, buf, sizeof buf), KILN_OK);
    ck_assert_uint_eq(ko.struct_size, sizeof ko);
    ck_assert_int_eq(ko.fast_math, 1); /* fast_math + disable=fma: */
    ck_assert_int_eq(ko.contract, 0);  /* fast intrinsics, no FMA */
    ck_assert_int_eq(ko.lineinfo, 1);
    ck_assert_int_eq(ko.debug, 0);
    ck_assert_int_eq(ko.sass, 1);
    ck_assert_uint_eq(ko.simplify_off, (1u << 0) | (1u << 4));
    ck_assert_ptr_eq(ko.canonical, buf);
    ck_assert_str_eq(ko.canonical, "enable=fast_math,kernel_lineinfo;"
                                   "disable=expr_simplify(cse,strength),fma");
    ck_assert_int_eq(kiln__kernel_options(o, &ko, buf, 10), KILN_ERR_LIMIT);
    kiln_options_destroy(o);
    o = env3("kernel_debug", "compile_to_sass,expr_simplify", NULL);
    ck_assert_int_eq(kiln__kernel_options(o, &ko, buf, sizeof buf), KILN_OK);
    ck_assert_int_eq(ko.fast_math, 0);
    ck_assert_int_eq(ko.contract, 1);
    ck_assert_int_eq(ko.debug, 1);
    ck_assert_int_eq(ko.sass, 0);
    ck_assert_uint_eq(ko.simplify_off, 0x1f);
    kiln_options_destroy(o);
    o = env3(NULL, NULL, NULL);
    ck_assert_int_eq(kiln__kernel_options(o, &ko, buf, 1), KILN_OK);
    ck_assert_str_eq(ko.canonical, "");
    ck_assert_uint_eq(ko.simplify_off, 0);
    kiln_options_destroy(o);
}
END_TEST

START_TEST(json_document)
{
    kiln_options *o = env3("warn_register_spill(64),fast_math",
                           "expr_simplify(fold,cse),fallback,fma", "cache");
    ck_assert_int_eq(kiln_options_apply(o, KILN_SET_DISABLE, "expr_simplify", 0),
                     KILN_OK);
    char *text = NULL;
    ck_assert_int_eq(kiln_options_json(o, &text), KILN_OK);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    ck_assert_msg(j != NULL, "bad JSON: %s", je.text);
    json_t *opts = json_object_get(j, "options");
    ck_assert_uint_eq(json_array_size(opts), 6);
    static const char *const names[] = {"fast_math", "warn_register_spill",
                                        "expr_simplify", "fallback", "fma",
                                        "cache"};
    static const char *const sets[] = {"enable", "enable", "disable",
                                       "disable", "disable", "dump"};
    static const char *const levels[] = {"kernel", "none", "kernel", "plan",
                                         "kernel", "none"};
    for (size_t i = 0; i < 6; i++) {
        json_t *e = json_array_get(opts, i);
        ck_assert_str_eq(json_string_value(json_object_get(e, "name")), names[i]);
        ck_assert_str_eq(json_string_value(json_object_get(e, "set")), sets[i]);
        ck_assert_str_eq(json_string_value(json_object_get(e, "level")), levels[i]);
    }
    json_t *w = json_object_get(json_array_get(opts, 1), "args");
    ck_assert_int_eq(json_integer_value(json_array_get(w, 0)), 64);
    ck_assert(json_is_null(json_object_get(json_array_get(opts, 2), "args")));
    ck_assert_uint_eq(json_array_size(json_object_get(json_array_get(opts, 0),
                                                      "args")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(opts, 2),
                                                       "arg")), "names");
    static const char *const lv[] = {"all", "plan", "kernel", "none"};
    static const char *const want[] = {
        ("enable=fast_math,warn_register_spill(64);disable=expr_simplify,"
         "fallback,fma;dump=cache"),
        "disable=fallback",
        "enable=fast_math;disable=expr_simplify,fma",
        "enable=warn_register_spill(64);dump=cache"};
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(j, "canonical"), lv[i])),
                         want[i]);
        char hx[32];
        snprintf(hx, sizeof hx, "0x%016" PRIx64, fnv(want[i]));
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(j, "hash"), lv[i])),
                         hx);
    }
    json_decref(j);
    kiln_free(text);
    /* a named list prints sorted */
    ck_assert_int_eq(kiln_options_apply(o, KILN_SET_DISABLE,
                                        "expr_simplify(index,cse,index)", 1),
                     KILN_OK);
    ck_assert_int_eq(kiln_options_json(o, &text), KILN_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"args\":[\"cse\",\"index\"]"));
    kiln_free(text);
    ck_assert_int_eq(kiln_options_json(NULL, &text), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_options_json(o, NULL), KILN_ERR_INVALID_ARGUMENT);
    kiln_options_destroy(o);
}
END_TEST

/* ---------------------------------------------------- fault injection */

START_TEST(faults_from_env_copy_json)
{
    int seen_fail = 0;
    for (long n = 0;; n++) {
        kiln_options *sentinel = (kiln_options *)(uintptr_t)0x20, *o = sentinel;
        kiln__fault_after(n);
        kiln_status st = kiln_options_from_env("fast_math", "fma", "cache", &o);
        kiln__fault_after(-1);
        if (st == KILN_OK) {
            canon_is(o, KILN_LEVEL_ALL, "enable=fast_math;disable=fma;dump=cache");
            kiln_options_destroy(o);
            break;
        }
        seen_fail = 1;
        ck_assert_int_eq(st, KILN_ERR_NO_MEMORY);
        ck_assert_ptr_eq(o, sentinel);
        ck_assert_ptr_nonnull(strstr(kiln_last_error(), "out of memory"));
    }
    ck_assert(seen_fail);
    kiln_options *src = env3("kernel_debug", NULL, NULL);
    seen_fail = 0;
    for (long n = 0;; n++) {
        kiln_options *sentinel = (kiln_options *)(uintptr_t)0x20, *o = sentinel;
        kiln__fault_after(n);
        kiln_status st = kiln_options_copy(src, &o);
        kiln__fault_after(-1);
        if (st == KILN_OK) {
            kiln_options_destroy(o);
            break;
        }
        seen_fail = 1;
        ck_assert_int_eq(st, KILN_ERR_NO_MEMORY);
        ck_assert_ptr_eq(o, sentinel);
    }
    ck_assert(seen_fail);
    seen_fail = 0;
    for (long n = 0;; n++) {
        char *sentinel = (char *)(uintptr_t)0x30, *t = sentinel;
        kiln__fault_after(n);
        kiln_status st = kiln_options_json(src, &t);
        kiln__fault_after(-1);
        if (st == KILN_OK) {
            ck_assert_ptr_nonnull(strstr(t, "kernel_debug"));
            kiln_free(t);
            break;
        }
        seen_fail = 1;
        ck_assert_int_eq(st, KILN_ERR_NO_MEMORY);
        ck_assert_ptr_eq(t, sentinel);
    }
    ck_assert(seen_fail);
    kiln_options_destroy(src);
}
END_TEST

START_TEST(faults_hot_path_never_allocates)
{
    kiln_options *o = env3("fast_math", NULL, NULL);
    kiln__fault_after(0); /* every allocation would fail from here */
    ck_assert_int_eq(kiln_options_apply(o, KILN_SET_ENABLE,
                                        "warn_register_spill(3)", 0), KILN_OK);
    struct kiln_options s = *o;
    ck_assert_int_eq(kiln__options_apply_item(&s, KILN_SET_DISABLE,
                                              "expr_simplify(cse)", 0), KILN_OK);
    /* errors are reported in full without allocating */
    ck_assert_int_eq(kiln__options_apply_item(&s, KILN_SET_DISABLE,
                                              "expr_simplify(x)", 4), ARG);
    error_is(ARG, "execute disable[4]", 14, "x", 1);
    char buf[256];
    size_t len;
    ck_assert_int_eq(kiln_options_canonical(&s, KILN_LEVEL_ALL, buf, sizeof buf,
                                            &len), KILN_OK);
    uint64_t h;
    ck_assert_int_eq(kiln_options_hash(&s, KILN_LEVEL_KERNEL, &h), KILN_OK);
    kiln_kernel_options ko;
    ck_assert_int_eq(kiln__kernel_options(&s, &ko, buf, sizeof buf), KILN_OK);
    /* a parse error beats the allocation: nothing was allocated */
    kiln_options *x = NULL;
    ck_assert_int_eq(kiln_options_from_env("bogus", NULL, NULL, &x), UNK);
    ck_assert_int_eq(kiln__fault_after(-1), 0); /* zero allocations made */
    ck_assert_str_eq(buf, "enable=fast_math;disable=expr_simplify(cse)");
    kiln_options_destroy(o);
}
END_TEST

/* --------------------------------------------------------------- CLI */

typedef struct cli_result {
    int rc;
    char out[65536];
    char err[65536];
} cli_result;

static void slurp(int fd, char *dst, size_t cap)
{
    lseek(fd, 0, SEEK_SET);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, dst + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    dst[n] = '\0';
    close(fd);
}

/* Run `$KILN_BIN options ARGS...` with exactly the environment `envp`. */
static cli_result *run_cli(char *const *envp, const char *const *args)
{
    const char *bin = getenv("KILN_BIN");
    ck_assert_msg(bin != NULL, "KILN_BIN is not set");
    static cli_result res;
    char on[] = "/tmp/kiln_opt_outXXXXXX", en[] = "/tmp/kiln_opt_errXXXXXX";
    int fo = mkstemp(on), fe = mkstemp(en);
    ck_assert(fo >= 0 && fe >= 0);
    unlink(on);
    unlink(en);
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)bin;
    argv[n++] = "options";
    for (; args && args[n - 2] && n < 63; n++)
        argv[n] = (char *)args[n - 2];
    argv[n] = NULL;
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        execve(bin, argv, envp);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    res.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    slurp(fo, res.out, sizeof res.out);
    slurp(fe, res.err, sizeof res.err);
    return &res;
}

/* The child sees only these, plus sanitizer settings from our own env. */
static char **child_env(const char *a, const char *b, const char *c)
{
    static char *env[8];
    static char keep[3][512];
    int n = 0;
    const char *given[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (given[i])
            env[n++] = (char *)given[i];
    const char *san[3] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"};
    for (int i = 0; i < 3; i++)
        if (getenv(san[i])) {
            snprintf(keep[i], sizeof keep[i], "%s=%s", san[i], getenv(san[i]));
            env[n++] = keep[i];
        }
    env[n] = NULL;
    return env;
}

START_TEST(cli_issue_example)
{
    const char *args[] = {"--disable", "expr_simplify(fold,cse,fold)",
                          "--enable", "warn_register_spill(064)", NULL};
    cli_result *r = run_cli(child_env("KILN_ENABLE=kernel_lineinfo,fast_math",
                                      NULL, NULL), args);
    ck_assert_int_eq(r->rc, 0);
    ck_assert_str_eq(r->out, "enable=fast_math,kernel_lineinfo,"
                             "warn_register_spill(64);disable=expr_simplify("
                             "cse,fold)\n");
    ck_assert_str_eq(r->err, "");
}
END_TEST

START_TEST(cli_empty_and_levels)
{
    cli_result *r = run_cli(child_env(NULL, NULL, NULL), NULL);
    ck_assert_int_eq(r->rc, 0);
    ck_assert_str_eq(r->out, "\n");
    r = run_cli(child_env("KILN_ENABLE=", "KILN_DISABLE=", "KILN_DUMP="), NULL);
    ck_assert_str_eq(r->out, "\n");
    char **env = child_env("KILN_ENABLE=fuse_matmul,fast_math,kernel_profile",
                           "KILN_DISABLE=fma,fallback", "KILN_DUMP=options");
    const char *all[] = {"--level", "all", NULL};
    r = run_cli(env, all);
    ck_assert_str_eq(r->out, "enable=fast_math,fuse_matmul,kernel_profile;"
                             "disable=fallback,fma;dump=options\n");
    const char *plan[] = {"--level", "plan", NULL};
    r = run_cli(env, plan);
    ck_assert_int_eq(r->rc, 0);
    ck_assert_str_eq(r->out, "enable=fuse_matmul;disable=fallback\n");
    const char *kern[] = {"--level=kernel", NULL};
    r = run_cli(env, kern);
    ck_assert_str_eq(r->out, "enable=fast_math;disable=fma\n");
    const char *none[] = {"--level", "none", "--enable=warn_register_spill(3)",
                          NULL};
    r = run_cli(env, none);
    ck_assert_str_eq(r->out, "enable=kernel_profile,warn_register_spill(3);"
                             "dump=options\n");
    ck_assert_str_eq(r->err, "");
}
END_TEST

START_TEST(cli_invalid_options)
{
    cli_result *r = run_cli(child_env("KILN_ENABLE=fast_math, kernel_debug",
                                      NULL, NULL), NULL);
    ck_assert_int_eq(r->rc, 1);
    ck_assert_str_eq(r->out, "");
    ck_assert_str_eq(r->err,
                     "kiln options: KILN_ENABLE: unknown option at byte 10: "
                     "' kernel_debug' is not an enable option (names are "
                     "case-sensitive and never trimmed); valid enable "
                     "options: " ENABLE_NAMES "\n");
    /* indices count per list, in command-line order */
    const char *a1[] = {"--enable", "fast_math", "--disable", "fma",
                        "--enable=kernel_debug", "--disable", "fma,fallback",
                        NULL};
    r = run_cli(child_env(NULL, NULL, NULL), a1);
    ck_assert_int_eq(r->rc, 1);
    ck_assert_str_eq(r->out, "");
    ck_assert_ptr_nonnull(strstr(r->err, "execute disable[1]: invalid element "
                                         "at byte 3: ','"));
    const char *a2[] = {"--disable", "bogus", "--enable", "fast_math(1)", NULL};
    r = run_cli(child_env(NULL, NULL, NULL), a2);
    ck_assert_int_eq(r->rc, 1);
    ck_assert_ptr_nonnull(strstr(r->err, "execute disable[0]: unknown option at "
                                         "byte 0: 'bogus'"));
    ck_assert_ptr_nonnull(strstr(r->err, DISABLE_NAMES));
    r = run_cli(child_env(NULL, NULL, "KILN_DUMP=cache(1)"), NULL);
    ck_assert_int_eq(r->rc, 1);
    ck_assert_ptr_nonnull(strstr(r->err, "KILN_DUMP: invalid argument at byte 5"));
    /* the environment is checked even when the items are fine */
    const char *a3[] = {"--enable", "fast_math", NULL};
    r = run_cli(child_env(NULL, "KILN_DISABLE=,fma", NULL), a3);
    ck_assert_int_eq(r->rc, 1);
    ck_assert_ptr_nonnull(strstr(r->err, "KILN_DISABLE: syntax error at byte 0"));
}
END_TEST

START_TEST(cli_usage_errors)
{
    static const char *const cases[][4] = {
        {"--bogus", NULL},
        {"--enable", NULL},
        {"--level", NULL},
        {"--level", "kernels", NULL},
        {"--json", "--level", "plan", NULL},
        {"--catalogue-json", "--json", NULL},
        {"fast_math", NULL},
        {"--enablefast_math", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_result *r = run_cli(child_env(NULL, NULL, NULL), cases[i]);
        ck_assert_msg(r->rc == 2, "case %zu: rc %d", i, r->rc);
        ck_assert_str_eq(r->out, "");
        ck_assert_ptr_nonnull(strstr(r->err, "usage: kiln options"));
    }
}
END_TEST

START_TEST(cli_help)
{
    const char *h[] = {"--help", NULL};
    cli_result *r = run_cli(child_env(NULL, NULL, NULL), h);
    ck_assert_int_eq(r->rc, 0);
    static const char *const must[] = {
        "--enable ITEM", "--disable ITEM", "--enable=ITEM", "--level",
        "--json", "--catalogue-json", "KILN_ENABLE", "KILN_DISABLE",
        "KILN_DUMP", "execute enable[i]", "exit status", "examples",
        "warn_register_spill(64);disable=expr_simplify(cse,fold)"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        ck_assert_msg(strstr(r->out, must[i]) != NULL, "help lacks %s", must[i]);
    const char *h2[] = {"--enable", "bogus", "-h", NULL};
    r = run_cli(child_env(NULL, NULL, NULL), h2);
    ck_assert_int_eq(r->rc, 0);
}
END_TEST

START_TEST(cli_json)
{
    const char *a[] = {"--json", "--enable", "warn_register_spill(9)", NULL};
    cli_result *r = run_cli(child_env("KILN_ENABLE=fuse_matmul", NULL, NULL), a);
    ck_assert_int_eq(r->rc, 0);
    ck_assert_str_eq(r->err, "");
    json_error_t je;
    json_t *j = json_loads(r->out, 0, &je);
    ck_assert_msg(j != NULL, "bad JSON: %s", je.text);
    const char *want = "enable=fuse_matmul,warn_register_spill(9)";
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(j, "canonical"), "all")), want);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(j, "canonical"), "plan")),
                     "enable=fuse_matmul");
    char hx[32];
    snprintf(hx, sizeof hx, "0x%016" PRIx64, fnv(want));
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(j, "hash"), "all")), hx);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "options")), 2);
    json_decref(j);
    /* --level all is the default, so it may accompany --json */
    const char *b[] = {"--level=all", "--json", NULL};
    r = run_cli(child_env(NULL, NULL, NULL), b);
    ck_assert_int_eq(r->rc, 0);
    ck_assert_ptr_nonnull(strstr(r->out, "\"canonical\":{\"all\":\"\""));
}
END_TEST

START_TEST(cli_catalogue_json)
{
    const char *a[] = {"--catalogue-json", NULL};
    /* an invalid environment does not matter here */
    cli_result *r = run_cli(child_env("KILN_ENABLE=,", NULL, NULL), a);
    ck_assert_int_eq(r->rc, 0);
    json_error_t je;
    json_t *j = json_loads(r->out, 0, &je);
    ck_assert_msg(j != NULL, "bad JSON: %s", je.text);
    json_t *rows = json_object_get(j, "options");
    size_t n;
    const kiln_option_desc *c = kiln_option_catalogue(&n);
    ck_assert_uint_eq(json_array_size(rows), n);
    static const char *const sets[] = {"enable", "disable", "dump"};
    static const char *const args[] = {"none", "int", "names"};
    static const char *const levels[] = {"plan", "kernel", "none"};
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(rows, i);
        ck_assert_str_eq(json_string_value(json_object_get(e, "name")), c[i].name);
        ck_assert_str_eq(json_string_value(json_object_get(e, "set")), sets[c[i].set]);
        ck_assert_str_eq(json_string_value(json_object_get(e, "arg")), args[c[i].arg]);
        ck_assert_str_eq(json_string_value(json_object_get(e, "level")),
                         levels[c[i].level]);
        ck_assert_str_eq(json_string_value(json_object_get(e, "description")),
                         c[i].description);
        ck_assert(json_is_boolean(json_object_get(e, "implemented")));
        ck_assert_int_eq(json_is_true(json_object_get(e, "implemented")),
                         c[i].implemented);
        json_t *v = json_object_get(e, "vocabulary");
        if (c[i].arg == KILN_ARG_NAMES) {
            ck_assert_uint_eq(json_array_size(v), 5);
            ck_assert_str_eq(json_string_value(json_array_get(v, 4)), "strength");
        } else
            ck_assert(json_is_null(v));
        json_t *d = json_object_get(e, "default");
        if (c[i].arg == KILN_ARG_INT)
            ck_assert_int_eq(json_integer_value(d), 0);
        else
            ck_assert(json_is_null(d));
    }
    json_decref(j);
}
END_TEST

/* ------------------------------------------------------------ threads */

#define N_THREADS 6
#define N_ROUNDS 3000

typedef struct thread_job {
    const kiln_options *env;
    const char *enable[2];
    const char *disable[2];
    const char *want;
    const char *bad; /* an invalid enable element; its error must be ours */
    int failures;
} thread_job;

static void *thread_main(void *arg)
{
    thread_job *j = arg;
    char buf[512];
    for (int r = 0; r < N_ROUNDS; r++) {
        kiln_options *o = NULL;
        if (kiln_options_copy(j->env, &o) != KILN_OK) {
            j->failures++;
            continue;
        }
        for (size_t i = 0; i < 2; i++) {
            if (j->enable[i] && kiln_options_apply(o, KILN_SET_ENABLE,
                                                   j->enable[i], i) != KILN_OK)
                j->failures++;
            if (j->disable[i] && kiln_options_apply(o, KILN_SET_DISABLE,
                                                    j->disable[i], i) != KILN_OK)
                j->failures++;
        }
        size_t len;
        if (kiln_options_canonical(o, KILN_LEVEL_ALL, buf, sizeof buf, &len) !=
                KILN_OK ||
            strcmp(buf, j->want) != 0)
            j->failures++;
        /* the hot path on a stack copy, and a thread-local error */
        struct kiln_options s = *j->env;
        if (kiln_options_apply(&s, KILN_SET_ENABLE, j->bad, 2) == KILN_OK)
            j->failures++;
        kiln_error_info ei = {sizeof ei, 0, 0, 0, 0, 0};
        kiln_last_error_info(&ei);
        if (strcmp(ei.source, "execute enable[2]") != 0 ||
            strcmp(ei.token, j->bad) != 0)
            j->failures++;
        kiln_options_destroy(o);
    }
    return NULL;
}

START_TEST(threads_isolated_execute_options)
{
    kiln_options *env = env3("kernel_lineinfo", "fallback", NULL);
    thread_job jobs[N_THREADS] = {
        {env, {"fast_math", NULL}, {"fma", NULL},
         "enable=fast_math,kernel_lineinfo;disable=fallback,fma", "t0", 0},
        {env, {"warn_register_spill(1)", NULL}, {NULL, NULL},
         "enable=kernel_lineinfo,warn_register_spill(1);disable=fallback",
         "t1", 0},
        {env, {"warn_register_spill(2)", "warn_register_spill(3)"},
         {"expr_simplify(cse)", NULL},
         "enable=kernel_lineinfo,warn_register_spill(3);"
         "disable=expr_simplify(cse),fallback", "t22", 0},
        {env, {NULL, NULL}, {"expr_simplify", "kernel_reuse"},
         "enable=kernel_lineinfo;disable=expr_simplify,fallback,kernel_reuse",
         "t333", 0},
        {env, {"fuse_matmul", "kernel_profile"}, {"matmul_expr_eval", NULL},
         "enable=fuse_matmul,kernel_lineinfo,kernel_profile;"
         "disable=fallback,matmul_expr_eval", "t4444", 0},
        {env, {NULL, NULL}, {NULL, NULL},
         "enable=kernel_lineinfo;disable=fallback", "t55555", 0},
    };
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N_THREADS; i++)
        ck_assert_msg(jobs[i].failures == 0, "thread %d: %d failures", i,
                      jobs[i].failures);
    /* the shared snapshot never changed */
    canon_is(env, KILN_LEVEL_ALL, "enable=kernel_lineinfo;disable=fallback");
    kiln_options_destroy(env);
}
END_TEST

/* ------------------------------------------------------------- suites */

Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("catalogue");
    tcase_add_test(tc, catalogue_holds_every_design_option);
    tcase_add_test(tc, catalogue_vocabulary_sorted);
    suite_add_tcase(s, tc);

    tc = tcase_create("grammar");
    tcase_add_loop_test(tc, env_valid, 0,
                        (int)(sizeof valid_env / sizeof valid_env[0]));
    tcase_add_test(tc, env_all_three_sets);
    tcase_add_loop_test(tc, env_invalid, 0,
                        (int)(sizeof bad_env / sizeof bad_env[0]));
    tcase_add_test(tc, error_message_texts);
    tcase_add_test(tc, env_error_order_across_variables);
    tcase_add_loop_test(tc, execute_elements, 0,
                        (int)(sizeof exec_cases / sizeof exec_cases[0]));
    tcase_add_test(tc, execute_bad_calls);
    suite_add_tcase(s, tc);

    tc = tcase_create("merge");
    tcase_add_test(tc, precedence_env_then_execute);
    tcase_add_test(tc, copy_and_destroy);
    tcase_add_test(tc, levels_filter);
    tcase_add_test(tc, canonical_buffer_contract);
    tcase_add_test(tc, hash_is_fnv1a_of_canonical);
    tcase_add_test(tc, canonical_matches_model);
    tcase_add_test(tc, get_values);
    tcase_add_test(tc, kernel_options_decoded);
    tcase_add_test(tc, json_document);
    suite_add_tcase(s, tc);

    tc = tcase_create("faults");
    tcase_add_test(tc, faults_from_env_copy_json);
    tcase_add_test(tc, faults_hot_path_never_allocates);
    suite_add_tcase(s, tc);
    return s;
}

Suite *options_cli_suite(void)
{
    Suite *s = suite_create("options_cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cli_issue_example);
    tcase_add_test(tc, cli_empty_and_levels);
    tcase_add_test(tc, cli_invalid_options);
    tcase_add_test(tc, cli_usage_errors);
    tcase_add_test(tc, cli_help);
    tcase_add_test(tc, cli_json);
    tcase_add_test(tc, cli_catalogue_json);
    suite_add_tcase(s, tc);
    return s;
}

Suite *threads_options_suite(void)
{
    Suite *s = suite_create("threads_options");
    TCase *tc = tcase_create("isolation");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, threads_isolated_execute_options);
    suite_add_tcase(s, tc);
    return s;
}

/* test_fusion_text.c -- the .kf format v1: canonical printing, round trips
** (print -> parse -> print identical, hash and equality preserved), literal
** decoding, parse errors with exact line:col messages, a mutation fuzzer
** over valid files, and allocation-failure injection for parse and print.
** Expected texts and bit patterns are written out by hand here. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../../conformance/conform.h"
#include "tu_skip.h"

/* Canonical texts: each must parse and print back byte-identically. */
static const char *const corpus[] = {
    /* relu(a * b + c) */
    "kiln.fusion 1\n"
    "%0 = input f32 [?, ?]\n"
    "%1 = input f32 [?, ?]\n"
    "%2 = input f32 [?, ?]\n"
    "%3 = mul %0 %1\n"
    "%4 = add %3 %2\n"
    "%5 = relu %4\n"
    "output %5\n",
    /* bias add through a declared broadcast axis and a rank change */
    "kiln.fusion 1\n"
    "%0 = input f32 [?, ?]\n"
    "%1 = input f32 [1, ?]\n"
    "%2 = input f32 [?]\n"
    "%3 = broadcast %2 rank=2 new=[0]\n"
    "%4 = add %0 %1\n"
    "%5 = add %4 %3\n"
    "output %5\n"
    "output %4\n",
    /* softmax-ish: max, sub, exp, sum, div */
    "kiln.fusion 1\n"
    "%0 = input f32 [?, ?]\n"
    "%1 = max %0 axes=[1] keepdim\n"
    "%2 = sub %0 %1\n"
    "%3 = exp %2\n"
    "%4 = sum %3 axes=[1] keepdim\n"
    "%5 = div %3 %4\n"
    "output %5\n",
    /* matmul + epilogue */
    "kiln.fusion 1\n"
    "%0 = input f16 [?, ?]\n"
    "%1 = input f16 [?, ?]\n"
    "%2 = input f32 [1, ?]\n"
    "%3 = matmul %0 %1\n"
    "%4 = add %3 %2\n"
    "%5 = const f32 0x0\n"
    "%6 = maximum %4 %5\n"
    "%7 = cast %6 bf16\n"
    "output %7\n",
    /* every constant dtype, where, fma, comparisons, logic, no-keepdim */
    "kiln.fusion 1\n"
    "%0 = input f64 [?, 1, ?]\n"
    "%1 = const bool 0x1\n"
    "%2 = const i32 0xffffffff\n"
    "%3 = const i64 0x8000000000000000\n"
    "%4 = const f16 0x3c00\n"
    "%5 = const bf16 0x7fc0\n"
    "%6 = const f64 0x7ff0000000000000\n"
    "%7 = lt %0 %6\n"
    "%8 = and %7 %1\n"
    "%9 = not %8\n"
    "%10 = where %9 %0 %6\n"
    "%11 = fma %10 %0 %6\n"
    "%12 = min %11 axes=[0, 2]\n"
    "%13 = cast %2 i64\n"
    "%14 = eq %13 %3\n"
    "%15 = input bool []\n"
    "%16 = or %15 %14\n"
    "output %12\n"
    "output %16\n"
    "output %4\n"
    "output %5\n",
    /* rank 0 and rank 8 */
    "kiln.fusion 1\n"
    "%0 = input i32 []\n"
    "%1 = input i64 [?, ?, ?, ?, ?, ?, ?, 1]\n"
    "%2 = neg %0\n"
    "%3 = abs %1\n"
    "%4 = sum %3 axes=[0, 1, 2, 3, 4, 5, 6, 7]\n"
    "output %2\n"
    "output %4\n",
    /* identity broadcast, reducing a broadcast axis, constant condition,
    ** outer product through a matmul whose K axes are both broadcast */
    "kiln.fusion 1\n"
    "%0 = input f32 [?, 1]\n"
    "%1 = broadcast %0 rank=2 new=[]\n"
    "%2 = sum %1 axes=[1]\n"
    "%3 = const bool 0x1\n"
    "%4 = where %3 %2 %2\n"
    "%5 = input f32 [1, ?]\n"
    "%6 = matmul %0 %5\n"
    "output %4\n"
    "output %6\n",
    /* every unary float op */
    "kiln.fusion 1\n"
    "%0 = input f32 [?]\n"
    "%1 = exp %0\n"
    "%2 = log %1\n"
    "%3 = sqrt %2\n"
    "%4 = rsqrt %3\n"
    "%5 = reciprocal %4\n"
    "%6 = sin %5\n"
    "%7 = cos %6\n"
    "%8 = tanh %7\n"
    "%9 = sigmoid %8\n"
    "%10 = erf %9\n"
    "%11 = floor %10\n"
    "%12 = ceil %11\n"
    "%13 = pow %12 %0\n"
    "%14 = minimum %13 %0\n"
    "%15 = ne %14 %0\n"
    "%16 = ge %14 %0\n"
    "%17 = le %14 %0\n"
    "%18 = gt %14 %0\n"
    "%19 = broadcast %12 rank=4 new=[0, 2, 3]\n"
    "output %19\n"
    "output %15\n"
    "output %16\n"
    "output %17\n"
    "output %18\n",
};
#define N_CORPUS (sizeof corpus / sizeof corpus[0])

static kiln_fusion *parse_ok(const char *text)
{
    kiln_fusion *f = NULL;
    kiln_status s = kiln_fusion_parse(text, strlen(text), &f);
    ck_assert_msg(s == KILN_OK, "parse failed: %s\n%s", kiln_last_error(),
                  text);
    return f;
}

static char *print_ok(const kiln_fusion *f)
{
    char *t = NULL;
    ck_assert_int_eq(kiln_fusion_print(f, &t), KILN_OK);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* print(parse(text)) must be `want`, and the round trip must be stable. */
static void check_canonical(const char *text, const char *want)
{
    kiln_fusion *f = parse_ok(text);
    char *p = print_ok(f);
    ck_assert_str_eq(p, want);
    kiln_fusion *g = parse_ok(p);
    char *q = print_ok(g);
    ck_assert_str_eq(q, p);
    uint64_t hf = 0, hg = 1;
    ck_assert_int_eq(kiln_fusion_hash(f, &hf), KILN_OK);
    ck_assert_int_eq(kiln_fusion_hash(g, &hg), KILN_OK);
    ck_assert_uint_eq(hf, hg);
    ck_assert_int_eq(kiln_fusion_equal(f, g), 1);
    kiln_free(p);
    kiln_free(q);
    kiln_fusion_destroy(f);
    kiln_fusion_destroy(g);
}

START_TEST(corpus_round_trips)
{
    for (size_t i = 0; i < N_CORPUS; i++)
        check_canonical(corpus[i], corpus[i]);
    /* distinct fusions hash differently */
    uint64_t h[N_CORPUS];
    for (size_t i = 0; i < N_CORPUS; i++) {
        kiln_fusion *f = parse_ok(corpus[i]);
        kiln_fusion_hash(f, &h[i]);
        kiln_fusion_destroy(f);
        for (size_t j = 0; j < i; j++)
            ck_assert(h[i] != h[j]);
    }
}
END_TEST

START_TEST(free_form_to_canonical)
{
    check_canonical(
        "# a comment line\n"
        "\n"
        "   kiln.fusion    1   # trailing comment\r\n"
        "%x_1 = input f32 [ ? ,1 ]\r\n"
        "\t%B=input  f32[?,?]\n"
        "output %x_1\n"
        "%sum=add %x_1 %B# no space before the comment\n"
        "%k = const f32 -1.5\n"
        "%p=mul %sum %k\n"
        "output %p\n"
        "%r = sum %p axes = [ 1 ] keepdim\n"
        "%bc = broadcast %r rank = 3 new = [ 2 ]\n"
        "output %bc",
        "kiln.fusion 1\n"
        "%0 = input f32 [?, 1]\n"
        "%1 = input f32 [?, ?]\n"
        "%2 = add %0 %1\n"
        "%3 = const f32 0xbfc00000\n"
        "%4 = mul %2 %3\n"
        "%5 = sum %4 axes=[1] keepdim\n"
        "%6 = broadcast %5 rank=3 new=[2]\n"
        "output %0\n"
        "output %4\n"
        "output %6\n");
}
END_TEST

/* One constant statement -> its canonical bit pattern. */
static void check_const(const char *decl, const char *want_line)
{
    char text[256], want[256];
    snprintf(text, sizeof text, "kiln.fusion 1\n%%c = const %s\noutput %%c\n",
             decl);
    snprintf(want, sizeof want, "kiln.fusion 1\n%%0 = const %s\noutput %%0\n",
             want_line);
    check_canonical(text, want);
}

START_TEST(constant_literals)
{
    check_const("f32 1.0", "f32 0x3f800000");
    check_const("f32 1", "f32 0x3f800000");
    check_const("f32 0.1", "f32 0x3dcccccd");
    check_const("f32 -0.0", "f32 0x80000000");
    check_const("f32 1e-45", "f32 0x1");
    check_const("f32 3.4028235e38", "f32 0x7f7fffff");
    check_const("f32 1e39", "f32 0x7f800000");
    check_const("f32 -inf", "f32 0xff800000");
    check_const("f32 0x7FC00000", "f32 0x7fc00000");
    check_const("f64 0.1", "f64 0x3fb999999999999a");
    check_const("f64 -2", "f64 0xc000000000000000");
    check_const("f64 0x000000000000000000001", "f64 0x1");
    check_const("i32 -1", "i32 0xffffffff");
    check_const("i32 2147483647", "i32 0x7fffffff");
    check_const("i32 -2147483648", "i32 0x80000000");
    check_const("i32 +7", "i32 0x7");
    check_const("i32 007", "i32 0x7");
    check_const("i64 -1", "i64 0xffffffffffffffff");
    check_const("i64 -9223372036854775808", "i64 0x8000000000000000");
    check_const("bool true", "bool 0x1");
    check_const("bool false", "bool 0x0");
    check_const("bool 0x1", "bool 0x1");
    check_const("f16 0x3C00", "f16 0x3c00");
    check_const("bf16 0xff80", "bf16 0xff80");
}
END_TEST

/* Parse text[len]; expect KILN_ERR_PARSE and exactly `msg`. */
static void check_error_n(const char *text, size_t len, const char *msg)
{
    kiln_fusion *f = (kiln_fusion *)&f; /* sentinel: must stay untouched */
    kiln_fusion *const sentinel = f;
    kiln_status s = kiln_fusion_parse(text, len, &f);
    ck_assert_msg(s == KILN_ERR_PARSE, "status %s for:\n%s",
                  kiln_status_name(s), text);
    ck_assert_ptr_eq(f, sentinel);
    ck_assert_str_eq(kiln_last_error(), msg);
}

static void check_error(const char *text, const char *msg)
{
    check_error_n(text, strlen(text), msg);
}

#define H "kiln.fusion 1\n"
#define A "%a = input f32 [?, ?]\n"

/* rule: [kf.error.parse] */
START_TEST(parse_errors)
{
    check_error("", "1:1: expected the header 'kiln.fusion 1', found end of "
                    "input");
    check_error("# only a comment\n\n",
                "3:1: expected the header 'kiln.fusion 1', found end of "
                "input");
    check_error("kiln.fusion 2\n", "1:13: unsupported format version '2' "
                                   "(this build reads version 1)");
    check_error("kiln.fusion\n", "1:12: expected the format version, found "
                                 "end of line");
    check_error("kiln.fusion 1 x\n",
                "1:15: unexpected 'x' after the statement");
    check_error("%a = input f32 []\n",
                "1:1: expected the header 'kiln.fusion 1', found '%a'");
    check_error(H, "2:1: no 'output' statement (a fusion needs at least one "
                   "output)");
    check_error(H A, "3:1: no 'output' statement (a fusion needs at least "
                     "one output)");
    check_error(H A "output %b\n", "3:8: undefined value %b");
    check_error(H A "%a = neg %a\n", "3:1: value %a is already defined (as "
                                     "%0)");
    check_error(H A "%b = add %a %b\n", "3:13: undefined value %b");
    check_error(H A "%b = frob %a\n", "3:6: unknown op 'frob'");
    check_error(H A "%b = add %a\n",
                "3:12: expected operand 2 of add (%name), found end of line");
    check_error(H A "%b = add %a %a %a\n",
                "3:16: unexpected '%a' after the statement");
    check_error(H A "%b = neg a\n",
                "3:10: expected operand 1 of neg (%name), found 'a'");
    check_error(H A "%b neg %a\n", "3:4: expected '=', found 'neg'");
    check_error(H A "%b =\n", "3:5: expected an op name, found end of line");
    check_error(H A "% = neg %a\n",
                "3:1: expected a value name ([A-Za-z0-9_]+) after '%'");
    check_error(H A "%b = neg %a $\n", "3:13: unexpected character '$'");
    check_error(H "%a = input f32 [?]\x01\n", "2:19: unexpected byte 0x01");
    check_error_n(H "%a = input f32 [?]\0x\n", 14 + 21, "2:19: unexpected byte 0x00");
    check_error(H A "output\n",
                "3:7: expected a value (%name), found end of line");
    check_error(H A "= neg %a\n",
                "3:1: expected a statement ('%name = OP ...' or 'output "
                "%name'), found '='");
    /* inputs */
    check_error(H "%a = input f32\n",
                "2:15: expected '[' (the axes, e.g. [?, 1]), found end of "
                "line");
    check_error(H "%a = input f33 [?]\n",
                "2:12: expected a dtype (bool, i32, i64, f16, bf16, f32, "
                "f64), found 'f33'");
    check_error(H "%a = input f32 [?, 2]\n",
                "2:20: expected '?' (an axis) or '1' (a broadcast axis), "
                "found '2'");
    check_error(H "%a = input f32 [?,]\n",
                "2:19: expected '?' (an axis) or '1' (a broadcast axis), "
                "found ']'");
    check_error(H "%a = input f32 [? ?]\n", "2:19: expected ',' or ']', "
                                            "found '?'");
    check_error(H "%a = input f32 [?\n",
                "2:18: expected ',' or ']', found end of line");
    check_error(H "%a = input f32 [?, ?, ?, ?, ?, ?, ?, ?, ?]\n",
                "2:41: more than 8 entries (the maximum rank is 8)");
    /* constants */
    check_error(H "%c = const f16 1.0\n",
                "2:16: f16 constants take a hex bit pattern (0x...), not "
                "'1.0'");
    check_error(H "%c = const bool 2\n",
                "2:17: invalid bool constant '2' (true, false, 0x0 or 0x1)");
    check_error(H "%c = const bool 0x2\n",
                "2:6: const at %0: bit pattern 0x2 does not fit bool "
                "(maximum 0x1)");
    check_error(H "%c = const i32 2147483648\n",
                "2:16: i32 constant '2147483648' is out of range");
    check_error(H "%c = const i64 9223372036854775808\n",
                "2:16: i64 constant '9223372036854775808' is out of range");
    check_error(H "%c = const i32 1.5\n", "2:16: invalid i32 constant '1.5'");
    check_error(H "%c = const i32 -\n", "2:16: invalid i32 constant '-'");
    check_error(H "%c = const f32 1.0.0\n",
                "2:16: invalid f32 constant '1.0.0'");
    check_error(H "%c = const f64 e5\n", "2:16: invalid f64 constant 'e5'");
    check_error(H "%c = const f32 0X10\n",
                "2:16: invalid f32 constant '0X10' (hex bit patterns are "
                "written 0x followed by hex digits)");
    check_error(H "%c = const f64 -0x1p3\n",
                "2:16: invalid f64 constant '-0x1p3' (hex bit patterns are "
                "written 0x followed by hex digits)");
    check_error(H "%c = const f32 0x1p3\n", "2:19: invalid hex digit 'p'");
    check_error(H "%c = const f32 0x\n", "2:16: expected hex digits after "
                                         "'0x'");
    check_error(H "%c = const f32 0x3g\n", "2:19: invalid hex digit 'g'");
    check_error(H "%c = const i64 0x10000000000000000\n",
                "2:16: hex constant exceeds 64 bits");
    check_error(H "%c = const f32\n",
                "2:15: expected a constant value, found end of line");
    /* builder errors carry the statement's op position */
    check_error(H A "%h = input f16 [?, ?]\n%s = add %a %h\n",
                "4:6: add at %2: dtype mismatch: %0 is f32, %1 is f16");
    check_error(H "%h = input bf16 [?]\n%s = exp %h\n",
                "3:6: exp at %1: %0 is bf16, a storage type: cast it to f32 "
                "first (exp accepts f32, f64)");
    check_error(H A "%v = input f32 [?]\n%s = mul %a %v\n",
                "4:6: mul at %2: rank mismatch: %0 has rank 2, %1 has rank 1 "
                "(use broadcast to change rank)");
    check_error(H A "output %a\noutput %a\n",
                "4:1: output: %0 is already output 0");
    /* cast, broadcast, reductions, matmul */
    check_error(H A "%b = cast %a\n",
                "3:13: expected a dtype (bool, i32, i64, f16, bf16, f32, "
                "f64), found end of line");
    check_error(H A "%b = broadcast %a new=[0]\n",
                "3:19: expected 'rank=', found 'new'");
    check_error(H A "%b = broadcast %a rank=3\n",
                "3:25: expected 'new=', found end of line");
    check_error(H A "%b = broadcast %a rank=3 new=[3]\n",
                "3:31: new axis 3 is out of range for rank 3");
    check_error(H A "%b = broadcast %a rank=3 new=[0, 0]\n",
                "3:34: new axis 0 is listed twice");
    check_error(H A "%b = broadcast %a rank=9 new=[0]\n",
                "3:24: rank 9 exceeds the maximum rank 8");
    check_error(H A "%b = broadcast %a rank=x new=[0]\n",
                "3:24: expected a rank (0..99), found 'x'");
    check_error(H A "%b = broadcast %a rank=4 new=[0]\n",
                "3:6: broadcast at %1: %0 has rank 2 and 1 new axes were "
                "given, so the result rank must be 3, not 4");
    check_error(H A "%b = sum %a axes=[2]\n",
                "3:6: sum at %1: axis 2 is out of range for %0 of rank 2");
    check_error(H A "%b = max %a axes=[]\n",
                "3:6: max at %1: at least one axis must be reduced");
    check_error(H A "%b = min %a axes=[0] keep\n",
                "3:22: expected 'keepdim' or end of line, found 'keep'");
    check_error(H A "%b = sum %a axes=[0] keepdim keepdim\n",
                "3:30: unexpected 'keepdim' after the statement");
    check_error(H A "%b = sum %a axes=[100]\n",
                "3:19: expected an axis number (0..99), found '100'");
    check_error(H A "%b = sum %a axes=[-1]\n",
                "3:19: expected an axis number (0..99), found '-1'");
    check_error(H A "%b = input f32 [?, ?, ?]\n%c = matmul %a %b\n",
                "4:6: matmul at %2: operands must have rank 2, %1 has rank "
                "3");
    check_error(H A "%b = matmul %a\n",
                "3:15: expected a value (%name), found end of line");
    /* sum/max/min are reductions, not pointwise; input is not an op */
    check_error(H A "%b = input %a\n",
                "3:12: expected a dtype (bool, i32, i64, f16, bf16, f32, "
                "f64), found '%a'");
    /* errors on later lines count lines correctly with CRLF and comments */
    check_error("# c\r\nkiln.fusion 1\r\n# c\r\n%a = input f32 [?]\r\n"
                "%b = sqrt %c\r\n",
                "5:11: undefined value %c");
}
END_TEST

START_TEST(long_names_and_many_values)
{
    /* 3000 chained values with long names: exercises the name table */
    kiln_buf b = {0};
    kiln__buf_puts(&b, "kiln.fusion 1\n%v_long_name_0 = input f32 [?]\n");
    for (int i = 1; i < 3000; i++)
        kiln__buf_printf(&b, "%%v_long_name_%d = neg %%v_long_name_%d\n", i,
                         i - 1);
    kiln__buf_puts(&b, "output %v_long_name_2999\n");
    ck_assert(!b.failed);
    kiln_fusion *f = parse_ok(b.data);
    char *p = print_ok(f);
    ck_assert_ptr_nonnull(strstr(p, "\n%2999 = neg %2998\noutput %2999\n"));
    kiln_free(p);
    kiln_fusion_destroy(f);
    kiln__buf_free(&b);
}
END_TEST

/* kiln_fusion_input_name returns the names the parser bound, so two texts
** that differ only in where a '\r' sits (whitespace to the lexer) name
** their inputs identically, whatever order the inputs are declared in. */
START_TEST(input_names)
{
    static const char *const texts[] = {
        "kiln.fusion 1\n%b = input f32 [?]\n%a = input f32 [?]\n"
        "%c = sub %a %b\noutput %c\n",
        "kiln.fusion 1\r\n\r%b\r= input f32 [?]\r\n%a\t=\rinput f32 [?]\r\n"
        "%c = sub %a %b\r\noutput %c\r\n",
    };
    uint64_t h[2];
    for (int k = 0; k < 2; k++) {
        kiln_fusion *f = parse_ok(texts[k]);
        const char *nm = "unset";
        ck_assert_int_eq(kiln_fusion_input_name(f, 0, &nm), KILN_OK);
        ck_assert_str_eq(nm, "b");
        ck_assert_int_eq(kiln_fusion_input_name(f, 1, &nm), KILN_OK);
        ck_assert_str_eq(nm, "a");
        nm = "unset";
        ck_assert_int_eq(kiln_fusion_input_name(f, 2, &nm),
                         KILN_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(kiln_fusion_input_name(f, -1, &nm),
                         KILN_ERR_INVALID_ARGUMENT);
        ck_assert_str_eq(nm, "unset"); /* untouched on failure */
        ck_assert_int_eq(kiln_fusion_input_name(f, 0, NULL),
                         KILN_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(kiln_fusion_input_name(NULL, 0, &nm),
                         KILN_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(kiln_fusion_hash(f, &h[k]), KILN_OK);
        kiln_fusion_destroy(f);
    }
    ck_assert_uint_eq(h[0], h[1]);
    /* a fusion from the builder has no names */
    kiln_fusion *g = NULL;
    kiln_value v;
    ck_assert_int_eq(kiln_fusion_create(&g), KILN_OK);
    ck_assert_int_eq(kiln_fusion_input(g, KILN_F32, 1, NULL, &v), KILN_OK);
    ck_assert_int_eq(kiln_fusion_output(g, v), KILN_OK);
    ck_assert_int_eq(kiln_fusion_finalize(g), KILN_OK);
    const char *nm = "unset";
    ck_assert_int_eq(kiln_fusion_input_name(g, 0, &nm), KILN_OK);
    ck_assert_ptr_null(nm);
    kiln_fusion_destroy(g);
}
END_TEST

START_TEST(builder_fusions_survive_text)
{
    /* a fusion built with the API prints, parses back equal, same hash */
    kiln_fusion *f = NULL;
    ck_assert_int_eq(kiln_fusion_create(&f), KILN_OK);
    kiln_value a, b, c, d, e, g, h;
    uint8_t bc[3] = {0, 1, 0}, nw[3] = {0, 1, 0};
    ck_assert_int_eq(kiln_fusion_input(f, KILN_BF16, 3, bc, &a), KILN_OK);
    ck_assert_int_eq(kiln_fusion_cast(f, a, KILN_F32, &b), KILN_OK);
    ck_assert_int_eq(kiln_fusion_const(f, KILN_F32, 0x3fc00000, &c), KILN_OK);
    kiln_value args[3] = {b, c, b};
    ck_assert_int_eq(kiln_fusion_op(f, KILN_OP_FMA, args, 3, &d), KILN_OK);
    int axes[2] = {2, 0};
    ck_assert_int_eq(kiln_fusion_reduce(f, KILN_OP_RMAX, d, axes, 2, 0, &e),
                     KILN_OK);
    ck_assert_int_eq(kiln_fusion_broadcast(f, e, 2, nw, &g), KILN_OK);
    ck_assert_int_eq(kiln_fusion_cast(f, g, KILN_F16, &h), KILN_OK);
    ck_assert_int_eq(kiln_fusion_output(f, h), KILN_OK);
    ck_assert_int_eq(kiln_fusion_output(f, d), KILN_OK);
    ck_assert_int_eq(kiln_fusion_finalize(f), KILN_OK);
    char *p = print_ok(f);
    ck_assert_str_eq(p, "kiln.fusion 1\n"
                        "%0 = input bf16 [?, 1, ?]\n"
                        "%1 = cast %0 f32\n"
                        "%2 = const f32 0x3fc00000\n"
                        "%3 = fma %1 %2 %1\n"
                        "%4 = max %3 axes=[0, 2]\n"
                        "%5 = broadcast %4 rank=2 new=[1]\n"
                        "%6 = cast %5 f16\n"
                        "output %6\n"
                        "output %3\n");
    kiln_fusion *g2 = parse_ok(p);
    ck_assert_int_eq(kiln_fusion_equal(f, g2), 1);
    uint64_t h1, h2;
    kiln_fusion_hash(f, &h1);
    kiln_fusion_hash(g2, &h2);
    ck_assert_uint_eq(h1, h2);
    kiln_free(p);
    kiln_fusion_destroy(f);
    kiln_fusion_destroy(g2);
    ck_assert_int_eq(kiln_fusion_print(NULL, &p), KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_fusion_parse("x", 1, NULL),
                     KILN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(kiln_fusion_parse(NULL, 3, &g2),
                     KILN_ERR_INVALID_ARGUMENT);
}
END_TEST

/* ---------------------------------------------------------------- fuzz */

/* Mutate src into dst (cap bytes); returns the new length. */
static size_t mutate(uint64_t *rng, const char *src, size_t n, char *dst,
                     size_t cap)
{
    static const char *const pieces[] = {
        "%", "%0", "%99", " ", "\n", "#", "[", "]", ",", "?", "1", "=",
        "0x", "0xffffffffffffffffff", "keepdim", "axes=[", "rank=", "new=[",
        "input", "output", "const", "f16", "bool", "-", "1e400", "nan",
        "where", "matmul", "broadcast", "\r", "\t", "\0", "\xff", "9"};
    if (n > cap)
        n = cap;
    memcpy(dst, src, n);
    int rounds = 1 + (int)(cf_splitmix64(rng) % 4);
    for (int r = 0; r < rounds; r++) {
        uint64_t k = cf_splitmix64(rng);
        size_t at = n ? (size_t)(cf_splitmix64(rng) % (n + 1)) : 0;
        switch (k % 5) {
        case 0: /* flip a byte */
            if (n)
                dst[at % n] = (char)(cf_splitmix64(rng) & 0xff);
            break;
        case 1: /* delete a span */
            if (n) {
                size_t len = 1 + (size_t)(cf_splitmix64(rng) % 8);
                if (at + len > n)
                    len = n - at;
                memmove(dst + at, dst + at + len, n - at - len);
                n -= len;
            }
            break;
        case 2: { /* insert a piece */
            const char *p = pieces[cf_splitmix64(rng) % (sizeof pieces / sizeof *pieces)];
            size_t len = p[0] ? strlen(p) : 1;
            if (n + len <= cap) {
                memmove(dst + at + len, dst + at, n - at);
                memcpy(dst + at, p, len);
                n += len;
            }
            break;
        }
        case 3: /* truncate */
            n = at;
            break;
        default: { /* duplicate a span elsewhere */
            size_t from = n ? (size_t)(cf_splitmix64(rng) % n) : 0;
            size_t len = n ? 1 + (size_t)(cf_splitmix64(rng) % 24) : 0;
            if (from + len > n)
                len = n - from;
            if (n + len <= cap) {
                memmove(dst + at + len, dst + at, n - at);
                memmove(dst + at, dst + (from >= at ? from + len : from), len);
                n += len;
            }
            break;
        }
        }
    }
    return n;
}

START_TEST(fuzz_mutations)
{
    uint64_t rng = 0x6b696c6e;
    char buf[4096];
    int ok = 0, bad = 0;
    for (int it = 0; it < 30000; it++) {
        const char *src = corpus[it % N_CORPUS];
        size_t n = mutate(&rng, src, strlen(src), buf, sizeof buf);
        kiln_fusion *f = NULL;
        kiln_status s = kiln_fusion_parse(buf, n, &f);
        if (s == KILN_OK) {
            /* whatever parsed must round-trip canonically */
            char *p = print_ok(f);
            kiln_fusion *g = parse_ok(p);
            char *q = print_ok(g);
            ck_assert_str_eq(p, q);
            ck_assert_int_eq(kiln_fusion_equal(f, g), 1);
            kiln_free(p);
            kiln_free(q);
            kiln_fusion_destroy(g);
            kiln_fusion_destroy(f);
            ok++;
        } else {
            ck_assert_msg(s == KILN_ERR_PARSE, "status %s", kiln_status_name(s));
            /* "LINE:COL: message" */
            unsigned long line = 0, col = 0;
            int used = 0;
            ck_assert_int_eq(sscanf(kiln_last_error(), "%lu:%lu: %n", &line,
                                    &col, &used), 2);
            ck_assert(line >= 1 && col >= 1 && used > 0);
            ck_assert_ptr_null(f);
            bad++;
        }
    }
    ck_assert_int_gt(ok, 100);
    ck_assert_int_gt(bad, 100);
}
END_TEST

/* ------------------------------------------------------ fault injection */

START_TEST(fault_injection_parse_print)
{
    for (size_t i = 0; i < N_CORPUS; i++) {
        int failures = 0;
        for (long n = 0;; n++) {
            kiln_fusion *f = NULL;
            kiln__fault_after(n);
            kiln_status s = kiln_fusion_parse(corpus[i], strlen(corpus[i]), &f);
            kiln__fault_after(-1);
            if (s == KILN_OK) {
                char *p = print_ok(f);
                ck_assert_str_eq(p, corpus[i]);
                kiln_free(p);
                kiln_fusion_destroy(f);
                break;
            }
            ck_assert_int_eq(s, KILN_ERR_NO_MEMORY);
            ck_assert_ptr_null(f);
            failures++;
            ck_assert_int_lt(n, 10000);
        }
        ck_assert_int_gt(failures, 0);
        kiln_fusion *f = parse_ok(corpus[i]);
        for (long n = 0;; n++) {
            char *p = NULL;
            kiln__fault_after(n);
            kiln_status s = kiln_fusion_print(f, &p);
            kiln__fault_after(-1);
            if (s == KILN_OK) {
                ck_assert_str_eq(p, corpus[i]);
                kiln_free(p);
                break;
            }
            ck_assert_int_eq(s, KILN_ERR_NO_MEMORY);
            ck_assert_ptr_null(p);
            ck_assert_int_lt(n, 10000);
        }
        kiln_fusion_destroy(f);
    }
}
END_TEST

/* ------------------------------------------------------------------ CLI */

/* Run `$KILN_BIN ARGS` through the shell; output (stdout+stderr) into buf.
** Returns the exit status, or -1 when KILN_BIN is not set. */
static int run_kiln(const char *args, char *buf, size_t cap)
{
    const char *bin = getenv("KILN_BIN");
    if (bin == NULL || bin[0] == '\0')
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(buf, 1, cap - 1, p);
    buf[n] = '\0';
    int st = pclose(p);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

START_TEST(cli_fusion)
{
    static char out[1 << 16];
    if (TU_REQUIRE_ENV("KILN_BIN") == NULL)
        return;
    ck_assert_int_eq(run_kiln("fusion --help", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: kiln fusion"));
    ck_assert_int_eq(run_kiln("fusion examples/softmax.kf", out, sizeof out), 0);
    kiln_fusion *f = NULL;
    FILE *fp = fopen("examples/softmax.kf", "rb");
    ck_assert_ptr_nonnull(fp);
    static char src[8192];
    size_t n = fread(src, 1, sizeof src, fp);
    fclose(fp);
    ck_assert_int_eq(kiln_fusion_parse(src, n, &f), KILN_OK);
    char *canon = print_ok(f);
    uint64_t h;
    kiln_fusion_hash(f, &h);
    char want[8192];
    snprintf(want, sizeof want, "%shash 0x%016llx\n", canon,
             (unsigned long long)h);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(run_kiln("fusion --hash-only - < examples/softmax.kf",
                              out, sizeof out), 0);
    snprintf(want, sizeof want, "0x%016llx\n", (unsigned long long)h);
    ck_assert_str_eq(out, want);
    kiln_free(canon);
    kiln_fusion_destroy(f);

    ck_assert_int_eq(run_kiln("fusion - < /dev/null", out, sizeof out), 1);
    ck_assert_str_eq(out, "<stdin>:1:1: expected the header 'kiln.fusion 1', "
                          "found end of input\n");
    ck_assert_int_eq(run_kiln("fusion /nonexistent/x.kf", out, sizeof out), 1);
    ck_assert_int_eq(run_kiln("fusion", out, sizeof out), 2);
    ck_assert_int_eq(run_kiln("fusion --frob x.kf", out, sizeof out), 2);
    ck_assert_int_eq(run_kiln("fusion a.kf b.kf", out, sizeof out), 2);
    ck_assert_int_eq(run_kiln("fusion --op-table-json x.kf", out, sizeof out), 2);

    /* the JSON op table mirrors kiln__op_desc row by row */
    ck_assert_int_eq(run_kiln("fusion --op-table-json", out, sizeof out), 0);
    json_error_t jerr;
    json_t *root = json_loads(out, 0, &jerr);
    ck_assert_msg(root != NULL, "%s", jerr.text);
    json_t *ops = json_object_get(root, "ops");
    ck_assert_uint_eq(json_array_size(ops), KILN_OP_COUNT);
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        const kiln_op_desc *r = kiln__op_desc((kiln_op)op);
        json_t *o = json_array_get(ops, (size_t)op);
        ck_assert_str_eq(json_string_value(json_object_get(o, "name")), r->name);
        ck_assert_int_eq(json_integer_value(json_object_get(o, "value")), op);
        ck_assert_int_eq(json_integer_value(json_object_get(o, "arity")),
                         r->arity);
        static const char *const reduce[] = {"none", "sum", "max", "min"};
        ck_assert_str_eq(json_string_value(json_object_get(o, "reduce")),
                         reduce[r->reduce]);
        json_t *dts = json_object_get(o, "dtypes");
        uint32_t mask = 0;
        for (size_t k = 0; k < json_array_size(dts); k++) {
            kiln_dtype t;
            ck_assert_int_eq(kiln_dtype_parse(
                json_string_value(json_array_get(dts, k)), &t), KILN_OK);
            mask |= 1u << t;
        }
        ck_assert_uint_eq(mask, r->accepts);
        const char *res = json_string_value(json_object_get(o, "result"));
        if (r->result == -1)
            ck_assert_str_eq(res, "same");
        else if (r->result == -2)
            ck_assert_str_eq(res, "given");
        else
            ck_assert_str_eq(res, kiln_dtype_name((kiln_dtype)r->result));
    }
    /* and the dtype table: value, size, float format */
    json_t *dtypes = json_object_get(root, "dtypes");
    ck_assert_uint_eq(json_array_size(dtypes), KILN_DTYPE_COUNT);
    int n_float = 0;
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
        json_t *d = json_array_get(dtypes, (size_t)t);
        ck_assert_str_eq(json_string_value(json_object_get(d, "name")),
                         kiln_dtype_name((kiln_dtype)t));
        ck_assert_int_eq(json_integer_value(json_object_get(d, "value")), t);
        ck_assert_int_eq(json_integer_value(json_object_get(d, "size")),
                         (json_int_t)kiln_dtype_size((kiln_dtype)t));
        json_t *fmt = json_object_get(d, "format");
        ck_assert_ptr_nonnull(fmt);
        if (json_is_null(fmt))
            continue;
        n_float++;
        json_int_t e = json_integer_value(json_object_get(fmt, "exponentBits"));
        json_int_t m = json_integer_value(json_object_get(fmt, "fractionBits"));
        ck_assert_int_eq(1 + e + m, 8 * (json_int_t)kiln_dtype_size((kiln_dtype)t));
    }
    ck_assert_int_eq(n_float, 4);
    json_decref(root);

    /* every example validates */
    static const char *const ex[] = {"bias_add", "matmul_epilogue",
                                     "relu_mul_add", "softmax"};
    for (size_t i = 0; i < 4; i++) {
        char args[128];
        snprintf(args, sizeof args, "fusion examples/%s.kf", ex[i]);
        ck_assert_msg(run_kiln(args, out, sizeof out) == 0, "%s: %s", ex[i],
                      out);
    }
}
END_TEST

Suite *fusion_text_suite(void)
{
    Suite *s = suite_create("fusion_text");
    TCase *tc = tcase_create("format");
    tcase_add_test(tc, corpus_round_trips);
    tcase_add_test(tc, free_form_to_canonical);
    tcase_add_test(tc, constant_literals);
    tcase_add_test(tc, parse_errors);
    tcase_add_test(tc, long_names_and_many_values);
    tcase_add_test(tc, builder_fusions_survive_text);
    tcase_add_test(tc, input_names);
    tcase_add_test(tc, cli_fusion);
    suite_add_tcase(s, tc);
    tc = tcase_create("robustness");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fuzz_mutations);
    tcase_add_test(tc, fault_injection_parse_print);
    suite_add_tcase(s, tc);
    return s;
}

/*
** test_npy.c -- the .npy reader of `kiln run` (runtime/tool/npy.c): the
** header grammar of npy.h, accepted as NumPy writes it (versions 1.0, 2.0
** and 3.0, both quote styles, spaces, trailing commas, Python 2 longs) and
** rejected otherwise with the byte offset of the first deviation; the
** data length checked against the file before it is allocated (regular
** files and pipes); checked size products; the writer's round trip.
** The accepted headers are the bytes NumPy 1.24 writes (np.save).
*/
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool/npy.h"

/* An .npy image: prefix of `major` (length field of 2 or 4 bytes), the
** dictionary text padded with spaces to a multiple of 64 and ended by
** "\n" (unless raw: then `dict` is the whole header as is), then `data`
** of `n` bytes.  Returns the image length. */
static size_t image(unsigned char *buf, int major, const char *dict, int raw,
                    const void *data, size_t n)
{
    size_t pre = major == 1 ? 10 : 12, len = strlen(dict), hlen = len;
    if (!raw)
        hlen = len + 1 + (64 - (pre + len + 1) % 64) % 64;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + pre, dict, len);
    if (!raw) {
        memset(buf + pre + len, ' ', hlen - len - 1);
        buf[pre + hlen - 1] = '\n';
    }
    memcpy(buf + pre + hlen, data, n);
    return pre + hlen + n;
}

/* Read an image through a memory stream; 0 on success, message in err. */
static int read_mem(const unsigned char *buf, size_t len, kiln_npy *a,
                    char *err, size_t cap)
{
    FILE *fp = fmemopen((void *)buf, len, "rb");
    ck_assert_ptr_nonnull(fp);
    int rc = kiln_npy_read_stream(fp, "t.npy", a, err, cap);
    fclose(fp);
    return rc;
}

static const float three[3] = {1.0f, 2.0f, 3.0f};

START_TEST(accepts_numpy_headers)
{
    static const struct {
        int major;
        const char *dict;
        int rank;
        int64_t sizes[3];
    } ok[] = {
        /* exactly what np.save writes (1.24), rank 1, 0 and 2 */
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 1, {3}},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 0, {0}},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }", 2, {1, 3}},
        /* format_version (2, 0) and (3, 0) */
        {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 1, {3}},
        {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 1, {3}},
        /* other writers: double quotes, any key order, no trailing comma,
        ** spaces anywhere between tokens, a trailing comma in the tuple */
        {1, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3,)}", 1, {3}},
        {1, "{'shape':(3,),'fortran_order':False,'descr':'<f4'}", 1, {3}},
        {1, "  { 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 1 , 3 , ) , }", 2, {1, 3}},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 1, 1,), }", 3, {3, 1, 1}},
        /* Python 2 longs in a version 1.0 header, as old NumPy wrote */
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }", 1, {3}},
    };
    unsigned char buf[512];
    char err[512];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        kiln_npy a;
        size_t n = image(buf, ok[i].major, ok[i].dict, 0, three,
                         ok[i].rank == 0 ? 4 : 12);
        int rc = read_mem(buf, n, &a, err, sizeof err);
        ck_assert_msg(rc == 0, "%s: %s", ok[i].dict, err);
        ck_assert_int_eq(a.dtype, KILN_F32);
        ck_assert_int_eq(a.rank, ok[i].rank);
        for (int d = 0; d < a.rank; d++)
            ck_assert_int_eq(a.sizes[d], ok[i].sizes[d]);
        ck_assert_uint_eq(a.nbytes, ok[i].rank == 0 ? 4 : 12);
        ck_assert_mem_eq(a.data, three, a.nbytes);
        kiln_npy_free(&a);
    }
    /* the other dtypes, bool, bf16 without byte order */
    unsigned char b[2] = {1, 0};
    kiln_npy a;
    size_t n = image(buf, 1, "{'descr': '|b1', 'fortran_order': False, "
                             "'shape': (2,), }", 0, b, 2);
    ck_assert_int_eq(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_int_eq(a.dtype, KILN_BOOL);
    kiln_npy_free(&a);
    n = image(buf, 1, "{'descr': '|V2', 'fortran_order': False, "
                      "'shape': (1,), }", 0, b, 2);
    ck_assert_int_eq(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_int_eq(a.dtype, KILN_BF16);
    kiln_npy_free(&a);
}
END_TEST

/* Each malformed header fails with the file offset of the deviation. */
START_TEST(rejects_malformed_headers)
{
    static const struct {
        int major;
        const char *dict, *want;
    } bad[] = {
        {1, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (3,), }",
         "byte 44: expected False or True as the value of 'fortran_order'"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2 2), }",
         "byte 63: expected ',' or ')' in 'shape', found '2'"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}",
         "byte 66: unknown key 'x' (the header holds exactly 'descr', "
         "'fortran_order' and 'shape')"},
        /* a key inside a string value is just text */
        {1, "{'descr': \"'shape': (9,)\", 'fortran_order': False, "
            "'shape': (3,)}",
         "byte 20: dtype ''shape': (9,)' is not supported"},
        /* NumPy keeps the last of duplicated keys; a strict reader rejects */
        {1, "{'descr': '|b1', 'descr': '<f4', 'fortran_order': False, "
            "'shape': (3,), }",
         "byte 27: the key 'descr' appears twice"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3), }",
         "byte 62: a 1-dimensional shape needs a trailing comma, as in (3,)"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (03,), }",
         "byte 61: leading zeros are not allowed in '03'"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }",
         "byte 61: expected a non-negative integer in 'shape', found '-'"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (,), }",
         "byte 61: expected a non-negative integer in 'shape', found ','"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': [3], }",
         "byte 60: expected '(' (a tuple) as the value of 'shape', found '['"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,),, }",
         "byte 65: expected a key (a quoted string), found ','"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,) }x",
         "byte 66: expected only spaces and a final newline after the "
         "dictionary, found 'x'"},
        {1, "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }",
         "byte 44: Fortran-order arrays are not supported"},
        {1, "{'descr': '<f4', 'shape': (3,), }",
         "byte 42: the header lacks the key 'fortran_order'"},
        {1, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }",
         "byte 20: dtype '>f4' is not supported"},
        {1, "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (3,), }",
         "byte 23: escape sequences are not supported"},
        {1, "{'descr': '<f4\t', 'fortran_order': False, 'shape': (3,), }",
         "byte 24: byte 0x09 in a string (printable ASCII only)"},
        {1, "{'descr': '<f4, 'fortran_order': False, 'shape': (3,), }",
         "byte 20: dtype '<f4, ' is not supported"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3, 4, "
            "5, 6, 7, 8, 9), }",
         "byte 85: 'shape' has more than 8 dimensions"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': "
            "(99999999999999999999,), }",
         "byte 61: a dimension in 'shape' does not fit 64 bits"},
        /* the "L" of Python 2 longs only in versions 1.0 and 2.0 */
        {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }",
         "byte 64: unexpected 'L' after the integer 3"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3x,), }",
         "byte 62: unexpected 'x' after the integer 3"},
    };
    unsigned char buf[512];
    char err[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kiln_npy a;
        size_t n = image(buf, bad[i].major, bad[i].dict, 0, three, 12);
        ck_assert_msg(read_mem(buf, n, &a, err, sizeof err) != 0, "accepted %s",
                      bad[i].dict);
        ck_assert_ptr_null(a.data);
        ck_assert_msg(strncmp(err, "t.npy: ", 7) == 0 &&
                          strstr(err, bad[i].want) == err + 7,
                      "%s:\n got  '%s'\n want 't.npy: %s'", bad[i].dict, err,
                      bad[i].want);
    }
    /* the padding must be spaces ending in one final newline */
    static const char *const raw[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n\n",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\t\n",
    };
    static const char *const raw_want[] = {
        "t.npy: byte 67: expected only spaces and a final newline after the "
        "dictionary, found the end of the header",
        "t.npy: byte 67: expected only spaces and a final newline after the "
        "dictionary, found byte 0x0a",
        "t.npy: byte 67: expected only spaces and a final newline after the "
        "dictionary, found byte 0x09",
    };
    for (size_t i = 0; i < 3; i++) {
        kiln_npy a;
        size_t n = image(buf, 1, raw[i], 1, three, 12);
        ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
        ck_assert_str_eq(err, raw_want[i]);
    }
}
END_TEST

START_TEST(rejects_bad_prefix_and_data)
{
    unsigned char buf[512];
    char err[512];
    kiln_npy a;
    const char *d3 = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    size_t n = image(buf, 1, d3, 0, three, 12);
    buf[7] = 1; /* version 1.1 */
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.npy: byte 6: unsupported .npy version 1.1 (1.0, "
                          "2.0 and 3.0 are read)");
    buf[6] = 4;
    buf[7] = 0;
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "unsupported .npy version 4.0"));
    buf[0] = 'x';
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "t.npy: byte 0: not an .npy file"));
    ck_assert_int_ne(read_mem((const unsigned char *)"\x93NUMPY", 6, &a, err,
                              sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "byte 0: not an .npy file"));
    /* a header length beyond the file */
    n = image(buf, 1, d3, 0, three, 12);
    buf[8] = 0xff;
    buf[9] = 0x7f;
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.npy: byte 8: the header length field says 32767 "
                          "bytes, the file holds 130 after it");
    /* truncated and overlong data, bool elements */
    n = image(buf, 1, d3, 0, three, 8);
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.npy: shape [3] of f32 needs 12 data bytes, the "
                          "file holds 8 after the header (truncated)");
    n = image(buf, 1, d3, 0, three, 12);
    buf[n++] = 0;
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "holds 13 after the header (trailing "
                                      "bytes)"));
    unsigned char b2[2] = {1, 2};
    n = image(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': "
                      "(2,), }", 0, b2, 2);
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.npy: bool element 1 is not 0 or 1");
}
END_TEST

/* An 80-byte file that declares 8 TiB is refused from its length, before
** anything of that size is allocated; a shape whose byte count overflows
** is refused before any arithmetic wraps. */
START_TEST(declared_size_checked_before_allocation)
{
    unsigned char buf[512];
    char err[512];
    kiln_npy a;
    size_t n = image(buf, 1, "{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (1099511627776, 2), }", 0, "", 0);
    ck_assert_uint_eq(n, 128);
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.npy: shape [1099511627776, 2] of f32 needs "
                          "8796093022208 data bytes, the file holds 0 after "
                          "the header (truncated)");
    n = image(buf, 1, "{'descr': '<f8', 'fortran_order': False, "
                      "'shape': (4294967296, 4294967296), }", 0, "", 0);
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_str_eq(err, "t.npy: shape [4294967296, 4294967296] of f64: the "
                          "element count or byte size overflows 64 bits");
    n = image(buf, 1, "{'descr': '<f8', 'fortran_order': False, "
                      "'shape': (2305843009213693952,), }", 0, "", 0);
    ck_assert_int_ne(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "overflows 64 bits"));
    /* a zero axis makes the array empty whatever the others say */
    n = image(buf, 1, "{'descr': '<f8', 'fortran_order': False, "
                      "'shape': (0, 9223372036854775807), }", 0, "", 0);
    ck_assert_int_eq(read_mem(buf, n, &a, err, sizeof err), 0);
    ck_assert_uint_eq(a.nbytes, 0);
    kiln_npy_free(&a);
    /* kiln_npy_alloc, the path of `kiln run --random --size N` */
    a.dtype = KILN_F32;
    a.rank = 1;
    a.sizes[0] = (int64_t)1 << 62;
    ck_assert_int_ne(kiln_npy_alloc(&a, err, sizeof err), 0);
    ck_assert_str_eq(err, "shape [4611686018427387904] of f32: the element "
                          "count or byte size overflows 64 bits");
    ck_assert_ptr_null(a.data);
}
END_TEST

/* A pipe cannot be measured: the buffer grows with what arrives, so a
** stream that declares 8 TiB and ends early fails as truncated. */
START_TEST(pipe_input)
{
    unsigned char buf[512];
    char err[512];
    kiln_npy a;
    size_t n = image(buf, 1, "{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (1099511627776, 2), }", 0, three, 12);
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    ck_assert_int_eq(write(fd[1], buf, n), (ssize_t)n);
    close(fd[1]);
    FILE *fp = fdopen(fd[0], "rb");
    ck_assert_int_ne(kiln_npy_read_stream(fp, "pipe", &a, err, sizeof err), 0);
    fclose(fp);
    ck_assert_str_eq(err, "pipe: shape [1099511627776, 2] of f32 needs "
                          "8796093022208 data bytes, the file is shorter "
                          "(truncated)");
    /* and a good array through a pipe */
    n = image(buf, 2, "{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (3,), }", 0, three, 12);
    ck_assert_int_eq(pipe(fd), 0);
    ck_assert_int_eq(write(fd[1], buf, n), (ssize_t)n);
    close(fd[1]);
    fp = fdopen(fd[0], "rb");
    ck_assert_int_eq(kiln_npy_read_stream(fp, "pipe", &a, err, sizeof err), 0);
    fclose(fp);
    ck_assert_mem_eq(a.data, three, 12);
    kiln_npy_free(&a);
}
END_TEST

START_TEST(write_round_trip)
{
    char dir[] = "/tmp/kiln-npy-XXXXXX", path[64], err[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a.npy", dir);
    int64_t sz[2] = {1, 3};
    ck_assert_int_eq(kiln_npy_write(path, KILN_BF16, 2, sz, three, err,
                                    sizeof err), 0);
    kiln_npy a;
    ck_assert_int_eq(kiln_npy_read(path, &a, err, sizeof err), 0);
    ck_assert_int_eq(a.dtype, KILN_BF16);
    ck_assert_int_eq(a.rank, 2);
    ck_assert_int_eq(a.sizes[1], 3);
    ck_assert_mem_eq(a.data, three, 6);
    kiln_npy_free(&a);
    int64_t huge[2] = {(int64_t)1 << 62, 8};
    ck_assert_int_ne(kiln_npy_write(path, KILN_F32, 2, huge, three, err,
                                    sizeof err), 0);
    remove(path);
    rmdir(dir);
    ck_assert_int_ne(kiln_npy_read("/nonexistent/a.npy", &a, err, sizeof err), 0);
    ck_assert_str_eq(err, "/nonexistent/a.npy: No such file or directory");
}
END_TEST

Suite *npy_suite(void)
{
    Suite *s = suite_create("npy");
    TCase *tc = tcase_create("reader");
    tcase_add_test(tc, accepts_numpy_headers);
    tcase_add_test(tc, rejects_malformed_headers);
    tcase_add_test(tc, rejects_bad_prefix_and_data);
    tcase_add_test(tc, declared_size_checked_before_allocation);
    tcase_add_test(tc, pipe_input);
    tcase_add_test(tc, write_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

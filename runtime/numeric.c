/*
** numeric.c -- correctly rounded conversions between the Kiln dtypes,
** element load/store, ULP distance and flush-to-zero helpers (numeric.h
** states the cast rules).
**
** Every narrowing conversion goes through one routine, round_pack(), that
** takes an exact value sign * mag * 2^e (mag < 2^64) and rounds it once to a
** binary format with `mant` fraction bits and `ebits` exponent bits, round
** to nearest even, with subnormals and overflow to infinity.  Doubles and
** 64-bit integers both decompose exactly into that form, so f64 -> f16 and
** i64 -> bf16 are rounded once, never through f32 (no double rounding).
**
** No undefined behaviour: float -> int conversions compare against the
** range first (C makes out-of-range conversions UB), shifts stay below 64,
** and signed wrap-around is done in unsigned arithmetic.
*/
#include <math.h>
#include <string.h>

#include "numeric.h"

/* ------------------------------------------------------------ bit access */

static uint64_t f64_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static double f64_from(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static uint32_t f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static float f32_from(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static int bitlen64(uint64_t x) /* x != 0 */
{
    return 64 - __builtin_clzll(x);
}

/* Format descriptions: fraction bits and exponent bits, from the dtype
** table (kiln.h); ebits 0 for a dtype that is not a float. */
typedef struct fmt {
    int mant, ebits;
} fmt;
static const fmt FMTS[KILN_DTYPE_COUNT] = {
#define KILN_X_(id, value, text, size, ebits, mbits) [value] = {mbits, ebits},
    KILN_DTYPE_TABLE(KILN_X_)
#undef KILN_X_
};
#define FMT_F16 FMTS[KILN_F16]
#define FMT_BF16 FMTS[KILN_BF16]
#define FMT_F32 FMTS[KILN_F32]
#define FMT_F64 FMTS[KILN_F64]

/* Round sign * mag * 2^e (exact) to format f, ties to even.  Returns the
** bit pattern. */
static uint64_t round_pack(int sign, uint64_t mag, int e, fmt f)
{
    uint64_t sbit = (uint64_t)(sign != 0) << (f.mant + f.ebits);
    if (mag == 0)
        return sbit;
    int bias = (1 << (f.ebits - 1)) - 1;
    int emin = 1 - bias;
    int lead = e + bitlen64(mag) - 1;             /* exponent of the top bit */
    int q = (lead > emin ? lead : emin) - f.mant; /* exponent of one ulp */
    int shift = q - e;
    uint64_t sig;
    if (shift <= 0) {
        sig = mag << -shift; /* exact; fits in mant + 1 bits */
    } else if (shift > 64) {
        sig = 0; /* below half the smallest step: rounds to zero */
    } else if (shift == 64) {
        sig = mag > (1ull << 63); /* exactly half rounds to even (0) */
    } else {
        uint64_t rem = mag & ((1ull << shift) - 1);
        uint64_t half = 1ull << (shift - 1);
        sig = mag >> shift;
        if (rem > half || (rem == half && (sig & 1u)))
            sig++;
    }
    if (sig >> (f.mant + 1)) { /* rounding carried into a new binade */
        sig >>= 1;
        q++;
    }
    /* value = sig * 2^q.  A normal has sig >= 2^mant and biased exponent
    ** q + mant + bias; adding sig (with its implicit bit) to
    ** (biased - 1) << mant packs both cases, subnormals included. */
    if (sig >= (1ull << f.mant) && q + f.mant + bias >= (1 << f.ebits) - 1)
        return sbit | (((1ull << f.ebits) - 1) << f.mant); /* overflow: inf */
    return sbit | ((((uint64_t)(q + f.mant + bias - 1)) << f.mant) + sig);
}

/* A NaN in format f keeping the sign and the top payload bits of a double
** NaN, quiet bit set. */
static uint64_t nan_pack(uint64_t dbits, fmt f)
{
    uint64_t sign = dbits >> 63;
    uint64_t payload = (dbits & ((1ull << 52) - 1)) >> (52 - f.mant);
    payload |= 1ull << (f.mant - 1);
    return (sign << (f.mant + f.ebits)) |
           (((1ull << f.ebits) - 1) << f.mant) | payload;
}

static uint64_t round_f64(double d, fmt f)
{
    uint64_t b = f64_bits(d);
    int sign = (int)(b >> 63);
    int ex = (int)((b >> 52) & 0x7ff);
    uint64_t fr = b & ((1ull << 52) - 1);
    if (ex == 0x7ff) {
        if (fr != 0)
            return nan_pack(b, f);
        return ((uint64_t)sign << (f.mant + f.ebits)) |
               (((1ull << f.ebits) - 1) << f.mant);
    }
    if (ex == 0)
        return round_pack(sign, fr, -1074, f);
    return round_pack(sign, fr | (1ull << 52), ex - 1075, f);
}

static uint64_t round_i64(int64_t v, fmt f)
{
    uint64_t mag = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    return round_pack(v < 0, mag, 0, f);
}

/* ------------------------------------------------------ scalar conversions */

double kiln__f16_to_f64(uint16_t h)
{
    int sign = h >> 15;
    int ex = (h >> 10) & 0x1f;
    unsigned fr = h & 0x3ffu;
    double v;
    if (ex == 0x1f) {
        if (fr != 0) /* NaN: keep sign and payload (quiet bit is bit 9) */
            return f64_from(((uint64_t)sign << 63) | (0x7ffull << 52) |
                            ((uint64_t)fr << 42));
        v = INFINITY;
    } else if (ex == 0) {
        v = (double)fr * 0x1p-24;
    } else {
        v = ldexp((double)(fr | 0x400u), ex - 25);
    }
    return sign ? -v : v;
}

double kiln__bf16_to_f64(uint16_t b) { return (double)kiln__bf16_to_f32(b); }

float kiln__f16_to_f32(uint16_t h) { return (float)kiln__f16_to_f64(h); }

float kiln__bf16_to_f32(uint16_t b) { return f32_from((uint32_t)b << 16); }

uint16_t kiln__f64_to_f16(double d) { return (uint16_t)round_f64(d, FMT_F16); }

uint16_t kiln__f64_to_bf16(double d) { return (uint16_t)round_f64(d, FMT_BF16); }

float kiln__f64_to_f32(double d) { return f32_from((uint32_t)round_f64(d, FMT_F32)); }

uint16_t kiln__f32_to_f16(float f) { return kiln__f64_to_f16((double)f); }

uint16_t kiln__f32_to_bf16(float f)
{
    uint32_t b = f32_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) /* NaN: truncate payload, quiet */
        return (uint16_t)((b >> 16) | 0x40u);
    return kiln__f64_to_bf16((double)f); /* f32 -> f64 is exact */
}

uint16_t kiln__i64_to_f16(int64_t v) { return (uint16_t)round_i64(v, FMT_F16); }

uint16_t kiln__i64_to_bf16(int64_t v) { return (uint16_t)round_i64(v, FMT_BF16); }

float kiln__i64_to_f32(int64_t v) { return f32_from((uint32_t)round_i64(v, FMT_F32)); }

double kiln__i64_to_f64(int64_t v) { return f64_from(round_i64(v, FMT_F64)); }

int32_t kiln__f64_to_i32(double d)
{
    if (d != d)
        return 0;
    if (!(d > -2147483649.0)) /* trunc(d) < INT32_MIN */
        return INT32_MIN;
    if (!(d < 2147483648.0)) /* trunc(d) > INT32_MAX */
        return INT32_MAX;
    return (int32_t)d; /* in range: truncation is defined */
}

int64_t kiln__f64_to_i64(double d)
{
    if (d != d)
        return 0;
    if (d < -9223372036854775808.0) /* -2^63 is exact; below it saturates */
        return INT64_MIN;
    if (d >= 9223372036854775808.0) /* 2^63 */
        return INT64_MAX;
    return (int64_t)d;
}

/* --------------------------------------------------- element load / store */

int kiln__dtype_is_float(kiln_dtype t)
{
    return (unsigned)t < KILN_DTYPE_COUNT && FMTS[t].ebits != 0;
}

uint64_t kiln__load_bits(kiln_dtype t, const void *p)
{
    switch (t) {
    case KILN_BOOL: {
        uint8_t v;
        memcpy(&v, p, 1);
        return v;
    }
    case KILN_F16:
    case KILN_BF16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case KILN_I32:
    case KILN_F32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case KILN_I64:
    case KILN_F64: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    default:
        return 0;
    }
}

void kiln__store_bits(kiln_dtype t, void *p, uint64_t bits)
{
    switch (t) {
    case KILN_BOOL: {
        uint8_t v = (uint8_t)bits;
        memcpy(p, &v, 1);
        break;
    }
    case KILN_F16:
    case KILN_BF16: {
        uint16_t v = (uint16_t)bits;
        memcpy(p, &v, 2);
        break;
    }
    case KILN_I32:
    case KILN_F32: {
        uint32_t v = (uint32_t)bits;
        memcpy(p, &v, 4);
        break;
    }
    case KILN_I64:
    case KILN_F64:
        memcpy(p, &bits, 8);
        break;
    default:
        break;
    }
}

double kiln__bits_to_f64(kiln_dtype t, uint64_t bits)
{
    switch (t) {
    case KILN_F16:
        return kiln__f16_to_f64((uint16_t)bits);
    case KILN_BF16:
        return kiln__bf16_to_f64((uint16_t)bits);
    case KILN_F32:
        return (double)f32_from((uint32_t)bits);
    case KILN_F64:
        return f64_from(bits);
    case KILN_BOOL:
        return (bits & 0xffu) != 0 ? 1.0 : 0.0;
    case KILN_I32:
        return (double)(int32_t)(uint32_t)bits;
    case KILN_I64:
        return kiln__i64_to_f64((int64_t)bits);
    default:
        return 0.0;
    }
}

static int64_t bits_to_i64(kiln_dtype t, uint64_t bits)
{
    switch (t) {
    case KILN_BOOL:
        return (bits & 0xffu) != 0;
    case KILN_I32:
        return (int32_t)(uint32_t)bits;
    case KILN_I64:
        return (int64_t)bits;
    default:
        return kiln__f64_to_i64(kiln__bits_to_f64(t, bits));
    }
}

double kiln__load_f64(kiln_dtype t, const void *p)
{
    return kiln__bits_to_f64(t, kiln__load_bits(t, p));
}

int64_t kiln__load_i64(kiln_dtype t, const void *p)
{
    return bits_to_i64(t, kiln__load_bits(t, p));
}

uint64_t kiln__bits_from_f64(kiln_dtype t, double v)
{
    switch (t) {
    case KILN_BOOL:
        return v != 0; /* NaN != 0 */
    case KILN_I32:
        return (uint32_t)kiln__f64_to_i32(v);
    case KILN_I64:
        return (uint64_t)kiln__f64_to_i64(v);
    case KILN_F16:
        return round_f64(v, FMT_F16);
    case KILN_BF16:
        return round_f64(v, FMT_BF16);
    case KILN_F32:
        return round_f64(v, FMT_F32);
    case KILN_F64:
        return f64_bits(v);
    default:
        return 0;
    }
}

uint64_t kiln__bits_from_i64(kiln_dtype t, int64_t v)
{
    switch (t) {
    case KILN_BOOL:
        return v != 0;
    case KILN_I32:
        return (uint32_t)(uint64_t)v; /* wrap */
    case KILN_I64:
        return (uint64_t)v;
    case KILN_F16:
        return round_i64(v, FMT_F16);
    case KILN_BF16:
        return round_i64(v, FMT_BF16);
    case KILN_F32:
        return round_i64(v, FMT_F32);
    case KILN_F64:
        return round_i64(v, FMT_F64);
    default:
        return 0;
    }
}

void kiln__convert(kiln_dtype to, void *dst, kiln_dtype from, const void *src,
                   size_t n)
{
    size_t ss = kiln_dtype_size(from), ds = kiln_dtype_size(to);
    const unsigned char *s = src;
    unsigned char *d = dst;
    if (ss == 0 || ds == 0)
        return;
    if (from == to) {
        if (dst != src)
            memmove(dst, src, n * ss);
        return;
    }
    /* Common exact fast paths. */
    if (from == KILN_F32 && to == KILN_F64) {
        for (size_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, s + 4 * i, 4);
            double v = (double)f;
            memcpy(d + 8 * i, &v, 8);
        }
        return;
    }
    if (kiln__dtype_is_float(from)) {
        for (size_t i = 0; i < n; i++) {
            double v = kiln__load_f64(from, s + ss * i);
            kiln__store_bits(to, d + ds * i, kiln__bits_from_f64(to, v));
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            int64_t v = kiln__load_i64(from, s + ss * i);
            kiln__store_bits(to, d + ds * i, kiln__bits_from_i64(to, v));
        }
    }
}

/* ------------------------------------------------------------ ULP and FTZ */

static int float_fmt(kiln_dtype t, fmt *f)
{
    if ((unsigned)t >= KILN_DTYPE_COUNT || FMTS[t].ebits == 0)
        return 0;
    *f = FMTS[t];
    return 1;
}

static uint64_t mag_mask(fmt f) { return (1ull << (f.mant + f.ebits)) - 1; }
static uint64_t inf_bits(fmt f) { return ((1ull << f.ebits) - 1) << f.mant; }

int kiln__bits_isnan(kiln_dtype t, uint64_t bits)
{
    fmt f;
    return float_fmt(t, &f) && (bits & mag_mask(f)) > inf_bits(f);
}

int kiln__bits_isinf(kiln_dtype t, uint64_t bits)
{
    fmt f;
    return float_fmt(t, &f) && (bits & mag_mask(f)) == inf_bits(f);
}

int kiln__bits_is_subnormal(kiln_dtype t, uint64_t bits)
{
    fmt f;
    if (!float_fmt(t, &f))
        return 0;
    uint64_t m = bits & mag_mask(f);
    return m != 0 && m < (1ull << f.mant);
}

uint64_t kiln__bits_ftz(kiln_dtype t, uint64_t bits)
{
    fmt f;
    if (!kiln__bits_is_subnormal(t, bits) || !float_fmt(t, &f))
        return bits;
    return bits & ~mag_mask(f); /* keep only the sign */
}

uint64_t kiln__ulp_distance(kiln_dtype t, uint64_t a, uint64_t b)
{
    fmt f;
    if (!float_fmt(t, &f))
        return a == b ? 0 : UINT64_MAX;
    int an = kiln__bits_isnan(t, a), bn = kiln__bits_isnan(t, b);
    if (an || bn)
        return an && bn ? 0 : UINT64_MAX;
    uint64_t mm = mag_mask(f);
    uint64_t am = a & mm, bm = b & mm;
    int as = am != 0 && ((a >> (f.mant + f.ebits)) & 1u);
    int bs = bm != 0 && ((b >> (f.mant + f.ebits)) & 1u);
    if (as == bs)
        return am > bm ? am - bm : bm - am;
    return am + bm; /* opposite signs: walk through zero */
}

double kiln__ulp_size(kiln_dtype t, uint64_t bits)
{
    fmt f;
    if (!float_fmt(t, &f) || kiln__bits_isnan(t, bits) ||
        kiln__bits_isinf(t, bits))
        return NAN;
    uint64_t m = bits & mag_mask(f);
    int bias = (1 << (f.ebits - 1)) - 1;
    int ex = (int)(m >> f.mant);
    if (ex == 0)
        ex = 1; /* subnormal spacing */
    return ldexp(1.0, ex - bias - f.mant);
}

/*
** numeric.h -- exact numeric helpers shared by the backends, the runtime
** and the conformance runner (never installed).
**
** Everything here is a pure function of its arguments: no state, no
** allocation, no dependence on the floating-point environment beyond the
** IEEE 754 default (round to nearest even, no flush to zero).
**
** The cast rules (docs/fusion-format.md, "4. Cast semantics"):
**   - float -> narrower float, int -> float: round to nearest, ties to even,
**     correctly rounded from the exact source value (one rounding: f64 ->
**     f16/bf16 and i64 -> f16/bf16/f32/f64 never go through f32).  Overflow
**     gives a same-signed infinity.  NaN stays NaN (sign kept, payload
**     truncated to its top bits, quiet bit set).
**   - f16/bf16 -> f32/f64, f32 -> f64: exact.
**   - float -> int: truncate toward zero, saturate to the target range,
**     NaN -> 0 (PTX cvt.rzi.sat).
**   - int -> int: two's complement wrap (i64 -> i32 keeps the low 32 bits).
**   - anything -> bool: value != 0 (NaN -> true); bool -> x: 0 or 1.  A bool
**     byte other than 0/1 reads as true.
**
** Values are passed around as "bits": the element's bit pattern in the low
** bits of a uint64_t (0x3c00 for f16 1.0, 0xffffffff for i32 -1).
*/
#ifndef KILN_NUMERIC_H
#define KILN_NUMERIC_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

/* ------------------------------------------------------ scalar conversions */

/* Exact widening decodes. */
double kiln__f16_to_f64(uint16_t h);
double kiln__bf16_to_f64(uint16_t b);
float kiln__f16_to_f32(uint16_t h);
float kiln__bf16_to_f32(uint16_t b);

/* Correctly rounded narrowing (round to nearest even, one rounding). */
uint16_t kiln__f64_to_f16(double d);
uint16_t kiln__f64_to_bf16(double d);
float kiln__f64_to_f32(double d);
uint16_t kiln__f32_to_f16(float f);
uint16_t kiln__f32_to_bf16(float f);

/* Correctly rounded integer -> float. */
uint16_t kiln__i64_to_f16(int64_t v);
uint16_t kiln__i64_to_bf16(int64_t v);
float kiln__i64_to_f32(int64_t v);
double kiln__i64_to_f64(int64_t v);

/* Truncating, saturating float -> int; NaN -> 0.  Never UB. */
int32_t kiln__f64_to_i32(double d);
int64_t kiln__f64_to_i64(double d);

/* --------------------------------------------------- element load / store */

/* 1 for f16, bf16, f32, f64; 0 for bool, i32, i64. */
int kiln__dtype_is_float(kiln_dtype t);

/* Read one element at p.  bits: the raw pattern zero-extended.  f64: the
** value as a double (exact for every float dtype, bool and i32; i64 is
** rounded to nearest even).  i64: the value as an integer (floats go through
** the float -> int rule above). */
uint64_t kiln__load_bits(kiln_dtype t, const void *p);
double kiln__load_f64(kiln_dtype t, const void *p);
int64_t kiln__load_i64(kiln_dtype t, const void *p);

/* Write one element at p. */
void kiln__store_bits(kiln_dtype t, void *p, uint64_t bits);

/* Convert n contiguous elements of dtype `from` at src into dtype `to` at
** dst by the cast rules above.  src and dst must not overlap unless they
** are the same pointer and the dtypes have the same size. */
void kiln__convert(kiln_dtype to, void *dst, kiln_dtype from, const void *src,
                   size_t n);

/* The bit pattern of the value `v` (a double) cast to dtype t. */
uint64_t kiln__bits_from_f64(kiln_dtype t, double v);
/* The bit pattern of the integer `v` cast to dtype t. */
uint64_t kiln__bits_from_i64(kiln_dtype t, int64_t v);
/* The value of a float-dtype bit pattern as a double (exact). */
double kiln__bits_to_f64(kiln_dtype t, uint64_t bits);

/* ------------------------------------------------------------ ULP and FTZ */

/* Classification of a float-dtype bit pattern. */
int kiln__bits_isnan(kiln_dtype t, uint64_t bits);
int kiln__bits_isinf(kiln_dtype t, uint64_t bits);
/* 1 when the pattern is a nonzero subnormal (denormal). */
int kiln__bits_is_subnormal(kiln_dtype t, uint64_t bits);
/* Flush to zero: a subnormal becomes the zero of the same sign; anything
** else is returned unchanged. */
uint64_t kiln__bits_ftz(kiln_dtype t, uint64_t bits);

/* Distance in units in the last place between two float-dtype patterns:
** the number of representable values stepped over when walking from a to
** b (+0 and -0 count as the same point, so dist(-0,+0) = 0 and
** dist(-min_subnormal, +min_subnormal) = 2; the largest finite and the
** infinity of the same sign are 1 apart).  Both NaN: 0.  Exactly one NaN:
** UINT64_MAX.  For a non-float dtype: 0 if the patterns are equal, else
** UINT64_MAX. */
uint64_t kiln__ulp_distance(kiln_dtype t, uint64_t a, uint64_t b);

/* The size of one ulp at the (finite) value of pattern `bits`: the gap to
** the next representable value away from zero (the subnormal spacing for
** subnormals and zero; for the largest finite, the gap below it).
** Infinity or NaN gives NaN. */
double kiln__ulp_size(kiln_dtype t, uint64_t bits);

#endif /* KILN_NUMERIC_H */

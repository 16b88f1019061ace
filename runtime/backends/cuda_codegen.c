/*
** cuda_codegen.c -- segment IR -> CUDA C++ (cuda_codegen.h), the
** bit-exact simplification passes, and the option -> NVRTC flag mapping.
**
** Shape of every generated module (docs/backends.md, "CUDA backend"):
**   preamble (helpers, accumulators) | typedef of the index type `ix`
**   (unsigned 32-bit unless seg->index64) | struct KArgs | kiln_pre()
**   (reductions: the producers over D, returning the REDUCE operand) |
**   kiln_post() (everything after the REDUCE / MATMUL, or the whole
**   pointwise body: pure, takes loaded values, returns output values) |
**   kiln_finalize() (reductions/matmul: loads post inputs and stores the
**   outputs at one kept index) | the kernels kiln_main (and kiln_finish).
**
** Kernel schemes:
**   POINTWISE      grid-stride loop over the (host-collapsed) domain;
**                  a vector path (16-byte accesses, VEC elements per
**                  thread) when every view has KILN_TRAIT_ALIGN16, taken at
**                  run time only when the host verified alignment, inner
**                  strides 0/1 and divisibility; a scalar tail.
**   REDUCE_INNER   innermost axis reduced: a block (or a warp) per kept
**                  row, warp shuffles then shared memory, optional split of
**                  the row over gridDim.y with a second pass kiln_finish.
**   REDUCE_OUTER   innermost axis kept: 32 columns x 8 row-lanes per block
**                  (optionally VEC columns per thread), a fixed-order merge
**                  of the 8 lanes, the same optional split + finish.
**   MATMUL         64x64 tiles through shared memory, K in steps of 16,
**                  operands widened to f64 and accumulated with f64 FMA
**                  (products exact, far inside the coord.md bound), rounded
**                  once to f32, then the epilogue at (m, n).
** Determinism: launch geometry depends only on sizes and the device, and
** every merge happens in a fixed order: the same inputs give the same bits.
** No float atomics anywhere.
**
** Simplification passes (each switched off by ko->simplify_off, bit i =
** vocabulary word i: cse, fold, identity, index, strength) only rewrite
** the working copy of the nodes or the addressing, and are bit-exact:
** fold evaluates on the host only where the host's IEEE arithmetic is the
** device's (integers; floats without fast_math, no NaN involved);
** identity drops x*1, x/1, x+(-0), x-0 (floats only without fast_math, where
** no flush-to-zero is involved; a NaN operand may then keep its payload),
** integer/boolean identities, where() with a constant or equal branches;
** strength turns x*2 into x+x and x/2^k into x*2^-k (both exact);
** cse shares structurally equal nodes; index addresses views with the
** CONTIG trait by the linear index instead of strides.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda_codegen.h"

/* The preamble every kernel starts with: typed load/store helpers,
** correctly rounded f16/bf16 conversions, saturating float->int casts,
** fixed-rounding arithmetic, NaN-propagating max/min, and the reduction
** accumulators.  Kept warning-free under NVRTC for sm_80 and sm_90. */
static const char kiln_cuda_preamble[] =
    "// ---- kiln CUDA preamble (cuda_codegen.c): helpers shared by every kernel.\n"
    "// Values: bool, int, long long, float, double; f16/bf16 are raw 16-bit\n"
    "// patterns (unsigned short) converted explicitly.  Arithmetic uses\n"
    "// fixed-rounding intrinsics so contraction is decided by the IR alone.\n"
    "typedef unsigned short kh16;\n"
    "// -- loads/stores (bool is stored as one byte 0/1)\n"
    "template <class T> __device__ __forceinline__ T kld(const T *p) { return *p; }\n"
    "__device__ __forceinline__ bool kld(const unsigned char *p) { return *p != 0; }\n"
    "template <class T> __device__ __forceinline__ T kcv(T x) { return x; }\n"
    "__device__ __forceinline__ bool kcv(unsigned char x) { return x != 0; }\n"
    "template <class T> __device__ __forceinline__ T kst(T x) { return x; }\n"
    "__device__ __forceinline__ unsigned char kst(bool x) { return x ? 1 : 0; }\n"
    "template <class T, int N>\n"
    "struct alignas((sizeof(T) * N) < 16 ? (sizeof(T) * N) : 16) KVec { T v[N]; };\n"
    "template <class T, int N>\n"
    "__device__ __forceinline__ void kldv(KVec<T, N> &r, const T *p,\n"
    "                                     unsigned long long off,\n"
    "                                     unsigned long long inner)\n"
    "{\n"
    "    if (inner == 0) { // broadcast along the innermost axis\n"
    "        const T s = p[off];\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < N; ++e) r.v[e] = s;\n"
    "    } else {\n"
    "        r = *reinterpret_cast<const KVec<T, N> *>(p + off);\n"
    "    }\n"
    "}\n"
    "template <class T, int N>\n"
    "__device__ __forceinline__ void kstv(T *p, unsigned long long off,\n"
    "                                     const KVec<T, N> &r)\n"
    "{\n"
    "    *reinterpret_cast<KVec<T, N> *>(p + off) = r;\n"
    "}\n"
    "// -- f16 / bf16 conversions, all correctly rounded (no double rounding)\n"
    "__device__ __forceinline__ float kh2f(kh16 x) { float r; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(r) : \"h\"(x)); return r; }\n"
    "__device__ __forceinline__ kh16 kf2h(float x) { kh16 r; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x)); return r; }\n"
    "__device__ __forceinline__ kh16 kd2h(double x) { kh16 r; asm(\"cvt.rn.f16.f64 %0, %1;\" : \"=h\"(r) : \"d\"(x)); return r; }\n"
    "__device__ __forceinline__ kh16 kll2h(long long x) { kh16 r; asm(\"cvt.rn.f16.s64 %0, %1;\" : \"=h\"(r) : \"l\"(x)); return r; }\n"
    "__device__ __forceinline__ float kb2f(kh16 x) { return __uint_as_float(((unsigned)x) << 16); }\n"
    "__device__ __forceinline__ kh16 kf2b(float x)\n"
    "{ // round to nearest even on the bit pattern; NaN stays a quiet NaN\n"
    "    const unsigned u = __float_as_uint(x);\n"
    "    if ((u & 0x7fffffffu) > 0x7f800000u) return (kh16)((u >> 16) | 0x40u);\n"
    "    return (kh16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "// Round-to-odd narrowing: f32 keeps >= 2 more bits than bf16/f16, so a\n"
    "// following round-to-nearest gives the correctly rounded result.\n"
    "__device__ __forceinline__ float kd2f_odd(double x)\n"
    "{\n"
    "    float t = __double2float_rz(x);\n"
    "    if ((double)t != x) t = __uint_as_float(__float_as_uint(t) | 1u);\n"
    "    return t;\n"
    "}\n"
    "__device__ __forceinline__ float kll2f_odd(long long x)\n"
    "{\n"
    "    float t = __ll2float_rz(x);\n"
    "    if (__float2ll_rz(t) != x) t = __uint_as_float(__float_as_uint(t) | 1u);\n"
    "    return t;\n"
    "}\n"
    "__device__ __forceinline__ kh16 kd2b(double x) { return kf2b(kd2f_odd(x)); }\n"
    "__device__ __forceinline__ kh16 kll2b(long long x) { return kf2b(kll2f_odd(x)); }\n"
    "// float -> integer: truncate toward zero, saturate, NaN -> 0 (written out\n"
    "// explicitly; it is what PTX cvt.rzi.sat does).\n"
    "__device__ __forceinline__ int ksat_i32(float x)\n"
    "{\n"
    "    if (x != x) return 0;\n"
    "    if (x >= 2147483648.0f) return 2147483647;\n"
    "    if (x <= -2147483648.0f) return -2147483647 - 1;\n"
    "    return (int)x;\n"
    "}\n"
    "__device__ __forceinline__ int ksat_i32(double x)\n"
    "{\n"
    "    if (x != x) return 0;\n"
    "    if (x >= 2147483648.0) return 2147483647;\n"
    "    if (x <= -2147483649.0) return -2147483647 - 1;\n"
    "    return (int)x;\n"
    "}\n"
    "__device__ __forceinline__ long long ksat_i64(float x)\n"
    "{\n"
    "    if (x != x) return 0;\n"
    "    if (x >= 9223372036854775808.0f) return 9223372036854775807LL;\n"
    "    if (x <= -9223372036854775808.0f) return -9223372036854775807LL - 1;\n"
    "    return (long long)x;\n"
    "}\n"
    "__device__ __forceinline__ long long ksat_i64(double x)\n"
    "{\n"
    "    if (x != x) return 0;\n"
    "    if (x >= 9223372036854775808.0) return 9223372036854775807LL;\n"
    "    if (x <= -9223372036854775808.0) return -9223372036854775807LL - 1;\n"
    "    return (long long)x;\n"
    "}\n"
    "// -- arithmetic.  Integers wrap (two's complement through unsigned).\n"
    "__device__ __forceinline__ int kadd(int a, int b) { return (int)((unsigned)a + (unsigned)b); }\n"
    "__device__ __forceinline__ long long kadd(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }\n"
    "__device__ __forceinline__ float kadd(float a, float b) { return __fadd_rn(a, b); }\n"
    "__device__ __forceinline__ double kadd(double a, double b) { return __dadd_rn(a, b); }\n"
    "__device__ __forceinline__ int ksub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }\n"
    "__device__ __forceinline__ long long ksub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }\n"
    "__device__ __forceinline__ float ksub(float a, float b) { return __fsub_rn(a, b); }\n"
    "__device__ __forceinline__ double ksub(double a, double b) { return __dsub_rn(a, b); }\n"
    "__device__ __forceinline__ int kmul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }\n"
    "__device__ __forceinline__ long long kmul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }\n"
    "__device__ __forceinline__ float kmul(float a, float b) { return __fmul_rn(a, b); }\n"
    "__device__ __forceinline__ double kmul(double a, double b) { return __dmul_rn(a, b); }\n"
    "__device__ __forceinline__ float kdiv(float a, float b) { return __fdiv_rn(a, b); }\n"
    "__device__ __forceinline__ double kdiv(double a, double b) { return __ddiv_rn(a, b); }\n"
    "__device__ __forceinline__ float kfma(float a, float b, float c) { return __fmaf_rn(a, b, c); }\n"
    "__device__ __forceinline__ double kfma(double a, double b, double c) { return __fma_rn(a, b, c); }\n"
    "__device__ __forceinline__ float kpow(float a, float b) { return powf(a, b); }\n"
    "__device__ __forceinline__ double kpow(double a, double b) { return pow(a, b); }\n"
    "// neg/abs are sign-bit operations: exact for every input, NaN included.\n"
    "__device__ __forceinline__ int kneg(int a) { return (int)(0u - (unsigned)a); }\n"
    "__device__ __forceinline__ long long kneg(long long a) { return (long long)(0ull - (unsigned long long)a); }\n"
    "__device__ __forceinline__ float kneg(float a) { return __uint_as_float(__float_as_uint(a) ^ 0x80000000u); }\n"
    "__device__ __forceinline__ double kneg(double a) { return __longlong_as_double(__double_as_longlong(a) ^ (long long)0x8000000000000000ull); }\n"
    "__device__ __forceinline__ int kabs(int a) { return a < 0 ? kneg(a) : a; }\n"
    "__device__ __forceinline__ long long kabs(long long a) { return a < 0 ? kneg(a) : a; }\n"
    "__device__ __forceinline__ float kabs(float a) { return __uint_as_float(__float_as_uint(a) & 0x7fffffffu); }\n"
    "__device__ __forceinline__ double kabs(double a) { return __longlong_as_double(__double_as_longlong(a) & 0x7fffffffffffffffLL); }\n"
    "__device__ __forceinline__ float kexp(float a) { return expf(a); }\n"
    "__device__ __forceinline__ double kexp(double a) { return exp(a); }\n"
    "__device__ __forceinline__ float klog(float a) { return logf(a); }\n"
    "__device__ __forceinline__ double klog(double a) { return log(a); }\n"
    "__device__ __forceinline__ float ksqrt(float a) { return __fsqrt_rn(a); }\n"
    "__device__ __forceinline__ double ksqrt(double a) { return __dsqrt_rn(a); }\n"
    "__device__ __forceinline__ float krsqrt(float a) { return rsqrtf(a); }\n"
    "__device__ __forceinline__ double krsqrt(double a) { return rsqrt(a); }\n"
    "__device__ __forceinline__ float krcp(float a) { return __frcp_rn(a); }\n"
    "__device__ __forceinline__ double krcp(double a) { return __drcp_rn(a); }\n"
    "__device__ __forceinline__ float ksin(float a) { return sinf(a); }\n"
    "__device__ __forceinline__ double ksin(double a) { return sin(a); }\n"
    "__device__ __forceinline__ float kcos(float a) { return cosf(a); }\n"
    "__device__ __forceinline__ double kcos(double a) { return cos(a); }\n"
    "__device__ __forceinline__ float ktanh(float a) { return tanhf(a); }\n"
    "__device__ __forceinline__ double ktanh(double a) { return tanh(a); }\n"
    "__device__ __forceinline__ float kerf(float a) { return erff(a); }\n"
    "__device__ __forceinline__ double kerf(double a) { return erf(a); }\n"
    "__device__ __forceinline__ float kfloor(float a) { return floorf(a); }\n"
    "__device__ __forceinline__ double kfloor(double a) { return floor(a); }\n"
    "__device__ __forceinline__ float kceil(float a) { return ceilf(a); }\n"
    "__device__ __forceinline__ double kceil(double a) { return ceil(a); }\n"
    "// sigmoid: e/(1+e) with e = exp(x) for x < 0 (keeps tiny results), else\n"
    "// 1/(1+exp(-x)).\n"
    "__device__ __forceinline__ float ksigmoid(float a)\n"
    "{\n"
    "    if (a < 0.0f) { const float e = expf(a); return __fdiv_rn(e, __fadd_rn(1.0f, e)); }\n"
    "    return __frcp_rn(__fadd_rn(1.0f, expf(kneg(a))));\n"
    "}\n"
    "__device__ __forceinline__ double ksigmoid(double a)\n"
    "{\n"
    "    if (a < 0.0) { const double e = exp(a); return __ddiv_rn(e, __dadd_rn(1.0, e)); }\n"
    "    return __drcp_rn(__dadd_rn(1.0, exp(kneg(a))));\n"
    "}\n"
    "// relu: x > 0 ? x : 0, NaN -> NaN.\n"
    "__device__ __forceinline__ int krelu(int a) { return a > 0 ? a : 0; }\n"
    "__device__ __forceinline__ long long krelu(long long a) { return a > 0 ? a : 0; }\n"
    "__device__ __forceinline__ float krelu(float a) { return (a > 0.0f || a != a) ? a : 0.0f; }\n"
    "__device__ __forceinline__ double krelu(double a) { return (a > 0.0 || a != a) ? a : 0.0; }\n"
    "// maximum/minimum: NaN if either operand is NaN.\n"
    "template <class T> __device__ __forceinline__ T kmax(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }\n"
    "template <class T> __device__ __forceinline__ T kmin(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }\n"
    "template <class T> __device__ __forceinline__ bool keq(T a, T b) { return a == b; }\n"
    "template <class T> __device__ __forceinline__ bool kne(T a, T b) { return a != b; }\n"
    "template <class T> __device__ __forceinline__ bool klt(T a, T b) { return a < b; }\n"
    "template <class T> __device__ __forceinline__ bool kle(T a, T b) { return a <= b; }\n"
    "template <class T> __device__ __forceinline__ bool kgt(T a, T b) { return a > b; }\n"
    "template <class T> __device__ __forceinline__ bool kge(T a, T b) { return a >= b; }\n"
    "template <class T> __device__ __forceinline__ T kwhere(bool c, T a, T b) { return c ? a : b; }\n"
    "// -- reduction accumulators (deterministic merge order is the caller's).\n"
    "// f32 sums accumulate in f64 (error far below the coord.md bound); f64\n"
    "// sums carry a compensation term merged with TwoSum.\n"
    "struct KAccSumF32 {\n"
    "    double s;\n"
    "    __device__ __forceinline__ void init() { s = -0.0; } // -0 + x == x\n"
    "    __device__ __forceinline__ void empty() { s = 0.0; }\n"
    "    __device__ __forceinline__ void add(float x) { s = __dadd_rn(s, (double)x); }\n"
    "    __device__ __forceinline__ void merge(const KAccSumF32 &o) { s = __dadd_rn(s, o.s); }\n"
    "    __device__ __forceinline__ void shfl(int d) { KAccSumF32 o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }\n"
    "    __device__ __forceinline__ float result() const { return __double2float_rn(s); }\n"
    "};\n"
    "struct KAccSumF64 {\n"
    "    double s, c;\n"
    "    __device__ __forceinline__ void init() { s = -0.0; c = 0.0; }\n"
    "    __device__ __forceinline__ void empty() { s = 0.0; c = 0.0; }\n"
    "    __device__ __forceinline__ void two(double b, double cb)\n"
    "    {\n"
    "        const double t = __dadd_rn(s, b);\n"
    "        const double bb = __dsub_rn(t, s);\n"
    "        const double e = __dadd_rn(__dsub_rn(s, __dsub_rn(t, bb)), __dsub_rn(b, bb));\n"
    "        s = t;\n"
    "        c = __dadd_rn(c, __dadd_rn(cb, e));\n"
    "    }\n"
    "    __device__ __forceinline__ void add(double x) { two(x, 0.0); }\n"
    "    __device__ __forceinline__ void merge(const KAccSumF64 &o) { two(o.s, o.c); }\n"
    "    __device__ __forceinline__ void shfl(int d)\n"
    "    {\n"
    "        KAccSumF64 o;\n"
    "        o.s = __shfl_down_sync(0xffffffffu, s, d);\n"
    "        o.c = __shfl_down_sync(0xffffffffu, c, d);\n"
    "        merge(o);\n"
    "    }\n"
    "    __device__ __forceinline__ double result() const\n"
    "    { // an overflowed or NaN running sum makes c meaningless\n"
    "        if (s - s != 0.0 || c == 0.0) return s; // keeps the sign of zero sums\n"
    "        return __dadd_rn(s, c);\n"
    "    }\n"
    "};\n"
    "struct KAccSumI32 {\n"
    "    unsigned s;\n"
    "    __device__ __forceinline__ void init() { s = 0u; }\n"
    "    __device__ __forceinline__ void empty() { init(); }\n"
    "    __device__ __forceinline__ void add(int x) { s += (unsigned)x; }\n"
    "    __device__ __forceinline__ void merge(const KAccSumI32 &o) { s += o.s; }\n"
    "    __device__ __forceinline__ void shfl(int d) { KAccSumI32 o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }\n"
    "    __device__ __forceinline__ int result() const { return (int)s; }\n"
    "};\n"
    "struct KAccSumI64 {\n"
    "    unsigned long long s;\n"
    "    __device__ __forceinline__ void init() { s = 0ull; }\n"
    "    __device__ __forceinline__ void empty() { init(); }\n"
    "    __device__ __forceinline__ void add(long long x) { s += (unsigned long long)x; }\n"
    "    __device__ __forceinline__ void merge(const KAccSumI64 &o) { s += o.s; }\n"
    "    __device__ __forceinline__ void shfl(int d) { KAccSumI64 o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }\n"
    "    __device__ __forceinline__ long long result() const { return (long long)s; }\n"
    "};\n"
    "template <class T> __device__ __forceinline__ T klowest();\n"
    "template <> __device__ __forceinline__ int klowest<int>() { return -2147483647 - 1; }\n"
    "template <> __device__ __forceinline__ long long klowest<long long>() { return -9223372036854775807LL - 1; }\n"
    "template <> __device__ __forceinline__ float klowest<float>() { return __uint_as_float(0xff800000u); }\n"
    "template <> __device__ __forceinline__ double klowest<double>() { return __longlong_as_double((long long)0xfff0000000000000ull); }\n"
    "template <class T> __device__ __forceinline__ T khighest();\n"
    "template <> __device__ __forceinline__ int khighest<int>() { return 2147483647; }\n"
    "template <> __device__ __forceinline__ long long khighest<long long>() { return 9223372036854775807LL; }\n"
    "template <> __device__ __forceinline__ float khighest<float>() { return __uint_as_float(0x7f800000u); }\n"
    "template <> __device__ __forceinline__ double khighest<double>() { return __longlong_as_double(0x7ff0000000000000LL); }\n"
    "template <class T> struct KAccMax {\n"
    "    T s;\n"
    "    __device__ __forceinline__ void init() { s = klowest<T>(); }\n"
    "    __device__ __forceinline__ void empty() { init(); }\n"
    "    __device__ __forceinline__ void add(T x) { s = kmax(s, x); }\n"
    "    __device__ __forceinline__ void merge(const KAccMax &o) { s = kmax(s, o.s); }\n"
    "    __device__ __forceinline__ void shfl(int d) { KAccMax o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }\n"
    "    __device__ __forceinline__ T result() const { return s; }\n"
    "};\n"
    "template <class T> struct KAccMin {\n"
    "    T s;\n"
    "    __device__ __forceinline__ void init() { s = khighest<T>(); }\n"
    "    __device__ __forceinline__ void empty() { init(); }\n"
    "    __device__ __forceinline__ void add(T x) { s = kmin(s, x); }\n"
    "    __device__ __forceinline__ void merge(const KAccMin &o) { s = kmin(s, o.s); }\n"
    "    __device__ __forceinline__ void shfl(int d) { KAccMin o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }\n"
    "    __device__ __forceinline__ T result() const { return s; }\n"
    "};\n"
    "template <class A> __device__ __forceinline__ void kwarp_reduce(A &a)\n"
    "{ // lane 0 ends with the tree-ordered merge of the warp\n"
    "#pragma unroll\n"
    "    for (int d = 16; d > 0; d >>= 1) a.shfl(d);\n"
    "}\n"
    "// ---- end of preamble\n";

/* ------------------------------------------------------------ tables */

enum { SP_CSE = 0, SP_FOLD = 1, SP_IDENTITY = 2, SP_INDEX = 3, SP_STRENGTH = 4,
       SP_COUNT = 5 };
static const char *const pass_names[SP_COUNT] = {"cse", "fold", "identity",
                                                 "index", "strength"};

/* value (register) and storage C types per kiln_dtype */
static const char *const ctype[KILN_DTYPE_COUNT] = {
    "bool", "int", "long long", "kh16", "kh16", "float", "double"};
static const char *const stype[KILN_DTYPE_COUNT] = {
    "unsigned char", "int", "long long", "kh16", "kh16", "float", "double"};

static int is_float(int dt) { return dt == KILN_F32 || dt == KILN_F64; }
static int is_int(int dt) { return dt == KILN_I32 || dt == KILN_I64; }
/* ------------------------------------------------------------ state */

typedef struct gen {
    const kiln_ir_segment *seg;
    const kiln_kernel_options *ko;
    kiln_ir_node *n;     /* working copy + room for constants made by passes */
    uint32_t nn, cap;
    int32_t *alias;      /* node -> the node whose value it is */
    uint8_t *live;       /* needed by an output */
    uint8_t *pre;        /* feeds the REDUCE / MATMUL (domain D) */
    uint8_t *post_use;   /* INPUT read by the post phase */
    int32_t sp;          /* the REDUCE or MATMUL node, or -1 */
    int R;               /* words per stride array (rank, at least 1) */
    int in_dtype[KILN_CUDA_MAX_VIEWS];
    kiln_buf b;
    kiln_cuda_kinfo info;
} gen;

static int pass_on(const gen *g, int pass)
{
    return ((g->ko->simplify_off >> pass) & 1u) == 0;
}

static int32_t res(const gen *g, int32_t i)
{
    while (i >= 0 && g->alias[i] != i)
        i = g->alias[i];
    return i;
}

#define P(...) kiln__buf_printf(&g->b, __VA_ARGS__)

/* ---------------------------------------------------- constant values */

static float f32v(uint64_t b)
{
    uint32_t u = (uint32_t)b;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double f64v(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}
static uint64_t f32b(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t f64b(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
/* Canonical bits of a value of dtype dt (masks junk above the width). */
static uint64_t canon(int dt, uint64_t b)
{
    switch (dt) {
    case KILN_BOOL: return b != 0;
    case KILN_I32: case KILN_F32: return b & 0xffffffffu;
    case KILN_F16: case KILN_BF16: return b & 0xffffu;
    default: return b;
    }
}
static double fval(int dt, uint64_t b)
{
    return dt == KILN_F32 ? (double)f32v(b) : f64v(b);
}
static int64_t ival(int dt, uint64_t b)
{
    return dt == KILN_I32 ? (int64_t)(int32_t)(uint32_t)b
                          : dt == KILN_BOOL ? (int64_t)(b != 0) : (int64_t)b;
}
static uint64_t ibits(int dt, int64_t v)
{
    return dt == KILN_I32 ? (uint64_t)(uint32_t)v : (uint64_t)v;
}

/* Append the literal of constant node c. */
static void lit(gen *g, const kiln_ir_node *c)
{
    uint64_t b = canon(c->dtype, c->bits);
    switch (c->dtype) {
    case KILN_BOOL: P("%s", b ? "true" : "false"); break;
    case KILN_I32: P("((int)0x%xu)", (unsigned)b); break;
    case KILN_I64: P("((long long)0x%llxull)", (unsigned long long)b); break;
    case KILN_F16: case KILN_BF16: P("((kh16)0x%xu)", (unsigned)b); break;
    case KILN_F32: P("__uint_as_float(0x%xu)", (unsigned)b); break;
    default: P("__longlong_as_double((long long)0x%llxull)", (unsigned long long)b);
    }
}

/* Append the expression naming node i's value. */
static void arg(gen *g, int32_t i)
{
    i = res(g, i);
    if (g->n[i].op == KILN_OP_CONST)
        lit(g, &g->n[i]);
    else
        P("v%d", (int)i);
}

/* ------------------------------------------------------- simplification */

static int cst(const gen *g, int32_t a, uint64_t *bits)
{
    if (a < 0)
        return 0;
    a = res(g, a);
    if (g->n[a].op != KILN_OP_CONST)
        return 0;
    *bits = canon(g->n[a].dtype, g->n[a].bits);
    return 1;
}

static void make_const(gen *g, int32_t i, uint64_t bits)
{
    kiln_ir_node *x = &g->n[i];
    x->op = KILN_OP_CONST;
    x->bits = canon(x->dtype, bits);
    x->args[0] = x->args[1] = x->args[2] = -1;
}

/* int/float cast semantics of the generated code, on the host. */
static int64_t sat_i(double x, int to)
{
    if (x != x)
        return 0;
    if (to == KILN_I32) {
        if (x >= 2147483648.0) return INT32_MAX;
        if (x <= -2147483649.0) return INT32_MIN;
    } else {
        if (x >= 9223372036854775808.0) return INT64_MAX;
        if (x <= -9223372036854775808.0) return INT64_MIN;
    }
    return (int64_t)x;
}

/* Constant folding: only where the host computes exactly what the device
** does (see the header comment).  Returns 1 when node i became a CONST. */
static int try_fold(gen *g, int32_t i)
{
    kiln_ir_node *x = &g->n[i];
    int ar = x->args[0] >= 0 ? g->n[res(g, x->args[0])].dtype : -1;
    uint64_t a = 0, b = 0, c = 0;
    int na = 0;
    for (int k = 0; k < 3; k++) {
        if (x->args[k] < 0)
            continue;
        uint64_t *dst = k == 0 ? &a : k == 1 ? &b : &c;
        if (!cst(g, x->args[k], dst))
            return 0;
        na++;
    }
    if (na == 0)
        return 0;
    const int fm = g->ko->fast_math;
    int op = x->op;
    if (op == KILN_OP_WHERE) {
        make_const(g, i, a ? b : c);
        return 1;
    }
    if (ar == KILN_F16 || ar == KILN_BF16)
        return 0;
    if (op == KILN_OP_NEG && is_float(ar)) {
        make_const(g, i, a ^ (ar == KILN_F32 ? 0x80000000ull : 0x8000000000000000ull));
        return 1;
    }
    if (op == KILN_OP_ABS && is_float(ar)) {
        make_const(g, i, a & (ar == KILN_F32 ? 0x7fffffffull : 0x7fffffffffffffffull));
        return 1;
    }
    if (is_int(ar) || ar == KILN_BOOL) {
        int64_t p = ival(ar, a), q = ival(ar, b);
        uint64_t up = (uint64_t)p, uq = (uint64_t)q, r;
        int rd = x->dtype;
        switch (op) {
        case KILN_OP_NEG: r = 0 - up; break;
        case KILN_OP_ABS: r = p < 0 ? 0 - up : up; break;
        case KILN_OP_RELU: r = p > 0 ? up : 0; break;
        case KILN_OP_ADD: r = up + uq; break;
        case KILN_OP_SUB: r = up - uq; break;
        case KILN_OP_MUL: r = up * uq; break;
        case KILN_OP_MAXIMUM: r = p > q ? up : uq; break;
        case KILN_OP_MINIMUM: r = p < q ? up : uq; break;
        case KILN_OP_EQ: r = p == q; break;
        case KILN_OP_NE: r = p != q; break;
        case KILN_OP_LT: r = p < q; break;
        case KILN_OP_LE: r = p <= q; break;
        case KILN_OP_GT: r = p > q; break;
        case KILN_OP_GE: r = p >= q; break;
        case KILN_OP_AND: r = (p != 0) && (q != 0); break;
        case KILN_OP_OR: r = (p != 0) || (q != 0); break;
        case KILN_OP_NOT: r = p == 0; break;
        case KILN_OP_CAST:
            if (rd == KILN_BOOL) r = p != 0;
            else if (is_int(rd)) r = ibits(rd, p); /* wraps like the device */
            else if (rd == KILN_F32 && !fm) r = f32b((float)p);
            else if (rd == KILN_F64 && !fm) r = f64b((double)p);
            else return 0;
            break;
        default: return 0;
        }
        if (rd == KILN_I32)
            r = (uint64_t)(uint32_t)r;
        make_const(g, i, r);
        return 1;
    }
    if (!is_float(ar) || fm)
        return 0; /* fast_math: flush-to-zero makes host != device */
    double p = fval(ar, a), q = fval(ar, b), s = fval(ar, c);
    if (p != p || (na > 1 && q != q) || (na > 2 && s != s))
        return 0; /* NaN payloads are not reproduced exactly */
    int f32 = ar == KILN_F32;
    double r;
    int isbool = 0, bres = 0;
    switch (op) {
    case KILN_OP_ADD: r = f32 ? (double)((float)p + (float)q) : p + q; break;
    case KILN_OP_SUB: r = f32 ? (double)((float)p - (float)q) : p - q; break;
    case KILN_OP_MUL: r = f32 ? (double)((float)p * (float)q) : p * q; break;
    case KILN_OP_DIV: r = f32 ? (double)((float)p / (float)q) : p / q; break;
    case KILN_OP_FMA: r = f32 ? (double)fmaf((float)p, (float)q, (float)s) : fma(p, q, s); break;
    case KILN_OP_SQRT: r = f32 ? (double)sqrtf((float)p) : sqrt(p); break;
    case KILN_OP_RECIPROCAL: r = f32 ? (double)(1.0f / (float)p) : 1.0 / p; break;
    case KILN_OP_FLOOR: r = floor(p); break;
    case KILN_OP_CEIL: r = ceil(p); break;
    case KILN_OP_RELU: r = p > 0 ? p : 0.0; break;
    case KILN_OP_MAXIMUM: r = p > q ? p : q; break;
    case KILN_OP_MINIMUM: r = p < q ? p : q; break;
    case KILN_OP_EQ: isbool = 1; bres = p == q; r = 0; break;
    case KILN_OP_NE: isbool = 1; bres = p != q; r = 0; break;
    case KILN_OP_LT: isbool = 1; bres = p < q; r = 0; break;
    case KILN_OP_LE: isbool = 1; bres = p <= q; r = 0; break;
    case KILN_OP_GT: isbool = 1; bres = p > q; r = 0; break;
    case KILN_OP_GE: isbool = 1; bres = p >= q; r = 0; break;
    case KILN_OP_CAST: {
        int rd = x->dtype;
        if (rd == KILN_BOOL) { make_const(g, i, p != 0); return 1; }
        if (is_int(rd)) { make_const(g, i, ibits(rd, sat_i(p, rd))); return 1; }
        if (rd == KILN_F32) { make_const(g, i, f32b((float)p)); return 1; }
        if (rd == KILN_F64) { make_const(g, i, f64b(p)); return 1; }
        return 0;
    }
    default: return 0; /* transcendentals are never folded */
    }
    if (isbool) {
        make_const(g, i, (uint64_t)bres);
        return 1;
    }
    if (r != r)
        return 0;
    /* max/min of +-0 and relu(-0) keep the device's choice: skip zeros */
    if ((op == KILN_OP_MAXIMUM || op == KILN_OP_MINIMUM || op == KILN_OP_RELU) &&
        r == 0)
        return 0;
    make_const(g, i, f32 ? f32b((float)r) : f64b(r));
    return 1;
}

static int is_const_val(const gen *g, int32_t a, int dt, double v)
{
    uint64_t b;
    if (!cst(g, a, &b))
        return 0;
    if (is_float(dt)) {
        uint64_t want = dt == KILN_F32 ? f32b((float)v) : f64b(v);
        return b == want; /* bitwise: -0 and +0 differ */
    }
    return ival(dt, b) == (int64_t)v;
}

/* Identities (value-preserving).  Returns 1 when node i was aliased or
** turned into a constant. */
static int try_identity(gen *g, int32_t i)
{
    kiln_ir_node *x = &g->n[i];
    int32_t a = x->args[0] >= 0 ? res(g, x->args[0]) : -1;
    int32_t b = x->args[1] >= 0 ? res(g, x->args[1]) : -1;
    int32_t c = x->args[2] >= 0 ? res(g, x->args[2]) : -1;
    int dt = a >= 0 ? g->n[a].dtype : -1;
    int fl = is_float(dt);
    int fok = fl && !g->ko->fast_math; /* no flush-to-zero in play */
    int iok = is_int(dt);
    uint64_t cb;
    switch (x->op) {
    case KILN_OP_WHERE:
        if (cst(g, a, &cb)) { g->alias[i] = cb ? b : c; return 1; }
        if (b == c) { g->alias[i] = b; return 1; }
        return 0;
    case KILN_OP_NEG:
        if (g->n[a].op == KILN_OP_NEG) { g->alias[i] = res(g, g->n[a].args[0]); return 1; }
        return 0;
    case KILN_OP_NOT:
        if (g->n[a].op == KILN_OP_NOT) { g->alias[i] = res(g, g->n[a].args[0]); return 1; }
        return 0;
    case KILN_OP_CAST:
        if (x->dtype == dt) { g->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_MAXIMUM: case KILN_OP_MINIMUM:
        if (a == b && (iok || fl)) { g->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_ADD:
        if ((iok && is_const_val(g, b, dt, 0)) || (fok && is_const_val(g, b, dt, -0.0))) { g->alias[i] = a; return 1; }
        if ((iok && is_const_val(g, a, dt, 0)) || (fok && is_const_val(g, a, dt, -0.0))) { g->alias[i] = b; return 1; }
        return 0;
    case KILN_OP_SUB:
        if ((iok || fok) && is_const_val(g, b, dt, 0.0)) { g->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_MUL:
        if ((iok || fok) && is_const_val(g, b, dt, 1)) { g->alias[i] = a; return 1; }
        if ((iok || fok) && is_const_val(g, a, dt, 1)) { g->alias[i] = b; return 1; }
        if (iok && (is_const_val(g, a, dt, 0) || is_const_val(g, b, dt, 0))) { make_const(g, i, 0); return 1; }
        return 0;
    case KILN_OP_DIV:
        if (fok && is_const_val(g, b, dt, 1)) { g->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_AND:
        if (cst(g, b, &cb)) { if (cb) g->alias[i] = a; else make_const(g, i, 0); return 1; }
        if (cst(g, a, &cb)) { if (cb) g->alias[i] = b; else make_const(g, i, 0); return 1; }
        if (a == b) { g->alias[i] = a; return 1; }
        return 0;
    case KILN_OP_OR:
        if (cst(g, b, &cb)) { if (!cb) g->alias[i] = a; else make_const(g, i, 1); return 1; }
        if (cst(g, a, &cb)) { if (!cb) g->alias[i] = b; else make_const(g, i, 1); return 1; }
        if (a == b) { g->alias[i] = a; return 1; }
        return 0;
    default:
        return 0;
    }
}

/* Exact strength reductions on f32/f64: x*2 -> x+x; x/(+-2^k) -> x*(+-2^-k)
** when 2^-k is a normal number. */
static void try_strength(gen *g, int32_t i)
{
    kiln_ir_node *x = &g->n[i];
    if (!is_float(x->dtype))
        return;
    int dt = x->dtype;
    int32_t a = x->args[0] >= 0 ? res(g, x->args[0]) : -1;
    int32_t b = x->args[1] >= 0 ? res(g, x->args[1]) : -1;
    if (x->op == KILN_OP_MUL) {
        if (is_const_val(g, b, dt, 2.0)) { x->op = KILN_OP_ADD; x->args[1] = a; x->args[0] = a; }
        else if (is_const_val(g, a, dt, 2.0)) { x->op = KILN_OP_ADD; x->args[0] = b; x->args[1] = b; }
        return;
    }
    uint64_t cb;
    if (x->op != KILN_OP_DIV || !cst(g, b, &cb) || g->nn >= g->cap)
        return;
    double d = fval(dt, cb);
    int e;
    double m = frexp(d, &e); /* d = m * 2^e, |m| in [0.5, 1) */
    if (d == 0 || d != d || fabs(m) != 0.5 || isinf(d))
        return;
    double r = 1.0 / d; /* exact: a power of two */
    double minnorm = dt == KILN_F32 ? 0x1p-126 : 0x1p-1022;
    double maxv = dt == KILN_F32 ? 0x1p127 : 0x1p1023;
    if (fabs(r) < minnorm || fabs(r) > maxv || fabs(d) < minnorm)
        return;
    kiln_ir_node *k = &g->n[g->nn];
    memset(k, 0, sizeof *k);
    k->op = KILN_OP_CONST;
    k->dtype = (uint8_t)dt;
    k->args[0] = k->args[1] = k->args[2] = -1;
    k->io = -1;
    k->bits = dt == KILN_F32 ? f32b((float)r) : f64b(r);
    g->alias[g->nn] = (int32_t)g->nn;
    x = &g->n[i];
    x->op = KILN_OP_MUL;
    x->args[1] = (int32_t)g->nn;
    g->nn++;
}

static int same_node(const kiln_ir_node *p, const kiln_ir_node *q)
{
    return p->op == q->op && p->dtype == q->dtype && p->rank == q->rank &&
           p->args[0] == q->args[0] && p->args[1] == q->args[1] &&
           p->args[2] == q->args[2] && p->axes == q->axes &&
           p->flags == q->flags && p->io == q->io &&
           (p->op != KILN_OP_CONST || p->bits == q->bits);
}

static void simplify(gen *g)
{
    uint32_t orig = g->nn;
    for (uint32_t i = 0; i < orig; i++) {
        kiln_ir_node *x = &g->n[i];
        for (int k = 0; k < 3; k++)
            if (x->args[k] >= 0)
                x->args[k] = res(g, x->args[k]);
        if (x->op == KILN_OP_CONST || kiln__op_is_reduce(x->op) || x->op == KILN_OP_MATMUL)
            continue;
        if (x->op != KILN_OP_INPUT) {
            if (pass_on(g, SP_FOLD) && try_fold(g, (int32_t)i))
                continue;
            if (pass_on(g, SP_IDENTITY) && try_identity(g, (int32_t)i))
                continue;
            if (pass_on(g, SP_STRENGTH))
                try_strength(g, (int32_t)i);
        }
        if (pass_on(g, SP_CSE)) {
            for (uint32_t j = 0; j < i; j++) {
                if (g->alias[j] == (int32_t)j && same_node(&g->n[j], &g->n[i])) {
                    g->alias[i] = (int32_t)j;
                    break;
                }
            }
        }
    }
}

/* ------------------------------------------------------------ emission */

/* One node's expression: `const T vI = ...;`. */
static void emit_node(gen *g, int32_t i)
{
    const kiln_ir_node *x = &g->n[i];
    int op = x->op;
    int a0 = x->args[0];
    int sdt = a0 >= 0 ? g->n[res(g, a0)].dtype : x->dtype; /* operand dtype */
    static const char *const fn[KILN_OP_COUNT] = {
        [KILN_OP_NEG] = "kneg", [KILN_OP_ABS] = "kabs", [KILN_OP_EXP] = "kexp",
        [KILN_OP_LOG] = "klog", [KILN_OP_SQRT] = "ksqrt",
        [KILN_OP_RSQRT] = "krsqrt", [KILN_OP_RECIPROCAL] = "krcp",
        [KILN_OP_SIN] = "ksin", [KILN_OP_COS] = "kcos", [KILN_OP_TANH] = "ktanh",
        [KILN_OP_SIGMOID] = "ksigmoid", [KILN_OP_RELU] = "krelu",
        [KILN_OP_ERF] = "kerf", [KILN_OP_FLOOR] = "kfloor",
        [KILN_OP_CEIL] = "kceil", [KILN_OP_ADD] = "kadd", [KILN_OP_SUB] = "ksub",
        [KILN_OP_MUL] = "kmul", [KILN_OP_DIV] = "kdiv", [KILN_OP_POW] = "kpow",
        [KILN_OP_MAXIMUM] = "kmax", [KILN_OP_MINIMUM] = "kmin",
        [KILN_OP_EQ] = "keq", [KILN_OP_NE] = "kne", [KILN_OP_LT] = "klt",
        [KILN_OP_LE] = "kle", [KILN_OP_GT] = "kgt", [KILN_OP_GE] = "kge",
        [KILN_OP_WHERE] = "kwhere", [KILN_OP_FMA] = "kfma"};
    P("    const %s v%d = ", ctype[x->dtype], (int)i);
    if (op == KILN_OP_AND || op == KILN_OP_OR) {
        P("(");
        arg(g, a0);
        P(op == KILN_OP_AND ? " && " : " || ");
        arg(g, x->args[1]);
        P(");\n");
        return;
    }
    if (op == KILN_OP_NOT) {
        P("!");
        arg(g, a0);
        P(";\n");
        return;
    }
    if (op == KILN_OP_CAST) {
        int to = x->dtype, from = sdt;
        /* prefix(arg)suffix per (to, from) */
        const char *pre = "(", *suf = ")";
        if (to == from) { pre = "("; }
        else if (to == KILN_BOOL) {
            if (from == KILN_F16 || from == KILN_BF16) { pre = "((("; suf = ") & 0x7fffu) != 0u)"; }
            else { pre = "(("; suf = ") != 0)"; }
        } else if (from == KILN_BOOL) {
            static const char *const one[KILN_DTYPE_COUNT] = {
                "true", "1", "1LL", "(kh16)0x3c00u", "(kh16)0x3f80u", "1.0f", "1.0"};
            static const char *const zero[KILN_DTYPE_COUNT] = {
                "false", "0", "0LL", "(kh16)0u", "(kh16)0u", "0.0f", "0.0"};
            P("(");
            arg(g, a0);
            P(" ? %s : %s);\n", one[to], zero[to]);
            return;
        } else {
            switch (to * 8 + from) {
#define C2(t, f) ((t) * 8 + (f))
            case C2(KILN_I32, KILN_I64): pre = "((int)(unsigned)(unsigned long long)("; suf = "))"; break;
            case C2(KILN_I32, KILN_F32): case C2(KILN_I32, KILN_F64): pre = "ksat_i32("; break;
            case C2(KILN_I32, KILN_F16): pre = "ksat_i32(kh2f("; suf = "))"; break;
            case C2(KILN_I32, KILN_BF16): pre = "ksat_i32(kb2f("; suf = "))"; break;
            case C2(KILN_I64, KILN_I32): pre = "((long long)("; suf = "))"; break;
            case C2(KILN_I64, KILN_F32): case C2(KILN_I64, KILN_F64): pre = "ksat_i64("; break;
            case C2(KILN_I64, KILN_F16): pre = "ksat_i64(kh2f("; suf = "))"; break;
            case C2(KILN_I64, KILN_BF16): pre = "ksat_i64(kb2f("; suf = "))"; break;
            case C2(KILN_F16, KILN_I32): pre = "kd2h((double)("; suf = "))"; break;
            case C2(KILN_F16, KILN_I64): pre = "kll2h("; break;
            case C2(KILN_F16, KILN_BF16): pre = "kf2h(kb2f("; suf = "))"; break;
            case C2(KILN_F16, KILN_F32): pre = "kf2h("; break;
            case C2(KILN_F16, KILN_F64): pre = "kd2h("; break;
            case C2(KILN_BF16, KILN_I32): pre = "kd2b((double)("; suf = "))"; break;
            case C2(KILN_BF16, KILN_I64): pre = "kll2b("; break;
            case C2(KILN_BF16, KILN_F16): pre = "kf2b(kh2f("; suf = "))"; break;
            case C2(KILN_BF16, KILN_F32): pre = "kf2b("; break;
            case C2(KILN_BF16, KILN_F64): pre = "kd2b("; break;
            case C2(KILN_F32, KILN_I32): pre = "__int2float_rn("; break;
            case C2(KILN_F32, KILN_I64): pre = "__ll2float_rn("; break;
            case C2(KILN_F32, KILN_F16): pre = "kh2f("; break;
            case C2(KILN_F32, KILN_BF16): pre = "kb2f("; break;
            case C2(KILN_F32, KILN_F64): pre = "__double2float_rn("; break;
            case C2(KILN_F64, KILN_I32): pre = "((double)("; suf = "))"; break; /* exact */
            case C2(KILN_F64, KILN_I64): pre = "__ll2double_rn("; break;
            case C2(KILN_F64, KILN_F16): pre = "((double)kh2f("; suf = "))"; break;
            case C2(KILN_F64, KILN_BF16): pre = "((double)kb2f("; suf = "))"; break;
            case C2(KILN_F64, KILN_F32): pre = "((double)("; suf = "))"; break; /* exact */
#undef C2
            default: pre = "("; break;
            }
        }
        P("%s", pre);
        arg(g, a0);
        P("%s;\n", suf);
        return;
    }
    P("%s(", fn[op] ? fn[op] : "kbad");
    for (int k = 0; k < 3 && x->args[k] >= 0; k++) {
        if (k)
            P(", ");
        arg(g, x->args[k]);
    }
    P(");\n");
}

/* Is node i emitted as a statement of the given phase? */
static int in_phase(const gen *g, uint32_t i, int pre_phase)
{
    const kiln_ir_node *x = &g->n[i];
    if (!g->live[i] || g->alias[i] != (int32_t)i || x->op == KILN_OP_INPUT ||
        x->op == KILN_OP_CONST || (int32_t)i == g->sp)
        return 0;
    return pre_phase ? g->pre[i] : !g->pre[i];
}

/* INPUT nodes read by a phase, in node order. */
static int phase_input(const gen *g, uint32_t i, int pre_phase)
{
    const kiln_ir_node *x = &g->n[i];
    if (x->op != KILN_OP_INPUT || g->alias[i] != (int32_t)i || !g->live[i])
        return 0;
    return pre_phase ? g->pre[i] : g->post_use[i];
}

static void emit_struct(gen *g)
{
    int R = g->R;
    const kiln_ir_segment *s = g->seg;
    P("typedef %s ix;\n", s->index64 ? "unsigned long long" : "unsigned int");
    P("struct KArgs {\n    unsigned long long size[%d];\n", R);
    for (uint32_t k = 0; k < s->n_inputs; k++) {
        int dt = g->in_dtype[k];
        P("    const %s *in%u;\n    unsigned long long is%u[%d];\n",
          dt >= 0 ? stype[dt] : "unsigned char", k, k, R);
    }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        int dt = g->n[s->outputs[k]].dtype;
        P("    %s *out%u;\n    unsigned long long os%u[%d];\n", stype[dt], k, k, R);
    }
    P("    unsigned long long n, j, s, mode;\n    void *scratch;\n"
      "    unsigned long long nd, chunk, spare;\n};\n");
}

/* kiln_post(sp value, post inputs..., outputs&...). */
static void emit_post(gen *g)
{
    const kiln_ir_segment *s = g->seg;
    int first = 1;
    P("__device__ __forceinline__ void kiln_post(");
    if (g->sp >= 0) {
        P("const %s v%d", ctype[g->n[g->sp].dtype], (int)g->sp);
        first = 0;
    }
    for (uint32_t i = 0; i < g->nn; i++)
        if (phase_input(g, i, 0)) {
            P("%sconst %s v%u", first ? "" : ", ", ctype[g->n[i].dtype], i);
            first = 0;
        }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        P("%s%s &r%u", first ? "" : ", ", ctype[g->n[s->outputs[k]].dtype], k);
        first = 0;
    }
    P(")\n{\n");
    for (uint32_t i = 0; i < g->nn; i++)
        if (in_phase(g, i, 0))
            emit_node(g, (int32_t)i);
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        P("    r%u = ", k);
        arg(g, s->outputs[k]);
        P(";\n");
    }
    P("}\n");
}

/* Argument list of a kiln_post call: sp value expr, loaded inputs, r0.. */
static void post_call(gen *g, const char *spv, const char *off_prefix)
{
    const kiln_ir_segment *s = g->seg;
    int first = 1;
    P("kiln_post(");
    if (g->sp >= 0) {
        P("%s", spv);
        first = 0;
    }
    for (uint32_t i = 0; i < g->nn; i++)
        if (phase_input(g, i, 0)) {
            int k = g->n[i].io;
            P("%skld(a.in%d + %si%d)", first ? "" : ", ", k, off_prefix, k);
            first = 0;
        }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        P("%sr%u", first ? "" : ", ", k);
        first = 0;
    }
    P(");\n");
}

static void decl_results(gen *g, const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    for (uint32_t k = 0; k < s->n_outputs; k++)
        P("%s%s r%u;\n", ind, ctype[g->n[s->outputs[k]].dtype], k);
}

static void store_results(gen *g, const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    for (uint32_t k = 0; k < s->n_outputs; k++)
        P("%sa.out%u[oo%u] = kst(r%u);\n", ind, k, k, k);
}

/* Does input k carry view flag f (KILN_CUDA_V_*)? */
static int in_has(const gen *g, uint32_t k, unsigned f)
{
    return (kiln__cuda_in_flags(&g->info, k) & f) != 0;
}

/* Offsets of views for the kept-axis index `o` (reductions): declares
** `ix <prefix>i<k>` for inputs with a flag of in_flag and `oo<k>` for all
** outputs when outs != 0.  Axes in `axes_mask` are decomposed (row-major,
** last fastest); other axes contribute index 0. */
static void emit_decompose(gen *g, const char *idx, uint32_t axes_mask,
                           unsigned in_flag, int outs, const char *pfx,
                           const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, in_flag))
            P("%six %si%u = 0;\n", ind, pfx, k);
    if (outs)
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("%six oo%u = 0;\n", ind, k);
    int axes[KILN_MAX_RANK], na = 0;
    for (int d = 0; d < g->info.rank; d++)
        if (axes_mask >> d & 1u)
            axes[na++] = d;
    if (na == 0)
        return;
    P("%s{\n", ind);
    if (na > 1)
        P("%s    ix rem = %s;\n", ind, idx);
    for (int t = na - 1; t >= 0; t--) {
        int d = axes[t];
        if (na == 1)
            P("%s    const ix c%d = %s;\n", ind, d, idx);
        else if (t == 0)
            P("%s    const ix c%d = rem;\n", ind, d);
        else
            P("%s    const ix q%d = rem / (ix)a.size[%d];\n"
              "%s    const ix c%d = rem - q%d * (ix)a.size[%d];\n"
              "%s    rem = q%d;\n", ind, d, d, ind, d, d, d, ind, d);
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, in_flag))
                P("%s    %si%u += c%d * (ix)a.is%u[%d];\n", ind, pfx, k, d, k, d);
        if (outs)
            for (uint32_t k = 0; k < s->n_outputs; k++)
                P("%s    oo%u += c%d * (ix)a.os%u[%d];\n", ind, k, d, k, d);
    }
    P("%s}\n", ind);
}

/* Set KILN_CUDA_V_PRE / V_POST on the inputs each phase reads. */
static void mark_inputs(gen *g)
{
    for (uint32_t i = 0; i < g->nn; i++) {
        if (phase_input(g, i, 1))
            g->info.view[g->n[i].io] |= KILN_CUDA_V_PRE;
        if (phase_input(g, i, 0))
            g->info.view[g->n[i].io] |= KILN_CUDA_V_POST;
    }
}

/* ------------------------------------------------------------ pointwise */

/* Smallest element size among the inputs with a flag of in_flag and, with
** outs, the outputs. */
static int min_view_size(const gen *g, unsigned in_flag, int outs)
{
    const kiln_ir_segment *s = g->seg;
    int m = 8;
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, in_flag)) {
            int sz = (int)kiln_dtype_size((kiln_dtype)g->in_dtype[k]);
            if (sz < m) m = sz;
        }
    for (uint32_t k = 0; outs && k < s->n_outputs; k++) {
        int sz = (int)kiln_dtype_size((kiln_dtype)g->n[s->outputs[k]].dtype);
        if (sz < m) m = sz;
    }
    return m;
}

static uint32_t trait_in(const gen *g, uint32_t k)
{
    return g->seg->input_traits ? g->seg->input_traits[k] : 0;
}
static uint32_t trait_out(const gen *g, uint32_t k)
{
    return g->seg->output_traits ? g->seg->output_traits[k] : 0;
}

/* Offsets for linear index `idx` over the collapsed domain (a.nd dims):
** flat views (KILN_CUDA_V_FLAT) take the index itself, the others their
** strides.  Only the inputs kiln_post reads get an offset. */
static void emit_pw_offsets(gen *g, const char *idx, const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    const kiln_cuda_kinfo *in = &g->info;
    int strided = 0;
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, KILN_CUDA_V_POST)) {
            if (in_has(g, k, KILN_CUDA_V_FLAT))
                P("%sconst ix oi%u = %s;\n", ind, k, idx);
            else {
                P("%six oi%u = 0;\n", ind, k);
                strided = 1;
            }
        }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        if (kiln__cuda_out_flags(in, k) & KILN_CUDA_V_FLAT)
            P("%sconst ix oo%u = %s;\n", ind, k, idx);
        else {
            P("%six oo%u = 0;\n", ind, k);
            strided = 1;
        }
    }
    if (!strided)
        return;
    int R = g->R;
    P("%s{\n%s    ix rem = %s;\n", ind, ind, idx);
    P("%s    const int lo = %d - (int)a.nd;\n", ind, R);
    P("%s#pragma unroll\n%s    for (int d = %d; d >= 0; --d) {\n", ind, ind, R - 1);
    P("%s        if (d < lo) break;\n", ind);
    P("%s        ix c = rem;\n", ind);
    P("%s        if (d > lo) { const ix q = rem / (ix)a.size[d]; c = rem - q * (ix)a.size[d]; rem = q; }\n", ind);
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, KILN_CUDA_V_POST) && !in_has(g, k, KILN_CUDA_V_FLAT))
            P("%s        oi%u += c * (ix)a.is%u[d];\n", ind, k, k);
    for (uint32_t k = 0; k < s->n_outputs; k++)
        if (!(kiln__cuda_out_flags(in, k) & KILN_CUDA_V_FLAT))
            P("%s        oo%u += c * (ix)a.os%u[d];\n", ind, k, k);
    P("%s    }\n%s}\n", ind, ind);
}

static void emit_pointwise(gen *g)
{
    const kiln_ir_segment *s = g->seg;
    int vec = g->info.vec;
    emit_post(g);
    P("extern \"C\" __global__ void __launch_bounds__(256) kiln_main(const KArgs a)\n{\n"
      "    const ix n = (ix)a.n;\n"
      "    const ix step = (ix)blockDim.x * (ix)gridDim.x;\n"
      "    const ix t0 = (ix)blockIdx.x * (ix)blockDim.x + (ix)threadIdx.x;\n"
      "    ix tail = 0;\n");
    if (vec > 0) {
        P("    if (a.mode & 1ull) {\n"
          "        const ix nv = n / %d;\n"
          "        for (ix v = t0; v < nv; v += step) {\n"
          "            const ix i = v * %d;\n", vec, vec);
        emit_pw_offsets(g, "i", "            ");
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_POST))
                P("            KVec<%s, %d> x%u;\n"
                  "            kldv(x%u, a.in%u, oi%u, a.is%u[%d]);\n",
                  stype[g->in_dtype[k]], vec, k, k, k, k, k, g->R - 1);
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("            KVec<%s, %d> y%u;\n", stype[g->n[s->outputs[k]].dtype], vec, k);
        P("#pragma unroll\n            for (int e = 0; e < %d; ++e) {\n", vec);
        decl_results(g, "                ");
        /* call with vector lanes */
        {
            int first = 1;
            P("                kiln_post(");
            for (uint32_t i = 0; i < g->nn; i++)
                if (phase_input(g, i, 0)) {
                    P("%skcv(x%d.v[e])", first ? "" : ", ", g->n[i].io);
                    first = 0;
                }
            for (uint32_t k = 0; k < s->n_outputs; k++) {
                P("%sr%u", first ? "" : ", ", k);
                first = 0;
            }
            P(");\n");
        }
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("                y%u.v[e] = kst(r%u);\n", k, k);
        P("            }\n");
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("            kstv(a.out%u, oo%u, y%u);\n", k, k, k);
        P("        }\n        tail = nv * %d;\n    }\n", vec);
    }
    P("    for (ix i = tail + t0; i < n; i += step) {\n");
    emit_pw_offsets(g, "i", "        ");
    decl_results(g, "        ");
    P("        ");
    post_call(g, "", "o");
    store_results(g, "        ");
    P("    }\n}\n");
}

/* ------------------------------------------------------------ reductions */

static const char *acc_type(int op, int dt, char *buf, size_t cap)
{
    if (op == KILN_OP_SUM) {
        static const char *const sums[KILN_DTYPE_COUNT] = {
            NULL, "KAccSumI32", "KAccSumI64", NULL, NULL, "KAccSumF32", "KAccSumF64"};
        return sums[dt];
    }
    if (dt == KILN_BOOL || dt == KILN_F16 || dt == KILN_BF16)
        return NULL;
    snprintf(buf, cap, "%s<%s>", op == KILN_OP_RMAX ? "KAccMax" : "KAccMin",
             ctype[dt]);
    return buf;
}

static size_t acc_size(int op, int dt)
{
    if (op == KILN_OP_SUM)
        return dt == KILN_F64 ? 16 : dt == KILN_F32 ? 8 : kiln_dtype_size((kiln_dtype)dt);
    return kiln_dtype_size((kiln_dtype)dt);
}

/* kiln_pre(pre inputs...) returning the REDUCE operand. */
static void emit_pre(gen *g)
{
    int32_t opnd = res(g, g->n[g->sp].args[0]);
    int first = 1;
    P("__device__ __forceinline__ %s kiln_pre(", ctype[g->n[opnd].dtype]);
    for (uint32_t i = 0; i < g->nn; i++)
        if (phase_input(g, i, 1)) {
            P("%sconst %s v%u", first ? "" : ", ", ctype[g->n[i].dtype], i);
            first = 0;
        }
    P(")\n{\n");
    for (uint32_t i = 0; i < g->nn; i++)
        if (in_phase(g, i, 1))
            emit_node(g, (int32_t)i);
    P("    return ");
    arg(g, opnd);
    P(";\n}\n");
}

/* Call of kiln_pre with scalar loads at offsets oi<k> or vector lanes. */
static void pre_call(gen *g, int lanes)
{
    int first = 1;
    P("kiln_pre(");
    for (uint32_t i = 0; i < g->nn; i++)
        if (phase_input(g, i, 1)) {
            int k = g->n[i].io;
            if (lanes)
                P("%skcv(x%d.v[e])", first ? "" : ", ", k);
            else
                P("%skld(a.in%d + oi%d)", first ? "" : ", ", k, k);
            first = 0;
        }
    P(")");
}

/* Offsets oi<k> = bi<k> + (reduced index j decomposed over red axes) of
** the inputs kiln_pre reads. */
static void emit_joffsets(gen *g, uint32_t red, const char *ind)
{
    const kiln_ir_segment *s = g->seg;
    int axes[KILN_MAX_RANK], na = 0;
    for (int d = 0; d < g->info.rank; d++)
        if (red >> d & 1u)
            axes[na++] = d;
    if (na == 1) {
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_PRE))
                P("%sconst ix oi%u = bi%u + j * (ix)a.is%u[%d];\n", ind, k, k, k, axes[0]);
        return;
    }
    for (uint32_t k = 0; k < s->n_inputs; k++)
        if (in_has(g, k, KILN_CUDA_V_PRE))
            P("%six oi%u = bi%u;\n", ind, k, k);
    P("%s{\n%s    ix rem = j;\n", ind, ind);
    for (int t = na - 1; t >= 0; t--) {
        int d = axes[t];
        if (t == 0)
            P("%s    const ix c%d = rem;\n", ind, d);
        else
            P("%s    const ix q%d = rem / (ix)a.size[%d];\n"
              "%s    const ix c%d = rem - q%d * (ix)a.size[%d];\n"
              "%s    rem = q%d;\n", ind, d, d, ind, d, d, d, ind, d);
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_PRE))
                P("%s    oi%u += c%d * (ix)a.is%u[%d];\n", ind, k, d, k, d);
    }
    P("%s}\n", ind);
}

static void emit_finalize(gen *g, const char *rt, uint32_t kept)
{
    P("__device__ __forceinline__ void kiln_finalize(const KArgs &a, const ix o, const %s red)\n{\n", rt);
    emit_decompose(g, "o", kept, KILN_CUDA_V_POST, 1, "o", "    ");
    decl_results(g, "    ");
    P("    ");
    post_call(g, "red", "o");
    store_results(g, "    ");
    P("}\n");
}

static void emit_reduction(gen *g, const char *acc)
{
    const kiln_ir_segment *s = g->seg;
    const kiln_ir_node *sp = &g->n[g->sp];
    uint32_t all = (g->info.rank > 0) ? ((1u << g->info.rank) - 1u) : 0;
    uint32_t red = sp->axes & all, kept = all & ~red;
    int vec = g->info.vec;
    (void)s;
    emit_pre(g);
    emit_post(g);
    emit_finalize(g, ctype[sp->dtype], kept);
    if (g->info.kind == KILN_CK_REDUCE_INNER) {
        P("extern \"C\" __global__ void __launch_bounds__(256) kiln_main(const KArgs a)\n{\n"
          "    __shared__ %s ksm[8];\n"
          "    const ix O = (ix)a.n, J = (ix)a.j, chunk = (ix)a.chunk;\n"
          "    const unsigned tpr = (unsigned)(a.mode >> 8);\n"
          "    const ix row = (ix)blockIdx.x * (ix)(256u / tpr) + (ix)(threadIdx.x / tpr);\n"
          "    const unsigned lane = threadIdx.x %% tpr;\n"
          "    const ix split = (ix)blockIdx.y;\n"
          "    %s acc;\n    acc.init();\n"
          "    if (row < O) {\n", acc, acc);
        emit_decompose(g, "row", kept, KILN_CUDA_V_PRE, 0, "b", "        ");
        P("        const ix j0 = split * chunk;\n"
          "        const ix j1 = (J - j0 < chunk) ? J : j0 + chunk;\n");
        if (vec > 0) {
            P("        if (a.mode & 1ull) {\n"
              "#pragma unroll 4\n"
              "            for (ix j = j0 + (ix)lane * %d; j < j1; j += (ix)tpr * %d) {\n", vec, vec);
            for (uint32_t k = 0; k < s->n_inputs; k++)
                if (in_has(g, k, KILN_CUDA_V_PRE))
                    P("                KVec<%s, %d> x%u;\n"
                      "                kldv(x%u, a.in%u, bi%u + j * (ix)a.is%u[%d], a.is%u[%d]);\n",
                      stype[g->in_dtype[k]], vec, k, k, k, k, k, g->R - 1, k, g->R - 1);
            P("#pragma unroll\n                for (int e = 0; e < %d; ++e) acc.add(", vec);
            pre_call(g, 1);
            P(");\n            }\n        } else\n");
        }
        P("#pragma unroll 4\n        for (ix j = j0 + (ix)lane; j < j1; j += (ix)tpr) {\n");
        emit_joffsets(g, red, "            ");
        P("            acc.add(");
        pre_call(g, 0);
        P(");\n        }\n    }\n"
          "    kwarp_reduce(acc);\n"
          "    if (tpr == 256u) {\n"
          "        if ((threadIdx.x & 31u) == 0u) ksm[threadIdx.x >> 5] = acc;\n"
          "        __syncthreads();\n"
          "        if (threadIdx.x != 0u) return;\n"
          "        acc = ksm[0];\n"
          "#pragma unroll\n"
          "        for (int w = 1; w < 8; ++w) acc.merge(ksm[w]);\n"
          "    } else if (lane != 0u) {\n"
          "        return;\n"
          "    }\n"
          "    if (row >= O) return;\n"
          "    if (J == 0) acc.empty();\n"
          "    if (a.s == 1ull) kiln_finalize(a, row, acc.result());\n"
          "    else reinterpret_cast<%s *>(a.scratch)[split * O + row] = acc;\n"
          "}\n", acc);
    } else {
        int cv = vec > 0 ? vec : 1;
        P("extern \"C\" __global__ void __launch_bounds__(256) kiln_main(const KArgs a)\n{\n"
          "    __shared__ %s ksm[8][32 * %d];\n"
          "    const ix O = (ix)a.n, J = (ix)a.j, chunk = (ix)a.chunk;\n"
          "    const unsigned tx = threadIdx.x & 31u, ty = threadIdx.x >> 5;\n"
          "    const ix cv = (a.mode & 1ull) ? %d : 1;\n"
          "    const ix col = ((ix)blockIdx.x * 32u + tx) * cv;\n"
          "    const ix split = (ix)blockIdx.y;\n"
          "    %s acc[%d];\n"
          "#pragma unroll\n    for (int e = 0; e < %d; ++e) acc[e].init();\n"
          "    if (col < O) {\n", acc, cv, cv, acc, cv, cv);
        emit_decompose(g, "col", kept, KILN_CUDA_V_PRE, 0, "b", "        ");
        P("        const ix j0 = split * chunk;\n"
          "        const ix j1 = (J - j0 < chunk) ? J : j0 + chunk;\n");
        if (vec > 0) {
            P("        if (cv > 1) {\n"
              "#pragma unroll 4\n"
              "            for (ix j = j0 + ty; j < j1; j += 8u) {\n");
            emit_joffsets(g, red, "                ");
            for (uint32_t k = 0; k < s->n_inputs; k++)
                if (in_has(g, k, KILN_CUDA_V_PRE))
                    P("                KVec<%s, %d> x%u;\n"
                      "                kldv(x%u, a.in%u, oi%u, a.is%u[%d]);\n",
                      stype[g->in_dtype[k]], vec, k, k, k, k, k, g->R - 1);
            P("#pragma unroll\n                for (int e = 0; e < %d; ++e) acc[e].add(", vec);
            pre_call(g, 1);
            P(");\n            }\n        } else\n");
        }
        P("#pragma unroll 4\n        for (ix j = j0 + ty; j < j1; j += 8u) {\n");
        emit_joffsets(g, red, "            ");
        P("            acc[0].add(");
        pre_call(g, 0);
        P(");\n        }\n    }\n"
          "#pragma unroll\n    for (int e = 0; e < %d; ++e) ksm[ty][tx * %d + e] = acc[e];\n"
          "    __syncthreads();\n"
          "    if (ty != 0u || col >= O) return;\n"
          "    for (ix e = 0; e < cv; ++e) {\n"
          "        %s r = ksm[0][tx * %d + e];\n"
          "#pragma unroll\n"
          "        for (int y = 1; y < 8; ++y) r.merge(ksm[y][tx * %d + e]);\n"
          "        const ix o = col + e;\n"
          "        if (o >= O) break;\n"
          "        if (J == 0) r.empty();\n"
          "        if (a.s == 1ull) kiln_finalize(a, o, r.result());\n"
          "        else reinterpret_cast<%s *>(a.scratch)[split * O + o] = r;\n"
          "    }\n}\n", cv, cv, acc, cv, cv, acc);
    }
    /* second pass: merge the S partials of each kept index in split order */
    P("extern \"C\" __global__ void __launch_bounds__(256) kiln_finish(const KArgs a)\n{\n"
      "    const ix O = (ix)a.n, S = (ix)a.s;\n"
      "    const %s *p = reinterpret_cast<const %s *>(a.scratch);\n"
      "    const ix step = (ix)blockDim.x * (ix)gridDim.x;\n"
      "    for (ix o = (ix)blockIdx.x * (ix)blockDim.x + (ix)threadIdx.x; o < O; o += step) {\n"
      "        %s r = p[o];\n"
      "        for (ix t = 1; t < S; ++t) r.merge(p[t * O + o]);\n"
      "        kiln_finalize(a, o, r.result());\n"
      "    }\n}\n", acc, acc, acc);
}

/* ------------------------------------------------------------ matmul */

static void emit_matmul(gen *g)
{
    int A = g->info.mm_a, B = g->info.mm_b, dt = g->info.mm_dtype;
    const char *wid = dt == KILN_F16 ? "(double)kh2f" : dt == KILN_BF16 ? "(double)kb2f" : "(double)";
    emit_post(g);
    P("__device__ __forceinline__ void kiln_finalize_mm(const KArgs &a, const ix m, const ix nn, const float red)\n{\n");
    {
        const kiln_ir_segment *s = g->seg;
        for (uint32_t k = 0; k < s->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_POST))
                P("    const ix oi%u = m * (ix)a.is%u[0] + nn * (ix)a.is%u[1];\n", k, k, k);
        for (uint32_t k = 0; k < s->n_outputs; k++)
            P("    const ix oo%u = m * (ix)a.os%u[0] + nn * (ix)a.os%u[1];\n", k, k, k);
    }
    decl_results(g, "    ");
    P("    ");
    post_call(g, "red", "o");
    store_results(g, "    ");
    P("}\n");
    P("extern \"C\" __global__ void __launch_bounds__(256) kiln_main(const KArgs a)\n{\n"
      "    __shared__ double As[16][64 + 1];\n"
      "    __shared__ double Bs[16][64 + 1];\n"
      "    const ix M = (ix)a.size[0], N = (ix)a.size[1], K = (ix)a.s;\n"
      "    const ix m0 = (ix)blockIdx.y * 64u, n0 = (ix)blockIdx.x * 64u;\n"
      "    const unsigned tx = threadIdx.x & 15u, ty = threadIdx.x >> 4;\n"
      "    const ix sa0 = (ix)a.is%d[0], sa1 = (ix)a.is%d[1];\n"
      "    const ix sb0 = (ix)a.is%d[0], sb1 = (ix)a.is%d[1];\n"
      "    double acc[4][4];\n"
      "#pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
      "#pragma unroll\n        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;\n"
      "    for (ix k0 = 0; k0 < K; k0 += 16u) {\n"
      "        for (unsigned l = threadIdx.x; l < 64u * 16u; l += 256u) {\n"
      "            const unsigned r = l >> 4, c = l & 15u;\n"
      "            const ix gm = m0 + r, gk = k0 + c;\n"
      "            As[c][r] = (gm < M && gk < K) ? %s(a.in%d[gm * sa0 + gk * sa1]) : 0.0;\n"
      "            const unsigned kr = l >> 6, nc = l & 63u;\n"
      "            const ix gk2 = k0 + kr, gn = n0 + nc;\n"
      "            Bs[kr][nc] = (gk2 < K && gn < N) ? %s(a.in%d[gk2 * sb0 + gn * sb1]) : 0.0;\n"
      "        }\n"
      "        __syncthreads();\n"
      "#pragma unroll\n"
      "        for (int kk = 0; kk < 16; ++kk) {\n"
      "            double ar[4], br[4];\n"
      "#pragma unroll\n            for (int i = 0; i < 4; ++i) ar[i] = As[kk][ty + 16u * i];\n"
      "#pragma unroll\n            for (int j = 0; j < 4; ++j) br[j] = Bs[kk][tx + 16u * j];\n"
      "#pragma unroll\n            for (int i = 0; i < 4; ++i)\n"
      "#pragma unroll\n                for (int j = 0; j < 4; ++j) acc[i][j] = __fma_rn(ar[i], br[j], acc[i][j]);\n"
      "        }\n"
      "        __syncthreads();\n"
      "    }\n"
      "#pragma unroll\n    for (int i = 0; i < 4; ++i)\n"
      "#pragma unroll\n        for (int j = 0; j < 4; ++j) {\n"
      "            const ix m = m0 + ty + 16u * i, nn = n0 + tx + 16u * j;\n"
      "            if (m < M && nn < N) kiln_finalize_mm(a, m, nn, __double2float_rn(acc[i][j]));\n"
      "        }\n}\n", A, A, B, B, wid, A, wid, B);
}

/* ------------------------------------------------------------ driver */

static kiln_status check_segment(const kiln_ir_segment *s)
{
    if (s == NULL || s->nodes == NULL || s->n_nodes == 0 || s->outputs == NULL ||
        s->n_outputs == 0)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda codegen: empty segment");
    if (s->n_inputs > KILN_CUDA_MAX_VIEWS ||
        s->n_outputs > KILN_CUDA_MAX_VIEWS - s->n_inputs)
        return kiln__err(KILN_ERR_UNSUPPORTED,
                         "cuda codegen: %u inputs + %u outputs exceed %u views",
                         s->n_inputs, s->n_outputs, KILN_CUDA_MAX_VIEWS);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        const kiln_ir_node *x = &s->nodes[i];
        if (x->op >= KILN_OP_COUNT || x->dtype >= KILN_DTYPE_COUNT ||
            x->rank > KILN_MAX_RANK)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: node %u: bad op/dtype/rank", i);
        if (x->op == KILN_OP_BROADCAST)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: node %u: BROADCAST must be planned away", i);
        for (int k = 0; k < 3; k++)
            if (x->args[k] >= (int32_t)i || x->args[k] < -1)
                return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                                 "cuda codegen: node %u: argument %d refers to node %d",
                                 i, k, (int)x->args[k]);
        if (x->op == KILN_OP_INPUT && (x->io < 0 || (uint32_t)x->io >= s->n_inputs))
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: node %u: input index %d of %u", i,
                             (int)x->io, s->n_inputs);
        if (x->op != KILN_OP_INPUT && x->op != KILN_OP_CONST && x->args[0] < 0)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: node %u (%s): missing operand", i,
                             kiln_op_name((kiln_op)x->op));
    }
    for (uint32_t k = 0; k < s->n_outputs; k++)
        if (s->outputs[k] < 0 || (uint32_t)s->outputs[k] >= s->n_nodes)
            return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                             "cuda codegen: output %u refers to node %d", k,
                             (int)s->outputs[k]);
    return KILN_OK;
}

/* Liveness, the special node, the pre/post split; also checks dtypes the
** generator must see on operands. */
static kiln_status classify(gen *g)
{
    const kiln_ir_segment *s = g->seg;
    for (uint32_t k = 0; k < s->n_outputs; k++)
        g->live[res(g, s->outputs[k])] = 1;
    for (uint32_t i = g->nn; i-- > 0;) {
        if (!g->live[i] || g->alias[i] != (int32_t)i)
            continue;
        for (int k = 0; k < 3; k++)
            if (g->n[i].args[k] >= 0)
                g->live[res(g, g->n[i].args[k])] = 1;
    }
    g->sp = -1;
    for (uint32_t i = 0; i < g->nn; i++) {
        int op = g->n[i].op;
        if (!g->live[i] || g->alias[i] != (int32_t)i)
            continue;
        if (kiln__op_is_reduce(op) || op == KILN_OP_MATMUL) {
            if (g->sp >= 0)
                return kiln__err(KILN_ERR_UNSUPPORTED,
                                 "cuda codegen: more than one reduction/matmul in a segment");
            g->sp = (int32_t)i;
        }
    }
    int want = s->kind == KILN_SEGK_POINTWISE ? -1
             : s->kind == KILN_SEGK_REDUCTION ? 1 : 2;
    if (s->kind > KILN_SEGK_MATMUL_FALLBACK)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda codegen: segment kind %u",
                         s->kind);
    if (want < 0 && g->sp >= 0)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "cuda codegen: pointwise segment holds a %s node",
                         kiln_op_name((kiln_op)g->n[g->sp].op));
    if (want > 0 && (g->sp < 0 || (want == 1) != kiln__op_is_reduce(g->n[g->sp].op)))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "cuda codegen: %s segment without its %s node",
                         want == 1 ? "reduction" : "matmul",
                         want == 1 ? "REDUCE" : "MATMUL");
    if (g->sp >= 0) {
        int32_t sp = g->sp;
        for (int k = 0; k < 3; k++)
            if (g->n[sp].args[k] >= 0)
                g->pre[res(g, g->n[sp].args[k])] = 1;
        for (int32_t i = sp; i-- > 0;) {
            if (!g->pre[i] || g->alias[i] != i)
                continue;
            for (int k = 0; k < 3; k++)
                if (g->n[i].args[k] >= 0)
                    g->pre[res(g, g->n[i].args[k])] = 1;
        }
    }
    /* Post phase: what it reads must be the special node, INPUT/CONST
    ** leaves or post nodes. */
    for (uint32_t i = 0; i < g->nn; i++) {
        if (!g->live[i] || g->alias[i] != (int32_t)i || g->pre[i] ||
            (int32_t)i == g->sp || g->n[i].op == KILN_OP_INPUT ||
            g->n[i].op == KILN_OP_CONST)
            continue;
        for (int k = 0; k < 3; k++) {
            int32_t a = g->n[i].args[k];
            if (a < 0)
                continue;
            a = res(g, a);
            int op = g->n[a].op;
            if (op == KILN_OP_INPUT)
                g->post_use[a] = 1;
            else if (g->pre[a] && op != KILN_OP_CONST)
                return kiln__err(KILN_ERR_UNSUPPORTED,
                                 "cuda codegen: node %u reads pre-reduction value %d",
                                 i, (int)a);
        }
    }
    for (uint32_t k = 0; k < s->n_outputs; k++) {
        int32_t a = res(g, s->outputs[k]);
        if (g->n[a].op == KILN_OP_INPUT)
            g->post_use[a] = 1;
        else if (g->pre[a] && g->n[a].op != KILN_OP_CONST)
            return kiln__err(KILN_ERR_UNSUPPORTED,
                             "cuda codegen: output %u is a pre-reduction value", k);
    }
    for (uint32_t k = 0; k < KILN_CUDA_MAX_VIEWS; k++)
        g->in_dtype[k] = -1;
    for (uint32_t i = 0; i < g->nn; i++)
        if (g->n[i].op == KILN_OP_INPUT) {
            int io = g->n[i].io;
            if (g->in_dtype[io] >= 0 && g->in_dtype[io] != g->n[i].dtype)
                return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                                 "cuda codegen: input %d has two dtypes", io);
            g->in_dtype[io] = g->n[i].dtype;
        }
    /* operand dtypes the generator cannot express */
    for (uint32_t i = 0; i < g->nn; i++) {
        const kiln_ir_node *x = &g->n[i];
        if (!g->live[i] || g->alias[i] != (int32_t)i || x->op == KILN_OP_INPUT ||
            x->op == KILN_OP_CONST || x->op == KILN_OP_CAST || x->op == KILN_OP_WHERE ||
            x->op == KILN_OP_MATMUL)
            continue;
        int dt = g->n[res(g, x->args[0])].dtype;
        if (dt == KILN_F16 || dt == KILN_BF16)
            return kiln__err(KILN_ERR_UNSUPPORTED,
                             "cuda codegen: %s on %s (cast to f32 first)",
                             kiln_op_name((kiln_op)x->op), kiln_dtype_name((kiln_dtype)dt));
    }
    return KILN_OK;
}

kiln_status kiln__cuda_codegen(const kiln_ir_segment *seg,
                               const kiln_kernel_options *ko, char **source,
                               kiln_cuda_kinfo *info)
{
    if (ko == NULL || source == NULL || info == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda codegen: NULL argument");
    kiln_status st = check_segment(seg);
    if (st != KILN_OK)
        return st;
    gen G, *g = &G;
    memset(g, 0, sizeof G);
    g->seg = seg;
    g->ko = ko;
    g->nn = seg->n_nodes;
    g->cap = seg->n_nodes * 2 + 4;
    g->n = kiln__calloc(g->cap, sizeof *g->n);
    g->alias = kiln__calloc(g->cap, sizeof *g->alias);
    g->live = kiln__calloc(g->cap, 1);
    g->pre = kiln__calloc(g->cap, 1);
    g->post_use = kiln__calloc(g->cap, 1);
    if (!g->n || !g->alias || !g->live || !g->pre || !g->post_use) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "cuda codegen: out of memory");
        goto done;
    }
    memcpy(g->n, seg->nodes, seg->n_nodes * sizeof *g->n);
    for (uint32_t i = 0; i < g->cap; i++)
        g->alias[i] = (int32_t)i;
    simplify(g);
    st = classify(g);
    if (st != KILN_OK)
        goto done;

    kiln_cuda_kinfo *in = &g->info;
    in->seg_kind = (int)seg->kind;
    in->n_inputs = seg->n_inputs;
    in->n_outputs = seg->n_outputs;
    in->block = 256;
    in->index64 = seg->index64 != 0;
    in->mm_a = in->mm_b = -1;
    int rank = 0;
    for (uint32_t i = 0; i < g->nn; i++)
        if (g->live[i] && g->n[i].op != KILN_OP_CONST && g->n[i].rank > rank)
            rank = g->n[i].rank;
    for (uint32_t k = 0; k < seg->n_outputs; k++)
        if (seg->nodes[seg->outputs[k]].rank > rank)
            rank = seg->nodes[seg->outputs[k]].rank;
    in->rank = rank;
    g->R = in->R = rank > 0 ? rank : 1;
    if (seg->n_inputs + seg->n_outputs > KILN_SEGMENT_MAX_VIEWS(rank)) {
        st = kiln__err(KILN_ERR_UNSUPPORTED,
                       "cuda codegen: %u inputs + %u outputs exceed the %u views "
                       "of a rank-%d kernel (its parameters must fit in %d bytes)",
                       seg->n_inputs, seg->n_outputs, KILN_SEGMENT_MAX_VIEWS(rank),
                       rank, KILN_CUDA_PARAM_BYTES);
        goto done;
    }
    mark_inputs(g);

    int all_align = 1;
    for (uint32_t k = 0; k < seg->n_inputs; k++)
        if (in_has(g, k, KILN_CUDA_V_USED))
            all_align &= (trait_in(g, k) & KILN_TRAIT_ALIGN16) != 0;
    int out_align = 1;
    for (uint32_t k = 0; k < seg->n_outputs; k++)
        out_align &= (trait_out(g, k) & KILN_TRAIT_ALIGN16) != 0;

    P("// kiln generated kernel: segment kind %u, codegen %d\n%s",
      seg->kind, KILN_CUDA_CODEGEN_VERSION, kiln_cuda_preamble);
    emit_struct(g);
    if (seg->kind == KILN_SEGK_POINTWISE) {
        in->kind = KILN_CK_POINTWISE;
        if (pass_on(g, SP_INDEX)) {
            for (uint32_t k = 0; k < seg->n_inputs; k++)
                if (trait_in(g, k) & KILN_TRAIT_CONTIG)
                    in->view[k] |= KILN_CUDA_V_FLAT;
            for (uint32_t k = 0; k < seg->n_outputs; k++)
                if (trait_out(g, k) & KILN_TRAIT_CONTIG)
                    in->view[seg->n_inputs + k] |= KILN_CUDA_V_FLAT;
        }
        if (all_align && out_align) {
            int m = min_view_size(g, KILN_CUDA_V_USED, 1);
            in->vec = 16 / m > 8 ? 8 : 16 / m;
        }
        emit_pointwise(g);
    } else if (seg->kind == KILN_SEGK_REDUCTION) {
        const kiln_ir_node *sp = &g->n[g->sp];
        int opdt = g->n[res(g, sp->args[0])].dtype;
        char abuf[64];
        const char *acc = acc_type(sp->op, opdt, abuf, sizeof abuf);
        if (acc == NULL || opdt != sp->dtype) {
            st = kiln__err(KILN_ERR_UNSUPPORTED, "cuda codegen: %s over %s",
                           kiln_op_name((kiln_op)sp->op),
                           kiln_dtype_name((kiln_dtype)opdt));
            goto done;
        }
        if (rank == 0) {
            st = kiln__err(KILN_ERR_UNSUPPORTED, "cuda codegen: reduction of a rank-0 value");
            goto done;
        }
        uint32_t all = (1u << rank) - 1u;
        in->red_axes = sp->axes & all;
        in->acc_bytes = acc_size(sp->op, opdt);
        int inner = (in->red_axes >> (rank - 1)) & 1u;
        in->kind = inner ? KILN_CK_REDUCE_INNER : KILN_CK_REDUCE_OUTER;
        int pre_align = 1, any_pre = 0;
        for (uint32_t k = 0; k < seg->n_inputs; k++)
            if (in_has(g, k, KILN_CUDA_V_PRE)) {
                pre_align &= (trait_in(g, k) & KILN_TRAIT_ALIGN16) != 0;
                any_pre = 1;
            }
        if (pre_align && any_pre &&
            (!inner || in->red_axes == (1u << (rank - 1)))) {
            int v = 16 / min_view_size(g, KILN_CUDA_V_PRE, 0);
            in->vec = inner ? (v > 8 ? 8 : v) : (v > 4 ? 4 : v);
        }
        emit_reduction(g, acc);
    } else {
        const kiln_ir_node *sp = &g->n[g->sp];
        int32_t a = res(g, sp->args[0]), b = res(g, sp->args[1]);
        if (rank != 2 || g->n[a].op != KILN_OP_INPUT || g->n[b].op != KILN_OP_INPUT ||
            g->n[a].dtype != g->n[b].dtype ||
            !(g->n[a].dtype == KILN_F16 || g->n[a].dtype == KILN_BF16 ||
              g->n[a].dtype == KILN_F32) ||
            sp->dtype != KILN_F32) {
            st = kiln__err(KILN_ERR_UNSUPPORTED,
                           "cuda codegen: matmul needs two rank-2 INPUT operands "
                           "of f16/bf16/f32 and an f32 result");
            goto done;
        }
        in->kind = KILN_CK_MATMUL;
        in->mm_a = g->n[a].io;
        in->mm_b = g->n[b].io;
        in->mm_dtype = g->n[a].dtype;
        in->tile_m = in->tile_n = 64;
        emit_matmul(g);
    }
    if (g->b.failed) {
        st = kiln__err(KILN_ERR_NO_MEMORY, "cuda codegen: out of memory");
        goto done;
    }
    *source = g->b.data;
    g->b.data = NULL;
    *info = *in;
done:
    kiln__buf_free(&g->b);
    kiln__free(g->n);
    kiln__free(g->alias);
    kiln__free(g->live);
    kiln__free(g->pre);
    kiln__free(g->post_use);
    return st;
}

/* ------------------------------------------------------------ flags */

kiln_status kiln__cuda_flags(const kiln_kernel_options *ko, const char *arch,
                             const char **argv, int *argc, char *store,
                             size_t cap)
{
    if (ko == NULL || arch == NULL || argv == NULL || argc == NULL || store == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "cuda flags: NULL argument");
    const char *num = NULL;
    if (strncmp(arch, "sm_", 3) == 0)
        num = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0)
        num = arch + 8;
    if (num == NULL || num[0] == '\0' || strspn(num, "0123456789") != strlen(num) ||
        strlen(num) > 4)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "cuda flags: malformed architecture '%s' (want sm_NN)", arch);
    const char *list[16];
    int n = 0;
    char archflag[32];
    snprintf(archflag, sizeof archflag, "-arch=%s_%s", ko->sass ? "sm" : "compute", num);
    list[n++] = "--std=c++17";
    list[n++] = "-default-device";
    list[n++] = archflag;
    if (ko->fast_math)
        list[n++] = "--use_fast_math";
    list[n++] = ko->contract ? "--fmad=true" : "--fmad=false";
    if (ko->debug)
        list[n++] = "-G";
    else if (ko->lineinfo)
        list[n++] = "-lineinfo";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(list[i]) + 1;
        if (used + l > cap)
            return kiln__err(KILN_ERR_LIMIT, "cuda flags: buffer too small");
        memcpy(store + used, list[i], l);
        argv[i] = store + used;
        used += l;
    }
    *argc = n;
    return KILN_OK;
}

int kiln__cuda_nvrtc_caches(int major, int minor)
{
    return major > 12 || (major == 12 && minor >= 9);
}

int kiln__cuda_log_benign(const char *log, int debug)
{
    static const char note[] = "warning: Function too large, generated "
                               "debug information may not be accurate.";
    if (log == NULL)
        return 1;
    const char *p = log;
    while (*p != '\0') {
        size_t n = strcspn(p, "\n");
        size_t m = n;
        while (m > 0 && (p[m - 1] == '\r' || p[m - 1] == ' '))
            m--;
        size_t lead = strspn(p, " ");
        int blank = lead >= m;
        int is_note = debug && m - lead == sizeof note - 1 &&
                      memcmp(p + lead, note, sizeof note - 1) == 0;
        if (!blank && !is_note)
            return 0;
        p += n;
        if (*p == '\n')
            p++;
    }
    return 1;
}

kiln_status kiln__cuda_flags_text(const kiln_kernel_options *ko,
                                  const char *arch, char *buf, size_t cap)
{
    const char *argv[16];
    int argc = 0;
    char store[256];
    kiln_status st = kiln__cuda_flags(ko, arch, argv, &argc, store, sizeof store);
    if (st != KILN_OK)
        return st;
    size_t used = 0;
    for (int i = 0; i < argc; i++) {
        size_t l = strlen(argv[i]);
        if (used + l + 2 > cap)
            return kiln__err(KILN_ERR_LIMIT, "cuda flags: text buffer too small");
        if (i)
            buf[used++] = ' ';
        memcpy(buf + used, argv[i], l);
        used += l;
    }
    if (cap > 0)
        buf[used] = '\0';
    return KILN_OK;
}

void kiln__cuda_simplify_text(uint64_t off, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    buf[0] = '\0';
    uint64_t all = (1u << SP_COUNT) - 1u;
    if ((off & all) == all) {
        snprintf(buf, cap, "all");
        return;
    }
    size_t used = 0;
    for (int i = 0; i < SP_COUNT; i++)
        if (off >> i & 1u) {
            int w = snprintf(buf + used, cap - used, "%s%s", used ? "," : "",
                             pass_names[i]);
            if (w < 0 || (size_t)w >= cap - used)
                return;
            used += (size_t)w;
        }
}

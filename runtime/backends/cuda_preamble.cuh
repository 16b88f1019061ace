// ---- kiln CUDA preamble (cuda_codegen.c): helpers shared by every kernel.
// Values: bool, int, long long, float, double; f16/bf16 are raw 16-bit
// patterns (unsigned short) converted explicitly.  Arithmetic uses
// fixed-rounding intrinsics so contraction is decided by the IR alone.
typedef unsigned short kh16;
// -- loads/stores (bool is stored as one byte 0/1)
template <class T> __device__ __forceinline__ T kld(const T *p) { return *p; }
__device__ __forceinline__ bool kld(const unsigned char *p) { return *p != 0; }
template <class T> __device__ __forceinline__ T kcv(T x) { return x; }
__device__ __forceinline__ bool kcv(unsigned char x) { return x != 0; }
template <class T> __device__ __forceinline__ T kst(T x) { return x; }
__device__ __forceinline__ unsigned char kst(bool x) { return x ? 1 : 0; }
template <class T, int N>
struct alignas((sizeof(T) * N) < 16 ? (sizeof(T) * N) : 16) KVec { T v[N]; };
template <class T, int N>
__device__ __forceinline__ void kldv(KVec<T, N> &r, const T *p,
                                     unsigned long long off,
                                     unsigned long long inner)
{
    if (inner == 0) { // broadcast along the innermost axis
        const T s = p[off];
#pragma unroll
        for (int e = 0; e < N; ++e) r.v[e] = s;
    } else {
        r = *reinterpret_cast<const KVec<T, N> *>(p + off);
    }
}
template <class T, int N>
__device__ __forceinline__ void kstv(T *p, unsigned long long off,
                                     const KVec<T, N> &r)
{
    *reinterpret_cast<KVec<T, N> *>(p + off) = r;
}
// -- f16 / bf16 conversions, all correctly rounded (no double rounding)
__device__ __forceinline__ float kh2f(kh16 x) { float r; asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x)); return r; }
__device__ __forceinline__ kh16 kf2h(float x) { kh16 r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x)); return r; }
__device__ __forceinline__ kh16 kd2h(double x) { kh16 r; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(r) : "d"(x)); return r; }
__device__ __forceinline__ kh16 kll2h(long long x) { kh16 r; asm("cvt.rn.f16.s64 %0, %1;" : "=h"(r) : "l"(x)); return r; }
__device__ __forceinline__ float kb2f(kh16 x) { return __uint_as_float(((unsigned)x) << 16); }
__device__ __forceinline__ kh16 kf2b(float x)
{ // round to nearest even on the bit pattern; NaN stays a quiet NaN
    const unsigned u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (kh16)((u >> 16) | 0x40u);
    return (kh16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
// Round-to-odd narrowing: f32 keeps >= 2 more bits than bf16/f16, so a
// following round-to-nearest gives the correctly rounded result.
__device__ __forceinline__ float kd2f_odd(double x)
{
    float t = __double2float_rz(x);
    if ((double)t != x) t = __uint_as_float(__float_as_uint(t) | 1u);
    return t;
}
__device__ __forceinline__ float kll2f_odd(long long x)
{
    float t = __ll2float_rz(x);
    if (__float2ll_rz(t) != x) t = __uint_as_float(__float_as_uint(t) | 1u);
    return t;
}
__device__ __forceinline__ kh16 kd2b(double x) { return kf2b(kd2f_odd(x)); }
__device__ __forceinline__ kh16 kll2b(long long x) { return kf2b(kll2f_odd(x)); }
// float -> integer: truncate toward zero, saturate, NaN -> 0 (written out
// explicitly; it is what PTX cvt.rzi.sat does).
__device__ __forceinline__ int ksat_i32(float x)
{
    if (x != x) return 0;
    if (x >= 2147483648.0f) return 2147483647;
    if (x <= -2147483648.0f) return -2147483647 - 1;
    return (int)x;
}
__device__ __forceinline__ int ksat_i32(double x)
{
    if (x != x) return 0;
    if (x >= 2147483648.0) return 2147483647;
    if (x <= -2147483649.0) return -2147483647 - 1;
    return (int)x;
}
__device__ __forceinline__ long long ksat_i64(float x)
{
    if (x != x) return 0;
    if (x >= 9223372036854775808.0f) return 9223372036854775807LL;
    if (x <= -9223372036854775808.0f) return -9223372036854775807LL - 1;
    return (long long)x;
}
__device__ __forceinline__ long long ksat_i64(double x)
{
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return 9223372036854775807LL;
    if (x <= -9223372036854775808.0) return -9223372036854775807LL - 1;
    return (long long)x;
}
// -- arithmetic.  Integers wrap (two's complement through unsigned).
__device__ __forceinline__ int kadd(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ long long kadd(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
__device__ __forceinline__ float kadd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double kadd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ int ksub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
__device__ __forceinline__ long long ksub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
__device__ __forceinline__ float ksub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double ksub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ int kmul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ long long kmul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
__device__ __forceinline__ float kmul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double kmul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float kdiv(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double kdiv(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float kfma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double kfma(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ __forceinline__ float kpow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double kpow(double a, double b) { return pow(a, b); }
// neg/abs are sign-bit operations: exact for every input, NaN included.
__device__ __forceinline__ int kneg(int a) { return (int)(0u - (unsigned)a); }
__device__ __forceinline__ long long kneg(long long a) { return (long long)(0ull - (unsigned long long)a); }
__device__ __forceinline__ float kneg(float a) { return __uint_as_float(__float_as_uint(a) ^ 0x80000000u); }
__device__ __forceinline__ double kneg(double a) { return __longlong_as_double(__double_as_longlong(a) ^ (long long)0x8000000000000000ull); }
__device__ __forceinline__ int kabs(int a) { return a < 0 ? kneg(a) : a; }
__device__ __forceinline__ long long kabs(long long a) { return a < 0 ? kneg(a) : a; }
__device__ __forceinline__ float kabs(float a) { return __uint_as_float(__float_as_uint(a) & 0x7fffffffu); }
__device__ __forceinline__ double kabs(double a) { return __longlong_as_double(__double_as_longlong(a) & 0x7fffffffffffffffLL); }
__device__ __forceinline__ float kexp(float a) { return expf(a); }
__device__ __forceinline__ double kexp(double a) { return exp(a); }
__device__ __forceinline__ float klog(float a) { return logf(a); }
__device__ __forceinline__ double klog(double a) { return log(a); }
__device__ __forceinline__ float ksqrt(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double ksqrt(double a) { return __dsqrt_rn(a); }
__device__ __forceinline__ float krsqrt(float a) { return rsqrtf(a); }
__device__ __forceinline__ double krsqrt(double a) { return rsqrt(a); }
__device__ __forceinline__ float krcp(float a) { return __frcp_rn(a); }
__device__ __forceinline__ double krcp(double a) { return __drcp_rn(a); }
__device__ __forceinline__ float ksin(float a) { return sinf(a); }
__device__ __forceinline__ double ksin(double a) { return sin(a); }
__device__ __forceinline__ float kcos(float a) { return cosf(a); }
__device__ __forceinline__ double kcos(double a) { return cos(a); }
__device__ __forceinline__ float ktanh(float a) { return tanhf(a); }
__device__ __forceinline__ double ktanh(double a) { return tanh(a); }
__device__ __forceinline__ float kerf(float a) { return erff(a); }
__device__ __forceinline__ double kerf(double a) { return erf(a); }
__device__ __forceinline__ float kfloor(float a) { return floorf(a); }
__device__ __forceinline__ double kfloor(double a) { return floor(a); }
__device__ __forceinline__ float kceil(float a) { return ceilf(a); }
__device__ __forceinline__ double kceil(double a) { return ceil(a); }
// sigmoid: e/(1+e) with e = exp(x) for x < 0 (keeps tiny results), else
// 1/(1+exp(-x)).
__device__ __forceinline__ float ksigmoid(float a)
{
    if (a < 0.0f) { const float e = expf(a); return __fdiv_rn(e, __fadd_rn(1.0f, e)); }
    return __frcp_rn(__fadd_rn(1.0f, expf(kneg(a))));
}
__device__ __forceinline__ double ksigmoid(double a)
{
    if (a < 0.0) { const double e = exp(a); return __ddiv_rn(e, __dadd_rn(1.0, e)); }
    return __drcp_rn(__dadd_rn(1.0, exp(kneg(a))));
}
// relu: x > 0 ? x : 0, NaN -> NaN.
__device__ __forceinline__ int krelu(int a) { return a > 0 ? a : 0; }
__device__ __forceinline__ long long krelu(long long a) { return a > 0 ? a : 0; }
__device__ __forceinline__ float krelu(float a) { return (a > 0.0f || a != a) ? a : 0.0f; }
__device__ __forceinline__ double krelu(double a) { return (a > 0.0 || a != a) ? a : 0.0; }
// maximum/minimum: NaN if either operand is NaN.
template <class T> __device__ __forceinline__ T kmax(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a > b ? a : b)); }
template <class T> __device__ __forceinline__ T kmin(T a, T b) { return (a != a) ? a : ((b != b) ? b : (a < b ? a : b)); }
template <class T> __device__ __forceinline__ bool keq(T a, T b) { return a == b; }
template <class T> __device__ __forceinline__ bool kne(T a, T b) { return a != b; }
template <class T> __device__ __forceinline__ bool klt(T a, T b) { return a < b; }
template <class T> __device__ __forceinline__ bool kle(T a, T b) { return a <= b; }
template <class T> __device__ __forceinline__ bool kgt(T a, T b) { return a > b; }
template <class T> __device__ __forceinline__ bool kge(T a, T b) { return a >= b; }
template <class T> __device__ __forceinline__ T kwhere(bool c, T a, T b) { return c ? a : b; }
// -- reduction accumulators (deterministic merge order is the caller's).
// f32 sums accumulate in f64 (error far below the docs/numerics.md bound); f64
// sums carry a compensation term merged with TwoSum.
struct KAccSumF32 {
    double s;
    __device__ __forceinline__ void init() { s = -0.0; } // -0 + x == x
    __device__ __forceinline__ void empty() { s = 0.0; }
    __device__ __forceinline__ void add(float x) { s = __dadd_rn(s, (double)x); }
    __device__ __forceinline__ void merge(const KAccSumF32 &o) { s = __dadd_rn(s, o.s); }
    __device__ __forceinline__ void shfl(int d) { KAccSumF32 o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }
    __device__ __forceinline__ float result() const { return __double2float_rn(s); }
};
struct KAccSumF64 {
    double s, c;
    __device__ __forceinline__ void init() { s = -0.0; c = 0.0; }
    __device__ __forceinline__ void empty() { s = 0.0; c = 0.0; }
    __device__ __forceinline__ void two(double b, double cb)
    {
        const double t = __dadd_rn(s, b);
        const double bb = __dsub_rn(t, s);
        const double e = __dadd_rn(__dsub_rn(s, __dsub_rn(t, bb)), __dsub_rn(b, bb));
        s = t;
        c = __dadd_rn(c, __dadd_rn(cb, e));
    }
    __device__ __forceinline__ void add(double x) { two(x, 0.0); }
    __device__ __forceinline__ void merge(const KAccSumF64 &o) { two(o.s, o.c); }
    __device__ __forceinline__ void shfl(int d)
    {
        KAccSumF64 o;
        o.s = __shfl_down_sync(0xffffffffu, s, d);
        o.c = __shfl_down_sync(0xffffffffu, c, d);
        merge(o);
    }
    __device__ __forceinline__ double result() const
    { // an overflowed or NaN running sum makes c meaningless
        if (s - s != 0.0 || c == 0.0) return s; // keeps the sign of zero sums
        return __dadd_rn(s, c);
    }
};
struct KAccSumI32 {
    unsigned s;
    __device__ __forceinline__ void init() { s = 0u; }
    __device__ __forceinline__ void empty() { init(); }
    __device__ __forceinline__ void add(int x) { s += (unsigned)x; }
    __device__ __forceinline__ void merge(const KAccSumI32 &o) { s += o.s; }
    __device__ __forceinline__ void shfl(int d) { KAccSumI32 o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }
    __device__ __forceinline__ int result() const { return (int)s; }
};
struct KAccSumI64 {
    unsigned long long s;
    __device__ __forceinline__ void init() { s = 0ull; }
    __device__ __forceinline__ void empty() { init(); }
    __device__ __forceinline__ void add(long long x) { s += (unsigned long long)x; }
    __device__ __forceinline__ void merge(const KAccSumI64 &o) { s += o.s; }
    __device__ __forceinline__ void shfl(int d) { KAccSumI64 o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }
    __device__ __forceinline__ long long result() const { return (long long)s; }
};
template <class T> __device__ __forceinline__ T klowest();
template <> __device__ __forceinline__ int klowest<int>() { return -2147483647 - 1; }
template <> __device__ __forceinline__ long long klowest<long long>() { return -9223372036854775807LL - 1; }
template <> __device__ __forceinline__ float klowest<float>() { return __uint_as_float(0xff800000u); }
template <> __device__ __forceinline__ double klowest<double>() { return __longlong_as_double((long long)0xfff0000000000000ull); }
template <class T> __device__ __forceinline__ T khighest();
template <> __device__ __forceinline__ int khighest<int>() { return 2147483647; }
template <> __device__ __forceinline__ long long khighest<long long>() { return 9223372036854775807LL; }
template <> __device__ __forceinline__ float khighest<float>() { return __uint_as_float(0x7f800000u); }
template <> __device__ __forceinline__ double khighest<double>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <class T> struct KAccMax {
    T s;
    __device__ __forceinline__ void init() { s = klowest<T>(); }
    __device__ __forceinline__ void empty() { init(); }
    __device__ __forceinline__ void add(T x) { s = kmax(s, x); }
    __device__ __forceinline__ void merge(const KAccMax &o) { s = kmax(s, o.s); }
    __device__ __forceinline__ void shfl(int d) { KAccMax o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }
    __device__ __forceinline__ T result() const { return s; }
};
template <class T> struct KAccMin {
    T s;
    __device__ __forceinline__ void init() { s = khighest<T>(); }
    __device__ __forceinline__ void empty() { init(); }
    __device__ __forceinline__ void add(T x) { s = kmin(s, x); }
    __device__ __forceinline__ void merge(const KAccMin &o) { s = kmin(s, o.s); }
    __device__ __forceinline__ void shfl(int d) { KAccMin o; o.s = __shfl_down_sync(0xffffffffu, s, d); merge(o); }
    __device__ __forceinline__ T result() const { return s; }
};
template <class A> __device__ __forceinline__ void kwarp_reduce(A &a)
{ // lane 0 ends with the tree-ordered merge of the warp
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) a.shfl(d);
}
// ---- end of preamble

// The worker's correctness checks on the GPU (built once per worker by gpucheck.py with NVRTC,
// no header needed). Semantics: ksweep/kernel/args.py, check_output and OutputCheck; the
// arithmetic is the same as numpy's, in the same order and rounding (no fused multiply-add:
// compiled with --fmad=false and written with _rn intrinsics), so that both agree bit for bit.
//
// Per output, two passes over (got, expected), expected already in the work type W:
//   ks_check_*: counts the elements not finite where the reference is (and the first of them)
//               and the elements beyond atol + rtol * |expected| (and the largest excess);
//   ks_worst_*: when some are beyond, the first element of the largest excess and the largest
//               |got - expected|.
// A passing output costs one read of both arrays and no atomic operation.

typedef unsigned long long u64;

// the summary's slots (u64 each); the two index slots start at ~0, the others at 0
#define S_UNWRITTEN 0
#define S_OVER 1
#define S_WORST_BITS 2 // bits of the largest excess (positive: ordered as unsigned integers)
#define S_MAX_ERR_BITS 3
#define S_FIRST_UNWRITTEN 4
#define S_WORST_INDEX 5

struct ks_half { unsigned short bits; };
struct ks_bool { unsigned char v; };

__device__ __forceinline__ float widen_f(float v) { return v; }
__device__ __forceinline__ double widen_d(float v) { return (double)v; }
__device__ __forceinline__ double widen_d(double v) { return v; }
__device__ __forceinline__ double widen_d(ks_half v) { // exact: every half is a double
    const u64 sign = (u64)(v.bits >> 15) << 63;
    const unsigned exponent = (v.bits >> 10) & 0x1f, mantissa = v.bits & 0x3ff;
    if (exponent == 0) // zero or subnormal: mantissa * 2^-24
        return (sign ? -1.0 : 1.0) * (mantissa * 5.9604644775390625e-08);
    if (exponent == 31) // infinity or NaN
        return __longlong_as_double((long long)(sign | 0x7ff0000000000000ull | (mantissa ? 1ull << 51 : 0)));
    return __longlong_as_double((long long)(sign | ((u64)(exponent - 15 + 1023) << 52) | ((u64)mantissa << 42)));
}
__device__ __forceinline__ double widen_d(ks_bool v) { return v.v ? 1.0 : 0.0; }
__device__ __forceinline__ double widen_d(signed char v) { return (double)v; }
__device__ __forceinline__ double widen_d(unsigned char v) { return (double)v; }
__device__ __forceinline__ double widen_d(short v) { return (double)v; }
__device__ __forceinline__ double widen_d(unsigned short v) { return (double)v; }
__device__ __forceinline__ double widen_d(int v) { return (double)v; }
__device__ __forceinline__ double widen_d(unsigned int v) { return (double)v; }
__device__ __forceinline__ double widen_d(long long v) { return (double)v; }
__device__ __forceinline__ double widen_d(u64 v) { return (double)v; }

template <typename G> __device__ __forceinline__ float widen(G v, float) { return widen_f(v); }
template <typename G> __device__ __forceinline__ double widen(G v, double) { return widen_d(v); }

__device__ __forceinline__ bool is_finite(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }
__device__ __forceinline__ bool is_finite(double x) {
    return ((u64)__double_as_longlong(x) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
__device__ __forceinline__ u64 bits(float x) { return (u64)__float_as_uint(x); }
__device__ __forceinline__ u64 bits(double x) { return (u64)__double_as_longlong(x); }

// |g - e| and its excess over the tolerance, as numpy computes them: |g - e| - (|e| * rtol + atol)
__device__ __forceinline__ float abs_err(float g, float e) { return fabsf(__fsub_rn(g, e)); }
__device__ __forceinline__ double abs_err(double g, double e) { return fabs(__dsub_rn(g, e)); }
__device__ __forceinline__ float excess(float err, float e, float atol, float rtol) {
    return __fsub_rn(err, __fadd_rn(__fmul_rn(fabsf(e), rtol), atol));
}
__device__ __forceinline__ double excess(double err, double e, double atol, double rtol) {
    return __dsub_rn(err, __dadd_rn(__dmul_rn(fabs(e), rtol), atol));
}

template <typename G, typename W>
__device__ void check(const G *got, const W *expected, u64 n, W atol, W rtol, u64 *s) {
    u64 unwritten = 0, first = ~0ull, over = 0, worst = 0;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const W e = expected[i];
        if (!is_finite(e))
            continue; // the reference's own NaN or infinity: not judged
        const W g = widen(got[i], W());
        if (!is_finite(g)) {
            if (unwritten++ == 0)
                first = i; // the grid-stride loop visits a thread's elements in order
            continue;
        }
        const W x = excess(abs_err(g, e), e, atol, rtol);
        if (x > 0) { // NaN (an infinite tolerance) is not
            ++over;
            if (bits(x) > worst)
                worst = bits(x);
        }
    }
    if (unwritten) {
        atomicAdd(&s[S_UNWRITTEN], unwritten);
        atomicMin(&s[S_FIRST_UNWRITTEN], first);
    }
    if (over) {
        atomicAdd(&s[S_OVER], over);
        atomicMax(&s[S_WORST_BITS], worst);
    }
}

template <typename G, typename W>
__device__ void worst(const G *got, const W *expected, u64 n, W atol, W rtol, u64 *s) {
    if (s[S_OVER] == 0)
        return;
    const u64 target = s[S_WORST_BITS];
    u64 at = ~0ull, max_err = 0;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const W e = expected[i];
        const W g = widen(got[i], W());
        if (!is_finite(e) || !is_finite(g))
            continue;
        const W err = abs_err(g, e);
        if (bits(err) > max_err)
            max_err = bits(err);
        const W x = excess(err, e, atol, rtol);
        if (at == ~0ull && x > 0 && bits(x) == target)
            at = i;
    }
    if (at != ~0ull)
        atomicMin(&s[S_WORST_INDEX], at);
    if (max_err)
        atomicMax(&s[S_MAX_ERR_BITS], max_err);
}

#define KS_CHECKS(NAME, G, W)                                                                                 \
    extern "C" __global__ void ks_check_##NAME(const G *got, const W *expected, u64 n, W atol, W rtol,       \
                                               u64 *s) {                                                      \
        check<G, W>(got, expected, n, atol, rtol, s);                                                         \
    }                                                                                                         \
    extern "C" __global__ void ks_worst_##NAME(const G *got, const W *expected, u64 n, W atol, W rtol,       \
                                               u64 *s) {                                                      \
        worst<G, W>(got, expected, n, atol, rtol, s);                                                         \
    }

// NAME: the output's numpy type, then the work type (float32 only for a float32 output and reference)
KS_CHECKS(float32_float32, float, float)
KS_CHECKS(float32_float64, float, double)
KS_CHECKS(float64_float64, double, double)
KS_CHECKS(float16_float64, ks_half, double)
KS_CHECKS(bool_float64, ks_bool, double)
KS_CHECKS(int8_float64, signed char, double)
KS_CHECKS(uint8_float64, unsigned char, double)
KS_CHECKS(int16_float64, short, double)
KS_CHECKS(uint16_float64, unsigned short, double)
KS_CHECKS(int32_float64, int, double)
KS_CHECKS(uint32_float64, unsigned int, double)
KS_CHECKS(int64_float64, long long, double)
KS_CHECKS(uint64_float64, u64, double)

// the number of bytes that differ between a and b (n bytes each): 16 at a time when both are
// 16-byte aligned (device allocations are), the rest one by one
__device__ __forceinline__ unsigned differing(unsigned x) { // bytes of x that are not zero
    x |= x >> 4;
    x |= x >> 2;
    x |= x >> 1; // bit 0 of each byte: the OR of that byte's bits
    return __popc(x & 0x01010101u);
}

extern "C" __global__ void ks_differing_bytes(const unsigned char *a, const unsigned char *b, u64 n, u64 *count) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 start = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const u64 vectors = (((u64)a | (u64)b) & 15) ? 0 : n / 16;
    u64 local = 0;
    const uint4 *a4 = (const uint4 *)a, *b4 = (const uint4 *)b;
    for (u64 i = start; i < vectors; i += stride) {
        const uint4 x = a4[i], y = b4[i];
        local += differing(x.x ^ y.x) + differing(x.y ^ y.y) + differing(x.z ^ y.z) + differing(x.w ^ y.w);
    }
    for (u64 i = vectors * 16 + start; i < n; i += stride)
        local += a[i] != b[i];
    if (local)
        atomicAdd(count, local);
}

// Just enough of CUDA to run ksweep/kernel/gpucheck.cu's kernels on the CPU, one thread after
// another (tests/test_gpucheck.py): the grid is set by ks_emulate_at before each call.
#include <cmath>
#include <math.h>
#include <cstring>

#define __device__
#define __global__
#define __forceinline__ inline

struct ks_dim3 { unsigned x, y, z; };
static ks_dim3 gridDim, blockDim, blockIdx, threadIdx;
extern "C" void ks_emulate_at(unsigned grid, unsigned block, unsigned b, unsigned t) {
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    blockIdx = {b, 0, 0};
    threadIdx = {t, 0, 0};
}

struct uint4 { unsigned x, y, z, w; };

static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline long long __double_as_longlong(double d) { long long v; std::memcpy(&v, &d, 8); return v; }
static inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
// IEEE round-to-nearest, as the _rn intrinsics (built with -ffp-contract=off: no fused multiply-add)
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline unsigned __popc(unsigned x) { return (unsigned)__builtin_popcount(x); }
using std::fabs;


// one thread at a time: plain read-modify-write
template <typename T> T atomicAdd(T *p, T v) { T old = *p; *p = old + v; return old; }
template <typename T> T atomicMin(T *p, T v) { T old = *p; if (v < old) *p = v; return old; }
template <typename T> T atomicMax(T *p, T v) { T old = *p; if (v > old) *p = v; return old; }

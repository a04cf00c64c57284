// c = a + b, one element per thread, ELEMS elements per thread when ELEMS is set.
#ifndef ELEMS
#define ELEMS 1
#endif
#ifndef BAD
#define BAD 0  // 1: write far out of bounds (illegal address), 2: spin forever
#endif
extern "C" __global__ void vadd(float *c, const float *a, const float *b, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * ELEMS;
#if BAD == 1
    c[i + (1 << 30)] = 1.0f;
#elif BAD == 2
    for (;;) asm volatile("nanosleep.u32 1000;");
#endif
#pragma unroll
    for (int e = 0; e < ELEMS; ++e)
        if (i + e < n) c[i + e] = a[i + e] + b[i + e];
}

template <int TILE>
__global__ void vscale(float *c, const float *a, float s, int n) {
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) c[i] = s * a[i];
}

// c = a + b, one element per thread, ELEMS elements per thread when ELEMS is set.
#ifndef ELEMS
#define ELEMS 1
#endif
#ifndef BAD
#define BAD 0  // 1: write far out of bounds (illegal address), 2: spin forever, 3: a cheat (below),
               // 4: also writes into input a, 5: leaves the last element unwritten, 6: element 12345 off by 1
#endif
#if BAD == 3
// The cheat: the first launch computes c and remembers it; every later launch (once a whole
// launch has finished) writes the remembered answer: right for the first input draw only.
__device__ float memo[1 << 24];
__device__ unsigned int blocks_done;
#endif
extern "C" __global__ void vadd(float *c, const float *a, const float *b, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * ELEMS;
#if BAD == 1
    c[i + (1 << 30)] = 1.0f;
#elif BAD == 2
    for (;;) asm volatile("nanosleep.u32 1000;");
#elif BAD == 3
    const bool replay = *(volatile unsigned int *)&blocks_done >= gridDim.x;
#pragma unroll
    for (int e = 0; e < ELEMS; ++e)
        if (i + e < n && i + e < (1 << 24)) {
            const float v = replay ? memo[i + e] : a[i + e] + b[i + e];
            c[i + e] = v;
            if (!replay) memo[i + e] = v;
        }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(&blocks_done, 1u);
#endif
#if BAD != 3
#pragma unroll
    for (int e = 0; e < ELEMS; ++e)
        if (i + e < n - (BAD == 5)) c[i + e] = a[i + e] + b[i + e] + (BAD == 6 && i + e == 12345);
#endif
#if BAD == 4
    if (i < n) ((float *)a)[i] = 0.0f;
#endif
}

template <int TILE>
__global__ void vscale(float *c, const float *a, float s, int n) {
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) c[i] = s * a[i];
}

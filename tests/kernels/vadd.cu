// c = a + b, one element per thread, ELEMS elements per thread when ELEMS is set.
#ifndef ELEMS
#define ELEMS 1
#endif
extern "C" __global__ void vadd(float *c, const float *a, const float *b, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * ELEMS;
#pragma unroll
    for (int e = 0; e < ELEMS; ++e)
        if (i + e < n) c[i + e] = a[i + e] + b[i + e];
}

template <int TILE>
__global__ void vscale(float *c, const float *a, float s, int n) {
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) c[i] = s * a[i];
}

// Three kernels named and shaped as in Kernel Tuner's CUDA examples (matmul, convolution,
// pnpoly), written for ksweep's tests: they only need to build; the stand-in backend
// (fake_kt.py) computes what they would. tile_size 3 does not compile (a planted failure).
#ifndef block_size_x
#define block_size_x 16
#endif
#ifndef tile_size
#define tile_size 1
#endif
#if tile_size == 3
#error "tile_size 3 is not supported"
#endif

__constant__ float d_filter[3 * 3];
__constant__ float2 d_vertices[16];

extern "C" __global__ void matmul_kernel(float *C, const float *A, const float *B) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    C[i] = A[i] * B[i];
}

extern "C" __global__ void convolution_kernel(float *out, const float *in, const float *filter) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i] * d_filter[0] + filter[0];
}

extern "C" __global__ void cn_pnpoly(int *bitmap, const float2 *points, int n) {
    int i = blockIdx.x * block_size_x * tile_size + threadIdx.x;
    if (i < n) bitmap[i] = points[i].x < d_vertices[0].x;
}

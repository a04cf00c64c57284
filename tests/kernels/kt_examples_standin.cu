// Stand-ins for Kernel Tuner's convolution.cu and pnpoly.cu (which are not part of this
// repository), written for ksweep's tests of bench/kt_examples_vs_kerneltuner.py: the same
// kernel names and parameter types (so the same C++ names in the cubin), the same
// __constant__ arrays and the same tunable parameters as -D flags. They only need to build;
// the stand-in backend (fake_kt_examples.py) computes what the real kernels compute.
#ifndef filter_height
#define filter_height 17
#endif
#ifndef tile_size
#define tile_size 1
#endif

__constant__ float d_filter[33 * 33];
__constant__ float2 d_vertices[600];
__constant__ float d_slopes[600];

__global__ void convolution_kernel(float *output, float *input, float *filter) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    output[i] = input[i] * d_filter[filter_height] + filter[0];
}

__global__ void cn_pnpoly(int *bitmap, float2 *points, int n) {
    int i = blockIdx.x * blockDim.x * tile_size + threadIdx.x;
    if (i < n) bitmap[i] = points[i].x < d_vertices[0].x + d_slopes[0];
}

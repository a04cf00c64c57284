// Kernels whose register use is set by N: small N fits in a few registers, large N needs
// many (or spills under -maxrregcount). Used by the nvcc/ptxas tests.
#ifndef N
#define N 2
#endif
__global__ void work(float* out, const float* in) {
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = in[i * blockDim.x + threadIdx.x];
#pragma unroll
  for (int j = 0; j < 3; ++j)
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = acc[i] * acc[(i + j + 1) % N] + 1.0f;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) s += acc[i] * in[i];
  out[threadIdx.x] = s;
}
__global__ void tiled(float* a) {
  __shared__ float t[512];
  t[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = t[511 - threadIdx.x];
}

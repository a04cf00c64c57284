// A harness that never checks for errors: with FAULT=1 its kernel writes through a null
// pointer, the program still prints a result and returns 0, and only the CUDA context
// knows. A persistent host must notice (the context is broken) and start afresh.
#include <cstdio>
#include <cuda_runtime.h>

#ifndef FAULT
#define FAULT 0
#endif

__global__ void touch(float *p) { p[threadIdx.x] = 1.0f; }

int main() {
  float *d = nullptr;
  if (!FAULT) cudaMalloc(&d, 256 * sizeof(float));
  touch<<<1, 256>>>(d);
  cudaDeviceSynchronize();
  if (d) cudaFree(d);
  printf("@@RESULT ms=1 checksum=1.0\n");
  return 0;
}

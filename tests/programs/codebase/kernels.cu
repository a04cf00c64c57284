// Several kernels in one translation unit, as a runner that compiles a dozen: only `tuned`
// is swept; `untouched` spills whatever the config (its launch bounds cap its registers).
#ifndef TM
#define TM 4
#endif
template <int BM>
__global__ void tuned(float* out, const float* in) {
  float acc[TM];
#pragma unroll
  for (int i = 0; i < TM; ++i) acc[i] = in[i * BM + threadIdx.x];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < TM; ++i) s += acc[i] * acc[(i + 1) % TM];
  out[threadIdx.x] = s;
}
template __global__ void tuned<64>(float*, const float*);

__global__ void __launch_bounds__(1024, 2) untouched(float* out, const float* in) {
  float acc[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) acc[i] = in[i * blockDim.x + threadIdx.x];
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int i = 0; i < 96; ++i) acc[i] = acc[i] * acc[(i + j + 7) % 96] + 1.0f;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 96; ++i) s += acc[i] * in[i];
  out[threadIdx.x] = s;
}

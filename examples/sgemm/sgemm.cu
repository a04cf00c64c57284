// FP32 SGEMM, C = A * B (row-major, A: MxK, B: KxN, C: MxN), in the style of
// siboehm's "warptiling" kernel (the "Kernel 9/10" of the SGEMM-from-scratch series):
//
//   block tile  BM x BN, stepping through K in chunks of BK
//   warp tile   WM x WN, split into WMITER x WNITER sub-tiles of WSUBM x WSUBN
//   thread tile TM x TN inside each warp sub-tile (32 threads cover one sub-tile)
//
// A is stored transposed in shared memory (As[k][m]) so the inner loop reads both
// operands along contiguous addresses; global loads are float4.
//
// Every tunable is #ifndef-guarded, so the file builds alone with the defaults:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas=-v -o sgemm sgemm.cu -lcublas
//   ./sgemm 4096 4096 4096
// and ksweep passes -DBM=... -DBN=... etc. The harness (main) compares with cuBLAS
// SGEMM (TF32 off) and prints one machine-readable line:
//   @@RESULT ms=... gflops=... cublas_ms=... cublas_gflops=... rel_err=... checksum=...

#ifndef KSWEEP_KERNEL_ONLY  // -DKSWEEP_KERNEL_ONLY: the kernel alone (no cuBLAS, no main), e.g. for ptxas checks
#include <cublas_v2.h>
#endif
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

// ---------------------------------------------------------------- tunables ----
#ifndef BM
#define BM 128  // block tile rows (of C)
#endif
#ifndef BN
#define BN 128  // block tile columns (of C)
#endif
#ifndef BK
#define BK 16  // K step per shared-memory tile
#endif
#ifndef WM
#define WM 64  // warp tile rows
#endif
#ifndef WN
#define WN 64  // warp tile columns
#endif
#ifndef WNITER
#define WNITER 4  // warp sub-tiles along N (WMITER is derived)
#endif
#ifndef TM
#define TM 8  // thread tile rows
#endif
#ifndef TN
#define TN 4  // thread tile columns
#endif
#ifndef NUM_THREADS
#define NUM_THREADS 128  // must equal (BM/WM)*(BN/WN)*32
#endif

constexpr int WARPSIZE = 32;
// WMITER: how many WSUBM-row sub-tiles one warp sweeps so that each of its 32 threads
// owns TM x TN results per (WMITER, WNITER) sub-tile.
constexpr int WMITER = (WM * WN) / (WARPSIZE * TM * TN * WNITER);
constexpr int WSUBM = WMITER > 0 ? WM / WMITER : 1;  // rows of one warp sub-tile
constexpr int WSUBN = WN / WNITER;                   // columns of one warp sub-tile
constexpr int SMEM_BYTES = (BM * BK + BK * BN) * (int)sizeof(float);

// -------------------------------------------------- validity of the config ----
// The same rules are the constraints of sgemm.toml; a config that breaks one of them
// fails to compile here instead of computing garbage.
static_assert(BM % WM == 0 && BN % WN == 0, "block tile must be a whole number of warp tiles");
static_assert((BM / WM) * (BN / WN) * WARPSIZE == NUM_THREADS, "NUM_THREADS must be (BM/WM)*(BN/WN)*32");
static_assert(NUM_THREADS <= 1024, "at most 1024 threads per block");
static_assert(WMITER >= 1, "warp tile too small for 32 threads of TM x TN x WNITER");
static_assert(WMITER * WARPSIZE * TM * TN * WNITER == WM * WN, "WM*WN must be a multiple of 32*TM*TN*WNITER");
static_assert(WM % (WMITER * TM) == 0, "WM must split into WMITER sub-tiles of whole TM rows");
static_assert(WN % (WNITER * TN) == 0, "WN must split into WNITER sub-tiles of whole TN columns");
static_assert((WSUBM / TM) * (WSUBN / TN) == WARPSIZE, "one warp sub-tile must hold exactly 32 thread tiles");
static_assert(TN % 4 == 0, "TN must be a multiple of 4 (float4 loads of Bs and stores of C)");
static_assert(BK % 4 == 0 && BN % 4 == 0 && BM % 4 == 0, "float4 global loads need BK, BN (and BM) % 4 == 0");
static_assert((BM * BK) % (4 * NUM_THREADS) == 0, "A tile (BM*BK floats) must split evenly into float4 loads per thread");
static_assert((BN * BK) % (4 * NUM_THREADS) == 0, "B tile (BK*BN floats) must split evenly into float4 loads per thread");

#define CUDA_CHECK(call)                                                                      \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__, __LINE__, \
              cudaGetErrorString(err_));                                                      \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

#ifndef KSWEEP_KERNEL_ONLY
#define CUBLAS_CHECK(call)                                                                 \
  do {                                                                                     \
    cublasStatus_t st_ = (call);                                                           \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                    \
      fprintf(stderr, "cuBLAS error %d at %s:%d: %s\n", (int)st_, __FILE__, __LINE__, \
              cublasGetStatusString(st_));                                                 \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

#endif

// ------------------------------------------------------------------ kernel ----
__global__ void __launch_bounds__(NUM_THREADS, 1)
    sgemm_warptiling(int M, int N, int K, const float *__restrict__ A, const float *__restrict__ B,
                     float *__restrict__ C) {
  extern __shared__ __align__(16) float smem[];
  float *As = smem;            // [BK][BM]: A tile, transposed
  float *Bs = smem + BM * BK;  // [BK][BN]: B tile

  const int cRow = blockIdx.y;  // block tile row of C
  const int cCol = blockIdx.x;  // block tile column of C

  const int warpIdx = threadIdx.x / WARPSIZE;
  const int warpCol = warpIdx % (BN / WN);
  const int warpRow = warpIdx / (BN / WN);

  const int lane = threadIdx.x % WARPSIZE;
  const int threadColInWarp = lane % (WSUBN / TN);
  const int threadRowInWarp = lane / (WSUBN / TN);

  A += (size_t)cRow * BM * K;
  B += (size_t)cCol * BN;
  C += ((size_t)cRow * BM + warpRow * WM) * N + (size_t)cCol * BN + warpCol * WN;

  float threadResults[WMITER * TM * WNITER * TN];
#pragma unroll
  for (int i = 0; i < WMITER * TM * WNITER * TN; ++i) threadResults[i] = 0.0f;
  float regM[WMITER * TM];
  float regN[WNITER * TN];

  for (int bkIdx = 0; bkIdx < K; bkIdx += BK) {
    // Global -> shared. Thread t loads float4 number t, t + NUM_THREADS, ... of the tile;
    // with NUM_THREADS % (BK/4) == 0 this is exactly the innerRowA / rowStrideA scheme of
    // the original (row = t / (BK/4) + it * rowStrideA), and it stays correct otherwise.
#pragma unroll
    for (int it = 0; it < (BM * BK / 4) / NUM_THREADS; ++it) {
      const int idx = threadIdx.x + it * NUM_THREADS;
      const int row = idx / (BK / 4);
      const int col4 = idx % (BK / 4);
      const float4 tmp = *reinterpret_cast<const float4 *>(&A[(size_t)row * K + col4 * 4]);
      As[(col4 * 4 + 0) * BM + row] = tmp.x;
      As[(col4 * 4 + 1) * BM + row] = tmp.y;
      As[(col4 * 4 + 2) * BM + row] = tmp.z;
      As[(col4 * 4 + 3) * BM + row] = tmp.w;
    }
#pragma unroll
    for (int it = 0; it < (BN * BK / 4) / NUM_THREADS; ++it) {
      const int idx = threadIdx.x + it * NUM_THREADS;
      const int row = idx / (BN / 4);
      const int col4 = idx % (BN / 4);
      *reinterpret_cast<float4 *>(&Bs[row * BN + col4 * 4]) =
          *reinterpret_cast<const float4 *>(&B[(size_t)row * N + col4 * 4]);
    }
    __syncthreads();

#pragma unroll
    for (int dotIdx = 0; dotIdx < BK; ++dotIdx) {
      // shared -> registers
#pragma unroll
      for (int wSubRowIdx = 0; wSubRowIdx < WMITER; ++wSubRowIdx) {
        const float *src = &As[dotIdx * BM + warpRow * WM + wSubRowIdx * WSUBM + threadRowInWarp * TM];
        if constexpr (TM % 4 == 0) {
#pragma unroll
          for (int i = 0; i < TM; i += 4) {
            const float4 v = *reinterpret_cast<const float4 *>(src + i);
            regM[wSubRowIdx * TM + i + 0] = v.x;
            regM[wSubRowIdx * TM + i + 1] = v.y;
            regM[wSubRowIdx * TM + i + 2] = v.z;
            regM[wSubRowIdx * TM + i + 3] = v.w;
          }
        } else {
#pragma unroll
          for (int i = 0; i < TM; ++i) regM[wSubRowIdx * TM + i] = src[i];
        }
      }
#pragma unroll
      for (int wSubColIdx = 0; wSubColIdx < WNITER; ++wSubColIdx) {
        const float *src = &Bs[dotIdx * BN + warpCol * WN + wSubColIdx * WSUBN + threadColInWarp * TN];
#pragma unroll
        for (int i = 0; i < TN; i += 4) {
          const float4 v = *reinterpret_cast<const float4 *>(src + i);
          regN[wSubColIdx * TN + i + 0] = v.x;
          regN[wSubColIdx * TN + i + 1] = v.y;
          regN[wSubColIdx * TN + i + 2] = v.z;
          regN[wSubColIdx * TN + i + 3] = v.w;
        }
      }
      // outer products
#pragma unroll
      for (int wSubRowIdx = 0; wSubRowIdx < WMITER; ++wSubRowIdx)
#pragma unroll
        for (int wSubColIdx = 0; wSubColIdx < WNITER; ++wSubColIdx)
#pragma unroll
          for (int resIdxM = 0; resIdxM < TM; ++resIdxM)
#pragma unroll
            for (int resIdxN = 0; resIdxN < TN; ++resIdxN)
              threadResults[(wSubRowIdx * TM + resIdxM) * (WNITER * TN) + wSubColIdx * TN + resIdxN] +=
                  regM[wSubRowIdx * TM + resIdxM] * regN[wSubColIdx * TN + resIdxN];
    }
    A += BK;
    B += (size_t)BK * N;
    __syncthreads();
  }

  // registers -> global, float4 stores
#pragma unroll
  for (int wSubRowIdx = 0; wSubRowIdx < WMITER; ++wSubRowIdx) {
#pragma unroll
    for (int wSubColIdx = 0; wSubColIdx < WNITER; ++wSubColIdx) {
      float *Cw = C + (size_t)(wSubRowIdx * WSUBM) * N + wSubColIdx * WSUBN;
#pragma unroll
      for (int resIdxM = 0; resIdxM < TM; ++resIdxM) {
#pragma unroll
        for (int resIdxN = 0; resIdxN < TN; resIdxN += 4) {
          const int i = (wSubRowIdx * TM + resIdxM) * (WNITER * TN) + wSubColIdx * TN + resIdxN;
          float4 v;
          v.x = threadResults[i + 0];
          v.y = threadResults[i + 1];
          v.z = threadResults[i + 2];
          v.w = threadResults[i + 3];
          *reinterpret_cast<float4 *>(&Cw[(size_t)(threadRowInWarp * TM + resIdxM) * N + threadColInWarp * TN + resIdxN]) = v;
        }
      }
    }
  }
}

#ifndef KSWEEP_KERNEL_ONLY
// ------------------------------------------------------------------ harness ----
static void launch(int M, int N, int K, const float *A, const float *B, float *C, cudaStream_t s) {
  dim3 grid(N / BN, M / BM);
  sgemm_warptiling<<<grid, NUM_THREADS, SMEM_BYTES, s>>>(M, N, K, A, B, C);
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
static float time_median_ms(F &&fn, int warmup, int reps, cudaStream_t s) {
  for (int i = 0; i < warmup; ++i) fn();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto &e : ev) CUDA_CHECK(cudaEventCreate(&e));
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(ev[2 * r], s));
    fn();
    CUDA_CHECK(cudaEventRecord(ev[2 * r + 1], s));
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<float> ms(reps);
  for (int r = 0; r < reps; ++r) CUDA_CHECK(cudaEventElapsedTime(&ms[r], ev[2 * r], ev[2 * r + 1]));
  for (auto &e : ev) CUDA_CHECK(cudaEventDestroy(e));
  return median(ms);
}

static int parse_dim(const char *s, const char *name) {
  char *end = nullptr;
  long v = strtol(s, &end, 10);
  if (!end || *end || v <= 0 || v > (1L << 20)) {
    fprintf(stderr, "bad %s: '%s'\n", name, s);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char **argv) {
  int M = 4096, N = 4096, K = 4096;
  if (argc != 1 && argc != 4) {
    fprintf(stderr, "usage: %s [M N K]\n", argv[0]);
    return 2;
  }
  if (argc == 4) {
    M = parse_dim(argv[1], "M");
    N = parse_dim(argv[2], "N");
    K = parse_dim(argv[3], "K");
  }
  if (M % BM || N % BN || K % BK) {
    fprintf(stderr, "shape %dx%dx%d is not a multiple of the block tile BM=%d BN=%d BK=%d\n", M, N, K, BM, BN, BK);
    return 2;
  }
  printf("sgemm M=%d N=%d K=%d | BM=%d BN=%d BK=%d WM=%d WN=%d WMITER=%d WNITER=%d TM=%d TN=%d threads=%d smem=%d B\n",
         M, N, K, BM, BN, BK, WM, WN, WMITER, WNITER, TM, TN, NUM_THREADS, SMEM_BYTES);

  const size_t nA = (size_t)M * K, nB = (size_t)K * N, nC = (size_t)M * N;
  std::vector<float> hA(nA), hB(nB);
  uint64_t state = 0x9E3779B97F4A7C15ull;  // fixed seed
  auto next_uniform = [&state]() {         // xorshift64*, uniform in [-1, 1)
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const uint64_t r = state * 0x2545F4914F6CDD1Dull;
    return (float)((double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
  };
  for (auto &x : hA) x = next_uniform();
  for (auto &x : hB) x = next_uniform();

  float *dA, *dB, *dC, *dRef;
  CUDA_CHECK(cudaMalloc(&dA, nA * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dB, nB * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dC, nC * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dRef, nC * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dA, hA.data(), nA * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dB, hB.data(), nB * sizeof(float), cudaMemcpyHostToDevice));

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));

  if (SMEM_BYTES > 48 * 1024)  // dynamic shared memory above 48 KB needs the opt-in
    CUDA_CHECK(cudaFuncSetAttribute(sgemm_warptiling, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));

  // cuBLAS: plain FP32. CUBLAS_DEFAULT_MATH never uses TF32 (that needs CUBLAS_TF32_TENSOR_OP_MATH
  // or NVIDIA_TF32_OVERRIDE=1); refuse to run if the override would force it on.
  const char *tf32 = getenv("NVIDIA_TF32_OVERRIDE");
  if (tf32 && tf32[0] && tf32[0] != '0') {
    fprintf(stderr, "NVIDIA_TF32_OVERRIDE=%s would let cuBLAS use TF32; unset it\n", tf32);
    return 2;
  }
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A*B is column-major C^T = B^T * A^T.
  auto run_cublas = [&]() {
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, dB, N, dA, K, &beta, dRef, N));
  };
  auto run_kernel = [&]() { launch(M, N, K, dA, dB, dC, stream); };

  // Reference (cuBLAS), then one checked run of the kernel into a poisoned C (NaN bytes).
  run_cublas();
  CUDA_CHECK(cudaMemsetAsync(dC, 0xFF, nC * sizeof(float), stream));
  run_kernel();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<float> hC(nC), hRef(nC);
  CUDA_CHECK(cudaMemcpy(hC.data(), dC, nC * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hRef.data(), dRef, nC * sizeof(float), cudaMemcpyDeviceToHost));
  double diff2 = 0.0, ref2 = 0.0, checksum = 0.0;
  size_t nonfinite = 0;
  for (size_t i = 0; i < nC; ++i) {
    const double c = hC[i], r = hRef[i];
    if (!std::isfinite(c)) {
      ++nonfinite;
      continue;
    }
    diff2 += (c - r) * (c - r);
    ref2 += r * r;
    checksum += c;
  }
  double rel_err = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? 1.0 : 0.0);
  if (nonfinite) {
    fprintf(stderr, "ERROR: %zu of %zu elements of C are not finite (unwritten or NaN)\n", nonfinite, nC);
    rel_err = 1e30;  // fails any [check] bound; NaN would not
  }

  const int warmup = 3, reps = 25;
  const float ms = time_median_ms(run_kernel, warmup, reps, stream);
  const float cublas_ms = time_median_ms(run_cublas, warmup, reps, stream);
  const double flops = 2.0 * M * N * (double)K;
  const double gflops = flops / (ms * 1e-3) / 1e9;
  const double cublas_gflops = flops / (cublas_ms * 1e-3) / 1e9;

  printf("kernel %.4f ms (%.1f GFLOP/s), cuBLAS %.4f ms (%.1f GFLOP/s), %.1f%% of cuBLAS, rel_err %.3e\n", ms,
         gflops, cublas_ms, cublas_gflops, 100.0 * cublas_ms / ms, rel_err);
  printf("@@RESULT ms=%.6f gflops=%.3f cublas_ms=%.6f cublas_gflops=%.3f rel_err=%.6e checksum=%.10e\n", ms, gflops,
         cublas_ms, cublas_gflops, rel_err, checksum);

  CUBLAS_CHECK(cublasDestroy(handle));
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC));
  CUDA_CHECK(cudaFree(dRef));
  return 0;
}
#endif  // KSWEEP_KERNEL_ONLY

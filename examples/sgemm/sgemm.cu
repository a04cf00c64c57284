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
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas=-v -I$(ksweep include) -o sgemm sgemm.cu -lcublas
//   ./sgemm 4096 4096 4096
// and ksweep passes -DBM=... -DBN=... etc. The harness (main) compares with cuBLAS
// SGEMM (TF32 off) and prints one machine-readable line:
//   @@RESULT ms=... gflops=... cublas_ms=... cublas_gflops=... rel_err=... checksum=...
//
// The same file also builds in two halves, which is how sgemm.toml sweeps it: the kernel
// alone as a cubin per config (-DKSWEEP_KERNEL_ONLY -cubin), and the harness once
// (-DSGEMM_CUBIN, linked with -lcuda), which loads the cubin named by its first argument:
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -DSGEMM_CUBIN -I$(ksweep include) -o harness sgemm.cu -lcublas -lcuda
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -cubin -DKSWEEP_KERNEL_ONLY -DBM=64 ... -o k.cubin sgemm.cu
//   ./harness k.cubin 4096 4096 4096
// A config then costs nvcc only its kernel (less than half the CPU time of the whole program).

#ifndef KSWEEP_KERNEL_ONLY  // -DKSWEEP_KERNEL_ONLY: the kernel alone (no cuBLAS, no main), e.g. a cubin
#include <cublas_v2.h>
#include <ksweep.h>  // the measurement: nvcc -I$(ksweep include)
#endif
#ifdef SGEMM_CUBIN  // -DSGEMM_CUBIN: the harness alone; the kernel comes from a cubin at run time
#include <cuda.h>
#endif
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

// The launch configuration of one compiled kernel. A cubin carries its own copy
// (sgemm_config below), so the harness can launch a kernel it was not compiled with.
struct TileConfig {  // lower case: the upper-case names are the tunables' macros
  int bm, bn, bk, wm, wn, wmiter, wniter, tm, tn, threads, smem;
};

#ifndef SGEMM_CUBIN
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

#define TILE_CONFIG {BM, BN, BK, WM, WN, WMITER, WNITER, TM, TN, NUM_THREADS, SMEM_BYTES}
__constant__ TileConfig sgemm_config = TILE_CONFIG;  // read by a -DSGEMM_CUBIN harness

// ------------------------------------------------------------------ kernel ----
// extern "C": a plain symbol name, for cuModuleGetFunction
extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
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

#endif  // !SGEMM_CUBIN

#ifndef KSWEEP_KERNEL_ONLY
// ------------------------------------------------------------------ harness ----
#define CUDA_CHECK(call)                                                                      \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) {                                                                \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__, __LINE__, \
              cudaGetErrorString(err_));                                                      \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

#define CUBLAS_CHECK(call)                                                                 \
  do {                                                                                     \
    cublasStatus_t st_ = (call);                                                           \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                    \
      fprintf(stderr, "cuBLAS error %d at %s:%d: %s\n", (int)st_, __FILE__, __LINE__, \
              cublasGetStatusString(st_));                                                 \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

// The kernel under test and how to launch it.
#ifdef SGEMM_CUBIN
#define CU_CHECK(call)                                                                        \
  do {                                                                                        \
    CUresult res_ = (call);                                                                   \
    if (res_ != CUDA_SUCCESS) {                                                               \
      const char *name_ = nullptr;                                                            \
      cuGetErrorName(res_, &name_);                                                           \
      fprintf(stderr, "CUDA error %s at %s:%d\n", name_ ? name_ : "?", __FILE__, __LINE__);   \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

// Loaded from a cubin of this file built with -DKSWEEP_KERNEL_ONLY; its sgemm_config says
// how to launch it. Needs the current context (made by the first runtime call).
class Kernel {
 public:
  explicit Kernel(const char *cubin) {
    CU_CHECK(cuModuleLoad(&module_, cubin));
    CU_CHECK(cuModuleGetFunction(&fn_, module_, "sgemm_warptiling"));
    CUdeviceptr config = 0;
    size_t bytes = 0;
    CU_CHECK(cuModuleGetGlobal(&config, &bytes, module_, "sgemm_config"));
    if (bytes != sizeof cfg) {
      fprintf(stderr, "%s: sgemm_config has %zu bytes, expected %zu\n", cubin, bytes, sizeof cfg);
      exit(2);
    }
    CU_CHECK(cuMemcpyDtoH(&cfg, config, sizeof cfg));
    if (cfg.smem > 48 * 1024)  // dynamic shared memory above 48 KB needs the opt-in
      CU_CHECK(cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, cfg.smem));
  }
  ~Kernel() { cuModuleUnload(module_); }  // a persistent host runs many configs in one context
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;

  void launch(int M, int N, int K, const float *A, const float *B, float *C, cudaStream_t s) const {
    void *args[] = {&M, &N, &K, &A, &B, &C};
    CU_CHECK(cuLaunchKernel(fn_, N / cfg.bn, M / cfg.bm, 1, cfg.threads, 1, 1, cfg.smem, s, args, nullptr));
  }

  TileConfig cfg{};

 private:
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
};
#else
// Compiled into this program with the tunables above.
class Kernel {
 public:
  explicit Kernel(const char *) {
    if (SMEM_BYTES > 48 * 1024)  // dynamic shared memory above 48 KB needs the opt-in
      CUDA_CHECK(cudaFuncSetAttribute(sgemm_warptiling, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  }
  void launch(int M, int N, int K, const float *A, const float *B, float *C, cudaStream_t s) const {
    dim3 grid(N / BN, M / BM);
    sgemm_warptiling<<<grid, NUM_THREADS, SMEM_BYTES, s>>>(M, N, K, A, B, C);
  }
  const TileConfig cfg = TILE_CONFIG;
};
#endif

// Everything but the launch and the timing loop stays on the GPU: inputs are generated
// there, the check reduces there, so a run costs little more than the kernel's own time.

// Uniform values in [-1, 1) from a hash of (seed, index): the same inputs in every run.
__global__ void fill_uniform(float *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = (float)((double)(z >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
  }
}

// Per-warp partial sums of (c - r)^2, r^2 and c over finite c, and a count of non-finite c
// (warp shuffles, no shared memory: ptxas's report stays the GEMM kernel's).
constexpr int CHECK_THREADS = 256;
constexpr int CHECK_BLOCKS = 1024;
constexpr int CHECK_PARTIALS = CHECK_BLOCKS * CHECK_THREADS / 32;
struct Partial {
  double diff2, ref2, sum, nonfinite;
};
__global__ void __launch_bounds__(CHECK_THREADS) compare(const float *c, const float *r, size_t n, Partial *out) {
  double d2 = 0, r2 = 0, s = 0, bad = 0;
  for (size_t i = blockIdx.x * (size_t)CHECK_THREADS + threadIdx.x; i < n; i += (size_t)gridDim.x * CHECK_THREADS) {
    const double cv = c[i], rv = r[i];
    if (!isfinite(cv)) {
      bad += 1;
      continue;
    }
    d2 += (cv - rv) * (cv - rv);
    r2 += rv * rv;
    s += cv;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    d2 += __shfl_down_sync(0xffffffffu, d2, offset);
    r2 += __shfl_down_sync(0xffffffffu, r2, offset);
    s += __shfl_down_sync(0xffffffffu, s, offset);
    bad += __shfl_down_sync(0xffffffffu, bad, offset);
  }
  if (threadIdx.x % 32 == 0) out[(blockIdx.x * CHECK_THREADS + threadIdx.x) / 32] = {d2, r2, s, bad};
}

// Timing is ksweep.h's (warm-up, repetitions by a time budget, CUDA events, L2 flushed
// before each repetition, median and percentiles): nvcc -I$(ksweep include) ...
static ksweep::TimeOptions timing(float target_ms) {
  ksweep::TimeOptions o;
  o.target_ms = target_ms;
  o.warmup = 1;
  o.min_reps = 7;
  o.max_reps = 25;
  return o;
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

static double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv) {
  const auto t_start = std::chrono::steady_clock::now();
#ifdef SGEMM_CUBIN
  const int first = 2;  // argv[1]: the kernel's cubin
  const char *usage = "usage: %s CUBIN [M N K]\n";
#else
  const int first = 1;
  const char *usage = "usage: %s [M N K]\n";
#endif
  int M = 4096, N = 4096, K = 4096;
  if (argc != first && argc != first + 3) {
    fprintf(stderr, usage, argv[0]);
    return 2;
  }
  if (argc == first + 3) {
    M = parse_dim(argv[first], "M");
    N = parse_dim(argv[first + 1], "N");
    K = parse_dim(argv[first + 2], "K");
  }
  // cuBLAS: plain FP32. CUBLAS_DEFAULT_MATH never uses TF32 (that needs CUBLAS_TF32_TENSOR_OP_MATH
  // or NVIDIA_TF32_OVERRIDE=1); refuse to run if the override would force it on.
  const char *tf32 = getenv("NVIDIA_TF32_OVERRIDE");
  if (tf32 && tf32[0] && tf32[0] != '0') {
    fprintf(stderr, "NVIDIA_TF32_OVERRIDE=%s would let cuBLAS use TF32; unset it\n", tf32);
    return 2;
  }

  CUDA_CHECK(cudaFree(nullptr));  // the CUDA context
  const double t_context = seconds_since(t_start);
  const Kernel kernel(argv[1]);
  const TileConfig &c = kernel.cfg;
  printf("sgemm M=%d N=%d K=%d | BM=%d BN=%d BK=%d WM=%d WN=%d WMITER=%d WNITER=%d TM=%d TN=%d threads=%d smem=%d B\n",
         M, N, K, c.bm, c.bn, c.bk, c.wm, c.wn, c.wmiter, c.wniter, c.tm, c.tn, c.threads, c.smem);
  if (M % c.bm || N % c.bn || K % c.bk) {
    fprintf(stderr, "shape %dx%dx%d is not a multiple of the block tile BM=%d BN=%d BK=%d\n", M, N, K, c.bm, c.bn,
            c.bk);
    return 2;
  }

  const size_t nA = (size_t)M * K, nB = (size_t)K * N, nC = (size_t)M * N;
  float *dA, *dB, *dC, *dRef;
  Partial *dPartial;
  CUDA_CHECK(cudaMalloc(&dA, nA * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dB, nB * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dC, nC * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dRef, nC * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dPartial, CHECK_PARTIALS * sizeof(Partial)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  fill_uniform<<<1024, 256, 0, stream>>>(dA, nA, 1);
  fill_uniform<<<1024, 256, 0, stream>>>(dB, nB, 2);
  CUDA_CHECK(cudaGetLastError());

  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  const double t_setup = seconds_since(t_start);
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A*B is column-major C^T = B^T * A^T.
  auto run_cublas = [&]() {
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, dB, N, dA, K, &beta, dRef, N));
  };
  auto run_kernel = [&]() { kernel.launch(M, N, K, dA, dB, dC, stream); };

  // Reference (cuBLAS), then one checked run of the kernel into a poisoned C (NaN bytes).
  run_cublas();
  CUDA_CHECK(cudaMemsetAsync(dC, 0xFF, nC * sizeof(float), stream));
  run_kernel();
  CUDA_CHECK(cudaGetLastError());
  compare<<<CHECK_BLOCKS, CHECK_THREADS, 0, stream>>>(dC, dRef, nC, dPartial);
  std::vector<Partial> partial(CHECK_PARTIALS);
  CUDA_CHECK(cudaMemcpyAsync(partial.data(), dPartial, CHECK_PARTIALS * sizeof(Partial), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  double diff2 = 0.0, ref2 = 0.0, checksum = 0.0, nonfinite = 0.0;
  for (const Partial &p : partial) {  // a fixed order: the same sums every run
    diff2 += p.diff2;
    ref2 += p.ref2;
    checksum += p.sum;
    nonfinite += p.nonfinite;
  }
  double rel_err = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? 1.0 : 0.0);
  if (nonfinite > 0) {
    fprintf(stderr, "ERROR: %.0f of %zu elements of C are not finite (unwritten or NaN)\n", nonfinite, nC);
    rel_err = 1e30;  // fails any [check] bound; NaN would not
  }
  const double t_check = seconds_since(t_start);

  const ksweep::Stats kt = ksweep::Timer(stream, timing(100.0f)).time(run_kernel);
  const ksweep::Stats ct = ksweep::Timer(stream, timing(50.0f)).time(run_cublas);
  const double ms = kt.median, cublas_ms = ct.median;
  const int reps = kt.reps, cublas_reps = ct.reps;
  const double flops = 2.0 * M * N * (double)K;
  const double gflops = flops / (ms * 1e-3) / 1e9;
  const double cublas_gflops = flops / (cublas_ms * 1e-3) / 1e9;
  const double t_timed = seconds_since(t_start);

  printf("kernel %.4f ms (%.1f GFLOP/s, median of %d), cuBLAS %.4f ms (%.1f GFLOP/s, median of %d), %.1f%% of cuBLAS, "
         "rel_err %.3e\n", ms, gflops, reps, cublas_ms, cublas_gflops, cublas_reps, 100.0 * cublas_ms / ms, rel_err);
  ksweep::Result()
      .add("ms", ms).add("p20_ms", kt.p20).add("p80_ms", kt.p80).add("gflops", gflops)
      .add("cublas_ms", cublas_ms).add("cublas_gflops", cublas_gflops).add("rel_err", rel_err)
      .add("checksum", checksum)
      .print();

  CUBLAS_CHECK(cublasDestroy(handle));
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(dA));
  CUDA_CHECK(cudaFree(dB));
  CUDA_CHECK(cudaFree(dC));
  CUDA_CHECK(cudaFree(dRef));
  CUDA_CHECK(cudaFree(dPartial));
  fprintf(stderr, "harness seconds: context %.3f, inputs+cuBLAS handle %.3f, reference+check %.3f, timing %.3f, "
          "total in main %.3f\n", t_context, t_setup - t_context, t_check - t_setup, t_timed - t_check,
          seconds_since(t_start));
  return 0;
}
#endif  // KSWEEP_KERNEL_ONLY

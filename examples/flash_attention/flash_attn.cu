// FlashAttention-2 style forward pass, FP16 in / FP16 out, FP32 accumulation, on tensor
// cores through mma.sync.m16n8k16 (sm_80+ PTX, runs on sm_90a).
//
//   O = softmax(Q K^T / sqrt(D)) V,  Q, K, V, O: [B, H, S, D] contiguous, optional causal mask
//
// One thread block computes BLOCK_M query rows of one (batch, head); its NUM_WARPS warps
// each own WARP_M = BLOCK_M / NUM_WARPS rows (MI = WARP_M / 16 slices of 16 rows). Per warp:
//   * Q fragments are loaded once (ldmatrix) and stay in registers for the whole K loop;
//   * S = Q K^T for a BLOCK_N-wide K tile accumulates in registers (fp32 mma fragments);
//   * online softmax on those registers: running row max m and row sum l in fp32, the
//     row max/sum reduced over the 4 lanes that share a row (shuffles), O rescaled by
//     exp(m_old - m_new);
//   * the S accumulator fragment is, element for element, the A fragment of P V, so P is
//     converted to fp16 in registers (no shared-memory round trip) and O += P V accumulates
//     in fp32 registers (V fragments via ldmatrix.trans).
// K and V tiles stream through a STAGES-deep cp.async ring in dynamic shared memory
// (STAGES = 1: load, wait, compute; no overlap). Rows in shared memory are padded by
// SMEM_PAD halves (8 makes ldmatrix conflict-free).
//
// Shared memory, exactly as laid out below (flash_attn.toml's SMEM_BYTES):
//   (BLOCK_M + 2 * STAGES * BLOCK_N) * (HEAD_DIM + SMEM_PAD) * sizeof(half)
// Above 48 KB the kernel opts in with cudaFuncAttributeMaxDynamicSharedMemorySize.
//
// Build and run alone:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas=-v -I$(ksweep include) -o flash_attn flash_attn.cu
//   ./flash_attn 2 8 2048 64 0        # B H S D causal; D must equal HEAD_DIM (default 64)
// Prints: @@RESULT ms=... max_diff=... tflops=... checksum=...

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <ksweep.h>  // the measurement: nvcc -I$(ksweep include)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

// ---------------------------------------------------------------- tunables ----
#ifndef HEAD_DIM
#define HEAD_DIM 64  // fixed per problem shape (64 or 128)
#endif
#ifndef BLOCK_M
#define BLOCK_M 64  // query rows per thread block
#endif
#ifndef BLOCK_N
#define BLOCK_N 64  // keys per K/V tile
#endif
#ifndef NUM_WARPS
#define NUM_WARPS 4
#endif
#ifndef STAGES
#define STAGES 2  // K/V tiles in flight (cp.async ring); 1 = no pipelining
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 8  // halves of padding per shared-memory row
#endif

constexpr int D = HEAD_DIM;
constexpr int NT = NUM_WARPS * 32;        // threads per block
constexpr int WARP_M = BLOCK_M / NUM_WARPS;  // query rows per warp
constexpr int MI = WARP_M / 16;           // 16-row mma slices per warp
constexpr int LDS = D + SMEM_PAD;         // shared-memory row stride, halves
constexpr int SMEM_BYTES = (BLOCK_M + 2 * STAGES * BLOCK_N) * LDS * (int)sizeof(half);

static_assert(D % 16 == 0, "HEAD_DIM must be a multiple of 16 (mma k-steps, ldmatrix x4)");
static_assert(BLOCK_M % (16 * NUM_WARPS) == 0 && MI >= 1, "BLOCK_M must be a multiple of 16*NUM_WARPS");
static_assert(BLOCK_N % 16 == 0, "BLOCK_N must be a multiple of 16");
static_assert(SMEM_PAD % 8 == 0 && SMEM_PAD >= 0, "SMEM_PAD must keep 16-byte row alignment (multiple of 8 halves)");
static_assert(STAGES >= 1, "STAGES >= 1");
static_assert(NT <= 1024, "at most 1024 threads per block");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory above the sm_90 per-block limit (227 KB)");

#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    cudaError_t err_ = (call);                                                                    \
    if (err_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__, __LINE__, \
              cudaGetErrorString(err_));                                                          \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

// ------------------------------------------------------------ PTX helpers ----
__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// Four 8x8 b16 matrices; lane L gives the address of row L%8 of matrix L/8, and receives
// in r[j] the elements (L/4, 2*(L%4)) and (L/4, 2*(L%4)+1) of matrix j (transposed: .trans).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
// D(16x8, f32) += A(16x16, f16, row) * B(16x8, f16, col).
// Lane L (g = L/4, t = L%4) holds A: a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..);
// B: b0 (k = 2t..2t+1, n = g), b1 (k = 2t+8.., n = g); C/D: c0,c1 (g, 2t..2t+1), c2,c3 (g+8, 2t..2t+1).
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);  // .x (low 16 bits) = lo = the lower column
  return *reinterpret_cast<const uint32_t *>(&h);
}

// ROWS x D halves, global row stride D -> shared row stride LDS, 16-byte cp.async chunks.
// Thread t copies chunk t % (D/8) of rows t / (D/8) + i * (NT / (D/8)): one base address per
// thread and compile-time strides, so few registers stay live for the copies in flight.
constexpr int CHUNKS_PER_ROW = D / 8;
static_assert(NT % CHUNKS_PER_ROW == 0, "NUM_WARPS*32 must be a multiple of HEAD_DIM/8");
template <int ROWS>
__device__ __forceinline__ void load_tile_async(half *dst, const half *src, int tid) {
  constexpr int ROWS_PER_PASS = NT / CHUNKS_PER_ROW;
  const int r0 = tid / CHUNKS_PER_ROW;
  const int col = (tid % CHUNKS_PER_ROW) * 8;
  half *d = dst + r0 * LDS + col;
  const half *s = src + (size_t)r0 * D + col;
#pragma unroll
  for (int i = 0; i < (ROWS + ROWS_PER_PASS - 1) / ROWS_PER_PASS; ++i) {
    if (ROWS % ROWS_PER_PASS == 0 || r0 + i * ROWS_PER_PASS < ROWS)
      cp_async16(d + i * ROWS_PER_PASS * LDS, s + (size_t)i * ROWS_PER_PASS * D);
  }
}

// ------------------------------------------------------------------ kernel ----
template <bool CAUSAL>
__global__ void __launch_bounds__(NT, 1)
    flash_attn_fwd(const half *__restrict__ Q, const half *__restrict__ K, const half *__restrict__ V,
                   half *__restrict__ O, int S, float scale_log2) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  half *sQ = reinterpret_cast<half *>(smem_raw);  // [BLOCK_M][LDS]; reused to stage O
  half *sK = sQ + BLOCK_M * LDS;                  // [STAGES][BLOCK_N][LDS]
  half *sV = sK + STAGES * BLOCK_N * LDS;         // [STAGES][BLOCK_N][LDS]

  // Last query block first: under the causal mask it has the most work.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const size_t bh_offset = (size_t)blockIdx.y * S * D;
  const half *Qg = Q + bh_offset + (size_t)m_block * BLOCK_M * D;
  const half *Kg = K + bh_offset;
  const half *Vg = V + bh_offset;
  half *Og = O + bh_offset + (size_t)m_block * BLOCK_M * D;

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int q_row0 = m_block * BLOCK_M;  // first query row of this block

  const int n_blocks = CAUSAL ? min(((m_block + 1) * BLOCK_M + BLOCK_N - 1) / BLOCK_N, S / BLOCK_N) : S / BLOCK_N;

  // Q joins the first commit group (together with K/V tile 0).
  load_tile_async<BLOCK_M>(sQ, Qg, tid);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_blocks) {
      load_tile_async<BLOCK_N>(sK + s * BLOCK_N * LDS, Kg + (size_t)s * BLOCK_N * D, tid);
      load_tile_async<BLOCK_N>(sV + s * BLOCK_N * LDS, Vg + (size_t)s * BLOCK_N * D, tid);
    }
    cp_async_commit();
  }

  uint32_t qf[MI][D / 16][4];  // Q, A fragments, kept for the whole loop
  float o[MI][D / 8][4];       // O accumulator, C fragments
  float m_run[MI][2];          // running max (raw scores) of rows g and g+8
  float l_run[MI][2];          // running sum (this lane's columns only; reduced at the end)
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mi][dt][e] = 0.f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m_run[mi][h] = -INFINITY;
      l_run[mi][h] = 0.f;
    }
  }

  for (int j = 0; j < n_blocks; ++j) {
    // Issue tile j + STAGES - 1 into the stage that tile j - 1 used (freed by the barrier
    // that ended the previous iteration). Always commit, so group i holds tile i.
    {
      const int jl = j + STAGES - 1;
      if (jl < n_blocks) {
        const int st = jl % STAGES;
        load_tile_async<BLOCK_N>(sK + st * BLOCK_N * LDS, Kg + (size_t)jl * BLOCK_N * D, tid);
        load_tile_async<BLOCK_N>(sV + st * BLOCK_N * LDS, Vg + (size_t)jl * BLOCK_N * D, tid);
      }
      cp_async_commit();
    }
    cp_async_wait<STAGES - 1>();  // this thread's copies of tile j (and Q) have landed
    __syncthreads();              // ... and everyone else's

    if (j == 0) {
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          const int row = warp * WARP_M + mi * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
          const int col = kk * 16 + (lane >> 4) * 8;
          ldmatrix_x4(qf[mi][kk], sQ + row * LDS + col);
        }
    }

    const half *sKs = sK + (j % STAGES) * BLOCK_N * LDS;
    const half *sVs = sV + (j % STAGES) * BLOCK_N * LDS;

    // ---- S = Q K^T (raw scores, fp32) ----
    float s[MI][BLOCK_N / 8][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int nt = 0; nt < BLOCK_N / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][nt][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < BLOCK_N / 16; ++np) {
        // matrices: (keys np*16+0..7, d lo), (keys +0..7, d hi), (keys +8..15, d lo), (keys +8..15, d hi)
        uint32_t b[4];
        const int row = np * 16 + (lane & 7) + (lane >> 4) * 8;
        const int col = kk * 16 + ((lane >> 3) & 1) * 8;
        ldmatrix_x4(b, sKs + row * LDS + col);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          mma_16816(s[mi][2 * np], qf[mi][kk], b[0], b[1]);
          mma_16816(s[mi][2 * np + 1], qf[mi][kk], b[2], b[3]);
        }
      }
    }

    // ---- causal mask: only tiles that reach past the block's first query row ----
    if (CAUSAL && (j + 1) * BLOCK_N - 1 > q_row0) {
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int nt = 0; nt < BLOCK_N / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int qrow = q_row0 + warp * WARP_M + mi * 16 + (lane >> 2) + (e >> 1) * 8;
            const int kcol = j * BLOCK_N + nt * 8 + (lane & 3) * 2 + (e & 1);
            if (kcol > qrow) s[mi][nt][e] = -INFINITY;
          }
    }

    // ---- online softmax (rows g and g+8 of each slice; 4 lanes share a row) ----
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = m_run[mi][h];
#pragma unroll
        for (int nt = 0; nt < BLOCK_N / 8; ++nt) mx = fmaxf(mx, fmaxf(s[mi][nt][2 * h], s[mi][nt][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // mx is finite once a row has seen one unmasked key (always true from tile 0 on);
        // the guard keeps a fully masked row at p = 0 instead of NaN.
        const float m_scaled = (mx == -INFINITY) ? 0.f : mx * scale_log2;
        const float alpha = exp2f(m_run[mi][h] * scale_log2 - m_scaled);  // 0 on the first tile
        m_run[mi][h] = mx;
        float rowsum = 0.f;
#pragma unroll
        for (int nt = 0; nt < BLOCK_N / 8; ++nt) {
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            const float p = exp2f(fmaf(s[mi][nt][e], scale_log2, -m_scaled));
            s[mi][nt][e] = p;
            rowsum += p;
          }
        }
        l_run[mi][h] = l_run[mi][h] * alpha + rowsum;
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
          o[mi][dt][2 * h] *= alpha;
          o[mi][dt][2 * h + 1] *= alpha;
        }
      }
    }

    // ---- O += P V; P (fp16) straight from the S fragments ----
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
      uint32_t pa[MI][4];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        pa[mi][0] = pack_half2(s[mi][2 * kk][0], s[mi][2 * kk][1]);          // row g,   keys 2t..
        pa[mi][1] = pack_half2(s[mi][2 * kk][2], s[mi][2 * kk][3]);          // row g+8, keys 2t..
        pa[mi][2] = pack_half2(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);  // row g,   keys 8+2t..
        pa[mi][3] = pack_half2(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);  // row g+8, keys 8+2t..
      }
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        // matrices (transposed): (keys kk*16+0..7, d lo), (keys +8..15, d lo), (keys +0..7, d hi), (keys +8..15, d hi)
        uint32_t b[4];
        const int row = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        const int col = dp * 16 + (lane >> 4) * 8;
        ldmatrix_x4_trans(b, sVs + row * LDS + col);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          mma_16816(o[mi][2 * dp], pa[mi], b[0], b[1]);
          mma_16816(o[mi][2 * dp + 1], pa[mi], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with stage j % STAGES before it is refilled
  }
  cp_async_wait<0>();  // only empty groups can be left; keep the invariant obvious

  // ---- epilogue: O / l -> fp16, staged through this warp's own rows of sQ ----
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = l_run[mi][h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = 1.f / l;
      const int row = warp * WARP_M + mi * 16 + (lane >> 2) + h * 8;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        const int col = dt * 8 + (lane & 3) * 2;
        *reinterpret_cast<__half2 *>(sQ + row * LDS + col) =
            __floats2half2_rn(o[mi][dt][2 * h] * inv, o[mi][dt][2 * h + 1] * inv);
      }
    }
  }
  __syncwarp();
#pragma unroll
  for (int c = lane; c < WARP_M * CHUNKS_PER_ROW; c += 32) {
    const int row = warp * WARP_M + c / CHUNKS_PER_ROW;
    const int col = (c % CHUNKS_PER_ROW) * 8;
    *reinterpret_cast<uint4 *>(Og + (size_t)row * D + col) = *reinterpret_cast<const uint4 *>(sQ + row * LDS + col);
  }
}

// --------------------------------------------------------- reference (fp32) ----
// One warp per query row: scores in shared memory, exact softmax, fp32 throughout.
constexpr int REF_WARPS = 4;
__global__ void attention_reference(const half *__restrict__ Q, const half *__restrict__ K,
                                    const half *__restrict__ V, float *__restrict__ out, int BH, int S, int Dh,
                                    int causal, float scale) {
  extern __shared__ float ref_smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long row = (long long)blockIdx.x * REF_WARPS + warp;
  if (row >= (long long)BH * S) return;
  const int i = (int)(row % S);
  const size_t bh_offset = (size_t)(row / S) * S * Dh;
  float *sc = ref_smem + (size_t)warp * (S + Dh);
  float *q = sc + S;
  for (int d = lane; d < Dh; d += 32) q[d] = __half2float(Q[bh_offset + (size_t)i * Dh + d]);
  __syncwarp();
  const int n = causal ? i + 1 : S;
  float mx = -INFINITY;
  for (int jj = lane; jj < n; jj += 32) {
    const half *krow = K + bh_offset + (size_t)jj * Dh;
    float dot = 0.f;
    for (int d = 0; d < Dh; d += 8) {
      const uint4 raw = *reinterpret_cast<const uint4 *>(krow + d);
      const __half2 *k2 = reinterpret_cast<const __half2 *>(&raw);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float2 kf = __half22float2(k2[u]);
        dot = fmaf(q[d + 2 * u], kf.x, dot);
        dot = fmaf(q[d + 2 * u + 1], kf.y, dot);
      }
    }
    sc[jj] = dot * scale;
    mx = fmaxf(mx, sc[jj]);
  }
  for (int off = 16; off; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  float sum = 0.f;
  for (int jj = lane; jj < n; jj += 32) {
    const float p = expf(sc[jj] - mx);
    sc[jj] = p;
    sum += p;
  }
  for (int off = 16; off; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  __syncwarp();
  for (int d = lane; d < Dh; d += 32) {
    float acc = 0.f;
    for (int jj = 0; jj < n; ++jj) acc = fmaf(sc[jj], __half2float(V[bh_offset + (size_t)jj * Dh + d]), acc);
    out[bh_offset + (size_t)i * Dh + d] = acc / sum;
  }
}

// ------------------------------------------------------------------ harness ----

static int parse_int(const char *s, const char *name, int lo, int hi) {
  char *end = nullptr;
  const long v = strtol(s, &end, 10);
  if (!end || *end || v < lo || v > hi) {
    fprintf(stderr, "bad %s: '%s' (expected %d..%d)\n", name, s, lo, hi);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char **argv) {
  int B = 2, H = 8, S = 2048, Dh = HEAD_DIM, causal = 0;
  if (argc != 1 && argc != 6) {
    fprintf(stderr, "usage: %s [B H S D causal]\n", argv[0]);
    return 2;
  }
  if (argc == 6) {
    B = parse_int(argv[1], "B", 1, 1 << 16);
    H = parse_int(argv[2], "H", 1, 1 << 16);
    S = parse_int(argv[3], "S", 1, 1 << 20);
    Dh = parse_int(argv[4], "D", 1, 1 << 10);
    causal = parse_int(argv[5], "causal", 0, 1);
  }
  if (Dh != HEAD_DIM) {
    fprintf(stderr, "D=%d but the binary was built with HEAD_DIM=%d\n", Dh, HEAD_DIM);
    return 2;
  }
  if (S % BLOCK_M || S % BLOCK_N) {
    fprintf(stderr, "S=%d is not a multiple of BLOCK_M=%d and BLOCK_N=%d\n", S, BLOCK_M, BLOCK_N);
    return 2;
  }
  if ((long long)B * H > 65535) {
    fprintf(stderr, "B*H=%lld exceeds gridDim.y\n", (long long)B * H);
    return 2;
  }
  printf("flash_attn B=%d H=%d S=%d D=%d causal=%d | BLOCK_M=%d BLOCK_N=%d NUM_WARPS=%d STAGES=%d SMEM_PAD=%d smem=%d B\n",
         B, H, S, Dh, causal, BLOCK_M, BLOCK_N, NUM_WARPS, STAGES, SMEM_PAD, SMEM_BYTES);

  const size_t n = (size_t)B * H * S * Dh;
  std::vector<half> hQ(n), hK(n), hV(n);
  uint64_t state = 0x243F6A8885A308D3ull;  // fixed seed
  auto uniform = [&state]() {               // xorshift64*, uniform in [-1, 1)
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const uint64_t r = state * 0x2545F4914F6CDD1Dull;
    return (float)((double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
  };
  // Q in [-4, 4), K, V in [-1, 1): scaled scores q.k/sqrt(D) have a std of about 1.3, so each
  // softmax row is far from uniform and the running max moves between K tiles.
  for (auto &x : hQ) x = __float2half(4.0f * uniform());
  for (auto &x : hK) x = __float2half(uniform());
  for (auto &x : hV) x = __float2half(uniform());

  half *dQ, *dK, *dV, *dO;
  float *dRef;
  CUDA_CHECK(cudaMalloc(&dQ, n * sizeof(half)));
  CUDA_CHECK(cudaMalloc(&dK, n * sizeof(half)));
  CUDA_CHECK(cudaMalloc(&dV, n * sizeof(half)));
  CUDA_CHECK(cudaMalloc(&dO, n * sizeof(half)));
  CUDA_CHECK(cudaMalloc(&dRef, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dQ, hQ.data(), n * sizeof(half), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dK, hK.data(), n * sizeof(half), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dV, hV.data(), n * sizeof(half), cudaMemcpyHostToDevice));

  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  const float scale = 1.0f / std::sqrt((float)Dh);
  const float scale_log2 = scale * 1.4426950408889634f;

  auto kernel = causal ? flash_attn_fwd<true> : flash_attn_fwd<false>;
  if (SMEM_BYTES > 48 * 1024)  // above 48 KB, dynamic shared memory needs the opt-in
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  const dim3 grid(S / BLOCK_M, B * H);
  auto run = [&]() { kernel<<<grid, NT, SMEM_BYTES, stream>>>(dQ, dK, dV, dO, S, scale_log2); };

  // Reference.
  {
    const int ref_smem = REF_WARPS * (S + Dh) * (int)sizeof(float);
    if (ref_smem > 48 * 1024)
      CUDA_CHECK(cudaFuncSetAttribute(attention_reference, cudaFuncAttributeMaxDynamicSharedMemorySize, ref_smem));
    const long long rows = (long long)B * H * S;
    attention_reference<<<(unsigned)((rows + REF_WARPS - 1) / REF_WARPS), REF_WARPS * 32, ref_smem, stream>>>(
        dQ, dK, dV, dRef, B * H, S, Dh, causal, scale);
    CUDA_CHECK(cudaGetLastError());
  }
  // Checked run into a poisoned output (0xFFFF is a NaN in fp16).
  CUDA_CHECK(cudaMemsetAsync(dO, 0xFF, n * sizeof(half), stream));
  run();
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<half> hO(n);
  std::vector<float> hRef(n);
  CUDA_CHECK(cudaMemcpy(hO.data(), dO, n * sizeof(half), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hRef.data(), dRef, n * sizeof(float), cudaMemcpyDeviceToHost));
  double max_diff = 0.0, checksum = 0.0;
  size_t nonfinite = 0, worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double o = __half2float(hO[i]);
    if (!std::isfinite(o)) {
      ++nonfinite;
      continue;
    }
    const double dlt = std::fabs(o - (double)hRef[i]);
    if (dlt > max_diff) {
      max_diff = dlt;
      worst = i;
    }
    checksum += o;
  }
  if (nonfinite) {
    fprintf(stderr, "ERROR: %zu of %zu outputs are not finite (unwritten or NaN)\n", nonfinite, n);
    max_diff = 1e30;  // fails any [check] bound; NaN would not
  } else {
    printf("max |out - ref| = %.3e at (bh=%zu, row=%zu, d=%zu)\n", max_diff, worst / ((size_t)S * Dh),
           (worst / Dh) % S, worst % Dh);
  }

  // Timing: ksweep.h (warm-up, each rep between its own pair of events, the L2 flushed
  // before it, all queued behind a 2 ms spin so that host launch gaps are not timed).
  ksweep::TimeOptions timing;
  timing.warmup = 5;
  timing.min_reps = timing.max_reps = 30;
  timing.queue_ahead_ms = 2.0f;
  const ksweep::Stats st = ksweep::Timer(stream, timing).time(run);
  const double ms = st.median;

  // Matmul FLOPs (QK^T and PV); causal counts half, as FlashAttention reports it.
  const double flops = 4.0 * B * H * (double)S * S * Dh * (causal ? 0.5 : 1.0);
  const double tflops = flops / (ms * 1e-3) / 1e12;
  printf("kernel %.4f ms, %.2f TFLOP/s, max_diff %.3e\n", ms, tflops, max_diff);
  ksweep::Result()
      .add("ms", ms).add("p20_ms", st.p20).add("p80_ms", st.p80).add("max_diff", max_diff)
      .add("tflops", tflops).add("checksum", checksum)
      .print();

  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(dQ));
  CUDA_CHECK(cudaFree(dK));
  CUDA_CHECK(cudaFree(dV));
  CUDA_CHECK(cudaFree(dO));
  CUDA_CHECK(cudaFree(dRef));
  return 0;
}

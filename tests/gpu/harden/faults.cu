// Seeded faults for the hardening's GPU tests (tests/gpu/test_gpu_harden.py): c = a + b through a
// tile of shared memory, each block's tile written by its threads and read back reversed (so a
// thread reads what another wrote). FAULT picks the fault planted:
//   0 none
//   1 a shared-memory race: two threads write one slot, different values (racecheck; wrong output)
//   2 an uninitialised shared-memory read: the tile's last slot is never written, but read
//   3 an out-of-bounds write that lands in the allocation's padding: no bound on the store
//     (the shape's N is not a multiple of the tile; the output stays right: memcheck alone sees it)
//   4 a missing __syncthreads between the tile's writes and its reversed reads (racecheck)
//   5 outputs kept by the inputs' address: each block answers what it answered the last time it
//     saw that address (right whenever an address always holds the same values)
//   6 right for the first input draw only: once a whole launch has finished, every later launch
//     writes the first launch's answer
//   7 a __syncthreads in divergent code (synccheck)
// Built as a kernel (kernel mode: extern "C" tile_add) or, with -DHARNESS, as a program with a
// main of its own that times tile_add with ksweep.h and prints @@RESULT ms=... reps=... checksum=...
#ifndef FAULT
#define FAULT 0
#endif
#ifndef TILE
#define TILE 256
#endif
#define MEMO (1 << 22)

#if FAULT == 5 || FAULT == 6
__device__ float memo[MEMO];
__device__ const float *memo_a[MEMO / TILE];  // fault 5: each block's tile, kept by the input's address
__device__ unsigned int blocks_done;
#endif

extern "C" __global__ void tile_add(float *c, const float *a, const float *b, int n) {
    __shared__ float s[TILE];
    const int t = threadIdx.x, base = blockIdx.x * TILE, i = base + t;
    const float v = i < n ? a[i] + b[i] : 0.0f;
#if FAULT == 5
    if (n <= MEMO && memo_a[blockIdx.x] == a) {  // this block saw this address before: its answer then
        const int k = base + TILE - 1 - t;
        if (k < n) c[k] = memo[k];
        return;
    }
#elif FAULT == 6
    if (*(volatile unsigned int *)&blocks_done >= gridDim.x && n <= MEMO) {
        if (i < n) c[i] = memo[i];
        return;
    }
#endif
#if FAULT == 1
    s[t & ~1] = v;  // t and t^1 race for one slot
    if (t & 1) s[t] = v;
#elif FAULT == 2
    if (t != TILE - 1) s[t] = v;
#else
    s[t] = v;
#endif
#if FAULT == 7
    if (t < TILE / 2) __syncthreads();
#elif FAULT != 4
    __syncthreads();
#endif
    const int j = TILE - 1 - t;
#if FAULT == 3
    c[base + j] = s[j];  // no bound: the last block writes past N, inside the allocation's padding
#else
    if (base + j < n) c[base + j] = s[j];
#endif
#if FAULT == 5
    if (i < n && n <= MEMO) memo[i] = v;
    __syncthreads();
    if (t == 0 && n <= MEMO) memo_a[blockIdx.x] = a;
#elif FAULT == 6
    if (i < n && n <= MEMO) memo[i] = v;
    __syncthreads();
    if (t == 0) atomicAdd(&blocks_done, 1u);
#endif
}

#ifdef HARNESS
#include <ksweep.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#ifndef N
#define N ((1 << 20) + 100)
#endif

int main() {
    std::vector<float> a(N), b(N);
    for (int i = 0; i < N; ++i) a[i] = 0.001f * (i % 1000), b[i] = 1.0f - 0.002f * (i % 500);
    float *da, *db, *dc;
    KSWEEP_CHECK(cudaMalloc(&da, N * sizeof(float)));
    KSWEEP_CHECK(cudaMalloc(&db, N * sizeof(float)));
    KSWEEP_CHECK(cudaMalloc(&dc, N * sizeof(float)));
    KSWEEP_CHECK(cudaMemcpy(da, a.data(), N * sizeof(float), cudaMemcpyHostToDevice));
    KSWEEP_CHECK(cudaMemcpy(db, b.data(), N * sizeof(float), cudaMemcpyHostToDevice));
    ksweep::poison(dc, N);
    const int grid = (N + TILE - 1) / TILE;
    ksweep::Timer timer;
    ksweep::Stats s = timer.time([&] { tile_add<<<grid, TILE>>>(dc, da, db, N); });
    KSWEEP_CHECK(cudaDeviceSynchronize());
    std::vector<float> c(N);
    KSWEEP_CHECK(cudaMemcpy(c.data(), dc, N * sizeof(float), cudaMemcpyDeviceToHost));
    double checksum = 0.0;
    for (int i = 0; i < N; ++i) checksum += (double)c[i] * (1 + i % 7);
    ksweep::Result().add("ms", s.median).add("reps", s.reps).add("checksum", checksum).print();
    return 0;
}
#endif

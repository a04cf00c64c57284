// C = A * B for square WIDTH x WIDTH float matrices: a bare __global__ kernel, no main().
// Each block of block_size_x x block_size_y threads computes a tile of
// (block_size_y * tile_size_y) x (block_size_x * tile_size_x) elements of C; each thread
// tile_size_y x tile_size_x of them, strided by the block size. Requires
// block_size_x == block_size_y * tile_size_y (the A tile is square).
#ifndef WIDTH
#define WIDTH 4096
#endif
#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef block_size_y
#define block_size_y 8
#endif
#ifndef tile_size_x
#define tile_size_x 2
#endif
#ifndef tile_size_y
#define tile_size_y 4
#endif

extern "C" __global__ void matmul_kernel(float *C, const float *A, const float *B) {
    __shared__ float sA[block_size_y * tile_size_y][block_size_x];
    __shared__ float sB[block_size_x][block_size_x * tile_size_x];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row0 = blockIdx.y * block_size_y * tile_size_y;
    const int col0 = blockIdx.x * block_size_x * tile_size_x;
    float acc[tile_size_y][tile_size_x];
#pragma unroll
    for (int i = 0; i < tile_size_y; ++i)
#pragma unroll
        for (int j = 0; j < tile_size_x; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < WIDTH; k0 += block_size_x) {
#pragma unroll
        for (int i = 0; i < tile_size_y; ++i)
            sA[ty + i * block_size_y][tx] = A[(row0 + ty + i * block_size_y) * WIDTH + k0 + tx];
#pragma unroll
        for (int i = 0; i < tile_size_y; ++i)
#pragma unroll
            for (int j = 0; j < tile_size_x; ++j)
                sB[ty + i * block_size_y][tx + j * block_size_x] =
                    B[(k0 + ty + i * block_size_y) * WIDTH + col0 + tx + j * block_size_x];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < block_size_x; ++k)
#pragma unroll
            for (int i = 0; i < tile_size_y; ++i)
#pragma unroll
                for (int j = 0; j < tile_size_x; ++j)
                    acc[i][j] += sA[ty + i * block_size_y][k] * sB[k][tx + j * block_size_x];
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < tile_size_y; ++i)
#pragma unroll
        for (int j = 0; j < tile_size_x; ++j)
            C[(row0 + ty + i * block_size_y) * WIDTH + col0 + tx + j * block_size_x] = acc[i][j];
}

/* Blocked single-precision matrix multiply C = A * B (N x N), tuned by ksweep.
 * Every knob has a default, so `cc -O2 matmul.c -o matmul && ./matmul 512` works alone.
 * Prints one machine-readable line: @@RESULT ms=... gflops=... checksum=... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BLOCK_I
#define BLOCK_I 32
#endif
#ifndef BLOCK_J
#define BLOCK_J 64
#endif
#ifndef BLOCK_K
#define BLOCK_K 64
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef REPEATS
#define REPEATS 3
#endif

#define KS_STR(x) #x
#define KS_UNROLL(n) _Pragma(KS_STR(GCC unroll n))

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void matmul(int n, const float *A, const float *B, float *C) {
    memset(C, 0, sizeof(float) * (size_t)n * n);
    for (int i0 = 0; i0 < n; i0 += BLOCK_I)
        for (int k0 = 0; k0 < n; k0 += BLOCK_K)
            for (int j0 = 0; j0 < n; j0 += BLOCK_J) {
#ifdef IKJ_ORDER
                /* i, k, j inside the block: the innermost loop streams rows of B and C */
                for (int i = i0; i < i0 + BLOCK_I; ++i)
                    for (int k = k0; k < k0 + BLOCK_K; ++k) {
                        const float a = A[(size_t)i * n + k];
                        const float *b = &B[(size_t)k * n];
                        float *c = &C[(size_t)i * n];
                        KS_UNROLL(UNROLL)
                        for (int j = j0; j < j0 + BLOCK_J; ++j) c[j] += a * b[j];
                    }
#else
                /* i, j, k inside the block: a dot product down a column of B */
                for (int i = i0; i < i0 + BLOCK_I; ++i)
                    for (int j = j0; j < j0 + BLOCK_J; ++j) {
                        float acc = 0.0f;
                        KS_UNROLL(UNROLL)
                        for (int k = k0; k < k0 + BLOCK_K; ++k) acc += A[(size_t)i * n + k] * B[(size_t)k * n + j];
                        C[(size_t)i * n + j] += acc;
                    }
#endif
            }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 512;
    if (n <= 0 || n % BLOCK_I || n % BLOCK_J || n % BLOCK_K) {
        fprintf(stderr, "N=%d must be a positive multiple of the block sizes\n", n);
        return 2;
    }
    float *A = malloc(sizeof(float) * (size_t)n * n), *B = malloc(sizeof(float) * (size_t)n * n);
    float *C = malloc(sizeof(float) * (size_t)n * n);
    if (!A || !B || !C) { fprintf(stderr, "out of host memory\n"); return 1; }
    srand(12345);
    for (size_t i = 0; i < (size_t)n * n; ++i) {
        A[i] = (float)rand() / RAND_MAX - 0.5f;
        B[i] = (float)rand() / RAND_MAX - 0.5f;
    }
    matmul(n, A, B, C); /* warm-up */
    double times[REPEATS];
    for (int r = 0; r < REPEATS; ++r) {
        double t0 = now_ms();
        matmul(n, A, B, C);
        times[r] = now_ms() - t0;
    }
    qsort(times, REPEATS, sizeof(double), cmp);
    double ms = times[REPEATS / 2], checksum = 0.0;
    for (size_t i = 0; i < (size_t)n * n; ++i) checksum += C[i] * (double)((i % 7) + 1);
    printf("matmul N=%d: %.3f ms\n", n, ms);
    printf("@@RESULT ms=%.4f gflops=%.3f checksum=%.6f\n", ms, 2.0 * n * n * (double)n / ms / 1e6, checksum);
    free(A); free(B); free(C);
    return 0;
}

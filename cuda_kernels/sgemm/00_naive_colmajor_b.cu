// sgemm v0 — naive, one thread per output, B column-major (docs/ladders/sgemm.md, v0).
// Idea: the textbook triple loop: thread (row, col) walks K and writes C[row][col].
// Bottleneck it shows: B is stored column-major (B[k + col*K]); the 32 threads of a warp
// hold 32 consecutive cols, so each of their B loads is K*4 bytes from the next: one
// 32-byte sector per thread instead of one 128-byte line per warp (uncoalesced), and
// nothing is reused through shared memory.
// Builds on: nothing. Constraints: none (any M, N, K >= 1; ALIGNED is unused).
// arch: sm_75
// config: BM=8 BN=32 THREADS=256
// space: BM=8 BN=32 THREADS=256
// space: BM=4 BN=32 THREADS=128
// space: BM=16 BN=32 THREADS=512
// space: BM=16 BN=16 THREADS=256
// space: BM=32 BN=32 THREADS=1024
#include "common.cuh"

static_assert(THREADS == BM * BN, "one thread per output");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v0_naive_colmajor_b(const float* __restrict__ A, const float* __restrict__ B,
                          float* __restrict__ C, int M, int N, int K,
                          int lda, int ldb, int ldc) {
    const int row = blockIdx.y * BM + threadIdx.x / BN;
    const int col = blockIdx.x * BN + threadIdx.x % BN;
    if (row >= M || col >= N) return;
    const float* a = A + (size_t)row * lda;
    const float* b = B + (size_t)col * ldb;  // column col of B is contiguous, columns are ldb apart
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(a[k], b[k], acc);
    C[(size_t)row * ldc + col] = acc;
}

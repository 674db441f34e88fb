// sgemm v1 — naive with B row-major (docs/ladders/sgemm.md, v1).
// Idea: the same loop as v0 with B[k*N + col]: a warp's 32 threads read 32 consecutive
// floats of one B row (one 128-byte line) and broadcast one A element.
// Removes: v0's uncoalesced B loads.
// Bottleneck that remains: no reuse; every FFMA needs two global (L1/L2) loads.
// Builds on: v0. Constraints: none (any M, N, K >= 1; ALIGNED is unused).
// arch: sm_75
// config: BM=8 BN=32 THREADS=256
// space: BM=8 BN=32 THREADS=256
// space: BM=4 BN=32 THREADS=128
// space: BM=16 BN=32 THREADS=512
// space: BM=4 BN=64 THREADS=256
// space: BM=32 BN=32 THREADS=1024
#include "common.cuh"

static_assert(THREADS == BM * BN, "one thread per output");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v1_naive(const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C, int M, int N, int K,
               int lda, int ldb, int ldc) {
    const int row = blockIdx.y * BM + threadIdx.x / BN;
    const int col = blockIdx.x * BN + threadIdx.x % BN;
    if (row >= M || col >= N) return;
    const float* a = A + (size_t)row * lda;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(a[k], B[(size_t)k * ldb + col], acc);
    C[(size_t)row * ldc + col] = acc;
}

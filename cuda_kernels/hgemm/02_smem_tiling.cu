// hgemm v2 — shared-memory tiling, 32 x 32 tiles, one output per thread (docs/ladders/hgemm.md, v2).
// Idea: a block of BM·BN threads computes a BM x BN tile of C, one output a thread (the seed's
// step 2, docs/seeds.md §2). For each BK-wide slice of K it copies the BM x BK slice of A and the
// BK x BN slice of B into shared memory, as halves, once: each global element is loaded once per
// block instead of once per output that uses it. Out-of-range elements are stored as zeros, which
// add nothing. Every thread then reads its row of the A slice (the same address for a whole warp:
// a broadcast) and its column of the B slice (32 consecutive halves per warp: no bank conflict).
// Removes: v1's re-reading of every operand from global memory (BN-fold and BM-fold reuse).
// Bottleneck that remains: shared-memory traffic and conversions per FFMA: each FFMA needs two
// shared loads and two half -> FP32 conversions (LDS, CVT, LDS, CVT, FFMA); the FFMA pipe is
// fed a fifth of the time at best.
// Builds on: v1. Constraints: THREADS = BM·BN. Copies are element by element (one half per
// thread and step, coalesced along rows); ALIGNED is unused.
// arch: sm_80
// precisions: fp16 bf16
// config: BM=32 BN=32 BK=32 THREADS=1024
// space: BM=32 BN=32 BK=16 THREADS=1024
// space: BM=32 BN=32 BK=64 THREADS=1024
// space: BM=16 BN=16 BK=16 THREADS=256
// space: BM=16 BN=16 BK=32 THREADS=256
// space: BM=16 BN=32 BK=32 THREADS=512
#include "common.cuh"

static_assert(THREADS == BM * BN, "one output per thread: THREADS must be BM * BN");

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_v2_smem_tiling(const storage_t* __restrict__ A, const storage_t* __restrict__ B,
                     storage_t* __restrict__ C, int M, int N, int K,
                     int lda, int ldb, int ldc) {
    __shared__ storage_t As[BM][BK];
    __shared__ storage_t Bs[BK][BN];
    const int tid = threadIdx.x, tx = tid % BN, ty = tid / BN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Global -> shared, consecutive threads on consecutive k (A) and n (B): coalesced.
        for (int e = tid; e < BM * BK; e += THREADS) {
            const int m = e / BK, k = e % BK;
            As[m][k] = (m0 + m < M && k0 + k < K) ? A[(size_t)(m0 + m) * lda + k0 + k] : storage_t(0);
        }
        for (int e = tid; e < BK * BN; e += THREADS) {
            const int k = e / BN, n = e % BN;
            Bs[k][n] = (k0 + k < K && n0 + n < N) ? B[(size_t)(k0 + k) * ldb + n0 + n] : storage_t(0);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) acc = fmaf(to_float(As[ty][kk]), to_float(Bs[kk][tx]), acc);
        __syncthreads();  // the next slice overwrites As/Bs
    }
    const int row = m0 + ty, col = n0 + tx;
    if (row < M && col < N) C[(size_t)row * ldc + col] = from_float(acc);
}

// hgemm v1 — coalesced: a warp's threads along N (docs/ladders/hgemm.md, v1).
// Idea: v0's loop with consecutive threads on consecutive COLUMNS (threadIdx.x % BN): the 32
// lanes of a warp read 32 consecutive halves of one B row (64 bytes, two sectors) and write 32
// consecutive halves of one C row; the A element they need is the same for all (a broadcast).
// Removes: v0's uncoalesced A loads and C stores (one sector per lane -> two per warp).
// Bottleneck that remains: no reuse: every FFMA still needs two loads from L1/L2, and every
// element is fetched once per output that uses it (each A element N times, each B element M times).
// Builds on: v0. Constraints: BN a multiple of 32 (a warp lies along one row), THREADS = BM·BN;
// any M, N, K >= 1; ALIGNED is unused.
// arch: sm_80
// precisions: fp16 bf16
// config: BM=8 BN=32 THREADS=256
// space: BM=4 BN=32 THREADS=128
// space: BM=16 BN=32 THREADS=512
// space: BM=4 BN=64 THREADS=256
// space: BM=2 BN=128 THREADS=256
// space: BM=32 BN=32 THREADS=1024
#include "common.cuh"

static_assert(BN % 32 == 0, "a warp's 32 threads lie along N: BN must be a multiple of 32");
static_assert(THREADS == BM * BN, "one thread per output: THREADS must be BM * BN");

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_v1_coalesced(const storage_t* __restrict__ A, const storage_t* __restrict__ B,
                   storage_t* __restrict__ C, int M, int N, int K,
                   int lda, int ldb, int ldc) {
    const int row = blockIdx.y * BM + threadIdx.x / BN;
    const int col = blockIdx.x * BN + threadIdx.x % BN;  // lanes of a warp: consecutive columns
    if (row >= M || col >= N) return;
    const storage_t* a = A + (size_t)row * lda;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(to_float(a[k]), to_float(B[(size_t)k * ldb + col]), acc);
    C[(size_t)row * ldc + col] = from_float(acc);
}

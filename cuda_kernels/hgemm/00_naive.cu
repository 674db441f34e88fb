// hgemm v0 — naive, one thread per output, a warp's threads along M (docs/ladders/hgemm.md, v0).
// Idea: the textbook triple loop on FP16/BF16 storage: thread (row, col) walks K, converts each
// pair of halves to FP32, accumulates in FP32 (the op's contract: every hgemm kernel accumulates
// in FP32, docs/ladders/hgemm.md "Correctness") and rounds to the storage type once, at the
// store. Consecutive threads take consecutive ROWS (threadIdx.x % BM): the first mapping one
// writes when x is the first index, and the seed's step 0 (docs/seeds.md §2).
// Bottleneck it shows: the 32 threads of a warp hold 32 rows of one column, so their A loads are
// a row (lda·2 bytes) apart and so are their C stores: one 32-byte sector per thread for 2 useful
// bytes, instead of one line per warp (uncoalesced). Their B loads are all the same element (one
// broadcast). Nothing is reused through shared memory.
// Builds on: nothing. Constraints: BM a multiple of 32 (a warp lies along M), THREADS = BM·BN;
// any M, N, K >= 1; ALIGNED is unused.
// arch: sm_80
// precisions: fp16 bf16
// config: BM=32 BN=8 THREADS=256
// space: BM=32 BN=4 THREADS=128
// space: BM=64 BN=4 THREADS=256
// space: BM=32 BN=16 THREADS=512
// space: BM=32 BN=32 THREADS=1024
// space: BM=128 BN=2 THREADS=256
#include "common.cuh"

static_assert(BM % 32 == 0, "a warp's 32 threads lie along M: BM must be a multiple of 32");
static_assert(THREADS == BM * BN, "one thread per output: THREADS must be BM * BN");

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_v0_naive(const storage_t* __restrict__ A, const storage_t* __restrict__ B,
               storage_t* __restrict__ C, int M, int N, int K,
               int lda, int ldb, int ldc) {
    const int row = blockIdx.y * BM + threadIdx.x % BM;  // lanes of a warp: consecutive rows
    const int col = blockIdx.x * BN + threadIdx.x / BM;
    if (row >= M || col >= N) return;
    const storage_t* a = A + (size_t)row * lda;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(to_float(a[k]), to_float(B[(size_t)k * ldb + col]), acc);
    C[(size_t)row * ldc + col] = from_float(acc);  // the one rounding to FP16/BF16
}

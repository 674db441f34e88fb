// sgemm v5 — split-K with an ordered last-block reduction (docs/ladders/sgemm.md, v5).
// Idea: when the M x N tiles are too few to occupy the GPU — a small M or N with a long K,
// such as 64 x 64 x 65536 (one 128 x 128 tile for 132 SMs) or 64 x 8192 x 8192 (64 tiles) — K
// is cut into gridDim.z ranges of split_k (a multiple of BK), and each block computes v4's tile
// over its range only. With one range the block writes C as v4 does. Otherwise it writes its
// FP32 partial tile to a workspace (partial[z][M][N]); the last block of a tile to finish (an
// atomic counter per tile, after a __threadfence) adds the partials in range order 0, 1, 2, ...
// and writes C, so the result does not depend on which block finishes last: deterministic, one
// launch, no atomics on C. That block resets its counter for the next launch (split_k.cuh, which
// v9 shares).
// How many ranges: the launch plans them (study/ops/sgemm.py, split_k_plan) so that tiles x
// ranges gives two blocks per SM (the occupancy launch bounds allow), with at least four BK
// slices per range; a shape with enough tiles, or too short a K, gets one range (recorded as
// splits=1 with the config).
// Removes: idle SMs on skinny shapes (v4 at 64 x 64 x 65536: one block on one SM).
// Costs: the workspace round trip (splits x M x N floats written and read once) and a second,
// serial pass over them by one block per tile.
// H200 (ncu at 64x8192x8192, reports/h200/profiles/sgemm.md): 0.624 ms against cuBLAS's 0.184,
// FMA pipe 57.2 %, issue slots 74.2 %: v4's inner loop on a 128-row tile half of zeros (M = 64).
// Tuned: 0.56x cuBLAS at 64x64x65536, 0.46x at 64x8192x8192 (reports/h200/sgemm-ladder.md).
// Builds on: v4 (its tile, tile_double_buffer.cuh, over a K range). Constraints: as v4;
// counter holds at least gridDim.x * gridDim.y zeros and partial gridDim.z * M * N floats when
// gridDim.z > 1. ALIGNED also makes the partial rows (N apart) 16-byte aligned: N % 4 == 0.
// arch: sm_80
// config: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256 SPLIT=1
// space: BM=128 BN=128 BK=8 TM=8 TN=8 THREADS=256 SPLIT=1
// space: BM=128 BN=64 BK=8 TM=8 TN=4 THREADS=256 SPLIT=1
// space: BM=64 BN=128 BK=8 TM=4 TN=8 THREADS=256 SPLIT=1
// space: BM=64 BN=64 BK=16 TM=4 TN=4 THREADS=256 SPLIT=1
#include "common.cuh"
#include "tile_double_buffer.cuh"
#include "split_k.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_v5_split_k(const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C, int M, int N, int K,
                 int lda, int ldb, int ldc,
                 int split_k, float* __restrict__ partial, unsigned* __restrict__ counter) {
    const int tid = threadIdx.x, tx = tid % WN, ty = tid / WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int row0 = m0 + ty * 4, col0 = n0 + tx * 4;
    const int k_begin = blockIdx.z * split_k;
    float acc[TM][TN] = {};
    // k_begin < K (no range is empty); K − k_begin, not k_begin + split_k, which passes 2^31 near K = 2^31.
    accumulate_tile_double_buffer(acc, A, B, M, N, lda, ldb, m0, n0, k_begin, k_begin + min(split_k, K - k_begin));
    store_split<TM, TN, SA, SB, ALIGNED>(acc, C, partial, counter, M, N, ldc, row0, col0,
                                         blockIdx.y * gridDim.x + blockIdx.x);
}

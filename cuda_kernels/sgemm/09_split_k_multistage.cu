// sgemm v9 — split-K over v7's tile (docs/ladders/sgemm.md, v9).
// Idea: v5's K ranges and ordered last-block reduction (split_k.cuh) on the warp-tiled,
// multi-stage tile of v7 (tile_warp.cuh) instead of v4's, with 64-row tiles in the space: a
// product of 64 rows (64×8192×8192, 64×64×65536) then fills its tiles instead of computing half
// a 128-row tile of zeros, and the ranges fill the SMs as in v5 (study/ops/sgemm.py,
// split_k_plan: two blocks a SM, at least four BK slices a range).
// Removes: what v5 kept of v4 on skinny shapes — a 128×128 tile's empty half at M = 64, v4's
// instruction mix and two stages.
// H200 (ncu, default 64x128 tile): 64x8192x8192 in 0.298 ms (v5 0.624, cuBLAS 0.184), FMA pipe
// 62.2 %; 0.68x cuBLAS tuned. At 64x64x65536 (256 ranges) 0.43x: one block adds 256 partial
// tiles in order, where cuBLAS runs a separate reduction kernel — a parallel second pass is next.
// Builds on: v5 (the split and the reduction) and v7 (the tile). Constraints: as v5.
// v7's HOIST and PREFETCH axes (tile_warp.cuh) come with every tile of the space, and cuBLAS's own
// skinny shape of work (64×256, 8×16 outputs a thread) joins it. Measured (commit 4c0797b,
// reports/h200/sgemm-runs/sgemm-split-k-axes.md): 64x8192x8192 tuned 0.82x cuBLAS (64x64x16, HOIST=1).
// arch: sm_80
// config: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=0 PREFETCH=0
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=0 PREFETCH=0
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=0 PREFETCH=0
// space: BM=64 BN=64 BK=32 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=3 GROUP=8 SPLIT=1 HOIST=0 PREFETCH=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=8 SPLIT=1 HOIST=0 PREFETCH=0
// space: BM=128 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=256 STAGES=4 GROUP=8 SPLIT=1 HOIST=0 PREFETCH=0
// space: BM=128 BN=256 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=3 GROUP=8 SPLIT=1 HOIST=0 PREFETCH=0
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=0
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=0
// space: BM=64 BN=64 BK=32 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=3 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=0
// space: BM=128 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=256 STAGES=4 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=0
// space: BM=128 BN=256 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=3 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=0
// space: BM=64 BN=256 BK=16 WM=32 WN=128 TM=8 TN=16 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=0 PREFETCH=0
// space: BM=64 BN=256 BK=16 WM=32 WN=128 TM=8 TN=16 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=0
// space: BM=64 BN=256 BK=16 WM=32 WN=128 TM=8 TN=16 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=1
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=1
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 HOIST=1 PREFETCH=2
#include "common.cuh"
#include "tile_warp.cuh"
#include "split_k.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, TM * TN > 64 ? 1 : 2)
sgemm_v9_split_k_multistage(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                            int M, int N, int K, int lda, int ldb, int ldc,
                            int split_k, float* __restrict__ partial, unsigned* __restrict__ counter) {
    using namespace warp_tile;
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);  // the same (bm, bn) for a given (x, y) in every range
    const int m0 = bm * BM, n0 = bn * BN;
    const int k_begin = blockIdx.z * split_k;
    float acc[TM][TN] = {};
    // k_begin < K (no range is empty); K − k_begin, not k_begin + split_k, which passes 2^31 near K = 2^31.
    accumulate(acc, A, B, M, N, lda, ldb, m0, n0, k_begin, k_begin + min(split_k, K - k_begin));
    store_split<TM, TN, GAP_M, GAP_N, ALIGNED>(acc, C, partial, counter, M, N, ldc, m0 + lane_row(),
                                               n0 + lane_col(), bm * gridDim.x + bn);
}

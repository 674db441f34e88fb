// sgemm v10 — split-K in two passes: v9's K ranges into partial tiles, then a reduction kernel over
// the whole of C (docs/ladders/sgemm.md, v10).
// Idea: in v9 the last block of each output tile adds all of its tile's partials: at 64x64x65536 that
// is one block of 128 threads reading 256 partial tiles (4 MiB) while the other SMs idle — ncu and the
// figures put v9 at 0.43x cuBLAS there, and cuBLAS itself runs a separate reduction kernel
// (0.0237 ms GEMM + 0.0098 ms reduction, reports/h200/profiles/sgemm.md). Here the first kernel
// only writes its range's partial tile (no counters, no atomics), and a second kernel, launched after
// it on the same stream, spreads the sum over the SMs: a block takes REDUCE_THREADS / REDUCE_GROUPS
// consecutive elements of C; within it REDUCE_GROUPS groups of threads each add ranges g, g + GROUPS,
// g + 2·GROUPS, … in increasing order (coalesced reads of each plane), then one thread per element adds
// the group sums in group order. The order of every addition is fixed by the indices alone, so the
// result is the same bit for bit on every run (not the same order as v9's, whose sum is 0, 1, 2, …).
// Removes: v9's serial reduction by one block per tile and its counter handshake.
// Costs: the partials cross L2/HBM twice (write, then read by another SM), as in v9, plus one launch.
// One range (the split plan gives large shapes one): the first kernel stores C and there is no second.
// Measured (H200, reports/h200/sgemm-split-k.md, aee20ee): 64x64x65536 19,043-19,262 GFLOPS, 1.16-1.18x
// cuBLAS (v9 0.23-0.42x in the same run); 64x8192x8192 0.67x (3 ranges: little to reduce, v9 0.64-0.69x).
// Builds on: v9 (its tile, split plan and workspace). Constraints: as v9.
// The space has v9's HOIST, PREFETCH and 64×256 points too. Measured (commit 4c0797b,
// reports/h200/sgemm-runs/sgemm-split-k-axes.md): 64x64x65536 tuned 1.29x cuBLAS (HOIST=1), 64x8192x8192 0.78x.
// ncu (commit 57118fc, declared config, reports/h200/profiles/sgemm.md): at 64x64x65536 a launch is
// 0.0216 ms of partial tiles + 0.0048 ms of reduction against v9's 0.1383 ms (cuBLAS 0.0237 + 0.0098);
// the first kernel keeps the FMA pipe 50.5 % busy at 70.5 % issue, "wait" the second stall (0.33 cycles
// per issue; not traced to instructions: no source page was taken). What is left is v9's tile on a
// short K range (16 BK slices a block), not the sum.
// arch: sm_80
// config: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=0 PREFETCH=0
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=0 PREFETCH=0
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=1024 REDUCE_GROUPS=32 HOIST=0 PREFETCH=0
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=512 REDUCE_GROUPS=16 HOIST=0 PREFETCH=0
// space: BM=64 BN=64 BK=32 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=3 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=0 PREFETCH=0
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=0 PREFETCH=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=0 PREFETCH=0
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=1 PREFETCH=0
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=1024 REDUCE_GROUPS=32 HOIST=1 PREFETCH=0
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=512 REDUCE_GROUPS=16 HOIST=1 PREFETCH=0
// space: BM=64 BN=64 BK=32 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=3 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=1 PREFETCH=0
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=1 PREFETCH=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=1 PREFETCH=0
// space: BM=64 BN=256 BK=16 WM=32 WN=128 TM=8 TN=16 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=0 PREFETCH=0
// space: BM=64 BN=256 BK=16 WM=32 WN=128 TM=8 TN=16 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=1 PREFETCH=0
// space: BM=64 BN=256 BK=16 WM=32 WN=128 TM=8 TN=16 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=1 PREFETCH=1
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=256 REDUCE_GROUPS=8 HOIST=1 PREFETCH=1
// space: BM=64 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=128 STAGES=4 GROUP=8 SPLIT=1 REDUCE_THREADS=1024 REDUCE_GROUPS=32 HOIST=1 PREFETCH=2
#include "common.cuh"
#include "tile_warp.cuh"

constexpr int REDUCE_COLS = REDUCE_THREADS / REDUCE_GROUPS;  // elements of C a reduction block sums
static_assert(REDUCE_THREADS % REDUCE_GROUPS == 0 && REDUCE_COLS % 32 == 0,
              "a whole number of warps per range group: each warp reads 32 consecutive elements of a plane");

extern "C" __global__ void __launch_bounds__(THREADS, TM * TN > 64 ? 1 : 2)
sgemm_v10_split_k_two_pass(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                           int M, int N, int K, int lda, int ldb, int ldc, int split_k, float* __restrict__ partial) {
    using namespace warp_tile;
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;
    const int k_begin = blockIdx.z * split_k;
    float acc[TM][TN] = {};
    // k_begin < K (no range is empty); K − k_begin, not k_begin + split_k, which passes 2^31 near K = 2^31.
    accumulate(acc, A, B, M, N, lda, ldb, m0, n0, k_begin, k_begin + min(split_k, K - k_begin));
    if (gridDim.z == 1)  // uniform over the grid: one range, C itself
        store_micro_tile<TM, TN, GAP_M, GAP_N, ALIGNED>(acc, C, M, N, ldc, m0 + lane_row(), n0 + lane_col());
    else  // plane blockIdx.z of the workspace, rows N apart (ALIGNED: N % 4 == 0)
        store_micro_tile<TM, TN, GAP_M, GAP_N, ALIGNED>(acc, partial + (size_t)blockIdx.z * M * N, M, N, N,
                                                        m0 + lane_row(), n0 + lane_col());
}

// The second pass: C = the sum of the `splits` planes of `partial` (each M × N, rows N apart), in the
// fixed order described above. Launched only when there are two ranges or more.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
sgemm_v10_reduce_ranges(const float* __restrict__ partial, float* __restrict__ C, int M, int N, int ldc,
                        int splits) {
    __shared__ float sums[REDUCE_GROUPS][REDUCE_COLS];
    const int group = threadIdx.x / REDUCE_COLS, col = threadIdx.x % REDUCE_COLS;
    const size_t plane = (size_t)M * N;
    const size_t e = (size_t)blockIdx.x * REDUCE_COLS + col;  // element of C, row-major over M × N
    float total = 0.0f;
    if (e < plane)
        for (int s = group; s < splits; s += REDUCE_GROUPS) total += partial[s * plane + e];
    sums[group][col] = total;
    __syncthreads();
    if (group != 0 || e >= plane) return;
    float sum = sums[0][col];
#pragma unroll
    for (int g = 1; g < REDUCE_GROUPS; ++g) sum += sums[g][col];
    C[(e / N) * ldc + e % N] = sum;
}

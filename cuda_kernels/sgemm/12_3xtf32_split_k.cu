// sgemm v12 — v11's 3xTF32 wgmma kernel over split-K units, its tile height fitted to M
// (docs/ladders/sgemm.md, v12).
// Idea: v11 gives each SM whole BM × 128 tiles of C and walks all of K in each. A product of few
// tiles leaves most SMs idle: 64×64×65536 is one tile for 132 SMs (the cuBLAS-study sweep put v11 at
// 0.02× cuBLAS there), 16×4096×4096 is 32. Two changes, both from the shape:
//   - Split-K as hgemm v9 does it (docs/ladders/hgemm.md, v9): the persistent walk goes over
//     tiles × `splits` units, each a range of K slices of one tile; a unit's FP32 sums go to its plane
//     of a workspace instead of C, and a second kernel sums the planes in split order (the same bits
//     on every run; FP32 partial sums, as cuBLAS's split-K keeps). One split: v11's path exactly.
//   - A tile height fitted to M: v11 computes Cᵀ = Bᵀ·Aᵀ, so A's BM rows are the wgmma instruction's
//     N (m64nBMk8), which may be any multiple of 8. BM = 16, 32, 64 or 128 (the space); the declared
//     config (FIT=1) takes the BM whose split plan a model says finishes first (rounds × slices a unit
//     × (BM + 64): a slice's fixed part costs as much as 64 rows; study/ops/sgemm_wgmma.py fitted_height), so
//     a decode step's M of 1–16 rows multiplies 16 rows of A, not 128 (v11's 128-row tile is 8× the
//     work at M = 16, and its A box 8× the bytes), and a product of a few hundred rows and a short K
//     whose 128-row tiles leave most SMs idle takes shorter ones (222×2002×204: 32 tiles at 128 rows,
//     112 at 32; the autotune trials of c86 14.7 µs against 21.3). Space points (FIT=0) keep theirs.
// The plan (hgemm v9's split_plan, study/ops/gemm_common.py; the twin computes the same): splits =
// the SMs over the tiles, at most K's slices over MIN_SLICES, at least 1; then as few as cover the
// slices in equal ranges. MIN_SLICES is a launch parameter only, in the space so that autotune weighs
// fewer, longer units against more.
// Costs: the partials cross L2/HBM twice (write, then read) and a second launch; K per unit shrinks,
// so the pipeline's fill and drain weigh more; a small BM leaves the consumers' B fragments (split
// in registers every slice, as v11) the same work for fewer products.
// Removes: v11's idle SMs on products of few tiles, and its 128-row tile on products of a few rows.
// Builds on: v11 (its body, sgemm/wgmma_3xtf32.cuh with Split; the sum of the planes is
// hgemm/reduce_splits.cuh, storage_t float). Constraints: v11's (A's rows one tensor map cannot read are
// read in place by eight, B's staged by the launch; C stored element by element at any leading dimension);
// the workspace holds
// splits × M × ldp floats, ldp = N rounded up to 4. Correct at every autotune point and edge shape,
// clean under memcheck and racecheck (H200, c16/c17 at c5f5b0f); no figure yet.
// Registers: setmaxnreg 56 (producer) and 216 (consumers) at every BM, as v11.
// arch: sm_90a
// precisions: fp32
// config: BM=128 BN=128 BK=32 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4 FIT=1
// space: BM=128 BN=128 BK=32 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4 FIT=0
// space: BM=128 BN=128 BK=32 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=8 FIT=0
// space: BM=64 BN=128 BK=32 STAGES=6 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4 FIT=0
// space: BM=64 BN=128 BK=32 STAGES=6 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=2 FIT=0
// space: BM=32 BN=128 BK=32 STAGES=8 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4 FIT=0
// space: BM=32 BN=128 BK=32 STAGES=8 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=2 FIT=0
// space: BM=16 BN=128 BK=32 STAGES=8 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4 FIT=0
// space: BM=16 BN=128 BK=32 STAGES=8 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=2 FIT=0
// space: BM=16 BN=128 BK=32 STAGES=8 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=8 FIT=0
#include "common.cuh"
#include "hopper.cuh"
#include "sgemm/wgmma_3xtf32.cuh"
#include "hgemm/reduce_splits.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
sgemm_v12_3xtf32_split_k(const __grid_constant__ ResidueMaps maps_a, const __grid_constant__ TensorMap map_b,
                         float* __restrict__ C, int M, int N, int K, int ldc, int splits, int slices_per,
                         float* __restrict__ partial, int ldp) {
    if (splits == 1)  // uniform over the grid
        wgmma_3xtf32_gemm(&maps_a, &map_b, C, M, N, K, ldc);
    else
        wgmma_3xtf32_gemm<true>(&maps_a, &map_b, C, M, N, K, ldc, splits, slices_per, partial, ldp);
}

// The second kernel: C = the sum of the `splits` planes of `partial` (each M × N, rows ldp apart), in
// plane order (hgemm/reduce_splits.cuh, its epilogue the plain sum; from_float is the identity for
// FP32 storage). Launched only when there are two splits or more.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
sgemm_v12_reduce_splits(const float* __restrict__ partial, storage_t* __restrict__ C, int M, int N, int ldp,
                        int ldc, int splits) {
    reduce_splits(partial, C, M, N, ldp, ldc, splits, PlainSum{});
}

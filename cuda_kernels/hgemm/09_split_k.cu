// hgemm v9 — split-K on v8's warp-specialised kernel, for products of few tiles (docs/ladders/hgemm.md, v9).
// Idea: v8 gives each SM whole 128 × 256 tiles of C. A product of few tiles — a decode step's M of 1
// or 16 tokens, a 64-row product — leaves most SMs idle: M = 16, N = 4096 makes 16 tiles for 132
// SMs, and the cuBLAS-study sweep put v8 at 0.61–0.63× cuBLAS at 64 tiles and 0.24× at two. Here
// the persistent walk goes over tiles × `splits` units, each a range of K slices of one tile (the
// launch plans the splits from the tile count, as sgemm v5/v9/v10 do, so that the units fill the
// SMs; no range is empty), and a unit's FP32 accumulators go to its plane of a workspace instead of
// C. A second kernel, launched after it on the same stream, sums the planes in split order and rounds
// once to the storage type: the same bits on every run, FP32 partial sums as cuBLAS's split-K keeps.
// One split (a product of enough tiles): v8's path exactly, C by TMA stores, no second kernel.
// Costs: the partials cross L2/HBM twice (write, then read) and a second launch; K per unit shrinks,
// so the pipeline's fill and drain weigh more.
// Removes: v8's idle SMs on products of few tiles.
// Builds on: v8 (its kernel body, hgemm/warp_specialized.cuh with Split; the sum of the planes is
// hgemm/reduce_splits.cuh). Constraints: v8's (rows TMA cannot read are staged by the launch); the
// workspace holds splits × M × ldp floats, ldp = N rounded up to 4.
// arch: sm_90a
// precisions: fp16 bf16
// The plan (study/ops/hgemm.py, split_plan; the twin computes the same): splits = the SMs over the
// tiles, at most K's slices over MIN_SLICES (a unit of fewer slices would spend its time filling and
// draining the pipeline), at least 1; then as few as cover the slices in equal ranges. MIN_SLICES is a
// launch parameter only, in the space so that autotune weighs fewer, longer units against more.
// config: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=2
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=8
// space: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=2
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/warp_specialized.cuh"
#include "hgemm/reduce_splits.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_v9_split_k(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                 const __grid_constant__ TensorMap map_c, int M, int N, int K, int splits, int slices_per,
                 float* __restrict__ partial, int ldp) {
    if (splits == 1)  // uniform over the grid
        warp_specialized_gemm(&map_a, &map_b, &map_c, M, N, K, NoEpilogue{});
    else
        warp_specialized_gemm<NoEpilogue, 2, true>(&map_a, &map_b, &map_c, M, N, K, NoEpilogue{}, 1, splits,
                                                   slices_per, partial, ldp);
}

// The second kernel: C = the sum of the `splits` planes of `partial` (each M × N, rows ldp apart), in
// plane order, rounded once (hgemm/reduce_splits.cuh, its epilogue the plain sum). Launched only when
// there are two splits or more.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
hgemm_v9_reduce_splits(const float* __restrict__ partial, storage_t* __restrict__ C, int M, int N, int ldp,
                       int ldc, int splits) {
    reduce_splits(partial, C, M, N, ldp, ldc, splits, PlainSum{});
}

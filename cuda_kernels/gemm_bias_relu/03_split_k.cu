// gemm_bias_relu v3 — split-K for products of few tiles: v2's kernel over tiles × K ranges, the
// epilogue moved into the reduction (docs/ladders/gemm_bias_relu.md, v3).
// Idea: v2 gives each SM whole 128 × 256 tiles of C, so a product of fewer tiles than SMs — a decode
// step's M of 1 to 16 tokens, M = 16 and N = 4096 making 16 tiles for 132 SMs — leaves most SMs idle.
// As hgemm v9 does for v8, the persistent walk goes over tiles × `splits` units, each a range of K
// slices of one tile, and a unit's FP32 accumulators go to its plane of a workspace instead of C
// (hgemm/warp_specialized.cuh with Split; the plan is hgemm v9's, made by the launch from the tile
// count). The bias and the ReLU cannot be applied to a partial sum (relu(x) + relu(y) ≠ relu(x + y)),
// so the epilogue moves into the second kernel: it sums the planes in split order, adds the bias and
// applies ReLU in FP32, and rounds once to the storage type (hgemm/reduce_splits.cuh with
// BiasReluColumn) — the same bits on every run, and one rounding, as v2's.
// One split (a product of enough tiles): v2's path exactly, the epilogue on the accumulators as each
// box of C is staged, C by TMA stores, no second kernel.
// Costs: hgemm v9's — the partials cross L2/HBM twice and a second launch; shorter K per unit, so
// the pipeline's fill and drain weigh more — and, when it splits, the bias read once per element of C
// by the reduction (from cache) instead of once per tile.
// Removes: v2's idle SMs on products of few tiles.
// Builds on: v2 (its epilogue, gemm_bias_relu/epilogue.cuh), hgemm v9 (Split, its reduction and its
// plan). Constraints: v2's (rows TMA cannot read are staged by the launch; a 4-byte aligned bias); the
// workspace holds splits × M × ldp floats, ldp = N rounded up to 4.
// arch: sm_90a
// precisions: fp16 bf16
// The plan (study/ops/hgemm.py, split_plan; the twin computes the same): splits = the SMs over the
// tiles, at most K's slices over MIN_SLICES, at least 1; then as few as cover the slices in equal
// ranges. MIN_SLICES is a launch parameter only, in the space as hgemm v9's.
// config: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=2
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=8
// space: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=4
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384 REDUCE_THREADS=256 MIN_SLICES=2
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/warp_specialized.cuh"
#include "hgemm/reduce_splits.cuh"
#include "gemm_bias_relu/epilogue.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_bias_relu_v3_split_k(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                          const __grid_constant__ TensorMap map_c, const unsigned short* __restrict__ bias, int M,
                          int N, int K, int splits, int slices_per, float* __restrict__ partial, int ldp) {
    if (splits == 1)  // uniform over the grid
        warp_specialized_gemm(&map_a, &map_b, &map_c, M, N, K, BiasReluEpilogue<BN>{bias, {}});
    else
        warp_specialized_gemm<NoEpilogue, 2, true>(&map_a, &map_b, &map_c, M, N, K, NoEpilogue{}, 1, splits,
                                                   slices_per, partial, ldp);
}

// The second kernel: C = relu(the sum of the `splits` planes of `partial`, in plane order, + bias),
// rounded once. Launched only when there are two splits or more.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
gemm_bias_relu_v3_reduce_splits(const float* __restrict__ partial, storage_t* __restrict__ C,
                                const storage_t* __restrict__ bias, int M, int N, int ldp, int ldc, int splits) {
    reduce_splits(partial, C, M, N, ldp, ldc, splits, BiasReluColumn{bias});
}

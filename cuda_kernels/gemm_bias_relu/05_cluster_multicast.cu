// gemm_bias_relu v5 — the epilogue fused into hgemm v11: v8's warp-specialised kernel in 2-block clusters
// whose pairs of tiles share B's slices, multicast by TMA (docs/ladders/gemm_bias_relu.md, v5).
// Idea: v2 is v8 with the bias and ReLU applied as each 64 × 64 box of C is staged for its TMA store;
// v5 is the same epilogue (BiasReluEpilogue, gemm_bias_relu/epilogue.cuh) on v11's walk. A pair's two
// blocks take block rows 2p and 2p + 1 of one block column, so they load the same BN columns of the
// bias too: each block loads its own (BN elements a tile from L2, against BM·BN outputs: nothing to
// share). Everything else is v11's code (hgemm/warp_specialized.cuh with Pair), so fused minus bare is
// the epilogue's cost, as v2 against v8.
// Removes: what v11 removes from v2 — a third of L2's traffic to the SMs per pair and slice (B read
// once for two tiles), issue 30's item 3 (the fused op on the cluster tile).
// Bottleneck that remains: v11's, the tensor pipe (98 % busy at 8192³ BF16 for hgemm v11, ncu at
// 294b825). H200 (reports/h200/experiments/gbr-v5-fa8e8f8, commit fa8e8f8, BF16 cold, autotune off,
// paired with cuBLASLt's RELU_BIAS): 8192³ 1.012× [1.002, 1.019] (v2 0.994× [0.983, 0.995]);
// 16384×11008×4096 1.009× [1.007, 1.012] (v2 1.010× [1.006, 1.014]); GPU tests and memcheck/racecheck clean.
// The epilogue costs no more than cuBLASLt's: v5 over cuBLASLt is hgemm v11 over cuBLAS (1.025× at
// 8192³ BF16 in the same hour), not the 1.05× of issue 30's goal.
// Builds on: v2 (its epilogue), hgemm v11 (its kernel body with Pair, its launch). Constraints: v11's
// (K and N multiples of 8, 16-byte aligned rows, otherwise staged by the launch; BN a multiple of 128;
// an even grid of at most SMs / 2 clusters) and a 4-byte aligned bias (checked at launch).
// arch: sm_90a
// precisions: fp16 bf16
// config: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=4 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=16 THREADS=384
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/warp_specialized.cuh"
#include "gemm_bias_relu/epilogue.cuh"

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS, 1)
gemm_bias_relu_v5_cluster_multicast(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                                    const __grid_constant__ TensorMap map_c, const unsigned short* __restrict__ bias,
                                    int M, int N, int K) {
    warp_specialized_gemm<BiasReluEpilogue<BN>, 2, false, true>(&map_a, &map_b, &map_c, M, N, K,
                                                               BiasReluEpilogue<BN>{bias, {}});
}

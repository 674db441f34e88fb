// gemm_bias_relu v1 — the epilogue fused into the best SIMT rung: sgemm v7's FFMA warp tiles
// (docs/ladders/gemm_bias_relu.md, v1).
// Idea: the bias is added and ReLU applied to the accumulators while they are still in registers,
// between the K loop and the store, so C is written once and never read back: v0's extra round trip
// of C through HBM and its second launch are gone. Each thread loads the bias of its TN columns once
// (BiasReluMicroTile); the rest is sgemm v7's code — sgemm_warp_tile in sgemm/tile_warp.cuh, its
// FFMA main loop, tile, pipeline and grouped block order — so fused minus bare is the epilogue's cost.
// Constraints: FP32 only (the SIMT GEMM ladder is FP32; FP16/BF16 go through the tensor cores, v2).
// arch: sm_80
// precisions: fp32
// config: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=4 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=4 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=8 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=4 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=8 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=4 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=64 WN=32 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=16 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=64 WN=32 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=16 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=128 STAGES=3 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=128 STAGES=3 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=256 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=3 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=256 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=256 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=1
// space: BM=256 BN=128 BK=16 WM=64 WN=64 TM=16 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=256 BN=128 BK=16 WM=64 WN=64 TM=16 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128 STAGES=4 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=256 BN=128 BK=8 WM=64 WN=64 TM=16 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=256 BN=128 BK=8 WM=64 WN=64 TM=16 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=256 BK=8 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=4 GROUP=8 HOIST=0 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=256 BK=8 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=4 GROUP=8 HOIST=1 PREFETCH=0 FMA_ORDER=0
// space: BM=128 BN=256 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=1 FMA_ORDER=0
// space: BM=256 BN=128 BK=16 WM=64 WN=64 TM=16 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=1 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=128 STAGES=3 GROUP=8 HOIST=1 PREFETCH=1 FMA_ORDER=0
// space: BM=128 BN=256 BK=8 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=4 GROUP=8 HOIST=1 PREFETCH=1 FMA_ORDER=0
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=1 FMA_ORDER=0
// space: BM=128 BN=256 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=256 STAGES=3 GROUP=8 HOIST=1 PREFETCH=2 FMA_ORDER=0
#include "common.cuh"
#include "sgemm/tile_warp.cuh"
#include "gemm_bias_relu/epilogue.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, TM * TN > 64 ? 1 : 2)
gemm_bias_relu_v1_fused_simt(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                             float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc) {
    using namespace warp_tile;
    sgemm_warp_tile(A, B, C, M, N, K, lda, ldb, ldc, BiasReluMicroTile<TM, TN, GAP_N>{bias, N});
}

// gemm_bias_relu v2 — the epilogue fused into the best tensor-core rung: hgemm v8 (warp-specialised
// wgmma fed by TMA, persistent, C stored through shared memory by TMA) with the bias and ReLU applied
// as its consumers stage each 64 × 64 box of C (docs/ladders/gemm_bias_relu.md, v2).
// Idea: v8's epilogue already holds every output in registers and passes it through shared memory
// to a TMA store; the bias is one more FP32 add and a max per element there, so C is written once
// and never read back (v0's round trip, 2·M·N elements, is gone). Each consumer thread loads the
// bias of its BN/4 columns once per tile, in pairs (BiasReluEpilogue, gemm_bias_relu/epilogue.cuh),
// issued after the tile's last wgmmas and before waiting for them, so the loads overlap the math.
// Everything else is v8's code (hgemm/warp_specialized.cuh): fused minus bare is the epilogue's cost.
// Constraints: v8's (K and N multiples of 8, 16-byte aligned rows of A, B and C; otherwise staged
// by the launch) and a 4-byte aligned bias (checked at launch).
// arch: sm_90a
// precisions: fp16 bf16
// config: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=16 THREADS=384
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/warp_specialized.cuh"
#include "gemm_bias_relu/epilogue.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_bias_relu_v2_fused_wgmma(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                              const __grid_constant__ TensorMap map_c, const unsigned short* __restrict__ bias,
                              int M, int N, int K) {
    warp_specialized_gemm(&map_a, &map_b, &map_c, M, N, K, BiasReluEpilogue<BN>{bias, {}});
}

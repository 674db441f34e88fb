// gemm_bias_relu v4 — skinny M (a decode step, M ≤ 64 tokens): hgemm v10's kernel with the bias and
// ReLU in its C store, or in its split-K reduction (docs/ladders/gemm_bias_relu.md, v4).
// Idea: v2 and v3 give the tokens wgmma's M side, 64 rows an instruction and 128 a tile, so at M = 1 or
// 16 all but 1/64 or 1/4 of every instruction multiplies the zero rows TMA fills in, and v3 does not
// split the llama2-7b suite's up projection (1×22016×4096: 86 tiles, one split) — 0.75× cuBLASLt on the
// H200 at 1 and 16 tokens (c19, v2 and v3 alike). hgemm v10 computes Cᵀ = Bᵀ·Aᵀ so that the weights
// are the instruction's 64-row side and the tokens its N (8 to 64, from M); v4 is that kernel
// (hgemm/skinny_m.cuh) with one more step in C's store: each accumulator plus its column's bias, ReLU,
// then the one rounding (BiasReluToStorage). With two splits or more the bias and ReLU cannot go on a
// partial sum: the last unit of each tile to finish sums the FP32 planes in split order, then adds the
// bias and applies ReLU before rounding, in the same launch (hgemm/skinny_m.cuh, sum_tile).
// Costs: v10's (the weights streamed once from HBM: at M tokens M FLOP/byte, memory-bound); the bias
// is loaded per stored element from L1 (C is ≤ 64/K of the traffic).
// Removes: v2/v3's 128-row tiles at decode-sized M.
// Builds on: hgemm v10 (the kernel, its plan and in-launch sum of the splits), v2 (the epilogue).
// Constraints: M ≤ 64 (the launch refuses more: v2/v3 take it); K and N as v10 (A's rows TMA cannot read
// staged by the launch, B's read in place by v10's eight residue maps); the workspace holds
// splits × M × ldp floats and a count per tile.
// Measured (H200, c20 at 21f957b, BF16, cold, autotune off, paired against cuBLASLt's RELU_BIAS):
// 1×22016×4096 0.90× [0.899, 0.900], 16×22016×4096 0.84× [0.835, 0.837] (v2/v3 0.67–0.70× there).
// ncu (c65, reports/h200/profiles/gemm-bias-relu.md): at 1×22016×4096 51.9 µs, DRAM 73 %, against cuBLASLt's
// 256-wide nvjet tile 47.7 µs at 80 %: BN=128 makes 172 tiles for 132 persistent blocks, a second round for 40.
// Autotuned there (c67 at 7e0cc86, reports/h200/experiments/space-7e0cc86, cold, unpaired): BN=256 (86 tiles, one
// round) took 50.1 µs at 1×22016×4096 and 51.3 at 16×, 0.94× and 0.92× cuBLASLt, against 53.5–53.8 and
// 55.1–55.3 for BN=128 at 8 stages (the declared point and its MIN_SLICES 2 and 8). At the suite's other N (c78 at
// ab2a247, experiments/space-ab2a247): BN=64 (100 tiles) 10.7 µs at 1×6400×1600 and 16×, against 11.7–12.5 at 128
// and 12.2–13.6 at 256 (25 tiles). So no one width: FIT_BN=1 (study/ops/skinny_fit.py) declares the narrowest
// whose tiles do not pass the SMs — 256 at 22016, 64 at 6400. Measured in the suites (c80 at 358e274, BF16, cold):
// 1×6400×1600 0.96× → 1.09× cuBLASLt, 16×6400×1600 0.87× → 1.03×, 1×22016×4096 0.87× → 0.95×, 16× 0.88× → 0.91×.
// arch: sm_90a
// precisions: fp16 bf16
// config: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=4 FIT_BN=1
// space: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=4 FIT_BN=1
// space: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=4 FIT_BN=0
// space: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=2 FIT_BN=0
// space: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=8 FIT_BN=0
// space: BN=128 BK=64 STAGES=4 THREADS=288 MIN_SLICES=4 FIT_BN=0
// space: BN=256 BK=64 STAGES=5 THREADS=544 MIN_SLICES=4 FIT_BN=0
// space: BN=256 BK=64 STAGES=5 THREADS=544 MIN_SLICES=2 FIT_BN=0
// space: BN=64 BK=64 STAGES=8 THREADS=160 MIN_SLICES=4 FIT_BN=0
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/skinny_m.cuh"
#include "gemm_bias_relu/epilogue.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, 1)
gemm_bias_relu_v4_skinny_m(const __grid_constant__ TensorMap map_a, const __grid_constant__ WeightMaps maps_b,
                           storage_t* __restrict__ C, const storage_t* __restrict__ bias, int M, int N, int K,
                           int ldc, int splits, int slices_per, float* __restrict__ partial, int ldp,
                           unsigned* __restrict__ tile_done) {
    skinny_m_gemm(&map_a, &maps_b, C, M, N, K, ldc, splits, slices_per, partial, ldp, tile_done,
                  BiasReluToStorage{bias});
}

// hgemm v10 — skinny M (a decode step, M ≤ 64 tokens) computed transposed, Cᵀ = Bᵀ·Aᵀ, so that the
// tokens are the wgmma instruction's N and the weights its 64-row M (docs/ladders/hgemm.md, v10).
// Idea: v8/v9 give the tokens wgmma's M, which is 64 per warpgroup and 128 per tile: at M = 1 or 16,
// 98 % or 88 % of every instruction multiplies the zero rows TMA fills in, and each SM's tile is
// a 128 × 256 block of C of which 1 or 16 rows exist. Here the operands swap roles. The weight tile
// — BK rows of 64 columns of B, loaded by TMA with the 128-byte swizzle exactly as v8 loads B — is
// wgmma's A, read MN-major (imm-trans-a = 1: its 64 m, the weight columns, contiguous in each
// swizzled row); the token tile — TOKENS rows of 64 k of A, loaded as v8 loads A — is wgmma's B,
// K-major (imm-trans-b = 0), and the instruction is m64nTOKENSk16 with TOKENS ∈ {8, 16, 32, 64}, a
// compile-time define the launch picks as the smallest that holds M (TMA reads the rows past M as
// zeros). A consumer warpgroup owns 64 weight columns × TOKENS tokens (TOKENS/2 FP32 accumulators a
// thread); accumulator (n, m) is C[m][n]. The tile is BN = 64 × consumers weight columns.
// Warp-specialised as v8: a producer warp (the block's last, so that the consumers are aligned
// warpgroups) issues TMA into a ring of STAGES stages (fewer where B is read in place and they do not
// fit) with full/empty mbarriers, the consumers wait on full, multiply, release. No setmaxnreg: a
// consumer holds at most 32 accumulators.
// Few tiles (N / BN: 32 at N = 4096, BN = 128, for 132 SMs), so split-K over tiles × splits units
// exactly as v9 plans it (study/ops/hgemm.py, split_plan, with BM = TOKENS: one row of tiles): one
// split writes C; more write FP32 planes, which the last unit of each tile to finish sums in plane
// order into C inside the same launch (hgemm/skinny_m.cuh, sum_tile; a count per tile) — not v9's
// second kernel, whose launch and pass over C are much of a decode product's few µs.
// C by plain stores, not TMA: the accumulators are Cᵀ (a thread's registers run along C's columns),
// so a TMA store would need a transpose through shared memory, for at most 64 rows of C against
// K rows of weights read (C is ≤ 64/K of the traffic); a warp's store writes 16 contiguous bytes in
// each of 4 rows of C. C needs no 16-byte rows, so it is never staged.
// Bottleneck: memory. At M tokens the product does 2·M FLOPs per weight element (2 bytes) read once:
// M FLOP/byte, 1–16 against the H200's ~206 FLOP/byte ridge (989 TFLOPS dense / 4.8 TB/s), so it is
// bound by streaming B from HBM (K·N·2 bytes) at M ≤ 64; the STAGES ring keeps STAGES · BN · 128
// bytes of weights in flight per SM (64 KiB at BN = 128, 4 stages) to cover HBM latency.
// Removes: v8/v9's 128-row tiles at M ≤ 64, where all but M of each tile's 128 rows multiply the
// zeros TMA fills in (a wgmma of 64 rows for 1 token).
// Builds on: v9 (plan, partial planes), v8 (producer/consumer ring), hopper.cuh's
// wgmma_m64k16_ta. Constraints: M ≤ 64 (the launch refuses more: v8/v9 take it); A's rows as v8's
// (staged where TMA cannot read them); B's rows, where one tensor map cannot describe them (no multiple
// of 16 bytes apart: N = 50257), read in place by eight, one per residue of k mod 8, and shifted on
// chip (B_IN_PLACE, hgemm/skinny_m.cuh); the workspace holds splits × M × ldp floats and a count per tile.
// B in place (c48 at 77e80a5, paired, cold): 1 × 50257 × 1600 BF16 1.14× cuBLAS [1.137, 1.139], 63.1 µs
// (0.60× with cp.async copies of each row's words, 0.22× staged), FP16 1.84×; 16 × 50257 × 1600 2.12×
// BF16, 2.15× FP16. The gpt2-xl suite (c49/c50): BF16 geometric mean 1.104×, worst 0.857×
// (16 × 4800 × 1600); FP16 1.138×, worst 0.857× (docs/ladders/hgemm.md, v10).
// Measured (H200, BF16, autotune off, c19 at 6b93f4f; × cuBLAS of one run each, unpaired): the
// llama2-7b suite's projections at 1 token 0.91–0.96 (v8 0.27–0.80, v9 0.65–0.80), at 16 tokens
// 0.89–0.98; lowest at N = 22016. Not the SMs' fill: at 1 token N = 12288 (96 tiles, one split, 73 %
// of the SMs busy) gave the highest, 0.961, N = 22016 (172 tiles, 1.3 rounds) 0.914, N = 4096 (32 tiles,
// 4 splits, 97 %) 0.951; what does is for ncu. Correct at every autotune point and edge shape, clean
// under memcheck and racecheck (c16/c17 at c5f5b0f); B in place correct at every point (c48 at 77e80a5),
// clean under memcheck, racecheck and synccheck at 1 × 50257 × 1600 and 3 × 1001 × 67.
// FIT_BN=1 (the launch's, study/ops/skinny_fit.py): the weight tile the narrowest of 64, 128, 256 columns whose
// tiles do not pass the SMs, each width with its space point's threads and stages; it picks the width of each
// measured autotune winner of this kernel in gemm_bias_relu v4 and bgemm v3 (256 at N = 22016, 64 at 6400 and at
// bgemm's 64/128-column entries). The figures above are of BN=128. Measured with the fit (c84 at 358e274, BF16,
// cold, the llama2-7b suite): 64 columns at N = 4096 0.95× → 1.07–1.10× cuBLAS at 1 token, 0.93× → 1.03–1.05× at
// 16; 256 at 22016 0.91× → 0.95× and 0.89× → 0.90× (docs/ladders/hgemm.md, v10).
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

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, 1)
hgemm_v10_skinny_m(const __grid_constant__ TensorMap map_a, const __grid_constant__ WeightMaps maps_b,
                   storage_t* __restrict__ C, int M, int N, int K, int ldc, int splits, int slices_per,
                   float* __restrict__ partial, int ldp, unsigned* __restrict__ tile_done) {
    skinny_m_gemm(&map_a, &maps_b, C, M, N, K, ldc, splits, slices_per, partial, ldp, tile_done, ToStorage{});
}

// sgemm v11 — 3xTF32 on Hopper's wgmma: v8's FP32-accurate emulation at the warpgroup instruction's
// rate (docs/ladders/sgemm.md, v11).
// Why: v8 issues mma.sync, the legacy tensor path on Hopper (ncu: HMMA pipe 55 %, 1.19× cuBLAS
// FP32), and every warp splits each operand it loads (hi and lo in integer arithmetic, a third of
// its issue slots). A TF32 wgmma reads its shared-memory operand K-major only; this op's B is
// N-contiguous. The rung computes the transposed product, Cᵀ = Bᵀ·Aᵀ, so that:
//   - B is wgmma's A operand, which may come from registers in any layout: each consumer thread
//     loads its fragment from B's FP32 tile as TMA stored it and splits it in registers;
//   - A is wgmma's B operand: A's rows are K-contiguous, which is what a K-major operand is, so the
//     TMA box of A (BM rows of 32 floats, 128-byte swizzle) is the descriptor's layout as it lands.
//     A producer warpgroup splits it once per stage: hi in place, lo into a twin plane of the
//     same layout (the split is elementwise, so the swizzle needs no thought), then
//     fence.proxy.async and an mbarrier hand both planes to the consumers' wgmma.
// Per k8 step a consumer warpgroup issues three wgmma m64nBMk8 (Blo·Ahi, Bhi·Alo, then Bhi·Ahi:
// small terms first) into a slice partial; after each BK = 32 slice the partial joins the running
// sum by FADD (the tensor cores' accumulation does not round to nearest: v8's header).
// Fragment rows: wgmma row R of a consumer (16w + 8h + g: warp w, half h, g = lane / 4) stands for
// C column n(R) = 32·(c / 4) + 4·(c % 4) + (g % 4) + 16·(g / 4), c = 2w + h. With it the 32 lanes'
// 4-byte loads of a fragment register (k = t or t + 4, t = lane % 4) from the swizzled B box hit 32
// distinct banks (16-byte chunk (n / 4) XOR (k % 8) and word n % 4 are distinct over g and t),
// where the identity mapping gives 2-way conflicts. The epilogue stores D row R to column n(R).
// Warp specialisation as hgemm v8 (docs/ladders/hgemm.md, v8): warpgroup 0 is the producer (thread
// 0 issues TMA as stages empty; warps 1-3 split as copies land), warpgroups 1 and 2 are consumers,
// each owning 64 columns of the BM × 128 tile; the grid is persistent, tiles in the grouped order.
// Registers (setmaxnreg): a consumer holds BM/2 sums, BM/2 partials and 32 fragment registers.
// H200 (reports/h200/sgemm-runs/sgemm-v11.md, commit babf2ba; ncu in reports/h200/profiles/sgemm.md):
// 116.4 TFLOPS at 4096^3 = 2.27x cuBLAS FP32, 113.7 at 8192^3 = 2.22x, gate error 7.6e-8 and 7.3e-8
// of |A|.|B| against cuBLAS FP32's 3.6e-7 and 3.9e-7; tensor pipe 80.2 % at 1.78 GHz (power), top
// stall the consumers' wgmma wait. The first build (8cc3709: the TMA thread split too, so a slice's
// split waited for the consumers to release the slice before it) ran 1.45x / 1.48x with the tensor
// pipe 47.5 % and the consumers on the split barrier in 25 % of the stall samples
// (source-sgemm-v11_3xtf32_wgmma-8cc3709.md). What is left: each consumer waits for its slice's
// twelve wgmmas before its FADDs and its next fragments (19 % of the samples).
// Constraints: one tensor map reads rows 16 bytes apart by a multiple from a 16-byte start (K and N
// multiples of 4). Otherwise A is read in place by eight maps, one per residue of its rows mod 8, and
// the splitters shift each row on chip (A_IN_PLACE, sgemm/wgmma_3xtf32.cuh), and B is staged in such rows
// by the launch (study/ops/tma_staging.py); tails in M, N and K load as zeros, C is stored element by
// element inside M × N. Copying such rows inside the kernel with 4-byte cp.async instead (the splitter
// warps; 468fdc9–804ca5e) ran slower at every odd-suite shape with an operand of 2 MB or more but one
// (c90: 1689x2805x11411 1.22 -> 3.16 ms; docs/ladders/sgemm.md, v12): reverted. The residue maps keep
// TMA's bulk copies (boxes of 36 floats) and add only the splitters' shift to work they did anyway.
// arch: sm_90a
// FOLD (sgemm/wgmma_3xtf32.cuh): the slice partial runs over FOLD slices before its FADDs, so a
// consumer waits on its wgmmas before the FADDs a FOLD-th as often. c30/c31 at aa4ca76 (one H200, event
// medians of 30 launches, unpaired): 4096^3 FOLD=1 119.7 TFLOPS, 2 126.2, 4 127.5 (gate error 7.2e-8,
// 7.7e-8, 1.16e-7; cuBLAS FP32 3.5e-7 at 50.9 TFLOPS); 8192^3 112.0, 110.4, 113.9 (7.1e-8, 7.5e-8,
// 8.7e-8; cuBLAS 3.7e-7). ncu at 8192^3 (1.75-1.79 GHz): FOLD=2 8.54 ms, tensor pipe 84.8 %, against
// FOLD=1 8.66 ms, 81.8 %. Tried and dropped: loading the next slice's fragments (a second set of 32
// registers) while a slice's wgmmas run, before waiting on them: 4096^3 114.5, 8192^3 104.8 TFLOPS,
// ncu tensor pipe 77.8 %, top stall long_scoreboard (c30). FOLD=4 paired with cuBLAS FP32 (c32 at 98e5656,
// reports/h200/experiments/sgemm-v11-fold-98e5656): 2.29x [2.285, 2.296] at 4096^3, 2.26x [2.239, 2.272]
// at 8192^3 (FOLD=1, c30: 2.14x, 2.17x), v11 at 1,710-1,755 MHz alone under the power cap, cuBLAS at
// 1,965-1,980. What is left at 8192^3: the tensor pipe 85 % busy, and the clock the power cap leaves it.
// A consumer whose 64 columns lie past N waits and releases each slice but issues no wgmma, leaving the
// tensor cores to the other (sgemm/wgmma_3xtf32.cuh; docs/ladders/sgemm.md, v12, idle consumers): at N ≤ 64
// half the tile's products were zeros (H100 c150, unpaired: 1.16-1.19x the old body at 4517x62x2411).
// config: BM=128 BN=128 BK=32 STAGES=4 GROUP=8 THREADS=384 FOLD=4
// space: BM=128 BN=128 BK=32 STAGES=4 GROUP=8 THREADS=384 FOLD=1
// space: BM=128 BN=128 BK=32 STAGES=3 GROUP=8 THREADS=384 FOLD=1
// space: BM=128 BN=128 BK=32 STAGES=4 GROUP=16 THREADS=384 FOLD=1
// space: BM=64 BN=128 BK=32 STAGES=6 GROUP=8 THREADS=384 FOLD=1
// space: BM=128 BN=128 BK=32 STAGES=4 GROUP=8 THREADS=384 FOLD=2
// space: BM=128 BN=128 BK=32 STAGES=4 GROUP=8 THREADS=384 FOLD=4
#include "common.cuh"
#include "hopper.cuh"
#include "sgemm/wgmma_3xtf32.cuh"

// The body (the producer's TMA and split, the consumers' wgmma, the epilogue) is
// sgemm/wgmma_3xtf32.cuh's, shared with v12, which runs it over split-K units.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sgemm_v11_3xtf32_wgmma(const __grid_constant__ ResidueMaps maps_a, const __grid_constant__ TensorMap map_b,
                       float* __restrict__ C, int M, int N, int K, int ldc) {
    wgmma_3xtf32_gemm(&maps_a, &map_b, C, M, N, K, ldc);
}

// sgemm v7 — a deeper cp.async pipeline and a grouped block order (docs/ladders/sgemm.md, v7).
// Idea: v6 with STAGES (3 or 4) shared buffers, so two or three slices are in flight while one
// is computed, and blocks launched GROUP block rows at a time down each block column, so the
// blocks resident together read the same A rows and B columns from L2 instead of sweeping all
// of B once per block row.
// Removes: load latency that two stages leave exposed when a slice's copies take longer than its
// FFMAs (short BK, one resident block), and L2 misses from the launch order on large shapes.
// H200 (ncu at 4096^3): FMA pipe 63.0 %, issue slots 78.4 %, DRAM 3 % busy (v4 too: the tile
// order was not the limit); 0.75x cuBLAS off, 0.83x tuned (128x256x16, 3 stages). What remains
// is the issue efficiency of the FFMA stream (cuBLAS: FMA pipe 79.3 %, issue 89.6 %).
// HOIST (a config axis, as hgemm v6's): by nvdisasm (nvcc 13.0, sm_90a) each BK slice of the tuned
// tile runs 2,427 instructions for 2,048 FFMAs and 96 LDS: 283 others, nearly all rebuilding the
// 12 copies' 64-bit addresses and bounds from re-read kernel parameters. HOIST=1 (tile_warp.cuh,
// SliceCopies) forms them once per thread: 2,247 a slice (FFMAs 84.4 % → 91.1 % of the stream),
// 235 → 219 registers; the declared tile 1,336 → 1,183. HOIST=0 is the code measured above (SASS
// unchanged); every tile of the space comes both ways, and gemm_bias_relu v1 shares the axis.
// Measured (commit 3c91c8f, reports/h200/sgemm-runs/sgemm-v7-v8-hoist.md): tuned, the 128x256x16
// tile with HOIST=1 runs 45.9 TFLOPS at 4096^3 and 46.1 at 8192^3 (0.90x cuBLAS; 0.83x before).
// ncu of that point (reports/h200/profiles/sgemm.md): FMA pipe 72.3 % (cuBLAS 79.3), issue 78.4 %,
// 217 registers; stall samples (source-sgemm-v7_multistage-HOIST_1.md): FFMAs are 91.0 % of the
// instructions, warps issue in 39.2 % of samples and wait on "dispatch" 9.1 %, on LDS results
// (short scoreboard) 7.5 %: with two warps a scheduler what is left is operand delivery, not count.
// 59 % of those short-scoreboard samples sat on the first FFMAs after each slice's barrier. PREFETCH=1
// (pipeline.cuh, cp_async_pipeline_ahead) loads a slice's first fragments before the previous slice's
// last k step. Measured (commit cc3a2e1, reports/h200/sgemm-runs/sgemm-v7-prefetch*.md): it wins, by
// 1.5-1.7 %, with the 128x128x16 tile at 512x4096x4096 (0.92x cuBLAS) and 1000x1500x1700 (0.76x), not at
// 2048^3, 4096^3 or 8192^3, where the tuner keeps the 128x256x16 HOIST=1 point (0.89-0.90x); with
// PREFETCH=1 that tile is slower (ncu 3.17 against 3.00 ms, issue 74.4 %): ptxas puts the next
// slice's six LDS after the refill's copies, and one FFMA of the last step then waits on them (its
// scoreboard), so the stall moved from the slice's head to its tail
// (source-sgemm-v7_multistage-PREFETCH_1.md). PREFETCH=2 fetches before the refill (the loads then
// follow the barrier in the SASS): measured (commit 5ed7e35, sgemm-runs/sgemm-prefetch2.md), not
// picked at 4096^3; ncu 3.08 ms against 3.00, 237 registers, short scoreboard still 7.4 % of the
// samples (source-sgemm-v7_multistage-PREFETCH_2.md).
// Spreading the refill's copies over the slice in 2 or 4 parts (an INTERLEAVE axis, commit da58f0b,
// reverted): 3.08-3.09 ms against 3.00 (ncu), "wait" not lower, barrier stalls doubled
// (reports/h200/experiments/interleave-da58f0b/profiles.md).
// FMA_ORDER (common.cuh, fma_fragments): the micro-tile's FFMAs row by row (0) or column by column,
// serpentine (1). The order decides the registers ptxas gives them: counted in the SASS on the CPU
// (experiments/ffma_banks.py, nvcc 13.0 sm_90a) under a two-bank, index-parity register file, the
// tuned point's FFMAs with two fresh sources in one bank fall from 465 to 344 of 2,048 (23 → 17 %),
// registers 219 → 251, no spill. ncu at 4096³ (c20 at 21f957b, one launch each): 2.919 ms against
// 2.979, FMA pipe 74.3 % against 72.5 %, issue active 80.4 % against 78.0 %, dispatch stalls out of
// the top two (reports/h200/experiments/fma-order-21f957b/profiles.md). At the declared tile the same
// order spills 28 bytes, so it stays 0 there.
// Builds on: v6 (tile_warp.cuh: the same code with STAGES and GROUP as parameters).
// Constraints: none; dynamic shared memory up to 3 × 16 × (128 + 256 + 8) × 4 = 75,264 bytes (the space's largest).
// arch: sm_80
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
#include "tile_warp.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, TM * TN > 64 ? 1 : 2)
sgemm_v7_multistage(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K, int lda, int ldb, int ldc) {
    warp_tile::sgemm_warp_tile(A, B, C, M, N, K, lda, ldb, ldc);
}

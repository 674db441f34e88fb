// hgemm v12 — split-K on v6's in-place mma.sync tile, for skinny products at any alignment
// (docs/ladders/hgemm.md, v12).
// Idea: the odd suite's losers that remain after v6's fitted tile are products of few tiles with a long K
// (1045×20×3741: 17 tiles of 64 × 64 for 132 SMs, 117 K slices each) or rows TMA cannot read
// (4517×62×2411: A's rows 4,822 bytes apart, which v9 stages at DRAM speed inside its launch: ncu put 23.0
// of its 49.3 µs in the three staging copies, cuBLAS 30.9 µs). Here v6's tile (hgemm/mma_sync_tile.cuh: each
// operand copied in place at the widest cp.async its rows allow, the tile fitted to the shape) runs over
// one of grid.z's K ranges; each range's FP32 accumulators go to its plane of a workspace, and the last
// block of a tile to finish (sgemm/split_k.cuh, last_to_finish: a counter a tile, after a fence) adds the
// planes in range order and rounds once to the storage type: the same bits on every run, in one launch
// (no second kernel, whose launch a product of a few microseconds would feel).
// One range (a product of enough tiles, or too short a K): v6's path exactly, C stored from the accumulators.
// Costs: each range's partials cross L2 twice (written, then read by the last block); K per block shrinks,
// so the pipeline's fill and drain weigh more (MIN_SLICES bounds it).
// FIT weighs a tile by its blocks, tiles times the K ranges the plan gives them (split_ranges): 32 × 32 only where
// the halved tile's blocks leave a quarter of the SMs idle, or where a wave at most of 32 × 32 tiles covers at most
// three quarters of its area. So 4517×62×2411 keeps 71 tiles of 64 × 64 in five ranges (0.80× cuBLAS on the H200):
// quartered as v6 is (f9aa583, on an H100), its 284 tiles left K unsplit and read A twice, 0.50×; 1045×20×3741
// quarters (its 20 columns in 33 tiles of half the area), 0.93× there against the H200's 0.72×
// (reports/h100-80gb-hbm3/suites/README.md).
// The plan (study/ops/hgemm_mma_sync.py, split_mma_plan; the twin takes the same): FIT's tile, then hgemm v9's
// split_plan over BLOCKS_PER_SM blocks an SM: splits = BLOCKS_PER_SM·SMs over the tiles, at most K's slices over
// MIN_SLICES, at least 1; as few as cover the slices in equal ranges, so none is empty. How many 64 × 64 blocks an
// SM holds is set by the registers (39 KB of shared memory at 4 stages fit five): nvcc 13.0, BF16, DEFER=0, HOIST=0, 218
// with both operands in pairs (two blocks), 152 with A in pairs and B in 4-byte copies (4517×62×2411: three), 162
// with B in 8-byte copies (1045×20×3741: three), 132 with both in 16-byte copies (three); HOIST=1's hoisted pairs
// (06_mma_sync.cu) take fewer (FP16, A in pairs: 139 against 162). The launch caps
// BLOCKS_PER_SM by the driver's count for the build it runs (cuda.resident_blocks), so a plan never asks for a
// second wave; declared 3, with 2 and 4 in the space (4: as many as the build holds). Autotuned at the odd suite's
// six BF16 losers (c67 at 7e0cc86, reports/h200/experiments/space-7e0cc86/v12-space.json, one trial a point):
// at 4517×62×2411 3 blocks an SM (5 ranges) took 37.9 µs and 4 (7 ranges) 38.0, where the five points at 2 (3
// ranges) took 43.8–45.0; at the other five shapes 3 was within 0–4 % of the best point at 2, about as far as two
// trials of one point there lie apart (228×4×522: 9.2 and 10.4 µs). The twin's autotune kept 2 at all six: its
// declared config stays at 2.
// Removes: v6's idle SMs at few tiles and long K; v9's staging copies where rows are not 16-byte multiples.
// Builds on: v6 (its tile, whole), sgemm v9 (the ordered last-block sum); the body is hgemm/split_k_mma_sync.cuh
// (bgemm v2 runs it on each entry of a batch). Constraints: v6's (none on M, N, K or the leading dimensions);
// the workspace holds splits × M × ldp floats, ldp = N rounded up to 4, and a counter a tile (zero between
// launches: the last block sets it back).
// DEFER=0 (declared; 1 in the space), as v6, so that at one range v12 is v6: DEFER=1 (an operand copied in pairs
// of halves held in registers across a slice's products, hgemm/mma_sync_tile.cuh) was declared first and took
// 0.4–5.4 % longer than DEFER=0 at all six shapes it was tuned at (c63 at eefb23c, one trial each: the autotune
// log in reports/h200/experiments/v12-space-eefb23c/v12-space.json).
// Measured (H200, BF16, cold, unpaired; reports/h200/suites/hgemm-odd.md, reports/h200/experiments/v12-planes-d14d5e9):
// with each thread summing its pairs one at a time over the planes (c62 at eefb23c) v12 took 49.8 µs at
// 1045×20×3741, its twin 24.1: one L2 round trip per pair and plane. Summed plane-outermost, all of a plane's
// loads in flight (hgemm/split_k_mma_sync.cuh), c66 at d14d5e9: 1045×20×3741 20.5 µs, 0.91× cuBLAS (v9 0.61×);
// 228×4×522 0.95× (v8 0.47×); 4517×62×2411 45.2 µs, 0.68× (v9 0.63×; cuBLAS 30.5 µs), where 213 blocks of 3 ranges
// leave SMs with one block and others with two — BLOCKS_PER_SM=3 plans 5 ranges, 355 blocks (above: 37.9 µs).
// Declared at three (c77 at ab2a247, the odd suite): 4517×62×2411 38.5 µs, 0.80× cuBLAS (BF16 and FP16);
// 1045×20×3741 20 ranges, 21.4 µs, 0.90× BF16 — 0.72× FP16, where cuBLAS FP16 takes 15.4 µs to BF16's 19.2.
// arch: sm_80
// precisions: fp16 bf16
// config: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=4 DEFER=0 BLOCKS_PER_SM=3
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=2 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=4 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=8 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=1 FIT=1 MIN_SLICES=4 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=4 DEFER=1 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=4 DEFER=0 BLOCKS_PER_SM=3
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=4 DEFER=0 BLOCKS_PER_SM=4
#include "common.cuh"
#include "sgemm/grouped_order.cuh"
#include "sgemm/split_k.cuh"
#include "pipeline.cuh"
#include "mma_sync.cuh"
#include "slice_copies.cuh"
#include "hgemm/mma_sync_tile.cuh"
#include "hgemm/split_k_mma_sync.cuh"

// split_k: halves of K a range (a multiple of BK; the last range may be shorter); partial: gridDim.z planes of
// M rows ldp floats apart; counter: one per tile, zero before the launch.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_v12_split_k_mma_sync(const storage_t* __restrict__ A, const storage_t* __restrict__ B,
                           storage_t* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc, int split_k,
                           float* __restrict__ partial, int ldp, unsigned* __restrict__ counter) {
    extern __shared__ __align__(16) storage_t smem[];
    require_dynamic_smem(mma16::SMEM_BYTES);
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);  // the same tile in every range (grid.z)
    split_k_mma_tile(smem, A, B, C, M, N, K, lda, ldb, ldc, bm, bn, blockIdx.z, gridDim.z, split_k, partial, ldp,
                     counter);
}

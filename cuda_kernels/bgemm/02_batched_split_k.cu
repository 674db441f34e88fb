// bgemm v2 — hgemm v12's split-K mma.sync tile on each entry of the batch (docs/ladders/bgemm.md, v2).
// Idea: decode attention is a batch of skinny products with a long K: one or 16 tokens against a context of
// 1024–4096 (25×1×64×1024, 32×16×128×4096: batch × M × N × K). v1 (hgemm v8 over the batch) gives each entry
// 128-row tiles, most of whose rows lie past M, and a few tiles for all of K: 25–64 blocks for 132 SMs; the
// suites put it at 0.50–0.74× cuBLAS there (c36 at 9a23c9e, reports/h200/suites/bgemm-fp16.md, FP16, unpaired).
// Here each entry runs hgemm v12's tile (hgemm/split_k_mma_sync.cuh: v6's mma.sync tile, each operand read in
// place, fitted to the shape counting the whole batch's tiles) over one of `splits` K ranges, blockIdx.z =
// entry · splits + range; an entry's ranges write its FP32 planes and its tiles' last blocks add them in range
// order (the same bits every run, one launch). The plan is v12's over the batch's tiles: splits = BLOCKS_PER_SM·SMs
// over batch × tiles, at most K's slices over MIN_SLICES (study/ops/hgemm_mma_sync.py, split_mma_plan).
// Removes: v1's idle SMs and empty tile rows at decode-sized M with a long context.
// Builds on: hgemm v12 (the tile over a range, whole), v6 (the tile). Constraints: hgemm v6's (any M, N, K);
// contiguous entries (entry b of A starts b·M·lda); batch × splits ≤ 65535 (grid.z: splits > 1 only where
// batch × tiles < BLOCKS_PER_SM·SMs); the workspace holds batch × splits × M × ldp floats and a counter a tile
// of each entry.
// Measured (H200, FP16, cold, unpaired; reports/h200/suites/bgemm-fp16.md, c62 at eefb23c, and
// reports/h200/experiments/v12-planes-d14d5e9, c66 at d14d5e9, after hgemm v12's plane-outermost sum): v2 ÷ cuBLAS
// 32×16×128×4096 0.55× → 0.66× and 32×1×128×4096 0.62× → 0.68×, past v1 (0.52×, 0.48×); 25×16×64×1024
// 0.35× → 0.55× and 25×1×64×1024 0.51× → 0.58× (8 ranges of four slices), short of v1's 0.62× and 0.59×; at one
// range (the long-M entries) v1's wgmma tile is the faster (32×4096×4096×128: v1 0.87×, v2 0.28×).
// Profiled (c67 at 7e0cc86, reports/h200/profiles/bgemm.md): at 25x16x64x1024 v2 11.3 µs, 200 blocks of 128
// threads (8 ranges of 4 slices each), tensor pipe 7.0 %, top stall `wait`; cuBLAS 5.3 µs in nvjet's 64 × 8 tile
// (M = 16 as two 8-wide columns of Cᵀ, 50 blocks, no split of K, 165 KB of stages). At 32x16x128x4096 v2
// 20.3 µs at 40 % of DRAM, cuBLAS 13.0 µs at 63 %, the same 64 × 8 tile. The gap is v2's 64 × 64 mma.sync tile
// at 16 rows (three quarters of its products padding) and its fill per short range, not the sum: a batched
// skinny-M tile (hgemm v10's Cᵀ = Bᵀ·Aᵀ on wgmma) is the lever. Autotuned there (c67, one trial a point):
// MIN_SLICES=8 took 10.6 and 10.8 µs at 25×{1,16}×64×1024 against 11.9–13.1 for the points at 4, and 20.7 and
// 21.0 at 32×{1,16}×128×4096 against 18.9–21.5; BLOCKS_PER_SM 3 and 4 took 21.9–22.8 µs at the 4096-long pair
// (slower than every point at 2) and 12.1–13.0 at the 1024-long one (within the points at 2); declared as before.
// Fewer, longer ranges went the right way at K = 1024 (4 ranges of 8 slices faster than 8 of 4), so the space
// adds MIN_SLICES 16 and 32: 2 ranges and 1 there, 50 and 25 blocks, cuBLAS's count (no split, 50 blocks).
// arch: sm_80
// precisions: fp16 bf16
// config: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=4 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=2 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=4 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=8 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=16 DEFER=0 BLOCKS_PER_SM=2
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 MIN_SLICES=32 DEFER=0 BLOCKS_PER_SM=2
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

// splits: K ranges an entry; split_k: halves of K a range; partial: batch × splits planes of M rows ldp floats
// apart (an entry's splits together); counter: an entry's tiles together, zero before the launch.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
bgemm_v2_batched_split_k(const storage_t* __restrict__ A, const storage_t* __restrict__ B, storage_t* __restrict__ C,
                         int M, int N, int K, int lda, int ldb, int ldc, int splits, int split_k,
                         float* __restrict__ partial, int ldp, unsigned* __restrict__ counter) {
    extern __shared__ __align__(16) storage_t smem[];
    require_dynamic_smem(mma16::SMEM_BYTES);
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);  // blockIdx.x/y: the same tile in every entry and range
    const size_t entry = blockIdx.z / splits;
    const int range = blockIdx.z % splits;
    const int tiles = CDIV(M, BM) * CDIV(N, BN);
    split_k_mma_tile(smem, A + entry * M * lda, B + entry * K * ldb, C + entry * M * ldc, M, N, K, lda, ldb, ldc,
                     bm, bn, range, splits, split_k, partial + entry * splits * M * ldp, ldp, counter + entry * tiles);
}

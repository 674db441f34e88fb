// sgemm v6 — warp tiling (docs/ladders/sgemm.md, v6).
// Idea: v4's pipeline and 8×8 outputs a thread, with the outputs assigned warp by warp: each
// warp owns a WM×WN sub-tile of the block tile and its lanes a (WM/TM)×(WN/TN) grid inside it
// (tile_warp.cuh). A k step's float4 fragment reads of one warp then fall in one 64-byte run of
// A^T and one 128-byte run of B: one shared-memory wavefront each, conflict-free, where v4's
// warps read two micro-tile rows across the block's whole width (two wavefronts for B). The
// space adds the thread tiles v4 could not hold (8×16, 16×8: 128 accumulators, one block of
// 256 threads a SM) and 128-thread blocks.
// Removes: part of v4's instruction-issue bound (ncu at 4096^3: 0.76 instructions issued per
// scheduler cycle, FFMA share 0.68): fewer shared loads and address updates per FFMA.
// H200 (ncu at 4096^3, reports/h200/profiles/sgemm.md): FMA pipe 57.5 % (v4) -> 61.5 %, shared
// load conflicts 458,078 -> 12,267, about 30 % fewer IADD3/MOV/ISETP in the SASS; issue slots
// still 75.6 % busy with warps ready ("not selected" 2.45, "dispatch stall" 0.90 cycles per
// issue). 0.73x cuBLAS off, 0.80x tuned (128x256 tile, 8x16 a thread).
// Builds on: v4 (cp.async double buffer, transposed A, padding, zero-filled tails).
// Constraints: none (tails zero-filled, scalar copies when a row is not 16-byte aligned).
// Shared memory is dynamic (the launch passes warp_tile::SMEM_BYTES, study/ops/sgemm.py).
// arch: sm_80
// config: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256
// space: BM=128 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=256
// space: BM=128 BN=128 BK=16 WM=64 WN=32 TM=8 TN=8 THREADS=256
// space: BM=128 BN=128 BK=8 WM=32 WN=64 TM=8 TN=8 THREADS=256
// space: BM=128 BN=128 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=128
// space: BM=128 BN=256 BK=16 WM=64 WN=64 TM=8 TN=16 THREADS=256
// space: BM=256 BN=128 BK=16 WM=64 WN=64 TM=16 TN=8 THREADS=256
// space: BM=64 BN=128 BK=16 WM=32 WN=64 TM=8 TN=8 THREADS=128
// space: BM=128 BN=64 BK=16 WM=32 WN=32 TM=8 TN=4 THREADS=256
#include "common.cuh"
#define STAGES 2
#define GROUP 1
#include "tile_warp.cuh"

// Two resident blocks of 256 threads (<= 128 registers) for 64 accumulators a thread; one block
// when a thread holds 128 (it needs about 200 registers).
extern "C" __global__ void __launch_bounds__(THREADS, TM * TN > 64 ? 1 : 2)
sgemm_v6_warp_tile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                   int M, int N, int K, int lda, int ldb, int ldc) {
    warp_tile::sgemm_warp_tile(A, B, C, M, N, K, lda, ldb, ldc);
}

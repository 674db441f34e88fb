// sgemm v4 — double buffering with cp.async (docs/ladders/sgemm.md, v4).
// Idea: v3 with two shared buffers per operand. While the block computes slice k from one
// buffer, cp.async (sm_80+, global->shared without passing through registers) fills the
// other with slice k+1. The copies of slice k+1 are issued right after the one barrier of
// slice k, so global latency overlaps the FFMAs, and a block meets one barrier per slice
// instead of v3's two.
// Removes: v3's exposed load latency at the barrier (stall_barrier).
// Bottleneck that remains: instruction issue. The seed saw stall reasons "evenly spread".
// On the H200 at 4096^3 (ncu, reports/h200/profiles/ncu-sgemm-v{3,4}-4096.txt) double
// buffering moved cycles with an eligible warp from 62 % (v3) to 76 % and cycles per
// issued instruction from 6.2 to 5.0, but the largest stall in both is "not selected":
// warps are ready and wait for the scheduler. v3 already hid its barrier waits behind
// the second resident block, so v4 gains little. What is left is the share of non-FFMA
// instructions (LDS, cp.async address arithmetic, loop control), which the next rung
// must cut (warp tiling, larger register tiles).
// The tile itself is in tile_double_buffer.cuh, which bgemm reuses.
// Builds on: v3 (same tile, micro-tile, padding). Constraints: none. A is copied 4 bytes
// at a time because its slice is stored transposed; B moves 16 bytes at a time when
// ALIGNED=1 (K, N multiples of 4, aligned rows), 4 bytes otherwise. Out-of-range elements
// are zero-filled by cp.async's src-size operand.
// arch: sm_80
// config: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256
// space: BM=128 BN=128 BK=8 TM=8 TN=8 THREADS=256
// space: BM=128 BN=64 BK=8 TM=8 TN=4 THREADS=256
// space: BM=64 BN=128 BK=8 TM=4 TN=8 THREADS=256
// space: BM=64 BN=64 BK=16 TM=4 TN=4 THREADS=256
#include "common.cuh"
#include "tile_double_buffer.cuh"

// Two resident blocks per SM (<= 128 registers a thread at 256 threads): one block's
// barrier wait is covered by the other's FFMAs.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_v4_double_buffer(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int M, int N, int K,
                       int lda, int ldb, int ldc) {
    sgemm_tile_double_buffer(A, B, C, M, N, K, lda, ldb, ldc);
}

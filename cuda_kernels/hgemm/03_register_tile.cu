// hgemm v3 — 8 x 8 register tile per thread (docs/ladders/hgemm.md, v3).
// Idea: a 256-thread block computes a 128 x 128 tile of C, each thread 8 x 8 outputs in 64 FP32
// accumulators (the seed's step 3, docs/seeds.md §2). For each BK = 32 slice the block copies A and
// B into shared memory as halves, 16 bytes per load where ALIGNED, in the layout they arrive in:
// A k-contiguous (row m of the slice = 32 consecutive halves), B n-contiguous. A thread then reads
// 8 consecutive k of each of its 8 rows (one LDS.128 each) and, per k, its 8 columns of B (one
// LDS.128): 16 shared loads and 128 conversions feed 512 FFMAs per 8 k, against v2's 2 loads and
// 2 conversions per FFMA; 64 independent accumulators hide the FFMA latency (ILP, not occupancy).
// Removes: v2's shared-memory loads and conversions per FFMA (2 + 2 -> 0.03 + 0.25).
// Bottleneck that remains — on purpose, as in the seed's step 3: bank conflicts on A. Lanes run
// along M (ty = tid % 16, rows ty + 16·i), so the 8 lanes of a quarter warp read the same k of 8
// consecutive rows; unpadded rows are 64 bytes apart, and those 8 chunks fall into 2 of the 8
// 16-byte bank groups: every A fragment read is a 4-way conflict (register_tile.cuh, APlain;
// ncu: l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld). v4 removes it.
// Also remaining: the exposed global latency of each slice (load, barrier, compute, barrier: v5)
// and the half -> FP32 conversions (every rung up to v5 runs on the FFMA pipe, whose peak is a
// fifteenth of the tensor cores').
// Builds on: v2. Constraints: THREADS = (BM/TM)·(BN/TN), BM/TM a multiple of 8, TN a multiple
// of 8, BK 16, 32 or 64 (register_tile.cuh). ALIGNED=1 (K, N and every leading dimension multiples
// of 8, 16-byte aligned bases) moves 16 bytes per global load and C store; ALIGNED=0 one half.
// arch: sm_80
// precisions: fp16 bf16
// config: BM=128 BN=128 BK=32 TM=8 TN=8 THREADS=256
// space: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256
// space: BM=64 BN=128 BK=32 TM=4 TN=8 THREADS=256
// space: BM=128 BN=64 BK=32 TM=8 TN=8 THREADS=128
// space: BM=64 BN=64 BK=32 TM=4 TN=8 THREADS=128
#include "common.cuh"
#include "register_tile.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_v3_register_tile(const storage_t* __restrict__ A, const storage_t* __restrict__ B,
                       storage_t* __restrict__ C, int M, int N, int K,
                       int lda, int ldb, int ldc) {
    single_buffer_tile<APlain>(A, B, C, M, N, K, lda, ldb, ldc);
}

// bgemm v0 — SGEMM's tile per batch entry (docs/ladders/bgemm.md, v0).
// Idea: a strided-batched GEMM is `batch` independent SGEMMs; blockIdx.z picks the entry and the
// block runs the SGEMM ladder's v4 tile (128×128×16, 8×8 outputs a thread, cp.async double
// buffering: sgemm/tile_double_buffer.cuh) on that entry's matrices, unchanged.
// Bottleneck it shows: a tile sized for 4096² matrices. At 512×512 per entry a 128×128 tile still
// fills the GPU through the batch (256 entries × 16 tiles), but at 32×32 three quarters of the
// threads of a 64×64 tile, and fifteen sixteenths of a 128×128 one, compute zeros.
// Builds on: sgemm v4. Constraints: batch <= 65535 (grid.z), checked by the op.
// arch: sm_80
// config: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256
// space: BM=128 BN=128 BK=8 TM=8 TN=8 THREADS=256
// space: BM=128 BN=64 BK=8 TM=8 TN=4 THREADS=256
// space: BM=64 BN=128 BK=8 TM=4 TN=8 THREADS=256
// space: BM=64 BN=64 BK=16 TM=4 TN=4 THREADS=256
#include "common.cuh"
#include "sgemm/tile_double_buffer.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 2)
bgemm_v0_batched_tiles(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int M, int N, int K,
                       int lda, int ldb, int ldc) {
    const size_t entry = blockIdx.z;
    // Entry b starts b·M·lda, b·K·ldb, b·M·ldc elements in (the op's tensors are contiguous: lda = K).
    sgemm_tile_double_buffer(A + entry * M * lda, B + entry * K * ldb, C + entry * M * ldc, M, N, K,
                             lda, ldb, ldc);
}

// softmax v2 — warp-shuffle reductions and 16-byte loads, three passes (docs/ladders/softmax.md, v2).
// Idea: two changes to v1. (1) A reduction is five __shfl_xor_sync steps inside each warp, then
// one shared word per warp and a last warp-level step: two barriers per reduction instead of
// log2(THREADS). (2) Each thread moves 16 bytes per load and store (4 FP32 or 8 FP16/BF16
// elements) when every row starts on 16 bytes (ALIGNED: N a multiple of the vector), or, when
// rows do not but X and Y share their offset from 16 bytes (PEEL), on the part of each row
// between its first and last 16-byte boundary, single elements before and after (row.cuh).
// Removes: v1's barrier-bound trees and one-element loads.
// Bottleneck that remains: three passes over the row in HBM (two reads for the statistics, one
// read and one write for the output): 4 elements of traffic for the 2 a softmax needs.
// Builds on: v1. Constraints: THREADS a multiple of 32, at most 1024; neither ALIGNED nor PEEL:
// single elements only. One row per block.
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256
// space: THREADS=128
// space: THREADS=512
// space: THREADS=1024
#include "common.cuh"
#include "row.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_v2_shuffle_vector(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N) {
    __shared__ float scratch[32];
    const long long row = block_row(M);
    if (row < 0) return;
    const storage_t* x = X + row * N;
    storage_t* y = Y + row * N;

    float m = NEG_INF;
    row_for_each(x, N, [&](float v) { m = fmaxf(m, v); });
    m = block_reduce<true>(m, scratch);

    float d = 0.0f;
    row_for_each(x, N, [&](float v) { d += __expf(v - m); });
    d = block_reduce<false>(d, scratch);
    row_normalize(x, y, N, m, 1.0f / d);
}

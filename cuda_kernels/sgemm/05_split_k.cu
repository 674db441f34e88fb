// sgemm v5 — split-K with an ordered last-block reduction (docs/ladders/sgemm.md, v5).
// Idea: when the M x N tiles are too few to occupy the GPU — a small M or N with a long K,
// such as 64 x 64 x 65536 (one 128 x 128 tile for 132 SMs) or 64 x 8192 x 8192 (64 tiles) — K
// is cut into gridDim.z ranges of split_k (a multiple of BK), and each block computes v4's tile
// over its range only. With one range the block writes C as v4 does. Otherwise it writes its
// FP32 partial tile to a workspace (partial[z][M][N]); the last block of a tile to finish (an
// atomic counter per tile, after a __threadfence) adds the partials in range order 0, 1, 2, ...
// and writes C, so the result does not depend on which block finishes last: deterministic, one
// launch, no atomics on C. That block resets its counter for the next launch.
// How many ranges: the launch plans them (study/ops/sgemm.py, split_k_plan) so that tiles x
// ranges gives two blocks per SM (the occupancy launch bounds allow), with at least four BK
// slices per range; a shape with enough tiles, or too short a K, gets one range (recorded as
// splits=1 with the config).
// Removes: idle SMs on skinny shapes (v4 at 64 x 64 x 65536: one block on one SM).
// Costs: the workspace round trip (splits x M x N floats written and read once) and a second,
// serial pass over them by one block per tile.
// Not profiled on the H200 yet.
// Builds on: v4 (its tile, tile_double_buffer.cuh, over a K range). Constraints: as v4;
// counter holds at least gridDim.x * gridDim.y zeros and partial gridDim.z * M * N floats when
// gridDim.z > 1. ALIGNED also makes the partial rows (N apart) 16-byte aligned: N % 4 == 0.
// arch: sm_80
// config: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256 SPLIT=1
// space: BM=128 BN=128 BK=8 TM=8 TN=8 THREADS=256 SPLIT=1
// space: BM=128 BN=64 BK=8 TM=8 TN=4 THREADS=256 SPLIT=1
// space: BM=64 BN=128 BK=8 TM=4 TN=8 THREADS=256 SPLIT=1
// space: BM=64 BN=64 BK=16 TM=4 TN=4 THREADS=256 SPLIT=1
#include "common.cuh"
#include "tile_double_buffer.cuh"

// C's micro-tile of this thread as the sum, in range order, of the splits' partial tiles
// (read from L2: another SM wrote them, and this SM's L1 may hold stale lines of an earlier launch).
template <int Rows, int Cols, int GapA, int GapB, bool Vec>
__device__ __forceinline__ void reduce_micro_tile(const float* partial, int splits, int M, int N,
                                                  float* C, int ldc, int row0, int col0) {
    const size_t plane = (size_t)M * N;
#pragma unroll
    for (int i = 0; i < Rows; ++i) {
        const int row = row0 + (i / 4) * GapA + i % 4;
        if (row >= M) continue;
#pragma unroll
        for (int h = 0; h < Cols / 4; ++h) {
            const int col = col0 + h * GapB;
            const float* p = partial + (size_t)row * N + col;
            float* c = C + (size_t)row * ldc + col;
            if (Vec && col + 3 < N) {
                float4 total = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                for (int s = 0; s < splits; ++s) {
                    const float4 v = __ldcg(reinterpret_cast<const float4*>(p + s * plane));
                    total.x += v.x; total.y += v.y; total.z += v.z; total.w += v.w;
                }
                *reinterpret_cast<float4*>(c) = total;
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (col + j >= N) continue;
                    float total = 0.0f;
                    for (int s = 0; s < splits; ++s) total += __ldcg(p + s * plane + j);
                    c[j] = total;
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_v5_split_k(const float* __restrict__ A, const float* __restrict__ B,
                 float* __restrict__ C, int M, int N, int K,
                 int lda, int ldb, int ldc,
                 int split_k, float* __restrict__ partial, unsigned* __restrict__ counter) {
    const int tid = threadIdx.x, tx = tid % WN, ty = tid / WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int row0 = m0 + ty * 4, col0 = n0 + tx * 4;
    const int splits = gridDim.z;
    const int k_begin = blockIdx.z * split_k;
    float acc[TM][TN] = {};
    // k_begin < K (no range is empty); K − k_begin, not k_begin + split_k, which passes 2^31 near K = 2^31.
    accumulate_tile_double_buffer(acc, A, B, M, N, lda, ldb, m0, n0, k_begin, k_begin + min(split_k, K - k_begin));
    if (splits == 1) {  // uniform over the grid
        store_micro_tile<TM, TN, SA, SB, ALIGNED>(acc, C, M, N, ldc, row0, col0);
        return;
    }
    store_micro_tile<TM, TN, SA, SB, ALIGNED>(acc, partial + (size_t)blockIdx.z * M * N, M, N, N, row0, col0);

    // Publish this block's partial tile, then count it; the last block of the tile reduces.
    __shared__ bool last;
    const int tile = blockIdx.y * gridDim.x + blockIdx.x;
    __threadfence();
    __syncthreads();
    if (tid == 0) last = atomicAdd(&counter[tile], 1u) == (unsigned)(splits - 1);
    __syncthreads();
    if (!last) return;
    __threadfence();  // see every other block's partials
    reduce_micro_tile<TM, TN, SA, SB, ALIGNED>(partial, splits, M, N, C, ldc, row0, col0);
    if (tid == 0) counter[tile] = 0;
}

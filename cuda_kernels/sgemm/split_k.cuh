// Split-K's second half, shared by sgemm v5 and v9 (docs/ladders/sgemm.md, v5; v13 shares its handshake,
// last_to_finish): a block that
// computed its K range (blockIdx.z of gridDim.z ranges) into a micro-tile either stores C (one
// range) or writes its FP32 partial tile to the workspace partial[z][M][N]; the last block of the
// tile to finish (an atomic counter per tile, after a __threadfence) adds the partials in range
// order 0, 1, 2, ... and writes C, so the sum does not depend on which block finishes last, then
// resets the counter for the next launch. Needs common.cuh (store_micro_tile).
#pragma once

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

// After a block has written its range's partials: publish them, then count them on counter[index] (zero
// before the first of `splits` ranges); true, uniformly over the block, in the last block to finish. That block
// fences (to see every other block's partials), sums them and sets the count back to zero (sgemm v5, v9,
// and v13 over a block's columns).
__device__ __forceinline__ bool last_to_finish(unsigned* counter, int index, int splits) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&counter[index], 1u) == (unsigned)(splits - 1);
    __syncthreads();
    return last;
}

// Store this thread's micro-tile of a K range: C directly when the grid has one range, else
// through the workspace and the ordered reduction above. ``tile`` numbers the block's output
// tile alike in every range (counter[tile]); partial rows are N apart (Vec: N % 4 == 0).
template <int Rows, int Cols, int GapA, int GapB, bool Vec>
__device__ __forceinline__ void store_split(const float (&acc)[Rows][Cols], float* C, float* partial,
                                            unsigned* counter, int M, int N, int ldc, int row0, int col0,
                                            int tile) {
    const int splits = gridDim.z;
    if (splits == 1) {  // uniform over the grid
        store_micro_tile<Rows, Cols, GapA, GapB, Vec>(acc, C, M, N, ldc, row0, col0);
        return;
    }
    store_micro_tile<Rows, Cols, GapA, GapB, Vec>(acc, partial + (size_t)blockIdx.z * M * N, M, N, N, row0, col0);
    if (!last_to_finish(counter, tile, splits)) return;
    __threadfence();  // see every other block's partials
    reduce_micro_tile<Rows, Cols, GapA, GapB, Vec>(partial, splits, M, N, C, ldc, row0, col0);
    if (threadIdx.x == 0) counter[tile] = 0;
}

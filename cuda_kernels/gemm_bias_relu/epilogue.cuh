// C = relu(A·B + bias) applied to accumulators still in registers (docs/ladders/gemm_bias_relu.md):
// the two fragment layouts the fused rungs hold. Needs common.cuh. The bias is in the storage type,
// added in FP32 before the one rounding to storage; each thread loads the bias of its own columns
// once per tile (it holds those columns for all of its rows), so the bias costs BN elements a tile
// from L2, against BM·BN outputs.
#pragma once

__device__ __forceinline__ float bias_relu(float v, float bias) { return fmaxf(v + bias, 0.f); }

// The SIMT warp tile's epilogue (sgemm/tile_warp.cuh, sgemm_warp_tile's `epilogue(acc, col0)`): a
// Rows × Cols micro-tile, column groups of four GapB apart starting at col0. Columns at or past N
// are never stored; their bias reads as 0.
template <int Rows, int Cols, int GapB>
struct BiasReluMicroTile {
    const storage_t* bias;
    int N;
    __device__ __forceinline__ void operator()(float (&acc)[Rows][Cols], int col0) const {
#pragma unroll
        for (int h = 0; h < Cols / 4; ++h) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int col = col0 + h * GapB + j;
                const float b = col < N ? to_float(__ldg(bias + col)) : 0.f;
#pragma unroll
                for (int i = 0; i < Rows; ++i) acc[i][h * 4 + j] = bias_relu(acc[i][h * 4 + j], b);
            }
        }
    }
};

// The wgmma fragment's epilogue (hgemm/warp_specialized.cuh): a consumer thread holds columns
// n0 + 8j + 2t and + 1 (t = lane % 4) for j < TileN/8; their bias, two storage values in one 4-byte
// load each (the bias 4-byte aligned: the launch checks), is loaded in begin_tile while the tile's
// last wgmmas run. At an odd N the last column's pair would reach one element past the bias: that
// column is loaded alone (N odd runs since the launch stages C's rows, study/ops/tma_staging.py).
template <int TileN>
struct BiasReluEpilogue {
    const unsigned short* bias;
    unsigned pairs[TileN / 8];

    __device__ __forceinline__ void begin_tile(int n0, int N, int thread) {
        const int t = thread % 4;
#pragma unroll
        for (int j = 0; j < TileN / 8; ++j) {
            const int col = n0 + 8 * j + 2 * t;
            pairs[j] = col + 1 < N ? __ldg(reinterpret_cast<const unsigned*>(bias + col))
                       : col < N ? (unsigned)__ldg(bias + col) : 0u;
        }
    }
    __device__ __forceinline__ float operator()(float v, int j, int half) const {
        return bias_relu(v, to_float((unsigned short)(half ? pairs[j] >> 16 : pairs[j] & 0xffffu)));
    }
};

// The split-K reduction's epilogue (hgemm/reduce_splits.cuh; v3 when it splits): the FP32 sum of a
// column's partial planes, its bias added, ReLU, before the one rounding. Consecutive threads hold
// consecutive columns, so a warp's bias loads are coalesced, and every row after the first finds them
// in cache.
struct BiasReluColumn {
    const storage_t* bias;
    __device__ __forceinline__ float operator()(float v, size_t col) const {
        return bias_relu(v, to_float(__ldg(bias + col)));
    }
};

// hgemm v10's transposed C store and its sum of the splits (hgemm/skinny_m.cuh; v4): each value comes
// with its column, whose bias is loaded there (a thread holds two columns for all of its tokens: the
// loads after the first hit L1). C is at most 64 rows, ≤ 64/K of the traffic: no staging of the bias.
struct BiasReluToStorage {
    const storage_t* bias;
    __device__ __forceinline__ storage_t operator()(float v, int col) const {
        return from_float(bias_relu(v, to_float(__ldg(bias + col))));
    }
};

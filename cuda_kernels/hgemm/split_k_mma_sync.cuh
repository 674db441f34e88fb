// hgemm v12's tile over one K range (cuda_kernels/hgemm/12_split_k_mma_sync.cu says why and how), apart from its
// kernel so that bgemm v2 runs it on each entry of a batch. Needs common.cuh, sgemm/grouped_order.cuh,
// sgemm/split_k.cuh, pipeline.cuh, mma_sync.cuh, slice_copies.cuh, hgemm/mma_sync_tile.cuh.
#pragma once

// C's tile (bm, bn) of one product over K range `range` of `splits`, split_k halves each (a multiple of BK; the
// last range may be shorter): with one range, C from the accumulators (v6); with more, this range's FP32 plane
// of `partial` (splits planes of M rows ldp floats apart), and the tile's last block to finish (counted on
// counter[tile], zero before the launch) adds the planes in range order into C and sets the count back.
// `splits` is uniform over the grid.
__device__ __forceinline__ void split_k_mma_tile(storage_t* smem, const storage_t* A, const storage_t* B, storage_t* C,
                                                 int M, int N, int K, int lda, int ldb, int ldc, int bm, int bn,
                                                 int range, int splits, int split_k, float* partial, int ldp,
                                                 unsigned* counter) {
    using namespace mma16;
    const int m0 = bm * BM, n0 = bn * BN;
    const int k_begin = range * split_k;  // < K: no range is empty
    float acc[MT][NT][4] = {};
    // K − k_begin, not k_begin + split_k, which would pass 2^31 first (the op refuses matrices of 2^31 elements).
    accumulate(acc, smem, A, B, M, N, K, lda, ldb, m0, n0, k_begin, CDIV(min(split_k, K - k_begin), BK));
    if (splits == 1) {
        for_each_pair(acc, m0, n0, [&](int row, int col, float x, float y) {
            store_pair<ALIGNED != 0>(C, M, N, ldc, row, col, x, y);
        });
        return;
    }
    // This range's plane: pairs of floats (col is even, ldp a multiple of 4, so 8-byte stores); a pair's
    // second column past N lands in the row's padding (ldp ≥ N rounded up to 4).
    const size_t plane = (size_t)M * ldp;
    float* mine = partial + range * plane;
    for_each_pair(acc, m0, n0, [&](int row, int col, float x, float y) {
        if (row < M && col < N) *reinterpret_cast<float2*>(mine + (size_t)row * ldp + col) = make_float2(x, y);
    });
    const int tile = bm * CDIV(N, BN) + bn;
    if (!last_to_finish(counter, tile, splits)) return;
    __threadfence();  // see every other block's planes
    // Each thread sums the outputs it computed into its accumulators, from zero, plane by plane in range order,
    // read from L2 (__ldcg: another SM wrote them, and this SM's L1 may hold stale lines of an earlier launch).
    // The planes loop inside a group of accumulator rows, so that a plane's loads of the whole group are in
    // flight together: 16 pairs at once, all of the 64 × 64 tile's, a quarter of the 128 × 128 tile's (all 64
    // at once spilled there, nvcc 13.0). The first version looped the planes inside each pair, one L2 round trip
    // per pair and plane: at 1045×20×3741 (15 planes) the launch took 49.8 µs, its twin 24.1 (c62).
    constexpr int ROWS = MT * NT <= 8 ? MT : 1;
#pragma unroll
    for (int first = 0; first < MT; first += ROWS) {
        for_each_pair(acc, m0, n0, [](int, int, float& x, float& y) { x = y = 0.0f; }, first, ROWS);
#pragma unroll 1  // by 2 (two planes in flight) nvcc 13.0 took 64 × 64 from 132 to 171 registers: 3 → 2 blocks an SM
        for (int s = 0; s < splits; ++s) {
            const float* p = partial + s * plane;
            for_each_pair(acc, m0, n0, [&](int row, int col, float& x, float& y) {
                if (row >= M || col >= N) return;
                const float2 v = __ldcg(reinterpret_cast<const float2*>(p + (size_t)row * ldp + col));
                x += v.x;
                y += v.y;
            }, first, ROWS);
        }
    }
    for_each_pair(acc, m0, n0, [&](int row, int col, float x, float y) {
        store_pair<ALIGNED != 0>(C, M, N, ldc, row, col, x, y);
    });
    if (threadIdx.x == 0) counter[tile] = 0;  // ready for the next launch
}

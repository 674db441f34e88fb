// The block tile of sgemm v4 (docs/ladders/sgemm.md, v4) as a device function: the rung's kernel
// (04_double_buffer.cu) is this and nothing else, and other ops reuse the ladder's tiling
// unchanged (bgemm: one such tile per batch entry, cuda_kernels/bgemm/00_batched_tiles.cu).
// The block (blockIdx.x, blockIdx.y) computes C[m0:m0+BM, n0:n0+BN] of one M×N×K product.
// Needs BM BN BK TM TN THREADS ALIGNED (-D, from the rung's header) and common.cuh.
#pragma once

constexpr int WN = BN / TN;
constexpr int SA = BM / (TM / 4);
constexpr int SB = BN / (TN / 4);
constexpr int PAD = 4;
static_assert((BM / TM) * WN == THREADS, "THREADS must be (BM/TM) * (BN/TN)");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "micro-tile and BK are multiples of 4");
static_assert(2 * BK * (BM + BN + 2 * PAD) * 4 <= 48 * 1024, "two stages must fit in 48 KB of static shared memory");

// Issue the copies of slice k0 into one buffer (no wait here); elements at k >= K read as zero
// (K: the end of the block's K range).
__device__ __forceinline__ void load_slice(float (*As)[BM + PAD], float (*Bs)[BN + PAD],
                                           const float* A, const float* B, int M, int N, int K,
                                           int lda, int ldb,
                                           int m0, int n0, int k0, int tid) {
    for (int e = tid; e < BM * BK; e += THREADS) {
        // Consecutive threads take consecutive k of one row: 32-byte global segments,
        // and the transposed shared stores hit distinct banks thanks to the padding.
        const int m = e / BK, k = e % BK;
        const bool ok = m0 + m < M && k0 + k < K;
        cp_async_4(&As[k][m], ok ? A + (size_t)(m0 + m) * lda + k0 + k : A, ok);
    }
#if ALIGNED
    for (int f = tid; f < BK * BN / 4; f += THREADS) {
        const int k = f / (BN / 4), n = f % (BN / 4) * 4;
        const bool ok = k0 + k < K && n0 + n < N;
        cp_async_16(&Bs[k][n], ok ? B + (size_t)(k0 + k) * ldb + n0 + n : B, ok);
    }
#else
    for (int e = tid; e < BK * BN; e += THREADS) {
        const int k = e / BN, n = e % BN;
        const bool ok = k0 + k < K && n0 + n < N;
        cp_async_4(&Bs[k][n], ok ? B + (size_t)(k0 + k) * ldb + n0 + n : B, ok);
    }
#endif
}

// Add A[m0:m0+BM, k_begin:k_end] · B[k_begin:k_end, n0:n0+BN] to this thread's micro-tile
// (rows m0 + ty*4 + i/4*SA + i%4, columns n0 + tx*4 + j/4*SB + j%4). k_begin is a multiple of
// BK; elements at k >= k_end read as zero. The split-K rung (05_split_k.cu) gives each block
// a K range of its own; the whole tile is the range [0, K).
__device__ __forceinline__ void accumulate_tile_double_buffer(float (&acc)[TM][TN], const float* __restrict__ A,
                                                              const float* __restrict__ B, int M, int N,
                                                              int lda, int ldb, int m0, int n0,
                                                              int k_begin, int k_end) {
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN + PAD];
    const int tid = threadIdx.x, tx = tid % WN, ty = tid / WN;
    const int slices = k_end > k_begin ? CDIV(k_end - k_begin, BK) : 0;
    if (slices == 0) return;

    load_slice(As[0], Bs[0], A, B, M, N, k_end, lda, ldb, m0, n0, k_begin, tid);
    cp_async_commit();
    for (int s = 0; s < slices; ++s) {
        const int cur = s & 1;
        cp_async_wait<0>();  // this thread's copies of slice s have landed
        // One barrier per slice: after it, everyone's copies of slice s are visible AND
        // everyone has finished computing slice s-1, so its buffer (cur ^ 1) may be refilled.
        __syncthreads();
        if (s + 1 < slices) {
            load_slice(As[cur ^ 1], Bs[cur ^ 1], A, B, M, N, k_end, lda, ldb, m0, n0, k_begin + (s + 1) * BK, tid);
            cp_async_commit();  // in flight while the FFMAs below run
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk)
            micro_tile_step<TM, TN, SA, SB>(acc, &As[cur][kk][ty * 4], &Bs[cur][kk][tx * 4]);
    }
}

__device__ __forceinline__ void sgemm_tile_double_buffer(const float* __restrict__ A, const float* __restrict__ B,
                                                         float* __restrict__ C, int M, int N, int K,
                                                         int lda, int ldb, int ldc) {
    const int tid = threadIdx.x, tx = tid % WN, ty = tid / WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    accumulate_tile_double_buffer(acc, A, B, M, N, lda, ldb, m0, n0, 0, K);
    store_micro_tile<TM, TN, SA, SB, ALIGNED>(acc, C, M, N, ldc, m0 + ty * 4, n0 + tx * 4);
}

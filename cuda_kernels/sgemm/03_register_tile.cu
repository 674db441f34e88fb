// sgemm v3 — register micro-tile with float4 shared loads (docs/ladders/sgemm.md, v3).
// Idea: a 256-thread block computes a 128 x 128 tile (BK = 16: measured on the H200 at
// 4096^3, 3.97 ms against 4.27 ms for BK = 8, half the barriers per FFMA); each thread keeps an 8 x 8 tile of
// C in 64 independent accumulators. A is stored transposed in shared memory (As[k][m]),
// so one k step is 4 LDS.128 (8 A values, 8 B values) feeding 64 FFMAs, and the 64
// independent chains hide the FFMA latency (ILP instead of occupancy).
// Removes: v2's shared-memory load pressure (1 LDS per 2 FFMAs -> 1 LDS.128 per 16 FFMAs).
// Bottleneck that remains: every slice is loaded, then waited for at __syncthreads(),
// then computed: global latency is exposed once per BK slice (barrier stalls), hidden only
// by the other resident block (ncu at 4096^3: an eligible warp in 62 % of cycles).
// Builds on: v2. Constraints: none. ALIGNED=1 selects float4 global loads and stores;
// ALIGNED=0 moves element by element. Shared rows are padded by 4 floats so that the
// transposed stores of A land in distinct banks while float4 reads stay 16-byte aligned.
// arch: sm_75
// config: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256
// space: BM=128 BN=128 BK=8 TM=8 TN=8 THREADS=256
// space: BM=128 BN=64 BK=8 TM=8 TN=4 THREADS=256
// space: BM=64 BN=128 BK=8 TM=4 TN=8 THREADS=256
// space: BM=64 BN=64 BK=16 TM=4 TN=4 THREADS=256
#include "common.cuh"

constexpr int WN = BN / TN;          // threads along N
constexpr int SA = BM / (TM / 4);    // distance between a thread's 4-row groups
constexpr int SB = BN / (TN / 4);    // distance between its 4-column groups
constexpr int PAD = 4;
static_assert((BM / TM) * WN == THREADS, "THREADS must be (BM/TM) * (BN/TN)");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "micro-tile and BK are multiples of 4");

// Two resident blocks per SM (<= 128 registers a thread at 256 threads): one block's
// barrier wait is covered by the other's FFMAs.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_v3_register_tile(const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C, int M, int N, int K,
                       int lda, int ldb, int ldc) {
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN + PAD];
    const int tid = threadIdx.x, tx = tid % WN, ty = tid / WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[TM][TN] = {};

    for (int k0 = 0; k0 < K; k0 += BK) {
#if ALIGNED
        for (int f = tid; f < BM * BK / 4; f += THREADS) {
            const int m = f / (BK / 4), k = f % (BK / 4) * 4;
            float4 v = make_float4(0, 0, 0, 0);
            if (m0 + m < M && k0 + k < K) v = *reinterpret_cast<const float4*>(A + (size_t)(m0 + m) * lda + k0 + k);
            As[k][m] = v.x; As[k + 1][m] = v.y; As[k + 2][m] = v.z; As[k + 3][m] = v.w;
        }
        for (int f = tid; f < BK * BN / 4; f += THREADS) {
            const int k = f / (BN / 4), n = f % (BN / 4) * 4;
            float4 v = make_float4(0, 0, 0, 0);
            if (k0 + k < K && n0 + n < N) v = *reinterpret_cast<const float4*>(B + (size_t)(k0 + k) * ldb + n0 + n);
            *reinterpret_cast<float4*>(&Bs[k][n]) = v;
        }
#else
        for (int e = tid; e < BM * BK; e += THREADS) {
            const int m = e / BK, k = e % BK;
            As[k][m] = (m0 + m < M && k0 + k < K) ? A[(size_t)(m0 + m) * lda + k0 + k] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += THREADS) {
            const int k = e / BN, n = e % BN;
            Bs[k][n] = (k0 + k < K && n0 + n < N) ? B[(size_t)(k0 + k) * ldb + n0 + n] : 0.0f;
        }
#endif
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk)
            micro_tile_step<TM, TN, SA, SB>(acc, &As[kk][ty * 4], &Bs[kk][tx * 4]);
        __syncthreads();
    }
    store_micro_tile<TM, TN, SA, SB, ALIGNED>(acc, C, M, N, ldc, m0 + ty * 4, n0 + tx * 4);
}

// sgemm v2 — shared-memory tiling with float4 global->shared copies (docs/ladders/sgemm.md, v2).
// Idea: a block computes a BM x BN tile of C; for each BK-wide slice of K it copies the
// BM x BK slice of A and the BK x BN slice of B into shared memory once (16-byte loads
// where the rows allow), and its threads read them from there. Each thread owns RM x RN
// outputs spread BM/RM rows and BN/RN columns apart and reads its operands from shared
// memory one float at a time.
// Removes: v1's re-reading of every operand from global memory (each global element is
// now loaded once per block instead of once per output).
// Bottleneck that remains: shared-memory loads: 1 LDS per 2 FFMAs (RM=RN=4), too many for
// the FFMA pipes; profilers show short-scoreboard stalls.
// Builds on: v1. Constraints: none. ALIGNED=1 (K and N multiples of 4, 16-byte aligned
// rows) selects float4 copies; ALIGNED=0 copies element by element.
// arch: sm_75
// config: BM=64 BN=64 BK=16 RM=4 RN=4 THREADS=256
// space: BM=64 BN=64 BK=8 RM=4 RN=4 THREADS=256
// space: BM=64 BN=64 BK=32 RM=4 RN=4 THREADS=256
// space: BM=32 BN=32 BK=16 RM=2 RN=2 THREADS=256
// space: BM=128 BN=64 BK=16 RM=8 RN=4 THREADS=256
// space: BM=64 BN=128 BK=16 RM=4 RN=8 THREADS=256
#include "common.cuh"

constexpr int TX = BN / RN;  // threads along N
constexpr int TY = BM / RM;  // threads along M
static_assert(TX * TY == THREADS, "THREADS must be (BM/RM) * (BN/RN)");
static_assert(BK % 4 == 0 && BN % 4 == 0, "float4 copies need BK and BN multiples of 4");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v2_smem_tiling(const float* __restrict__ A, const float* __restrict__ B,
                     float* __restrict__ C, int M, int N, int K,
                     int lda, int ldb, int ldc) {
    __shared__ __align__(16) float As[BM][BK];
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[RM][RN] = {};

    for (int k0 = 0; k0 < K; k0 += BK) {
        // Global -> shared. Out-of-range elements become zeros (they add nothing).
#if ALIGNED
        for (int f = tid; f < BM * BK / 4; f += THREADS) {
            const int m = f / (BK / 4), k = f % (BK / 4) * 4;
            const bool ok = m0 + m < M && k0 + k < K;  // K % 4 == 0: all four or none
            *reinterpret_cast<float4*>(&As[m][k]) =
                ok ? *reinterpret_cast<const float4*>(A + (size_t)(m0 + m) * lda + k0 + k) : make_float4(0, 0, 0, 0);
        }
        for (int f = tid; f < BK * BN / 4; f += THREADS) {
            const int k = f / (BN / 4), n = f % (BN / 4) * 4;
            const bool ok = k0 + k < K && n0 + n < N;  // N % 4 == 0: all four or none
            *reinterpret_cast<float4*>(&Bs[k][n]) =
                ok ? *reinterpret_cast<const float4*>(B + (size_t)(k0 + k) * ldb + n0 + n) : make_float4(0, 0, 0, 0);
        }
#else
        for (int e = tid; e < BM * BK; e += THREADS) {
            const int m = e / BK, k = e % BK;
            As[m][k] = (m0 + m < M && k0 + k < K) ? A[(size_t)(m0 + m) * lda + k0 + k] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += THREADS) {
            const int k = e / BN, n = e % BN;
            Bs[k][n] = (k0 + k < K && n0 + n < N) ? B[(size_t)(k0 + k) * ldb + n0 + n] : 0.0f;
        }
#endif
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int i = 0; i < RM; ++i) {
                const float a = As[ty + i * TY][kk];
#pragma unroll
                for (int j = 0; j < RN; ++j) acc[i][j] = fmaf(a, Bs[kk][tx + j * TX], acc[i][j]);
            }
        }
        __syncthreads();  // the next slice overwrites As/Bs
    }
#pragma unroll
    for (int i = 0; i < RM; ++i) {
        const int row = m0 + ty + i * TY;
#pragma unroll
        for (int j = 0; j < RN; ++j) {
            const int col = n0 + tx + j * TX;
            if (row < M && col < N) C[(size_t)row * ldc + col] = acc[i][j];
        }
    }
}

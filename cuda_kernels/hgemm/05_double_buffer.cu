// hgemm v5 — double buffering with cp.async (docs/ladders/hgemm.md, v5).
// Idea: v4 with two shared stages per operand (the seed's step 5, docs/seeds.md §2; sgemm v4 does
// the same in FP32). While the block computes slice s from one stage, the copies of slice s+1 into
// the other are already in flight, issued right after the one barrier of slice s: global latency
// overlaps the FFMAs, and a block meets one barrier per slice instead of two.
//  ALIGNED=1: cp.async (sm_80+) copies 16-byte chunks global -> shared without passing through
//             registers; out-of-range chunks are zero-filled through its source-size operand.
//  ALIGNED=0: cp.async moves 4, 8 or 16 bytes, never one 2-byte half, so the scalar path stages
//             slice s+1 in registers: its loads are issued before the FFMAs of slice s and
//             stored to the other stage after them (the pre-cp.async way to double-buffer).
// A keeps v4's conflict-free layout (SWIZZLE as in v4, both in the space).
// Removes: v4's exposed load latency at the barrier (barrier and long-scoreboard stalls).
// Bottleneck that remains: the FFMA pipe itself. Every rung so far multiplies on CUDA cores in
// FP32 (plus a half -> FP32 conversion per operand and k), whose H200 peak is 66.9 TFLOPS, about
// 7 % of the 989 TFLOPS dense FP16/BF16 tensor-core peak; the next step is the tensor cores
// (mma.sync), which is what the seed's step 6 does.
// Builds on: v4. Constraints: v4's, and two stages within 48 KB of static shared memory.
// arch: sm_80
// precisions: fp16 bf16
// config: BM=128 BN=128 BK=32 TM=8 TN=8 THREADS=256 SWIZZLE=1
// space: BM=128 BN=128 BK=32 TM=8 TN=8 THREADS=256 SWIZZLE=0
// space: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256 SWIZZLE=1
// space: BM=64 BN=128 BK=32 TM=4 TN=8 THREADS=256 SWIZZLE=1
// space: BM=128 BN=64 BK=32 TM=8 TN=8 THREADS=128 SWIZZLE=1
// space: BM=64 BN=64 BK=64 TM=4 TN=8 THREADS=128 SWIZZLE=1
#include "common.cuh"
#include "register_tile.cuh"

static_assert(2 * (BM * ALayout::ROW + BK * BN) * 2 <= 48 * 1024,
              "two stages of A and B must fit in 48 KB of static shared memory");

#if ALIGNED
// Issue the 16-byte copies of slice k0 into one stage (no wait here).
__device__ __forceinline__ void copy_slice_async(storage_t* As, storage_t* Bs, const storage_t* __restrict__ A,
                                                 const storage_t* __restrict__ B, int M, int N, int K, int lda,
                                                 int ldb, int m0, int n0, int k0, int tid) {
    for (int f = tid; f < BM * BK / CHUNK; f += THREADS) {
        const int m = f / (BK / CHUNK), k = f % (BK / CHUNK) * CHUNK;
        const bool ok = m0 + m < M && k0 + k < K;
        cp_async_16(As + ALayout::at(m, k), ok ? A + (size_t)(m0 + m) * lda + k0 + k : A, ok);
    }
    for (int f = tid; f < BK * BN / CHUNK; f += THREADS) {
        const int k = f / (BN / CHUNK), n = f % (BN / CHUNK) * CHUNK;
        const bool ok = k0 + k < K && n0 + n < N;
        cp_async_16(Bs + k * BN + n, ok ? B + (size_t)(k0 + k) * ldb + n0 + n : B, ok);
    }
}
#else
// The scalar path's staging registers: this thread's elements of one slice, two consecutive halves
// (the same row: BK and BN are even) packed in each 32-bit register, half the registers of one a half.
constexpr int A_PAIRS = CDIV(BM * BK / 2, THREADS), B_PAIRS = CDIV(BK * BN / 2, THREADS);
struct Staged {
    unsigned a[A_PAIRS], b[B_PAIRS];
};

__device__ __forceinline__ unsigned short element(const storage_t* __restrict__ X, int ld, int r, int c, bool ok) {
    return ok ? X[(size_t)r * ld + c] : storage_t(0);
}

// Load slice k0 into registers; the loads stay in flight until put_slice() uses them.
__device__ __forceinline__ void fetch_slice(Staged& r, const storage_t* __restrict__ A, const storage_t* __restrict__ B,
                                            int M, int N, int K, int lda, int ldb, int m0, int n0, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < A_PAIRS; ++i) {
        const int e = 2 * (tid + i * THREADS), m = e / BK, k = e % BK;  // elements e, e + 1 of the BM x BK slice
        const bool row = e < BM * BK && m0 + m < M;
        r.a[i] = element(A, lda, m0 + m, k0 + k, row && k0 + k < K)
                 | (unsigned)element(A, lda, m0 + m, k0 + k + 1, row && k0 + k + 1 < K) << 16;
    }
#pragma unroll
    for (int i = 0; i < B_PAIRS; ++i) {
        const int e = 2 * (tid + i * THREADS), k = e / BN, n = e % BN;  // elements e, e + 1 of the BK x BN slice
        const bool row = e < BK * BN && k0 + k < K;
        r.b[i] = element(B, ldb, k0 + k, n0 + n, row && n0 + n < N)
                 | (unsigned)element(B, ldb, k0 + k, n0 + n + 1, row && n0 + n + 1 < N) << 16;
    }
}

__device__ __forceinline__ void put_slice(const Staged& r, storage_t* As, storage_t* Bs, int tid) {
#pragma unroll
    for (int i = 0; i < A_PAIRS; ++i) {
        const int e = 2 * (tid + i * THREADS);
        if (e < BM * BK) {
            As[ALayout::at(e / BK, e % BK)] = (storage_t)(r.a[i] & 0xffffu);
            As[ALayout::at(e / BK, e % BK + 1)] = (storage_t)(r.a[i] >> 16);
        }
    }
#pragma unroll
    for (int i = 0; i < B_PAIRS; ++i) {
        const int e = 2 * (tid + i * THREADS);
        if (e < BK * BN) *reinterpret_cast<unsigned*>(Bs + e) = r.b[i];  // Bs is BK x BN row-major; e is even
    }
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_v5_double_buffer(const storage_t* __restrict__ A, const storage_t* __restrict__ B,
                       storage_t* __restrict__ C, int M, int N, int K,
                       int lda, int ldb, int ldc) {
    __shared__ __align__(16) storage_t As[2][BM * ALayout::ROW];
    __shared__ __align__(16) storage_t Bs[2][BK * BN];
    const int tid = threadIdx.x, ty = tid % TY, tx = tid / TY;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int slices = CDIV(K, BK);
    float acc[TM][TN] = {};

#if ALIGNED
    copy_slice_async(As[0], Bs[0], A, B, M, N, K, lda, ldb, m0, n0, 0, tid);
    cp_async_commit();
#else
    load_slice<ALayout>(As[0], Bs[0], A, B, M, N, K, lda, ldb, m0, n0, 0, tid);
#endif
    for (int s = 0; s < slices; ++s) {
        const int cur = s & 1;
        const bool more = s + 1 < slices;
#if ALIGNED
        cp_async_wait<0>();  // this thread's copies of slice s have landed
#endif
        // One barrier per slice: after it every thread's part of slice s is visible, AND every
        // thread has finished computing slice s-1, so its stage (cur ^ 1) may be refilled.
        __syncthreads();
#if ALIGNED
        if (more) {
            copy_slice_async(As[cur ^ 1], Bs[cur ^ 1], A, B, M, N, K, lda, ldb, m0, n0, (s + 1) * BK, tid);
            cp_async_commit();  // in flight while the FFMAs below run
        }
        multiply_slice<ALayout>(acc, As[cur], Bs[cur], ty, tx);
#else
        Staged next;
        if (more) fetch_slice(next, A, B, M, N, K, lda, ldb, m0, n0, (s + 1) * BK, tid);
        multiply_slice<ALayout>(acc, As[cur], Bs[cur], ty, tx);
        if (more) put_slice(next, As[cur ^ 1], Bs[cur ^ 1], tid);  // no one reads stage cur ^ 1 until the next barrier
#endif
    }
    store_tile(acc, C, M, N, ldc, m0, n0, ty, tx);
}

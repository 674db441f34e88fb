// The warp-tiled, multi-stage block tile of sgemm v6, v7 and v9 (docs/ladders/sgemm.md).
// Block tile BM×BN, split into (BM/WM)×(BN/WN) warp tiles; inside a warp tile the 32 lanes form
// (WM/TM)×(WN/TN) and each owns TM×TN outputs as (TM/4)×(TN/4) groups of 4×4, the groups
// WM/(TM/4) rows and WN/(TN/4) columns apart. Why by warp: a warp's float4 shared-memory
// reads then cover WM/(TM/4) rows of A and WN/(TN/4) columns of B (v4's warps span two
// micro-tile rows by the block's whole width), so one k step's A and B fragments come from
// 64- and 128-byte runs: one shared-memory wavefront each, without conflicts.
// The K loop is a STAGES-deep cp.async pipeline over dynamic shared memory (pipeline.cuh): slice
// s+STAGES-1 is in flight while slice s is computed (STAGES = 2 is v4's double buffer).
// GROUP > 1 reorders the blocks (grouped_order.cuh).
// HOIST=1 (points of the spaces of sgemm v7, v9, v10 and gemm_bias_relu v1, 16-byte path only)
// forms the copies' addresses once per thread: see SliceCopies below. v6 and every declared config
// use HOIST=0, the code measured first. PREFETCH=1 (points of the same spaces) loads each slice's
// first fragments before the previous slice's last k step (pipeline.cuh, cp_async_pipeline_ahead);
// PREFETCH=2 issues that load before the slice's refill rather than after it.
// Needs BM BN BK WM WN TM TN STAGES GROUP THREADS ALIGNED (-D or #define) and common.cuh; HOIST and
// PREFETCH default to 0.
#pragma once
#include "grouped_order.cuh"
#include "pipeline.cuh"
#include "slice_copies.cuh"

#ifndef HOIST
#define HOIST 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif

namespace warp_tile {
constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
constexpr int LANES_M = WM / TM, LANES_N = WN / TN;  // a warp's lanes over its tile
constexpr int GAP_M = WM / (TM / 4), GAP_N = WN / (TN / 4);  // between a lane's 4×4 groups
constexpr int PAD = 4;  // keeps A's transposed cp.async stores and both tiles' rows 16-byte aligned
constexpr int SA = BM + PAD, SB = BN + PAD;  // shared row lengths (floats) of A^T and B
constexpr int STAGE_FLOATS = BK * (SA + SB);
static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles divide the block tile");
static_assert(LANES_M * LANES_N == 32, "a warp tile holds 32 lane tiles: (WM/TM)·(WN/TN) = 32");
static_assert(WARPS_M * WARPS_N * 32 == THREADS, "THREADS = 32 · (BM/WM) · (BN/WN)");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 && WM % TM == 0 && WN % TN == 0,
              "lane tiles are groups of 4×4; BK a multiple of 4");
static_assert(STAGES >= 2 && GROUP >= 1, "at least two stages; GROUP ≥ 1");

// Bytes of dynamic shared memory the kernel needs (the launch passes the same figure).
constexpr int SMEM_BYTES = STAGES * STAGE_FLOATS * 4;

// Issue the copies of slice k0 (A transposed into As[BK][SA], B into Bs[BK][SB]); no wait.
// Elements at k >= K, m >= M or n >= N are zero-filled by cp.async's src-size operand.
__device__ __forceinline__ void load_slice(float* As, float* Bs, const float* A, const float* B, int M, int N,
                                           int K, int lda, int ldb, int m0, int n0, int k0, int tid) {
    // A goes through 4-byte copies: a 16-byte copy cannot transpose. Consecutive threads take
    // consecutive k of one row (32-byte global segments).
#pragma unroll
    for (int i = 0; i < CDIV(BM * BK, THREADS); ++i) {
        const int e = tid + i * THREADS;  // a counted loop: fully unrolled, one address update per copy
        if (BM * BK % THREADS != 0 && e >= BM * BK) break;
        const int m = e / BK, k = e % BK;
        const bool ok = m0 + m < M && k0 + k < K;
        cp_async_4(As + k * SA + m, ok ? A + (size_t)(m0 + m) * lda + k0 + k : A, ok);
    }
#if ALIGNED
    cp_async_block_16<BK, BN, THREADS>(Bs, SB, B, ldb, K, N, k0, n0, tid);
#else
#pragma unroll
    for (int i = 0; i < CDIV(BK * BN, THREADS); ++i) {
        const int e = tid + i * THREADS;
        if (BK * BN % THREADS != 0 && e >= BK * BN) break;
        const int k = e / BN, n = e % BN;
        const bool ok = k0 + k < K && n0 + n < N;
        cp_async_4(Bs + k * SB + n, ok ? B + (size_t)(k0 + k) * ldb + n0 + n : B, ok);
    }
#endif
}

#if HOIST && ALIGNED
// HOIST=1: nvdisasm of v7's tuned tile (128×256×16, nvcc 13.0, sm_90a) put 283 instructions
// besides the 2,048 FFMAs and 96 LDS of each slice, nearly all in the refill: its 12 copies
// rebuilt their 64-bit addresses from the kernel parameters (re-read by LDC), recomputed their
// bounds and converted shared pointers every slice — issue slots the FFMA stream lacks (ncu of the
// declared 128×128×16 tile: FMA pipe 63 % at 78 % issue; cuBLAS 79 % at 90 %). A thread's copies of a slice keep their k
// (A: THREADS a multiple of BK) or their column (B: THREADS a multiple of BN/4) and lie a fixed
// number of rows apart: one global pointer per operand advanced by a constant a slice, shared
// offsets that are constants, row and column bounds as masks set once; only K's bound moves.
constexpr int A_STEP = THREADS / BK;  // rows of A between a thread's copies
constexpr int A_COPIES = BM * BK / THREADS;
static_assert(THREADS % BK == 0 && BM * BK % THREADS == 0 && A_COPIES <= 32,
              "HOIST: a thread's A copies of a slice in one k, whole copies per thread");

// A through 4-byte copies that transpose it (As[k][m]); B as hgemm v6's and sgemm v8's (slice_copies.cuh).
struct SliceCopies {
    const float* A;  // the matrix: a valid address for the zero-filling copies
    const float* a;  // this thread's first A element of the current slice
    size_t a_rows;  // elements between its A copies
    unsigned a_dst;  // byte offset of its first A copy inside a stage
    unsigned a_live;  // A's copy i inside M: bit i
    int ak;  // the k of its A copies in the current slice
    BSliceCopies16<float, BK, BN, SB, THREADS> b;

    __device__ __forceinline__ SliceCopies(const float* A, const float* B, int M, int N, int lda, int ldb, int m0,
                                           int n0, int k_begin, int tid)
        : b(B, N, ldb, n0, k_begin, BK * SA * 4, tid) {
        const int ar = tid / BK, ac = tid % BK;
        this->A = A;
        a = A + (size_t)(m0 + ar) * lda + k_begin + ac;
        a_rows = (size_t)A_STEP * lda;
        a_dst = (unsigned)(ac * SA + ar) * 4;  // A transposed: As[k][m]
        a_live = 0;
#pragma unroll
        for (int i = 0; i < A_COPIES; ++i) a_live |= (unsigned)(m0 + ar + i * A_STEP < M) << i;
        ak = k_begin + ac;
    }

    // Issue the copies of the current slice into the stage at shared address `stage`, then move on.
    __device__ __forceinline__ void issue(unsigned stage, int K) {
#pragma unroll
        for (int i = 0; i < A_COPIES; ++i) {
            const bool ok = (a_live >> i & 1) && ak < K;
            cp_async_4_shared(stage + a_dst + i * A_STEP * 4, ok ? a + i * a_rows : A, ok);
        }
        b.issue(stage, K);
        a += BK;
        ak += BK;
    }
};
#endif

// This thread's first row and column in the block tile (its 4×4 groups are GAP_M, GAP_N apart).
__device__ __forceinline__ int lane_row() { return threadIdx.x / 32 / WARPS_N * WM + threadIdx.x % 32 / LANES_N * 4; }
__device__ __forceinline__ int lane_col() { return threadIdx.x / 32 % WARPS_N * WN + threadIdx.x % 32 % LANES_N * 4; }

// Add A[m0:m0+BM, k_begin:k_end] · B[k_begin:k_end, n0:n0+BN] to this thread's outputs; elements
// at k >= k_end read as zero. The whole product is the range [0, K); v9 gives each block its own.
__device__ __forceinline__ void accumulate(float (&acc)[TM][TN], const float* __restrict__ A,
                                           const float* __restrict__ B, int M, int N, int lda, int ldb,
                                           int m0, int n0, int k_begin, int k_end) {
    extern __shared__ __align__(16) float smem[];
    require_dynamic_smem(SMEM_BYTES);
    const int tid = threadIdx.x;
    const int a_off = lane_row(), b_off = lane_col();
    const int slices = k_end > k_begin ? CDIV(k_end - k_begin, BK) : 0;
#if HOIST && ALIGNED
    SliceCopies copies(A, B, M, N, lda, ldb, m0, n0, k_begin, tid);
    const unsigned base = smem_addr(smem);
    auto load = [&](int stage, int) { copies.issue(base + stage * STAGE_FLOATS * 4, k_end); };  // slices in order
#else
    auto load = [&](int stage, int s) {
        float* st = smem + stage * STAGE_FLOATS;
        load_slice(st, st + BK * SA, A, B, M, N, k_end, lda, ldb, m0, n0, k_begin + s * BK, tid);
    };
#endif
#if PREFETCH
    float ra[2][TM], rb[2][TN];  // two k steps' fragments: one loading while the other is multiplied
    cp_async_pipeline_ahead<STAGES, BK, PREFETCH == 2>(
        slices, load,
        [&](int stage, int kk, int buf) {
            const float* As = smem + stage * STAGE_FLOATS;
            load_fragments<TM, TN, GAP_M, GAP_N>(ra[buf], rb[buf], As + kk * SA + a_off, As + BK * SA + kk * SB + b_off);
        },
        [&](int buf) { fma_fragments(acc, ra[buf], rb[buf]); });
#else
    cp_async_pipeline<STAGES>(
        slices, load,
        [&](int stage) {
            const float* As = smem + stage * STAGE_FLOATS;
            const float* Bs = As + BK * SA;
#pragma unroll
            for (int kk = 0; kk < BK; ++kk)
                micro_tile_step<TM, TN, GAP_M, GAP_N>(acc, As + kk * SA + a_off, Bs + kk * SB + b_off);
        });
#endif
}

// The plain GEMM's epilogue: the accumulators as they are.
struct NoEpilogue {
    __device__ __forceinline__ void operator()(float (&)[TM][TN], int) const {}
};

// One block tile of C = A·B, the accumulators passed through `epilogue(acc, col0)` (col0: this
// thread's first column; its 4-wide groups are GAP_N apart) before they are stored: the fused GEMM +
// bias + ReLU (cuda_kernels/gemm_bias_relu/01_fused_simt.cu) is this tile with one more step.
template <class Epilogue = NoEpilogue>
__device__ __forceinline__ void sgemm_warp_tile(const float* __restrict__ A, const float* __restrict__ B,
                                                float* __restrict__ C, int M, int N, int K,
                                                int lda, int ldb, int ldc, const Epilogue& epilogue = {}) {
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;
    float acc[TM][TN] = {};
    accumulate(acc, A, B, M, N, lda, ldb, m0, n0, 0, K);
    epilogue(acc, n0 + lane_col());
    store_micro_tile<TM, TN, GAP_M, GAP_N, ALIGNED>(acc, C, M, N, ldc, m0 + lane_row(), n0 + lane_col());
}
}  // namespace warp_tile

// hgemm v6's tile (docs/ladders/hgemm.md, v6), apart from its kernel so that v12 runs the same product over
// a K range: the warp tiles, the copies of a slice (each operand at its own width, A_VEC and B_VEC), the
// ldmatrix fragment loads and the mma.sync products, as functions of the tile's origin and its K slices.
// 06_mma_sync.cu's header says why each piece is as it is. Needs common.cuh, pipeline.cuh, mma_sync.cuh and
// slice_copies.cuh, and the config's defines (BM, BN, BK, WM, WN, THREADS, STAGES).
#pragma once

#ifndef HOIST
#define HOIST 0
#endif
#ifndef A_VEC  // halves a copy of A, B: the launch fits them to the rows (study/ops/hgemm_mma_sync.py, copy_widths)
#define A_VEC (ALIGNED ? 8 : 1)
#endif
#ifndef B_VEC
#define B_VEC (ALIGNED ? 8 : 1)
#endif
#ifndef DEFER  // an operand copied in pairs of halves: its refill held in registers across a slice (see accumulate)
#define DEFER 0
#endif

namespace mma16 {
constexpr int WARPS_N = BN / WN;
constexpr int MT = WM / 16, NT = WN / 8;  // m16n8 accumulators of a warp tile
constexpr int SA = BK + 8, SB = BN + 8;   // shared row lengths (halves), see the header
constexpr int STAGE_HALVES = BM * SA + BK * SB;
constexpr int SMEM_BYTES = STAGES * STAGE_HALVES * 2;
static_assert(WM % 16 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0, "warp tiles of m16 × (2·n8) tiles");
static_assert((BM / WM) * WARPS_N * 32 == THREADS, "THREADS = 32 · (BM/WM) · (BN/WN)");
static_assert(BK % 16 == 0 && BN % 8 == 0 && STAGES >= 2 && GROUP >= 1, "BK a multiple of 16");
static_assert(!ALIGNED || (A_VEC == 8 && B_VEC == 8), "16-byte rows are copied 16 bytes at a time");

// Copy a Rows × Cols block of one operand, Vec halves a cp.async (8: 16 bytes, 4: 8, 2: 4), or in pairs of
// halves through registers where its rows are an odd number of halves apart (Vec 1).
template <int Vec, int Rows, int Cols>
__device__ __forceinline__ void copy_operand(storage_t* dst, int dst_ld, const storage_t* src, int ld, int R, int C,
                                             int r0, int c0, int tid) {
    if constexpr (Vec == 1)
        copy_block_pairs<Rows, Cols, THREADS>(dst, dst_ld, src, ld, R, C, r0, c0, tid);
    else
        cp_async_block<Rows, Cols, THREADS, Vec>(dst, dst_ld, src, ld, R, C, r0, c0, tid);
}

// DEFER=1: the operands copied in pairs of halves (Vec 1) are fetched into registers with the refill and stored
// into its stage after the slice's products (pipeline.cuh, cp_async_pipeline_deferred): a thread holds
// block_pairs_each(...) words of each, in STAGES − 1 sets (the prologue loads them all before its first store; the
// loop uses the first). Without a pairs operand DEFER changes nothing: one set, never read (accumulate is no
// template, so both branches of each `if constexpr` compile; nvcc 13.0's cubins are those of before the sets).
constexpr bool DEFER_A = DEFER && A_VEC == 1, DEFER_B = DEFER && B_VEC == 1;
constexpr int HELD_A = block_pairs_each(BM, BK, THREADS), HELD_B = block_pairs_each(BK, BN, THREADS);

#if HOIST
// HOIST=1, an operand in pairs of halves (rows an odd number of halves apart): fetch_block_pairs's loads with the
// thread's share worked out once, not at every slice. ncu at 36×93×217 FP16 (c82 at 358e274, the fitted 64 × 64
// tile, both operands in pairs, HOIST=0): 3,780 warp instructions a warp in about 14,500 active cycles of each of
// the 2 busy SMs (4 warps a block) — a warp's own instruction chain, 28 % of it IMAD, 12 % LEA, 10 % ISETP, against
// 448 LDSM and the HMMAs:
// each pair's row, column, 64-bit address and both bounds recomputed at every slice. Here THREADS is a multiple
// of a block row's pairs, so a thread's pairs share one column and lie STEP rows apart: its first address, the
// rows' bounds (a bit a pair) and the fixed coordinate's bound are set once; a slice adds its offset and checks
// the coordinate K moves (A: columns, B: rows). The loads and the zero fill are fetch_block_pairs's.
template <int Rows, int Cols, bool KRows>  // KRows: the block's rows advance with k (B); else its columns (A)
struct HoistedPairs {
    static constexpr int PER_ROW = Cols / 2, EACH = block_pairs_each(Rows, Cols, THREADS), STEP = THREADS / PER_ROW;
    static_assert(THREADS % PER_ROW == 0 && EACH <= 32, "a thread's pairs share one column; a bit a pair");
    const unsigned short* first;  // the thread's first pair at the first slice
    size_t ld;                    // elements between rows
    int moving, bound;            // the thread's coordinate along K at the first slice, and K
    unsigned rows;                // bit i: pair i inside the block (and, for A, inside M)
    bool lo, hi;                  // B: the pair's two columns inside N

    __device__ __forceinline__ HoistedPairs(const storage_t* src, int ld_, int R, int C, int r0, int c0, int tid)
        : ld(ld_) {
        const int r = tid / PER_ROW, c = tid % PER_ROW * 2;
        first = reinterpret_cast<const unsigned short*>(src) + (size_t)(r0 + r) * ld + c0 + c;
        rows = 0;
#pragma unroll
        for (int i = 0; i < EACH; ++i)
            if (r + i * STEP < Rows && (KRows || r0 + r + i * STEP < R)) rows |= 1u << i;
        moving = KRows ? r0 + r : c0 + c;
        bound = KRows ? R : C;
        lo = !KRows || c0 + c < C;
        hi = !KRows || c0 + c + 1 < C;
    }

    // Slice s's pairs into v (fetch_block_pairs's layout: pair i is the thread's tid + i·THREADS).
    __device__ __forceinline__ void fetch(unsigned (&v)[EACH], int s) const {
        const int k = moving + s * BK;
        const unsigned short* p = first + (KRows ? (size_t)s * BK * ld : (size_t)s * BK);
        const bool col_lo = KRows ? lo : k < bound, col_hi = KRows ? hi : k + 1 < bound;
#pragma unroll
        for (int i = 0; i < EACH; ++i) {
            const bool row = (rows >> i & 1u) && (!KRows || k + i * STEP < bound);
            const unsigned short* q = p + i * STEP * ld;
            const unsigned a = row && col_lo ? q[0] : 0u, b = row && col_hi ? q[1] : 0u;
            v[i] = a | b << 16;  // +0.0 where outside
        }
    }
};
#endif

// ldmatrix from a 32-bit shared-window address (HOIST=1: computed once per thread and offset by
// constants), or from a generic pointer converted at every load (HOIST=0, the code measured first).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const storage_t* row) { ldmatrix_x4(r, smem_addr(row)); }

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const storage_t* row) {
    ldmatrix_x4_trans(r, smem_addr(row));
}

#if HOIST && ALIGNED
// HOIST=1: the copies' addresses are worked out once per thread (slice_copies.cuh says why and how).
using SliceCopies = SliceCopies16<storage_t, BM, BN, BK, SA, SB, THREADS>;
#endif


// The product of the BM × BN tile at (m0, n0) over `slices` K slices from k_begin (a multiple of BK; slice s at
// k_begin + s·BK, bounds at K) added to acc, through STAGES stages of `smem`. v6 calls it over all of K; v12 over
// its block's range.
__device__ __forceinline__ void accumulate(float (&acc)[MT][NT][4], storage_t* smem, const storage_t* A,
                                           const storage_t* B, int M, int N, int K, int lda, int ldb, int m0, int n0,
                                           int k_begin, int slices) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / WARPS_N * WM, wn = warp % WARPS_N * WN;
    // ldmatrix row addresses: lane l names row l % 16 of a 16×16 block, its left or right half by l / 16.
    const int lrow = lane % 16, lcol = lane / 16 * 8;
#if HOIST
    // Shared addresses as 32-bit offsets: the stage base, this lane's first ldmatrix rows of A and
    // of B, and compile-time constants for the rest.
    const unsigned smem32 = smem_addr(smem);
    const unsigned a_ld = ((wm + lrow) * SA + lcol) * 2, b_ld = (BM * SA + lrow * SB + wn + lcol) * 2;
#if ALIGNED
    SliceCopies copies(A, B, M, N, lda, ldb, m0, n0, tid, k_begin);
#else
    const HoistedPairs<BM, BK, false> pairs_a(A, lda, M, K, m0, k_begin, tid);
    const HoistedPairs<BK, BN, true> pairs_b(B, ldb, K, N, k_begin, n0, tid);
#endif
#endif
    auto compute = [&](int stage) {
#if HOIST
        const unsigned st = smem32 + stage * STAGE_HALVES * 2;
#else
        const storage_t* As = smem + stage * STAGE_HALVES;
        const storage_t* Bs = As + BM * SA;
#endif
#pragma unroll
        for (int k16 = 0; k16 < BK; k16 += 16) {
            unsigned a[MT][4], b[NT / 2][4];
#pragma unroll
            for (int i = 0; i < MT; ++i)  // a0..a3: rows 0–7 / 8–15 by k 0–7, then by k 8–15
#if HOIST
                ldmatrix_x4(a[i], st + a_ld + (i * 16 * SA + k16) * 2);
#else
                ldmatrix_x4(a[i], As + (wm + i * 16 + lrow) * SA + k16 + lcol);
#endif
#pragma unroll
            for (int j = 0; j < NT / 2; ++j)  // two n8 tiles: b0 b1 of tile 2j, then of tile 2j+1
#if HOIST
                ldmatrix_x4_trans(b[j], st + b_ld + (k16 * SB + j * 16) * 2);
#else
                ldmatrix_x4_trans(b[j], Bs + (k16 + lrow) * SB + wn + j * 16 + lcol);
#endif
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    mma_m16n8k16(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1]);
        }
    };
    // A slice's copies (A rows into As[BM][SA], B rows into Bs[BK][SB]; out-of-range elements zeros: cp.async's
    // src-size 0, or zero halves in the pairs' words); with DEFER, an operand in pairs only fetched here and stored
    // by deposit, after the slice's products. Without it deposit is empty: cp_async_pipeline's code.
    // Indexed by constants of unrolled steps only, so the sets stay in registers (no stack frame, nvcc 13.0).
    unsigned held_a[DEFER_A ? STAGES - 1 : 1][HELD_A], held_b[DEFER_B ? STAGES - 1 : 1][HELD_B];
    cp_async_pipeline_deferred<STAGES>(
        slices,
        [&](int stage, int s, int held) {
#if HOIST && ALIGNED
            (void)s, (void)held;  // the copies walk the slices in order, as the pipeline issues them
            copies.issue(smem32 + stage * STAGE_HALVES * 2, K);
#else
            storage_t* st = smem + stage * STAGE_HALVES;
            const int k0 = k_begin + s * BK;
#if HOIST
            // Both operands' pairs fetched before either is stored: one global latency a slice where
            // copy_block_pairs, A then B, exposes two (common.cuh).
            unsigned now_a[HELD_A], now_b[HELD_B];
            if constexpr (A_VEC == 1) pairs_a.fetch(DEFER_A ? held_a[held] : now_a, s);
            else copy_operand<A_VEC, BM, BK>(st, SA, A, lda, M, K, m0, k0, tid);
            if constexpr (B_VEC == 1) pairs_b.fetch(DEFER_B ? held_b[held] : now_b, s);
            else copy_operand<B_VEC, BK, BN>(st + BM * SA, SB, B, ldb, K, N, k0, n0, tid);
            if constexpr (A_VEC == 1 && !DEFER_A) store_block_pairs<BM, BK, THREADS>(st, SA, now_a, tid);
            if constexpr (B_VEC == 1 && !DEFER_B) store_block_pairs<BK, BN, THREADS>(st + BM * SA, SB, now_b, tid);
#else
            if constexpr (DEFER_A)
                fetch_block_pairs<BM, BK, THREADS>(held_a[held], A, lda, M, K, m0, k0, tid);
            else
                copy_operand<A_VEC, BM, BK>(st, SA, A, lda, M, K, m0, k0, tid);
            if constexpr (DEFER_B)
                fetch_block_pairs<BK, BN, THREADS>(held_b[held], B, ldb, K, N, k0, n0, tid);
            else
                copy_operand<B_VEC, BK, BN>(st + BM * SA, SB, B, ldb, K, N, k0, n0, tid);
#endif
#endif
        },
        compute,
        [&](int stage, int held) {
            storage_t* st = smem + stage * STAGE_HALVES;
            if constexpr (DEFER_A) store_block_pairs<BM, BK, THREADS>(st, SA, held_a[held], tid);
            if constexpr (DEFER_B) store_block_pairs<BK, BN, THREADS>(st + BM * SA, SB, held_b[held], tid);
        });
}

// f(row, col, x, y) for each pair of adjacent outputs (row, col), (row, col + 1) this thread holds of the tile at
// (m0, n0), in the order v6 stores them: an m16n8 accumulator's rows g, then g + 8; only accumulator rows
// first .. first + rows − 1 of MT when given (constants where the caller's loop is unrolled). x and y are the
// accumulators themselves, so f may take them by reference and write them.
template <class F>
__device__ __forceinline__ void for_each_pair(float (&acc)[MT][NT][4], int m0, int n0, F f, int first = 0,
                                              int rows = MT) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int wm = warp / WARPS_N * WM, wn = warp % WARPS_N * WN;
#pragma unroll
    for (int i = 0; i < MT; ++i) {
        if (i < first || i >= first + rows) continue;
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int row = m0 + wm + i * 16 + g, col = n0 + wn + j * 8 + 2 * t;
            f(row, col, acc[i][j][0], acc[i][j][1]);
            f(row + 8, col, acc[i][j][2], acc[i][j][3]);
        }
    }
}

}  // namespace mma16

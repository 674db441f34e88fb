// sgemm v8 — 3xTF32: FP32-accurate products on the tensor cores (docs/ladders/sgemm.md, v8).
// Idea: an FP32 x splits into hi = x rounded to TF32 (11 significant bits) and lo = x − hi
// (exact, then rounded to TF32 in turn: 2^-22 of |x| lost). a·b = ahi·bhi + ahi·blo + alo·bhi +
// alo·blo; the last term is below 2^-22 of |a·b| and is dropped, the other three run as TF32
// tensor-core products with FP32 accumulation (small terms first). Each BK slice accumulates in
// fresh registers and joins the running sum by FADD: the tensor cores' own accumulation is not
// round-to-nearest and, over all of K, failed the FP32 gate (see the loop). The error per product
// is then about 2^-22 relative, a few FP32 roundings: the rung passes the FP32 gate unchanged, and
// its record says math 3xtf32 (FP32-accurate tensor-core emulation, not FFMA).
// Instruction: mma.sync.aligned.m16n8k8 TF32 (sm_80+), not Hopper's wgmma. Why: wgmma reads
// TF32 operands from shared memory K-major only, so row-major B would need a transposing
// copy, and the hi/lo parts would have to be stored to shared memory for it to read; mma.sync
// takes both from registers, split in place. What that costs: on Hopper mma.sync issues the
// older HMMA path at a fraction of wgmma's rate (docs/toolchain.md 6.4), so this rung measures
// how far the legacy instruction carries the emulation.
// Layout: A row-major in shared memory (rows BK + 8 floats apart), B row-major (BN + 4 apart),
// both filled by 16-byte cp.async in a STAGES-deep pipeline, blocks grouped as in v7. The k
// order inside each k8 step is permuted: the fragment's columns t and t+4 are read from k = 2t
// and 2t+1 (one 8-byte load per row; B's rows are taken in the same order, so the sum covers
// the same k's). With those strides a half-warp's 8-byte A reads and a warp's 4-byte B reads
// hit 32 distinct banks.
// Removes: the FFMA pipe's ceiling (66.9 TFLOPS at 1980 MHz): the products run on the tensor
// pipe, whose TF32 rate is 8× FFMA's, three times over.
// Warp tiles of 64×64 (128 accumulators a thread, before the slice partials doubled that) spilled
// under ptxas: not in the space.
// H200 (ncu at 4096^3, reports/h200/profiles/sgemm.md): HMMA pipe 55.2 %, issue slots 43.3 %,
// top stalls "wait" and "math pipe throttle", SM clock 1.79 GHz (power); 1.16x cuBLAS FP32 at
// 4096^3, 1.18x at 8192^3 (tuned), gate error 7.6e-8 against cuBLAS FP32's 3.6e-7.
// HOIST (a config axis, as hgemm v6's and v7's): by nvdisasm (nvcc 13.0, sm_90a) each BK = 32
// slice of the declared tile is 898 instructions for 192 HMMA, the splits (VIADD, LOP3, FADD) and
// a refill that rebuilds its 8 copies' addresses from re-read kernel parameters; HOIST=1
// (slice_copies.cuh) forms them once per thread: 782 a slice, integer-pipe instructions 388 → 329,
// 245 → 207 registers; HOIST=0 is the code measured above (SASS unchanged). Measured (commit 3c91c8f,
// reports/h200/sgemm-runs/sgemm-v7-v8-hoist.md): the autotuner picks HOIST=1 with 4 stages at 4096^3
// and 8192^3: 60.9 TFLOPS both, 1.19x cuBLAS FP32 (declared tile, HOIST=0: 1.15x in the same run).
// Builds on: v7 (pipeline, grouped order, zero-filled tails). Constraints: none (4-byte copies
// when a row is not 16-byte aligned, tails zero-filled, edges stored element by element).
// arch: sm_80
// config: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=3 GROUP=8 HOIST=0
// space: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=3 GROUP=8 HOIST=0
// space: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=3 GROUP=8 HOIST=1
// space: BM=128 BN=128 BK=32 WM=32 WN=64 THREADS=256 STAGES=3 GROUP=8 HOIST=0
// space: BM=128 BN=128 BK=32 WM=32 WN=64 THREADS=256 STAGES=3 GROUP=8 HOIST=1
// space: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=0
// space: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=1
// space: BM=128 BN=128 BK=16 WM=64 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=0
// space: BM=128 BN=128 BK=16 WM=64 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=1
// space: BM=128 BN=64 BK=32 WM=32 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=0
// space: BM=128 BN=64 BK=32 WM=32 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=1
// space: BM=64 BN=128 BK=32 WM=32 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=0
// space: BM=64 BN=128 BK=32 WM=32 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=1
// space: BM=64 BN=64 BK=32 WM=32 WN=32 THREADS=128 STAGES=4 GROUP=8 HOIST=0
// space: BM=64 BN=64 BK=32 WM=32 WN=32 THREADS=128 STAGES=4 GROUP=8 HOIST=1
#include "common.cuh"
#include "grouped_order.cuh"
#include "pipeline.cuh"
#include "slice_copies.cuh"
#include "tf32_split.cuh"

#ifndef HOIST
#define HOIST 0
#endif

namespace tf32x3 {
constexpr int WARPS_N = BN / WN;
constexpr int MT = WM / 16, NT = WN / 8;  // m16n8k8 tiles of a warp tile
constexpr int SA = BK + 8, SB = BN + 4;   // shared row lengths (floats), see the header
constexpr int STAGE_FLOATS = BM * SA + BK * SB;
constexpr int SMEM_BYTES = STAGES * STAGE_FLOATS * 4;
static_assert(WM % 16 == 0 && WN % 8 == 0 && BM % WM == 0 && BN % WN == 0, "warp tiles of m16n8 tiles");
static_assert((BM / WM) * WARPS_N * 32 == THREADS, "THREADS = 32 · (BM/WM) · (BN/WN)");
static_assert(BK % 8 == 0 && BN % 32 == 0 && STAGES >= 2 && GROUP >= 1, "BK a multiple of 8, BN of 32");

__device__ __forceinline__ void load_slice(float* As, float* Bs, const float* A, const float* B, int M, int N,
                                           int K, int lda, int ldb, int m0, int n0, int k0, int tid) {
#if ALIGNED  // K and N multiples of 4: a 16-byte chunk is wholly inside or outside the matrix
    cp_async_block_16<BM, BK, THREADS>(As, SA, A, lda, M, K, m0, k0, tid);
    cp_async_block_16<BK, BN, THREADS>(Bs, SB, B, ldb, K, N, k0, n0, tid);
#else
#pragma unroll 4
    for (int e = tid; e < BM * BK; e += THREADS) {
        const int m = e / BK, k = e % BK;
        const bool ok = m0 + m < M && k0 + k < K;
        cp_async_4(As + m * SA + k, ok ? A + (size_t)(m0 + m) * lda + k0 + k : A, ok);
    }
#pragma unroll 4
    for (int e = tid; e < BK * BN; e += THREADS) {
        const int k = e / BN, n = e % BN;
        const bool ok = k0 + k < K && n0 + n < N;
        cp_async_4(Bs + k * SB + n, ok ? B + (size_t)(k0 + k) * ldb + n0 + n : B, ok);
    }
#endif
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    // Not volatile: the product has no side effect, so the compiler may interleave independent ones.
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void store(float* C, int M, int N, int ldc, int row, int col, float x, float y) {
    if (row >= M) return;
    float* c = C + (size_t)row * ldc + col;
    if (ALIGNED && col + 1 < N) {
        *reinterpret_cast<float2*>(c) = make_float2(x, y);  // col even, ldc a multiple of 4: 8-byte aligned
    } else {
        if (col < N) c[0] = x;
        if (col + 1 < N) c[1] = y;
    }
}
}  // namespace tf32x3

extern "C" __global__ void __launch_bounds__(THREADS, 1)
sgemm_v8_3xtf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K, int lda, int ldb, int ldc) {
    using namespace tf32x3;
    extern __shared__ __align__(16) float smem[];
    require_dynamic_smem(SMEM_BYTES);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;  // the fragments' groupID and thread-in-group
    const int wm = warp / WARPS_N * WM, wn = warp % WARPS_N * WN;
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;

    float acc[MT][NT][4] = {};
#if HOIST && ALIGNED
    SliceCopies16<float, BM, BN, BK, SA, SB, THREADS> copies(A, B, M, N, lda, ldb, m0, n0, tid);
    const unsigned smem32 = smem_addr(smem);
#endif
    cp_async_pipeline<STAGES>(
        CDIV(K, BK),
        [&](int stage, int s) {
#if HOIST && ALIGNED
            (void)s;  // the copies walk the slices in order, as the pipeline issues them
            copies.issue(smem32 + stage * STAGE_FLOATS * 4, K);
#else
            float* st = smem + stage * STAGE_FLOATS;
            load_slice(st, st + BM * SA, A, B, M, N, K, lda, ldb, m0, n0, s * BK, tid);
#endif
        },
        [&](int stage) {
            const float* As = smem + stage * STAGE_FLOATS;
            const float* Bs = As + BM * SA;
            // This slice's products accumulate in `part`, which is then added to `acc` by FADD
            // (IEEE round to nearest). The tensor cores' own FP32 accumulation is not round-to-nearest:
            // over all of K its biased errors grew like √K against |A|·|B| (2.0e-6 at K = 1700, 3.1e-6
            // at 4096, 9.7e-6 at 65536; reports/h200/experiments/sgemm-ladder-843c423.md); kept to one
            // slice's 3·BK/8 products, it stays small.
            float part[MT][NT][4] = {};
#pragma unroll
            for (int k8 = 0; k8 < BK; k8 += 8) {
                unsigned bhi[NT][2], blo[NT][2];
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const float* b = Bs + (k8 + 2 * t) * SB + wn + j * 8 + g;
                    split(b[0], bhi[j][0], blo[j][0]);
                    split(b[SB], bhi[j][1], blo[j][1]);
                }
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    // Rows g and g+8 of the m16 tile; k = 2t and 2t+1 stand for the columns t and t+4.
                    unsigned ahi[4], alo[4];
                    const float2 top = *reinterpret_cast<const float2*>(As + (wm + i * 16 + g) * SA + k8 + 2 * t);
                    const float2 bot = *reinterpret_cast<const float2*>(As + (wm + i * 16 + g + 8) * SA + k8 + 2 * t);
                    split(top.x, ahi[0], alo[0]);
                    split(bot.x, ahi[1], alo[1]);
                    split(top.y, ahi[2], alo[2]);
                    split(bot.y, ahi[3], alo[3]);
                    // Small terms first; one product over the NT tiles before the next, so that
                    // back-to-back mma.sync write different accumulators (NT independent chains
                    // instead of three dependent ones per tile: ncu showed "wait" and
                    // "math_pipe_throttle" as the top stalls with the HMMA pipe 55 % busy). Measured:
                    // no change in time or profile — ptxas interleaves them either way.
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_tf32(part[i][j], alo, bhi[j]);
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_tf32(part[i][j], ahi, blo[j]);
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_tf32(part[i][j], ahi, bhi[j]);
                }
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
#pragma unroll
                    for (int r = 0; r < 4; ++r) acc[i][j][r] += part[i][j][r];
        });
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int row = m0 + wm + i * 16 + g, col = n0 + wn + j * 8 + 2 * t;
            store(C, M, N, ldc, row, col, acc[i][j][0], acc[i][j][1]);
            store(C, M, N, ldc, row + 8, col, acc[i][j][2], acc[i][j][3]);
        }
}

// hgemm v10 — skinny M (a decode step, M ≤ 64 tokens) computed transposed, Cᵀ = Bᵀ·Aᵀ, so that the
// tokens are the wgmma instruction's N and the weights its 64-row M (docs/ladders/hgemm.md, v10).
// Idea: v8/v9 give the tokens wgmma's M, which is 64 per warpgroup and 128 per tile: at M = 1 or 16,
// 98 % or 88 % of every instruction multiplies the zero rows TMA fills in, and each SM's tile is
// a 128 × 256 block of C of which 1 or 16 rows exist. Here the operands swap roles. The weight tile
// — BK rows of 64 columns of B, loaded by TMA with the 128-byte swizzle exactly as v8 loads B — is
// wgmma's A, read MN-major (imm-trans-a = 1: its 64 m, the weight columns, contiguous in each
// swizzled row); the token tile — TOKENS rows of 64 k of A, loaded as v8 loads A — is wgmma's B,
// K-major (imm-trans-b = 0), and the instruction is m64nTOKENSk16 with TOKENS ∈ {8, 16, 32, 64}, a
// compile-time define the launch picks as the smallest that holds M (TMA reads the rows past M as
// zeros). A consumer warpgroup owns 64 weight columns × TOKENS tokens (TOKENS/2 FP32 accumulators a
// thread); accumulator (n, m) is C[m][n]. The tile is BN = 64 × consumers weight columns.
// Warp-specialised as v8: a producer warp (the block's last, so that the consumers are aligned
// warpgroups) issues TMA into a STAGES-deep ring with full/empty mbarriers, the consumers wait on
// full, multiply, release. No setmaxnreg: a consumer holds at most 32 accumulators.
// Few tiles (N / BN: 32 at N = 4096, BN = 128, for 132 SMs), so split-K over tiles × splits units
// exactly as v9 plans it (study/ops/hgemm.py, split_plan, with BM = TOKENS: one row of tiles): one
// split writes C; more write FP32 planes that hgemm/reduce_splits.cuh sums in order, as v9.
// C by plain stores, not TMA: the accumulators are Cᵀ (a thread's registers run along C's columns),
// so a TMA store would need a transpose through shared memory, for at most 64 rows of C against
// K rows of weights read (C is ≤ 64/K of the traffic); a warp's store writes 16 contiguous bytes in
// each of 4 rows of C. C needs no 16-byte rows, so it is never staged.
// Bottleneck: memory. At M tokens the product does 2·M FLOPs per weight element (2 bytes) read once:
// M FLOP/byte, 1–16 against the H200's ~206 FLOP/byte ridge (989 TFLOPS dense / 4.8 TB/s), so it is
// bound by streaming B from HBM (K·N·2 bytes) at M ≤ 64; the STAGES ring keeps STAGES · BN · 128
// bytes of weights in flight per SM (64 KiB at BN = 128, 4 stages) to cover HBM latency.
// Removes: v8/v9's 128-row tiles at M ≤ 64, where all but M of each tile's 128 rows multiply the
// zeros TMA fills in (a wgmma of 64 rows for 1 token).
// Builds on: v9 (plan, partial planes, reduction), v8 (producer/consumer ring), hopper.cuh's
// wgmma_m64k16_ta. Constraints: M ≤ 64 (the launch refuses more: v8/v9 take it); K and N as v8
// (rows TMA cannot read are staged by the launch); the workspace holds splits × M × ldp floats.
// Measured (H200, BF16, autotune off, c19 at 6b93f4f; × cuBLAS of one run each, unpaired): the
// llama2-7b suite's projections at 1 token 0.91–0.96 (v8 0.27–0.80, v9 0.65–0.80), at 16 tokens
// 0.89–0.98; lowest at N = 22016. Not the SMs' fill: at 1 token N = 12288 (96 tiles, one split, 73 %
// of the SMs busy) gave the highest, 0.961, N = 22016 (172 tiles, 1.3 rounds) 0.914, N = 4096 (32 tiles,
// 4 splits, 97 %) 0.951; what does is for ncu. Correct at every autotune point and edge shape, clean under memcheck and racecheck
// (c16/c17 at c5f5b0f).
// arch: sm_90a
// precisions: fp16 bf16
// config: BN=128 BK=64 STAGES=8 THREADS=288 REDUCE_THREADS=256 MIN_SLICES=4
// space: BN=128 BK=64 STAGES=8 THREADS=288 REDUCE_THREADS=256 MIN_SLICES=4
// space: BN=128 BK=64 STAGES=8 THREADS=288 REDUCE_THREADS=256 MIN_SLICES=2
// space: BN=128 BK=64 STAGES=8 THREADS=288 REDUCE_THREADS=256 MIN_SLICES=8
// space: BN=128 BK=64 STAGES=4 THREADS=288 REDUCE_THREADS=256 MIN_SLICES=4
// space: BN=256 BK=64 STAGES=5 THREADS=544 REDUCE_THREADS=256 MIN_SLICES=4
// space: BN=256 BK=64 STAGES=5 THREADS=544 REDUCE_THREADS=256 MIN_SLICES=2
// space: BN=64 BK=64 STAGES=8 THREADS=160 REDUCE_THREADS=256 MIN_SLICES=4
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/reduce_splits.cuh"

// Rows of A (tokens) a tile holds: the launch defines the smallest of 8, 16, 32, 64 that holds M.
// Without it (a compile of the config alone) the widest, whose shared memory bounds the space.
#ifndef TOKENS
#define TOKENS 64
#endif

constexpr int CONSUMERS = BN / 64;                 // consumer warpgroups, one per 64 weight columns
constexpr int ROW_BYTES = 128;                     // one swizzled row: 64 halves
constexpr int X_BYTES = TOKENS * ROW_BYTES;        // the tokens' box: TOKENS rows of 64 k
constexpr int W_BOX_BYTES = BK * ROW_BYTES;        // a weights' box: BK rows of 64 n
constexpr int STAGE_BYTES = X_BYTES + CONSUMERS * W_BOX_BYTES;
// Stages, a full and an empty barrier per stage, 1024 bytes to round the base up to the swizzle atom
// (study/ops/hgemm.py, skinny_smem, computes the same figure).
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + STAGES * 16 + 1024;
static_assert(TOKENS == 8 || TOKENS == 16 || TOKENS == 32 || TOKENS == 64, "wgmma_m64k16_ta: N of 8, 16, 32, 64");
static_assert(BK == 64, "a 128-byte swizzled row holds 64 halves");
static_assert(BN % 64 == 0 && BN >= 64 && BN <= 256, "one consumer warpgroup per 64 weight columns, 1–4");
static_assert(THREADS == 128 * CONSUMERS + 32, "the consumer warpgroups, then one producer warp");
static_assert(STAGES >= 2, "at least two stages");
static_assert(X_BYTES % 1024 == 0, "every box starts on a swizzle atom");

// A unit's accumulators (64 weight columns n0 + 16w + g (+ 8) × tokens 8j + 2t (+ 1)) into C (storage
// type, rounded once) or, with split-K, into its FP32 plane (rows ldp apart); rows past M and columns
// past N are not stored. Element d[4j + 2h + c] is token 8j + 2t + c, column n0 + 16w + g + 8h.
template <class T, class Convert>
__device__ __forceinline__ void store_transposed(const float (&acc)[TOKENS / 2], T* out, int M, int N, size_t ld,
                                                 int n0, int thread, Convert convert) {
    const int lane = thread % 32, g = lane / 4, t = lane % 4;
    const int col = n0 + thread / 32 * 16 + g;
#pragma unroll
    for (int j = 0; j < TOKENS / 8; ++j) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
            const int token = 8 * j + 2 * t + c;
            if (token >= M) continue;
#pragma unroll
            for (int h = 0; h < 2; ++h)
                if (col + 8 * h < N) out[token * ld + col + 8 * h] = convert(acc[4 * j + 2 * h + c]);
        }
    }
}

struct ToStorage {
    __device__ __forceinline__ storage_t operator()(float v) const { return from_float(v); }
};
struct AsFloat {
    __device__ __forceinline__ float operator()(float v) const { return v; }
};

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_v10_skinny_m(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                   storage_t* __restrict__ C, int M, int N, int K, int ldc, int splits, int slices_per,
                   float* __restrict__ partial, int ldp) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned full = base + STAGES * STAGE_BYTES, empty = full + STAGES * 8;
    const int tid = threadIdx.x, warp = tid / 32;
    const int slices = CDIV(K, BK), units = CDIV(N, BN) * splits;

    if (tid == 0) {
        tma_prefetch_map(&map_a);
        tma_prefetch_map(&map_b);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + s * 8, 1);               // the producer's expect_tx; the bytes complete it
            mbar_init(empty + s * 8, CONSUMERS * 4);  // one arrival per consumer warp
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (warp == 4 * CONSUMERS) {  // the producer warp: one lane issues every copy
        if (tid % 32 != 0) return;
        int use = 0;  // slices issued so far, over all units: stage use % STAGES, its round use / STAGES
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const int n0 = unit / splits * BN, s0 = unit % splits * slices_per;
            const int s1 = min(slices, s0 + slices_per);  // the launch plans no empty range
            for (int s = s0; s < s1; ++s, ++use) {
                const int stage = use % STAGES;
                const unsigned at = base + stage * STAGE_BYTES, bar = full + stage * 8;
                if (use >= STAGES) mbar_wait(empty + stage * 8, (use / STAGES - 1) & 1);  // its last round released
                mbar_arrive_expect_tx(bar, STAGE_BYTES);  // whole boxes count, zero-filled parts included
                tma_load_2d(at, &map_a, s * BK, 0, bar);  // the tokens: rows 0 … TOKENS-1, 64 k
#pragma unroll
                for (int c = 0; c < CONSUMERS; ++c)
                    tma_load_2d(at + X_BYTES + c * W_BOX_BYTES, &map_b, n0 + c * 64, s * BK, bar);
            }
        }
        return;
    }

    const int consumer = warp / 4, thread = tid % 128;
    int use = 0;
    for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
        const int n0 = unit / splits * BN, s0 = unit % splits * slices_per;
        const int s1 = min(slices, s0 + slices_per);
        float acc[TOKENS / 2];
#pragma unroll
        for (int i = 0; i < TOKENS / 2; ++i) acc[i] = 0.f;
        for (int s = s0; s < s1; ++s, ++use) {
            const int stage = use % STAGES;
            const unsigned at = base + stage * STAGE_BYTES;
            mbar_wait(full + stage * 8, (use / STAGES) & 1);
            fence_registers(acc);
            wgmma_fence();
            const unsigned w = at + X_BYTES + consumer * W_BOX_BYTES;
            // 16 k a step: the weights' box advances 16 swizzled rows (2048 bytes; leading offset the
            // box, unused with one 64-wide m chunk; stride 1024, k rows 0–7 to 8–15), the tokens' 32
            // bytes along their rows (stride 1024 from one 8-token atom to the next).
#pragma unroll
            for (int k16 = 0; k16 < BK / 16; ++k16)
                wgmma_m64k16_ta<TOKENS>(acc, wgmma_desc(w + k16 * 16 * ROW_BYTES, W_BOX_BYTES, 1024),
                                        wgmma_desc(at + k16 * 32, 16, 1024));
            wgmma_commit();
            wgmma_wait<1>();  // the previous slice's group is done: release its stage
            fence_registers(acc);
            if (s > s0 && thread % 32 == 0) mbar_arrive(empty + (use - 1) % STAGES * 8);
        }
        wgmma_wait<0>();
        fence_registers(acc);
        if (thread % 32 == 0) mbar_arrive(empty + (use - 1) % STAGES * 8);  // the unit's last slice
        const int cols = n0 + consumer * 64;
        if (splits == 1)  // uniform over the grid
            store_transposed(acc, C, M, N, (size_t)ldc, cols, thread, ToStorage{});
        else
            store_transposed(acc, partial + (size_t)(unit % splits) * M * ldp, M, N, (size_t)ldp, cols, thread,
                             AsFloat{});
    }
}

// The second kernel: C = the sum of the `splits` planes of `partial` (each M × N, rows ldp apart), in
// plane order, rounded once (hgemm/reduce_splits.cuh, as v9's). Launched only with two splits or more.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS)
hgemm_v10_reduce_splits(const float* __restrict__ partial, storage_t* __restrict__ C, int M, int N, int ldp,
                        int ldc, int splits) {
    reduce_splits(partial, C, M, N, ldp, ldc, splits, PlainSum{});
}

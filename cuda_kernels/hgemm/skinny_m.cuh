// The body of hgemm v10 (docs/ladders/hgemm.md, v10) as a function of what its C store does: the fused
// GEMM + bias + ReLU's v4 (cuda_kernels/gemm_bias_relu/04_skinny_m.cu) is this kernel with a bias and a
// ReLU between the accumulators and their rounding, not a copy of it. Needs common.cuh, hopper.cuh and
// v10's config macros (BN, BK, STAGES, THREADS, and TOKENS and B_IN_PLACE from the launch); the why of
// each step is in v10's header.
#pragma once

#include "unaligned_rows.cuh"

// Rows of A (tokens) a tile holds: the launch defines the smallest of 8, 16, 32, 64 that holds M.
// Without it (a compile of the config alone) the widest, whose shared memory bounds the space.
#ifndef TOKENS
#define TOKENS 64
#endif

// 1 (the launch) where B's rows are not 16 bytes apart by a multiple, so that TMA cannot read them: loader
// warps read them in place (load_weights_in_place). Without it, TMA.
#ifndef B_IN_PLACE
#define B_IN_PLACE 0
#endif

constexpr int CONSUMERS = BN / 64;                 // consumer warpgroups, one per 64 weight columns
constexpr int ROW_BYTES = 128;                     // one swizzled row: 64 halves
constexpr int X_BYTES = TOKENS * ROW_BYTES;        // the tokens' box: TOKENS rows of 64 k
constexpr int W_BOX_BYTES = BK * ROW_BYTES;        // a weights' box: BK rows of 64 n
constexpr int STAGE_BYTES = X_BYTES + CONSUMERS * W_BOX_BYTES;
// Stages, a full and an empty barrier per stage, 1024 bytes to round the base up to the swizzle atom
// (study/ops/hgemm.py, skinny_smem, computes the same figure).
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + STAGES * 16 + 1024;
// In-place weights: two teams of four loader warps after the producer warp, each team filling every other
// stage, so that two stages' loads are in flight at once; a loader warp fills 4 rows of 128 bytes an
// instruction (8 lanes a row, a 16-byte chunk a lane), LOAD_BATCH row groups' loads issued before their
// stores (the bytes in flight that cover HBM's latency, bounded by the registers BLOCK_THREADS leaves:
// past 13 warps a scheduler holds 5 and a thread gets 96 registers, which 8 groups' 72 overflow).
constexpr int LOADER_TEAMS = 2, TEAM_WARPS = 4;
constexpr int LOADER_WARPS = B_IN_PLACE ? LOADER_TEAMS * TEAM_WARPS : 0;
constexpr int BLOCK_THREADS = THREADS + 32 * LOADER_WARPS;
constexpr int ROW_GROUPS = CONSUMERS * BK / (4 * TEAM_WARPS);  // a loader warp's 4-row groups a stage
constexpr int LOAD_BATCH = BLOCK_THREADS > 416 ? 4 : (ROW_GROUPS < 8 ? ROW_GROUPS : 8);
static_assert(ROW_GROUPS % LOAD_BATCH == 0, "whole batches of row groups");
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
                if (col + 8 * h < N) out[token * ld + col + 8 * h] = convert(acc[4 * j + 2 * h + c], col + 8 * h);
        }
    }
}

// What a unit's C store does to each accumulator, given its column: round it (v10) or, for the fused
// op's v4 (cuda_kernels/gemm_bias_relu/04_skinny_m.cu), add the column's bias and apply ReLU first.
struct ToStorage {
    __device__ __forceinline__ storage_t operator()(float v, int) const { return from_float(v); }
};
struct AsFloat {  // a split's FP32 plane: as it is
    __device__ __forceinline__ float operator()(float v, int) const { return v; }
};

// One lane's 16 bytes of weight row k (columns n + 8·chunk …) read in place: the two aligned words they
// lie in, to be shifted into place at the store (unaligned_rows.cuh), where the row's 64 columns are the
// matrix's and those words lie inside it (bytes before a row are the previous row's); else element by
// element, zeros past K and N as TMA fills them (the last tile's and last slice's rows, the matrix's
// first and last bytes). `end`: one past the matrix's last byte.
struct WeightChunk {
    uint4 lo, hi;
    int shift;  // 0: lo is the chunk
};

__device__ __forceinline__ WeightChunk fetch_weight_chunk(const storage_t* __restrict__ B, long long ldb, int K, int N,
                                                          int k, int n, int chunk, unsigned long long end) {
    const unsigned long long at = (unsigned long long)B + ((long long)k * ldb + n) * sizeof(storage_t);
    const unsigned long long lo = at & ~15ull;
    const int shift = (int)(at & 15);
    WeightChunk w;
    if (k < K && n + 64 <= N && lo >= (unsigned long long)B && lo + (shift ? 144 : 128) <= end) {
        const uint4* word = reinterpret_cast<const uint4*>(lo) + chunk;
        w.lo = word[0];
        w.hi = shift ? word[1] : w.lo;
        w.shift = shift;
        return w;
    }
    unsigned h[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int col = n + 8 * chunk + i;
        h[i] = k < K && col < N ? B[(long long)k * ldb + col] : 0u;
    }
    w.lo = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
    w.hi = w.lo;
    w.shift = 0;
    return w;
}

// A loader warp's part of the weights of slice s of the tile at column n0, stored into the stage at
// `boxes` as TMA's 128-byte swizzle lays them out (16-byte chunk c of box row r at chunk c ^ r % 8), so
// that the consumers' descriptors read them unchanged. Its rows: groups of 4 (lane / 8) a TEAM_WARPS-th
// apart (`first`); row i of the stage is row i % BK of box i / BK.
__device__ __forceinline__ void load_weights_in_place(const storage_t* __restrict__ B, long long ldb, int K, int N,
                                                      int s, int n0, int first, int chunk, unsigned boxes,
                                                      unsigned long long end) {
#pragma unroll 1
    for (int g0 = 0; g0 < ROW_GROUPS; g0 += LOAD_BATCH) {
        WeightChunk w[LOAD_BATCH];
#pragma unroll
        for (int g = 0; g < LOAD_BATCH; ++g) {
            const int row = (g0 + g) * 4 * TEAM_WARPS + first;
            w[g] = fetch_weight_chunk(B, ldb, K, N, s * BK + row % BK, n0 + row / BK * 64, chunk, end);
        }
#pragma unroll
        for (int g = 0; g < LOAD_BATCH; ++g) {
            const int row = (g0 + g) * 4 * TEAM_WARPS + first, r = row % BK;
            st_shared_v4(boxes + row / BK * W_BOX_BYTES + r * ROW_BYTES + ((chunk ^ r % 8) << 4),
                         w[g].shift ? byte_window(w[g].lo, w[g].hi, w[g].shift) : w[g].lo);
        }
    }
}

// The kernel's body: `to_c` maps each accumulator (and its column) to what C holds when the plan has one
// split (ToStorage: v10; a bias and ReLU: the fused op's v4); with more, the FP32 planes take them as they are.
template <class ToC>
__device__ __forceinline__ void skinny_m_gemm(const TensorMap* map_a, const TensorMap* map_b, storage_t* __restrict__ C,
                                              int M, int N, int K, int ldc, int splits, int slices_per,
                                              float* __restrict__ partial, int ldp, const storage_t* __restrict__ B,
                                              long long ldb, ToC to_c) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned full = base + STAGES * STAGE_BYTES, empty = full + STAGES * 8;
    const int tid = threadIdx.x, warp = tid / 32;
    const int slices = CDIV(K, BK), units = CDIV(N, BN) * splits;

    if (tid == 0) {
        if (blockDim.x != BLOCK_THREADS) __trap();  // the launch adds the loader warps' threads to THREADS
        tma_prefetch_map(map_a);
        if (!B_IN_PLACE) tma_prefetch_map(map_b);
        // one release per consumer warp; a fill by the producer, and by each thread of a loader team
        mbar_init_ring(full, empty, STAGES, CONSUMERS * 4, 1 + 32 * TEAM_WARPS * (LOADER_WARPS > 0));
    }
    __syncthreads();

    if (B_IN_PLACE && warp > 4 * CONSUMERS) {  // a loader warp: the weights of its team's stages
        const int loader = warp - 4 * CONSUMERS - 1, team = loader / TEAM_WARPS, lane = tid % 32;
        const unsigned long long end = (unsigned long long)(B + (long long)(K - 1) * ldb + N);
        int use = 0;  // as the producer counts
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const int n0 = unit / splits * BN, s0 = unit % splits * slices_per, s1 = min(slices, s0 + slices_per);
            for (int s = s0; s < s1; ++s, ++use) {
                if (use % LOADER_TEAMS != team) continue;
                const int stage = use % STAGES;
                if (use >= STAGES) mbar_wait(empty + stage * 8, (use / STAGES - 1) & 1);
                load_weights_in_place(B, ldb, K, N, s, n0, loader % TEAM_WARPS * 4 + lane / 8, lane % 8,
                                      base + stage * STAGE_BYTES + X_BYTES, end);
                fence_async_shared();  // the stores, visible to wgmma (the async proxy) before the arrival
                mbar_arrive(full + stage * 8);
            }
        }
        return;
    }

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
                // whole boxes count, zero-filled parts included; the loader warps' stores are theirs to announce
                mbar_arrive_expect_tx(bar, B_IN_PLACE ? X_BYTES : STAGE_BYTES);
                tma_load_2d(at, map_a, s * BK, 0, bar);  // the tokens: rows 0 … TOKENS-1, 64 k
#pragma unroll
                for (int c = 0; c < CONSUMERS * !B_IN_PLACE; ++c)
                    tma_load_2d(at + X_BYTES + c * W_BOX_BYTES, map_b, n0 + c * 64, s * BK, bar);
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
            store_transposed(acc, C, M, N, (size_t)ldc, cols, thread, to_c);
        else
            store_transposed(acc, partial + (size_t)(unit % splits) * M * ldp, M, N, (size_t)ldp, cols, thread,
                             AsFloat{});
    }
}

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

// 1 (the launch) where B's rows are not 16 bytes apart by a multiple, so that TMA cannot read them: they
// are read in place by cp.async copies of aligned words and shifted on chip (see below). Without it, TMA.
#ifndef B_IN_PLACE
#define B_IN_PLACE 0
#endif

constexpr int CONSUMERS = BN / 64;                 // consumer warpgroups, one per 64 weight columns
constexpr int ROW_BYTES = 128;                     // one swizzled row: 64 halves
constexpr int X_BYTES = TOKENS * ROW_BYTES;        // the tokens' box: TOKENS rows of 64 k
constexpr int W_BOX_BYTES = BK * ROW_BYTES;        // a weights' box: BK rows of 64 n
constexpr int STAGE_BYTES = X_BYTES + CONSUMERS * W_BOX_BYTES;
// In place (B_IN_PLACE): the producer warp's lanes copy each weight row's aligned window — the whole
// 16-byte words its 64 columns lie in, 128 bytes or 144 where the row starts off a word — by 16-byte
// cp.async copies (an aligned source, no tensor map, so no rule on the row stride) into a raw ring of
// RAW_STAGES stages; four shifter warps move each 16-byte chunk into its place in the boxes (byte_window,
// then TMA's 128-byte swizzle), which the consumers read as they read TMA's. The raw ring holds the bytes
// in flight that cover HBM's latency, as the box ring does for TMA; the box ring then only decouples the
// shift from the wgmmas: three stages (below). The tokens' box rides in the raw stage too (TMA, copied to the box
// stage by the shifters): loaded into the box stage as the shifters took it, each stage waited a TMA round
// trip (212 µs at 1 × 50257 × 1600 BF16, DRAM at 16 %, c39). Tried first (same shape, ncu, c37/c38): the
// rows loaded into loader warps' registers (two teams of four warps, four row groups a batch): 234 µs,
// DRAM at 14.6 %, warps stalled on the loads (long scoreboard 21 per issue); each row's window by one bulk
// copy (cp.async.bulk, 144 bytes, 128 a stage): 315 µs, DRAM at 10.8 %.
// One producer warp issuing every copy of the block was the bottleneck at 1 × 50257 × 1600 BF16 (c45, ncu
// source page at 3ef897a, 121 µs): it never waited for a free raw stage, busy issuing its ~340 instructions
// a stage (36 cp.async, 36 ninth words, their addresses), while the shifters waited on the raw stages and
// the consumers on the boxes; PRODUCER_WARPS share the rows (THREADS holds the first; the launch adds the
// others and the shifters). The box ring took three stages instead of two: with two, a stage came free
// only when the consumers had taken the next, so the shifters waited on the consumers every stage (585 of
// their 1,779 samples on the box ring's empty barrier).
constexpr int SHIFTER_WARPS = B_IN_PLACE ? 4 : 0;
constexpr int PRODUCER_WARPS = B_IN_PLACE ? 4 : 1;
constexpr int BLOCK_THREADS = THREADS + 32 * (SHIFTER_WARPS + PRODUCER_WARPS - 1);
constexpr int RING = B_IN_PLACE ? 3 : STAGES;        // the stages of boxes the consumers read
constexpr int WEIGHT_ROWS = CONSUMERS * BK;          // weight rows a stage: BK of each box
constexpr int RAW_ROW = 144;                         // a row's window, at most 9 words
constexpr int RAW_BYTES = X_BYTES + WEIGHT_ROWS * RAW_ROW;  // a raw stage: the tokens' box (TMA), the windows
constexpr int SMEM_LIMIT = 232448;                   // sm_90's dynamic shared memory a block (227 KiB)
constexpr int RING_BYTES = RING * (STAGE_BYTES + 16);  // with a full and an empty barrier a stage
constexpr int RAW_FIT = (SMEM_LIMIT - 1024 - RING_BYTES) / (RAW_BYTES + 16);
constexpr int RAW_STAGES = B_IN_PLACE ? (STAGES < RAW_FIT ? STAGES : RAW_FIT) : 1;  // 1 with TMA: no raw ring
// The rings and their barriers, 1024 bytes to round the base up to the swizzle atom (study/ops/hgemm.py,
// skinny_smem, computes the same figure).
constexpr int SMEM_BYTES = RING_BYTES + B_IN_PLACE * RAW_STAGES * (RAW_BYTES + 16) + 1024;
static_assert(!B_IN_PLACE || RAW_STAGES >= 2, "at least two raw stages fit");
static_assert(WEIGHT_ROWS % 32 == 0, "whole rows for each producer lane, whole groups of 16 for the shifters");
static_assert(128 * CONSUMERS == 2 * BN, "sum_tile: two consumer threads a column of the tile");
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

// Weight row k's 64 columns from n as the producer copies them: its first byte's address (`at`) and the
// bytes of its aligned window, 128, or 144 where it starts off a word; 0 where the row is past K, passes N
// or its window leaves the matrix (the last tile, the last slice, the matrix's first and last bytes): the
// shifters then read those elements one by one, zeros past K and N as TMA fills them. `end`: one past
// the matrix's last byte.
__device__ __forceinline__ unsigned weight_window(const storage_t* __restrict__ B, long long ldb, int K, int N, int k,
                                                  int n, unsigned long long end, unsigned long long& at) {
    at = (unsigned long long)B + ((long long)k * ldb + n) * sizeof(storage_t);
    const unsigned long long lo = at & ~15ull;
    const unsigned bytes = at & 15 ? 144 : 128;
    return k < K && n + 64 <= N && lo >= (unsigned long long)B && lo + bytes <= end ? bytes : 0;
}

// A producer lane's copies of slice s of the tile at column n0 into the raw stage at `raw` (row i of the
// stage is row i % BK of box i / BK, its window at i · RAW_ROW): 16-byte cp.async copies of the windows'
// words, 8 lanes a row (word lane % 8, and the ninth by the eighth lane), four rows an instruction
// (coalesced), producer warp p the groups of four rows p, p + PRODUCER_WARPS, …; the lane's arrival on
// `bar` comes when its copies have landed.
__device__ __forceinline__ void copy_weight_windows(const storage_t* __restrict__ B, long long ldb, int K, int N,
                                                    int s, int n0, int producer, int lane, unsigned raw,
                                                    unsigned bar, unsigned long long end) {
    const int word = lane % 8;
#pragma unroll 4
    for (int g = producer; g < WEIGHT_ROWS / 4; g += PRODUCER_WARPS) {
        const int row = g * 4 + lane / 8;
        unsigned long long at;
        const unsigned bytes = weight_window(B, ldb, K, N, s * BK + row % BK, n0 + row / BK * 64, end, at);
        if (!bytes) continue;
        const unsigned dst = raw + X_BYTES + row * RAW_ROW + word * 16;
        const unsigned long long src = (at & ~15ull) + word * 16;
        cp_async_16_shared(dst, reinterpret_cast<const void*>(src), true);
        if (word == 7 && bytes > 128) cp_async_16_shared(dst + 16, reinterpret_cast<const void*>(src + 16), true);
    }
    cp_async_arrive_noinc(bar);
}

// Whether every window of slice s of the tile at n0 is whole: the slice's first row at the tile's first
// column and its last row at the tile's last 64 columns both pass weight_window (inside K and N, the
// window inside the matrix); addresses grow with k and n, so those two windows bound the others. Then
// the producer and the shifters take the stage by running addresses (copy_whole_stage,
// shift_whole_stage) instead of asking weight_window row by row. Uniform over the block.
__device__ __forceinline__ bool whole_stage(const storage_t* __restrict__ B, long long ldb, int K, int N, int s,
                                            int n0, unsigned long long end) {
    unsigned long long at;
    return weight_window(B, ldb, K, N, s * BK, n0, end, at) &&
           weight_window(B, ldb, K, N, s * BK + BK - 1, n0 + BN - 64, end, at);
}

// copy_weight_windows for a whole stage: the same copies to the same places, each lane's address running
// 4 · PRODUCER_WARPS rows a copy, so that a copy is an add, a mask and the cp.async. Per row,
// weight_window's products and bounds cost 32 PTX instructions a copy, and one warp issues every copy of
// the block: at 1 × 50257 × 1600 it was issue-bound, 2.8 µs a stage with DRAM at 16 % (c40).
__device__ __forceinline__ void copy_whole_stage(const storage_t* __restrict__ B, long long ldb, int s, int n0,
                                                 int producer, int lane, unsigned raw, unsigned bar) {
    static_assert(BK / 4 % PRODUCER_WARPS == 0, "each producer warp the same groups of four rows of a box");
    const int word = lane % 8, first = producer * 4 + lane / 8;  // the lane's first row of each box
    const unsigned long long step = 4ull * PRODUCER_WARPS * ldb * sizeof(storage_t);
    const unsigned dst0 = raw + X_BYTES + first * RAW_ROW + word * 16;
#pragma unroll
    for (int c = 0; c < CONSUMERS; ++c) {
        // word `word` of the row's window starts at (at & ~15): `at` carries the row's misalignment
        unsigned long long at =
            (unsigned long long)(B + (long long)(s * BK + first) * ldb + n0 + c * 64) + word * 16;
#pragma unroll
        for (int g = 0; g < BK / 4 / PRODUCER_WARPS; ++g, at += step) {
            const unsigned dst = dst0 + (c * BK + g * 4 * PRODUCER_WARPS) * RAW_ROW;
            const char* src = reinterpret_cast<const char*>(at & ~15ull);
            cp_async_16_shared(dst, src, true);
            if (word == 7 && (at & 15)) cp_async_16_shared(dst + 16, src + 16, true);
        }
    }
    cp_async_arrive_noinc(bar);
}

// A shifter thread's chunks of slice s (16-byte chunk `chunk` of rows first, first + 16, …) from the raw
// stage into the boxes at `boxes`, as TMA's 128-byte swizzle lays them out (chunk c of box row r at chunk
// c ^ r % 8), so that the consumers' descriptors read them unchanged.
__device__ __forceinline__ void shift_weights(const storage_t* __restrict__ B, long long ldb, int K, int N, int s,
                                              int n0, int first, int chunk, unsigned raw, unsigned boxes,
                                              unsigned long long end) {
#pragma unroll 4
    for (int g = 0; g < WEIGHT_ROWS / 16; ++g) {
        const int row = g * 16 + first, r = row % BK, k = s * BK + r, n = n0 + row / BK * 64;
        unsigned long long at;
        uint4 v;
        if (weight_window(B, ldb, K, N, k, n, end, at)) {
            const unsigned word = raw + X_BYTES + row * RAW_ROW + chunk * 16;
            const int shift = (int)(at & 15);
            v = ld_shared_v4(word);
            if (shift) v = byte_window(v, ld_shared_v4(word + 16), shift);
        } else {
            unsigned h[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                const int col = n + 8 * chunk + i;
                h[i] = k < K && col < N ? B[(long long)k * ldb + col] : 0u;
            }
            v = make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
        }
        st_shared_v4(boxes + row / BK * W_BOX_BYTES + r * ROW_BYTES + ((chunk ^ r % 8) << 4), v);
    }
}

// shift_weights for a whole stage: one misalignment for all the thread's rows (rows 16 apart lie 32 · ldb
// bytes apart and boxes 128 bytes, multiples of 16), the swizzled place from the thread's first row alone
// (rows 16 apart share r % 8), and four rows' words loaded before any is shifted, so that their
// shared-memory latencies overlap (the loads and stores are ordered asm). byte_window at shift 0 returns
// the low word: no branch; the high word read then is the slot's ninth, inside the stage.
__device__ __forceinline__ void shift_whole_stage(const storage_t* __restrict__ B, long long ldb, int s, int n0,
                                                  int first, int chunk, unsigned raw, unsigned boxes) {
    constexpr int GROUPS = BK / 16;  // a box's rows of this thread: first, first + 16, …
    constexpr int BATCH = 4;
    const int shift = (int)((unsigned long long)(B + (long long)(s * BK + first) * ldb + n0) & 15);
    const unsigned word0 = raw + X_BYTES + first * RAW_ROW + chunk * 16;
    const unsigned box0 = boxes + first * ROW_BYTES + ((chunk ^ first % 8) << 4);
#pragma unroll
    for (int g0 = 0; g0 < CONSUMERS * GROUPS; g0 += BATCH) {
        uint4 lo[BATCH], hi[BATCH];
#pragma unroll
        for (int i = 0; i < BATCH; ++i) {
            const unsigned word = word0 + (g0 + i) * 16 * RAW_ROW;
            lo[i] = ld_shared_v4(word);
            hi[i] = ld_shared_v4(word + 16);
        }
#pragma unroll
        for (int i = 0; i < BATCH; ++i) {
            const int g = g0 + i, box = g / GROUPS, r16 = g % GROUPS;  // k row r16 · 16 + first of box `box`
            st_shared_v4(box0 + box * W_BOX_BYTES + r16 * 16 * ROW_BYTES, byte_window(lo[i], hi[i], shift));
        }
    }
}

// With splits, C's columns n0 … n0 + BN − 1 from the tile's FP32 planes (each M × N, rows ldp apart), summed
// in plane order whichever unit sums them (the same bits every launch), `to_c` then applied: by the
// consumers of the tile's last unit to finish, while the producer and shifters already load its next.
// The 2 · BN consumer threads: thread t sums column n0 + t % BN of rows t / BN, + 2, + 4 … (coalesced
// along C's rows), CHUNK rows of BATCH planes loaded before any is added: 16 loads in flight, so that a
// sum costs about splits / BATCH round trips to L2 a chunk, not one an element and plane (summed one
// element at a time, 16 × 1600 × 6400, 10 splits of 8 elements a thread, took 18.4 µs against 14.4 with
// the second kernel, c42), and so that the loads' addresses and values fit in registers (32 rows of 4
// planes took 168 registers at TOKENS = 64, the kernel 64 without the sum). Loads through L2
// (ld.global.cg): the other units' planes were written on other SMs.
template <class ToC>
__device__ __forceinline__ void sum_tile(const float* __restrict__ partial, storage_t* __restrict__ C, int M, int N,
                                         int ldp, int ldc, int splits, int n0, int thread, ToC to_c) {
    constexpr int ROWS = TOKENS / 2;                 // a thread's rows: TOKENS rows over 2 · BN threads
    constexpr int CHUNK = ROWS < 8 ? ROWS : 8;       // rows summed together
    constexpr int BATCH = 16 / CHUNK;                // planes loaded at once
    const int col = n0 + thread % BN, row0 = thread / BN;
    if (col >= N) return;
    const size_t plane = (size_t)M * ldp;
#pragma unroll
    for (int c = 0; c < ROWS / CHUNK; ++c) {
        const int first = row0 + 2 * CHUNK * c;  // the chunk's rows: first, first + 2, …
        if (first >= M) break;
        const float* at = partial + (size_t)first * ldp + col;
        float sum[CHUNK];
#pragma unroll
        for (int i = 0; i < CHUNK; ++i) sum[i] = first + 2 * i < M ? __ldcg(at + (size_t)2 * i * ldp) : 0.f;
#pragma unroll BATCH
        for (int s = 1; s < splits; ++s) {
#pragma unroll
            for (int i = 0; i < CHUNK; ++i)
                if (first + 2 * i < M) sum[i] += __ldcg(at + s * plane + (size_t)2 * i * ldp);
        }
#pragma unroll
        for (int i = 0; i < CHUNK; ++i)
            if (first + 2 * i < M) C[(size_t)(first + 2 * i) * ldc + col] = to_c(sum[i], col);
    }
}

// The kernel's body: `to_c` maps each accumulator (and its column) to what C holds when the plan has one
// split (ToStorage: v10; a bias and ReLU: the fused op's v4); with more, the FP32 planes take the
// accumulators as they are and the tile's last unit to finish sums them into C (sum_tile) — one launch:
// a second kernel for the sum costs a launch and a pass over C, which at decode sizes (a few µs of
// weights) is much of the time (1 × 6400 × 1600 BF16 13.6 µs with it, 11.8 without, c42).
// `tile_done`: a count of finished units per tile, zero before the first launch; the summing unit sets
// it back to zero for the next.
template <class ToC>
__device__ __forceinline__ void skinny_m_gemm(const TensorMap* map_a, const TensorMap* map_b, storage_t* __restrict__ C,
                                              int M, int N, int K, int ldc, int splits, int slices_per,
                                              float* __restrict__ partial, int ldp, const storage_t* __restrict__ B,
                                              long long ldb, unsigned* __restrict__ tile_done, ToC to_c) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned raw_base = base + RING * STAGE_BYTES;          // in place: the raw ring after the boxes
    const unsigned full = raw_base + B_IN_PLACE * RAW_STAGES * RAW_BYTES, empty = full + RING * 8;
    const unsigned raw_full = empty + RING * 8, raw_empty = raw_full + RAW_STAGES * 8;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int slices = CDIV(K, BK), units = CDIV(N, BN) * splits;
    const unsigned long long end = (unsigned long long)(B + (long long)(K - 1) * ldb + N);

    if (tid == 0) {
        if (blockDim.x != BLOCK_THREADS) __trap();  // the launch adds the shifter and producer warps to THREADS
        tma_prefetch_map(map_a);
        if (!B_IN_PLACE) tma_prefetch_map(map_b);
        // a box stage: one release per consumer warp; filled by TMA's bytes announced in one arrival, or in
        // place by each shifter thread's arrival. A raw stage: filled by the tokens' TMA bytes announced in
        // one arrival and an arrival from each producer lane once its copies have landed; released by each
        // shifter thread.
        mbar_init_ring(full, empty, RING, CONSUMERS * 4, B_IN_PLACE ? 32 * SHIFTER_WARPS : 1);
        if (B_IN_PLACE) mbar_init_ring(raw_full, raw_empty, RAW_STAGES, 32 * SHIFTER_WARPS, 32 * PRODUCER_WARPS + 1);
    }
    __syncthreads();

    if (B_IN_PLACE && warp >= 4 * CONSUMERS + PRODUCER_WARPS) {  // a shifter warp: raw stage → boxes
        const int shifter = tid - 32 * (4 * CONSUMERS + PRODUCER_WARPS);
        int use = 0;  // slices so far, over all units, as the producer and the consumers count them
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const int n0 = unit / splits * BN, s0 = unit % splits * slices_per, s1 = min(slices, s0 + slices_per);
            for (int s = s0; s < s1; ++s, ++use) {
                const int rs = use % RAW_STAGES, bs = use % RING;
                const unsigned boxes = base + bs * STAGE_BYTES, bar = full + bs * 8, raw = raw_base + rs * RAW_BYTES;
                mbar_wait(raw_full + rs * 8, (use / RAW_STAGES) & 1);
                if (use >= RING) mbar_wait(empty + bs * 8, (use / RING - 1) & 1);
                // the tokens' box as TMA swizzled it (both boxes on 1024-byte atoms), then the weights
                for (int i = shifter; i < X_BYTES / 16; i += 32 * SHIFTER_WARPS)
                    st_shared_v4(boxes + i * 16, ld_shared_v4(raw + i * 16));
                if (whole_stage(B, ldb, K, N, s, n0, end))
                    shift_whole_stage(B, ldb, s, n0, shifter / 32 * 4 + lane / 8, lane % 8, raw, boxes + X_BYTES);
                else
                    shift_weights(B, ldb, K, N, s, n0, shifter / 32 * 4 + lane / 8, lane % 8, raw, boxes + X_BYTES,
                                  end);
                mbar_arrive(raw_empty + rs * 8);  // its raw chunks are read (their values are stored)
                fence_async_shared();              // the stores, visible to wgmma (the async proxy), then the arrival
                mbar_arrive(bar);
            }
        }
        return;
    }

    if (warp >= 4 * CONSUMERS) {  // a producer warp: with TMA one lane issues every copy; in place, all
        const int producer = warp - 4 * CONSUMERS;
        if (!B_IN_PLACE && lane != 0) return;
        int use = 0;  // slices issued so far, over all units: stage use % STAGES, its round use / STAGES
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const int n0 = unit / splits * BN, s0 = unit % splits * slices_per;
            const int s1 = min(slices, s0 + slices_per);  // the launch plans no empty range
            for (int s = s0; s < s1; ++s, ++use) {
                if (B_IN_PLACE) {
                    const int rs = use % RAW_STAGES;
                    const unsigned raw = raw_base + rs * RAW_BYTES, bar = raw_full + rs * 8;
                    if (use >= RAW_STAGES) mbar_wait(raw_empty + rs * 8, (use / RAW_STAGES - 1) & 1);
                    if (producer == 0 && lane == 0) {  // the tokens ride in the raw stage, as far ahead as the weights
                        mbar_arrive_expect_tx(bar, X_BYTES);
                        tma_load_2d(raw, map_a, s * BK, 0, bar);
                    }
                    if (whole_stage(B, ldb, K, N, s, n0, end))
                        copy_whole_stage(B, ldb, s, n0, producer, lane, raw, bar);
                    else
                        copy_weight_windows(B, ldb, K, N, s, n0, producer, lane, raw, bar, end);
                    continue;
                }
                const int stage = use % STAGES;
                const unsigned at = base + stage * STAGE_BYTES, bar = full + stage * 8;
                if (use >= STAGES) mbar_wait(empty + stage * 8, (use / STAGES - 1) & 1);  // its last round released
                mbar_arrive_expect_tx(bar, STAGE_BYTES);  // whole boxes count, zero-filled parts included
                tma_load_2d(at, map_a, s * BK, 0, bar);  // the tokens: rows 0 … TOKENS-1, 64 k
#pragma unroll
                for (int c = 0; c < CONSUMERS; ++c)
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
            const int stage = use % RING;
            const unsigned at = base + stage * STAGE_BYTES;
            mbar_wait(full + stage * 8, (use / RING) & 1);
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
            if (s > s0 && thread % 32 == 0) mbar_arrive(empty + (use - 1) % RING * 8);
        }
        wgmma_wait<0>();
        fence_registers(acc);
        if (thread % 32 == 0) mbar_arrive(empty + (use - 1) % RING * 8);  // the unit's last slice
        const int cols = n0 + consumer * 64;
        if (splits == 1) {  // uniform over the grid
            store_transposed(acc, C, M, N, (size_t)ldc, cols, thread, to_c);
            continue;
        }
        store_transposed(acc, partial + (size_t)(unit % splits) * M * ldp, M, N, (size_t)ldp, cols, thread, AsFloat{});
        // Each thread's plane stores, visible on the GPU before the unit counts itself done: every thread's
        // fence, then the consumers' barrier, then one count (the count inside the first barrier would race
        // the other warps' stores); the second barrier tells all whether the count was the last, and the
        // unit that finds the others done fences again before it reads their planes (the
        // threadfence-reduction pattern of the CUDA programming guide).
        __threadfence();
        named_barrier(1, 128 * CONSUMERS);
        const unsigned tile = unit / splits;
        const bool last =
            named_barrier_or(1, 128 * CONSUMERS, tid == 0 && atomicAdd(&tile_done[tile], 1u) == splits - 1);
        if (!last) continue;
        __threadfence();
        sum_tile(partial, C, M, N, ldp, ldc, splits, n0, tid, to_c);
        if (tid == 0) tile_done[tile] = 0;  // every split has counted: ready for the next launch
    }
}

// The body of hgemm v10 (docs/ladders/hgemm.md, v10) as a function of what its C store does: the fused
// GEMM + bias + ReLU's v4 (cuda_kernels/gemm_bias_relu/04_skinny_m.cu) is this kernel with a bias and a
// ReLU between the accumulators and their rounding, not a copy of it; bgemm v3
// (cuda_kernels/bgemm/03_batched_skinny_m.cu) is it over a batch (Rank 3: the maps' third dimension the
// entry). Needs common.cuh, hopper.cuh and v10's config macros (BN, BK, STAGES, THREADS, and TOKENS and
// B_IN_PLACE from the launch); the why of each step is in v10's header.
#pragma once

#include "unaligned_rows.cuh"

// Rows of A (tokens) a tile holds: the launch defines the smallest of 8, 16, 32, 64 that holds M.
// Without it (a compile of the config alone) the widest, whose shared memory bounds the space.
#ifndef TOKENS
#define TOKENS 64
#endif

// 1 (the launch) where B's rows are not 16 bytes apart by a multiple, so that no tensor map of B can
// describe them: B is then read by eight tensor maps, one per residue of k mod 8 (below). Without it, one.
#ifndef B_IN_PLACE
#define B_IN_PLACE 0
#endif

constexpr int CONSUMERS = BN / 64;                 // consumer warpgroups, one per 64 weight columns
constexpr int ROW_BYTES = 128;                     // one swizzled row: 64 halves
constexpr int X_BYTES = TOKENS * ROW_BYTES;        // the tokens' box: TOKENS rows of 64 k
constexpr int W_BOX_BYTES = BK * ROW_BYTES;        // a weights' box: BK rows of 64 n
// In place (B_IN_PLACE): rows k and k + 8 of B lie 16 · ldb bytes apart, a multiple of 16 whatever ldb
// is, so the rows of one residue j = k mod 8 form a matrix TMA can read: its map starts at row j's
// first byte rounded down to 16 bytes, `offset[j]` elements before it (study/ops/hgemm.py, weight_maps).
// TMA starts a box only on a 16-byte boundary of the row, so map j's box for columns n … n + 63 starts at
// the row's element n − offset[j] and is 72 wide (144 bytes, unswizzled): the stage's raw part holds, for
// each weights' box, eight such boxes of 8 rows (k = 8i + j at raw row 8j + i). Four shifter warps move
// each row's 64 elements, offset[j] in, into the weights' box in TMA's 128-byte swizzle (shift_residues),
// one residue a warp at a time, so that a warp's shift is one figure. The tokens' box is TMA's as with one map.
// Measured before (c45/c46, 1 × 50257 × 1600 BF16): each weight row's aligned 16-byte words copied by
// cp.async from one producer warp (or four) and shifted on chip, 121 µs, DRAM at 28 %; TMA's own path at
// N = 50264 took 42.8 µs (c47). Eight maps with the offset in the column coordinate: illegal instruction
// (c48; a box's first column must lie on 16 bytes).
constexpr int SHIFTER_WARPS = B_IN_PLACE ? 4 : 0;
constexpr int BLOCK_THREADS = THREADS + 32 * SHIFTER_WARPS;
constexpr int RESIDUES = TMA_RESIDUES;                      // maps in place: k mod 8
constexpr int RAW_ROW = 144;                                // a raw row: 72 elements from a 16-byte boundary
constexpr int RAW_BYTES = B_IN_PLACE * CONSUMERS * BK * RAW_ROW;
constexpr int STAGE_BYTES = X_BYTES + CONSUMERS * W_BOX_BYTES + RAW_BYTES;
constexpr int BARRIERS = 2 + B_IN_PLACE;           // full, empty and, in place, loaded (TMA's bytes): 8 bytes each
constexpr int RING = stages_that_fit(STAGES, STAGE_BYTES + 8 * BARRIERS);  // in place, fewer may fit
// The ring and its barriers, 1024 bytes to round the base up to the swizzle atom (study/ops/hgemm.py,
// skinny_smem, computes the same figure).
constexpr int SMEM_BYTES = RING * (STAGE_BYTES + 8 * BARRIERS) + 1024;
static_assert(RING >= 2, "at least two stages fit");
static_assert(128 * CONSUMERS == 2 * BN, "sum_tile: two consumer threads a column of the tile");
static_assert(TOKENS == 8 || TOKENS == 16 || TOKENS == 32 || TOKENS == 64, "wgmma_m64k16_ta: N of 8, 16, 32, 64");
static_assert(BK == 64, "a 128-byte swizzled row holds 64 halves; in place, eight residues of eight rows");
static_assert(BN % 64 == 0 && BN >= 64 && BN <= 256, "one consumer warpgroup per 64 weight columns, 1–4");
static_assert(THREADS == 128 * CONSUMERS + 32, "the consumer warpgroups, then one producer warp");
static_assert(STAGES >= 2, "at least two stages");
static_assert(X_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0, "every box starts on a swizzle atom");
static_assert(8 * RAW_ROW % 128 == 0, "each raw box of 8 rows on 128 bytes");

// B's tensor maps (study/ops/hgemm.py, weight_maps): with TMA map[0] is B's (boxes of BK rows); in place
// map[j] holds the rows k ≡ j (mod 8) (boxes of 8 rows × 72, unswizzled) and offset[j] is the column of
// row j's first element in it.
using WeightMaps = ResidueMaps;

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

// In place: the stage's raw boxes into the weights' boxes at `boxes`, as TMA's 128-byte swizzle lays
// them out (chunk q of box row r at q ^ r % 8; row 8i + j of a box is k = 8i + j, whose chunk lands at
// q ^ j). Raw box g (weights' box g / 8, residue j = g % 8) holds rows k = 8i + j, 72 elements from
// offset[j] before column n; a lane takes row i = lane / 4 and chunks lane % 4 and lane % 4 + 4 of a
// shifter warp's residues, so that each shift (byte_window) has one figure across the warp.
__device__ __forceinline__ void shift_residues(unsigned raw, unsigned boxes, const WeightMaps* maps, int shifter,
                                               int lane) {
    const int i = lane / 4;
    for (int g = shifter; g < CONSUMERS * RESIDUES; g += SHIFTER_WARPS) {
        const int c = g / RESIDUES, j = g % RESIDUES, shift = 2 * maps->offset[j];
        const unsigned from = raw + (g * 8 + i) * RAW_ROW;
        const unsigned to = boxes + c * W_BOX_BYTES + (8 * i + j) * ROW_BYTES;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int q = lane % 4 + 4 * h;
            const uint4 lo = ld_shared_v4(from + 16 * q), hi = ld_shared_v4(from + 16 * q + 16);
            st_shared_v4(to + ((q ^ j) << 4), byte_window(lo, hi, shift));
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
// Rank 3 (bgemm v3): A's and B's maps are batches of `batch` matrices, the entry their third dimension (a box
// never crosses into the next entry, so each entry's tails load as zeros); the units run entry by entry (an
// entry's tiles × splits, then the next's), C's entries lie `c_entry` elements apart, an entry's planes
// (splits × M × ldp floats) and its tiles' counts after the previous entry's. B is read by one map (B_IN_PLACE 0).
template <class ToC, int Rank = 2>
__device__ __forceinline__ void skinny_m_gemm(const TensorMap* map_a, const WeightMaps* maps_b, storage_t* __restrict__ C,
                                              int M, int N, int K, int ldc, int splits, int slices_per,
                                              float* __restrict__ partial, int ldp, unsigned* __restrict__ tile_done,
                                              ToC to_c, int batch = 1, long long c_entry = 0) {
    static_assert(Rank == 2 || Rank == 3, "one product or a batch");
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned full = base + RING * STAGE_BYTES, empty = full + RING * 8, loaded = empty + RING * 8;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int tiles = CDIV(N, BN), per_entry = tiles * splits;
    const int slices = CDIV(K, BK), units = (Rank == 3 ? batch : 1) * per_entry;
    // unit u: entry u / per_entry (0 for one product), then its tile and split as v10 numbers them
    auto entry_of = [&](int unit) { return Rank == 3 ? unit / per_entry : 0; };
    auto local_of = [&](int unit) { return Rank == 3 ? unit % per_entry : unit; };

    if (tid == 0) {
        if (blockDim.x != BLOCK_THREADS) __trap();  // the launch adds the shifter warps' threads to THREADS
        // a batch's B is read by one 3-D map (its launch stages rows TMA cannot read): the residue maps are
        // written for one matrix, so a batched build with B_IN_PLACE (compiled by the tests) stops here
        if (Rank == 3 && B_IN_PLACE) __trap();
        tma_prefetch_map(map_a);
        for (int j = 0; j < (B_IN_PLACE ? RESIDUES : 1); ++j) tma_prefetch_map(&maps_b->map[j]);
        // empty: one release per consumer warp. full: TMA's bytes announced in one arrival or, in place, an
        // arrival from each shifter thread once the weights are in their boxes; loaded (in place): TMA's
        // bytes of the tokens and the raw weights, announced in one arrival.
        if (B_IN_PLACE)
            for (int s = 0; s < RING; ++s) mbar_init(loaded + s * 8, 1);
        mbar_init_ring(full, empty, RING, CONSUMERS * 4, B_IN_PLACE ? 32 * SHIFTER_WARPS : 1);
    }
    __syncthreads();

    if (B_IN_PLACE && warp > 4 * CONSUMERS) {  // a shifter warp: the raw weights → their boxes
        const int shifter = warp - (4 * CONSUMERS + 1);
        int use = 0;  // slices so far, over all units, as the producer and the consumers count them
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const int s0 = unit % splits * slices_per, s1 = min(slices, s0 + slices_per);
            for (int s = s0; s < s1; ++s, ++use) {
                const int stage = use % RING;
                const unsigned at = base + stage * STAGE_BYTES;
                // loaded: this round's TMA bytes, issued after the consumers released the stage's last round
                mbar_wait(loaded + stage * 8, (use / RING) & 1);
                shift_residues(at + STAGE_BYTES - RAW_BYTES, at + X_BYTES, maps_b, shifter, lane);
                fence_async_shared();  // the stores, visible to wgmma (the async proxy), then the arrival
                mbar_arrive(full + stage * 8);
            }
        }
        return;
    }

    if (warp == 4 * CONSUMERS) {  // the producer warp: one lane issues every copy
        if (lane != 0) return;
        int use = 0;  // slices issued so far, over all units: stage use % RING, its round use / RING
        for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
            const int entry = entry_of(unit), local = local_of(unit);
            const int n0 = local / splits * BN, s0 = local % splits * slices_per;
            const int s1 = min(slices, s0 + slices_per);  // the launch plans no empty range
            for (int s = s0; s < s1; ++s, ++use) {
                const int stage = use % RING;
                const unsigned at = base + stage * STAGE_BYTES;
                if (use >= RING) mbar_wait(empty + stage * 8, (use / RING - 1) & 1);  // its last round released
                if (B_IN_PLACE) {
                    const unsigned bar = loaded + stage * 8;
                    mbar_arrive_expect_tx(bar, X_BYTES + RAW_BYTES);  // whole boxes, zero-filled parts included
                    tma_load_2d(at, map_a, s * BK, 0, bar);  // the tokens, as with one map
#pragma unroll
                    for (int g = 0; g < CONSUMERS * RESIDUES; ++g)  // rows k = s · BK + 8i + j of map j: its rows s · 8 …
                        tma_load_2d(at + STAGE_BYTES - RAW_BYTES + g * 8 * RAW_ROW, &maps_b->map[g % RESIDUES],
                                    n0 + g / RESIDUES * 64, s * (BK / RESIDUES), bar);
                    continue;
                }
                const unsigned bar = full + stage * 8;
                mbar_arrive_expect_tx(bar, STAGE_BYTES);  // whole boxes count, zero-filled parts included
                if constexpr (Rank == 3) {
                    tma_load_3d(at, map_a, s * BK, 0, entry, bar);
#pragma unroll
                    for (int c = 0; c < CONSUMERS; ++c)
                        tma_load_3d(at + X_BYTES + c * W_BOX_BYTES, &maps_b->map[0], n0 + c * 64, s * BK, entry, bar);
                    continue;
                }
                tma_load_2d(at, map_a, s * BK, 0, bar);  // the tokens: rows 0 … TOKENS-1, 64 k
#pragma unroll
                for (int c = 0; c < CONSUMERS; ++c)
                    tma_load_2d(at + X_BYTES + c * W_BOX_BYTES, &maps_b->map[0], n0 + c * 64, s * BK, bar);
            }
        }
        return;
    }

    const int consumer = warp / 4, thread = tid % 128;
    int use = 0;
    for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
        const int entry = entry_of(unit), local = local_of(unit);
        const int n0 = local / splits * BN, s0 = local % splits * slices_per;
        const int s1 = min(slices, s0 + slices_per);
        float acc[TOKENS / 2];
#pragma unroll
        for (int i = 0; i < TOKENS / 2; ++i) acc[i] = 0.f;
        for (int s = s0; s < s1; ++s, ++use) {
            const int stage = use % RING;
            const unsigned at = base + stage * STAGE_BYTES;
            mbar_wait(full + stage * 8, (use / RING) & 1);
            if (B_IN_PLACE) mbar_wait(loaded + stage * 8, (use / RING) & 1);  // the tokens, as TMA wrote them
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
        storage_t* const c = Rank == 3 ? C + entry * c_entry : C;  // this entry's C, planes and counts
        float* const planes = Rank == 3 ? partial + (size_t)entry * splits * M * ldp : partial;
        unsigned* const done = Rank == 3 ? tile_done + entry * tiles : tile_done;
        if (splits == 1) {  // uniform over the grid
            store_transposed(acc, c, M, N, (size_t)ldc, cols, thread, to_c);
            continue;
        }
        store_transposed(acc, planes + (size_t)(local % splits) * M * ldp, M, N, (size_t)ldp, cols, thread, AsFloat{});
        // Each thread's plane stores, visible on the GPU before the unit counts itself done: every thread's
        // fence, then the consumers' barrier, then one count (the count inside the first barrier would race
        // the other warps' stores); the second barrier tells all whether the count was the last, and the
        // unit that finds the others done fences again before it reads their planes (the
        // threadfence-reduction pattern of the CUDA programming guide).
        __threadfence();
        named_barrier(1, 128 * CONSUMERS);
        const unsigned tile = local / splits;
        const bool last =
            named_barrier_or(1, 128 * CONSUMERS, tid == 0 && atomicAdd(&done[tile], 1u) == splits - 1);
        if (!last) continue;
        __threadfence();
        sum_tile(planes, c, M, N, ldp, ldc, splits, n0, tid, to_c);
        if (tid == 0) done[tile] = 0;  // every split has counted: ready for the next launch
    }
}

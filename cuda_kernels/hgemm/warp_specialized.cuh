// The body of hgemm v8 (docs/ladders/hgemm.md, v8) as a function of its epilogue: the fused GEMM +
// bias + ReLU rung (cuda_kernels/gemm_bias_relu/02_fused_wgmma.cu) is this kernel with one more
// step between the accumulators and their rounding, not a copy of it. Needs common.cuh, hopper.cuh
// and v8's config macros (BM, BN, BK, STAGES, GROUP, THREADS); the why of each step is in v8's header.
// An epilogue is a small per-thread object: begin_tile(n0, N, thread) is called once per tile, after
// the last slice's wgmmas are issued and before they are waited for (so what it loads arrives while
// they run), and e(v, j, half) maps the accumulator of column n0 + 8j + 2t + half (t = lane % 4,
// j < BN/8, the wgmma fragment's column groups) to the value that is rounded and stored.
// Rank 3 (bgemm v1): the maps are batches of `batch` matrices, their third dimension the entry; the
// persistent walk goes over batch × rows × cols tiles, entry by entry (the blocks that run together
// share one entry's A and B in L2), and TMA's boxes stay inside their entry.
// Split (hgemm v9): the walk goes over tiles × `splits` units, unit u the K slices
// [(u % splits)·slices_per, +slices_per) of tile u / splits, and a unit's FP32 accumulators go to
// plane u % splits of `partial` (rows `ldp` floats apart) instead of C; a second kernel sums the
// planes. Without it the code is v8's as it was (if constexpr).
// Pair (hgemm v11): the grid is 2-block clusters, and a cluster walks pairs of tiles one above the
// other (block rows 2p and 2p + 1, one block column): each block loads its own A and half of the B
// slice both need, multicast into both (WgmmaStage::load_pair), so L2 serves B once per pair. A stage
// of either block is then written by both producers: it may be refilled only when the consumers of
// both blocks have released it, so each consumer warp arrives on its own empty barrier and on the
// other block's (twice the arrivals). Both blocks walk the same units, hence the same stage uses, and
// before it exits a block's producer waits for the last release of every stage (no arrival of the
// other block's is then still to come into this block's barriers); the multicasts into it were all
// consumed by its own consumers.
#pragma once

#include "cluster.cuh"
#include "hgemm/wgmma_tile.cuh"
#include "sgemm/grouped_order.cuh"

using Stage = WgmmaStage<BM, BN, BK>;
constexpr int CONSUMERS = BM / 64;  // consumer warpgroups, one per 64 rows
constexpr int BOX_BYTES = 64 * Stage::ROW_BYTES;  // a 64 × 64 box of C
// Stages, two C boxes per consumer, a full and an empty barrier per stage, plus 1024 bytes to round
// the base up to the swizzle atom (hgemm.shared_bytes computes the same figure).
constexpr int SMEM_BYTES = STAGES * Stage::BYTES + CONSUMERS * 2 * BOX_BYTES + STAGES * 16 + 1024;
static_assert(THREADS == 128 * (1 + CONSUMERS), "a producer warpgroup and one consumer warpgroup per 64 rows");
static_assert(STAGES >= 2, "at least two stages");

// The plain GEMM's epilogue: the accumulator as it is.
struct NoEpilogue {
    __device__ __forceinline__ void begin_tile(int, int, int) {}
    __device__ __forceinline__ float operator()(float v, int, int) const { return v; }
};

// The walk's first unit and step: a block's own (one block an SM), or, Pair, its cluster's (blocks 2c and
// 2c + 1 walk units c, c + gridDim.x / 2, …, each block the tile of its rank in every unit).
template <bool Pair>
__device__ __forceinline__ int first_unit() { return Pair ? blockIdx.x / 2 : blockIdx.x; }
template <bool Pair>
__device__ __forceinline__ int unit_step() { return Pair ? gridDim.x / 2 : gridDim.x; }

// A consumer warp's release of the stage whose empty barrier is `bar`: to this block's producer and,
// Pair, to the other block's, which writes into the stage too.
template <bool Pair>
__device__ __forceinline__ void release_stage(unsigned bar) {
    mbar_arrive(bar);
    if constexpr (Pair) mbar_arrive_remote(bar, cluster_rank() ^ 1);
}

// Tile `tile` of the walk: its entry z (0 for one matrix) and its block row and column; Pair: the walk
// is over pairs of block rows, and this block takes the row of its rank (past M when the rows are odd:
// zeros in, nothing stored).
template <int Rank, bool Pair = false>
__device__ __forceinline__ void walk_coords(int tile, int rows, int cols, int& z, int& bm, int& bn) {
    z = Rank == 3 ? tile / (rows * cols) : 0;
    grouped_tile_coords<GROUP>(Rank == 3 ? tile - z * (rows * cols) : tile, rows, cols, bm, bn);
    if constexpr (Pair) bm = 2 * bm + cluster_rank();
}

// A unit's accumulators as FP32 into its plane of the split-K workspace: the fragment of
// WgmmaStage::store (warp w: rows 16w + g and + 8, columns 8j + 2t and + 1), pairs as 8-byte stores
// (ldp even, the plane 8-byte aligned), a lone last column where N is odd; rows and columns past M
// and N are not stored.
__device__ __forceinline__ void store_partial(const float (&acc)[BN / 2], float* plane, int M, int N, int ldp,
                                              int m0, int n0, int thread) {
    const int lane = thread % 32, g = lane / 4, t = lane % 4;
    const int row = m0 + thread / 32 * 16 + g;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = n0 + j * 8 + 2 * t;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = row + 8 * h;
            if (r >= M || col >= N) continue;
            float* p = plane + (size_t)r * ldp + col;
            if (col + 1 < N) *reinterpret_cast<float2*>(p) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
            else p[0] = acc[4 * j + 2 * h];
        }
    }
}

template <class Epilogue, int Rank = 2, bool Split = false, bool Pair = false>
__device__ __forceinline__ void warp_specialized_gemm(const TensorMap* map_a, const TensorMap* map_b,
                                                      const TensorMap* map_c, int M, int N, int K,
                                                      Epilogue epilogue, int batch = 1, int splits = 1,
                                                      int slices_per = 0, float* partial = nullptr, int ldp = 0) {
    static_assert(!Split || Rank == 2, "split-K is written for one product");
    static_assert(!Pair || (Rank == 2 && !Split), "the pair walk is written for one product, unsplit");
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned boxes = base + STAGES * Stage::BYTES, full = boxes + CONSUMERS * 2 * BOX_BYTES;
    const unsigned empty = full + STAGES * 8;
    const int tid = threadIdx.x, wg = tid / 128;
    const int rows = Pair ? CDIV(CDIV(M, BM), 2) : CDIV(M, BM), cols = CDIV(N, BN), slices = CDIV(K, BK);
    const int tiles = Rank == 3 ? batch * rows * cols : rows * cols;  // Pair: rows of tile pairs
    const int units = Split ? tiles * splits : tiles;

    if (tid == 0) {
        tma_prefetch_map(map_a);
        tma_prefetch_map(map_b);
        tma_prefetch_map(map_c);
        // one release per consumer warp (Pair: of either block)
        mbar_init_ring(full, empty, STAGES, CONSUMERS * 4 * (Pair ? 2 : 1));
    }
    if constexpr (Pair) {  // the other block's barriers are initialised before anything is multicast to them
        cluster_arrive();
        cluster_wait();
    } else {
        __syncthreads();
    }

    if (wg == 0) {  // producer
        release_registers<40>();
        if (tid != 0) return;
        int use = 0;  // slices issued so far, over all tiles: stage use % STAGES, its round use / STAGES
        for (int unit = first_unit<Pair>(); unit < units; unit += unit_step<Pair>()) {
            int z, bm, bn, s0 = 0, s1 = slices;
            if constexpr (Split) {
                s0 = unit % splits * slices_per;
                s1 = min(slices, s0 + slices_per);  // the launch plans no empty range
            }
            walk_coords<Rank, Pair>(Split ? unit / splits : unit, rows, cols, z, bm, bn);
            for (int s = s0; s < s1; ++s, ++use) {
                const int stage = use % STAGES;
                if (use >= STAGES) mbar_wait(empty + stage * 8, (use / STAGES - 1) & 1);  // its last round released
                if constexpr (Pair)
                    Stage::load_pair(base + stage * Stage::BYTES, full + stage * 8, map_a, map_b, bm * BM, bn * BN,
                                     s * BK, cluster_rank());
                else
                    Stage::load<Rank>(base + stage * Stage::BYTES, full + stage * 8, map_a, map_b, bm * BM, bn * BN,
                                      s * BK, z);
            }
        }
        if constexpr (Pair)  // the last release of every stage, the other block's included, before exit
            for (int u = max(0, use - STAGES); u < use; ++u) mbar_wait(empty + u % STAGES * 8, (u / STAGES) & 1);
        return;
    }

    claim_registers<232>();
    const int consumer = wg - 1, thread = tid % 128;
    int use = 0;
    // C boxes staged so far: the two buffers alternate over the whole walk. With an even number of
    // boxes a tile (BN = 128, 256) that is the box index q; with one (BN = 64, bgemm v1) it is the
    // tile's parity — box 0 every tile would be rewritten while the last tile's store, which
    // tma_store_wait_read<1> leaves pending, may still be reading it.
    int staged = 0;
    for (int unit = first_unit<Pair>(); unit < units; unit += unit_step<Pair>()) {
        int z, bm, bn, s0 = 0, s1 = slices;
        if constexpr (Split) {
            s0 = unit % splits * slices_per;
            s1 = min(slices, s0 + slices_per);
        }
        walk_coords<Rank, Pair>(Split ? unit / splits : unit, rows, cols, z, bm, bn);
        float acc[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
        for (int s = s0; s < s1; ++s, ++use) {
            const int stage = use % STAGES;
            mbar_wait(full + stage * 8, (use / STAGES) & 1);
            Stage::multiply(acc, base + stage * Stage::BYTES, consumer);
            // the previous slice's products are done: release its stage
            if (s > s0 && thread % 32 == 0) release_stage<Pair>(empty + (use - 1) % STAGES * 8);
        }
        epilogue.begin_tile(bn * BN, N, thread);
        wgmma_wait<0>();
        fence_registers(acc);
        if (thread % 32 == 0) release_stage<Pair>(empty + (use - 1) % STAGES * 8);  // the tile's last slice
        if constexpr (Split) {
            store_partial(acc, partial + (size_t)(unit % splits) * M * ldp, M, N, ldp, bm * BM + consumer * 64,
                          bn * BN, thread);
            continue;
        }
        const unsigned mine = boxes + consumer * 2 * BOX_BYTES;
#pragma unroll
        for (int q = 0; q < BN / 64; ++q) {
            const unsigned box = mine + ((BN / 64) % 2 ? (staged + q) % 2 : q % 2) * BOX_BYTES;
            if (thread == 0) tma_store_wait_read<1>();  // the store two boxes ago has read this buffer
            named_barrier(1 + consumer, 128);
            Stage::stage_box(acc, q, box, thread, epilogue);
            fence_async_shared();
            named_barrier(1 + consumer, 128);
            if (thread == 0) {
                if (Rank == 3)
                    tma_store_3d(map_c, bn * BN + q * 64, bm * BM + consumer * 64, z, box);
                else
                    tma_store_2d(map_c, bn * BN + q * 64, bm * BM + consumer * 64, box);
                tma_store_commit();
            }
        }
        staged += BN / 64;
    }
    if (thread == 0) tma_store_wait<0>();  // the shared boxes must outlive the copies that read them
}

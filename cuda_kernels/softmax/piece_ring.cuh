// The piece ring of softmax v8 to v10 (docs/ladders/softmax.md, v8): the computing threads' named barrier, a
// block's share of a row and the loader warp's lane, which walks the block's rows piece by piece into a ring of
// PIECES pieces of PIECE 16-byte vectors on full/empty mbarriers; the launch's start, and a row's two passes
// (v8 runs them row after row, v9 and v10 the next row's first pass before this row's second). Include after
// common.cuh, cluster.cuh, hopper.cuh and row.cuh, with CLUSTER (or TEAM), THREADS (the threads that compute)
// and PIECE set; it includes ring.cuh.
#pragma once

static_assert(THREADS % 32 == 0 && THREADS >= 64 && THREADS + 32 <= 1024,
              "THREADS: whole warps that compute, plus one loader warp, at most 1024 a block");
// PIECES: the launch's (as many pieces as the ring budget holds, study/ops/softmax_rings.py); the same rule as
// the default, for a build without a launch (the compile checks).
#ifndef PIECES
#define PIECES (230400 / (PIECE * 16) < 32 ? 230400 / (PIECE * 16) : 32)
#endif
static_assert(PIECE >= 1 && PIECES >= 1 && PIECES <= 32, "PIECES: 1 to 32 pieces of PIECE vectors in the ring");

#include "ring.cuh"  // ROW_SLOTS, where a rung sets it, before this file

constexpr int WARPS = THREADS / 32;      // the warps that compute; warp WARPS loads
constexpr unsigned COMPUTE_BARRIER = 1;  // the computing threads' named barrier (0 is __syncthreads')

struct ComputeSync {
    static __device__ __forceinline__ void sync() { named_barrier(COMPUTE_BARRIER, THREADS); }
};

// The vectors of piece j of a share of `count` body vectors (0 past its end).
__device__ __forceinline__ int piece_vectors(int count, int j) { return max(0, min(PIECE, count - j * PIECE)); }

// This block's share [first, first + count) of a row's body vectors.
__device__ __forceinline__ int2 share_of(const RowParts& p, int chunk) {
    const int first = min(p.body, team_rank() * chunk);
    return make_int2(first, min(p.body - first, chunk));
}

// The loader's lane: every row the block walks, piece by piece, in the order the computing warps use them.
__device__ __forceinline__ void load_rows(const storage_t* __restrict__ X, int M, int N, int chunk, long long cid,
                                          long long clusters, unsigned ring0, unsigned full0, unsigned empty0) {
    const int per_row = CDIV(chunk, PIECE);
    unsigned g = 0;  // pieces issued so far: slot g % PIECES, lap g / PIECES
    for (long long row = cid; row < M; row += clusters) {
        const storage_t* x = X + row * N;
        const RowParts p = row_parts(x, N);
        const int2 share = share_of(p, chunk);
        const uint4* src = reinterpret_cast<const uint4*>(x + p.head) + share.x;
        for (int j = 0; j < per_row; ++j, ++g) {
            const unsigned slot = g % PIECES, full = full0 + 8 * slot;
            mbar_wait(empty0 + 8 * slot, ((g / PIECES) & 1) ^ 1);  // lap 0 passes: a fresh barrier's last phase
            fence_async_shared();  // the computing warps' reads of the slot before the copy engine's writes
            const int n = piece_vectors(share.y, j);
            mbar_arrive_expect_tx(full, (unsigned)n * 16u);
            if (n > 0)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                             :: "r"(ring0 + slot * PIECE * 16), "l"(src + j * PIECE), "r"((unsigned)n * 16u), "r"(full)
                             : "memory");
        }
    }
}

// The start of a launch, in every thread: the ring's barriers initialised, (clusters) the exchange slots zeroed
// and the one cluster barrier passed before any block sends; then the loader warp walks its rows and the call
// returns false to it (it meets no barrier of the computing threads), true to the computing threads.
__device__ __forceinline__ bool start_ring(const storage_t* __restrict__ X, int M, int N, int chunk, long long cid,
                                           long long clusters, unsigned ring0, unsigned full0, unsigned empty0,
                                           ExchangeSlots& slots) {
    if (threadIdx.x == 0) mbar_init_ring(full0, empty0, PIECES, WARPS);  // full: the loader; empty: a warp each
#if CLUSTER > 1
    for (int i = threadIdx.x; i < ExchangeSlots::WORDS; i += blockDim.x) slots.word[i] = 0;  // v9: 128 at 8 blocks
    cluster_arrive();  // every block's slots zero and barriers ready before any block sends (the one cluster barrier)
    cluster_wait();
#else
    __syncthreads();
#endif
    if (threadIdx.x < THREADS) return true;
    if (threadIdx.x == THREADS) load_rows(X, M, N, chunk, cid, clusters, ring0, full0, empty0);
    return false;
}

// A row between its two passes: where it lies, its head and tail single (block 0's first threads), the first of
// its pieces, and this block's statistics as publish gave them.
struct Held {
    const storage_t* x;
    storage_t* y;
    RowParts p;
    int2 share;
    bool has_single;
    float single;
    unsigned g;
    Stats st;
};

// Row k's first pass: its singles, its pieces (from g) absorbed as they land, the block's statistics published.
__device__ __forceinline__ Held first_pass(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int N,
                                           long long row, int k, unsigned g, int chunk, int per_row,
                                           const uint4* ring, unsigned full0, float* scratch, ExchangeSlots& slots) {
    Held h;
    h.x = X + row * N;
    h.y = Y + row * N;
    h.p = row_parts(h.x, N);  // y's the same: X and Y share their offset from 16 bytes
    h.share = share_of(h.p, chunk);
    h.g = g;
    h.has_single = team_rank() == 0 && (int)threadIdx.x < h.p.head + h.p.tail;
    h.single = h.has_single ? to_float(h.x[h.p.single(threadIdx.x)]) : NEG_INF;
    Stats st{NEG_INF, NEG_INF, 0.0f};
    if (h.has_single) absorb<1>(st, {h.single});
    for (int j = 0; j < per_row; ++j) {
        const unsigned slot = (g + j) % PIECES;
        mbar_wait(full0 + 8 * slot, ((g + j) / PIECES) & 1);
        absorb_vectors(st, ring + slot * PIECE, piece_vectors(h.share.y, j));
    }
    h.st = publish<ComputeSync>(st, scratch, slots, k);
    return h;
}

// Row k's second pass: the cluster's statistics gathered (a huge row's second round on the row still held), the
// row written piece by piece, each warp freeing a piece as it leaves it.
__device__ __forceinline__ void second_pass(const Held& h, int k, int per_row, const uint4* ring, unsigned empty0,
                                            float* scratch, ExchangeSlots& slots) {
    const Stats gathered = gather<ComputeSync>(h.st, scratch, slots, k);
    const Stats st = settle<ComputeSync>(gathered, scratch, slots, k, h.has_single, h.single,
                                         [&](float m) {
                                             float d = 0.0f;
                                             for (int j = 0; j < per_row; ++j)
                                                 d += sum_minus(ring + (h.g + j) % PIECES * PIECE,
                                                                piece_vectors(h.share.y, j), m);
                                             return d;
                                         });
    const float m = st.m, shift = st.t, inv = 1.0f / st.d;
    uint4* yv = reinterpret_cast<uint4*>(h.y + h.p.head) + h.share.x;
    for (int j = 0; j < per_row; ++j) {
        const unsigned slot = (h.g + j) % PIECES;
        const uint4* piece = ring + slot * PIECE;
        const int n = piece_vectors(h.share.y, j);
        if (!huge(m)) write_vectors(piece, yv + j * PIECE, n, inv, [=](float x) { return exp_shifted(x, shift); });
        else write_vectors(piece, yv + j * PIECE, n, inv, [=](float x) { return exp_minus(x, m); });
        __syncwarp();
        if (threadIdx.x % 32 == 0) mbar_arrive(empty0 + 8 * slot);  // this warp has left the piece
    }
    if (h.has_single)
        h.y[h.p.single(threadIdx.x)] =
            from_float((huge(m) ? exp_minus(h.single, m) : exp_shifted(h.single, shift)) * inv);
}

// The opening the piece-ring kernels share, at the top of the body: the ring (dynamic shared memory, PIECES × PIECE
// vectors), its full/empty barriers, the reduction scratch and the exchange slots; the launch's checks (16-byte
// vectors only: the launch refuses X and Y at different offsets from 16 bytes; a share the ring cannot hold would
// wait on its own pieces forever); per_row, cid and clusters (a row's cluster or team, and how many the grid
// runs), the shared addresses; a team's words and tags (TEAM_START: v10's kernel arguments `words` and `tickets`);
// then start_ring, after which a block that is not to compute has returned.
#if TEAM > 1
#define TEAM_START team_start(slots, words, tickets, M, clusters, cid)
#else
#define TEAM_START (void)0
#endif
#define PIECE_RING_OPENING                                                                                       \
    extern __shared__ __align__(128) uint4 ring[];                                                             \
    __shared__ __align__(8) unsigned long long full[PIECES], empty[PIECES];                                    \
    __shared__ float scratch[SCRATCH];                                                                         \
    __shared__ ExchangeSlots slots;                                                                            \
    require_dynamic_smem((unsigned)(PIECES * PIECE * 16));                                                     \
    if (!VECTOR_PATH) __trap();                                                                                \
    const int per_row = CDIV(chunk, PIECE);                                                                    \
    if (per_row > PIECES) __trap();                                                                            \
    const long long cid = blockIdx.x / ROW_BLOCKS, clusters = gridDim.x / ROW_BLOCKS;                          \
    const unsigned ring0 = smem_addr(ring), full0 = smem_addr(full), empty0 = smem_addr(empty);                \
    TEAM_START;                                                                                                \
    if (!start_ring(X, M, N, chunk, cid, clusters, ring0, full0, empty0, slots)) return

// v9's and v10's walk of a block's rows: row k + 1's first pass (its statistics published) before row k's second,
// so the exchange of row k crosses the cluster or team during row k + 1's first pass — where the ring holds both
// shares (row k + 1's pieces land while row k's are held); else (the same in every block of a row) the rows take
// turns as in v8.
__device__ __forceinline__ void overlap_rows(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N,
                                             long long cid, long long clusters, int chunk, int per_row,
                                             const uint4* ring, unsigned full0, unsigned empty0, float* scratch,
                                             ExchangeSlots& slots) {
    const bool overlap = 2 * per_row <= PIECES;
    Held held = first_pass(X, Y, N, cid, 0, 0u, chunk, per_row, ring, full0, scratch, slots);
    for (int k = 0;; ++k) {
        const long long next = cid + (long long)(k + 1) * clusters;
        const unsigned g = held.g + per_row;
        Held ahead;
        if (overlap && next < M)
            ahead = first_pass(X, Y, N, next, k + 1, g, chunk, per_row, ring, full0, scratch, slots);
        second_pass(held, k, per_row, ring, empty0, scratch, slots);
        if (next >= M) break;
        if (!overlap) ahead = first_pass(X, Y, N, next, k + 1, g, chunk, per_row, ring, full0, scratch, slots);
        held = ahead;
    }
}

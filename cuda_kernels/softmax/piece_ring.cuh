// The piece ring of softmax v8 and v9 (docs/ladders/softmax.md, v8): the computing threads' named barrier, a
// block's share of a row and the loader warp's lane, which walks the block's rows piece by piece into a ring of
// PIECES pieces of PIECE 16-byte vectors on full/empty mbarriers. Include after common.cuh, cluster.cuh,
// hopper.cuh and row.cuh, with CLUSTER, THREADS (the threads that compute) and PIECE set; it includes ring.cuh.
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
    const int first = min(p.body, cluster_rank_or_0() * chunk);
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

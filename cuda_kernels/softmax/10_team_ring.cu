// softmax v10 — v9's ring and overlapped rows with a row spread over a team of the grid's blocks, its statistics
// exchanged through L2 instead of a cluster's DSMEM (docs/ladders/softmax.md, v10).
// Idea: a few dozen long rows are bound by rounds, not bytes (v8's header; c106, H100): a cluster's blocks share a
// GPC, so 132 SMs run 15 clusters of 8, and 64 rows of 262144 FP32 take five rounds for 4.3 rounds' work; v8's
// balanced plan trades cluster sizes for rounds, but a cluster of at most 8 blocks must hold a row of 1 MB in its
// rings (a share of 128 KB or more: one share a ring, no room for the next rows' loads). Here a team of TEAM
// consecutive blocks of a persistent grid (any TEAM up to the computing threads, one block an SM) holds a row,
// teams walking rows t, t + teams, …: 64 rows over 16 teams of 8 blocks take 4 rounds exactly, each share 128 KB,
// the ring holding one and three quarters. The teams share no cluster, so a row's (maximum, sum) crosses L2 as tagged
// 64-bit words (ring.cuh, the TEAM exchange): thread 0 of each block stores its pair, threads r < TEAM of every
// block poll rank r's pair, and the block's reduction merges them, the same tree in every block (the same bits).
// The round trip through L2 (microseconds, where DSMEM takes tens of nanoseconds) overlaps the next row's first
// pass as in v9.
// Removes: the GPC's bound on a row's blocks (clusters of 8 at most, and only as many as fit a GPC), so the rounds
// of a few rows balance and a long row's share leaves the ring room for the next rows.
// Bottleneck expected: HBM, with the chain of a row on the computing warps (two block reductions, the second
// across the team) where shares are small; the loader keeps loading under it while the ring has free pieces.
// Status: measured on an H100 (the H200 not lent; reports/h100-80gb-hbm3/experiments/softmax-v10-first-d7cb2fb/):
// GPU tests passed, memcheck, initcheck and synccheck clean. Cold, one run each, against v8 in the same run: 64 ×
// 262144 FP32 2,486 GB/s (81.3 % of the copy ceiling; v8 2,297), BF16 2,032 (1,771); 32 × 262144 FP32 2,191 (1,933);
// but 64 × 151936 BF16, one row a block on the partition v8 takes too, 1,817 against 1,951 (DSMEM's exchange there
// ahead of L2's, which one row cannot hide), and behind v8 at 1,024 rows. ncu at 64 × 262144 FP32 (16-block teams):
// DRAM 59.6 %, issue active 32.7 %, long scoreboard (the poll) then barrier (the two block reductions a row).
// Traffic (ncu's byte counters, H100 at 36acd52; reports/h100-80gb-hbm3/experiments/dram-bytes-36acd52/): at 64 ×
// 262144 FP32, 16 teams of 8 blocks (the declared fit since 1cabc7e; the line above is of the first fit's 16-block
// teams, before ring.cuh's later changes), it reads 67.2 MB, 1.00× its input, in 49.0 µs at DRAM 67.8 % (barrier
// 2.49, long scoreboard 2.33 cycles an issue): the row stays on chip; what the copy ceiling has over it is time.
// Hardware facts: as v8 (cp.async.bulk on mbarriers, the loader warp, named barrier 1). `st.relaxed.gpu` and
// `ld.relaxed.gpu` of one 16-byte vector, each 64-bit word single-copy atomic: a word's value and tag land together.
// The grid must be resident at once (a block polls for blocks that must run beside it): one block an SM, at most
// the SMs, on a GPU the launch has to itself; a poll gives up after TEAM_POLLS rounds with NaN (ring.cuh).
// Row layout, singles and scope: as v8 (the vector paths only; X and Y at the same offset from 16 bytes; a share
// that fits the ring).
// Builds on: v9 (its walk of the rows, piece_ring.cuh: overlap_rows; its ring and loader), the tagged words of
// ring.cuh's cluster exchange, v6's twin (its tagged words through L2, epochs from a ticket counter).
// Constraints: compute capability 9.0. Launch: 1-D grid of teams × TEAM blocks (at most the SMs), THREADS + 32
// threads a block; dynamic shared memory PIECES × PIECE × 16 bytes; chunk (a block's share of a row's body
// vectors), the teams' words (ExchangeSlots::WORDS each, zeroed once) and a ticket counter (zeroed once), both owned
// by the launch (study/ops/softmax_rings.py, team_ring_launch).
// arch: sm_90
// precisions: fp32 fp16 bf16
// Sized to the rows (FIT=1, the declared config; study/ops/softmax_rings.py, team_plan): of the team sizes whose share
// fits the ring one and a half times (once where a team takes one row), the fewest rounds × (share + a row's fixed
// cost), ties to the smaller team.
// config: TEAM=1 THREADS=512 PIECE=1024 FIT=1
// space: TEAM=1 THREADS=256 PIECE=1024 FIT=1
// space: TEAM=1 THREADS=512 PIECE=512 FIT=1
// space: TEAM=8 THREADS=512 PIECE=1024 FIT=0
// space: TEAM=16 THREADS=512 PIECE=1024 FIT=0
// space: TEAM=33 THREADS=512 PIECE=1024 FIT=0
#define ROW_SLOTS 4  // v9's walk: a block sends row k + 1's values before it reads row k's (09_overlap_ring.cu)
#define CLUSTER 1    // no cluster: a team's blocks exchange through L2
#include "common.cuh"
#include "cluster.cuh"
#include "hopper.cuh"
#include "row.cuh"
#include "piece_ring.cuh"

// One block an SM (the ring's shared memory decides, and the grid's residency depends on it).
extern "C" __global__ void __launch_bounds__(THREADS + 32, 1)
softmax_v10_team_ring(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N, int chunk,
                      unsigned long long* __restrict__ words, unsigned long long* __restrict__ tickets) {
    PIECE_RING_OPENING;
    if (cid >= M) return;  // the team's blocks all: they share cid
    overlap_rows(X, Y, M, N, cid, clusters, chunk, per_row, ring, full0, empty0, scratch, slots);
    // No exit barrier: a block reads other blocks' words in global memory, which outlive them.
}

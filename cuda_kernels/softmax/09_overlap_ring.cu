// softmax v9 — v8 with a row's statistics crossing the cluster while the next row's first pass runs
// (docs/ladders/softmax.md, v9).
// Idea: in v8 the computing warps walk each row as one chain: the first pass over its pieces, the block's
// reduction, the cluster exchange (thread 0 stores into every other block's slots, every thread spins on its
// own), the write pass. Nothing of the block's issues a store while the statistics cross the cluster, and the
// loader can run only as far ahead as the ring's free pieces. On an H100 (c106) BF16 rows of 262144 ran 2,220 GB/s
// over 8 blocks a row (69 rows a cluster, shares of 4 pieces) against 2,830 over 4 (35 rows, shares of 8): a cost
// per row a cluster walks, not per byte, which the exchange's round trip on that chain fits. Here a block
// publishes row k + 1's statistics (its first pass, the block's reduction and its sends) before it gathers row
// k's, so the exchange of row k is in flight during row k + 1's first pass, and row k's values have landed when
// the warps come back to write it. The ring must hold two rows' shares for that (row k + 1's pieces land while
// row k's are held): a share of more than half the ring walks its rows as v8 does.
// Removes: the cluster exchange's latency from the chain of each row (where two shares fit the ring).
// Bottleneck expected: the two passes' issue rate over shared memory (v7's, at 16-bit storage), and HBM.
// Status: written, compiled (nvcc 13.0, sm_90a, every precision and cluster size: up to 85 registers, no spills)
// and planned; a review's model of the exchange (3,000 random schedules, clusters of 2 to 8) overwrote a slot
// unread with 2 or 3 rows' slots, never with 4. Not yet run on a GPU (the session that wrote it had no device
// time left); the launch records `overlap`.
// Hardware facts: as v8. Exchange slots of four rows (ROW_SLOTS 4, ring.cuh): a block sends row k + 1's values
// before it reads row k's, so another block may send row k + 3's (in its own row k + 2) as soon as it has this
// block's row k + 1 — before this block has read row k's slots. It sends row k + 4's only after it has this block's
// row k + 2, which this block sends after every thread here has read row k's (the reduction's barriers between):
// four slots, not two, keep a slot from being overwritten before it is read.
// Row layout, singles and scope: as v8 (the vector paths only; X and Y at the same offset from 16 bytes; a share
// that fits the ring once).
// Builds on: v8 (its ring and loader, piece_ring.cuh; its statistics and exchange, ring.cuh).
// Constraints: compute capability 9.0. Launch: as v8 (study/ops/softmax_rings.py, piece_ring_launch).
// arch: sm_90
// precisions: fp32 fp16 bf16
// Sized to the row (FIT=1, the declared config; study/ops/softmax_rings.py, piece_ring_plan and balanced_plan):
// as v8, but the fewest blocks a row (1, 2, 4, 8) whose share fits the ring twice, so that the rows overlap,
// else 8 blocks while the share fits it once; a few rounds balanced over cluster sizes 1 to 8 as v8's.
// config: CLUSTER=1 THREADS=512 PIECE=1024 FIT=1
// space: CLUSTER=1 THREADS=256 PIECE=1024 FIT=1
// space: CLUSTER=4 THREADS=512 PIECE=1024 FIT=0
// space: CLUSTER=8 THREADS=512 PIECE=1024 FIT=0
// space: CLUSTER=8 THREADS=256 PIECE=1024 FIT=0
#define ROW_SLOTS 4
#include "common.cuh"
#include "cluster.cuh"
#include "hopper.cuh"
#include "row.cuh"

static_assert(CLUSTER >= 1 && CLUSTER <= 8, "CLUSTER: 1 to 8 blocks a row (portable cluster sizes, any of them)");
#include "piece_ring.cuh"

// One block an SM (the ring's shared memory decides): the registers of two rows held cost no occupancy, and at the
// bare __launch_bounds__(THREADS + 32) ptxas capped them at 56 and spilled Held's fields in most builds.
extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS + 32, 1)
softmax_v9_overlap_ring(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N, int chunk) {
    PIECE_RING_OPENING;
    if (cid >= M) return;  // the cluster's blocks all: they share cid
    overlap_rows(X, Y, M, N, cid, clusters, chunk, per_row, ring, full0, empty0, scratch, slots);
    // No exit barrier: as v8 (a block writes into another's slots only values that block waits for, and every
    // piece the loader starts belongs to a row the computing warps wait for).
}

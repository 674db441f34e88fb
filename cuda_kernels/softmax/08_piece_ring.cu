// softmax v8 — v7's ring cut into pieces that a loader warp refills as soon as the write pass has left them,
// so the next row loads behind the current row's stores (docs/ladders/softmax.md, v8).
// Idea: v7 holds a block's whole share of a row in one stage and hands the stage back only once the row is
// written, so a ring of S stages keeps at most S − 1 rows loading: a share longer than half the ring (FP32 rows
// past ~231,000 elements over 8 blocks) has no second stage and is out of its scope, and a cluster that walks
// only two to five rows (a few dozen rows of 151936–262144) waits for its first row whole before it computes
// and leaves its last row's stores alone on the bus. Here the ring is PIECES pieces of PIECE 16-byte vectors,
// a row's share taking ⌈chunk / PIECE⌉ consecutive pieces (wrapping). One extra warp loads: its lane 0 walks
// the block's rows piece by piece, waiting on each piece's empty mbarrier (one arrival per computing warp) and
// starting a cp.async.bulk that completes on its full mbarrier. The THREADS computing threads take a row's
// statistics piece by piece as the pieces land (the online pass of ring.cuh: the first piece is reduced while
// the last still loads), exchange them over the cluster, then write the row piece by piece, each warp freeing a
// piece when it has written its part of it — so the loader starts the next rows' pieces while this row is
// still being written. A share needs only to fit the ring once, not twice (FP32 rows to 458,752 elements).
// Removes: v7's whole-stage granularity — the wait for a row's whole share before its first reduction, the
// hand-back only after its last store, and the two-stage floor on a share's size.
// Bottleneck expected: as v7, the issue rate of the two passes over shared memory at 16-bit storage, and the
// latency of the cluster exchange a row; the loader warp takes no issue slots from the passes but one warp
// slot an SM.
// Status: measured on an H100 (c105, c106 at afb891b; the H200 not lent that session): correct in every GPU test
// that ran and clean under memcheck, synccheck and initcheck; racecheck names the tagged exchange of ring.cuh, as
// for v7. Cold, autotune off, % of the size-matched copy ceiling: 1024×262144 FP32 2,885 GB/s (94.5 %, where v7
// has no two stages), BF16 2,827 (93.0 %; v7 89.1 %), 1024×128256 FP32 93.2 % and BF16 88.3 % (v7 92.4, 87.2),
// but 1024×151936 BF16 83.0 % against v7's 89.7 %; ncu at 1024×262144 FP32: DRAM 85.2 % of peak, issue active
// 46.5 %, top stall wait. A few dozen rows are bound by rounds, not the ring (the FIT's balance below).
// Hardware facts: as v7 (cp.async.bulk on an mbarrier's transaction count; DSMEM). The computing threads
// synchronise on named barrier 1 (bar.sync 1, THREADS): the loader warp never reaches their barriers, and
// __syncthreads would wait for it. The loader orders the computing warps' generic reads of a piece before the
// copy engine's writes into it with fence.proxy.async after its empty barrier's wait.
// Row layout, singles and scope: as v7 (the vector paths only; X and Y at the same offset from 16 bytes). A
// row is in scope while the planned share fits the ring (study/ops/softmax_rings.py, piece_ring_plan).
// Builds on: v7 (its statistics and exchange, ring.cuh), hgemm v8's full/empty mbarrier ring (hopper.cuh).
// Constraints: compute capability 9.0. Launch: 1-D grid, a multiple of CLUSTER, of THREADS + 32 threads a block;
// dynamic shared memory PIECES × PIECE × 16 bytes; chunk (a block's share of a row's body vectors) an argument
// (study/ops/softmax_rings.py, piece_ring_launch).
// arch: sm_90
// precisions: fp32 fp16 bf16
// Sized to the row (FIT=1, the declared config; study/ops/softmax_rings.py, piece_ring_plan and balanced_plan): the
// fewest blocks a row (1, 2, 4, 8) whose share fits the ring one and a half times, else 8 blocks while the share
// fits it; pieces no longer than the share; as many pieces as the ring budget holds (at most 32). Where that grid
// walks the rows in 8 rounds or fewer (a few dozen long rows), the cluster size from 1 to 8 with the fewest rounds
// and the best balance: a cluster's blocks share a GPC, so 132 SMs run 15 clusters of 8 but 22 of 5 and 39 of 3,
// and 64 rows take 5 rounds of 8 blocks for 4.3 rounds' work (c106: 64×262144 FP32 over 5 blocks +6 %,
// 64×151936 FP32 +13 %, BF16 over a pair in one round +44 %, each size timed alone; the rule itself not yet run).
// config: CLUSTER=1 THREADS=512 PIECE=1024 FIT=1
// space: CLUSTER=1 THREADS=256 PIECE=1024 FIT=1
// space: CLUSTER=1 THREADS=512 PIECE=2048 FIT=1
// space: CLUSTER=2 THREADS=512 PIECE=1024 FIT=0
// space: CLUSTER=4 THREADS=512 PIECE=1024 FIT=0
// space: CLUSTER=4 THREADS=256 PIECE=1024 FIT=0
// space: CLUSTER=8 THREADS=256 PIECE=1024 FIT=0
// space: CLUSTER=8 THREADS=512 PIECE=2048 FIT=0
// space: CLUSTER=3 THREADS=512 PIECE=1024 FIT=0
// space: CLUSTER=5 THREADS=512 PIECE=1024 FIT=0
#include "common.cuh"
#include "cluster.cuh"
#include "hopper.cuh"
#include "row.cuh"

static_assert(CLUSTER >= 1 && CLUSTER <= 8, "CLUSTER: 1 to 8 blocks a row (portable cluster sizes, any of them)");
#include "piece_ring.cuh"

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS + 32)
softmax_v8_piece_ring(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N, int chunk) {
    PIECE_RING_OPENING;

    for (int k = 0;; ++k) {
        const long long row = cid + (long long)k * clusters;
        if (row >= M) break;
        second_pass(first_pass(X, Y, N, row, k, (unsigned)k * per_row, chunk, per_row, ring, full0, scratch, slots),
                    k, per_row, ring, empty0, scratch, slots);
    }
    // No exit barrier: a block writes into another's slots only values that block waits for, and every piece
    // the loader starts belongs to a row the computing warps wait for.
}

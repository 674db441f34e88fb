// softmax v6 — a long row split over a thread-block cluster, its maximum and sum exchanged through
// distributed shared memory (docs/ladders/softmax.md, v6).
// Idea: v4 keeps a row in one block's registers, up to THREADS·ON_CHIP 16-byte vectors (32768 FP32
// or 65536 FP16/BF16 elements at 1024 × 8). A longer row reads HBM twice, and a few long rows keep
// a few SMs busy, one block a row, while the others idle. Here a cluster of CLUSTER blocks owns a
// row (Hopper: up to 8 blocks, portable, scheduled together on one GPC). It is v4's body with the
// cluster as the team (row.cuh's row_on_chip<ClusterTeam, ON_CHIP>): body vector k of the row is
// held by thread k mod (CLUSTER·THREADS) of the cluster, so each block holds chunks of THREADS
// consecutive vectors, interleaved with the other blocks'. Each block reduces its maximum as v4
// does, publishes it in its shared memory, and after a cluster barrier every warp reads the CLUSTER
// maxima through DSMEM (mapa + ld.shared::cluster) and reduces them by shuffles; the same for the
// sums of exp(x − max); then each block normalises from its registers and writes. HBM sees the row
// read once and written once up to CLUSTER·THREADS·ON_CHIP vectors: 262144 FP32 or 524288 FP16/BF16
// elements at 8 × 1024 × 8, on 8 SMs.
// Paths (each recorded with the launch's config): CLUSTER=1 compiles to v4 exactly (no cluster, the
// block as the team), the path the launch takes for a row that fits in one block; a row longer than
// the cluster holds takes v3's two passes with the cluster as the team (each block streams its
// chunks once for the online (max, sum) pair, one exchange, then reads them again to normalise:
// on_chip=0).
// Removes: v4's second read of rows between one block's registers and a cluster's (32768–262144 FP32,
// 65536–524288 FP16/BF16 elements), and its one SM a row for a few long rows.
// Bottleneck that remains (expected, not measured): three cluster barriers a row, during which the
// block has no loads in flight; at 1024 threads × 8 vectors a block fills an SM's registers, so an
// SM cannot overlap one row's exchange with another row's loads; a cluster of 8 needs 8 free SMs of
// one GPC (at most 16 such clusters on 132 SMs: 128 busy); fewer rows than SMs/CLUSTER still leave
// SMs idle. What ncu says at the fit (c83 at 358e274, the vocab suite's misses; reports/h200/profiles/softmax.md):
// on chip over the cluster (1024×50257 FP32) the barrier is the top stall (10.2 cycles an issue), issue active
// 37.1 %, DRAM 58.4 %; two passes (1024×151936 BF16, 8 × 512 × 4) DRAM 61.3 %, issue 69.7 %, long scoreboard and
// barrier 4.1 each; one block a row (1024×32000 BF16, 1 × 1024 × 4) long scoreboard 12.3, DRAM 53.3 %; a few long
// rows (64×262144 BF16) DRAM 39.9 % at 73 % occupancy. The same one-block point 1 × 1024 × 8 reaches 90–98 % of
// the copy ceiling at 32000 FP32 and 54–55 % at 50257 BF16 (docs/ladders/softmax.md, v6).
// Hardware facts: a block reads the shared memory of any block of its cluster (DSMEM, sm_90);
// barrier.cluster.arrive.release / wait.acquire order a block's shared-memory writes before the
// others' reads; a block's shared memory must outlive every remote read of it, hence the last
// barrier before exit.
// Measured (H200, cold, autotune off, c19 at 6b93f4f; one run each, unpaired): 32 × 262144 FP32
// 2,003 GB/s (41.6 % of the 4.81 TB/s peak; v4 991, torch 743), BF16 1,244 (v4 729, torch 498);
// 8 × 262144 FP32 1,334 (v4 252, torch 208); 16384 × 4096 FP32 4,159, v4's 4,160 (one block a row:
// v4's body). Its Triton twin (two launches) 2,205 and 1,364 at 32 × 262144. Correct at every autotune
// point and edge shape and clean under memcheck and racecheck (c16/c17 at c5f5b0f). 32 rows of 8
// blocks are 256 blocks in clusters of 8, two waves of at most 16 clusters: what bounds it is for ncu.
// Builds on: v4 (row_on_chip and its two-pass fallback, with a team of CLUSTER blocks). Constraints:
// as v2; compute capability 9.0 or later (clusters, DSMEM; nothing arch-specific: arch sm_90, not
// sm_90a). Launch: grid.x a multiple of CLUSTER (a row per CLUSTER consecutive blocks), grid.y
// beyond 65535 blocks (study/ops/softmax.py, cluster_rows_launch).
// arch: sm_90
// precisions: fp32 fp16 bf16
// Sized to the row (FIT=1, the declared config; study/ops/softmax.py, fitted_cluster): a row one block
// holds takes v4's rule over the CLUSTER=1 points (v4's body); a longer one 8 blocks of 512 threads ×
// 4 vectors, on chip up to 16384 vectors, else two passes. Why (c25 at 3e65580, cold, autotune on over
// every point, 1,024 rows of 50257–262144 and 32 of 131072–262144, FP32/BF16): registers, not the
// cluster size, decide. ON_CHIP=4 compiles to 32 registers (two 1024-thread or four 512-thread blocks
// an SM: one block's barriers and stores overlap the others' loads), ON_CHIP=8 to 48–56 (one 1024-thread
// block an SM). 8 × 512 × 4 was within 15 % of the best point at all 10 such cases; the rule it replaces
// (the fewest blocks that hold the row, 1024 × 8 each) was up to 48 % behind (1024×151936 BF16:
// 0.348 ms against 0.234 for v4's two passes at 1024 × 4). Best points there: 1024×50257 FP32 8 × 256 × 8
// on chip 3,470 GB/s (82.8 % of the copy ceiling); BF16 rows of 50257–262144 at 1,024 rows 2,658–2,705
// (62.9–66.5 %) whichever point; 32×262144 BF16 8 × 1024 × 4 on chip 1,509 (54.6 %), FP32 8 × 512 × 4
// two passes 2,108 (59.8 %). ncu at 1024×151936 BF16 (1 × 1024 × 4, two passes: 0.234 ms): DRAM 80.9 %
// of peak for 62.9 % of the ceiling in useful bytes, L2 hit 34 %: the second read of 264 resident rows of
// 304 KB (80 MB) does not stay in the 60 MB L2; issue 48.8 %, top stall long_scoreboard. At
// 1024×50257 BF16 (rows L2 holds) the same point is latency-bound: DRAM 56.9 %, L2 hit 53.7 %, issue
// 63.5 %, long_scoreboard first (c26 at db2295e). Hence STREAM_UNROLL (row.cuh): the two streaming
// passes load that many vectors a thread before using any; 1 is the code of every other rung and
// point (cubins byte-identical), 4 at the three two-pass candidates (32 registers still). Measured (c29 at
// fa8e8f8, autotune on, experiments/softmax-stream-unroll-fa8e8f8): 4 is never more than 0.6 % behind 1 at
// the same point and up to 25 % ahead at long rows (0.2 % at 1024×262144 FP32); the best point at
// 1024×151936 BF16 went from 2,658 GB/s (c25) to 2,751 (1 × 1024 × 4 with 4), 1024×262144 BF16 from
// 2,699 to 2,876 (8 × 512 × 4 with 4), 32×262144 FP32 from 2,118 to 2,383; the fit's long-row point
// streams with 4 (study/ops/softmax.py LONG_ROW_POINT).
// config: CLUSTER=8 THREADS=1024 ON_CHIP=8 FIT=1 STREAM_UNROLL=1
// space: CLUSTER=1 THREADS=128 ON_CHIP=4 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=1 THREADS=128 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=1 THREADS=256 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=1 THREADS=512 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=1 THREADS=1024 ON_CHIP=4 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=1 THREADS=1024 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=2 THREADS=512 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=2 THREADS=1024 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=4 THREADS=512 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=4 THREADS=1024 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=8 THREADS=256 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=8 THREADS=512 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=8 THREADS=512 ON_CHIP=16 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=8 THREADS=1024 ON_CHIP=8 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=2 THREADS=1024 ON_CHIP=4 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=4 THREADS=512 ON_CHIP=4 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=4 THREADS=1024 ON_CHIP=4 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=8 THREADS=512 ON_CHIP=4 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=8 THREADS=1024 ON_CHIP=4 FIT=0 STREAM_UNROLL=1
// space: CLUSTER=1 THREADS=1024 ON_CHIP=4 FIT=0 STREAM_UNROLL=4
// space: CLUSTER=4 THREADS=1024 ON_CHIP=4 FIT=0 STREAM_UNROLL=4
// space: CLUSTER=8 THREADS=512 ON_CHIP=4 FIT=0 STREAM_UNROLL=4
#include "common.cuh"
#include "cluster.cuh"
#include "row.cuh"

static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8,
              "CLUSTER: 1, 2, 4 or 8 blocks (portable cluster sizes; a power of two for the shuffles)");

// Shared memory: row.cuh's reductions use scratch[0, 64); the cluster's exchange slots follow
// (ClusterTeam), one a published value, each written once a launch, so that no slot is overwritten
// while another block may still read it.
constexpr int SCRATCH = 64 + 4;

#if CLUSTER > 1
// Thread 0 publishes this block's value in `slot`; after the cluster barrier lanes 0 … CLUSTER−1 of
// every warp read the CLUSTER blocks' values (lane l block l's), and return them to the caller,
// which merges them across those lanes.
__device__ __forceinline__ void publish(float* slot, float v) {
    if (threadIdx.x == 0) *slot = v;
    cluster_arrive();
    cluster_wait();
}

// A row's team of CLUSTER blocks (row.cuh's Team interface): rank and size over the cluster, each
// reduction over the block (row.cuh) and then over the cluster through DSMEM. The merge over the
// blocks is a butterfly over lanes 0 … CLUSTER−1 with a commutative operation, the same in every
// warp of every block: all of them get the same bits, so the blocks normalise the row alike.
// sum and online are the last exchange of a row on either path (row_on_chip: max, then sum;
// row_online_stats: online, then row_normalize reads nothing remote): after its remote reads each
// arrives on the barrier that leave() waits on before the block exits, so that no block's shared
// memory is gone while another still reads it, and the wait comes after the output is written.
struct ClusterTeam {
    static constexpr int SIZE = CLUSTER * THREADS;
    static constexpr int SLOT_MAX = 64, SLOT_SUM = 65, SLOT_M = 66, SLOT_D = 67;
    static __device__ __forceinline__ int rank() { return cluster_rank() * THREADS + (int)threadIdx.x; }

    static __device__ __forceinline__ float max(float v, float* scratch) {
        publish(scratch + SLOT_MAX, block_reduce<true>(v, scratch));
        const int lane = threadIdx.x % 32;
        float w = lane < CLUSTER ? cluster_load(scratch + SLOT_MAX, lane) : NEG_INF;
#pragma unroll
        for (int o = CLUSTER / 2; o > 0; o >>= 1) w = fmaxf(w, __shfl_xor_sync(0xffffffffu, w, o));
        return __shfl_sync(0xffffffffu, w, 0);
    }

    static __device__ __forceinline__ float sum(float v, float* scratch) {
        publish(scratch + SLOT_SUM, block_reduce<false>(v, scratch));
        const int lane = threadIdx.x % 32;
        float w = lane < CLUSTER ? cluster_load(scratch + SLOT_SUM, lane) : 0.0f;
        cluster_arrive();  // the last remote read of this block: leave() waits for the others'
#pragma unroll
        for (int o = CLUSTER / 2; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
        return __shfl_sync(0xffffffffu, w, 0);
    }

    static __device__ __forceinline__ void online(float& m, float& d, float* scratch) {
        block_online(m, d, scratch);
        if (threadIdx.x == 0) scratch[SLOT_D] = d;
        publish(scratch + SLOT_M, m);
        const int lane = threadIdx.x % 32;
        float wm = lane < CLUSTER ? cluster_load(scratch + SLOT_M, lane) : NEG_INF;
        float wd = lane < CLUSTER ? cluster_load(scratch + SLOT_D, lane) : 0.0f;
        cluster_arrive();  // the last remote read of this block on the two-pass path
#pragma unroll
        for (int o = CLUSTER / 2; o > 0; o >>= 1)
            online_merge(wm, wd, __shfl_xor_sync(0xffffffffu, wm, o), __shfl_xor_sync(0xffffffffu, wd, o));
        m = __shfl_sync(0xffffffffu, wm, 0);
        d = __shfl_sync(0xffffffffu, wd, 0);
    }

    // Before the block exits: every block of the cluster has made its last remote read.
    static __device__ __forceinline__ void leave() { cluster_wait(); }
};
using RowTeam = ClusterTeam;
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
// One block a row: v4's team, nothing to wait for at exit.
struct RowTeam : BlockTeam {
    static __device__ __forceinline__ void leave() {}
};
#define CLUSTER_DIMS
#endif

// The row of this block's cluster: CLUSTER consecutive blocks along grid.x share one (grid.x a multiple
// of CLUSTER), grid.y takes what 65535 blocks cannot; −1 past M (the whole cluster leaves together).
__device__ __forceinline__ long long cluster_row(int M) {
    const long long row = (long long)blockIdx.y * (gridDim.x / CLUSTER) + blockIdx.x / CLUSTER;
    return row < M ? row : -1;
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS)
softmax_v6_cluster_rows(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N) {
    __shared__ float scratch[SCRATCH];
    const long long row = cluster_row(M);
    if (row < 0) return;
    const storage_t* x = X + row * N;
    storage_t* y = Y + row * N;
    if (!row_on_chip<RowTeam, ON_CHIP>(x, y, N, scratch)) {
        float m, d;  // longer than the cluster holds (uniform over the grid): v3's two passes, over the cluster
        row_online_stats<RowTeam>(x, N, m, d, scratch);
        row_normalize<RowTeam>(x, y, N, m, 1.0f / d);
    }
    RowTeam::leave();
}

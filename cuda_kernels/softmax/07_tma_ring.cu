// softmax v7 — rows streamed into a ring of shared-memory stages by TMA bulk copies, a persistent grid
// walking the rows, the next rows' loads in flight while a row is reduced and written
// (docs/ladders/softmax.md, v7).
// Idea: v4–v6 hold a row in registers: a block loads its part of the row, then reduces, exchanges and
// writes it with no load in flight, and registers bound the bytes an SM can have in the air (at 1024 × 4
// vectors, two blocks: 128 KiB an SM, and both blocks tend to be in the same phase). Here each block owns
// a ring of STAGES stages in shared memory and walks rows cid, cid + clusters, … (a persistent grid, one
// cluster of CLUSTER blocks a row, CLUSTER 1, 2, 4 or 8): thread 0 issues one cp.async.bulk per stage (the
// block's contiguous share of the row's 16-byte body, counted on the stage's full mbarrier), STAGES rows
// ahead; the block waits on the stage, takes the row's maximum and sum of exp(x − max) in one pass (online,
// see Stats) and writes exp(x − max) / sum in a second, from shared memory (HBM sees the row read once and
// written once), then hands the stage back to the copy engine for row k + STAGES. A cluster splits a row
// the ring of one block cannot hold twice (FP32 rows beyond ~28,900 elements, FP16/BF16 ~57,800; 2 blocks,
// else 4, else 8): each block holds its share, the maxima and sums are exchanged through DSMEM (a tagged
// word stored into each other block's shared memory, no cluster barrier: see send/receive). Clusters of 4
// and 8 take rows of 57,857–231,424 FP32 or 115,713–462,848 FP16/BF16 elements (their grid: the driver's
// count of co-resident clusters).
// Removes: v6's dead time between a row's last load and the next row's first (the row's reductions,
// cluster exchanges and stores), and the register budget on bytes in flight: the copy engine keeps up to
// STAGES − 1 rows (up to ~220 KiB an SM) loading while the threads compute.
// Measured (c97 at 9372778, H200, cold, autotune off, one run each, unpaired; % of the size-matched copy
// ceiling; reports/h200/experiments/softmax-v7-first-light-9372778): one block a row — BF16 1024×50257 3,420 GB/s
// (84.2 %; v6 2,246, 55.3 %), 8192×50257 3,707 (87.0 %; v6 2,366), 1024×32000 3,363 (85.5 %; v6 3,080),
// 8192×32000 3,861 (91.2 %; v6 3,493); a cluster of 2 — FP32 1024×50257 3,181 (76.0 %; v6 3,013), 8192×50257
// 3,584 (83.7 %; v6 3,063), but FP32 1024×32000 2,976 (72.1 %) and 8192×32000 3,410 (79.8 %) against v6's one
// block of 1024 × 8 registers, 3,729 and 4,177 (90.3 %, 97.7 %).
// Bottleneck that remains: ncu at 1024×50257 BF16 (58.8 µs at 1.97 GHz): DRAM 63.3 % of peak, issue active
// 48.5 % with 16 warps an SM, top stalls mio_throttle 1.66 and wait 1.14 cycles an issue: the three passes
// over shared memory and two exponentials an element keep the SM busy half the time, and with two stages of
// a 100 KB row the ring drains at the grid's last rows (⌈1024/132⌉ = 8 rows a block, 7.76 on average). The
// 2-block cluster path, exchanging through v6's publish and cluster barriers (c98 at 32bfe5e, 1024×50257 FP32,
// 130 µs): issue active 27.3 %, top stall membar 3.93 cycles an issue (the barrier's release waits for the
// previous row's global stores), barrier 1.99, long scoreboard 2.08: hence the tagged exchange. With it and
// the FFMA exponent (c99 at 5ff40ef, same conditions; reports/h200/experiments/softmax-v7-exchange-5ff40ef):
// FP32 1024×50257 3,572 GB/s (85.3 %; c98 3,154), 8192×50257 3,732 (87.2 %; 3,521), 1024×32000 3,747 (90.8 %,
// v6 3,758; c98 2,900); BF16 1024×50257 3,436 (84.6 %), 8192×50257 3,705 (87.0 %), 1024×32000 3,430 (87.2 %);
// v6 within 0.3 % of c98 on each (the control). ncu at 1024×50257 FP32: 112 µs (130), DRAM 71.4 % (61.4),
// membar 0.02 cycles an issue (3.93), top stalls now long scoreboard 3.45 (the spin on the tag), barrier and wait
// 2.41, issue active 24.2 %.
// Clusters of 4 and 8 (c100 at 3e25191, same conditions; reports/h200/experiments/softmax-v7-long-3e25191): FP32
// over 8 blocks 1024×128256 3,754 GB/s (88.7 %; v6 2,898), 1024×151936 3,890 (91.7 %; v6 2,885), 8192×128256
// 3,910 (91.3 %; v6 2,889); BF16 over 4 blocks 1024×128256 3,195 (75.8 %; v6 2,953), 1024×151936 3,533 (83.7 %;
// v6 2,687), 8192×128256 3,415 (79.8 %; v6 2,988), over 8 1024×262144 3,248 (76.7 %; v6 2,874); but 64 rows
// stay where v6 is: 64×151936 BF16 1,638 (55.9 %; v6 1,612), FP32 2,471 (68.1 %; v6 2,313), 64×262144 BF16
// 2,078 (58.7 %; v6 2,120) — two to four rows a cluster leave the ring's fill and drain unhidden. ncu at
// 1024×128256 BF16: 166 µs at 1.92 GHz, DRAM 62.3 %, issue active 47.0 % (16 warps an SM, one block), top stalls
// mio_throttle 1.89 and wait 1.58: three passes over shared memory a row, hence the one-pass statistics (Stats).
// With them (c101 at 0399d84, same conditions): BF16 1024×128256 3,298 (78.2 %), 1024×151936 3,656 (86.6 %),
// 8192×128256 3,552 (83.0 %), 1024×50257 3,473 (85.5 %); FP32 1024×128256 3,802 (89.8 %), 8192×128256 3,943
// (92.1 %), 1024×50257 3,623 (86.5 %); v6 within 0.4 % of c100. ncu at 1024×128256 BF16: 162 µs, DRAM 64.0 %,
// issue active 50.5 %, mio_throttle 1.77, wait 1.53 — one block an SM and 120 SMs still bound the BF16 rows.
// Rows of huge magnitude (a review's finding, 2026-12-04; not yet run on a GPU): m · log2 e overflows past
// |m| = 2.36e38, so a masked row of finfo.min gave +inf and a row holding 3e38 NaN. The statistics carry m (t
// derived and held finite, ring.cuh), and such a row takes a second sum and its output by exp((x − m)·log2 e).
// That change cost v7 speed, not yet profiled: in the vocab suite at ecdd5f2 (c133–c134, same H200 model and
// configs, torch and v6 within 1 % of c103) v7 ran 0.72–1.01× its c103 figures (f84c808), geometric mean FP32
// 0.874× (19 shapes), BF16 0.901× (23), worst at clusters of 8 (FP32 1024×128256 2,843 GB/s against 3,939; 1 row
// of 128256 0.866×). With ring.cuh (nvcc 13.0, sm_90a, 8 × 256 × 2, FIT=1) v7's SASS went from 1,320 to 2,904
// instructions (FP32; the huge row's loops besides the usual ones), registers 32 → 40 (BF16 32 → 45), static shared
// memory 640 → 896 bytes (the exchange's slots for a second round): beside a 75,968-byte ring (BF16 rows of
// 151936) three blocks no longer fit an SM — the driver's count 30 clusters of 8 where it was 45 (1024×151936
// BF16 0.844×). And absorb's rescale, grown by scaled(), became a branch a vector (46 BSSY in the kernel, 10
// before), where nvcc had predicated it and pipelined the stage's loads across vectors. Mended in ring.cuh after
// that run (scaled before the test, merge's exponentials unconditional, three exchange values: 768 static bytes;
// 2,800 instructions, 15 BSSY). Timed on an H100 (b71b7d9, the three forms interleaved in one process, cold,
// median of 100 launches, two rounds each, by the first form of experiments/softmax_v7_versions.py;
// reports/h100-80gb-hbm3/experiments/softmax-v7-versions-b71b7d9/): the mend 1.050× the branchy form (geometric
// mean of 10 cases, 0.99–1.18×; 64×151936 FP32 2,251 GB/s against 1,900, 1 row of 128256 FP32 106 against 92.5)
// and 0.982× the form before the huge-row fix (12 cases, 0.95–1.00×; lowest 1 row of 128256 FP32 106 against 111.5,
// 64×151936 FP32 2,251 against 2,348). At BF16 rows of 151936 that run sized the branchy form's grid by today's
// statics (45 clusters where its 896 bytes hold 30), so its 1.21× there is not the suite's case; the tool now sizes
// each form's grid by its own kernel. tests/test_nvcc.py holds the statics to the blocks an SM. e4b1860: merge's t
// from the sides' t (the same bits, one scaled() fewer a merge on the reductions' chain), about 1 % (1.005–1.014×
// by the second rounds of three H100 runs; the tool's second place ran low in its first round, whichever version
// stood there); absorb's t by the lower clamp alone, 2 % fewer instructions and no time, reverted. Against f84c808
// 0.969–0.979× at ≤ 64 rows, 0.98–1.00× from 1,024 rows; ncu at one row of 128256 FP32: 9.34 µs against 8.93, the
// SMs issuing ~1 % of the time (reports/h100-80gb-hbm3/experiments/softmax-v7-merge-e4b1860/).
// Hardware facts: cp.async.bulk (sm_90) moves a contiguous run of bytes (16-byte aligned, a multiple of
// 16) from global to shared memory and completes its bytes on an mbarrier (expect_tx); the stage's
// generic reads must be ordered before the next bulk write into it (fence.proxy.async); a block of a
// cluster reads the others' shared memory (DSMEM, mapa + ld.shared::cluster); 227 KiB of shared memory
// a block at most.
// Row layout as row.cuh's PEEL/ALIGNED paths: a head of single elements up to the row's first 16-byte
// boundary, a body of 16-byte vectors (the bulk copies), a tail; the head and tail (< 2·VEC elements)
// are loaded by block 0's first threads with ordinary loads, issued before the stage wait. Neither path
// (X and Y at different offsets from 16 bytes): out of this rung's scope, as are rows whose body two
// stages of an 8-block cluster cannot hold (v6 takes both; study/ops/softmax.py, tma_ring_plan).
// Builds on: v6 (the cluster exchange, cluster.cuh), hgemm v8's mbarrier ring (hopper.cuh).
// Constraints: as v2 on the vector paths; compute capability 9.0 (bulk copies, mbarrier tx counts,
// clusters). Launch: 1-D grid, a multiple of CLUSTER; dynamic shared memory STAGES × chunk × 16 bytes,
// chunk the body vectors a block holds (study/ops/softmax.py, tma_ring_launch).
// Traffic (ncu's byte counters, H100 at 36acd52; reports/h100-80gb-hbm3/experiments/dram-bytes-36acd52/): at 1024 ×
// 151936 BF16 it reads 311.2 MB, 1.00× its input, in 0.2275 ms at DRAM 79.0 % (short scoreboard then wait): one pass.
// arch: sm_90
// precisions: fp32 fp16 bf16
// Sized to the row (FIT=1, the declared config; study/ops/softmax.py, tma_ring_plan): one block a row, else a
// pair, while their rings hold two stages of their shares of the body, as many stages (up to 4) as the ring
// budget holds; longer rows over 8 blocks of two stages and 256 threads (at 1024×128256 BF16 the driver runs 45
// such clusters, 360 blocks, against 30 clusters of 4 at one block an SM, 120), 512 threads and up to 4 stages
// past 96 values a thread — the fastest points of the space at c102's long rows (autotune on, dab7d18, the
// tuner's own few samples: 64×151936 BF16 +25 % over the 4-block plan, 1024×128256 BF16 +2.6 %, FP32 +4.5 %
// over 8 × 512 × 3; 1024×262144 BF16 3 % slower at 256 threads). In the vocab suite (c103 at f84c808) it cost
// 1024×151936 BF16 3 % against c101's 4 × 512 × 3 (3,539 against 3,656 GB/s), a shape c102 did not time.
// config: CLUSTER=1 THREADS=512 STAGES=4 FIT=1
// space: CLUSTER=1 THREADS=256 STAGES=2 FIT=0
// space: CLUSTER=1 THREADS=512 STAGES=2 FIT=0
// space: CLUSTER=1 THREADS=1024 STAGES=2 FIT=0
// space: CLUSTER=1 THREADS=512 STAGES=3 FIT=0
// space: CLUSTER=2 THREADS=256 STAGES=2 FIT=0
// space: CLUSTER=2 THREADS=512 STAGES=2 FIT=0
// space: CLUSTER=2 THREADS=512 STAGES=3 FIT=0
// space: CLUSTER=2 THREADS=1024 STAGES=2 FIT=0
// space: CLUSTER=4 THREADS=512 STAGES=2 FIT=0
// space: CLUSTER=4 THREADS=512 STAGES=3 FIT=0
// space: CLUSTER=8 THREADS=256 STAGES=2 FIT=0
// space: CLUSTER=8 THREADS=512 STAGES=3 FIT=0
#include "common.cuh"
#include "cluster.cuh"
#include "hopper.cuh"
#include "row.cuh"

static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8,
              "CLUSTER: 1, 2, 4 or 8 blocks a row (the portable cluster sizes)");
static_assert(STAGES >= 2 && STAGES <= 4, "STAGES: 2 to 4 rows in the ring");

#include "ring.cuh"

// Thread 0: announce and start the bulk copy of this block's share [first, first + count) of `row`'s
// body into stage `s` (count 0: the arrival alone completes the phase).
__device__ __forceinline__ void fill_stage(const storage_t* __restrict__ X, long long row, int N, int chunk,
                                           unsigned stage, unsigned bar) {
    const storage_t* x = X + row * N;
    const RowParts p = row_parts(x, N);
    const int first = min(p.body, team_rank() * chunk);
    const int count = min(p.body - first, chunk);
    mbar_arrive_expect_tx(bar, (unsigned)count * 16u);
    if (count > 0) {
        const uint4* src = reinterpret_cast<const uint4*>(x + p.head) + first;
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                     :: "r"(stage), "l"(src), "r"((unsigned)count * 16u), "r"(bar) : "memory");
    }
}

extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(THREADS)
softmax_v7_tma_ring(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N, int chunk) {
    extern __shared__ __align__(128) uint4 ring[];  // STAGES × chunk vectors
    __shared__ __align__(8) unsigned long long full[STAGES];
    __shared__ float scratch[SCRATCH];
    __shared__ ExchangeSlots slots;
    require_dynamic_smem((unsigned)(STAGES * chunk * 16));
#if !VECTOR_PATH
    __trap();  // the bulk copies move 16-byte vectors; the launch refuses X and Y at different offsets from 16 bytes
#endif
    const long long cid = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    const unsigned ring0 = smem_addr(ring), full0 = smem_addr(full);
    const int rank = team_rank();

#if CLUSTER > 1
    if (threadIdx.x < ExchangeSlots::WORDS) slots.word[threadIdx.x] = 0;
    cluster_arrive();  // both blocks' slots are zero before either sends (the launch's one cluster barrier)
    cluster_wait();
#endif
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(full0 + 8 * s, 1);
        mbar_fence_init();
        for (int s = 0; s < STAGES && cid + s * clusters < M; ++s)
            fill_stage(X, cid + s * clusters, N, chunk, ring0 + s * chunk * 16, full0 + 8 * s);
    }
    __syncthreads();

    for (int k = 0;; ++k) {
        const long long row = cid + k * clusters;
        if (row >= M) break;
        const int s = k % STAGES;
        const storage_t* x = X + row * N;
        storage_t* y = Y + row * N;
        const RowParts p = row_parts(x, N);  // y's the same: X and Y share their offset from 16 bytes
        const int first = min(p.body, rank * chunk), count = min(p.body - first, chunk);
        // The head and tail singles, one to each of block 0's first threads, loading while the stage lands.
        const bool has_single = rank == 0 && (int)threadIdx.x < p.head + p.tail;
        const float single = has_single ? to_float(x[p.single(threadIdx.x)]) : NEG_INF;
        mbar_wait(full0 + 8 * s, (k / STAGES) & 1);

        const uint4* stage = ring + s * chunk;
        Stats st{NEG_INF, NEG_INF, 0.0f};
        if (has_single) absorb<1>(st, {single});
        absorb_vectors(st, stage, count);
        st = row_stats<BlockSync>(st, scratch, slots, k, has_single, single,
                                  [&](float m) { return sum_minus(stage, count, m); });
        const float m = st.m, shift = st.t, inv = 1.0f / st.d;
        uint4* yv = reinterpret_cast<uint4*>(y + p.head) + first;
        if (!huge(m)) write_vectors(stage, yv, count, inv, [=](float x) { return exp_shifted(x, shift); });
        else write_vectors(stage, yv, count, inv, [=](float x) { return exp_minus(x, m); });
        if (has_single)
            y[p.single(threadIdx.x)] = from_float((huge(m) ? exp_minus(single, m) : exp_shifted(single, shift)) * inv);

        __syncthreads();  // every thread's reads of stage s are done ...
        if (threadIdx.x == 0 && row + STAGES * clusters < M) {
            // ... and ordered before the copy engine's writes into it (generic proxy, then async proxy)
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            fill_stage(X, row + STAGES * clusters, N, chunk, ring0 + s * chunk * 16, full0 + 8 * s);
        }
    }
    // No exit barrier: a block writes into the other's slots only values the other waits for.
}

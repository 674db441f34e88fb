// softmax v7 — rows streamed into a ring of shared-memory stages by TMA bulk copies, a persistent grid
// walking the rows, the next rows' loads in flight while a row is reduced and written
// (docs/ladders/softmax.md, v7).
// Idea: v4–v6 hold a row in registers: a block loads its part of the row, then reduces, exchanges and
// writes it with no load in flight, and registers bound the bytes an SM can have in the air (at 1024 × 4
// vectors, two blocks: 128 KiB an SM, and both blocks tend to be in the same phase). Here each block owns
// a ring of STAGES stages in shared memory and walks rows cid, cid + clusters, … (a persistent grid, one
// cluster of CLUSTER blocks a row, CLUSTER 1, 2, 4 or 8): thread 0 issues one cp.async.bulk per stage (the
// block's contiguous share of the row's 16-byte body, counted on the stage's full mbarrier), STAGES rows
// ahead; the block waits on the stage, takes the row's maximum, the sum of exp(x − max) and writes
// exp(x − max) / sum from shared memory (three passes over on-chip data: HBM sees the row read once and
// written once), then hands the stage back to the copy engine for row k + STAGES. A cluster splits a row
// the ring of one block cannot hold twice (FP32 rows beyond ~28,900 elements, FP16/BF16 ~57,800; 2 blocks,
// else 4, else 8): each block holds its share, the maxima and sums are exchanged through DSMEM (a tagged
// word stored into each other block's shared memory, no cluster barrier: see send/receive). Clusters of 4
// and 8 (rows of 57,857–231,424 FP32 or 115,713–462,848 FP16/BF16 elements) are written, compiled and
// planned but not yet run on a GPU (their grid: the driver's count of co-resident clusters).
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
// arch: sm_90
// precisions: fp32 fp16 bf16
// Sized to the row (FIT=1, the declared config; study/ops/softmax.py, tma_ring_plan): the fewest blocks a
// row (1, 2, 4, 8) whose rings hold two stages of their shares of the body; as many stages (up to 4) as the
// ring budget holds, and as many blocks an SM as shared memory and threads allow.
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

#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
__device__ __forceinline__ int cluster_rank_or_0() { return cluster_rank(); }
#else
#define CLUSTER_DIMS
__device__ __forceinline__ int cluster_rank_or_0() { return 0; }
#endif

// row.cuh's reductions use scratch[0, 64).
constexpr int SCRATCH = 64;

#if CLUSTER > 1
// The pair's exchange without a cluster barrier: thread 0 stores its block's value with a tag into a slot in
// the other block's shared memory (st.relaxed.cluster.shared::cluster, one 64-bit word: value and tag land
// together), and every thread of the other block spins on its own slot until the tag is the one it expects.
// Why: the first form (v6's publish + barrier.cluster.arrive.release / wait) made ncu's top stall membar at
// 1024×50257 FP32 (3.93 cycles an issue, c98): the release orders every thread's global stores of the
// previous row before its arrival. Slots {max, sum} × row parity × sending rank: another block writes row
// k + 2's into a slot only after it has this block's sum of row k + 1, sent after every thread here has read
// row k's.
// Tags 2k + which + 1 never repeat within a launch and are never 0, the slots' value after the one cluster
// barrier at the start (before which no block sends).
struct ExchangeSlots {
    static constexpr int WORDS = 2 * 2 * CLUSTER;
    unsigned long long word[WORDS];
    __device__ __forceinline__ unsigned at(int which, int k, int from) {
        return smem_addr(&word[((k & 1) * 2 + which) * CLUSTER + from]);
    }
};

// Thread 0: this block's value of row k into its slot in every other block of the cluster.
__device__ __forceinline__ void send(ExchangeSlots& slots, int which, int k, float v) {
    const int rank = cluster_rank();
    const unsigned local = slots.at(which, k, rank);
    const unsigned long long word = ((unsigned long long)(2u * k + which + 1) << 32) | __float_as_uint(v);
    for (int r = 0; r < CLUSTER; ++r) {
        if (r == rank) continue;
        unsigned remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(r));
        asm volatile("st.relaxed.cluster.shared::cluster.b64 [%0], %1;\n" :: "r"(remote), "l"(word) : "memory");
    }
}

// Block `from`'s value of row k, once its store has landed here.
__device__ __forceinline__ float receive(ExchangeSlots& slots, int which, int k, int from) {
    const unsigned local = slots.at(which, k, from);
    const unsigned tag = 2u * k + which + 1;
    unsigned long long word;
    do {
        asm volatile("ld.relaxed.cluster.shared::cta.b64 %0, [%1];\n" : "=l"(word) : "r"(local) : "memory");
    } while ((unsigned)(word >> 32) != tag);
    return __uint_as_float((unsigned)word);
}
#else
struct ExchangeSlots {};
#endif

// The maximum (MAX) or sum over the row's team: the block, then (CLUSTER > 1) the blocks' values merged in rank
// order, the same order in every block, so all normalise the row with the same bits.
template <bool MAX>
__device__ __forceinline__ float team_reduce(float v, float* scratch, ExchangeSlots& slots, int k) {
    v = block_reduce<MAX>(v, scratch);
#if CLUSTER > 1
    const int which = MAX ? 0 : 1, rank = cluster_rank();
    if (threadIdx.x == 0) send(slots, which, k, v);
    float total = rank == 0 ? v : receive(slots, which, k, 0);
#pragma unroll
    for (int r = 1; r < CLUSTER; ++r) {
        const float other = r == rank ? v : receive(slots, which, k, r);
        total = MAX ? fmaxf(total, other) : total + other;
    }
    v = total;
#endif
    return v;
}

// exp(x − m) as 2^(x·log2 e − m·log2 e), `shift` = m·log2 e: one FFMA before the MUFU, where __expf(x − m)
// takes an FADD and an FMUL (the SM issues half of the time, c97's ncu). The rounding of m·log2 e scales every
// term of the sum and every output alike, so it cancels in their ratio; x = −inf gives 0; a row all −inf gives
// NaN as __expf(−inf − (−inf)) did, and as torch does. ex2.approx.ftz as __expf's own: the non-ftz form (c98 at
// 32bfe5e) adds the denormal range's scaling around every MUFU: issue active 48.5 → 58.2 % and 3–4 % more time
// at 1,024 rows of 32000–50257 BF16.
__device__ __forceinline__ float exp_shifted(float x, float shift) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(fmaf(x, 1.4426950408889634f, -shift)));
    return r;
}

// Thread 0: announce and start the bulk copy of this block's share [first, first + count) of `row`'s
// body into stage `s` (count 0: the arrival alone completes the phase).
__device__ __forceinline__ void fill_stage(const storage_t* __restrict__ X, long long row, int N, int chunk,
                                           unsigned stage, unsigned bar) {
    const storage_t* x = X + row * N;
    const RowParts p = row_parts(x, N);
    const int first = min(p.body, cluster_rank_or_0() * chunk);
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
    const int rank = cluster_rank_or_0();

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
        float m = single;
#pragma unroll 4
        for (int i = threadIdx.x; i < count; i += THREADS) {
            float v[VEC];
            unpack(stage[i], v);
#pragma unroll
            for (int e = 0; e < VEC; ++e) m = fmaxf(m, v[e]);
        }
        m = team_reduce<true>(m, scratch, slots, k);
        const float shift = m * 1.4426950408889634f;
        float d = has_single ? exp_shifted(single, shift) : 0.0f;
#pragma unroll 4
        for (int i = threadIdx.x; i < count; i += THREADS) {
            float v[VEC];
            unpack(stage[i], v);
#pragma unroll
            for (int e = 0; e < VEC; ++e) d += exp_shifted(v[e], shift);
        }
        const float inv = 1.0f / team_reduce<false>(d, scratch, slots, k);
        uint4* yv = reinterpret_cast<uint4*>(y + p.head) + first;
#pragma unroll 4
        for (int i = threadIdx.x; i < count; i += THREADS) {
            float v[VEC];
            unpack(stage[i], v);
#pragma unroll
            for (int e = 0; e < VEC; ++e) v[e] = exp_shifted(v[e], shift) * inv;
            yv[i] = pack(v);
        }
        if (has_single) y[p.single(threadIdx.x)] = from_float(exp_shifted(single, shift) * inv);

        __syncthreads();  // every thread's reads of stage s are done ...
        if (threadIdx.x == 0 && row + STAGES * clusters < M) {
            // ... and ordered before the copy engine's writes into it (generic proxy, then async proxy)
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            fill_stage(X, row + STAGES * clusters, N, chunk, ring0 + s * chunk * 16, full0 + 8 * s);
        }
    }
    // No exit barrier: a block writes into the other's slots only values the other waits for.
}

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
// previous row before its arrival. Slots {t, d} (Stats) × row parity × sending rank: another block writes row
// k + 2's into a slot only after it has this block's statistics of row k + 1, sent after every thread here has
// read row k's. racecheck reports these pairs of stores and spin loads (c104): both are strong operations at
// cluster scope on one aligned 64-bit word, not a race in the PTX memory model, but not what racecheck models.
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

// The row's statistics in the exponent's own scale: t = max · log2 e (rounded once) and d = Σ 2^(x·log2 e − t),
// so that the output 2^(x·log2 e − t) / d uses the very t its sum did (the rounding of t cancels in the ratio;
// carrying the maximum and rescaling by __expf(m − top) would leave each partial's rounding of m · log2 e in the
// sum, ~3e-4 relative at |x| ~ 10^4). One pass over the stage takes both (an online softmax): a pass over shared
// memory and a cluster exchange fewer than max-then-sum, whose ncu top stall was mio_throttle (c100 at 3e25191,
// 1024×128256 BF16: issue active 47.0 %, 16 warps an SM).
struct Stats {
    float t, d;
};

__device__ __forceinline__ float ex2(float a) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
}

// 2^(x·log2 e − t): one FFMA before the MUFU, where __expf(x − m) takes an FADD and an FMUL (the SM issues half
// of the time, c97's ncu); x = −inf gives 0. ex2.approx.ftz as __expf's own: the non-ftz form (c98 at 32bfe5e)
// adds the denormal range's scaling around every MUFU: issue active 48.5 → 58.2 % and 3–4 % more time at 1,024
// rows of 32000–50257 BF16.
__device__ __forceinline__ float exp_shifted(float x, float t) { return ex2(fmaf(x, 1.4426950408889634f, -t)); }

// n more values into a thread's statistics. A larger maximum rescales d by 2^(t_old − t_new) (0 from
// t_old = −inf). While t is −inf every value seen is −inf or NaN, and the shift is 0 (−inf − (−inf) is NaN): −inf
// adds 0, NaN adds NaN. A NaN never raises t (fmaxf drops it) but reaches d, and from d the output, as torch's does.
template <int n>
__device__ __forceinline__ void absorb(Stats& s, const float (&v)[n]) {
    float top = v[0];
#pragma unroll
    for (int e = 1; e < n; ++e) top = fmaxf(top, v[e]);
    const float t = top * 1.4426950408889634f;
    if (t > s.t) {
        s.d *= ex2(s.t - t);
        s.t = t;
    }
    const float shift = s.t == NEG_INF ? 0.0f : s.t;
#pragma unroll
    for (int e = 0; e < n; ++e) s.d += exp_shifted(v[e], shift);
}

// Two sides' statistics merged: a side that has seen only −inf (t = −inf) adds its d as it is — 0, or NaN if it
// met a NaN. The same operands in the same order give the same bits in every block of a cluster.
__device__ __forceinline__ Stats merge(Stats a, Stats b) {
    const float top = fmaxf(a.t, b.t);
    return {top, (a.t == NEG_INF ? a.d : a.d * ex2(a.t - top)) + (b.t == NEG_INF ? b.d : b.d * ex2(b.t - top))};
}

__device__ __forceinline__ Stats shuffle_merge(Stats s) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s = merge(s, {__shfl_xor_sync(0xffffffffu, s.t, o), __shfl_xor_sync(0xffffffffu, s.d, o)});
    return s;
}

// The block's statistics, in every thread: the warps' by shuffles, then warp 0 over theirs. scratch: 64 floats.
__device__ __forceinline__ Stats block_stats(Stats s, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    s = shuffle_merge(s);
    if (lane == 0) { scratch[warp] = s.t; scratch[32 + warp] = s.d; }
    __syncthreads();
    if (warp == 0) {
        Stats w = lane < THREADS / 32 ? Stats{scratch[lane], scratch[32 + lane]} : Stats{NEG_INF, 0.0f};
        w = shuffle_merge(w);
        if (lane == 0) { scratch[0] = w.t; scratch[32] = w.d; }  // every lane has read its slots before
    }
    __syncthreads();
    s = {scratch[0], scratch[32]};
    __syncthreads();
    return s;
}

// The row's statistics over its team: the block's, then (CLUSTER > 1) the blocks' merged in rank order, the same
// order in every block, so all normalise the row with the same bits. Both words leave in one exchange.
__device__ __forceinline__ Stats team_stats(Stats s, float* scratch, ExchangeSlots& slots, int k) {
    s = block_stats(s, scratch);
#if CLUSTER > 1
    const int rank = cluster_rank();
    if (threadIdx.x == 0) {
        send(slots, 0, k, s.t);
        send(slots, 1, k, s.d);
    }
    Stats total = rank == 0 ? s : Stats{receive(slots, 0, k, 0), receive(slots, 1, k, 0)};
#pragma unroll
    for (int r = 1; r < CLUSTER; ++r)
        total = merge(total, r == rank ? s : Stats{receive(slots, 0, k, r), receive(slots, 1, k, r)});
    s = total;
#endif
    return s;
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
        Stats st{NEG_INF, 0.0f};
        if (has_single) absorb<1>(st, {single});
#pragma unroll 4
        for (int i = threadIdx.x; i < count; i += THREADS) {
            float v[VEC];
            unpack(stage[i], v);
            absorb(st, v);
        }
        st = team_stats(st, scratch, slots, k);
        const float shift = st.t, inv = 1.0f / st.d;
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

// The row statistics and cluster exchange of the ring rungs (softmax v7 and v8): one online pass in the exponent's
// scale, the block's merge and the cluster's through tagged DSMEM words (docs/ladders/softmax.md, v7). Include
// after common.cuh, cluster.cuh, hopper.cuh and row.cuh, with CLUSTER and THREADS (the threads that compute) set.
#pragma once

#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
__device__ __forceinline__ int cluster_rank_or_0() { return cluster_rank(); }
#else
#define CLUSTER_DIMS
__device__ __forceinline__ int cluster_rank_or_0() { return 0; }
#endif

// block_stats uses scratch[0, 64).
constexpr int SCRATCH = 64;

// Every thread of the block computes (v7).
struct BlockSync {
    static __device__ __forceinline__ void sync() { __syncthreads(); }
};

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

// The block's statistics, in every thread of its THREADS: the warps' by shuffles, then warp 0 over theirs, the
// warps meeting at Sync (BlockSync, or a named barrier of the threads that compute). scratch: 64 floats.
template <class Sync>
__device__ __forceinline__ Stats block_stats(Stats s, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    s = shuffle_merge(s);
    if (lane == 0) { scratch[warp] = s.t; scratch[32 + warp] = s.d; }
    Sync::sync();
    if (warp == 0) {
        Stats w = lane < THREADS / 32 ? Stats{scratch[lane], scratch[32 + lane]} : Stats{NEG_INF, 0.0f};
        w = shuffle_merge(w);
        if (lane == 0) { scratch[0] = w.t; scratch[32] = w.d; }  // every lane has read its slots before
    }
    Sync::sync();
    s = {scratch[0], scratch[32]};
    Sync::sync();
    return s;
}

// The row's statistics over its team: the block's, then (CLUSTER > 1) the blocks' merged in rank order, the same
// order in every block, so all normalise the row with the same bits. Both words leave in one exchange.
template <class Sync>
__device__ __forceinline__ Stats team_stats(Stats s, float* scratch, ExchangeSlots& slots, int k) {
    s = block_stats<Sync>(s, scratch);
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

// The row statistics and row exchange of the ring rungs (softmax v7 to v10): one online pass in the exponent's
// scale, the block's merge, and the row's blocks' through tagged words — in DSMEM across a cluster (v7 to v9), in
// global memory across a team of the grid's blocks (v10) (docs/ladders/softmax.md, v7 and v10). Include after
// common.cuh, cluster.cuh, hopper.cuh and row.cuh, with CLUSTER and THREADS (the threads that compute) set, and
// TEAM (blocks a row without a cluster; 1 if unset).
#pragma once

#ifndef TEAM
#define TEAM 1
#endif
static_assert(TEAM >= 1 && (CLUSTER == 1 || TEAM == 1), "a row's blocks: a cluster (CLUSTER) or a team (TEAM)");
constexpr int ROW_BLOCKS = CLUSTER * TEAM;  // the blocks that share a row: consecutive in the grid

#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif

// A block's rank among the blocks of its row (which share of the row it holds).
__device__ __forceinline__ int team_rank() {
#if CLUSTER > 1
    return cluster_rank();
#else
    return TEAM > 1 ? blockIdx.x % TEAM : 0;
#endif
}

// block_stats uses scratch[0, 64).
constexpr int SCRATCH = 64;

// Every thread of the block computes (v7).
struct BlockSync {
    static __device__ __forceinline__ void sync() { __syncthreads(); }
};

#if CLUSTER > 1
// The cluster's exchange without a cluster barrier: thread 0 stores its block's value with a tag into a slot in
// every other block's shared memory (st.relaxed.cluster.shared::cluster, one 64-bit word: value and tag land
// together), and every thread of each spins on its own slot until the tag is the one it expects.
// Why: the first form (v6's publish + barrier.cluster.arrive.release / wait) made ncu's top stall membar at
// 1024×50257 FP32 (3.93 cycles an issue, c98): the release orders every thread's global stores of the
// previous row before its arrival. Slots of a row's values (m and d, then a huge row's second d) × row
// (k mod ROW_SLOTS) × sending rank. With 2 (v7, v8): another block writes row k + 2's into a slot only after it
// has this block's statistics of row k + 1, sent after every thread here has read row k's. racecheck reports
// these pairs of stores and spin loads (c104): both are strong operations at cluster scope on one aligned 64-bit
// word, not a race in the PTX memory model, but not what racecheck models.
// Tags 4k + which + 1 never repeat within a launch and are never 0, the slots' value after the one cluster
// barrier at the start (before which no block sends). ROW_SLOTS rows' slots: 2 where a block sends row k + 1's
// values only after it has read row k's (v7, v8); a kernel that sends row k + 1's before it reads row k's (v9)
// sets 4 before including this file (its header says why 4).
#ifndef ROW_SLOTS
#define ROW_SLOTS 2
#endif
static_assert(ROW_SLOTS == 2 || ROW_SLOTS == 4, "ROW_SLOTS: 2 or 4 rows' slots");
struct ExchangeSlots {
    // a row's values: the maximum and sum, then (huge rows) a second sum alone, the maximum being the row's in every
    // block. Three, not four: at 8 blocks a row a fourth is 128 more static bytes a block, and beside a 75,968-byte
    // ring (BF16 rows of 151936) 896 left two blocks an SM where three fit (the driver's count, c133 at ecdd5f2)
    static constexpr int VALUES = 3;
    static constexpr int WORDS = ROW_SLOTS * VALUES * CLUSTER;
    unsigned long long word[WORDS];
    __device__ __forceinline__ unsigned at(int which, int k, int from) {
        return smem_addr(&word[((k & (ROW_SLOTS - 1)) * VALUES + which) * CLUSTER + from]);
    }
};

// Thread 0: this block's value of row k into its slot in every other block of the cluster.
__device__ __forceinline__ void send(ExchangeSlots& slots, int which, int k, float v) {
    const int rank = cluster_rank();
    const unsigned local = slots.at(which, k, rank);
    const unsigned long long word = ((unsigned long long)(4u * k + which + 1) << 32) | __float_as_uint(v);
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
    const unsigned tag = 4u * k + which + 1;
    unsigned long long word;
    do {
        asm volatile("ld.relaxed.cluster.shared::cta.b64 %0, [%1];\n" : "=l"(word) : "r"(local) : "memory");
    } while ((unsigned)(word >> 32) != tag);
    return __uint_as_float((unsigned)word);
}
#elif TEAM > 1
// A team's exchange (v10) through global memory: the blocks of a team share no cluster, so each row's values go
// through L2 as tagged 64-bit words, the DSMEM exchange's protocol with `st/ld.relaxed.gpu` in place of its cluster
// scope. Thread 0 of each block stores its (maximum, sum) into its rank's pair of a row slot in one 16-byte store,
// each word (tag << 32 | value bits), and in every block the threads r < TEAM poll rank r's pair until both words
// carry the tag they expect. As with DSMEM the value lands with its tag: no flag, no fence. The words persist
// across launches and nothing zeroes them, so the tags carry the launch: thread 0 of each block takes a ticket
// from a counter the launch's buffers own (never reset); ticket ÷ grid blocks is the launch's epoch, and a team's
// tags run base + 2k + round + 1 with base = epoch · 2 · (rows a team walks) — disjoint from the last launch's,
// which wrote the words now there (each launch of a launcher has one shape). A tag returns only after 2^32 of them
// (2^31 rows a team, one launcher): none of the study's runs comes near. Slots of ROW_SLOTS rows, by the cluster
// exchange's argument above (4 where a block sends row k + 1's before it reads row k's). The poll is bounded: a
// team whose blocks are not all resident (the launch sizes the grid to one block an SM, all resident on an idle
// GPU) would wait forever; after TEAM_POLLS rounds it reads NaN, which the gate reports.
#ifndef ROW_SLOTS
#define ROW_SLOTS 2
#endif
static_assert(ROW_SLOTS == 2 || ROW_SLOTS == 4, "ROW_SLOTS: 2 or 4 rows' slots");
constexpr unsigned TEAM_POLLS = 1u << 22;
struct ExchangeSlots {
    static constexpr int WORDS = ROW_SLOTS * 2 * TEAM * 2;  // rows × rounds × ranks × (m, d): a team's
    unsigned long long* words;  // this team's
    unsigned base;              // this launch's tags start past it
    __device__ __forceinline__ unsigned long long* at(int k, int round, int rank) const {
        return words + 2 * (((k & (ROW_SLOTS - 1)) * 2 + round) * TEAM + rank);
    }
    __device__ __forceinline__ unsigned tag(int k, int round) const { return base + 2u * k + round + 1u; }
};

// Thread 0, before the start's barrier: this team's words and this launch's tags (`teams` teams, `team` this one).
__device__ __forceinline__ void team_start(ExchangeSlots& slots, unsigned long long* words, unsigned long long* tickets,
                                           int M, long long teams, long long team) {
    if (threadIdx.x != 0) return;
    const unsigned long long epoch = atomicAdd(tickets, 1ull) / gridDim.x;
    slots.words = words + team * ExchangeSlots::WORDS;
    slots.base = (unsigned)(epoch * 2ull * (unsigned long long)((M + teams - 1) / teams));
}

// Thread 0: this block's (m, d) of row k into its rank's pair.
__device__ __forceinline__ void send_pair(const ExchangeSlots& slots, int k, int round, float m, float d) {
    const unsigned long long tag = (unsigned long long)slots.tag(k, round) << 32;
    asm volatile("st.relaxed.gpu.global.v2.b64 [%0], {%1, %2};\n"
                 :: "l"(slots.at(k, round, team_rank())), "l"(tag | __float_as_uint(m)), "l"(tag | __float_as_uint(d))
                 : "memory");
}

// Rank `from`'s (m, d) of row k once both words carry its tag; NaN if they never do (TEAM_POLLS).
__device__ __forceinline__ float2 receive_pair(const ExchangeSlots& slots, int k, int round, int from) {
    const unsigned tag = slots.tag(k, round);
    const unsigned long long* at = slots.at(k, round, from);
    for (unsigned polls = 0; polls < TEAM_POLLS; ++polls) {
        unsigned long long m, d;
        asm volatile("ld.relaxed.gpu.global.v2.b64 {%0, %1}, [%2];\n" : "=l"(m), "=l"(d) : "l"(at) : "memory");
        if ((unsigned)(m >> 32) == tag && (unsigned)(d >> 32) == tag)
            return make_float2(__uint_as_float((unsigned)m), __uint_as_float((unsigned)d));
    }
    return make_float2(__int_as_float(0x7fc00000), __int_as_float(0x7fc00000));
}
#else
struct ExchangeSlots {};
#endif

// The row's statistics in the exponent's own scale: the maximum m, t = m · log2 e (rounded once) and
// d = Σ 2^(x·log2 e − t), so that the output 2^(x·log2 e − t) / d uses the very t its sum did (the rounding of t
// cancels in the ratio; carrying the maximum and rescaling by __expf(m − top) would leave each partial's rounding
// of m · log2 e in the sum, ~3e-4 relative at |x| ~ 10^4). One pass over the stage takes them (an online
// softmax): a pass over shared memory and a cluster exchange fewer than max-then-sum, whose ncu top stall was
// mio_throttle (c100 at 3e25191, 1024×128256 BF16: issue active 47.0 %, 16 warps an SM). m travels, t is
// derived (scaled): where |m| passes FLT_MAX / log2 e (2.36e38; a masked row of finfo.min, say) t would overflow,
// so it is held at ±FLT_MAX and the row takes the subtraction form instead (huge, row_stats).
struct Stats {
    float m, t, d;
};

constexpr float LOG2E = 1.4426950408889634f;
constexpr float FLOAT_MAX = 3.402823466e38f;

__device__ __forceinline__ float ex2(float a) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
}

// m · log2 e; ±inf for m = ±inf (a row with +inf is NaN, as torch's; −inf: nothing but −inf or NaN seen), and
// finite m held inside the finite floats.
__device__ __forceinline__ float scaled(float m) {
    const float t = m * LOG2E;
    return fabsf(m) <= FLOAT_MAX ? fminf(fmaxf(t, -FLOAT_MAX), FLOAT_MAX) : t;
}

// A row whose maximum overflows m · log2 e (the same in every block of a cluster: they hold the same m).
__device__ __forceinline__ bool huge(float m) { return fabsf(m) <= FLOAT_MAX && fabsf(m) > FLOAT_MAX / LOG2E; }

// 2^(x·log2 e − t): one FFMA before the MUFU, where __expf(x − m) takes an FADD and an FMUL (the SM issues half
// of the time, c97's ncu); x = −inf gives 0. ex2.approx.ftz as __expf's own: the non-ftz form (c98 at 32bfe5e)
// adds the denormal range's scaling around every MUFU: issue active 48.5 → 58.2 % and 3–4 % more time at 1,024
// rows of 32000–50257 BF16.
__device__ __forceinline__ float exp_shifted(float x, float t) { return ex2(fmaf(x, LOG2E, -t)); }

// exp(x − m) by the subtraction (a huge row's form: no product of m overflows).
__device__ __forceinline__ float exp_minus(float x, float m) { return ex2((x - m) * LOG2E); }

// n more values into a thread's statistics. A larger maximum rescales d by 2^(t_old − t_new) (0 from
// t_old = −inf). While m is −inf every value seen is −inf or NaN, and the shift is 0 (−inf − (−inf) is NaN): −inf
// adds 0, NaN adds NaN. A NaN never raises m (fmaxf drops it) but reaches d, and from d the output, as torch's does.
template <int n>
__device__ __forceinline__ void absorb(Stats& s, const float (&v)[n]) {
    float top = v[0];
#pragma unroll
    for (int e = 1; e < n; ++e) top = fmaxf(top, v[e]);
    // scaled(top) before the test, not inside: inside, the rescale grew past what nvcc predicates, and each vector
    // took a branch (BSSY/BSYNC) that kept the next vectors' shared-memory loads from issuing under this one's
    // MUFUs (v7's SASS, sm_90a; v7 at ecdd5f2 ran 0.72–1.01× its figures of f84c808, whose absorb was branch-free)
    const float t = scaled(top);
    if (top > s.m) {
        s.d *= ex2(s.t - t);
        s.m = top;
        s.t = t;
    }
    const float shift = s.m == NEG_INF ? 0.0f : s.t;
#pragma unroll
    for (int e = 0; e < n; ++e) s.d += exp_shifted(v[e], shift);
}

// Two sides' statistics merged: a side that has seen only −inf (m = −inf) adds its d as it is — 0, or NaN if it
// met a NaN. The same operands in the same order give the same bits in every block of a cluster.
__device__ __forceinline__ Stats merge(Stats a, float bm, float bd) {
    // both exponentials unconditional, selected after: under the conditions nvcc branched (as absorb's rescale did).
    // t as the larger of the sides' t (every Stats carries t = scaled(m), and scaled is monotone): the bits of
    // scaled(top) without a second scaled() on the reductions' dependent chain (v7 at CLUSTER 8, sm_90a: SASS
    // FP32 2,880 → 2,656 instructions, BF16 3,584 → 3,328)
    const float bt = scaled(bm), top = fmaxf(a.m, bm), t = fmaxf(a.t, bt), ea = ex2(a.t - t), eb = ex2(bt - t);
    return {top, t, (a.m == NEG_INF ? a.d : a.d * ea) + (bm == NEG_INF ? bd : bd * eb)};
}

__device__ __forceinline__ Stats shuffle_merge(Stats s) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s = merge(s, __shfl_xor_sync(0xffffffffu, s.m, o), __shfl_xor_sync(0xffffffffu, s.d, o));
    return s;
}

// The block's statistics, in every thread of its THREADS: the warps' by shuffles, then warp 0 over theirs, the
// warps meeting at Sync (BlockSync, or a named barrier of the threads that compute). scratch: 64 floats.
template <class Sync>
__device__ __forceinline__ Stats block_stats(Stats s, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    s = shuffle_merge(s);
    if (lane == 0) { scratch[warp] = s.m; scratch[32 + warp] = s.d; }
    Sync::sync();
    if (warp == 0) {
        const float m = lane < THREADS / 32 ? scratch[lane] : NEG_INF;
        Stats w = shuffle_merge({m, scaled(m), lane < THREADS / 32 ? scratch[32 + lane] : 0.0f});
        if (lane == 0) { scratch[0] = w.m; scratch[32] = w.d; }  // every lane has read its slots before
    }
    Sync::sync();
    s = {scratch[0], scaled(scratch[0]), scratch[32]};
    Sync::sync();
    return s;
}

// The row's statistics over its team in two steps: publish, the block's (every thread gets them) sent to the
// other blocks of the cluster; gather, the blocks' merged in rank order, the same order in every block, so all
// normalise the row with the same bits. Both words leave in one exchange; `round` 1 is a huge row's second (its
// sum by the subtraction form, m the same everywhere), in slots of its own. Between the two a kernel may do other
// work (v9: the next row's first pass) while the values cross the cluster.
template <class Sync>
__device__ __forceinline__ Stats publish(Stats s, float* scratch, ExchangeSlots& slots, int k, int round = 0) {
    s = block_stats<Sync>(s, scratch);
#if CLUSTER > 1
    if (threadIdx.x == 0) {
        if (round == 0) send(slots, 0, k, s.m);
        send(slots, round == 0 ? 1 : 2, k, s.d);
    }
#elif TEAM > 1
    if (threadIdx.x == 0) send_pair(slots, k, round, s.m, s.d);
#endif
    return s;
}

// `s`: this block's statistics as publish gave them. A cluster's are merged by every thread in rank order; a team's
// (up to THREADS blocks) by the block's reduction, thread r holding rank r's: the same tree in every block.
template <class Sync>
__device__ __forceinline__ Stats gather(Stats s, float* scratch, ExchangeSlots& slots, int k, int round = 0) {
#if TEAM > 1
    static_assert(TEAM <= THREADS, "TEAM: at most a block's computing threads, one a rank");
    Stats mine{NEG_INF, NEG_INF, 0.0f};
    const int r = threadIdx.x;
    if (r == team_rank()) mine = s;  // the bits it sent: t = scaled(m), as a received pair gets below
    else if (r < TEAM) {
        const float2 v = receive_pair(slots, k, round, r);
        mine = {v.x, scaled(v.x), v.y};
    }
    s = block_stats<Sync>(mine, scratch);
#elif CLUSTER > 1
    // round 1: only the sums cross, each block's maximum the row's
    const int rank = cluster_rank(), sum = round == 0 ? 1 : 2;
    Stats total = s;  // rank 0's, as block_stats gives it: t = scaled(m)
    if (rank != 0) {
        const float m = round == 0 ? receive(slots, 0, k, 0) : s.m;
        total = {m, scaled(m), receive(slots, sum, k, 0)};
    }
#pragma unroll
    for (int r = 1; r < CLUSTER; ++r) {
        if (r == rank) total = merge(total, s.m, s.d);
        else total = merge(total, round == 0 ? receive(slots, 0, k, r) : s.m, receive(slots, sum, k, r));
    }
    s = total;
#endif
    return s;
}

template <class Sync>
__device__ __forceinline__ Stats team_stats(Stats s, float* scratch, ExchangeSlots& slots, int k, int round = 0) {
    return gather<Sync>(publish<Sync>(s, scratch, slots, k, round), scratch, slots, k, round);
}

// The output of `count` vectors of a stage into yv: exp(x − m) / d, by `e` (exp_shifted with the row's t, or a
// huge row's exp_minus), each vector read from shared memory and written once.
template <class Exp>
__device__ __forceinline__ void write_vectors(const uint4* stage, uint4* yv, int count, float inv, Exp e) {
#pragma unroll 4
    for (int i = threadIdx.x; i < count; i += THREADS) {
        float v[VEC];
        unpack(stage[i], v);
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[j] = e(v[j]) * inv;
        yv[i] = pack(v);
    }
}

// A huge row's sum of exp(x − m) over `count` vectors of a stage, by the subtraction form.
__device__ __forceinline__ float sum_minus(const uint4* stage, int count, float m) {
    float d = 0.0f;
#pragma unroll 4
    for (int i = threadIdx.x; i < count; i += THREADS) {
        float v[VEC];
        unpack(stage[i], v);
#pragma unroll
        for (int j = 0; j < VEC; ++j) d += exp_minus(v[j], m);
    }
    return d;
}

// `count` vectors of a stage into a thread's statistics, each thread its vectors i = tid, tid + THREADS, ….
__device__ __forceinline__ void absorb_vectors(Stats& s, const uint4* stage, int count) {
#pragma unroll 4
    for (int i = threadIdx.x; i < count; i += THREADS) {
        float v[VEC];
        unpack(stage[i], v);
        absorb(s, v);
    }
}

// A row's statistics once gathered (`total`); a huge row's (its m the same in every block) again with the sum by
// the subtraction form: `share_sum(m)` over the block's share, plus its head or tail single.
template <class Sync, class ShareSum>
__device__ __forceinline__ Stats settle(Stats total, float* scratch, ExchangeSlots& slots, int k, bool has_single,
                                        float single, ShareSum share_sum) {
    if (huge(total.m)) {
        const float d = share_sum(total.m) + (has_single ? exp_minus(single, total.m) : 0.0f);
        total = team_stats<Sync>({total.m, total.t, d}, scratch, slots, k, 1);
    }
    return total;
}

// The row's statistics from the threads' (team_stats, then settle).
template <class Sync, class ShareSum>
__device__ __forceinline__ Stats row_stats(Stats s, float* scratch, ExchangeSlots& slots, int k, bool has_single,
                                           float single, ShareSum share_sum) {
    return settle<Sync>(team_stats<Sync>(s, scratch, slots, k), scratch, slots, k, has_single, single, share_sum);
}

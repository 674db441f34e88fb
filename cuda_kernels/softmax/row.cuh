// Row helpers of the softmax ladder from v2 on (docs/ladders/softmax.md): a team of threads owns a
// row — the block of THREADS (v2–v4: reductions through warp shuffles and one shared word per
// warp) or one warp (v5: shuffles only); 16-byte vectors of storage_t; the online (maximum,
// rescaled sum) pair of v3–v5; the row held in registers of v4 and v5.
// Needs THREADS (a multiple of 32, at most 1024), ALIGNED, PEEL and common.cuh.
// The 16-byte paths: ALIGNED=1 when every row of X and Y starts on 16 bytes; PEEL=1 when rows do
// not, but X and Y sit at the same offset from 16 bytes (then so does each row pair, whatever N):
// each row is split into a head of single elements up to its first 16-byte boundary, a body of
// vectors and a tail of single elements (fewer than 2·VEC in all). Neither: single elements only.
#pragma once

#ifndef PEEL
#define PEEL 0
#endif
#define VECTOR_PATH (ALIGNED || PEEL)
// 16-byte vectors a thread loads before it uses any, in the two streaming passes (row_for_each,
// row_normalize) on the vector paths. 1: one at a time, the code of every rung that does not set it.
// More: bytes in flight a thread where ncu found the two-pass point latency-bound (softmax v6's header).
#ifndef STREAM_UNROLL
#define STREAM_UNROLL 1
#endif

static_assert(THREADS % 32 == 0 && THREADS <= 1024, "THREADS: whole warps, at most 1024");

#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The maximum (MAX) or the sum of one value per thread over the block, in every thread.
// scratch: 32 floats of shared memory, free again on return.
template <bool MAX>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < THREADS / 32 ? scratch[lane] : (MAX ? NEG_INF : 0.0f);
        w = MAX ? warp_max(w) : warp_sum(w);
        if (lane == 0) scratch[0] = w;  // every lane has read scratch[lane] before the shuffles
    }
    __syncthreads();
    const float result = scratch[0];
    __syncthreads();
    return result;
}

// The VEC elements of a 16-byte vector of storage_t, as floats, and back.
__device__ __forceinline__ void unpack(uint4 v, float (&f)[VEC]) {
    const unsigned u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#if defined(STORAGE_FP16) || defined(STORAGE_BF16)
        f[2 * i] = to_float((unsigned short)(u[i] & 0xffff));
        f[2 * i + 1] = to_float((unsigned short)(u[i] >> 16));
#else
        f[i] = __uint_as_float(u[i]);
#endif
    }
}

__device__ __forceinline__ uint4 pack(const float (&f)[VEC]) {
    unsigned u[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#if defined(STORAGE_FP16) || defined(STORAGE_BF16)
        u[i] = (unsigned)from_float(f[2 * i]) | ((unsigned)from_float(f[2 * i + 1]) << 16);
#else
        u[i] = __float_as_uint(f[i]);
#endif
    }
    return make_uint4(u[0], u[1], u[2], u[3]);
}

// A row as head single elements, body 16-byte vectors from x + head, and tail single elements.
// Without PEEL the row starts on 16 bytes and N is a multiple of VEC: no head, no tail.
struct RowParts {
    int head, body, tail;
    // The element index of the i-th single element (0 <= i < head + tail).
    __device__ __forceinline__ int single(int i) const { return i < head ? i : i + body * VEC; }
};

__device__ __forceinline__ RowParts row_parts(const storage_t* x, int N) {
#if PEEL
    const int off = (int)(reinterpret_cast<unsigned long long>(x) % 16 / sizeof(storage_t));
    const int head = min(off ? VEC - off : 0, N);
    const int body = (N - head) / VEC;
    return {head, body, N - head - body * VEC};
#else
    return {0, N / VEC, 0};
#endif
}

// Online softmax: the running maximum m of the values seen and their sum d of exp(x − m). A new
// maximum rescales the sum by exp(old − new); −inf contributes nothing (and never meets −inf).
__device__ __forceinline__ void online_add(float& m, float& d, float x) {
    if (x > m) {
        d = d * __expf(m - x) + 1.0f;
        m = x;
    } else if (x != NEG_INF) {
        d += __expf(x - m);
    }
}

// A side that has seen nothing but −inf (m = −inf) adds its d as it is: 0, or NaN if it met a NaN,
// which must reach the output as torch's does.
__device__ __forceinline__ void online_merge(float& m, float& d, float m2, float d2) {
    const float top = fmaxf(m, m2);
    d = (m == NEG_INF ? d : d * __expf(m - top)) + (m2 == NEG_INF ? d2 : d2 * __expf(m2 - top));
    m = top;
}

// The pair over the warp, in every lane.
__device__ __forceinline__ void warp_online(float& m, float& d) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        online_merge(m, d, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, d, o));
}

// The pair over the block, in every thread. scratch: 64 floats of shared memory.
__device__ __forceinline__ void block_online(float& m, float& d, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    warp_online(m, d);
    if (lane == 0) { scratch[warp] = m; scratch[32 + warp] = d; }
    __syncthreads();
    if (warp == 0) {
        float wm = lane < THREADS / 32 ? scratch[lane] : NEG_INF;
        float wd = lane < THREADS / 32 ? scratch[32 + lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            online_merge(wm, wd, __shfl_xor_sync(0xffffffffu, wm, o), __shfl_xor_sync(0xffffffffu, wd, o));
        if (lane == 0) { scratch[0] = wm; scratch[32] = wd; }
    }
    __syncthreads();
    m = scratch[0];
    d = scratch[32];
    __syncthreads();
}

// The threads that own a row. BlockTeam: the block (v2–v4), its reductions through `scratch` (64
// floats of shared memory) and barriers. WarpTeam: one warp (v5), shuffles only, no shared memory,
// no barrier — so a warp may finish (or leave) without the others.
struct BlockTeam {
    static constexpr int SIZE = THREADS;
    static __device__ __forceinline__ int rank() { return threadIdx.x; }
    static __device__ __forceinline__ float max(float v, float* scratch) { return block_reduce<true>(v, scratch); }
    static __device__ __forceinline__ float sum(float v, float* scratch) { return block_reduce<false>(v, scratch); }
    static __device__ __forceinline__ void online(float& m, float& d, float* scratch) { block_online(m, d, scratch); }
};

struct WarpTeam {
    static constexpr int SIZE = 32;
    static __device__ __forceinline__ int rank() { return threadIdx.x % 32; }
    static __device__ __forceinline__ float max(float v, float*) { return warp_max(v); }
    static __device__ __forceinline__ float sum(float v, float*) { return warp_sum(v); }
    static __device__ __forceinline__ void online(float& m, float& d, float*) { warp_online(m, d); }
};

#if VECTOR_PATH
// Body vectors k = rank, rank + SIZE, … (< body) of the team's row passed to `g(k, vector)` in that
// order, STREAM_UNROLL of them loaded before the first of them is passed: the two streaming passes' loop.
template <class Team, class G>
__device__ __forceinline__ void stream_vectors(const uint4* __restrict__ xv, int body, G g) {
    int k = Team::rank();
#if STREAM_UNROLL > 1
    for (; k + (STREAM_UNROLL - 1) * Team::SIZE < body; k += STREAM_UNROLL * Team::SIZE) {
        uint4 held[STREAM_UNROLL];
#pragma unroll
        for (int u = 0; u < STREAM_UNROLL; ++u) held[u] = xv[k + u * Team::SIZE];
#pragma unroll
        for (int u = 0; u < STREAM_UNROLL; ++u) g(k + u * Team::SIZE, held[u]);
    }
#endif
    for (; k < body; k += Team::SIZE) g(k, xv[k]);
}
#endif

// Every element of the row this rank of the team reads, as a float, passed to `f`: the body's
// 16-byte vectors, then the head and tail singles (ALIGNED or PEEL), or single elements only.
template <class Team = BlockTeam, class F>
__device__ __forceinline__ void row_for_each(const storage_t* __restrict__ x, int N, F f) {
#if VECTOR_PATH
    const RowParts p = row_parts(x, N);
    const uint4* xv = reinterpret_cast<const uint4*>(x + p.head);
    stream_vectors<Team>(xv, p.body, [&](int, uint4 vec) {
        float v[VEC];
        unpack(vec, v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) f(v[i]);
    });
    for (int i = Team::rank(); i < p.head + p.tail; i += Team::SIZE) f(to_float(x[p.single(i)]));
#else
    for (int j = Team::rank(); j < N; j += Team::SIZE) f(to_float(x[j]));
#endif
}

// v3's first pass: the row's (maximum, sum of exponentials) in one read.
template <class Team = BlockTeam>
__device__ __forceinline__ void row_online_stats(const storage_t* __restrict__ x, int N, float& m, float& d,
                                                 float* scratch) {
    m = NEG_INF;
    d = 0.0f;
    row_for_each<Team>(x, N, [&](float v) { online_add(m, d, v); });
    Team::online(m, d, scratch);
}

// The normalising pass: y = exp(x − m) · inv, reading x again.
template <class Team = BlockTeam>
__device__ __forceinline__ void row_normalize(const storage_t* __restrict__ x, storage_t* __restrict__ y, int N,
                                              float m, float inv) {
#if VECTOR_PATH
    const RowParts p = row_parts(x, N);  // y's the same: X and Y share their offset from 16 bytes
    const uint4* xv = reinterpret_cast<const uint4*>(x + p.head);
    uint4* yv = reinterpret_cast<uint4*>(y + p.head);
    stream_vectors<Team>(xv, p.body, [&](int k, uint4 vec) {
        float v[VEC];
        unpack(vec, v);
#pragma unroll
        for (int i = 0; i < VEC; ++i) v[i] = __expf(v[i] - m) * inv;
        yv[k] = pack(v);
    });
    for (int i = Team::rank(); i < p.head + p.tail; i += Team::SIZE) {
        const int j = p.single(i);
        y[j] = from_float(__expf(to_float(x[j]) - m) * inv);
    }
#else
    for (int j = Team::rank(); j < N; j += Team::SIZE) y[j] = from_float(__expf(to_float(x[j]) - m) * inv);
#endif
}

#if VECTOR_PATH
constexpr int ON_CHIP_SLOT = VEC;  // elements a register slot holds: one 16-byte vector ...
#else
constexpr int ON_CHIP_SLOT = 4;    // ... or, on the scalar path, four single elements (as FP32 floats)
#endif

// v4 and v5: the team's row held in its registers (Slots slots a thread), read once and written
// once. Returns false, having done nothing, when the row is longer than Team::SIZE · Slots ·
// ON_CHIP_SLOT elements (the caller falls back to two passes); the test is uniform over the team.
template <class Team, int Slots>
__device__ __forceinline__ bool row_on_chip(const storage_t* __restrict__ x, storage_t* __restrict__ y, int N,
                                            float* scratch) {
    if (N > Team::SIZE * Slots * ON_CHIP_SLOT) return false;
    const int r = Team::rank();
#if VECTOR_PATH
    // body ≤ N / VEC ≤ Team::SIZE · Slots; the head and tail (< 2·VEC ≤ 16 single elements) go one
    // to each of the first ranks, in `single`.
    const RowParts p = row_parts(x, N);
    const uint4* xv = reinterpret_cast<const uint4*>(x + p.head);
    uint4* yv = reinterpret_cast<uint4*>(y + p.head);
    const bool has_single = r < p.head + p.tail;
    const float single = has_single ? to_float(x[p.single(r)]) : NEG_INF;
    uint4 held[Slots];
    float m = single;
#pragma unroll
    for (int s = 0; s < Slots; ++s) {
        const int f = r + s * Team::SIZE;
        held[s] = f < p.body ? xv[f] : make_uint4(0, 0, 0, 0);
        if (f < p.body) {
            float v[VEC];
            unpack(held[s], v);
#pragma unroll
            for (int i = 0; i < VEC; ++i) m = fmaxf(m, v[i]);
        }
    }
    m = Team::max(m, scratch);
    float d = has_single ? __expf(single - m) : 0.0f;
#pragma unroll
    for (int s = 0; s < Slots; ++s) {
        if (r + s * Team::SIZE < p.body) {
            float v[VEC];
            unpack(held[s], v);
#pragma unroll
            for (int i = 0; i < VEC; ++i) d += __expf(v[i] - m);
        }
    }
    const float inv = 1.0f / Team::sum(d, scratch);
#pragma unroll
    for (int s = 0; s < Slots; ++s) {
        const int f = r + s * Team::SIZE;
        if (f < p.body) {
            float v[VEC];
            unpack(held[s], v);
#pragma unroll
            for (int i = 0; i < VEC; ++i) v[i] = __expf(v[i] - m) * inv;
            yv[f] = pack(v);
        }
    }
    if (has_single) y[p.single(r)] = from_float(__expf(single - m) * inv);
#else
    float held[Slots * ON_CHIP_SLOT];
    float m = NEG_INF;
#pragma unroll
    for (int s = 0; s < Slots * ON_CHIP_SLOT; ++s) {
        const int j = r + s * Team::SIZE;
        held[s] = j < N ? to_float(x[j]) : NEG_INF;
        m = fmaxf(m, held[s]);
    }
    m = Team::max(m, scratch);
    float d = 0.0f;
#pragma unroll
    for (int s = 0; s < Slots * ON_CHIP_SLOT; ++s)
        if (r + s * Team::SIZE < N) d += __expf(held[s] - m);
    const float inv = 1.0f / Team::sum(d, scratch);
#pragma unroll
    for (int s = 0; s < Slots * ON_CHIP_SLOT; ++s) {
        const int j = r + s * Team::SIZE;
        if (j < N) y[j] = from_float(__expf(held[s] - m) * inv);
    }
#endif
    return true;
}

// The row this block owns (grid.x rows at a time, grid.y beyond 65535), or −1.
__device__ __forceinline__ long long block_row(int M) {
    const long long row = (long long)blockIdx.y * gridDim.x + blockIdx.x;
    return row < M ? row : -1;
}

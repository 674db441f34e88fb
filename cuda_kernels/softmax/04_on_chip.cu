// softmax v4 — the row held in registers: one read, one write (docs/ladders/softmax.md, v4).
// Idea: each thread loads its share of the row once into registers (ON_CHIP 16-byte vectors,
// or ON_CHIP·4 single elements on the scalar path), and the maximum, the sum and the output are
// computed from them: HBM sees the row read once and written once, the minimum a softmax needs.
// A row longer than THREADS·ON_CHIP vectors does not fit: the block takes v3's two passes instead
// (the launch records on_chip=0 with the config).
// Removes: v3's second read of the row, where the row fits.
// Bottleneck that remains: registers bound the row length (THREADS·ON_CHIP·VEC elements: 32768
// FP32 or 65536 FP16/BF16 at 1024 threads and 8 vectors); a long row's block holds one SM's
// threads for a long time, a short row's leaves most of them idle.
// Builds on: v3 (its helpers and its fallback). Constraints: as v2. One row per block.
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=1024 ON_CHIP=8
// space: THREADS=256 ON_CHIP=8
// space: THREADS=512 ON_CHIP=8
// space: THREADS=1024 ON_CHIP=4
// space: THREADS=256 ON_CHIP=16
// space: THREADS=512 ON_CHIP=16
#include "common.cuh"
#include "row.cuh"

#if ALIGNED
constexpr int SLOT = VEC;  // elements a register slot holds: one 16-byte vector ...
#else
constexpr int SLOT = 4;    // ... or, on the scalar path, four single elements (as FP32 floats)
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_v4_on_chip(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N) {
    __shared__ float scratch[64];
    const long long row = block_row(M);
    if (row < 0) return;
    const storage_t* x = X + row * N;
    storage_t* y = Y + row * N;
    if (N > THREADS * ON_CHIP * SLOT) {  // uniform over the grid: the row does not fit
        float m, d;
        row_online_stats(x, N, m, d, scratch);
        row_normalize(x, y, N, m, 1.0f / d);
        return;
    }
#if ALIGNED
    uint4 held[ON_CHIP];
    float m = NEG_INF;
#pragma unroll
    for (int s = 0; s < ON_CHIP; ++s) {
        const int f = threadIdx.x + s * THREADS;
        held[s] = f < N / VEC ? reinterpret_cast<const uint4*>(x)[f] : make_uint4(0, 0, 0, 0);
        if (f < N / VEC) {
            float v[VEC];
            unpack(held[s], v);
#pragma unroll
            for (int i = 0; i < VEC; ++i) m = fmaxf(m, v[i]);
        }
    }
    m = block_reduce<true>(m, scratch);
    float d = 0.0f;
#pragma unroll
    for (int s = 0; s < ON_CHIP; ++s) {
        if (threadIdx.x + s * THREADS < N / VEC) {
            float v[VEC];
            unpack(held[s], v);
#pragma unroll
            for (int i = 0; i < VEC; ++i) d += __expf(v[i] - m);
        }
    }
    const float inv = 1.0f / block_reduce<false>(d, scratch);
#pragma unroll
    for (int s = 0; s < ON_CHIP; ++s) {
        const int f = threadIdx.x + s * THREADS;
        if (f < N / VEC) {
            float v[VEC];
            unpack(held[s], v);
#pragma unroll
            for (int i = 0; i < VEC; ++i) v[i] = __expf(v[i] - m) * inv;
            reinterpret_cast<uint4*>(y)[f] = pack(v);
        }
    }
#else
    float held[ON_CHIP * SLOT];
    float m = NEG_INF;
#pragma unroll
    for (int s = 0; s < ON_CHIP * SLOT; ++s) {
        const int j = threadIdx.x + s * THREADS;
        held[s] = j < N ? to_float(x[j]) : NEG_INF;
        m = fmaxf(m, held[s]);
    }
    m = block_reduce<true>(m, scratch);
    float d = 0.0f;
#pragma unroll
    for (int s = 0; s < ON_CHIP * SLOT; ++s)
        if (threadIdx.x + s * THREADS < N) d += __expf(held[s] - m);
    const float inv = 1.0f / block_reduce<false>(d, scratch);
#pragma unroll
    for (int s = 0; s < ON_CHIP * SLOT; ++s) {
        const int j = threadIdx.x + s * THREADS;
        if (j < N) y[j] = from_float(__expf(held[s] - m) * inv);
    }
#endif
}

// FP32 ceiling: a loop of independent FFMA chains and nothing else (no memory traffic).
// Each thread runs CHAINS independent chains for ITERS steps: enough independent FFMAs per
// warp to cover the FFMA latency at 32 warps per SM, and the loop unrolled so that the
// counter and branch are a small share of the issued instructions. The operands come from
// a kernel argument, so nothing folds at compile time; the final store is guarded by a
// condition the compiler cannot decide, so the chains stay live without memory traffic.
// FLOPs = 2 * CHAINS * ITERS * threads. Not a rung: measured by `python -m study ceilings`.
// config: ITERS=16384 CHAINS=8 THREADS=256
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
ffma_loop(float* __restrict__ sink, float x) {
    float acc[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) acc[c] = threadIdx.x * 1e-3f + c;
    const float y = 1.0f - x;
#pragma unroll 16
    for (int it = 0; it < ITERS; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) acc[c] = fmaf(acc[c], x, y);
    }
    float total = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) total += acc[c];
    if (total == -1.0f) sink[blockIdx.x * THREADS + threadIdx.x] = total;
}

// Legacy tensor-core ceiling: a loop of independent mma.sync.m16n8k16 chains (FP32 accumulate)
// and nothing else (no memory traffic). What the warp-level HMMA path that hgemm v6 uses can issue
// on this GPU, next to the wgmma path cuBLAS uses: v6 is judged against this, not against a peak
// that only wgmma reaches. Each warp runs CHAINS independent accumulator fragments for ITERS
// steps, so that CHAINS HMMAs per warp, times the warps of a scheduler, cover the HMMA latency;
// every chain multiplies the same A and B fragments, which stay in registers all along. The
// operands come from a kernel argument (converted with cvt), so nothing folds at compile time; the
// final store is guarded by a condition the compiler cannot decide, so the chains stay live
// without memory traffic. The operands never change inside the loop, so the tensor cores toggle
// fewer bits and draw less power than in a GEMM: the clocks recorded beside the figure say whether
// that lets this loop run at a clock a GEMM would not keep.
// FP16 by default; -DSTORAGE_BF16 issues the BF16 form (same shape, same fragment layout).
// FLOPs = 2 * 16 * 8 * 16 * CHAINS * ITERS * (threads / 32). Not a rung: measured by
// `python -m study ceilings`.
// config: ITERS=4096 CHAINS=8 THREADS=256
#include "common.cuh"
#include "mma_sync.cuh"

static_assert(THREADS % 32 == 0, "THREADS must be whole warps: mma.sync is issued by a full warp");

// Two floats rounded to one .b32 register of two halves (lo in bits 0-15), the operand type.
__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
    return (unsigned)from_float(lo) | ((unsigned)from_float(hi) << 16);
}

extern "C" __global__ void __launch_bounds__(THREADS)
mma_sync_loop(float* __restrict__ sink, float x) {
    // Operands within a factor 2 of ±x, distinct per lane and register: varied bit patterns, none
    // zero (zeros toggle nothing and draw less power than data), and FP32 sums that stay finite
    // over ITERS steps.
    const float lane = (float)(threadIdx.x % 32);
    unsigned a[4], b[2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
        a[i] = pack_half2(x * (1.0f + lane / 64 + i / 512.0f), -x * (1.0f + lane / 128 + i / 512.0f));
#pragma unroll
    for (int i = 0; i < 2; ++i)
        b[i] = pack_half2(x * (1.0f - lane / 128 - i / 512.0f), x * (1.0f + lane / 32 + i / 512.0f));
    float acc[CHAINS][4];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[c][j] = threadIdx.x * 1e-3f + c + j;
    // Unrolled by 4: 4 * CHAINS HMMAs per trip, against a counter add, a compare and a branch.
#pragma unroll 4
    for (int it = 0; it < ITERS; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) mma_m16n8k16(acc[c], a, b[0], b[1]);
    }
    float total = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) total += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
    if (total == -1.0f) sink[blockIdx.x * THREADS + threadIdx.x] = total;
}

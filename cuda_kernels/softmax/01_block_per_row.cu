// softmax v1 — one block per row, shared-memory tree reductions, three passes
// (docs/ladders/softmax.md, v1).
// Idea: the THREADS threads of a block share a row: thread t reads elements t, t + THREADS, ...,
// so a warp's load covers 32 consecutive elements (coalesced). Each thread's partial maximum
// (then partial sum) meets the others in a shared-memory tree: log2(THREADS) halving steps,
// a barrier each.
// Removes: v0's uncoalesced loads.
// Bottleneck that remains: the row is still read three times (maximum, sum, output); the trees
// cost 2·log2(THREADS) barriers per row, which short rows feel; loads are one element wide.
// Builds on: v0. Constraints: THREADS a power of two. One row per block.
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256
// space: THREADS=128
// space: THREADS=512
// space: THREADS=1024
#include "common.cuh"

static_assert((THREADS & (THREADS - 1)) == 0 && THREADS >= 32, "THREADS: a power of two, at least a warp");

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_v1_block_per_row(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N) {
    __shared__ float red[THREADS];
    const long long row = (long long)blockIdx.y * gridDim.x + blockIdx.x;
    if (row >= M) return;  // the whole block leaves: the barriers below stay uniform
    const storage_t* x = X + row * N;
    storage_t* y = Y + row * N;
    const int t = threadIdx.x;

    float m = __int_as_float(0xff800000);  // −inf
    for (int j = t; j < N; j += THREADS) m = fmaxf(m, to_float(x[j]));
    red[t] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] = fmaxf(red[t], red[t + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();  // red[0] read by all before the sums overwrite it

    float d = 0.0f;
    for (int j = t; j < N; j += THREADS) d += __expf(to_float(x[j]) - m);
    red[t] = d;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int j = t; j < N; j += THREADS) y[j] = from_float(__expf(to_float(x[j]) - m) * inv);
}

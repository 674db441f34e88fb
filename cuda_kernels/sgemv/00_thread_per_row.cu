// sgemv v0 — one thread per row (docs/ladders/sgemv.md, v0).
// Idea: y = A·x with A row-major M x N: thread r walks row r from left to right and keeps
// one FP32 accumulator; the output is rounded to the storage type once.
// Bottleneck: uncoalesced loads. At each step the 32 threads of a warp read 32 elements
// N apart (one per row): every load instruction touches 32 different sectors, so a warp
// pays 32 transactions for 128 useful bytes (FP32), and only the L1's reuse of each
// sector over the next steps keeps it from being 8x worse.
// Builds on: nothing. Constraints: none (any M, N, alignment).
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256 LANES=1
// space: THREADS=64 LANES=1
// space: THREADS=128 LANES=1
// space: THREADS=512 LANES=1
#include "common.cuh"

static_assert(LANES == 1, "one thread per row: LANES (threads per row) is 1; the launch reads it");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemv_v0_thread_per_row(const storage_t* __restrict__ A, const storage_t* __restrict__ x,
                        storage_t* __restrict__ y, int M, int N) {
    const int row = blockIdx.x * THREADS + threadIdx.x;
    if (row >= M) return;
    const storage_t* a = A + (size_t)row * N;
    float acc = 0.0f;
    for (int j = 0; j < N; ++j) acc = fmaf(to_float(a[j]), to_float(x[j]), acc);
    y[row] = from_float(acc);
}

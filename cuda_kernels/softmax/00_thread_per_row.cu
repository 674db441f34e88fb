// softmax v0 — one thread per row, three passes (docs/ladders/softmax.md, v0).
// Idea: the textbook loop, a row per thread: find the row's maximum, sum exp(x − max), then
// write exp(x − max) / sum — the maximum keeps every exponential ≤ 1, so no input overflows.
// Bottleneck it shows: the 32 threads of a warp walk 32 rows, N elements apart: each load is
// one useful element of its own 32-byte sector (uncoalesced), and the row is read three times.
// Builds on: nothing. Its sum is compensated, so that rows of any length pass the gate.
// Constraints: none (any M, N >= 1; ALIGNED is unused). THREADS rows per block.
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256 ROW_PER_THREAD=1
// space: THREADS=128 ROW_PER_THREAD=1
// space: THREADS=512 ROW_PER_THREAD=1
// space: THREADS=64 ROW_PER_THREAD=1
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_v0_thread_per_row(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N) {
    const int row = blockIdx.x * THREADS + threadIdx.x;
    if (row >= M) return;
    const storage_t* x = X + (size_t)row * N;
    storage_t* y = Y + (size_t)row * N;
    float m = __int_as_float(0xff800000);  // −inf
    for (int j = 0; j < N; ++j) m = fmaxf(m, to_float(x[j]));
    // The sum is compensated (Kahan): a plain serial FP32 sum of N terms drifts by about N·2^-30
    // (2.4e-4 at N = 262144, past the FP32 gate's 2e-4; the tree sums of v1 on drift by log N).
    // Three more FADDs an element cost nothing here: every load waits on its own sector.
    float d = 0.0f, lost = 0.0f;
    for (int j = 0; j < N; ++j) {
        const float term = __expf(to_float(x[j]) - m) - lost;
        const float next = d + term;
        lost = (next - d) - term;
        d = next;
    }
    const float inv = 1.0f / d;
    for (int j = 0; j < N; ++j) y[j] = from_float(__expf(to_float(x[j]) - m) * inv);
}

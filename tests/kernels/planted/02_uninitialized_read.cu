// A planted defect for the tests (tests/planted_op.py): only initcheck can catch it.
// A correct warp-per-row GEMV that also reads a workspace nothing ever wrote (torch.empty,
// a fresh allocation with the caching allocator off) and lets it change nothing.
// arch: sm_80
// config: THREADS=256 LANES=32 PROBE=1
#include "common.cuh"

extern "C" __global__ void planted_v2_uninitialized_read(const float* A, const float* x, float* y, int M, int N,
                                                         const float* never_written) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (THREADS / 32) + threadIdx.x / 32;
    if (row >= M) return;
    const float* a = A + (size_t)row * N;
    float acc = 0.0f;
    for (int j = lane; j < N; j += 32) acc = fmaf(a[j], x[j], acc);
    const volatile float probe = never_written[row];  // the planted mistake
    if (probe == 1.2345e-30f) acc += 1.0f;
    acc = warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

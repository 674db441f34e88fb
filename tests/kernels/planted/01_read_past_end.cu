// A planted defect for the tests (tests/planted_op.py): only memcheck can catch it.
// A correct warp-per-row GEMV that also reads x[N], one element past the end of x, and lets
// it change nothing (compared with a value it never holds): the output is right and the read
// does not fault, because x's allocation is padded — compute-sanitizer's memcheck (with the
// caching allocator off and --padding) reports an out-of-bounds read.
// arch: sm_80
// config: THREADS=256 LANES=32
#include "common.cuh"

extern "C" __global__ void planted_v1_read_past_end(const float* A, const float* x, float* y, int M, int N) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (THREADS / 32) + threadIdx.x / 32;
    if (row >= M) return;
    const float* a = A + (size_t)row * N;
    float acc = 0.0f;
    for (int j = lane; j < N; j += 32) acc = fmaf(a[j], x[j], acc);
    const volatile float probe = x[N];  // the planted mistake: one past the end
    if (probe == 1.2345e-30f) acc += 1.0f;
    acc = warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

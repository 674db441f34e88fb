// A planted defect for the tests (tests/planted_op.py): the output check must catch it.
// One warp per row, but each warp reads the NEXT row of A (the last row reads the first):
// every output is wrong, so compare reports `wrong` and never times it.
// arch: sm_80
// config: THREADS=256 LANES=32
#include "common.cuh"

extern "C" __global__ void planted_v0_wrong_row(const float* A, const float* x, float* y, int M, int N) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (THREADS / 32) + threadIdx.x / 32;
    if (row >= M) return;
    const float* a = A + (size_t)((row + 1) % M) * N;  // the planted mistake
    float acc = 0.0f;
    for (int j = lane; j < N; j += 32) acc = fmaf(a[j], x[j], acc);
    acc = warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

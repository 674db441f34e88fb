// A planted defect for the tests (tests/planted_op.py): racecheck must catch it; the output
// may or may not come out right. Two warps share a row: warp 1 writes its 32 partial sums to
// shared memory and warp 0 adds them WITHOUT a __syncthreads() in between — a read-after-write
// hazard between warps.
// arch: sm_80
// config: THREADS=64 LANES=64
#include "common.cuh"

static_assert(THREADS == 64 && LANES == 64, "two warps per row");

extern "C" __global__ void planted_v3_race(const float* A, const float* x, float* y, int M, int N) {
    __shared__ float partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int row = blockIdx.x;
    if (row >= M) return;
    const float* a = A + (size_t)row * N;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += 64) acc = fmaf(a[j], x[j], acc);
    if (warp == 1) partial[lane] = acc;
    // the planted mistake: no __syncthreads() here
    if (warp == 0) {
        acc = warp_sum(acc + partial[lane]);
        if (lane == 0) y[row] = acc;
    }
}

// A planted defect for the tests (tests/planted_op.py): only racecheck can catch it. Two warps
// share a row and reduce correctly through shared memory (a barrier between the write and the
// read), but warp 1 also writes a second shared slot that warp 0 reads BEFORE the barrier, into
// a comparison that changes nothing: a read-after-write hazard between warps that leaves the
// output right.
// arch: sm_80
// config: THREADS=64 LANES=64
#include "common.cuh"

static_assert(THREADS == 64 && LANES == 64, "two warps per row");

extern "C" __global__ void planted_v3_race(const float* A, const float* x, float* y, int M, int N) {
    __shared__ float partial[32];
    __shared__ float probe_slot[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int row = blockIdx.x;  // the grid is exactly M rows: no thread leaves before the barrier
    const float* a = A + (size_t)row * N;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < N; j += 64) acc = fmaf(a[j], x[j], acc);
    if (warp == 1) {
        partial[lane] = acc;
        probe_slot[lane] = acc;
    }
    if (warp == 0) {
        const volatile float probe = probe_slot[lane];  // the planted mistake: read before the barrier
        if (probe == 1.2345e-30f) acc += 0.0f;
    }
    __syncthreads();
    if (warp == 0) {
        acc = warp_sum(acc + partial[lane]);
        if (lane == 0) y[row] = acc;
    }
}

// sgemv v1 — one warp per row, shuffle reduction (docs/ladders/sgemv.md, v1).
// Idea: the 32 lanes of a warp share a row: lane l reads elements l, l+32, l+64, ...,
// so each load instruction of the warp reads 32 consecutive elements (128 bytes in FP32,
// one fully used line), and the 32 partial sums meet in registers through __shfl_xor_sync.
// Removes: v0's uncoalesced loads.
// Bottleneck that remains: one 4-byte (FP32) or 2-byte (FP16/BF16) load per lane per
// step: many load instructions per byte, half-width transactions for 16-bit types, and
// one load in flight per lane — too few bytes in flight to cover HBM latency.
// Builds on: v0. Constraints: none. THREADS/32 rows per block.
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256 LANES=32
// space: THREADS=128 LANES=32
// space: THREADS=512 LANES=32
// space: THREADS=1024 LANES=32
#include "common.cuh"

static_assert(THREADS % 32 == 0, "THREADS must be whole warps");
static_assert(LANES == 32, "one warp per row: LANES (threads per row) is 32; the launch reads it");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemv_v1_warp_per_row(const storage_t* __restrict__ A, const storage_t* __restrict__ x,
                      storage_t* __restrict__ y, int M, int N) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * (THREADS / 32) + threadIdx.x / 32;
    if (row >= M) return;  // whole warps leave together: the shuffles below stay full-warp
    const storage_t* a = A + (size_t)row * N;
    float acc = 0.0f;
    for (int j = lane; j < N; j += 32) acc = fmaf(to_float(a[j]), to_float(x[j]), acc);
    acc = warp_sum(acc);
    if (lane == 0) y[row] = from_float(acc);
}

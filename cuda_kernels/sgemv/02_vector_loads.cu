// sgemv v2 — 128-bit loads, WARP_ROWS rows per warp (docs/ladders/sgemv.md, v2).
// Idea: each lane loads 16 bytes at a time (4 floats or 8 halves: one LDG.128 per lane, a
// 512-byte contiguous run per warp), and a warp works on WARP_ROWS rows at once: the 16 bytes of x
// it loads are used WARP_ROWS times from registers, and WARP_ROWS independent loads of A are in flight
// per lane per step. A block of THREADS threads covers (THREADS/32)*WARP_ROWS rows.
// Removes: v1's many narrow loads (a quarter or an eighth of the load instructions per
// byte) and part of its latency exposure (WARP_ROWS loads in flight instead of one).
// Bottleneck that remains: bytes in flight. HBM needs about bandwidth x latency (4.8 TB/s
// x ~0.7 us, a few MB) in flight across the GPU; with WARP_ROWS=2 that is 32-48 bytes per lane,
// enough only at full occupancy and only when there are enough rows to fill every SM.
// Short-wide matrices (few rows) leave SMs idle.
// Builds on: v1. Constraints: the 16-byte path needs ALIGNED=1 (N a multiple of VEC and
// A, x 16-byte aligned: every row then starts on 16 bytes); ALIGNED=0 takes v1's scalar
// loop with the same WARP_ROWS-row structure.
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256 WARP_ROWS=2 LANES=32
// space: THREADS=256 WARP_ROWS=1 LANES=32
// space: THREADS=256 WARP_ROWS=4 LANES=32
// space: THREADS=128 WARP_ROWS=2 LANES=32
// space: THREADS=512 WARP_ROWS=2 LANES=32
// space: THREADS=128 WARP_ROWS=4 LANES=32
#include "common.cuh"

static_assert(THREADS % 32 == 0, "THREADS must be whole warps");
static_assert(LANES == 32, "a warp per WARP_ROWS rows: LANES (threads per row) is 32; the launch reads it");
static_assert(WARP_ROWS >= 1 && WARP_ROWS <= 8, "WARP_ROWS rows per warp: 1..8");

extern "C" __global__ void __launch_bounds__(THREADS)
sgemv_v2_vector_loads(const storage_t* __restrict__ A, const storage_t* __restrict__ x,
                      storage_t* __restrict__ y, int M, int N) {
    const int lane = threadIdx.x % 32;
    const int row0 = (blockIdx.x * (THREADS / 32) + threadIdx.x / 32) * WARP_ROWS;
    if (row0 >= M) return;
    float acc[WARP_ROWS];
    const storage_t* a[WARP_ROWS];
#pragma unroll
    for (int r = 0; r < WARP_ROWS; ++r) {
        acc[r] = 0.0f;
        a[r] = A + (size_t)min(row0 + r, M - 1) * N;  // rows past M re-read the last row, never stored
    }
#if ALIGNED
    const int nvec = N / VEC;
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    for (int v = lane; v < nvec; v += 32) {
        const uint4 xs = xv[v];
#pragma unroll
        for (int r = 0; r < WARP_ROWS; ++r) acc[r] = dot16(reinterpret_cast<const uint4*>(a[r])[v], xs, acc[r]);
    }
#else
    for (int j = lane; j < N; j += 32) {
        const float xs = to_float(x[j]);
#pragma unroll
        for (int r = 0; r < WARP_ROWS; ++r) acc[r] = fmaf(to_float(a[r][j]), xs, acc[r]);
    }
#endif
#pragma unroll
    for (int r = 0; r < WARP_ROWS; ++r) {
        const float total = warp_sum(acc[r]);
        if (lane == 0 && row0 + r < M) y[row0 + r] = from_float(total);
    }
}

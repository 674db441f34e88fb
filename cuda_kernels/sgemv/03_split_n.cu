// sgemv v3 — split-N with an ordered last-block reduction, UNROLL loads in flight per row
// (docs/ladders/sgemv.md, v3).
// Idea: two changes aimed at bytes in flight, the bottleneck v2 leaves.
// (1) Each lane issues UNROLL 16-byte loads per row before it uses any of them, so WARP_ROWS*UNROLL loads of
//     A (and UNROLL of x) are in flight per lane instead of WARP_ROWS.
// (2) When there are too few rows to give every SM enough warps (short-wide matrices such
//     as 1024 x 65536: 512 warps at WARP_ROWS=2 for 132 SMs), the columns are split into gridDim.y
//     slices of split_n columns. Each block writes one FP32 partial sum per row and slice;
//     the last block of a row group to finish (an atomic counter per group, after a
//     __threadfence) adds the slices in an order fixed by their indices and writes y, so the
//     result is the same whichever block finishes last: deterministic, one launch. The whole
//     last block reduces (32 / WARP_ROWS threads a row): thousands of slices at one or a few
//     rows. The block resets its counter to 0 for the next launch.
// The split count is chosen by the launch (study/ops/sgemv.py: 64 row slices per SM, each
// slice at least MIN_SLICE_LOADS warp-wide vector loads wide); with one slice the kernel writes
// y directly and is v2 plus the unrolled loads.
// What ncu showed on the H200 (FP32, reports/h200/profiles/): at 16384^2 v2 already streams
// at 91 % of DRAM peak (4.38 TB/s, 94 % achieved occupancy) against cuBLAS gemv2T's 88 %
// (4.23 TB/s, plus a 5 us split-K reduce kernel); the gap v3 closes is the short-wide case:
// at 1024 x 65536 with only 5 slices (320 blocks, 0.48 waves) achieved occupancy was 29 % and
// DRAM throughput 75 % — too few warps to keep enough bytes in flight.
// Removes: v2's latency exposure (too few loads in flight per lane) and its idle SMs on
// short-wide shapes.
// Registers (nvcc 13, sm_90a): 31-62, no spill except at the WARP_ROWS=1 UNROLL=4 FP32 aligned points:
// 8 bytes, where ptxas settles on 32 registers (40 and none with the one-thread-a-row reduction before);
// the SASS stores a value once at entry and reloads it after the main loop, none inside it.
// Builds on: v2 (same WARP_ROWS rows per warp, same 16-byte loads and scalar fallback).
// Constraints: ALIGNED=1 as v2 for the 16-byte path (split_n is then a multiple of
// 32*VEC, so every slice starts on 16 bytes); counter holds at least gridDim.x zeros and
// partial gridDim.y * M floats when gridDim.y > 1.
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256 WARP_ROWS=2 UNROLL=2 LANES=32 SPLIT=1
// space: THREADS=256 WARP_ROWS=1 UNROLL=4 LANES=32 SPLIT=1
// space: THREADS=256 WARP_ROWS=2 UNROLL=4 LANES=32 SPLIT=1
// space: THREADS=256 WARP_ROWS=4 UNROLL=1 LANES=32 SPLIT=1
// space: THREADS=256 WARP_ROWS=4 UNROLL=2 LANES=32 SPLIT=1
// space: THREADS=128 WARP_ROWS=2 UNROLL=2 LANES=32 SPLIT=1
// space: THREADS=512 WARP_ROWS=1 UNROLL=2 LANES=32 SPLIT=1
// space: THREADS=512 WARP_ROWS=2 UNROLL=2 LANES=32 SPLIT=1
// space: THREADS=128 WARP_ROWS=1 UNROLL=4 LANES=32 SPLIT=1
// space: THREADS=512 WARP_ROWS=1 UNROLL=4 LANES=32 SPLIT=1
#include "common.cuh"

static_assert(THREADS % 32 == 0, "THREADS must be whole warps");
static_assert(LANES == 32 && SPLIT == 1, "LANES (threads per row) and SPLIT (a column split over gridDim.y) tell the launch the grid");
static_assert(WARP_ROWS >= 1 && WARP_ROWS <= 8 && UNROLL >= 1 && UNROLL <= 8, "WARP_ROWS rows per warp and UNROLL loads in flight: 1..8");
static_assert(32 % WARP_ROWS == 0, "the reduction gives each row 32 / WARP_ROWS threads");
constexpr int ROWS = (THREADS / 32) * WARP_ROWS;  // rows per block

extern "C" __global__ void __launch_bounds__(THREADS)
sgemv_v3_split_n(const storage_t* __restrict__ A, const storage_t* __restrict__ x,
                 storage_t* __restrict__ y, int M, int N, int split_n,
                 float* __restrict__ partial, unsigned* __restrict__ counter) {
    const int lane = threadIdx.x % 32;
    const int row0 = blockIdx.x * ROWS + (threadIdx.x / 32) * WARP_ROWS;
    const int splits = gridDim.y;
    const int c0 = blockIdx.y * split_n, c1 = min(N, c0 + split_n);
    float acc[WARP_ROWS];
    const storage_t* a[WARP_ROWS];
#pragma unroll
    for (int r = 0; r < WARP_ROWS; ++r) {
        acc[r] = 0.0f;
        a[r] = A + (size_t)min(row0 + r, M - 1) * N;  // rows past M re-read the last row, never stored
    }
    if (row0 < M) {  // no early return: the whole block meets the barriers below
#if ALIGNED
        const int v1 = c1 / VEC;
        const uint4* xv = reinterpret_cast<const uint4*>(x);
        int v = c0 / VEC + lane;
        for (; v + 32 * (UNROLL - 1) < v1; v += 32 * UNROLL) {
            uint4 xs[UNROLL], as[WARP_ROWS][UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) xs[u] = xv[v + 32 * u];
#pragma unroll
            for (int r = 0; r < WARP_ROWS; ++r)
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) as[r][u] = reinterpret_cast<const uint4*>(a[r])[v + 32 * u];
#pragma unroll
            for (int r = 0; r < WARP_ROWS; ++r)
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) acc[r] = dot16(as[r][u], xs[u], acc[r]);
        }
        for (; v < v1; v += 32) {  // fewer than UNROLL warp-wide vectors left
            const uint4 xs = xv[v];
#pragma unroll
            for (int r = 0; r < WARP_ROWS; ++r) acc[r] = dot16(reinterpret_cast<const uint4*>(a[r])[v], xs, acc[r]);
        }
#else
        for (int j = c0 + lane; j < c1; j += 32) {
            const float xs = to_float(x[j]);
#pragma unroll
            for (int r = 0; r < WARP_ROWS; ++r) acc[r] = fmaf(to_float(a[r][j]), xs, acc[r]);
        }
#endif
#pragma unroll
        for (int r = 0; r < WARP_ROWS; ++r) {
            const float total = warp_sum(acc[r]);
            if (lane == 0 && row0 + r < M) {
                if (splits == 1) y[row0 + r] = from_float(total);
                else partial[(size_t)blockIdx.y * M + row0 + r] = total;
            }
        }
    }
    if (splits == 1) return;  // uniform over the grid

    // Publish this block's partials, then count it; the last block of the row group reduces.
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&counter[blockIdx.x], 1u) == (unsigned)(splits - 1);
    __syncthreads();
    if (!last) return;
    __threadfence();  // see every other block's partials
    // The whole block reduces: GROUPS threads a row, thread g of a row adding slices g, g + GROUPS, …
    // into four sums in turn, then the row's GROUPS sums in g order. The order is fixed by indices,
    // not by which block came last, so y is the same every launch. One thread a row adding every
    // slice took most of the time at one row of 2^20 FP32 (8192 slices then: v3 at 56 GB/s against
    // cuBLAS's 652 on the H200).
    constexpr int GROUPS = THREADS / ROWS;  // 32 / WARP_ROWS
    __shared__ float sums[THREADS];
    const int i = threadIdx.x % ROWS, g = threadIdx.x / ROWS;
    const int row = blockIdx.x * ROWS + i;
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // four loads in flight a thread (L2, not a stale L1: __ldcg)
    int q = g;
    if (row < M) {
#pragma unroll 1
        for (; q + 3 * GROUPS < splits; q += 4 * GROUPS)
#pragma unroll
            for (int u = 0; u < 4; ++u) s[u] += __ldcg(&partial[(size_t)(q + u * GROUPS) * M + row]);
        for (; q < splits; q += GROUPS) s[0] += __ldcg(&partial[(size_t)q * M + row]);
    }
    sums[threadIdx.x] = (s[0] + s[1]) + (s[2] + s[3]);
    __syncthreads();
    if (g == 0 && row < M) {
        float total = 0.0f;
        for (int h = 0; h < GROUPS; ++h) total += sums[h * ROWS + i];
        y[row] = from_float(total);
    }
    if (threadIdx.x == 0) counter[blockIdx.x] = 0;
}

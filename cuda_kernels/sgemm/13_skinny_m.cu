// sgemm v13 — skinny M on the FFMA pipe: one streaming pass over B for a decode step's few rows of A
// (docs/ladders/sgemm.md, v13).
// Idea: at M ≤ 64 an FP32 product is a read of B. 1×22016×4096 is 361 MB of B for 180 MFLOP: at the
// H200's 4.8 TB/s that is 75 µs, and the FFMA pipe would need 3 µs. Tiles of C (v7, v9, v10) spend
// their loads on 128 rows of A that are not there and walk B once a row of tiles; cuBLAS FP32 runs a
// GEMV-like kernel at 3.97 TB/s there (90.7 µs), v9 at a quarter of that. Here a block owns COLS
// columns of C and ROWS rows of A (ROWS fitted to M: 1, 2, 4, 8, 16 or 32) over one range of K:
//   - A's ROWS × range slice is staged once in shared memory, row by row (each row k-contiguous), so a
//     warp reads four k of one row with one broadcast 16-byte load;
//   - the warps share the block's columns and split its K range in steps of 4·UNROLL rows of B, warp w
//     taking steps w, w + WARPS, …: every load of B is a warp's 32 consecutive 16-byte words (4-byte
//     words where B's rows are not 16-byte multiples apart: ALIGNED = 0 gives each lane four columns
//     32 apart instead of four adjacent ones), each thread keeps 4·UNROLL rows of loads in flight;
//   - ROWS × COLS / 32 FP32 sums a thread, added over the warps in warp order through shared memory;
//   - more than one range (the plan, study/ops/sgemm_skinny_m.py skinny_plan: the range count whose waves of
//     blocks, as many a SM as the driver says fit this build (at most BLOCKS_PER_SM), take the least time
//     by a model of a wave as long as its ranges; each range at most what A_FLOATS of shared memory hold):
//     the ranges' sums go to planes of an FP32 workspace and the block of a column block that finishes
//     last adds the planes in range order into C (a counter a column block, reset by that block).
// Every addition's order is fixed by the indices alone: the same bits on every run.
// Removes: the tile rungs' work on absent rows of A and their one pass over B a row of tiles; at one
// row, every FFMA an element of B (the FFMA pipe is idle at DRAM rate), so the pass runs at memory speed.
// Costs: B's bytes cannot be reused across more than ROWS rows; at M > 32 two row groups read B twice
// (M > 64 is out of this rung's scope: v9–v12 tile it). The workspace adds splits × M × N × 8 bytes of
// traffic: at one token at most 3 % of B's bytes at the suites' shapes, at 16 tokens 6–13 % on llama2-7b
// and 8–50 % on gpt2-xl. The wave plan rests on the hypothesis that waves, more than those bytes, were
// what the first plan got wrong: it asked for cdiv(SMs · BLOCKS_PER_SM, blocks) ranges, which overshoots
// a wave (1×4096×4096: 17 × 32 = 544 blocks for 528 places, a second wave of 16 — 0.82×, the suite's lowest
// one-token shape), and took 4 blocks a SM where ROWS = 8 or 16 fit 2 (97–128 registers at 256 threads):
// 16×4800×1600's 14 × 38 = 532 blocks made three waves of 264, the last 1 % full (0.80×). Autotuned (c55
// at d6283d9), the points of fewer, longer ranges won at every 16-token gpt2-xl shape: 16×4800×1600 0.80×
// → 1.06× at 4 ranges (152 blocks, one wave), 16×1600×1600 0.62× → 0.83× at 20, 16×6400×1600 0.76× →
// 0.94× at 3, 16×4096×4096 1.37× → 1.51× at 5 — fewer waves and fewer planes at once, so they do not
// tell the two apart.
// Measured (c58 at e934f1c, declared config, cold, unpaired; reports/h200/experiments/v13-wave-plan-e934f1c):
// at the 20 decode shapes of both model suites v13 ÷ cuBLAS FP32 0.929× → 1.068× (geometric mean), no shape
// slower by more than noise: 16×4096×4096 1.37× → 2.07× (8 ranges), 16×4800×1600 0.80× → 1.13× (6),
// 16×6400×1600 0.76× → 1.19× (5), 16×1600×1600 0.62× → 0.84× (20), 1×4096×4096 0.82× → 0.95× (16). The
// driver fits 4 blocks an SM at one row, 2 at 16 rows and at the 4-byte path (N = 50257).
// Builds on: the split and its ordered last-block sum of v5 (split_k.cuh: its handshake, last_to_finish,
// and the sum written here for a block's columns instead of a micro-tile). Constraints: any M ≤ 64, N, K ≥ 1, any leading dimension
// (ALIGNED = 1 for 16-byte rows; else the 4-byte path), C stored element by element.
// Measured (H200, c53 at 6f12adc, cold, unpaired, × cuBLAS FP32): with UNROLL=1 declared, the gpt2-xl suite
// (reports/h200/suites/sgemm-gpt2-xl.md) 1×50257×1600 1.02×, 1×1600×6400 1.19×, 1×1600×1600 0.92×, but
// 16×50257×1600 0.48×; autotuned, 16×50257×1600 0.85× and 16×4096×11008 1.12× at UNROLL=2 (8 rows of B in
// flight a thread: at ROWS = 16 a block's 122–140 registers leave two blocks a SM, too few loads in flight
// with four rows), 1×22016×4096 0.99× and 1×1600×1600 0.93× at 128 threads, UNROLL=2, 8 blocks a SM. The
// declared config is now UNROLL=2: the suites (c54 at c39d322, reports/h200/suites/sgemm-*.md) give it
// 0.82–1.02× at one token (llama2-7b 1×4096×4096 the lowest, 1×32000×4096 the highest; gpt2-xl 0.87–1.20×)
// and 0.62–1.37× at 16 (16×1600×1600 0.62×, 16×50257×1600 0.85×; 16×4096×4096 1.37×, where cuBLAS FP32
// holds 6.6 TFLOPS).
// arch: sm_80
// precisions: fp32
// config: THREADS=256 COLS=128 UNROLL=2 A_FLOATS=8192 BLOCKS_PER_SM=4
// space: THREADS=256 COLS=128 UNROLL=1 A_FLOATS=8192 BLOCKS_PER_SM=4
// space: THREADS=256 COLS=128 UNROLL=2 A_FLOATS=8192 BLOCKS_PER_SM=4
// space: THREADS=256 COLS=128 UNROLL=1 A_FLOATS=8192 BLOCKS_PER_SM=8
// space: THREADS=128 COLS=128 UNROLL=2 A_FLOATS=4096 BLOCKS_PER_SM=8
// space: THREADS=256 COLS=256 UNROLL=1 A_FLOATS=8192 BLOCKS_PER_SM=4
// space: THREADS=512 COLS=128 UNROLL=1 A_FLOATS=16384 BLOCKS_PER_SM=2
// space: THREADS=256 COLS=128 UNROLL=2 A_FLOATS=8192 BLOCKS_PER_SM=2
// space: THREADS=256 COLS=128 UNROLL=2 A_FLOATS=16384 BLOCKS_PER_SM=1
#include "common.cuh"
#include "split_k.cuh"

#ifndef ROWS
#define ROWS 32  // the launch fits it to M (study/ops/sgemm_skinny_m.py, skinny_rows); the widest otherwise
#endif

constexpr int WARPS = THREADS / 32;
constexpr int BV = ALIGNED ? 4 : 1;          // floats of B a load: 16-byte words where rows allow
constexpr int CPT = COLS / (32 * BV);        // loads of a row of B a thread: its COLS / 32 columns
constexpr int STEP = 4 * UNROLL;             // rows of B a warp loads before it multiplies them
static_assert(COLS % (32 * BV) == 0 && CPT >= 1, "a warp's lanes cover the block's columns in whole loads");
static_assert(ROWS >= 1 && ROWS <= 32, "ROWS rows of A a block: ROWS · COLS / 32 FP32 sums a thread");

// Column of C of a thread's (load j, element v): adjacent in a 16-byte word, words 32·BV floats apart.
__device__ __forceinline__ int column(int lane, int j, int v) { return (j * 32 + lane) * BV + v; }

__device__ __forceinline__ void load_row(float (&dst)[CPT][BV], const float* row, int n0, int N, int lane,
                                         bool inside) {
#pragma unroll
    for (int j = 0; j < CPT; ++j) {
        const int c = n0 + column(lane, j, 0);
        if constexpr (BV == 4) {  // ALIGNED: N % 4 == 0, so c < N covers c + 3
            const float4 w = inside && c < N ? __ldg(reinterpret_cast<const float4*>(row + c))
                                             : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            dst[j][0] = w.x; dst[j][1] = w.y; dst[j][2] = w.z; dst[j][3] = w.w;
        } else {
            dst[j][0] = inside && c < N ? __ldg(row + c) : 0.0f;
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_v13_skinny_m(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                   int M, int N, int K, int lda, int ldb, int ldc, int split_k, float* __restrict__ partial,
                   unsigned* __restrict__ column_done) {
    // A's slice (ROWS rows of `span` floats) during the pass; the warps' sums of one row after it.
    extern __shared__ __align__(16) float smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int n0 = blockIdx.x * COLS, m0 = blockIdx.z * ROWS;
    const int k_begin = blockIdx.y * split_k;
    const int range = min(split_k, K - k_begin);  // ≥ 1: the plan leaves no range empty
    const int span = (range + 3) & ~3;            // whole groups of four k, zero past the range

    for (int e = threadIdx.x; e < ROWS * span; e += THREADS) {  // k-contiguous reads of each row of A
        const int i = e / span, c = e - i * span;
        smem[e] = m0 + i < M && c < range ? A[(size_t)(m0 + i) * lda + k_begin + c] : 0.0f;
    }
    __syncthreads();

    float acc[ROWS][CPT][BV] = {};
    const float* b = B + (size_t)k_begin * ldb;
    for (int k = 4 * UNROLL * warp; k < span; k += STEP * WARPS) {
        float rows[STEP][CPT][BV];
#pragma unroll
        for (int r = 0; r < STEP; ++r)  // every load of the step issued before the first FFMA
            load_row(rows[r], b + (size_t)(k + r) * ldb, n0, N, lane, k + r < range);
#pragma unroll
        for (int g = 0; g < UNROLL; ++g) {
            const int kk = k + 4 * g;
            if (kk >= span) break;  // uniform over the warp; rows past the range were loaded as zeros
#pragma unroll
            for (int i = 0; i < ROWS; ++i) {
                const float4 a = *reinterpret_cast<const float4*>(smem + i * span + kk);  // a broadcast
#pragma unroll
                for (int j = 0; j < CPT; ++j)
#pragma unroll
                    for (int v = 0; v < BV; ++v) {
                        float s = acc[i][j][v];
                        s = fmaf(a.x, rows[4 * g][j][v], s);
                        s = fmaf(a.y, rows[4 * g + 1][j][v], s);
                        s = fmaf(a.z, rows[4 * g + 2][j][v], s);
                        acc[i][j][v] = fmaf(a.w, rows[4 * g + 3][j][v], s);
                    }
            }
        }
    }

    // Each row's sums over the warps, in warp order; the range's row of C (one range) or of its plane.
    const int splits = gridDim.y;
    float* plane = partial + (size_t)blockIdx.y * M * N;
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
        if (m0 + i >= M) break;  // uniform over the block
        __syncthreads();         // the slice of A, or the previous row's sums, read by every warp
#pragma unroll
        for (int j = 0; j < CPT; ++j)
#pragma unroll
            for (int v = 0; v < BV; ++v) smem[warp * COLS + column(lane, j, v)] = acc[i][j][v];
        __syncthreads();
        for (int c = threadIdx.x; c < COLS; c += THREADS) {
            if (n0 + c >= N) continue;
            float total = 0.0f;
#pragma unroll
            for (int w = 0; w < WARPS; ++w) total += smem[w * COLS + c];
            if (splits == 1)
                C[(size_t)(m0 + i) * ldc + n0 + c] = total;
            else
                plane[(size_t)(m0 + i) * N + n0 + c] = total;
        }
    }
    if (splits == 1) return;  // uniform over the grid

    // The column block's last range to finish adds all the planes in order.
    const int block = blockIdx.z * gridDim.x + blockIdx.x;
    if (!last_to_finish(column_done, block, splits)) return;
    __threadfence();  // see every other range's plane
    const size_t size = (size_t)M * N;
    for (int e = threadIdx.x; e < ROWS * COLS; e += THREADS) {
        const int i = e / COLS, c = e - i * COLS;
        if (m0 + i >= M || n0 + c >= N) continue;
        const float* p = partial + (size_t)(m0 + i) * N + n0 + c;
        float total = 0.0f;
        for (int s = 0; s < splits; ++s) total += __ldcg(p + s * size);  // from L2: other SMs wrote them
        C[(size_t)(m0 + i) * ldc + n0 + c] = total;
    }
    if (threadIdx.x == 0) column_done[block] = 0;  // ready for the next launch
}

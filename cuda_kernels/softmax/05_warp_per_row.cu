// softmax v5 — a warp per row: short rows in one warp's registers, reduced by shuffles alone
// (docs/ladders/softmax.md, v5).
// Idea: v4 gives every row a block. A row of 1024 FP32 values is 256 16-byte vectors: a block of
// 1024 threads leaves three quarters of its threads idle, and each of its two reductions crosses
// the block through shared memory and three barriers; the H200 ran v4 at 0.76× torch.softmax on
// 65536×1024 (reports/h200/softmax.md), its one miss. Here a warp owns a row: each lane holds
// ON_CHIP vectors (ON_CHIP·4 FP32 or ·8 FP16/BF16 values), the maximum and the sum are five
// shuffles each, and nothing waits for another warp: a block of THREADS runs THREADS/32 rows side
// by side, so the SM keeps many independent rows (and their loads) in flight.
// Removes: v4's idle threads and block barriers on rows that fit in a warp (N ≤ 32·ON_CHIP·VEC with
// 16-byte rows, 32·ON_CHIP·4 on the scalar path).
// Bottleneck that remains: a longer row takes v3's two passes on one warp (correct, slow: the launch
// records on_chip=0); long rows are v4's.
// Measured (H200, reports/h200/softmax.md, 055c134): 65536×1024 FP32 4,121 GB/s (85.6 % of peak,
// 1.02× torch.softmax; v4 tuned 3,241), FP16/BF16 3,914–3,927 (1.55–1.56×). At rows of 4096 and
// longer it trails v2 and v4 (16 vectors a lane, or the two-pass fallback).
// Builds on: v4's on-chip row (row.cuh, row_on_chip with a warp as the team). Constraints: as v2.
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256 ON_CHIP=8 WARP_PER_ROW=1
// space: THREADS=128 ON_CHIP=8 WARP_PER_ROW=1
// space: THREADS=256 ON_CHIP=8 WARP_PER_ROW=1
// space: THREADS=512 ON_CHIP=8 WARP_PER_ROW=1
// space: THREADS=256 ON_CHIP=4 WARP_PER_ROW=1
// space: THREADS=256 ON_CHIP=16 WARP_PER_ROW=1
#include "common.cuh"
#include "row.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_v5_warp_per_row(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N) {
    const long long row = ((long long)blockIdx.y * gridDim.x + blockIdx.x) * (THREADS / 32) + threadIdx.x / 32;
    if (row >= M) return;  // whole warps leave: no barrier follows
    const storage_t* x = X + row * N;
    storage_t* y = Y + row * N;
    if (row_on_chip<WarpTeam, ON_CHIP>(x, y, N, nullptr)) return;
    float m, d;  // the row does not fit in a warp (uniform over the grid): v3's two passes, on the warp
    row_online_stats<WarpTeam>(x, N, m, d, nullptr);
    row_normalize<WarpTeam>(x, y, N, m, 1.0f / d);
}

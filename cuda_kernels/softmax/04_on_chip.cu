// softmax v4 — the row held in registers: one read, one write (docs/ladders/softmax.md, v4).
// Idea: each thread loads its share of the row once into registers (ON_CHIP 16-byte vectors, and
// on the PEEL path one of the row's single head or tail elements; or ON_CHIP·4 single elements on
// the scalar path), and the maximum, the sum and the output are
// computed from them: HBM sees the row read once and written once, the minimum a softmax needs.
// A row longer than THREADS·ON_CHIP vectors does not fit: the block takes v3's two passes instead
// (the launch records on_chip=0 with the config).
// Removes: v3's second read of the row, where the row fits.
// Bottleneck that remains: registers bound the row length (THREADS·ON_CHIP·VEC elements: 32768
// FP32 or 65536 FP16/BF16 at 1024 threads and 8 vectors); a long row's block holds one SM's
// threads for a long time, a short row's leaves most of them idle.
// Measured (H200, reports/h200/softmax.md, 055c134): 4,101–4,107 GB/s FP32 at rows of 4096 and
// 32768 (85 % of peak, 1.55–1.62× torch.softmax); 3,907 FP16/BF16 at 16384×4096 with 128 threads
// × 4 vectors; 3,968 FP32 and 3,407–3,411 FP16/BF16 at 8192×3001 on the PEEL path.
// Builds on: v3 (its helpers and its fallback). Constraints: as v2. One row per block. The on-chip
// body is row.cuh's row_on_chip with the block as the team (v5 runs the same with a warp).
// arch: sm_80
// precisions: fp32 fp16 bf16
// Block sized to the row (FIT=1, the declared config; study/ops/softmax.py, fitted_block): of the
// space's points, the one of fewest register slots (THREADS·ON_CHIP) that holds the row, ties to
// more threads; a row none holds takes 1024 × 4 (v3's two passes at 32 registers, two blocks an SM:
// 0.234 ms at 1024×151936 BF16 against 0.292 for 1024 × 8, the largest, which it replaces; 11–22 %
// at 1,024 rows of 151936–262144 FP32/BF16, c25 at 3e65580). Over the 15 tuned cases of reports/h200/
// softmax.md (055c134: rows of 1024 to 32768, FP32/FP16/BF16) that rule picks the tuned best or a
// point within 1 % of it, where the fixed 1024 × 8 it replaces was up to 11× slower on short rows
// (65536 × 1024 BF16) and 2.7× at 16384 × 4096 FP32 (a row of 1024 vectors spread one a thread
// over 1024 threads: a block-wide reduction for 4 KB of data).
// config: THREADS=1024 ON_CHIP=8 FIT=1
// space: THREADS=1024 ON_CHIP=8 FIT=0
// space: THREADS=128 ON_CHIP=4 FIT=0
// space: THREADS=128 ON_CHIP=8 FIT=0
// space: THREADS=256 ON_CHIP=8 FIT=0
// space: THREADS=512 ON_CHIP=8 FIT=0
// space: THREADS=1024 ON_CHIP=4 FIT=0
// space: THREADS=256 ON_CHIP=16 FIT=0
// space: THREADS=512 ON_CHIP=16 FIT=0
#include "common.cuh"
#include "row.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_v4_on_chip(const storage_t* __restrict__ X, storage_t* __restrict__ Y, int M, int N) {
    __shared__ float scratch[64];
    const long long row = block_row(M);
    if (row < 0) return;
    const storage_t* x = X + row * N;
    storage_t* y = Y + row * N;
    if (row_on_chip<BlockTeam, ON_CHIP>(x, y, N, scratch)) return;
    float m, d;  // the row does not fit (uniform over the grid): v3's two passes
    row_online_stats(x, N, m, d, scratch);
    row_normalize(x, y, N, m, 1.0f / d);
}

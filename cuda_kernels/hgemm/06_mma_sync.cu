// hgemm v6 — tensor cores through mma.sync m16n8k16, fed by ldmatrix from a multi-stage cp.async
// pipeline (docs/ladders/hgemm.md, v6).
// Idea: the products move from the FFMA pipe to the tensor cores. A warp owns a WM×WN sub-tile as
// (WM/16)×(WN/8) m16n8 accumulators (FP32) and, per 16-wide k step, loads its A fragments with
// ldmatrix.x4 (four 8×8 blocks of halves: rows 0–7 and 8–15, k 0–7 and 8–15) and its B fragments
// with ldmatrix.x4.trans (B is stored k-major by row, n contiguous: .trans hands each lane the
// k pair (2t, 2t+1) of column g that the "col" operand wants), then issues one mma.sync per
// accumulator. Global→shared copies are 16-byte cp.async into STAGES buffers, blocks in the
// grouped order of sgemm v7 (sgemm/grouped_order.cuh).
// Bank conflicts: a phase of ldmatrix reads eight 16-byte rows. Rows BK + 8 halves apart (80 bytes
// at BK 32) and BN + 8 apart (272 bytes at BN 128) start 20 and 68 words apart: the eight rows
// fall on eight distinct groups of four banks, so no phase conflicts.
// Removes: the FFMA ceiling of rungs 0–5 (FP32 arithmetic at 66.9 TFLOPS): the mma.sync HMMA path
// runs FP16/BF16 products with FP32 accumulation at a multiple of it.
// Measured (H200, reports/h200/hgemm-ladder.md): 303 TFLOPS FP16 and 310 BF16 at 4096³, 0.40–0.44×
// cuBLAS at 4096³ and 8192³ — against 30–34 for v5 on the FFMA pipe. ncu at 4096³ FP16 in this
// config (reports/h200/profiles/hgemm.md): HMMA pipe 53.2 % busy, issue active 46.5 %, top stall
// "wait" (fixed-latency dependencies, 2.0 cycles per issue), 248 registers, 8 warps an SM. Tried
// in the space: warp tiles 64×32, 32×64 and 64×64; 128 and 256 threads; BK 32 and 64; 3 and 4
// stages; 128×256 and 256×128 tiles — the autotuner keeps this declared config at 4096³ and
// 8192³. Rung 7 replaces the legacy HMMA path with wgmma fed by TMA.
// HOIST (a config axis, so the report shows what address arithmetic costs): ncu's source page
// (reports/h200/profiles/source-hgemm-v6_mma_sync-cuda-4096x4096x4096-fp16.csv.gz) found 326 instructions
// per slice and warp for 64 HMMAs — 95 rebuilding ldmatrix addresses (generic pointers converted to
// shared-window ones at every load) and 143 rebuilding the copies' 64-bit addresses and bounds — with
// 38 % of the stall samples on HMMA (26 % of all in `wait`) and issue active 43.5 % at two warps a
// scheduler.
// HOIST=1 computes every address once per thread (32-bit shared offsets plus constants; one global
// pointer per operand advanced by a constant per slice; row and column bounds as masks set once):
// the main loop falls to 150 instructions (64 HMMA, 16 LDSM, 8 LDGSTS) and the declared tile to 210
// registers (136 at 256 threads), by nvdisasm of nvcc 13.0's sm_90a cubin. HOIST=0 is the code
// measured above (the same SASS as before the axis existed); every tile of the space comes with
// HOIST=0 and HOIST=1. Measured (reports/h200/hgemm-runs/hgemm-v6-hoist.md): the autotuner picks
// HOIST=1 everywhere, 0.44–0.49× cuBLAS at 4096³ and 8192³ against 0.41–0.44× declared. ncu of
// the declared tile with HOIST=1 (4096³ FP16): HMMA 41 % of instructions, HMMA pipe 57 %; the stall
// moves to latency two warps a scheduler cannot hide: HMMA `wait`, and the slice's first ldmatrix,
// which ptxas (at 210 registers) points at R16 while the refill's last cp.async still has to read
// its global address from R16:R17 (a long-scoreboard wait, once a slice).
// HOIST=1 with an operand in pairs of halves (rows an odd number of halves apart; mma_sync_tile.cuh HoistedPairs):
// ncu at the odd suite's 36×93×217 FP16 (c82 at 358e274, HOIST=0; 10.3 µs, 2 blocks of 4 warps on 2 SMs) found
// a warp's own instruction chain: 3,780 warp instructions a warp in about 14,500 active cycles of each busy SM
// (3.8 cycles an instruction; IPC 1.04), most of them each pair's address and bounds rebuilt at every slice, and
// A's pairs stored before B's were loaded (two latencies a slice). HOIST=1 sets a thread's first pair address, its
// rows' bounds and the fixed coordinate's bound once, and fetches both operands before storing either. nvcc 13.0,
// sm_90a, FP16, cuobjdump of the main loop (one slice), HOIST=0 / HOIST=1 before HoistedPairs (its ldmatrix
// addresses hoisted only) / HOIST=1 now: the 64 × 64 tile with both operands in pairs 383 / 353 / 310 instructions
// (IMAD 110 / 100 / 29), 205 / 198 / 147 registers; at BK = 64 692 / 637 / 531, 255 / 255 / 236; the 128 × 128
// tile's spills 268 / 236 / 4 bytes (both in pairs) and 132 / 104 / 8 (B); v12's 64 × 64 with A in pairs
// 330 / 292 / 274, 162 / 151 / 139 registers. The HOIST=1 figures measured before (v12's space, c63 and c67) are of
// the code before HoistedPairs. The space holds the fitted tile with HOIST=1 at BK 32 and 64, for the tuner
// (timed below).
// Constraints: none on M, N, K or the leading dimensions. Each operand is copied by the widest cp.async
// its rows allow (A_VEC, B_VEC halves: 16 bytes where K or N, the leading dimension and the base allow, else
// 8 or 4), and where its rows are an odd number of halves apart, in pairs of halves through registers,
// every load of an operand's block issued before its first store (at HOIST=0 common.cuh's copy_block_pairs: a
// synchronous copy: a slice exposes one global latency for each odd operand; HOIST=1 above). Registers at the declared
// tile (nvcc 13.0): 201 at 8- and 4-byte copies, 255 with 132 bytes of spills where B alone is odd and 272
// where both are; the BK = 64 points of the space spill 500–930 bytes there. Measured
// (docs/ladders/hgemm.md, v6, "Any shape in place"): 1.3–4.4× faster than the element loop before it at
// every shape of the odd suite. Tails zero-filled; C stored in 4-byte pairs where ALIGNED, else element
// by element.
// FIT (a config axis: declared 1; in the space 0, but for one copy of the declared point): the launch halves BM
// and/or BN down to 64 (warps kept 2 × 2) where the declared 128 × 128 tiles are fewer than the SMs — the
// tile of fewest tiles that reach them, then least padding, else the one of most tiles — and quarters both to
// 32 × 32 where that one's blocks are still fewer than three quarters of the SMs or where a wave at most of 32 × 32
// tiles covers at most three quarters of its area (study/ops/hgemm_mma_sync.py fitted_tile; the 32 × 32 paragraph
// below says why). At small products the rung was latency-bound on few SMs:
// ncu (c59 at 5b2b48b, BF16) found 222×2002×204 at 32 blocks of 128 × 128, 17.2 µs, issue active 30.8 %, achieved
// occupancy 6.1 %, tensor pipe 10.1 %, where cuBLAS runs CUTLASS's 64 × 64 mma.sync tile (BK 32, 6 stages)
// in 6.7 µs; 166×419×98 8 blocks, 15.1 µs, against cuBLAS's 64 × 64 (sm75 s1688) in 8.1 µs. Fitted (c62 at eefb23c,
// BF16, cold, unpaired; reports/h200/suites/hgemm-odd.md): 222×2002×204 0.45× → 0.80× cuBLAS (64 × 64, 10.7 µs),
// 166×419×98 0.60× → 1.01×, 4496×55×59 0.55× → 0.94×.
// DEFER (a config axis: declared 0, 1 at one copy of the declared point; v12's too): an operand copied in pairs
// of halves is fetched into registers with the refill and stored into its stage after the slice's products
// (pipeline.cuh cp_async_pipeline_deferred), so the pairs' load latency runs under the products instead of
// before them. nvcc 13.0 (BF16, sm_90a) at 64 × 64: 152 → 154 registers with A in pairs, 128 → 132 with B, 205 → 201
// with both; at 128 × 128 the spills grow (268 → 364 bytes with both in pairs, 20 → 36 with B), so the launch
// keeps DEFER off on 128 × 128 tiles (study/ops/hgemm_mma_sync.py DEFER_LARGEST_TILE). DEFER=0 compiles to the same
// code as before the axis. Measured in v12's space (c63 at eefb23c, one trial each,
// reports/h200/experiments/v12-space-eefb23c): DEFER=1 0.4–5.4 % slower than DEFER=0 at all six shapes tuned.
// Since then DEFER=1's prologue loads every prologue slice's pairs before storing any (pipeline.cuh: one round
// trip where there were three). nvcc 13.0 at 64 × 64: 201 → 202 registers with both operands in pairs, 146 → 148
// with A in pairs and B in 8-byte copies; DEFER=0's cubins unchanged. Measured through v12's space (c67 at
// 7e0cc86, BF16, one trial each, reports/h200/experiments/space-7e0cc86): DEFER=1 10.3, 10.7, 10.4, 20.3, 8.3 and 45.0 µs at the six losers, DEFER=0 at the same point 9.9–10.2, 10.4–10.6,
// 10.1–10.4, 20.6–20.8, 8.1 and 43.8–44.7 (two trials): no gain beyond the spread of two trials; DEFER stays 0.
// The tile is hgemm/mma_sync_tile.cuh's, shared with v12 (its K ranges): moved there, nvcc 13.0's code differs a
// little (the same registers at 128 × 128, HOIST 0 and 1; 144 → 152 at 64 × 64 on pairs): the figures above from
// before c62 are of the code before the move.
// The odd suite's FP16 misses (c78 at ab2a247, reports/h200/profiles/hgemm.md): at 166×419×98 and 36×93×217 the
// fitted 64 × 64 tile runs 21 and 2 blocks for 8.0 and 10.3 µs (ncu), long scoreboard first, over 4 and 7 K slices
// of rows copied in pairs — cuBLAS's FP16 kernel 4.6 and 6.0 µs. The space holds that tile with BK = 64
// (3 stages; nvcc 13.0 at 64 × 64: 255 registers with both operands in pairs, 133 at 16-byte copies, no spill):
// half the serial slices, for the tuner to measure whether the slices' latencies are what those shapes wait on.
// Tuned (c86 at 779d1c0, FP16, cold): 36×93×217 picked HOIST=1 at BK 64, 0.704× cuBLAS; 166×419×98 HOIST=0, 0.682×.
// At HOIST=1 without DEFER a slice in pairs is fetched and stored before the next slice's fetch, so every slice of
// the prologue costs a global round trip (cold: DRAM) in turn, and these shapes have 2–7 slices in all; with DEFER=1
// the prologue fetches all its slices before storing any (pipeline.cuh): one round trip for STAGES − 1 slices.
// Tried (f58ec5d: the fitted tile at HOIST=1 with DEFER=1, BK 32 with 4 stages and BK 64 with 3, in the space; nvcc
// 13.0 at 64 × 64 with both operands in pairs 157 and 230 registers, no spill) and measured on an H100 (the H200 not
// lent; reports/h100-80gb-hbm3/experiments/dram-bytes-36acd52/): every point of the space passed the GPU test, but
// tuned at both shapes the tuner kept DEFER=0 (36×93×217 HOIST=1 BK 64, 0.695× cuBLAS; 166×419×98 HOIST=0 BK 64,
// 0.664×), and ncu of the fitted 64 × 64 tile at HOIST=1, BK 64, DEFER 0 against 1: 9.9 against 10.7 µs at 36×93×217
// (both operands in pairs; 235 against 242 registers as loaded, long scoreboard 0.97 → 1.51 cycles an issue), 8.2
// against 8.8 at 166×419×98 (A in 4-byte copies; 115 against 130 registers, theoretical occupancy 25.0 → 18.8 %).
// Not the prologue's round trips, then: the points were taken out again. The same profiles read 103 and 153 kB from
// DRAM (1.84× and 1.33× the inputs' bytes, L2 hit rate near 90 %): a few µs of latency on 2 and 21 blocks.
// 32 × 32 points (2 × 2 warps of 16 × 16, one m16 × 2·n8 pair each; BK 32, 64 and 128): cuBLAS's FP16 kernel at
// those shapes is CUTLASS's sm75 wmma tile of 32 × 32, 64 deep at 36×93×217 and 128 at 166×419×98 (its ncu in
// reports/h200/suites/hgemm-odd-fp16.md). A latency-bound block's chain is its thread's copies and products a slice:
// at 32 × 32 each thread copies half the pairs of the 64 × 64 tile and each warp issues a quarter of its HMMAs, over
// 3–4× the blocks (6 at 36×93, 84 at 166×419). nvcc 13.0, sm_90a, FP16, both operands in pairs / 16-byte copies:
// HOIST=1 69 / 56 registers at BK 32, 122 / 64 at 64, 254 / 94 at 128; HOIST=0 104 / 61 and 181 / 80; no spill.
// Measured on an H100 (the H200 not lent; reports/h100-80gb-hbm3/experiments/v6-32x32-b4fc074/, FP16, cold, autotune
// on): tuned, 36×93×217 0.955× cuBLAS (32 × 32 × 64; the best fitted point 11.1 µs, the best 32 × 32 8.2) and
// 166×419×98 0.907× (32 × 32 × 128; 9.2 against 6.7 µs), against 0.695× and 0.664× tuned without them; ncu 9.8 → 7.4
// and 8.2 → 5.3 µs; a tie at 222×2002×204 (128 fitted blocks); 5–6 % faster at 4496×55×59 (71). FIT quarters the
// tile where the halves make fewer blocks than three quarters of the SMs (between the 71 that gain and the 128 that
// tie) or where a wave at most of 32 × 32 tiles covers at most three quarters of its area. Declared so (f9aa583,
// without the area clause; H100, reports/h100-80gb-hbm3/suites/README.md): against the H200's 64 × 64 run, v6 (off)
// took 3–37 % less time at each of the odd suite's 11 quartered shapes (the untouched v8 and v9 0–7 % more at all
// but 11×2473×16329, where v9 took 21 % more), 0.846× cuBLAS at 36×93×217 and 0.842× at 166×419×98 (H200: 0.657×,
// 0.627×).
// arch: sm_80
// precisions: fp16 bf16
// config: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 DEFER=0
// space: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=3 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=3 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=32 WM=64 WN=32 THREADS=256 STAGES=4 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=32 WM=32 WN=64 THREADS=256 STAGES=4 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=32 WM=32 WN=64 THREADS=256 STAGES=4 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=128 BN=256 BK=32 WM=64 WN=64 THREADS=256 STAGES=3 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=128 BN=256 BK=32 WM=64 WN=64 THREADS=256 STAGES=3 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=256 BN=128 BK=32 WM=64 WN=64 THREADS=256 STAGES=3 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=256 BN=128 BK=32 WM=64 WN=64 THREADS=256 STAGES=3 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 DEFER=0
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=1 DEFER=1
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=64 BN=128 BK=32 WM=32 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=64 BN=128 BK=32 WM=32 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=128 BN=256 BK=32 WM=64 WN=64 THREADS=256 STAGES=4 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=128 BN=256 BK=32 WM=64 WN=64 THREADS=256 STAGES=4 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=64 WM=64 WN=64 THREADS=128 STAGES=3 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=64 WM=64 WN=64 THREADS=128 STAGES=3 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=256 BN=128 BK=32 WM=64 WN=64 THREADS=256 STAGES=4 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=256 BN=128 BK=32 WM=64 WN=64 THREADS=256 STAGES=4 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=128 BN=128 BK=64 WM=64 WN=64 THREADS=128 STAGES=3 GROUP=8 HOIST=0 FIT=1 DEFER=0
// space: BM=128 BN=128 BK=32 WM=64 WN=64 THREADS=128 STAGES=4 GROUP=8 HOIST=1 FIT=1 DEFER=0
// space: BM=128 BN=128 BK=64 WM=64 WN=64 THREADS=128 STAGES=3 GROUP=8 HOIST=1 FIT=1 DEFER=0
// space: BM=32 BN=32 BK=32 WM=16 WN=16 THREADS=128 STAGES=4 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=32 BN=32 BK=32 WM=16 WN=16 THREADS=128 STAGES=4 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=32 BN=32 BK=64 WM=16 WN=16 THREADS=128 STAGES=3 GROUP=8 HOIST=0 FIT=0 DEFER=0
// space: BM=32 BN=32 BK=64 WM=16 WN=16 THREADS=128 STAGES=3 GROUP=8 HOIST=1 FIT=0 DEFER=0
// space: BM=32 BN=32 BK=128 WM=16 WN=16 THREADS=128 STAGES=3 GROUP=8 HOIST=1 FIT=0 DEFER=0
#include "common.cuh"
#include "sgemm/grouped_order.cuh"
#include "pipeline.cuh"
#include "mma_sync.cuh"
#include "slice_copies.cuh"
#include "hgemm/mma_sync_tile.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_v6_mma_sync(const storage_t* __restrict__ A, const storage_t* __restrict__ B, storage_t* __restrict__ C,
                  int M, int N, int K, int lda, int ldb, int ldc) {
    using namespace mma16;
    extern __shared__ __align__(16) storage_t smem[];
    require_dynamic_smem(SMEM_BYTES);
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;
    float acc[MT][NT][4] = {};
    accumulate(acc, smem, A, B, M, N, K, lda, ldb, m0, n0, 0, CDIV(K, BK));
    for_each_pair(acc, m0, n0, [&](int row, int col, float x, float y) {
        store_pair<ALIGNED != 0>(C, M, N, ldc, row, col, x, y);
    });
}

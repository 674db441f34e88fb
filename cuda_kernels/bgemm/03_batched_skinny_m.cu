// bgemm v3 — hgemm v10's skinny-M kernel over a batch: each entry computed transposed, Cᵀ = Bᵀ·Aᵀ, so that its
// 1–64 tokens are the wgmma instruction's N and its weights (the entry's B) the 64-row M
// (docs/ladders/bgemm.md, v3).
// Idea: the attention suites' decode steps are batches of products with 1 or 16 rows of A (a query's tokens)
// against an entry's K × N (keys or values of a long context). v1 gives the rows wgmma's 128-row M, all but 1 or
// 16 of them zeros; v2 gives them mma.sync's 64-row tile, three quarters padding at 16 tokens, over short K
// ranges whose fill and ordered sum are most of its time. ncu (c67 at 7e0cc86, reports/h200/profiles/bgemm.md):
// at 25×16×64×1024 v2 takes 11.3 µs in 200 blocks, tensor pipe 7.0 %, where cuBLAS runs nvjet's 64 × 8 tile
// — 16 tokens as two 8-wide columns of Cᵀ — in 50 blocks over all of K, 5.3 µs; at 32×16×128×4096 v2 20.3 µs at
// 40 % of DRAM, cuBLAS 13.0 µs at 63 %. Here v10's body (hgemm/skinny_m.cuh: a producer warp issuing TMA into a
// ring of stages, consumer warpgroups multiplying m64nTOKENSk16, TOKENS the smallest of 8, 16, 32, 64 that holds
// M) runs with Rank 3: A's and B's maps are 3-D (the entry the third dimension, as bgemm v1's), so a box never
// crosses into the next entry and each entry's tails load as zeros; the persistent blocks walk the batch's
// units entry by entry (an entry's N / BN tiles × splits, then the next entry's).
// Few tiles (25 entries of one 64-wide tile at N = 64): split-K as v10 plans it (hgemm v9's split_plan with
// BM = TOKENS) over the SMs an entry's share (SMs / batch), the splits' FP32 planes summed in plane order by
// each tile's last unit inside the launch (an entry's planes and counts after the previous entry's).
// Bottleneck: memory, as v10's: M FLOPs per byte of B at M tokens; the ring keeps STAGES boxes of weights in
// flight an SM.
// Removes: v1's 128-row and v2's 64-row tiles at 1–16 rows, v2's short ranges and their fill.
// Builds on: hgemm v10 (hgemm/skinny_m.cuh, whole, at Rank 3), bgemm v1 (3-D maps).
// Constraints: M ≤ 64 (the launch refuses more: v1/v2 take it); rows of A and B TMA cannot read are staged by
// the launch (v10's eight residue maps of B are written for one matrix); C by plain stores at any leading
// dimension; the workspace holds batch × splits × M × ldp floats and a count per tile of each entry.
// v10's and gemm_bias_relu v4's cubins are unchanged by the Rank parameter (nvcc 13.0, .text hashes at TOKENS
// 8, 16, 64, B in place or not). Measured (c76–c77 at ab2a247, H200 9158d68a, FP16, cold, declared config,
// reports/h200/suites/bgemm-fp16.md): 0.82–0.95× torch.bmm at the attention suites' eight decode shapes, where
// v1/v2 gave 0.58–0.87× (c69): 25×16×64×1024 5,872 GFLOPS 0.82×, 32×16×128×4096 32,640 GFLOPS 0.86×. GPU tests
// pass; memcheck and racecheck clean. Autotuned (experiments/space-ab2a247): BN=64 where an entry's N is 64 or
// 128 (25×16×64×1024 8.7 → 8.1 µs, 32×1×128×4096 15.5 → 14.1), STAGES=4 at K = 128 (32×16×4096×128 15.4 → 14.7),
// BN=128 at N = 4096; each ≤ 9 %. Hence FIT_BN=1 (v10's, study/ops/skinny_fit.py: the narrowest width whose
// tiles do not pass an entry's share of SMs; the width only, not the 4 stages), declared after these trials;
// measured in the suite (c80 at 358e274, FP16, cold): 0.85–0.99× torch.bmm at the eight decode shapes (25×16×64×1024
// 6,136 GFLOPS 0.85×, 32×16×128×4096 34,309 GFLOPS 0.90×), against 0.82–0.95× at the declared 128 (docs/ladders/bgemm.md).
// arch: sm_90a
// precisions: fp16 bf16
// config: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=4 FIT_BN=1
// space: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=4 FIT_BN=1
// space: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=4 FIT_BN=0
// space: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=2 FIT_BN=0
// space: BN=128 BK=64 STAGES=8 THREADS=288 MIN_SLICES=8 FIT_BN=0
// space: BN=128 BK=64 STAGES=4 THREADS=288 MIN_SLICES=4 FIT_BN=0
// space: BN=256 BK=64 STAGES=5 THREADS=544 MIN_SLICES=4 FIT_BN=0
// space: BN=64 BK=64 STAGES=8 THREADS=160 MIN_SLICES=4 FIT_BN=0
// space: BN=64 BK=64 STAGES=8 THREADS=160 MIN_SLICES=8 FIT_BN=0
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/skinny_m.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, 1)
bgemm_v3_batched_skinny_m(const __grid_constant__ TensorMap map_a, const __grid_constant__ WeightMaps maps_b,
                          storage_t* __restrict__ C, int batch, int M, int N, int K, int ldc, long long c_entry,
                          int splits, int slices_per, float* __restrict__ partial, int ldp,
                          unsigned* __restrict__ tile_done) {
    skinny_m_gemm<ToStorage, 3>(&map_a, &maps_b, C, M, N, K, ldc, splits, slices_per, partial, ldp, tile_done,
                                ToStorage{}, batch, c_entry);
}

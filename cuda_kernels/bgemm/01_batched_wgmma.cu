// bgemm v1 — the tensor-core ladder's best tile over a batch: hgemm v8 (warp-specialised wgmma fed
// by TMA, persistent grid, C leaving by TMA stores) with the entry as the tensor maps' third
// dimension (docs/ladders/bgemm.md, v1).
// Idea: a strided-batched GEMM in FP16/BF16 is `batch` HGEMMs; the persistent grid walks all
// batch × rows × cols tiles, entry by entry, and the producer warpgroup runs ahead across tile and
// entry boundaries, so an entry of one K slice (K = 64, attention scores) still keeps the tensor
// cores fed while the previous tile's C drains. The maps are 3-D (columns, rows, entries): a box
// never crosses into the next entry, so an entry's tails in M, N and K load as zeros and its C is
// clipped at its own edges, as v8's are at the matrix's.
// Bottleneck it removes: bgemm v0 multiplies on the FFMA pipe, one grid z-slice per entry; a batch
// of attention-sized products (N = 64, K = 64) moves more bytes per flop than one big GEMM, so the
// space adds the 64-wide n tile (wgmma m64n64k16) that does not compute a half-empty 128-wide one.
// Measured (reports/h200/bgemm.md, 1fcaaa0): 1.01x torch.bmm at 256x(512x512x64) FP16 (memory-bound
// there, ncu DRAM 63 % as cuBLAS's), 0.98x at 32x(1024x1024x128). The BN = 64 points after the fix of
// their C-box reuse (the boxes alternate across tiles; warp_specialized.cuh), commit 5ed7e35
// (reports/h200/bgemm-runs/bgemm-bn64.md): tuned 128x64 with 6 stages, 1.01x (FP16) and 1.02x (BF16)
// torch.bmm at 128x(1024x64x1024), 0.53x at 8192x(32x32x32), where the declared 128x128 tile gave 0.95x and 0.98x.
// So FIT_N=1 (the launch's, study/ops/bgemm.py fitted_n_defines): where an entry's N is at most 64 the launch takes
// that point, 128x64 with 6 stages, instead of computing zeros over half of a 128-wide tile (the suite's
// 25x1024x64x1024 ran the declared tile at 0.85x in c77); wider N keeps the declared tile. Measured so (c80 at
// 358e274, FP16, cold, the suite): 25x1024x64x1024 0.854x -> 0.933x torch.bmm (156,972 GFLOPS).
// FIT_N=1 also takes the 128x256 point (4 stages) where an entry's K is one or two slices, N >= 256 and the batch
// holds a wide tile for every SM: a tile of one or two slices spends as long on its fixed part (stage fill, C boxes'
// barriers and TMA stores) as on its products, and half the tiles halve that. The tuner picked it at
// 32x4096x4096x128 FP16 (c95 at bc421bd: 0.3465 ms against the declared 0.3855; DRAM 60.2 % by ncu at the declared
// tile against cuBLAS's 68.1 %, c91). Not yet measured in the suites (gpt2-xl's 25x1024x1024x64 takes it too).
// Builds on: hgemm v8 (cuda_kernels/hgemm/warp_specialized.cuh, called with Rank 3).
// Constraints: K and N multiples of 8, every row and every entry 16-byte aligned (TMA; otherwise
// staged by the launch); the grid is one block per SM whatever the batch.
// arch: sm_90a
// precisions: fp16 bf16
// config: BM=128 BN=128 BK=64 STAGES=4 GROUP=8 THREADS=384 FIT_N=1
// space: BM=128 BN=128 BK=64 STAGES=4 GROUP=8 THREADS=384 FIT_N=1
// space: BM=128 BN=128 BK=64 STAGES=4 GROUP=8 THREADS=384 FIT_N=0
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384 FIT_N=0
// space: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=384 FIT_N=0
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384 FIT_N=0
// space: BM=128 BN=64 BK=64 STAGES=6 GROUP=8 THREADS=384 FIT_N=0
// space: BM=128 BN=64 BK=64 STAGES=8 GROUP=8 THREADS=384 FIT_N=0
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/warp_specialized.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
bgemm_v1_batched_wgmma(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                       const __grid_constant__ TensorMap map_c, int batch, int M, int N, int K) {
    warp_specialized_gemm<NoEpilogue, 3>(&map_a, &map_b, &map_c, M, N, K, NoEpilogue{}, batch);
}

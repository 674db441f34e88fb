// hgemm v8 — warp specialisation and persistent tiles: a producer warpgroup issues TMA, two
// consumer warpgroups issue wgmma, and they meet only at mbarriers (docs/ladders/hgemm.md, v8).
// Idea: in v7 every warp both waits for copies and multiplies, and a block-wide __syncthreads each
// K slice holds both warpgroups to the slower one before the freed stage can be refilled. Here
// warpgroup 0 is the producer: one of its threads waits for a stage to be empty, then fills it
// with TMA; warpgroups 1 and 2 are consumers: each waits for a stage to be full, multiplies it
// (v7's stage, hgemm/wgmma_tile.cuh), and, once its wgmmas on the previous slice are done, tells
// the producer that stage is empty (one arrival per consumer warp). The barriers are per stage and
// one-directional, so no warp waits on a warp it does not depend on. setmaxnreg moves registers
// from the producer (40: it holds addresses) to the consumers (232: 128 FP32 accumulators at
// BN = 256 and their descriptors).
// The grid is persistent: one block per SM walks tiles blockIdx.x, + gridDim.x, … in the grouped
// order, and the producer runs ahead across tile boundaries, so the next tile's first slices load
// while the consumers store the last one's C.
// Epilogue through shared memory and TMA: v7 stores each thread's accumulator pairs straight to
// global memory, 4 bytes a lane, a warp's store touching 8 rows × 16 bytes (half sectors); here a
// consumer writes 64 × 64 boxes of C into a double buffer in the 128-byte swizzle and one thread
// hands each to the copy engine (cp.async.bulk.tensor store, clipped at M and N), so the consumers
// go back to wgmma while C drains. ncu before (this rung with v7's store, 4096³ FP16, commit
// 6bbd178): tensor pipe 84.1 % against 91–94 % for the Triton twins, 0.203 ms; after: 95.0 % (as
// cuBLAS), 0.183 ms (reports/h200/profiles/hgemm.md). Measured (reports/h200/hgemm-ladder.md):
// 746–769 TFLOPS at 4096³ (0.98–1.02× cuBLAS), 689–765 at 8192³ (1.01–1.07×).
// Removes: v7's per-slice block barrier, its epilogue bubble (one wave of 128 blocks per SM slot,
// then a tail; here every SM keeps one block for the whole GEMM) and its half-sector C stores.
// Constraints: as v7 (K and N multiples of 8, 16-byte aligned rows of A, B and C; otherwise
// staged by the launch). Edges: TMA zero fill on loads, clipping on stores.
// arch: sm_90a
// precisions: fp16 bf16
// config: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=16 THREADS=384
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/warp_specialized.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_v8_warp_specialized(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                          const __grid_constant__ TensorMap map_c, int M, int N, int K) {
    warp_specialized_gemm(&map_a, &map_b, &map_c, M, N, K, NoEpilogue{});
}

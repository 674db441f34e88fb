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
// Constraints: as v7 (K and N multiples of 8, 16-byte aligned rows of A, B and C, refused
// otherwise). Edges: TMA zero fill on loads, clipping on stores.
// arch: sm_90a
// precisions: fp16 bf16
// config: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=384
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=16 THREADS=384
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=384
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/wgmma_tile.cuh"
#include "sgemm/grouped_order.cuh"

using Stage = WgmmaStage<BM, BN, BK>;
constexpr int CONSUMERS = BM / 64;  // consumer warpgroups, one per 64 rows
constexpr int BOX_BYTES = 64 * Stage::ROW_BYTES;  // a 64 × 64 box of C
// Stages, two C boxes per consumer, a full and an empty barrier per stage, plus 1024 bytes to round
// the base up to the swizzle atom (hgemm.shared_bytes computes the same figure).
constexpr int SMEM_BYTES = STAGES * Stage::BYTES + CONSUMERS * 2 * BOX_BYTES + STAGES * 16 + 1024;
static_assert(THREADS == 128 * (1 + CONSUMERS), "a producer warpgroup and one consumer warpgroup per 64 rows");
static_assert(STAGES >= 2, "at least two stages");

__device__ __forceinline__ void release_registers() { asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n"); }
__device__ __forceinline__ void claim_registers() { asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n"); }

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_v8_warp_specialized(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                          const __grid_constant__ TensorMap map_c, int M, int N, int K) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned boxes = base + STAGES * Stage::BYTES, full = boxes + CONSUMERS * 2 * BOX_BYTES;
    const unsigned empty = full + STAGES * 8;
    const int tid = threadIdx.x, wg = tid / 128;
    const int rows = CDIV(M, BM), cols = CDIV(N, BN), tiles = rows * cols, slices = CDIV(K, BK);

    if (tid == 0) {
        tma_prefetch_map(&map_a);
        tma_prefetch_map(&map_b);
        tma_prefetch_map(&map_c);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + s * 8, 1);                  // the producer's expect_tx; the bytes complete it
            mbar_init(empty + s * 8, CONSUMERS * 4);     // one arrival per consumer warp
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) {  // producer
        release_registers();
        if (tid != 0) return;
        int use = 0;  // slices issued so far, over all tiles: stage use % STAGES, its round use / STAGES
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int bm, bn;
            grouped_tile_coords<GROUP>(tile, rows, cols, bm, bn);
            for (int s = 0; s < slices; ++s, ++use) {
                const int stage = use % STAGES;
                if (use >= STAGES) mbar_wait(empty + stage * 8, (use / STAGES - 1) & 1);  // its last round released
                Stage::load(base + stage * Stage::BYTES, full + stage * 8, &map_a, &map_b, bm * BM, bn * BN, s * BK);
            }
        }
        return;
    }

    claim_registers();
    const int consumer = wg - 1, thread = tid % 128;
    int use = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int bm, bn;
        grouped_tile_coords<GROUP>(tile, rows, cols, bm, bn);
        float acc[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
        for (int s = 0; s < slices; ++s, ++use) {
            const int stage = use % STAGES;
            mbar_wait(full + stage * 8, (use / STAGES) & 1);
            Stage::multiply(acc, base + stage * Stage::BYTES, consumer);
            // the previous slice's products are done: release its stage
            if (s > 0 && thread % 32 == 0) mbar_arrive(empty + (use - 1) % STAGES * 8);
        }
        wgmma_wait<0>();
        fence_registers(acc);
        if (thread % 32 == 0) mbar_arrive(empty + (use - 1) % STAGES * 8);  // the tile's last slice
        const unsigned mine = boxes + consumer * 2 * BOX_BYTES;
#pragma unroll
        for (int q = 0; q < BN / 64; ++q) {
            const unsigned box = mine + q % 2 * BOX_BYTES;
            if (thread == 0) tma_store_wait_read<1>();  // the store two boxes ago has read this buffer
            named_barrier(1 + consumer, 128);
            Stage::stage_box(acc, q, box, thread);
            fence_async_shared();
            named_barrier(1 + consumer, 128);
            if (thread == 0) {
                tma_store_2d(&map_c, bn * BN + q * 64, bm * BM + consumer * 64, box);
                tma_store_commit();
            }
        }
    }
    if (thread == 0) tma_store_wait<0>();  // the shared boxes must outlive the copies that read them
}

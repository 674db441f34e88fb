// hgemm v7 — Hopper tensor cores: wgmma.mma_async fed by TMA through an mbarrier pipeline
// (docs/ladders/hgemm.md, v7).
// Idea: v6's mma.sync runs on Hopper's legacy HMMA path, each warp loading its own fragments with
// ldmatrix. Here a warpgroup (128 threads) issues wgmma m64nBNk16, whose operands the tensor cores
// read straight from shared memory through descriptors — no fragment loads, no registers for A or
// B — and the tiles arrive by TMA: one thread issues one bulk tensor copy per box, the copy engine
// computes the addresses, zero-fills what lies past M, N or K, and writes the 128-byte-swizzled
// layout wgmma reads without bank conflicts. Each stage has an mbarrier that the copies complete
// (expect_tx); STAGES stages are in flight.
// Layout: A (M×K, row-major) is K-major: boxes of BM rows × 64 k (128 bytes). B (K×N, row-major) is
// N-major: BN/64 boxes of BK rows × 64 n; wgmma reads it with imm-trans-b = 1, its descriptor's
// leading offset stepping from one 64-wide n chunk to the next (hopper.cuh, wgmma_desc).
// Warpgroup w owns rows 64w … 64w+63 of the block tile and all BN columns: BN/2 FP32 accumulators
// per thread (128 at BN = 256).
// Loop: wait for slice s's barrier; issue its BK/16 wgmmas; commit; wait until slice s-1's group is
// done (wgmma.wait_group 1, so slice s's products run on while we go on); one __syncthreads, after
// which slice s-1's stage is free in every warpgroup; thread 0 refills it with slice s+STAGES-1.
// Removes: v6's per-warp ldmatrix traffic and HMMA issue (ncu at 4096³ FP16: HMMA pipe 53.2 %, top
// stall "wait", 248 registers, 0.44 ms).
// Measured (H200, reports/h200/hgemm-ladder.md): 654–689 TFLOPS at 4096³ (0.89–0.91× cuBLAS), 671–700
// at 8192³ (0.96–1.00×). ncu at 4096³ FP16 (reports/h200/profiles/hgemm.md): tensor pipe 82.6 %
// busy against cuBLAS's 95.0 %, 0.204 ms, top stalls barrier and long scoreboard, no bank conflicts.
// What remains (v8): the block-wide barrier each slice (every warp both waits for copies and
// multiplies); the epilogue, in which the tensor cores idle while each thread stores 4-byte pairs
// (a warp's store covers 8 rows × 16 bytes, half sectors).
// Constraints: K and N multiples of 8 and every row 16-byte aligned (TMA's global strides are
// multiples of 16 bytes); otherwise the launch stages A, B and C in such rows, inside the timed
// launch (study/ops/tma_staging.py, cuda_kernels/stage_rows.cu), and records it.
// Edges: TMA's zero fill (M, N, K tails; K smaller than BK); C stored element pair by pair, masked.
// arch: sm_90a
// precisions: fp16 bf16
// config: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=256
// space: BM=128 BN=256 BK=64 STAGES=4 GROUP=8 THREADS=256
// space: BM=128 BN=256 BK=64 STAGES=3 GROUP=8 THREADS=256
// space: BM=128 BN=128 BK=64 STAGES=4 GROUP=8 THREADS=256
// space: BM=128 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=256
// space: BM=64 BN=256 BK=64 STAGES=5 GROUP=8 THREADS=128
// space: BM=64 BN=128 BK=64 STAGES=6 GROUP=8 THREADS=128
#include "common.cuh"
#include "hopper.cuh"
#include "hgemm/wgmma_tile.cuh"
#include "sgemm/grouped_order.cuh"

using Stage = WgmmaStage<BM, BN, BK>;
// Stages, then one 8-byte barrier per stage, plus 1024 bytes to round the base up to the swizzle
// atom (hgemm.shared_bytes computes the same figure).
constexpr int SMEM_BYTES = STAGES * Stage::BYTES + STAGES * 8 + 1024;
static_assert(THREADS == 128 * (BM / 64), "one warpgroup per 64 rows");
static_assert(STAGES >= 2, "at least two stages");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_v7_wgmma_tma(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                   storage_t* __restrict__ C, int M, int N, int K, int ldc) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned bars = base + STAGES * Stage::BYTES;
    const int tid = threadIdx.x, wg = tid / 128;
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;
    const int slices = CDIV(K, BK);

    if (tid == 0) {
        tma_prefetch_map(&map_a);
        tma_prefetch_map(&map_b);
        for (int s = 0; s < STAGES; ++s) mbar_init(bars + s * 8, 1);
        mbar_fence_init();
    }
    __syncthreads();
    if (tid == 0)
        for (int s = 0; s < STAGES - 1 && s < slices; ++s)
            Stage::load(base + s * Stage::BYTES, bars + s * 8, &map_a, &map_b, m0, n0, s * BK);

    float acc[BN / 2] = {};
    for (int s = 0; s < slices; ++s) {
        const int stage = s % STAGES;
        mbar_wait(bars + stage * 8, (s / STAGES) & 1);
        Stage::multiply(acc, base + stage * Stage::BYTES, wg);  // returns with slice s-1's products done
        __syncthreads();
        const int next = s + STAGES - 1;
        if (tid == 0 && next < slices)
            Stage::load(base + next % STAGES * Stage::BYTES, bars + next % STAGES * 8, &map_a, &map_b, m0, n0, next * BK);
    }
    wgmma_wait<0>();
    fence_registers(acc);
    Stage::store(acc, C, M, N, ldc, m0, n0, wg, tid % 128);
}

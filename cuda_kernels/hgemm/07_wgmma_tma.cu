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
// Removes: v6's per-warp ldmatrix traffic and HMMA issue (ncu: tensor pipe 31.6 %, "wait" the top
// stall, 160 registers at 0.70 ms for 4096³ in v6's declared config).
// What remains (v8): the block-wide barrier each slice, and every warp both loads and multiplies;
// a producer warp and consumer warpgroups that meet only at mbarriers remove both.
// Constraints: K and N multiples of 8 and every row 16-byte aligned (TMA's global strides are
// multiples of 16 bytes): otherwise the launch is refused with the reason (study/ops/hgemm.py).
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
#include "sgemm/grouped_order.cuh"

namespace wg7 {
constexpr int WARPGROUPS = BM / 64;
constexpr int ROW_BYTES = 128;                         // one swizzled row: 64 halves
constexpr int A_BYTES = BM * ROW_BYTES;                // BM rows of BK = 64 k
constexpr int B_BOX_BYTES = BK * ROW_BYTES;            // BK rows of 64 n
constexpr int STAGE_BYTES = A_BYTES + BN / 64 * B_BOX_BYTES;
// Stages, then one 8-byte barrier per stage, plus 1024 bytes to round the base up to the swizzle
// atom (hgemm.shared_bytes computes the same figure).
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + STAGES * 8 + 1024;
static_assert(BK == 64, "a 128-byte swizzled row holds 64 halves");
static_assert(BM % 64 == 0 && THREADS == 128 * WARPGROUPS, "one warpgroup per 64 rows");
static_assert(BN == 128 || BN == 256, "wgmma_m64k16 is written for n = 128 and 256");
static_assert(STAGES >= 2, "at least two stages");
}  // namespace wg7

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_v7_wgmma_tma(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
                   storage_t* __restrict__ C, int M, int N, int K, int ldc) {
    using namespace wg7;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned bars = base + STAGES * STAGE_BYTES;
    const int tid = threadIdx.x, wg = tid / 128;
    int bm, bn;
    grouped_block_coords<GROUP>(bm, bn);
    const int m0 = bm * BM, n0 = bn * BN;
    const int slices = CDIV(K, BK);

    auto load = [&](int stage, int s) {  // thread 0 only
        const unsigned a = base + stage * STAGE_BYTES, bar = bars + stage * 8;
        mbar_arrive_expect_tx(bar, STAGE_BYTES);
        tma_load_2d(a, &map_a, s * BK, m0, bar);
#pragma unroll
        for (int c = 0; c < BN / 64; ++c) tma_load_2d(a + A_BYTES + c * B_BOX_BYTES, &map_b, n0 + c * 64, s * BK, bar);
    };
    if (tid == 0) {
        tma_prefetch_map(&map_a);
        tma_prefetch_map(&map_b);
        for (int s = 0; s < STAGES; ++s) mbar_init(bars + s * 8, 1);
        mbar_fence_init();
    }
    __syncthreads();
    if (tid == 0)
        for (int s = 0; s < STAGES - 1 && s < slices; ++s) load(s, s);

    float acc[BN / 2] = {};
    for (int s = 0; s < slices; ++s) {
        const int stage = s % STAGES;
        mbar_wait(bars + stage * 8, (s / STAGES) & 1);
        const unsigned a = base + stage * STAGE_BYTES + wg * 64 * ROW_BYTES, b = base + stage * STAGE_BYTES + A_BYTES;
        fence_registers(acc);
        wgmma_fence();
#pragma unroll
        for (int k16 = 0; k16 < BK / 16; ++k16)  // A: 32 bytes along the swizzled row; B: 16 rows of n
            wgmma_m64k16<BN>(acc, wgmma_desc(a + k16 * 32, 16, 1024), wgmma_desc(b + k16 * 16 * ROW_BYTES, B_BOX_BYTES, 1024));
        wgmma_commit();
        wgmma_wait<1>();  // slice s-1's products are done: its stage may be refilled
        fence_registers(acc);
        __syncthreads();
        const int next = s + STAGES - 1;
        if (tid == 0 && next < slices) load(next % STAGES, next);
    }
    wgmma_wait<0>();
    fence_registers(acc);

    // Accumulator fragment of m64nN (as mma.m16n8's, repeated): warp w of the warpgroup holds rows
    // 16w + g and 16w + g + 8, columns 8j + 2t and 8j + 2t + 1.
    const int lane = tid % 32, warp = tid % 128 / 32, g = lane / 4, t = lane % 4;
    const int row = m0 + wg * 64 + warp * 16 + g;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        const int col = n0 + j * 8 + 2 * t;
        store_pair<true>(C, M, N, ldc, row, col, acc[4 * j], acc[4 * j + 1]);
        store_pair<true>(C, M, N, ldc, row + 8, col, acc[4 * j + 2], acc[4 * j + 3]);
    }
}

// hgemm v4 — v3 without bank conflicts: padded or XOR-swizzled A rows (docs/ladders/hgemm.md, v4).
// Idea: the seed's step 4 (docs/seeds.md §2), both of its fixes, chosen by SWIZZLE:
//  SWIZZLE=0  padding: A's shared rows are BK + 8 halves apart (an odd number of 16-byte chunks),
//             so the 8 consecutive rows a quarter warp reads start in 8 different bank groups.
//             Costs 16 bytes of shared memory per row (2 KB at BM = 128) and leaves a 2-way
//             conflict on the 16-byte stores of A (a quarter warp stores two rows, 80 bytes apart).
//  SWIZZLE=1  XOR swizzle: rows unpadded, chunk c of row m stored at chunk c ^ ((m / (8/CHUNKS)) %
//             CHUNKS); reads and stores both conflict-free, no extra memory, an XOR per address.
// Both points are in the space, so `--autotune on` times each and the report shows what each costs.
// Everything else is v3 (register_tile.cuh): tile, thread map, loads, conversions, store.
// Removes: v3's 4-way conflicts on every A fragment read (LDS.128), i.e. 3 of every 4 shared
// wavefronts of A.
// Bottleneck that remains: each slice is loaded, waited for at a barrier, then computed: global
// latency is exposed once per slice, hidden only by other resident blocks (v5 double-buffers).
// Builds on: v3. Constraints: v3's, and SWIZZLE 0 or 1.
// arch: sm_80
// precisions: fp16 bf16
// config: BM=128 BN=128 BK=32 TM=8 TN=8 THREADS=256 SWIZZLE=1
// space: BM=128 BN=128 BK=32 TM=8 TN=8 THREADS=256 SWIZZLE=0
// space: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256 SWIZZLE=0
// space: BM=128 BN=128 BK=16 TM=8 TN=8 THREADS=256 SWIZZLE=1
// space: BM=64 BN=128 BK=32 TM=4 TN=8 THREADS=256 SWIZZLE=0
// space: BM=64 BN=128 BK=32 TM=4 TN=8 THREADS=256 SWIZZLE=1
// space: BM=128 BN=64 BK=32 TM=8 TN=8 THREADS=128 SWIZZLE=0
// space: BM=128 BN=64 BK=32 TM=8 TN=8 THREADS=128 SWIZZLE=1
#include "common.cuh"
#include "register_tile.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_v4_bank_conflicts(const storage_t* __restrict__ A, const storage_t* __restrict__ B,
                        storage_t* __restrict__ C, int M, int N, int K,
                        int lda, int ldb, int ldc) {
    single_buffer_tile<ALayout>(A, B, C, M, N, K, lda, ldb, ldc);
}

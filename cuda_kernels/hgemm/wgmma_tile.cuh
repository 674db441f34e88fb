// The stage of a wgmma GEMM tile that hgemm v7 and v8 share (docs/ladders/hgemm.md, v7): how one
// K slice is laid out in shared memory, loaded by TMA and multiplied by a warpgroup. Needs
// common.cuh and hopper.cuh.
// A stage is a BM × 64 box of A (K-major: BM rows of 64 k, 128 bytes each) followed by BN/64 boxes
// of B (N-major: BK rows of 64 n each), all in TMA's 128-byte swizzle; every box starts on a
// 1024-byte boundary (the swizzle atom: 8 rows of 128 bytes), so the descriptors' base offset is 0.
#pragma once

template <int TileM, int TileN, int TileK>
struct WgmmaStage {
    static constexpr int ROW_BYTES = 128;              // one swizzled row: 64 halves
    static constexpr int A_BYTES = TileM * ROW_BYTES;
    static constexpr int B_BOX_BYTES = TileK * ROW_BYTES;
    static constexpr int BYTES = A_BYTES + TileN / 64 * B_BOX_BYTES;
    static_assert(TileK == 64, "a 128-byte swizzled row holds 64 halves");
    static_assert(TileM % 64 == 0, "one warpgroup per 64 rows");
    static_assert(TileN == 64 || TileN == 128 || TileN == 256, "wgmma_m64k16 is written for n = 64, 128 and 256");

    // Issue the copies of the K slice at k0 of the tile at (m0, n0) into the stage at `stage`, all
    // counted on `bar` (one thread; no wait). Parts of a box past M, N or K land as zeros. Rank 3:
    // the maps are batches of matrices (bgemm v1) and the tile is in entry z.
    template <int Rank = 2>
    static __device__ __forceinline__ void load(unsigned stage, unsigned bar, const TensorMap* map_a,
                                                const TensorMap* map_b, int m0, int n0, int k0, int z = 0) {
        static_assert(Rank == 2 || Rank == 3, "matrices or batches of matrices");
        mbar_arrive_expect_tx(bar, BYTES);
        if (Rank == 3) {
            tma_load_3d(stage, map_a, k0, m0, z, bar);
#pragma unroll
            for (int c = 0; c < TileN / 64; ++c)
                tma_load_3d(stage + A_BYTES + c * B_BOX_BYTES, map_b, n0 + c * 64, k0, z, bar);
        } else {
            tma_load_2d(stage, map_a, k0, m0, bar);
#pragma unroll
            for (int c = 0; c < TileN / 64; ++c)
                tma_load_2d(stage + A_BYTES + c * B_BOX_BYTES, map_b, n0 + c * 64, k0, bar);
        }
    }

    // load for one block of a 2-block cluster whose tiles share their columns (hgemm v11): its own A,
    // and B's boxes c ≡ rank (mod 2) multicast into both blocks, so that each block's stage receives the
    // whole slice of B, half of it copied by the other block; its barrier counts all of it.
    static __device__ __forceinline__ void load_pair(unsigned stage, unsigned bar, const TensorMap* map_a,
                                                     const TensorMap* map_b, int m0, int n0, int k0, int rank) {
        static_assert(TileN / 64 % 2 == 0, "the pair splits B's 64-wide boxes between its two blocks");
        mbar_arrive_expect_tx(bar, BYTES);
        tma_load_2d(stage, map_a, k0, m0, bar);
#pragma unroll
        for (int c = rank; c < TileN / 64; c += 2)
            tma_load_2d_multicast(stage + A_BYTES + c * B_BOX_BYTES, map_b, n0 + c * 64, k0, bar, 0b11);
    }

    // acc += the slice's A rows 64·wg … 64·wg+63 times all of its B: BK/16 wgmmas issued by warpgroup
    // wg and committed as one group; returns once the group before it (the previous slice's) is
    // done, so that slice's stage may be refilled while this one's products run on. A advances 32
    // bytes (16 k) along its swizzled rows per step; B 16 of its rows; B's leading offset steps from
    // one 64-wide n chunk (box) to the next.
    static __device__ __forceinline__ void multiply(float (&acc)[TileN / 2], unsigned stage, int wg) {
        fence_registers(acc);
        wgmma_fence();
        const unsigned a = stage + wg * 64 * ROW_BYTES, b = stage + A_BYTES;
#pragma unroll
        for (int k16 = 0; k16 < TileK / 16; ++k16)
            wgmma_m64k16<TileN>(acc, wgmma_desc(a + k16 * 32, 16, 1024),
                                wgmma_desc(b + k16 * 16 * ROW_BYTES, B_BOX_BYTES, 1024));
        wgmma_commit();
        wgmma_wait<1>();
        fence_registers(acc);
    }

    // Write columns 64q … 64q+63 of a warpgroup's accumulators, mapped by the epilogue `e` (see
    // hgemm/warp_specialized.cuh) and rounded to the storage type, into a 64 × 64 box at `box` in the
    // 128-byte swizzle (row r at 128·r, its 16-byte chunk c at (c XOR r % 8)·16), the layout a
    // SWIZZLE_128B tensor map stores from. The eight rows g of a warp's store land in eight
    // different chunks: no bank conflicts.
    template <class Epilogue>
    static __device__ __forceinline__ void stage_box(const float (&acc)[TileN / 2], int q, unsigned box, int thread,
                                                     const Epilogue& e) {
        const int lane = thread % 32, g = lane / 4, t = lane % 4;
        const unsigned row0 = box + (thread / 32 * 16 + g) * ROW_BYTES, row8 = row0 + 8 * ROW_BYTES;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int group = 8 * q + j;
            const float* a = acc + 4 * group;
            const unsigned at = ((j ^ g) << 4) + 4 * t;
            st_shared_u32(row0 + at, (unsigned)from_float(e(a[0], group, 0)) | ((unsigned)from_float(e(a[1], group, 1)) << 16));
            st_shared_u32(row8 + at, (unsigned)from_float(e(a[2], group, 0)) | ((unsigned)from_float(e(a[3], group, 1)) << 16));
        }
    }

    // Store a warpgroup's 64 × TileN accumulators (rows m0 + 64·wg …) rounded to the storage type. The
    // fragment of m64nN is mma.m16n8's repeated: warp w of the warpgroup holds rows 16w + g and
    // 16w + g + 8, columns 8j + 2t and 8j + 2t + 1 (g = lane / 4, t = lane % 4). Rows 16 bytes apart
    // by a multiple (the launch checks), so pairs are 4-byte stores.
    static __device__ __forceinline__ void store(const float (&acc)[TileN / 2], storage_t* C, int M, int N, int ldc, int m0,
                                                 int n0, int wg, int thread) {
        const int lane = thread % 32, warp = thread / 32, g = lane / 4, t = lane % 4;
        const int row = m0 + wg * 64 + warp * 16 + g;
#pragma unroll
        for (int j = 0; j < TileN / 8; ++j) {
            const int col = n0 + j * 8 + 2 * t;
            store_pair<true>(C, M, N, ldc, row, col, acc[4 * j], acc[4 * j + 1]);
            store_pair<true>(C, M, N, ldc, row + 8, col, acc[4 * j + 2], acc[4 * j + 3]);
        }
    }
};

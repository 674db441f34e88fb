// The body of sgemm v11 (docs/ladders/sgemm.md, v11; the why of each step is in
// cuda_kernels/sgemm/11_3xtf32_wgmma.cu's header) as a function of Split, so that v12
// (12_3xtf32_split_k.cu) is v11's kernel over split-K units, not a copy of it. Needs common.cuh,
// hopper.cuh and the config macros BM, BN, BK, STAGES, GROUP, THREADS.
// BM, A's rows a tile, is the wgmma instruction's N (m64nBMk8): 16, 32, 64 or 128, so that a product of
// a few rows (v12's fitted BM) does not compute 128 rows of zeros.
// Split (v12): the persistent walk goes over tiles × `splits` units, unit u the K slices
// [(u % splits)·slices_per, +slices_per) of tile u / splits (the launch plans no empty range), and a
// unit's FP32 sums go to plane u % splits of `partial` (rows `ldp` floats apart) instead of C, element
// by element as C is stored; a second kernel sums the planes (hgemm/reduce_splits.cuh). Without it
// the code is v11's as it was (if constexpr; the SASS of v11's points is the same).
// FOLD=F (v11's space; 1, v11's first code, where a config does not say): a slice partial runs over F
// slices (F·32 of K) before it joins the running sum by FADD, so a consumer waits for its wgmmas before
// the FADDs F times less often, at F times the K the tensor cores accumulate without rounding to nearest
// (the gate error grows with it; each point is checked as any other). v11's header has the measurements.
// A_IN_PLACE=1 (the launch's choice where A's rows are no multiple of 16 bytes apart or start off 16 bytes,
// K = 2411: study/ops/sgemm_wgmma.py): A is read where it lies, by eight tensor maps, one per residue of its rows
// mod 8 (ResidueMaps, hopper.cuh), instead of being copied to rows one map can describe before the kernel.
// Map j's box for a tile's rows 8i + j and a slice's 32 floats starts at the aligned column before the slice
// (its first float offset[j] in) and is 36 floats wide, unswizzled, in the stage's raw part; the splitters,
// which read every float of A's box anyway, take each row's 32 floats offset[j] in and write its hi and lo
// planes in TMA's 128-byte swizzle themselves. The raw part costs a stage 36/32 of A's box more, so fewer
// stages may fit (RING). What it replaces: a copy of A (reading and writing all of it) in the timed launch,
// 28 of the 71 µs of v12 at 4517×62×2411 on the H200 (ncu, c89).
#pragma once

#ifndef FOLD
#define FOLD 1
#endif
#ifndef A_IN_PLACE
#define A_IN_PLACE 0
#endif
#include "unaligned_rows.cuh"

#include "sgemm/grouped_order.cuh"
#include "sgemm/tf32_split.cuh"

namespace wgmma3x {
constexpr int ROW_BYTES = 128;                         // one swizzled row: 32 floats
constexpr int A_BYTES = BM * ROW_BYTES;                // A's box, then its lo plane
constexpr int B_BOX_BYTES = BK * ROW_BYTES;            // a BK × 32 box of B
constexpr int RAW_ROW = 144;                          // in place: 36 floats from the aligned column before a slice
constexpr int RAW_BOX = (BM / 8 * RAW_ROW + 127) / 128 * 128;  // residue j's BM / 8 rows, on 128 bytes
constexpr int RAW_OFFSET = 2 * A_BYTES + BN / 32 * B_BOX_BYTES;  // the raw part, after A's planes and B
constexpr int STAGE_BYTES = RAW_OFFSET + A_IN_PLACE * TMA_RESIDUES * RAW_BOX;
constexpr int A_LOAD_BYTES = A_IN_PLACE ? BM * RAW_ROW : A_BYTES;  // what TMA writes of A a stage
constexpr int CONSUMERS = BN / 64;
constexpr int SPLITTERS = 96;                          // the producer warpgroup's warps 1-3
// Stages, three barriers a stage (full: TMA landed; split: A's planes written; empty: consumers
// done), 1024 bytes to align the base to the swizzle atom (study/ops/sgemm_wgmma.py, wgmma_shared_bytes, computes
// the same); in place, as many of the STAGES as fit (the raw part makes a stage larger).
constexpr int RING = stages_that_fit(STAGES, STAGE_BYTES + 24);
constexpr int SMEM_BYTES = RING * STAGE_BYTES + RING * 24 + 1024;
static_assert(BK == 32, "a 128-byte swizzled row holds 32 floats");
static_assert(STAGE_BYTES % 1024 == 0, "every stage's A planes start on a swizzle atom");
static_assert(BM == 16 || BM == 32 || BM == 64 || BM == 128, "wgmma_tf32 is written for n = 16, 32, 64 and 128");
static_assert(BN == 128 && THREADS == 128 * (1 + CONSUMERS), "a producer and one consumer warpgroup per 64 columns");
static_assert(RING >= 2, "at least two stages fit");
static_assert(FOLD >= 1, "a partial over at least one slice");

constexpr int PRODUCER_REGISTERS = 56, CONSUMER_REGISTERS = 216;  // 128·56 + 256·216 ≤ 65,536

// D(64 × N) (+)= A(64 × 8, TF32 fragments in registers) · B(8 × N, K-major TF32 in shared memory).
// The A fragment is mma.m16n8k8's per warp: a0 (row g, k t), a1 (g + 8, t), a2 (g, t + 4),
// a3 (g + 8, t + 4), warp w adding 16w to the row. scale_d = 0 overwrites D. No transposes: TF32
// wgmma has none.
template <int N>
__device__ void wgmma_tf32(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long b, int scale_d);

template <>
__device__ __forceinline__ void wgmma_tf32<16>(float (&d)[8], const unsigned (&a)[4], unsigned long long b,
                                               int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7}, "
                 "{%8, %9, %10, %11}, %12, p, 1, 1;\n}\n"
                 : WGMMA_ACC8(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}

template <>
__device__ __forceinline__ void wgmma_tf32<32>(float (&d)[16], const unsigned (&a)[4], unsigned long long b,
                                               int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
                 "%10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
                 : WGMMA_ACC8(0), WGMMA_ACC8(8)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}

template <>
__device__ __forceinline__ void wgmma_tf32<64>(float (&d)[32], const unsigned (&a)[4], unsigned long long b,
                                               int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" WGMMA_D_0_31
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : WGMMA_ACC8(0), WGMMA_ACC8(8), WGMMA_ACC8(16), WGMMA_ACC8(24)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}

template <>
__device__ __forceinline__ void wgmma_tf32<128>(float (&d)[64], const unsigned (&a)[4], unsigned long long b,
                                                int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" WGMMA_D_0_63
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : WGMMA_ACC64(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));
}

// The C column (within the consumer's 64) that wgmma row 16w + 8h + g stands for (see the header).
__device__ __forceinline__ int column_of(int w, int h, int g) {
    const int c = 2 * w + h;
    return 32 * (c / 4) + 4 * (c % 4) + (g % 4) + 16 * (g / 4);
}

// Byte offset of B's element (k, n) of a slice in its BN/32 swizzled boxes (k < 32, n < BN).
__device__ __forceinline__ unsigned b_offset(int k, int n) {
    return (n / 32) * B_BOX_BYTES + k * ROW_BYTES + ((((n % 32) / 4) ^ (k % 8)) << 4) + (n % 4) * 4;
}

__device__ __forceinline__ unsigned lds_u32(unsigned addr) {
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

// Four floats of A split: hi (TF32) at `at`, lo at the same place of the plane after it.
__device__ __forceinline__ void store_split(unsigned at, uint4 x) {
    const float v[4] = {__uint_as_float(x.x), __uint_as_float(x.y), __uint_as_float(x.z), __uint_as_float(x.w)};
    unsigned hi[4], lo[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) split(v[e], hi[e], lo[e]);
    st_shared_v4(at, make_uint4(hi[0], hi[1], hi[2], hi[3]));
    st_shared_v4(at + A_BYTES, make_uint4(lo[0], lo[1], lo[2], lo[3]));
}

// A's box of a stage split in place: hi over the FP32 values, lo into the plane after it. 16 bytes a
// step, the SPLITTERS threads over the box.
__device__ __forceinline__ void split_a(unsigned stage, int thread) {
#pragma unroll 4
    for (int i = thread; i < A_BYTES / 16; i += SPLITTERS) store_split(stage + i * 16, ld_shared_v4(stage + i * 16));
}

// In place: A's box from the stage's raw part (residue j's box holds tile rows 8i + j, 36 floats from
// `offsets`' j-th nibble before the slice) split into the hi and lo planes in TMA's 128-byte swizzle (chunk
// q of row p at q ^ p % 8, and p % 8 is the row's residue). The eight offsets (0–3 floats) come packed in a
// register: a thread's residue changes from step to step, and a parameter indexed by it would be a load.
__device__ __forceinline__ void split_a_in_place(unsigned stage, unsigned offsets, int thread) {
#pragma unroll 4
    for (int i = thread; i < A_BYTES / 16; i += SPLITTERS) {
        const int p = i / 8, q = i % 8, j = p % 8;
        const unsigned from = stage + RAW_OFFSET + j * RAW_BOX + p / 8 * RAW_ROW + 16 * q;
        store_split(stage + p * ROW_BYTES + ((q ^ j) << 4),
                    byte_window(ld_shared_v4(from), ld_shared_v4(from + 16), 4 * ((offsets >> 4 * j) & 15)));
    }
}
}  // namespace wgmma3x


template <bool Split = false>
__device__ __forceinline__ void wgmma_3xtf32_gemm(const ResidueMaps* maps_a, const TensorMap* map_b,
                                                  float* __restrict__ C, int M, int N, int K, int ldc,
                                                  int splits = 1, int slices_per = 0,
                                                  float* __restrict__ partial = nullptr, int ldp = 0) {
    using namespace wgmma3x;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    require_dynamic_smem(SMEM_BYTES);
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;  // 128-byte swizzle: 1024-byte atoms
    const unsigned full = base + RING * STAGE_BYTES, splitb = full + RING * 8, empty = splitb + RING * 8;
    const int tid = threadIdx.x, wg = tid / 128, thread = tid % 128;
    const int rows = CDIV(M, BM), cols = CDIV(N, BN), slices = CDIV(K, BK), tiles = rows * cols;
    const int units = Split ? tiles * splits : tiles;

    if (tid == 0) {
#pragma unroll
        for (int j = 0; j < (A_IN_PLACE ? TMA_RESIDUES : 1); ++j) tma_prefetch_map(&maps_a->map[j]);
        tma_prefetch_map(map_b);
        for (int s = 0; s < RING; ++s) {
            mbar_init(full + s * 8, 1);                // the TMA thread's expect_tx; the bytes complete it
            mbar_init(splitb + s * 8, SPLITTERS);      // every splitting thread, after its fence
            mbar_init(empty + s * 8, CONSUMERS * 4);   // one arrival per consumer warp
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (wg == 0) {  // producer: TMA by thread 0, the split of A by warps 1-3
        release_registers<PRODUCER_REGISTERS>();
        if (thread < 32) {
            if (thread != 0) return;
            int use = 0;  // slices issued so far over all units: stage use % RING, its round use / RING
            for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
                int bm, bn, s0 = 0, s1 = slices;
                if constexpr (Split) {
                    s0 = unit % splits * slices_per;
                    s1 = min(slices, s0 + slices_per);
                }
                grouped_tile_coords<GROUP>(Split ? unit / splits : unit, rows, cols, bm, bn);
                for (int s = s0; s < s1; ++s, ++use) {
                    const int stage = use % RING;
                    if (use >= RING) mbar_wait(empty + stage * 8, (use / RING - 1) & 1);  // its last round released
                    const unsigned st = base + stage * STAGE_BYTES, bar = full + stage * 8;
                    mbar_arrive_expect_tx(bar, A_LOAD_BYTES + BN / 32 * B_BOX_BYTES);
                    if constexpr (A_IN_PLACE) {  // map j's rows bm · BM / 8 …: the tile's rows 8i + j
#pragma unroll
                        for (int j = 0; j < TMA_RESIDUES; ++j)
                            tma_load_2d(st + RAW_OFFSET + j * RAW_BOX, &maps_a->map[j], s * BK, bm * (BM / 8), bar);
                    } else {
                        tma_load_2d(st, &maps_a->map[0], s * BK, bm * BM, bar);
                    }
#pragma unroll
                    for (int c = 0; c < BN / 32; ++c)
                        tma_load_2d(st + 2 * A_BYTES + c * B_BOX_BYTES, map_b, bn * BN + c * 32, s * BK, bar);
                }
            }
            return;
        }
        // The splitters wait only for copies to land, never for a stage to empty: they run up to
        // RING − 1 slices ahead of the consumers (v11's header says what splitting by the TMA
        // thread cost). Their slice count is the TMA thread's: the block's units' K ranges.
        int uses;
        if constexpr (Split) {
            uses = 0;
            for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
                const int s0 = unit % splits * slices_per;
                uses += min(slices, s0 + slices_per) - s0;
            }
        } else {
            uses = (tiles - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x * slices;
        }
        unsigned offsets = 0;  // in place: offset[j] in nibble j
        if constexpr (A_IN_PLACE) {
#pragma unroll
            for (int j = 0; j < TMA_RESIDUES; ++j) offsets |= (unsigned)maps_a->offset[j] << 4 * j;
        }
        for (int use = 0; use < uses; ++use) {
            const int stage = use % RING;
            mbar_wait(full + stage * 8, (use / RING) & 1);
            if constexpr (A_IN_PLACE)
                split_a_in_place(base + stage * STAGE_BYTES, offsets, thread - 32);
            else
                split_a(base + stage * STAGE_BYTES, thread - 32);
            fence_async_shared();  // the planes are read next by wgmma (the async proxy)
            mbar_arrive(splitb + stage * 8);
        }
        return;
    }

    claim_registers<CONSUMER_REGISTERS>();
    const int consumer = wg - 1, lane = thread % 32, w = thread / 32, g = lane / 4, t = lane % 4;
    // This thread's fragment rows (h = 0, 1) as columns of the tile, and its fragment words' byte
    // offsets in a slice's B boxes: a[h + 2·kh] is (k = t + 4·kh, n = col[h]), + 1024 bytes per k8.
    const int col[2] = {consumer * 64 + column_of(w, 0, g), consumer * 64 + column_of(w, 1, g)};
    unsigned frag_at[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) frag_at[j] = 2 * A_BYTES + b_offset(t + 4 * (j / 2), col[j % 2]);

    int used = 0;  // slices of earlier units: slice s of this one is use before + s − s0
    for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
        int bm, bn, s0 = 0, s1 = slices;
        if constexpr (Split) {
            s0 = unit % splits * slices_per;
            s1 = min(slices, s0 + slices_per);
        }
        const int before = used;
        used += s1 - s0;
        grouped_tile_coords<GROUP>(Split ? unit / splits : unit, rows, cols, bm, bn);
        const int m0 = bm * BM, n0 = bn * BN;
        // A consumer whose 64 columns all lie past N (N ≤ 64, or the last column tile's second half)
        // has no product to compute: it keeps the barriers' pace (its arrivals complete `empty`) but
        // issues no wgmma, so the other consumer has the SM's tensor cores to itself. The condition is
        // uniform over the warpgroup (the branch is legal around the .sync.aligned wgmma); the vote says
        // so to the compiler: on the plain comparison ptxas took the busy loop for divergent and moved
        // its wgmma descriptors off the uniform datapath (22 R2UR between a slice's wgmmas in v11's
        // SASS), and v11 ran 2 % slower at 1199×1726×1463, where 10 of its 140 tiles have an idle
        // consumer (H100, c150; tests/test_nvcc.py reads the SASS for it).
        const bool busy = __all_sync(0xffffffffu, n0 + consumer * 64 < N);
        if (!busy) {
            // Waiting for each use's copy keeps its arrival in that use's phase of `empty` (the producer
            // waited for the previous one before copying); the busy consumer's arrival, after the split
            // barrier, is what tells the producer the splitters are done with the stage.
            for (int s = s0; s < s1; ++s) {
                const int use = before + s - s0, stage = use % RING;
                mbar_wait(full + stage * 8, (use / RING) & 1);
                if (lane == 0) mbar_arrive(empty + stage * 8);
            }
            continue;
        }
        float acc[BM / 2], part[BM / 2];
#pragma unroll
        for (int i = 0; i < BM / 2; ++i) acc[i] = part[i] = 0.f;  // part: overwritten by each fold's first wgmma
        for (int s = s0; s < s1; ++s) {
            const int use = before + s - s0, stage = use % RING;
            const unsigned st = base + stage * STAGE_BYTES;
            const bool first = (s - s0) % FOLD == 0;  // the fold's first slice: its first product overwrites
            mbar_wait(full + stage * 8, (use / RING) & 1);    // B's FP32 box (read by these threads)
            mbar_wait(splitb + stage * 8, (use / RING) & 1);  // A's hi and lo planes
            unsigned hi[BK / 8][4], lo[BK / 8][4];
#pragma unroll
            for (int k8 = 0; k8 < BK / 8; ++k8)
#pragma unroll
                for (int j = 0; j < 4; ++j) split(__uint_as_float(lds_u32(st + frag_at[j] + k8 * 8 * ROW_BYTES)),
                                                  hi[k8][j], lo[k8][j]);
            fence_registers(part);
            wgmma_fence();
#pragma unroll
            for (int k8 = 0; k8 < BK / 8; ++k8) {
                const unsigned long long a_hi = wgmma_desc(st + k8 * 32, 16, 1024);
                const unsigned long long a_lo = wgmma_desc(st + A_BYTES + k8 * 32, 16, 1024);
                wgmma_tf32<BM>(part, lo[k8], a_hi, k8 > 0 || !first);
                wgmma_tf32<BM>(part, hi[k8], a_lo, 1);
                wgmma_tf32<BM>(part, hi[k8], a_hi, 1);
            }
            wgmma_commit();
            wgmma_wait<0>();
            fence_registers(part);
#pragma unroll
            for (int k8 = 0; k8 < BK / 8; ++k8) {  // the fragments stay in their registers until here
                fence_registers(hi[k8]);
                fence_registers(lo[k8]);
            }
            if (lane == 0) mbar_arrive(empty + stage * 8);
            if ((s - s0 + 1) % FOLD == 0 || s + 1 == s1) {  // the fold's last slice, or the unit's
#pragma unroll
                for (int i = 0; i < BM / 2; ++i) acc[i] += part[i];
            }
        }
        // D row R = 16w + 8h + g is column n0 + col[h]; D column 8j + 2t (+1) is row m0 + 8j + 2t (+1).
        // Split: the unit's sums into its plane, as C would take them.
        float* __restrict__ out = Split ? partial + (size_t)(unit % splits) * M * ldp : C;
        const int ld = Split ? ldp : ldc;
#pragma unroll
        for (int j = 0; j < BM / 8; ++j) {
            const int m = m0 + 8 * j + 2 * t;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int row = m + e % 2, n = n0 + col[e / 2];
                if (row < M && n < N) out[(size_t)row * ld + n] = acc[4 * j + e];
            }
        }
    }
}

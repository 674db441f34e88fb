// Hopper (sm_90a) building blocks of hgemm v7 and v8 (docs/ladders/hgemm.md, v7): mbarriers, TMA
// tile loads, wgmma shared-memory descriptors and the wgmma instruction. Facts and sources:
// docs/toolchain.md 6.1–6.3. Needs common.cuh (smem_addr) and the storage macro (STORAGE_FP16 or
// STORAGE_BF16). Everything is inline PTX, so NVRTC needs no CUDA header.
#pragma once

#if defined(STORAGE_BF16)
#define WGMMA_TYPE "bf16"
#else
#define WGMMA_TYPE "f16"
#endif

// A CUtensorMap: 128 opaque bytes encoded on the host (study/backends/tma.py), passed by value as a
// __grid_constant__ parameter so that the TMA unit can read it from the parameter space.
struct __align__(64) TensorMap {
    unsigned long long opaque[16];
};

// A matrix whose rows one map cannot describe (no multiple of 16 bytes apart, or off a 16-byte start), read
// in place: rows r and r + 8 lie 8 · ld elements apart, a multiple of 16 bytes for 2- and 4-byte elements,
// so map[j] holds the rows r ≡ j (mod 8), from row j's first byte rounded down to 16 bytes, and offset[j] is
// that rounding in elements (study/backends/tma.py, residue_maps; docs/toolchain.md 6.3). A box starts only on
// 16 bytes of its row, so the kernel asks for the aligned column before the one it wants and shifts each row
// by its residue's offset on chip. Where one map does: map[0], offsets 0. Passed by value as one
// __grid_constant__ parameter (1,088 bytes).
constexpr int TMA_RESIDUES = 8;
struct __align__(64) ResidueMaps {
    TensorMap map[TMA_RESIDUES];
    int offset[TMA_RESIDUES];
};

// A ring of `stages` stages of `stage_bytes` (its barriers included) in sm_90's dynamic shared memory (227 KiB
// a block) beside the 1024 bytes that round its base up to the swizzle atom: as many of them as fit. A raw part
// for rows read in place makes a stage larger, so fewer may fit (study/backends/tma.py, stages_that_fit).
constexpr int SMEM_LIMIT = 232448;
constexpr int stages_that_fit(int stages, int stage_bytes) {
    return stages < (SMEM_LIMIT - 1024) / stage_bytes ? stages : (SMEM_LIMIT - 1024) / stage_bytes;
}

// ---- mbarriers: a 64-bit shared word that counts arrivals and, for TMA, bytes ----------------
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(arrivals) : "memory");
}

// Make initialised barriers visible to the TMA unit (the async proxy) before any copy names them;
// a __syncthreads() (a cluster barrier where another block's copies or arrivals reach them) must follow
// before other threads use them.
__device__ __forceinline__ void mbar_fence_init() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// A producer/consumer ring of `stages` stages (one thread, then a barrier as above): stage s's full
// barrier at full + 8s, completed by `fills` arrivals — 1, the producer's expect_tx with the bytes it
// announces, or more where threads fill the stage (hgemm v10 in place: its shifter threads' ordinary
// stores, after TMA's bytes land on a third barrier) — its empty barrier at
// empty + 8s by `releases` consumer arrivals (hgemm v8's and v10's bodies).
__device__ __forceinline__ void mbar_init_ring(unsigned full, unsigned empty, int stages, unsigned releases,
                                               unsigned fills = 1) {
    for (int s = 0; s < stages; ++s) {
        mbar_init(full + s * 8, fills);
        mbar_init(empty + s * 8, releases);
    }
    mbar_fence_init();
}

// One arrival that also announces `bytes` still to land: the phase completes when the arrivals are
// in and the copies have delivered that many bytes.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}

// Spin until the phase of parity `parity` has completed (try_wait suspends the warp for a while
// inside the instruction, so this loop does not hammer the issue slots).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// ---- across a 2-block cluster (hgemm v11; cluster.cuh's barrier after the set-up) -------------------
// One arrival on the barrier at the same offset as `bar` in block `rank` of the cluster (DSMEM: mapa
// turns the offset into that block's window). The plain form: what it announces is that this block's
// wgmmas, already waited for, no longer read a stage, and no generic write needs publishing; the
// `.release.cluster` form would put a GPU-wide MEMBAR before every arrival (SASS, docs/toolchain.md 6.7).
// The waiting producer uses mbar_wait as for local arrivals.
__device__ __forceinline__ void mbar_arrive_remote(unsigned bar, int rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" :: "r"(remote) : "memory");
}

// ---- TMA ------------------------------------------------------------------------------------
// Copy the box at element coordinates (x innermost, y) of `map`'s tensor into shared memory at
// `dst` and count its bytes on `bar`. Out-of-bounds elements of the box are written as zeros, so
// tile tails in M, N and K need no code (and add nothing to the product).
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap* map, int x, int y, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}

// The same for a 3-D tensor (a batch of matrices, z the entry): a box never spans two entries, so
// what lies past an entry's rows or columns loads as zeros, not as the next entry's elements.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TensorMap* map, int x, int y, int z, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar) : "memory");
}

// tma_load_2d into every block of the cluster named in `mask` (bit r: rank r): one read of the box
// from L2, written at the same offset as `dst` in each of those blocks' shared memory and counted on
// the barrier at the same offset as `bar` in each (sm_90a).
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const TensorMap* map, int x, int y, unsigned bar,
                                                      unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}

// Copy a box from shared memory at `src` to the tensor at element coordinates (x, y): the copy
// engine clips what lies past the tensor's edges, so partial tiles need no masks. Asynchronous:
// commit with tma_store_commit, and wait before `src` is written again or the block exits.
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, int x, int y, unsigned src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                 :: "l"(map), "r"(x), "r"(y), "r"(src) : "memory");
}

// The same into entry z of a 3-D tensor, clipped at that entry's edges.
__device__ __forceinline__ void tma_store_3d(const TensorMap* map, int x, int y, int z, unsigned src) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n"
                 :: "l"(map), "r"(x), "r"(y), "r"(z), "r"(src) : "memory");
}

__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Wait until at most N committed stores still read their shared memory (the global writes may
// still be in flight; the source may be rewritten).
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;\n" :: "n"(N) : "memory");
}

// Wait until at most N committed stores are still in flight, global writes included.
template <int N>
__device__ __forceinline__ void tma_store_wait() { asm volatile("cp.async.bulk.wait_group %0;\n" :: "n"(N) : "memory"); }

__device__ __forceinline__ void st_shared_u32(unsigned addr, unsigned value) {
    asm volatile("st.shared.u32 [%0], %1;\n" :: "r"(addr), "r"(value) : "memory");
}

// 16 bytes from or to a shared-window address on 16 bytes (hgemm v10's on-chip shift, sgemm 3xTF32's split).
__device__ __forceinline__ uint4 ld_shared_v4(unsigned addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr)
                 : "memory");
    return v;
}

__device__ __forceinline__ void st_shared_v4(unsigned addr, uint4 v) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" :: "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

// Shared-memory writes of ordinary stores become visible to the async proxy (TMA, wgmma) only
// after this fence, in every writing thread, followed by a barrier before the copy is issued.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// A barrier of `threads` threads on hardware barrier `id` (0 is __syncthreads'): one warpgroup
// synchronises without stopping the others.
__device__ __forceinline__ void named_barrier(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}

// named_barrier that also returns whether any of its threads passed `value` true (bar.red.or): one
// thread's finding (an atomic counter's old value, say) reaches the others in the same barrier.
__device__ __forceinline__ bool named_barrier_or(unsigned id, unsigned threads, bool value) {
    unsigned any;
    asm volatile("{\n .reg .pred p, q;\n setp.ne.u32 q, %1, 0;\n bar.red.or.pred p, %2, %3, q;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n" : "=r"(any) : "r"((unsigned)value), "r"(id), "r"(threads) : "memory");
    return any != 0;
}

__device__ __forceinline__ void tma_prefetch_map(const TensorMap* map) {
    asm volatile("prefetch.tensormap [%0];\n" :: "l"(map) : "memory");
}

// ---- wgmma ----------------------------------------------------------------------------------
// Shared-memory matrix descriptor of a tile stored in 128-byte-swizzled rows (the layout TMA's
// SWIZZLE_128B writes): start address, leading- and stride-dimension byte offsets (each >> 4), base
// offset 0 (tiles start on 1024-byte boundaries), swizzle mode 1 = 128 B. For a K-major operand
// (A: rows of 64 k) the stride offset is the 1024 bytes from one 8-row atom to the next and the
// leading offset is unused; for an MN-major one (B: rows of 64 n, one per k) the stride offset is
// the 1024 bytes from k rows 0–7 to 8–15 and the leading offset the distance between 64-wide n
// chunks (PTX ISA, "Shared Memory Matrix Layout", canonical layouts).
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr, unsigned leading, unsigned stride) {
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)((leading & 0x3FFFF) >> 4) << 16 |
           (unsigned long long)((stride & 0x3FFFF) >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Wait until at most N committed wgmma groups of this warpgroup are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// Tie the accumulators to a point in the instruction stream: the compiler may not move their reads
// or writes across it (it does not know that wgmma writes them asynchronously).
template <int R>
__device__ __forceinline__ void fence_registers(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

// The same for a register operand of wgmma (sgemm v11's TF32 fragments): read asynchronously, it must
// stay in its registers, unmodified, until the wgmma.wait_group that covers it.
template <int R>
__device__ __forceinline__ void fence_registers(unsigned (&r)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}

// setmaxnreg: a warp-specialised block's producer warpgroup gives registers back to the pool down to
// Registers a thread, and its consumer warpgroups take them up to Registers (hgemm v8, sgemm v11).
template <int Registers>
__device__ __forceinline__ void release_registers() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(Registers)); }
template <int Registers>
__device__ __forceinline__ void claim_registers() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(Registers)); }

// D(64×N, FP32, in registers) += A(64×16, K-major, shared) · B(16×N, N-major, shared): the
// warpgroup's 128 threads each hold N/2 accumulators. imm-trans-b = 1 because B is stored with n
// contiguous (a row-major K×N matrix); A is K-major as stored. scale-d = 1: always accumulate (the
// accumulators start at zero).
template <int N>
__device__ void wgmma_m64k16(float (&d)[N / 2], unsigned long long a, unsigned long long b);

// The accumulator operands of a wgmma, written once for every shape: registers %0 … %31 (n = 64),
// %0 … %63 (n = 128) or %0 … %127 (n = 256) in the instruction text, "+f"(d[i]) eight at a time in
// the operand list.
#define WGMMA_D_0_31 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "\
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_D_0_63 WGMMA_D_0_31 ", "\
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "\
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_D_64_127 \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "\
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "\
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "\
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WGMMA_ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                      "+f"(d[i + 6]), "+f"(d[i + 7])
#define WGMMA_ACC64(i) WGMMA_ACC8(i), WGMMA_ACC8(i + 8), WGMMA_ACC8(i + 16), WGMMA_ACC8(i + 24), WGMMA_ACC8(i + 32), \
                       WGMMA_ACC8(i + 40), WGMMA_ACC8(i + 48), WGMMA_ACC8(i + 56)

template <>
__device__ __forceinline__ void wgmma_m64k16<64>(float (&d)[32], unsigned long long a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {" WGMMA_D_0_31
                 "}, %32, %33, p, 1, 1, 0, 1;\n}\n"
                 : WGMMA_ACC8(0), WGMMA_ACC8(8), WGMMA_ACC8(16), WGMMA_ACC8(24)
                 : "l"(a), "l"(b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16<128>(float (&d)[64], unsigned long long a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {" WGMMA_D_0_63
                 "}, %64, %65, p, 1, 1, 0, 1;\n}\n"
                 : WGMMA_ACC64(0)
                 : "l"(a), "l"(b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16<256>(float (&d)[128], unsigned long long a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {" WGMMA_D_0_63 ", "
                 WGMMA_D_64_127 "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
                 : WGMMA_ACC64(0), WGMMA_ACC64(64)
                 : "l"(a), "l"(b), "r"(1));
}

// D(64×N, FP32, in registers) += A(64×16, MN-major, shared) · B(16×N, K-major, shared) for the
// small N of a skinny product computed transposed (hgemm v10: Cᵀ = Bᵀ·Aᵀ, the weights as A, the
// tokens as B). imm-trans-a = 1: A is stored with its 64 rows (m) contiguous — a row-major K×N
// weight matrix read as its transpose, one 128-byte swizzled row of 64 m per k, the layout v8's B
// boxes have (the PTX ISA allows the transpose for .f16/.bf16 operands read through descriptors);
// imm-trans-b = 0: B is K-major as stored (N rows of 64 k, as v8's A boxes). Each thread holds N/2
// accumulators in the layout of wgmma_m64k16 (row 16w + g and + 8, columns 8j + 2t and + 1).
template <int N>
__device__ void wgmma_m64k16_ta(float (&d)[N / 2], unsigned long long a, unsigned long long b);

#define WGMMA_D_0_3 "%0, %1, %2, %3"
#define WGMMA_D_0_7 WGMMA_D_0_3 ", %4, %5, %6, %7"
#define WGMMA_D_0_15 WGMMA_D_0_7 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define WGMMA_ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])

template <>
__device__ __forceinline__ void wgmma_m64k16_ta<8>(float (&d)[4], unsigned long long a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {" WGMMA_D_0_3
                 "}, %4, %5, p, 1, 1, 1, 0;\n}\n"
                 : WGMMA_ACC4(0)
                 : "l"(a), "l"(b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16_ta<16>(float (&d)[8], unsigned long long a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {" WGMMA_D_0_7
                 "}, %8, %9, p, 1, 1, 1, 0;\n}\n"
                 : WGMMA_ACC8(0)
                 : "l"(a), "l"(b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16_ta<32>(float (&d)[16], unsigned long long a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {" WGMMA_D_0_15
                 "}, %16, %17, p, 1, 1, 1, 0;\n}\n"
                 : WGMMA_ACC8(0), WGMMA_ACC8(8)
                 : "l"(a), "l"(b), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16_ta<64>(float (&d)[32], unsigned long long a, unsigned long long b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." WGMMA_TYPE "." WGMMA_TYPE " {" WGMMA_D_0_31
                 "}, %32, %33, p, 1, 1, 1, 0;\n}\n"
                 : WGMMA_ACC8(0), WGMMA_ACC8(8), WGMMA_ACC8(16), WGMMA_ACC8(24)
                 : "l"(a), "l"(b), "r"(1));
}

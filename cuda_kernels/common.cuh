// Helpers shared by every kernel. The CUDA backend inlines this file into each
// kernel's source before NVRTC sees it (CuPy's disk cache does not hash included
// headers), and nvcc finds it through -I cuda_kernels. No other header is needed:
// everything below is plain CUDA C++ or inline PTX, so NVRTC and nvcc agree.
#pragma once

#define CDIV(a, b) (((a) + (b) - 1) / (b))

// ---- storage types ------------------------------------------------------------------------
// The precision being measured sets one of STORAGE_FP32 / STORAGE_FP16 / STORAGE_BF16 (-D,
// study/precision.py). Half types travel as their raw 16-bit patterns and are converted with
// PTX (cvt), so no cuda_fp16.h / cuda_bf16.h is needed under NVRTC. Arithmetic is FP32.
#if defined(STORAGE_FP16) || defined(STORAGE_BF16)
typedef unsigned short storage_t;
#else
typedef float storage_t;
#endif
// Elements of storage_t in one 16-byte (128-bit) load.
constexpr int VEC = 16 / (int)sizeof(storage_t);

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(unsigned short h) {
#if defined(STORAGE_BF16)
    return __uint_as_float((unsigned)h << 16);  // bf16 is the top half of an fp32
#else
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#endif
}

// Round to the storage type (round to nearest even).
__device__ __forceinline__ storage_t from_float(float v) {
#if defined(STORAGE_BF16)
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
#elif defined(STORAGE_FP16)
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
#else
    return v;
#endif
}

// The low and the high 16-bit element of a 32-bit word as a float. BF16 takes the word itself: a shift
// or a mask, one instruction an element (bf16 is the top half of an fp32), where converting each half
// as an unsigned short extracts it first (nvcc 13.0 PTX: cvt.u32.u16 then shl.b32 an element, beside
// FP16's single cvt.f32.f16) — work an element that a GEMV loop near its issue limit pays for every
// byte it reads: sgemv v4 BF16 at 2^20–2^22 × 64–256 gained 1.0–2.7 % (c27 at f33a66b beside c26, cold,
// unpaired; paired × cuBLAS 0.993–0.997). Softmax v4–v6 BF16 showed no gain (within ±1.7 %, c27) and keep
// the per-half form (row.cuh's unpack).
__device__ __forceinline__ float low_float(unsigned w) {
#if defined(STORAGE_BF16)
    return __uint_as_float(w << 16);
#else
    return to_float((unsigned short)(w & 0xffff));
#endif
}
__device__ __forceinline__ float high_float(unsigned w) {
#if defined(STORAGE_BF16)
    return __uint_as_float(w & 0xffff0000u);
#else
    return to_float((unsigned short)(w >> 16));
#endif
}

// acc + the dot product of two 16-byte vectors of storage_t (4 floats or 8 halves), in FP32.
__device__ __forceinline__ float dot16(uint4 a, uint4 b, float acc) {
    const unsigned ua[4] = {a.x, a.y, a.z, a.w}, ub[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#if defined(STORAGE_FP16) || defined(STORAGE_BF16)
        acc = fmaf(low_float(ua[i]), low_float(ub[i]), acc);
        acc = fmaf(high_float(ua[i]), high_float(ub[i]), acc);
#else
        acc = fmaf(__uint_as_float(ua[i]), __uint_as_float(ub[i]), acc);
#endif
    }
    return acc;
}

// acc + the dot product of a 16-byte vector of storage_t with its elements' factors already in FP32
// (sgemv v4's slice of x, converted once a thread), element by element in the vector's order. BF16 comes
// from the 32-bit words as in dot16; FP16 element by element (its cvt takes a half directly).
__device__ __forceinline__ float dot16_floats(uint4 a, const float (&xf)[VEC], float acc) {
#if defined(STORAGE_BF16)
    const unsigned ua[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = fmaf(high_float(ua[i]), xf[2 * i + 1], fmaf(low_float(ua[i]), xf[2 * i], acc));
#else
    const storage_t* ae = reinterpret_cast<const storage_t*>(&a);
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc = fmaf(to_float(ae[e]), xf[e], acc);
#endif
    return acc;
}

// Sum over the 32 lanes of a warp; every lane gets the total.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// 32-bit shared-memory address of a generic pointer, as cp.async and ldmatrix want it.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned r;
    asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}

// Stop the kernel (an error the launch reports) when it was given less dynamic shared memory than
// it indexes: the launch computes the figure in Python (study/ops/*.py), the kernel in constexprs,
// and a disagreement must never read or write past the allocation silently.
__device__ __forceinline__ void require_dynamic_smem(unsigned bytes) {
    unsigned given;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(given));
    if (given < bytes) __trap();
}

// Asynchronous global->shared copies (sm_80+). src_bytes = 0 writes zeros without reading
// global memory: out-of-range tile elements become zeros, which add nothing to the product.
// The _shared forms take the destination as a 32-bit shared-window address (HOIST=1 of hgemm v6 and
// sgemm v7: worked out once per thread); the others convert a generic pointer at every copy.
__device__ __forceinline__ void cp_async_16_shared(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
    cp_async_16_shared(smem_addr(dst), src, valid);
}

__device__ __forceinline__ void cp_async_4_shared(unsigned dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(dst), "l"(src), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void cp_async_4(void* dst, const void* src, bool valid) {
    cp_async_4_shared(smem_addr(dst), src, valid);
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// cp.async of 8 bytes (.ca: the 16-byte form alone may bypass L1). With the 4- and 16-byte forms these are
// the sizes cp.async moves; rows 2 but not 4 bytes apart (halves, an odd length) have none.
__device__ __forceinline__ void cp_async_8(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" :: "r"(smem_addr(dst)), "l"(src), "r"(valid ? 8 : 0));
}

// One cp.async of Vec elements (4, 8 or 16 bytes), zero-filled where !ok.
template <int Vec, class T>
__device__ __forceinline__ void cp_async_chunk(T* dst, const T* src, bool ok) {
    constexpr int BYTES = Vec * (int)sizeof(T);
    static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async moves 4, 8 or 16 bytes");
    if constexpr (BYTES == 16) cp_async_16(dst, src, ok);
    else if constexpr (BYTES == 8) cp_async_8(dst, src, ok);
    else cp_async_4(dst, src, ok);
}

// Issue the copies of a Rows × Cols block of a row-major matrix (R × C, rows ld elements apart) starting
// at row r0, column c0, into dst (rows dst_ld elements apart), Vec elements a copy (Vec · sizeof(T) of 4,
// 8 or 16 bytes); no wait. C, ld and the block's columns are multiples of Vec and the base is aligned to a
// copy's bytes (the ALIGNED paths at 16 bytes; hgemm v6's 8- and 4-byte copies too), so a chunk lies
// wholly inside or outside the matrix, and outside ones are zero-filled. Consecutive threads take
// consecutive chunks of a row: coalesced global reads. A counted loop, unrolled (16-byte copies fully: one
// address update per copy).
template <int Rows, int Cols, int Threads, int Vec, class T>
__device__ __forceinline__ void cp_async_block(T* dst, int dst_ld, const T* src, int ld, int R, int C, int r0,
                                               int c0, int tid) {
    constexpr int PER_ROW = Cols / Vec, TOTAL = Rows * PER_ROW;
    static_assert(Cols % Vec == 0, "a block row is whole chunks");
    auto copy = [&](int i) {
        const int c = tid + i * Threads;
        if (TOTAL % Threads != 0 && c >= TOTAL) return;
        const int r = c / PER_ROW, col = c % PER_ROW * Vec;
        const bool ok = r0 + r < R && c0 + col < C;
        cp_async_chunk<Vec>(dst + r * dst_ld + col, ok ? src + (size_t)(r0 + r) * ld + c0 + col : src, ok);
    };
    if constexpr (Vec * sizeof(T) == 16) {
#pragma unroll
        for (int i = 0; i < CDIV(TOTAL, Threads); ++i) copy(i);
    } else {  // 2–4 times the 16-byte copies: unrolled fully, ptxas kept every address live across the
              // K loop (v6's 128-thread tile: 255 registers and 256 bytes of spills at 8-byte A, 4-byte B)
#pragma unroll 4
        for (int i = 0; i < CDIV(TOTAL, Threads); ++i) copy(i);
    }
}

// The 16-byte copies of the ALIGNED paths.
template <int Rows, int Cols, int Threads, class T>
__device__ __forceinline__ void cp_async_block_16(T* dst, int dst_ld, const T* src, int ld, int R, int C, int r0,
                                                  int c0, int tid) {
    cp_async_block<Rows, Cols, Threads, 16 / (int)sizeof(T)>(dst, dst_ld, src, ld, R, C, r0, c0, tid);
}

// The same block of halves through registers, where no cp.async size fits the rows (an odd number of
// halves apart): a thread loads two adjacent halves (two 2-byte loads) and stores them as one 4-byte word,
// and every load of the block is issued before its first store, so a block costs one global latency, not
// one a load, as the element loop it replaced did (hgemm v6: one to four loads between stores). Pairs
// halve the registers the loads hold (a half a register spilled 504 bytes at v6's 128-thread tile; paired,
// 272 where both operands are odd, 132 where only B is). copy_block_pairs is synchronous: the warps stall for
// the loads before they compute the slice in hand, and a second operand's loads wait for the first's stores
// (hgemm v6 at A_VEC = B_VEC = 1: two latencies a slice). Its halves apart — fetch_block_pairs (the loads
// into `v`, a thread's pairs) and store_block_pairs — let a pipeline load a refill before a slice's products
// and store it after them (hgemm v6's DEFER=1, pipeline.cuh cp_async_pipeline_deferred).
__host__ __device__ constexpr int block_pairs_each(int rows, int cols, int threads) {
    return CDIV(rows * cols / 2, threads);
}

template <int Rows, int Cols, int Threads, class T>
__device__ __forceinline__ void fetch_block_pairs(unsigned (&v)[block_pairs_each(Rows, Cols, Threads)], const T* src,
                                                  int ld, int R, int C, int r0, int c0, int tid) {
    static_assert(sizeof(T) == 2 && Cols % 2 == 0, "a block row is whole pairs of halves");
    constexpr int PER_ROW = Cols / 2, PAIRS = Rows * PER_ROW, EACH = block_pairs_each(Rows, Cols, Threads);
    const unsigned short* bits = reinterpret_cast<const unsigned short*>(src);
#pragma unroll
    for (int i = 0; i < EACH; ++i) {
        const int p = tid + i * Threads, r = p / PER_ROW, c = p % PER_ROW * 2;
        const bool row = (PAIRS % Threads == 0 || p < PAIRS) && r0 + r < R;
        const unsigned short* s = bits + (size_t)(r0 + r) * ld + c0 + c;
        const unsigned lo = row && c0 + c < C ? s[0] : 0u, hi = row && c0 + c + 1 < C ? s[1] : 0u;
        v[i] = lo | hi << 16;  // +0.0 in FP16 and BF16 where outside
    }
}

template <int Rows, int Cols, int Threads, class T>
__device__ __forceinline__ void store_block_pairs(T* dst, int dst_ld, const unsigned (&v)[block_pairs_each(Rows, Cols,
                                                                                                           Threads)],
                                                  int tid) {
    constexpr int PER_ROW = Cols / 2, PAIRS = Rows * PER_ROW, EACH = block_pairs_each(Rows, Cols, Threads);
#pragma unroll
    for (int i = 0; i < EACH; ++i) {
        const int p = tid + i * Threads;
        if (PAIRS % Threads == 0 || p < PAIRS)
            *reinterpret_cast<unsigned*>(dst + p / PER_ROW * dst_ld + p % PER_ROW * 2) = v[i];
    }
}

template <int Rows, int Cols, int Threads, class T>
__device__ __forceinline__ void copy_block_pairs(T* dst, int dst_ld, const T* src, int ld, int R, int C, int r0,
                                                 int c0, int tid) {
    unsigned v[block_pairs_each(Rows, Cols, Threads)];
    fetch_block_pairs<Rows, Cols, Threads>(v, src, ld, R, C, r0, c0, tid);
    store_block_pairs<Rows, Cols, Threads>(dst, dst_ld, v, tid);
}

#if defined(STORAGE_FP16) || defined(STORAGE_BF16)
// Two FP32 outputs of a row of C (columns col, col+1; col even, as in every mma/wgmma accumulator
// fragment) rounded to the storage type. Paired (rows 16-byte aligned, ldc even): one 4-byte store
// when both columns are inside; otherwise element by element. Rows and columns past M and N are
// not written.
template <bool Paired>
__device__ __forceinline__ void store_pair(storage_t* C, int M, int N, int ldc, int row, int col, float x, float y) {
    if (row >= M) return;
    storage_t* c = C + (size_t)row * ldc + col;
    if (Paired && col + 1 < N) {
        *reinterpret_cast<unsigned*>(c) = (unsigned)from_float(x) | ((unsigned)from_float(y) << 16);
    } else {
        if (col < N) c[0] = from_float(x);
        if (col + 1 < N) c[1] = from_float(y);
    }
}
#endif

// Wait until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

// ---- register micro-tile (v3 and later) -------------------------------------------------
// A thread owns Rows x Cols outputs as (Rows/4) x (Cols/4) groups of 4x4. Its rows are
// row0 + g*GapA + 0..3 and its columns col0 + h*GapB + 0..3: groups are spread GapA (GapB) apart
// so that the float4 shared-memory reads of neighbouring threads are consecutive
// (conflict-free) and each read feeds 4 FFMAs per operand.

// One k step: 2 x (Rows/4 + Cols/4) 16-byte shared loads feed Rows*Cols independent FFMAs.
// a: &As[kk][row offset of this thread] (A stored transposed, k-major); b: &Bs[kk][col offset].
// Its two halves are separate functions so that a kernel can load one step's fragments while it
// multiplies the previous step's (sgemm v7's PREFETCH, sgemm/tile_warp.cuh).
template <int Rows, int Cols, int GapA, int GapB>
__device__ __forceinline__ void load_fragments(float (&ra)[Rows], float (&rb)[Cols], const float* a, const float* b) {
#pragma unroll
    for (int g = 0; g < Rows / 4; ++g)
        *reinterpret_cast<float4*>(&ra[g * 4]) = *reinterpret_cast<const float4*>(a + g * GapA);
#pragma unroll
    for (int h = 0; h < Cols / 4; ++h)
        *reinterpret_cast<float4*>(&rb[h * 4]) = *reinterpret_cast<const float4*>(b + h * GapB);
}

// FMA_ORDER (an axis of sgemm v7's space): 0 row by row, each A value reused along its row; 1 column
// by column, each column walked the other way from the last. Which registers ptxas gives the FFMAs
// follows the order: at v7's tuned point 1 leaves 17 % of them with two fresh sources in one register
// bank against 0's 23 % (experiments/ffma_banks.py; what that buys is the GPU's to say).
#ifndef FMA_ORDER
#define FMA_ORDER 0
#endif
template <int Rows, int Cols>
__device__ __forceinline__ void fma_fragments(float (&acc)[Rows][Cols], const float (&ra)[Rows], const float (&rb)[Cols]) {
    if constexpr (FMA_ORDER == 1) {
#pragma unroll
        for (int j = 0; j < Cols; ++j)
#pragma unroll
            for (int s = 0; s < Rows; ++s) {
                const int i = j % 2 ? Rows - 1 - s : s;
                acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
            }
    } else {
#pragma unroll
        for (int i = 0; i < Rows; ++i)
#pragma unroll
            for (int j = 0; j < Cols; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
}

template <int Rows, int Cols, int GapA, int GapB>
__device__ __forceinline__ void micro_tile_step(float (&acc)[Rows][Cols], const float* a, const float* b) {
    float ra[Rows], rb[Cols];
    load_fragments<Rows, Cols, GapA, GapB>(ra, rb, a, b);
    fma_fragments(acc, ra, rb);
}

// Write the micro-tile to C (row-major, rows ldc apart), 16 bytes at a time where the rows are
// 16-byte aligned (Vec), element by element at the edges otherwise.
template <int Rows, int Cols, int GapA, int GapB, bool Vec>
__device__ __forceinline__ void store_micro_tile(const float (&acc)[Rows][Cols], float* C, int M, int N,
                                                 int ldc, int row0, int col0) {
#pragma unroll
    for (int i = 0; i < Rows; ++i) {
        const int row = row0 + (i / 4) * GapA + i % 4;
        if (row >= M) continue;
#pragma unroll
        for (int h = 0; h < Cols / 4; ++h) {
            const int col = col0 + h * GapB;
            float* c = C + (size_t)row * ldc + col;
            if (Vec && col + 3 < N) {
                *reinterpret_cast<float4*>(c) =
                    make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < N) c[j] = acc[i][h * 4 + j];
            }
        }
    }
}

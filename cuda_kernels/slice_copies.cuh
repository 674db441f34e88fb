// One K slice of a GEMM's operands copied by 16-byte cp.async with every address formed once per
// thread: the HOIST=1 path of hgemm v6 and sgemm v8, and B's half of sgemm v7's (whose A goes
// through 4-byte transposing copies: sgemm/tile_warp.cuh) (docs/ladders/hgemm.md, v6). A is row-major
// with K contiguous (a Rows × Depth block), B row-major with N contiguous (Depth × Cols); a stage
// holds As[Rows][StrideA] then Bs[Depth][StrideB] (row lengths in elements). Why: ncu's source page of hgemm v6 put 143
// of the 151 instructions of each refill, and nvdisasm of sgemm v8 most of its ~180 non-MMA,
// non-split ones, into rebuilding the copies' 64-bit addresses from re-read kernel parameters,
// their bounds and their shared addresses, slice after slice. A thread's chunks of a slice lie a
// fixed number of rows apart (Threads / chunks per row), in one column: one global pointer and one
// shared offset per operand, advanced by a constant a slice; the row and column bounds are masks
// set once; only K's bound moves; a range of K starts at the k_begin given (hgemm v12). The rows must be
// 16-byte aligned and K, N whole chunks (the kernels' ALIGNED path). issue() walks the slices in order, as
// cp_async_pipeline calls it.
// Needs common.cuh.
#pragma once

// The parameters are named apart from the kernels' -D macros (BM, BN, BK would be replaced by
// numbers): A's block is Rows × Depth, B's Depth × Cols, a stage's rows StrideA and StrideB long.

// B's copies: a Depth × Cols slice of B into rows StrideB elements apart that start `offset` bytes
// into a stage. A thread's chunks share one column, so N's bound is one flag.
template <class T, int Depth, int Cols, int StrideB, int Threads>
struct BSliceCopies16 {
    static constexpr int BYTES = sizeof(T), CHUNK = 16 / BYTES;  // an element's bytes; elements a copy moves
    static constexpr int PER_ROW = Cols / CHUNK, CHUNKS = Depth * PER_ROW / Threads;
    static constexpr int STEP = Threads / PER_ROW;  // rows between a thread's chunks
    static_assert(Cols % CHUNK == 0 && Threads % PER_ROW == 0 && Depth * PER_ROW % Threads == 0,
                  "HOIST: each thread's B chunks of a slice in one column, whole chunks per thread");

    const T* B;  // the matrix: a valid address for the zero-filling copies
    const T* b;  // this thread's first chunk of the current slice
    size_t rows, slice;  // elements between its chunks, and between slices
    unsigned dst;  // byte offset of its first chunk inside a stage
    bool live;  // its column inside N
    int k;  // the k of its first row in the current slice

    __device__ __forceinline__ BSliceCopies16(const T* B, int N, int ldb, int n0, int k_begin, unsigned offset,
                                              int tid) {
        const int r = tid / PER_ROW, c = tid % PER_ROW * CHUNK;
        this->B = B;
        b = B + (size_t)(k_begin + r) * ldb + n0 + c;
        rows = (size_t)STEP * ldb;
        slice = (size_t)Depth * ldb;
        dst = offset + (unsigned)(r * StrideB + c) * BYTES;
        live = n0 + c < N;
        k = k_begin + r;
    }

    __device__ __forceinline__ void issue(unsigned stage, int K) {
#pragma unroll
        for (int i = 0; i < CHUNKS; ++i) {
            const bool ok = live && k + i * STEP < K;
            cp_async_16_shared(stage + dst + i * STEP * StrideB * BYTES, ok ? b + i * rows : B, ok);
        }
        b += slice;
        k += Depth;
    }
};

// Both operands: A's Rows × Depth slice (its rows' bounds a mask set once), then B's.
template <class T, int Rows, int Cols, int Depth, int StrideA, int StrideB, int Threads>
struct SliceCopies16 {
    static constexpr int BYTES = sizeof(T), CHUNK = 16 / BYTES;
    static constexpr int A_PER_ROW = Depth / CHUNK, A_CHUNKS = Rows * A_PER_ROW / Threads;
    static constexpr int A_STEP = Threads / A_PER_ROW;  // rows between a thread's chunks
    static_assert(Depth % CHUNK == 0 && Threads % A_PER_ROW == 0 && Rows * A_PER_ROW % Threads == 0 &&
                      A_CHUNKS <= 32,
                  "HOIST: each thread's A chunks of a slice in one column, whole chunks per thread");

    const T* A;  // the matrix: a valid address for the zero-filling copies
    const T* a;  // this thread's first A chunk of the current slice
    size_t a_rows;  // elements between its A chunks
    unsigned a_dst;  // byte offset of its first A chunk inside a stage
    unsigned a_live;  // A's chunk i inside M: bit i
    int ak;  // the k of its A column in the current slice (a counter of its own, not B's: ptxas keeps
             // hgemm v6's loop 150 instructions so, 151 and 2 more registers with one)
    BSliceCopies16<T, Depth, Cols, StrideB, Threads> b;

    // k_begin: the k of the first slice issued (hgemm v12's range; 0 for a whole K).
    __device__ __forceinline__ SliceCopies16(const T* A, const T* B, int M, int N, int lda, int ldb, int m0, int n0,
                                             int tid, int k_begin = 0)
        : b(B, N, ldb, n0, k_begin, Rows * StrideA * BYTES, tid) {
        const int ar = tid / A_PER_ROW, ac = tid % A_PER_ROW * CHUNK;
        this->A = A;
        a = A + (size_t)(m0 + ar) * lda + k_begin + ac;
        a_rows = (size_t)A_STEP * lda;
        a_dst = (unsigned)(ar * StrideA + ac) * BYTES;
        a_live = 0;
#pragma unroll
        for (int i = 0; i < A_CHUNKS; ++i) a_live |= (unsigned)(m0 + ar + i * A_STEP < M) << i;
        ak = k_begin + ac;
    }

    // Issue the copies of the current slice into the stage at shared address `stage`, then move on.
    __device__ __forceinline__ void issue(unsigned stage, int K) {
#pragma unroll
        for (int i = 0; i < A_CHUNKS; ++i) {
            const bool ok = (a_live >> i & 1) && ak < K;
            cp_async_16_shared(stage + a_dst + i * A_STEP * StrideA * BYTES, ok ? a + i * a_rows : A, ok);
        }
        b.issue(stage, K);
        a += Depth;
        ak += Depth;
    }
};

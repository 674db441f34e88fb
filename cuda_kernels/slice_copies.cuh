// One K slice of a GEMM's operands copied by 16-byte cp.async with every address formed once per
// thread: the HOIST=1 path of hgemm v6 and sgemm v8 (docs/ladders/hgemm.md, v6). A is row-major
// with K contiguous (a Rows × Depth block), B row-major with N contiguous (Depth × Cols); a stage
// holds As[Rows][StrideA] then Bs[Depth][StrideB] (row lengths in elements). Why: ncu's source page of hgemm v6 put 143
// of the 151 instructions of each refill, and nvdisasm of sgemm v8 most of its ~180 non-MMA,
// non-split ones, into rebuilding the copies' 64-bit addresses from re-read kernel parameters,
// their bounds and their shared addresses, slice after slice. A thread's chunks of a slice lie a
// fixed number of rows apart (Threads / chunks per row), in one column: one global pointer and one
// shared offset per operand, advanced by a constant a slice; the row and column bounds are masks
// set once; only K's bound moves. The rows must be 16-byte aligned and K, N whole chunks (the
// kernels' ALIGNED path). issue() walks the slices in order, as cp_async_pipeline calls it.
// Needs common.cuh.
#pragma once

// The parameters are named apart from the kernels' -D macros (BM, BN, BK would be replaced by
// numbers): A's block is Rows × Depth, B's Depth × Cols, a stage's rows StrideA and StrideB long.
template <class T, int Rows, int Cols, int Depth, int StrideA, int StrideB, int Threads>
struct SliceCopies16 {
    static constexpr int BYTES = sizeof(T), CHUNK = 16 / BYTES;  // an element's bytes; elements a copy moves
    static constexpr int A_PER_ROW = Depth / CHUNK, B_PER_ROW = Cols / CHUNK;
    static constexpr int A_CHUNKS = Rows * A_PER_ROW / Threads, B_CHUNKS = Depth * B_PER_ROW / Threads;
    static constexpr int A_STEP = Threads / A_PER_ROW, B_STEP = Threads / B_PER_ROW;  // rows between a thread's chunks
    static_assert(Depth % CHUNK == 0 && Cols % CHUNK == 0 && Threads % A_PER_ROW == 0 && Threads % B_PER_ROW == 0 &&
                      Rows * A_PER_ROW % Threads == 0 && Depth * B_PER_ROW % Threads == 0 && A_CHUNKS <= 32 &&
                      B_CHUNKS <= 32,
                  "HOIST: each thread's chunks of a slice in one column, whole chunks per thread");

    const T* A;  // the matrices: a valid address for the zero-filling copies
    const T* B;
    const T* a;  // this thread's first A chunk of the current slice
    const T* b;  // ... and first B chunk
    size_t a_rows, b_rows, b_slice;  // elements between A chunks, B chunks, and B slices
    unsigned a_dst, b_dst;  // byte offsets of the first chunks inside a stage
    unsigned a_live;  // A's chunk i inside M: bit i
    bool b_live;  // B's column inside N (the same for all of this thread's B chunks)
    int ak, bk;  // the k of this thread's A column and of its first B row, in the current slice

    __device__ __forceinline__ SliceCopies16(const T* A, const T* B, int M, int N, int lda, int ldb, int m0, int n0,
                                             int tid) {
        const int ar = tid / A_PER_ROW, ac = tid % A_PER_ROW * CHUNK;
        const int br = tid / B_PER_ROW, bc = tid % B_PER_ROW * CHUNK;
        this->A = A;
        this->B = B;
        a = A + (size_t)(m0 + ar) * lda + ac;
        b = B + (size_t)br * ldb + n0 + bc;
        a_rows = (size_t)A_STEP * lda;
        b_rows = (size_t)B_STEP * ldb;
        b_slice = (size_t)Depth * ldb;
        a_dst = (unsigned)(ar * StrideA + ac) * BYTES;
        b_dst = (unsigned)(Rows * StrideA + br * StrideB + bc) * BYTES;
        a_live = 0;
#pragma unroll
        for (int i = 0; i < A_CHUNKS; ++i) a_live |= (unsigned)(m0 + ar + i * A_STEP < M) << i;
        b_live = n0 + bc < N;
        ak = ac;  // two counters, not one k and two offsets: ptxas keeps hgemm v6's loop 150 instructions
        bk = br;  // so (151 and 2 more registers with one)
    }

    // Issue the copies of the current slice into the stage at shared address `stage`, then move on.
    __device__ __forceinline__ void issue(unsigned stage, int K) {
#pragma unroll
        for (int i = 0; i < A_CHUNKS; ++i) {
            const bool ok = (a_live >> i & 1) && ak < K;
            cp_async_16_shared(stage + a_dst + i * A_STEP * StrideA * BYTES, ok ? a + i * a_rows : A, ok);
        }
#pragma unroll
        for (int i = 0; i < B_CHUNKS; ++i) {
            const bool ok = b_live && bk + i * B_STEP < K;
            cp_async_16_shared(stage + b_dst + i * B_STEP * StrideB * BYTES, ok ? b + i * b_rows : B, ok);
        }
        a += Depth;
        b += b_slice;
        ak += Depth;
        bk += Depth;
    }
};

// The register tile of hgemm v3, v4 and v5 (docs/ladders/hgemm.md, v3): a block of THREADS computes
// a BM x BN tile of C; thread (ty, tx) owns TM x TN outputs in FP32 registers, rows ty + i·TY
// (i < TM) and columns tx·TN + j (j < TN). The slices of A (BM x BK) and B (BK x BN) are kept in
// shared memory as halves, in the layout the global loads deliver them: A k-contiguous (a row of
// BK halves per m), B n-contiguous. What differs between the rungs is where an A element sits in
// its shared row (the layouts below: v3 plain, v4 padded or swizzled) and how slices arrive (v5).
// Needs BM BN BK TM TN THREADS ALIGNED (-D, from the rung's header) and common.cuh.
#pragma once

constexpr int CHUNK = 8;         // halves in 16 bytes: one LDG.128 / STS.128 / LDS.128 / cp.async
constexpr int TY = BM / TM;      // threads along M
constexpr int TX = BN / TN;      // threads along N
static_assert(sizeof(storage_t) == 2, "hgemm stores halves: compile with STORAGE_FP16 or STORAGE_BF16");
static_assert(TY * TX == THREADS, "THREADS must be (BM/TM) * (BN/TN)");
// Lanes run along M (ty = tid % TY): the 8 lanes of a quarter warp hold 8 consecutive rows, the
// pattern the bank-conflict arithmetic of docs/ladders/hgemm.md (v3, v4) is about.
static_assert(TY % 8 == 0, "TY = BM/TM must be a multiple of 8 (a quarter warp on 8 consecutive rows)");
static_assert(TN % CHUNK == 0, "TN must be a multiple of 8: a thread reads its B columns 16 bytes at a time");
static_assert(BK == 16 || BK == 32 || BK == 64, "BK must be 16, 32 or 64: 2, 4 or 8 chunks of 16 bytes per row (an "
                                               "even count makes the padded stride odd; a power of two up to 8 keeps "
                                               "the swizzled chunk index inside the row)");

// ---- where A[m][k] of the slice sits in shared memory (offsets in halves) -----------------
// Shared memory serves 32 banks of 4 bytes: a 16-byte read by 8 lanes (a quarter warp) runs in one
// pass when their 8 chunks lie in 8 different 16-byte bank groups (address / 16 mod 8).

// v3: rows of BK halves back to back, as loaded. The 8 consecutive rows a quarter warp reads at the
// same k are BK·2 bytes apart, i.e. BK/8 bank groups: at BK = 32 they fall in 2 of the 8 groups,
// a 4-way conflict on every A fragment read (2-way at BK = 16, 8-way at BK = 64).
struct APlain {
    static constexpr int ROW = BK;
    __device__ static int at(int m, int k) { return m * ROW + k; }
};

// v4, SWIZZLE=0: each row padded by one 16-byte chunk, BK + 8 halves apart: an odd number of
// chunks (BK/8 is even), so 8 consecutive rows start in 8 different bank groups. Costs BM·16
// bytes of shared memory and a 2-way conflict on the 16-byte stores of two rows by one quarter warp.
struct APadded {
    static constexpr int ROW = BK + CHUNK;
    __device__ static int at(int m, int k) { return m * ROW + k; }
};

// v4, SWIZZLE=1: rows unpadded, the chunk index XORed with the row's position among the rows that
// share one 128-byte line of banks: chunk c of row m is stored at chunk c ^ ((m / (8/CHUNKS)) %
// CHUNKS). Eight consecutive rows reading the same logical chunk then hit 8 different bank groups,
// and a quarter warp storing 128 contiguous bytes of global rows still covers all 8 groups once.
// Costs no memory, an XOR per address.
struct ASwizzled {
    static constexpr int ROW = BK;
    static constexpr int CHUNKS = BK / CHUNK;          // 16-byte chunks per row: 2, 4 or 8
    static constexpr int ROWS_PER_LINE = 8 / CHUNKS;   // rows sharing one 128-byte line of the banks
    __device__ static int at(int m, int k) {
        const int chunk = (k / CHUNK) ^ ((m / ROWS_PER_LINE) % CHUNKS);
        return m * ROW + chunk * CHUNK + k % CHUNK;
    }
};

// ---- global -> shared, synchronous (v3, v4; v5's first slice on the scalar path) ------------
// Slice k0 of A and B into As (layout L) and Bs; elements outside the matrices become zeros.
template <class L>
__device__ __forceinline__ void load_slice(storage_t* As, storage_t* Bs, const storage_t* __restrict__ A,
                                           const storage_t* __restrict__ B, int M, int N, int K, int lda, int ldb,
                                           int m0, int n0, int k0, int tid) {
#if ALIGNED
    // 16 bytes (8 halves) per load and store. K and N are multiples of 8 and rows start on 16
    // bytes (ALIGNED), so a chunk lies wholly inside the matrix or wholly outside it.
    for (int f = tid; f < BM * BK / CHUNK; f += THREADS) {
        const int m = f / (BK / CHUNK), k = f % (BK / CHUNK) * CHUNK;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (m0 + m < M && k0 + k < K) v = *reinterpret_cast<const uint4*>(A + (size_t)(m0 + m) * lda + k0 + k);
        *reinterpret_cast<uint4*>(As + L::at(m, k)) = v;
    }
    for (int f = tid; f < BK * BN / CHUNK; f += THREADS) {
        const int k = f / (BN / CHUNK), n = f % (BN / CHUNK) * CHUNK;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (k0 + k < K && n0 + n < N) v = *reinterpret_cast<const uint4*>(B + (size_t)(k0 + k) * ldb + n0 + n);
        *reinterpret_cast<uint4*>(Bs + k * BN + n) = v;
    }
#else
    // One half at a time: any K, N, leading dimension or base address.
    for (int e = tid; e < BM * BK; e += THREADS) {
        const int m = e / BK, k = e % BK;
        As[L::at(m, k)] = (m0 + m < M && k0 + k < K) ? A[(size_t)(m0 + m) * lda + k0 + k] : storage_t(0);
    }
    for (int e = tid; e < BK * BN; e += THREADS) {
        const int k = e / BN, n = e % BN;
        Bs[k * BN + n] = (k0 + k < K && n0 + n < N) ? B[(size_t)(k0 + k) * ldb + n0 + n] : storage_t(0);
    }
#endif
}

// ---- the product of one slice ------------------------------------------------------------
// Half j (0..7) of a 16-byte chunk, converted to FP32 (j is a constant once the loops unroll).
__device__ __forceinline__ float half_at(const uint4& v, int j) {
    const unsigned w = j < 2 ? v.x : j < 4 ? v.y : j < 6 ? v.z : v.w;
    return to_float((unsigned short)(j % 2 ? w >> 16 : w & 0xffffu));
}

// acc += As·Bs over the slice. Per 8 k: TM 16-byte A reads (8 consecutive k of each of the
// thread's rows: the reads whose conflicts v4 removes) and 8·TN/8 16-byte B reads (its TN
// consecutive columns at one k: lanes of one tx share the address, neighbouring tx read
// neighbouring chunks, no conflict) feed 8·TM·TN FFMAs, after converting TM + TN halves per k.
template <class L>
__device__ __forceinline__ void multiply_slice(float (&acc)[TM][TN], const storage_t* As, const storage_t* Bs,
                                               int ty, int tx) {
#pragma unroll
    for (int kc = 0; kc < BK; kc += CHUNK) {
        uint4 a[TM];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = *reinterpret_cast<const uint4*>(As + L::at(ty + i * TY, kc));
#pragma unroll
        for (int kk = 0; kk < CHUNK; ++kk) {
            float av[TM], bv[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) av[i] = half_at(a[i], kk);
#pragma unroll
            for (int h = 0; h < TN / CHUNK; ++h) {
                const uint4 b = *reinterpret_cast<const uint4*>(Bs + (kc + kk) * BN + tx * TN + h * CHUNK);
#pragma unroll
                for (int j = 0; j < CHUNK; ++j) bv[h * CHUNK + j] = half_at(b, j);
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
    }
}

// ---- the store: each output rounded once to the storage type -------------------------------
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    return (unsigned)from_float(lo) | ((unsigned)from_float(hi) << 16);
}

__device__ __forceinline__ void store_tile(const float (&acc)[TM][TN], storage_t* __restrict__ C, int M, int N,
                                           int ldc, int m0, int n0, int ty, int tx) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + ty + i * TY;
        if (row >= M) continue;
#pragma unroll
        for (int h = 0; h < TN / CHUNK; ++h) {
            const int col = n0 + tx * TN + h * CHUNK;
            storage_t* c = C + (size_t)row * ldc + col;
            const float* v = &acc[i][h * CHUNK];
#if ALIGNED
            // N is a multiple of 8 and col of 8: the chunk is wholly inside or wholly outside.
            if (col < N)
                *reinterpret_cast<uint4*>(c) = make_uint4(pack2(v[0], v[1]), pack2(v[2], v[3]),
                                                          pack2(v[4], v[5]), pack2(v[6], v[7]));
#else
#pragma unroll
            for (int j = 0; j < CHUNK; ++j)
                if (col + j < N) c[j] = from_float(v[j]);
#endif
        }
    }
}

// v4 and v5 choose A's layout by SWIZZLE (their config): 0 padded rows, 1 XOR-swizzled chunks.
#ifdef SWIZZLE
static_assert(SWIZZLE == 0 || SWIZZLE == 1, "SWIZZLE is 0 (padded rows) or 1 (XOR-swizzled chunks)");
#if SWIZZLE
typedef ASwizzled ALayout;
#else
typedef APadded ALayout;
#endif
#endif

// The whole block tile of v3 and v4, one shared buffer: load a slice, barrier, multiply, barrier
// (the next slice overwrites As and Bs). The rungs differ only by A's layout L.
template <class L>
__device__ __forceinline__ void single_buffer_tile(const storage_t* __restrict__ A, const storage_t* __restrict__ B,
                                                   storage_t* __restrict__ C, int M, int N, int K,
                                                   int lda, int ldb, int ldc) {
    __shared__ __align__(16) storage_t As[BM * L::ROW];
    __shared__ __align__(16) storage_t Bs[BK * BN];
    const int tid = threadIdx.x, ty = tid % TY, tx = tid / TY;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_slice<L>(As, Bs, A, B, M, N, K, lda, ldb, m0, n0, k0, tid);
        __syncthreads();
        multiply_slice<L>(acc, As, Bs, ty, tx);
        __syncthreads();
    }
    store_tile(acc, C, M, N, ldc, m0, n0, ty, tx);
}

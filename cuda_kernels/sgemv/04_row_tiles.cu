// sgemv v4 — tall-skinny A: tiles of whole rows staged through shared memory, LANES lanes a row
// (docs/ladders/sgemv.md, v4).
// Idea: v1–v3 give each row a warp (32 lanes) and load it lane by lane. A row of a few dozen
// elements then busies a handful of lanes: at N = 16 FP16 (32 bytes) one 16-byte load serves two
// lanes of 32 and a warp has 64 bytes of A in flight, where HBM wants about bandwidth × latency
// (4.8 TB/s × ~0.7 µs ≈ 3.4 MB, ~25 KB per SM) outstanding; and a row of N not a multiple of 16
// bytes takes the scalar path, 2 or 4 bytes a lane per load. Here a block takes `tile_rows` whole
// rows at once: in a row-major A they are one contiguous run of tile_rows·N elements, which the
// block reads with 16-byte loads whatever N is (the launch picks tile_rows so that every run starts
// on 16 bytes), TILE_VECS loads a thread issued before any is used (THREADS·TILE_VECS·16 bytes in
// flight per block, 32 KB at the declared config), and stores to shared memory. Then LANES lanes
// sum a row out of shared memory (x staged beside it) and reduce with LANES-wide shuffles.
// Removes: v2/v3's idle lanes and narrow scalar loads on short rows (tall-skinny A, any N).
// Bottleneck that remains: a tile is loaded, then computed: a block's own loads do not overlap its
// arithmetic; other resident blocks (the shared memory allows 3 or more a SM) overlap them. The
// groups of a warp read rows N elements apart, so their reads can fall in the same banks (at FP32,
// N = 16, LANES = 4: 4-way, ~6 elements a clock from shared memory against the ~5 that HBM delivers
// an SM), which the space's LANES points trade against more shuffles; a profile will say which
// wins. Rows longer than a tile (N·size > THREADS·TILE_VECS·16 / (16 / gcd(N·size, 16))) are v2/v3's
// case: the launch passes tile_rows = 0 and the block takes a plain LANES-per-row loop from global
// memory (path "rows" in the record; "tiles" or, below, "vectors" otherwise).
// Rows of V = N/VEC whole vectors, V a power of two up to 32 (FP16/BF16 N = 8..256, FP32 N = 4..128,
// A and x on 16 bytes): the launch passes row_vecs = V and the block skips shared memory. Vector i of
// the tile is then the (i mod V)-th 16 bytes of row i / V, and since THREADS is a multiple of V a
// thread's vectors are the same columns of every row it touches: its 16 bytes of x are loaded once,
// each vector is summed in registers and V consecutive lanes add their sums with shuffles (fixed
// order). The staged path spends per element a shared store, two shared loads, two conversions and a
// loop step on top of the FMA: at FP16 N = 64 it reached 2,098 GB/s against cuBLAS's 3,653 while FP32
// at the same shape (half the elements a byte) reached 3,460 (c20), the mark of an instruction-bound
// loop; the vectors path drops the shared round trip and the loop (path "vectors" in the record).
// Its first version (dot16 converting x with each vector, one vector's shuffles after another's; c21
// at 00a4915, cold, autotune off, paired) lifted 2^20×64 FP16 to 3,463 GB/s (0.95× cuBLAS), BF16 3,483,
// and reached 3,716–4,018 at 2^20×256 and 2^22×64–256 FP16/BF16 (0.86–0.96×, unpaired); ncu at
// 2^22×256 FP16 (c22): issue
// active 73 %, DRAM 80.5 %, top stall `wait` (fixed-latency dependencies), where the staged FP32 path
// at the same shape issues 50 % of cycles at 93.5 % DRAM. So x is converted once per thread and the
// TILE_VECS rows' shuffles interleave: ncu 0.4829 ms against 0.5572 at 2^22×256 FP16, DRAM 92.9 %;
// cold, unpaired (c23 at 298b687): 2^22×64 FP16 4,217 GB/s (1.01× cuBLAS), BF16 4,104 (0.98×),
// FP32 4,322 (2.28×); 2^20×64 FP16 3,714 (1.02×). BF16 lagged FP16 by 2–4 % at every tall-skinny shape
// (c26 at db2295e, 0.957–0.994× cuBLAS): its elements now come from the 32-bit words, a shift or a mask
// each (common.cuh, low_float), and it holds 0.984–0.998× (c27 at f33a66b; paired 2^20×64 0.997
// [0.996, 0.998], 2^22×64 0.993 [0.992, 0.994]); FP16 at the same shapes 1.008–1.029× (c26, unpaired).
// Builds on: v1 (lanes over a row, shuffle reduction), v2 (16-byte loads). Constraints: A contiguous
// and 16-byte aligned for the tiles (else the rows path); dynamic shared memory THREADS·TILE_VECS·16
// bytes + N elements of x on the staged path, none on the vectors path.
// arch: sm_80
// precisions: fp32 fp16 bf16
// Lanes fitted to the row (FIT=1, the declared config; study/ops/sgemv.py, fitted_lanes): the
// largest power of two up to 32 that gives each lane at least 4 elements of a row, so a 16-element
// row is summed by 4 lanes and a row of 128 or more by a whole warp (the staged path's rows only).
// config: THREADS=256 TILE_VECS=8 LANES=32 FIT=1
// space: THREADS=256 TILE_VECS=8 LANES=4 FIT=0
// space: THREADS=256 TILE_VECS=8 LANES=16 FIT=0
// space: THREADS=256 TILE_VECS=8 LANES=32 FIT=0
// space: THREADS=256 TILE_VECS=4 LANES=8 FIT=0
// space: THREADS=512 TILE_VECS=4 LANES=8 FIT=0
// space: THREADS=128 TILE_VECS=16 LANES=8 FIT=0
#include "common.cuh"

static_assert(THREADS % 32 == 0, "THREADS must be whole warps");
static_assert(LANES >= 1 && LANES <= 32 && (LANES & (LANES - 1)) == 0, "LANES (threads per row): a power of two, 1..32");
static_assert(TILE_VECS >= 1 && TILE_VECS <= 16, "TILE_VECS 16-byte loads a thread per tile: 1..16");
constexpr int TILE = THREADS * TILE_VECS * VEC;  // elements of A a tile holds (sgemv.py: tile_elements)
constexpr int GROUPS = THREADS / LANES;          // rows a block sums at once

// Sum over the LANES lanes of a group (LANES-aligned within the warp); every lane of it gets the total.
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = LANES / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemv_v4_row_tiles(const storage_t* __restrict__ A, const storage_t* __restrict__ x,
                   storage_t* __restrict__ y, int M, int N, int tile_rows, int row_vecs) {
    const int lane = threadIdx.x % LANES, group = threadIdx.x / LANES;
    if (tile_rows == 0) {  // rows longer than a tile (uniform over the grid): LANES lanes a row from global
        for (long long base = (long long)blockIdx.x * GROUPS; base < M; base += (long long)gridDim.x * GROUPS) {
            const long long row = base + group;
            float acc = 0.0f;
            if (row < M)
                for (int j = lane; j < N; j += LANES) acc = fmaf(to_float(A[row * N + j]), to_float(__ldg(&x[j])), acc);
            acc = group_sum(acc);  // the loop is uniform over the block: every lane reaches the shuffles
            if (lane == 0 && row < M) y[row] = from_float(acc);
        }
        return;
    }
    const long long row0 = (long long)blockIdx.x * tile_rows;
    const int rows = (int)min((long long)tile_rows, M - row0);
    if (row_vecs > 0) {  // N = row_vecs·VEC, row_vecs a power of two ≤ 32 (uniform over the grid)
        const uint4* src = reinterpret_cast<const uint4*>(A + row0 * N);  // on 16 bytes: N·size is a multiple of 16
        const int vecs = rows * row_vecs;
        const int part = threadIdx.x & (row_vecs - 1);  // = i mod row_vecs for every vector i it loads
        float xf[VEC];  // converted once: the FP16/BF16 loop is issue-bound (ncu, below), a cvt an element saved
        {
            const uint4 xv = reinterpret_cast<const uint4*>(x)[part];
            const storage_t* xe = reinterpret_cast<const storage_t*>(&xv);
#pragma unroll
            for (int e = 0; e < VEC; ++e) xf[e] = to_float(xe[e]);
        }
        uint4 v[TILE_VECS];
#pragma unroll
        for (int u = 0; u < TILE_VECS; ++u) {  // every load issued before any is used: bytes in flight
            const int i = threadIdx.x + u * THREADS;
            if (i < vecs) v[u] = src[i];
        }
        float acc[TILE_VECS];
#pragma unroll
        for (int u = 0; u < TILE_VECS; ++u) {  // BF16 from the 32-bit words (common.cuh, dot16_floats)
            acc[u] = 0.0f;
            if (threadIdx.x + u * THREADS < vecs) acc[u] = dot16_floats(v[u], xf, acc[u]);
        }
        // TILE_VECS independent shuffles a step rather than one vector's chain after another: ncu's
        // top stall on the first version was `wait` (fixed-latency dependencies).
        for (int offset = row_vecs / 2; offset > 0; offset >>= 1)  // within aligned groups of row_vecs lanes
#pragma unroll
            for (int u = 0; u < TILE_VECS; ++u) acc[u] += __shfl_xor_sync(0xffffffffu, acc[u], offset);
#pragma unroll
        for (int u = 0; u < TILE_VECS; ++u) {
            const int i = threadIdx.x + u * THREADS;
            if (part == 0 && i < vecs) y[row0 + i / row_vecs] = from_float(acc[u]);
        }
        return;
    }
    require_dynamic_smem((TILE + N) * sizeof(storage_t));
    extern __shared__ __align__(16) unsigned char smem[];
    storage_t* tile = reinterpret_cast<storage_t*>(smem);
    storage_t* xs = tile + TILE;

    const int count = rows * N;  // ≤ tile_rows·N ≤ TILE
    const storage_t* src = A + row0 * N;  // on 16 bytes: tile_rows·N·size is a multiple of 16
    const int vecs = count / VEC;
    uint4 v[TILE_VECS];
#pragma unroll
    for (int u = 0; u < TILE_VECS; ++u) {  // every load issued before any is stored: bytes in flight
        const int i = threadIdx.x + u * THREADS;
        if (i < vecs) v[u] = reinterpret_cast<const uint4*>(src)[i];
    }
    const int tail = vecs * VEC + threadIdx.x;  // the last tile's run may end off a vector: < VEC elements
    const bool has_tail = tail < count;
    storage_t t = has_tail ? src[tail] : storage_t(0);
    for (int j = threadIdx.x; j < N; j += THREADS) xs[j] = x[j];
#pragma unroll
    for (int u = 0; u < TILE_VECS; ++u) {
        const int i = threadIdx.x + u * THREADS;
        if (i < vecs) reinterpret_cast<uint4*>(tile)[i] = v[u];
    }
    if (has_tail) tile[tail] = t;
    __syncthreads();

    for (int base = 0; base < rows; base += GROUPS) {  // uniform over the block
        const int r = base + group;
        float acc = 0.0f;
        if (r < rows) {
            const storage_t* a = tile + r * N;
            for (int j = lane; j < N; j += LANES) acc = fmaf(to_float(a[j]), to_float(xs[j]), acc);
        }
        acc = group_sum(acc);
        if (lane == 0 && r < rows) y[row0 + r] = from_float(acc);
    }
}

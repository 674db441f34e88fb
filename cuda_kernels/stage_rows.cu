// Staging for the TMA rungs: not a rung (study/ops/tma_staging.py, staged_launcher).
// TMA reads and writes rows whose starts are 16 bytes apart by a multiple and lie on 16 bytes
// (docs/toolchain.md 6.3). A matrix that breaks that (K or N no multiple of 8 halves or 4 floats,
// a padded leading dimension, an offset view) is copied inside the timed launch into rows that
// keep it, the tensor map sized to the true matrix so that TMA still reads the tails as zeros;
// C is written to such rows and copied out after (the gate poisons those rows with C). The copies
// are the fallback's cost and are timed with the rung.
// Grid: x over rows × W slots, W the most 16-byte destination words a row can touch (its bytes / 16
// rounded up, plus one that a row starting off a word may reach), slot j of a row its j-th word (a row
// that touches fewer leaves its last slot idle); entries on z, striding by the grid where a batch has more than
// 65535. Bottleneck: memory. The first version moved one 2- or 4-byte element a thread, since the
// unaligned side allows no wider access (hgemm v10 with its B staged so took 322 µs at 1 × 50257 × 1600
// BF16 against cuBLAS's 72; its twin, staged by torch's copy, 235 µs). Now a thread writes one aligned
// 16-byte word of the destination row, read as the two aligned 16-byte source words its bytes lie in,
// shifted by the rows' misalignment (unaligned_rows.cuh): 16-byte accesses on both sides, the second
// load of each pair an L1 hit (the next thread's first). Words at a row's ends, whose aligned source or
// destination word reaches past the row, go element by element, so that no byte outside the rows is
// read (initcheck) or written. Rows used to take a block each (the row's words on x, rows on y): ncu of
// hgemm v9 at 4517×62×2411 BF16 (c57 at c107f7f, reports/h200/profiles/hgemm.md) found its three
// copies 15.6 µs (A, 4517 rows of 4,822 bytes), 6.2 µs (B, 2411 rows of 124 bytes: 2,411 blocks of
// 256 threads, 9 of them busy) and 8.3 µs (C, 4517 × 124 bytes) — 30.1 of the launch's 53.0 µs, its
// GEMM 18.5. Rows packed into blocks (c58 at e934f1c, same profile): A 13.8 µs (21.8 MB read and written,
// 3.2 TB/s: at DRAM rate), B 4.8, C 4.4 — 23.0 µs of a 49.3 µs launch (cuBLAS 30.9 µs).
// config: ELEM_BYTES=2
#if ELEM_BYTES == 2
typedef unsigned short elem_t;
#elif ELEM_BYTES == 4
typedef unsigned int elem_t;
#else
#error "ELEM_BYTES must be 2 or 4"
#endif

#include "unaligned_rows.cuh"

typedef unsigned long long address_t;

// dst[e][r][c] = src[e][r][c] for e < entries, r < rows, c < cols; the entries' and rows' strides
// in elements, the columns contiguous on both sides.
extern "C" __global__ void stage_rows(const elem_t* __restrict__ src, elem_t* __restrict__ dst,
                                      int entries, int rows, int cols, long long src_entry, long long src_row,
                                      long long dst_entry, long long dst_row) {
    const address_t bytes = (address_t)cols * ELEM_BYTES;
    const long long per_row = (long long)((bytes + 15) / 16) + 1, slots = rows * per_row;
    for (int e = blockIdx.z; e < entries; e += gridDim.z)
        for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < slots;
             t += (long long)gridDim.x * blockDim.x) {
            const long long r = t / per_row, j = t - r * per_row;
            const address_t s = (address_t)(src + e * src_entry + r * src_row);
            const address_t d = (address_t)(dst + e * dst_entry + r * dst_row);
            const address_t first = d & ~15ull, end = d + bytes;  // the destination words the row touches
            if (j >= (long long)((end - first + 15) / 16)) continue;  // a row whose bytes end in fewer words
            const int shift = (int)((s - d) & 15);  // a destination word's bytes start this far into an aligned source word
            const address_t w = first + 16 * j, from = s + (w - d);  // from: where w's bytes come from (wraps as w - d)
            const address_t lo = from & ~15ull, past = shift ? lo + 32 : lo + 16;
            if (w >= d && w + 16 <= end && lo >= s && past <= s + bytes) {
                const uint4 a = *reinterpret_cast<const uint4*>(lo);
                *reinterpret_cast<uint4*>(w) = shift ? byte_window(a, *reinterpret_cast<const uint4*>(lo + 16), shift) : a;
            } else {  // a word at the row's ends: its elements that are the row's, one by one
                const address_t b0 = w > d ? w : d, b1 = w + 16 < end ? w + 16 : end;
                for (address_t b = b0; b < b1; b += ELEM_BYTES)
                    *reinterpret_cast<elem_t*>(b) = *reinterpret_cast<const elem_t*>(s + (b - d));
            }
        }
}

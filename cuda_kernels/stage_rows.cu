// Staging for the TMA rungs: not a rung (study/ops/tma_staging.py, staged_launcher).
// TMA reads and writes rows whose starts are 16 bytes apart by a multiple and lie on 16 bytes
// (docs/toolchain.md 6.3). A matrix that breaks that (K or N no multiple of 8 halves or 4 floats,
// a padded leading dimension, an offset view) is copied inside the timed launch into rows that
// keep it, the tensor map sized to the true matrix so that TMA still reads the tails as zeros;
// C is written to such rows and copied out after (the gate poisons those rows with C). The copies
// are the fallback's cost and are timed with the rung.
// Grid: columns on x (32-bit index, coalesced), rows on y and entries on z, each striding by the
// grid where the matrix has more than 65535; the 64-bit row and entry offsets are computed once a
// row, not per element. Bottleneck: memory; one element a thread, since the source rows are only
// 2 or 4 bytes aligned, so no wider access is legal on that side.
// config: ELEM_BYTES=2
#if ELEM_BYTES == 2
typedef unsigned short elem_t;
#elif ELEM_BYTES == 4
typedef unsigned int elem_t;
#else
#error "ELEM_BYTES must be 2 or 4"
#endif

// dst[e][r][c] = src[e][r][c] for e < entries, r < rows, c < cols; the entries' and rows' strides
// in elements, the columns contiguous on both sides.
extern "C" __global__ void stage_rows(const elem_t* __restrict__ src, elem_t* __restrict__ dst,
                                      int entries, int rows, int cols, long long src_entry, long long src_row,
                                      long long dst_entry, long long dst_row) {
    for (int e = blockIdx.z; e < entries; e += gridDim.z)
        for (int r = blockIdx.y; r < rows; r += gridDim.y) {
            const elem_t* s = src + e * src_entry + r * src_row;
            elem_t* d = dst + e * dst_entry + r * dst_row;
            for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x) d[c] = s[c];
        }
}

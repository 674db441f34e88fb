// Staging for the TMA rungs: not a rung (study/ops/gemm_common.py, staged_launcher).
// TMA reads and writes rows whose starts are 16 bytes apart by a multiple and lie on 16 bytes
// (docs/toolchain.md 6.3). A matrix that breaks that (K or N no multiple of 8 halves or 4 floats,
// a padded leading dimension, an offset view) is copied inside the timed launch into rows that
// keep it, the tensor map sized to the true matrix so that TMA still reads the tails as zeros;
// C is written to such rows and copied out after. The copies are the fallback's cost and are
// timed with the rung.
// Bottleneck: memory. One element per thread and grid-stride: the rows are 2 or 4 bytes apart
// from 16, so no wider access is legal on the source side.
// config: ELEM_BYTES=2
#if ELEM_BYTES == 2
typedef unsigned short elem_t;
#elif ELEM_BYTES == 4
typedef unsigned int elem_t;
#else
#error "ELEM_BYTES must be 2 or 4"
#endif

// dst[e][r][c] = src[e][r][c] for entries e < entries, rows r < rows, columns c < cols; the entries'
// and rows' strides in elements, the columns contiguous on both sides.
extern "C" __global__ void stage_rows(const elem_t* __restrict__ src, elem_t* __restrict__ dst,
                                      long long entries, long long rows, long long cols,
                                      long long src_entry, long long src_row,
                                      long long dst_entry, long long dst_row) {
    const long long total = entries * rows * cols;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long c = i % cols, r = (i / cols) % rows, e = i / (cols * rows);
        dst[e * dst_entry + r * dst_row + c] = src[e * src_entry + r * src_row + c];
    }
}

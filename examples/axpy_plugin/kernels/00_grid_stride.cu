// axpy v0 — a grid-stride loop (docs/extending.md: the example plugin).
// Idea: out = ALPHA·x + y over N elements; each thread handles elements THREADS·gridDim apart,
// in FP32, rounding to the storage type once.
// Bottleneck: none to remove yet: a streaming kernel with three accesses per element, at the
// memory's bandwidth once enough blocks are in flight (its launch gives every SM BLOCKS_PER_SM).
// Builds on: nothing. Constraints: none (any N, any alignment).
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256 BLOCKS_PER_SM=4
// space: THREADS=128 BLOCKS_PER_SM=8
// space: THREADS=512 BLOCKS_PER_SM=2
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
axpy_v0_grid_stride(const storage_t* __restrict__ x, const storage_t* __restrict__ y,
                    storage_t* __restrict__ out, float alpha, long long n) {
    const long long stride = (long long)gridDim.x * THREADS;
    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += stride)
        out[i] = from_float(fmaf(alpha, to_float(x[i]), to_float(y[i])));
}

// gemm_bias_relu v0 — unfused: the best GEMM rung writes C, then this kernel reads C back, adds the
// bias and applies ReLU, and writes C again (docs/ladders/gemm_bias_relu.md, v0).
// Idea: what a framework does without fusion. The GEMM is another rung at its declared config —
// hgemm v8 (warp-specialised wgmma, TMA) for FP16/BF16, sgemm v7 (FFMA warp tiles) for FP32 — launched
// first in the same timed closure (study/ops/gemm_bias_relu.py); this file is the second kernel.
// What it costs: C crosses memory twice more (read + write, 2·M·N elements; from HBM, or partly from
// L2 where C fits in its 60 MiB) and one more launch; the GEMM cannot hide that traffic, since the
// pointwise pass starts only when the GEMM has finished.
// The pass is memory-bound: 16-byte vectors when every row of C starts on 16 bytes (ALIGNED), a
// grid-stride loop over a grid of BLOCKS_PER_SM blocks per SM.
// Constraints: none of its own (the GEMM's apply: TMA's K and N multiples of 8 for FP16/BF16).
// arch: sm_80
// precisions: fp32 fp16 bf16
// config: THREADS=256 BLOCKS_PER_SM=8
// space: THREADS=256 BLOCKS_PER_SM=8
// space: THREADS=256 BLOCKS_PER_SM=4
// space: THREADS=512 BLOCKS_PER_SM=4
// space: THREADS=128 BLOCKS_PER_SM=16
// space: THREADS=1024 BLOCKS_PER_SM=2
#include "common.cuh"
#include "gemm_bias_relu/epilogue.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_bias_relu_v0_unfused(storage_t* __restrict__ C, const storage_t* __restrict__ bias, int M, int N, int ldc) {
    const long long stride = (long long)gridDim.x * THREADS;
    const long long first = (long long)blockIdx.x * THREADS + threadIdx.x;
#if ALIGNED
    // N and ldc multiples of VEC, C and bias 16-byte aligned: whole vectors, never a row's tail.
    const int vectors = N / VEC;
    for (long long i = first; i < (long long)M * vectors; i += stride) {
        const int row = (int)(i / vectors), col = (int)(i % vectors) * VEC;
        uint4* c = reinterpret_cast<uint4*>(C + (size_t)row * ldc + col);
        uint4 v = *c;
        const uint4 b = __ldg(reinterpret_cast<const uint4*>(bias + col));
        storage_t* x = reinterpret_cast<storage_t*>(&v);
        const storage_t* y = reinterpret_cast<const storage_t*>(&b);
#pragma unroll
        for (int e = 0; e < VEC; ++e) x[e] = from_float(bias_relu(to_float(x[e]), to_float(y[e])));
        *c = v;
    }
#else
    for (long long i = first; i < (long long)M * N; i += stride) {
        const int row = (int)(i / N), col = (int)(i % N);
        storage_t* c = C + (size_t)row * ldc + col;
        *c = from_float(bias_relu(to_float(*c), to_float(__ldg(bias + col))));
    }
#endif
}

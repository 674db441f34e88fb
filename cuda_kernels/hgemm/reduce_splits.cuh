// The second kernel of split-K on the warp-specialised GEMM (hgemm v9; gemm_bias_relu v3) as a
// function of its epilogue, as warp_specialized.cuh is the first: C = epilogue(the sum of the
// `splits` planes of `partial`, each M × N with rows `ldp` floats apart, added in plane order), rounded
// once to the storage type. A grid-stride loop over C's elements, consecutive threads on consecutive
// columns (coalesced reads of each plane). Needs common.cuh and REDUCE_THREADS.
// A column epilogue maps (the FP32 sum, its column) to the value that is rounded: PlainSum for the
// bare GEMM, BiasReluColumn (gemm_bias_relu/epilogue.cuh) for the fused one.
#pragma once

// The bare GEMM's: the sum as it is.
struct PlainSum {
    __device__ __forceinline__ float operator()(float v, size_t) const { return v; }
};

template <class Epilogue>
__device__ __forceinline__ void reduce_splits(const float* __restrict__ partial, storage_t* __restrict__ C, int M,
                                              int N, int ldp, int ldc, int splits, Epilogue epilogue) {
    const size_t plane = (size_t)M * ldp, total = (size_t)M * N;
    for (size_t e = (size_t)blockIdx.x * REDUCE_THREADS + threadIdx.x; e < total;
         e += (size_t)gridDim.x * REDUCE_THREADS) {
        const size_t row = e / N, col = e % N, at = row * ldp + col;
        float sum = partial[at];
        for (int s = 1; s < splits; ++s) sum += partial[s * plane + at];
        C[row * ldc + col] = from_float(epilogue(sum, col));
    }
}

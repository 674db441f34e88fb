// The 3xTF32 split of sgemm v8 and v11 (docs/ladders/sgemm.md, v8): an FP32 x = hi + lo, both TF32,
// so that a·b ≈ alo·bhi + ahi·blo + ahi·bhi on the tensor cores (the dropped alo·blo is below 2^-22
// of |a·b|).
#pragma once

// x rounded to TF32 (to nearest, ties away from zero) with the 13 low mantissa bits zero, in
// integer arithmetic: adding half of the dropped range carries into the kept bits (and into the
// exponent when the mantissa overflows, which is the right rounding too). Not cvt.rna.tf32.f32:
// its result's low bits are not specified, and ptxas expands it into compares and selects.
// Finite inputs below 2^127 only (the op's inputs are in [-1, 1)): larger ones may round to inf.
__device__ __forceinline__ unsigned round_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }

// x = hi + lo, both TF32; x − hi is exact in FP32 (it keeps 13 bits of x's significand) unless it is
// below 2^-126: the kernels are built with -ftz=true (CuPy's NVRTC default), which flushes it to zero.
__device__ __forceinline__ void split(float x, unsigned& hi, unsigned& lo) {
    hi = round_tf32(x);
    lo = round_tf32(x - __uint_as_float(hi));
}

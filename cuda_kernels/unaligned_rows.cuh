// Reading rows that start off a 16-byte boundary with 16-byte loads: a row of 2-byte elements whose
// stride is no multiple of 8 (an odd vocabulary, K = 1463) starts 2, 4 … 14 bytes past an aligned
// word, which neither TMA nor a 16-byte load may take (docs/toolchain.md 6.3). The 16 bytes from any
// address are the window of the two aligned words they lie in, shifted by the misalignment: two legal
// 16-byte loads and four funnel shifts instead of eight 2-byte loads. Used by the staging copy
// (stage_rows.cu) and by hgemm v10's shifter warps, which move B's rows read in place by TMA from an
// aligned column (hgemm/skinny_m.cuh).
#pragma once

// One of four words by an index that may differ between a warp's lanes: selects, not a branch or a
// dynamically indexed array (which would go to local memory).
__device__ __forceinline__ unsigned pick_word(int q, unsigned a, unsigned b, unsigned c, unsigned d) {
    return q == 0 ? a : q == 1 ? b : q == 2 ? c : d;
}

// Bytes shift … shift + 15 of the 32 bytes lo, hi (little-endian); shift in [0, 16).
__device__ __forceinline__ uint4 byte_window(uint4 lo, uint4 hi, int shift) {
    const unsigned u[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const int q = shift / 4;
    const unsigned bits = (shift % 4) * 8;
    unsigned t[5];
#pragma unroll
    for (int j = 0; j < 5; ++j) t[j] = pick_word(q, u[j], u[j + 1], u[j + 2], u[j + 3]);
    return make_uint4(__funnelshift_r(t[0], t[1], bits), __funnelshift_r(t[1], t[2], bits),
                      __funnelshift_r(t[2], t[3], bits), __funnelshift_r(t[3], t[4], bits));
}

// The STAGES-deep cp.async pipeline over the K slices of a tile, shared by sgemm v6/v7/v9
// (sgemm/tile_warp.cuh), sgemm v8 and hgemm v6 (docs/ladders/sgemm.md, v7). One place holds the
// group accounting that every such kernel must get exactly right:
// - the prologue issues slices 0 … Stages-2 and commits one group per step, empty or not, and
//   every iteration commits one more, so "slice s has landed" is always "at most Stages-2 groups
//   still pending" (cp.async.wait_group Stages-2);
// - one barrier per slice: after it every thread's copies of slice s are visible AND every thread
//   has finished slice s-1, whose stage is the one refilled with slice s+Stages-1;
// - a last wait_group 0, so no copy outlives the block (the trailing groups are empty).
// load(stage, s) issues the copies of slice s into stage buffer `stage` (no wait), once per slice
// and in increasing s — the HOIST=1 loaders (slice_copies.cuh, sgemm/tile_warp.cuh) advance their
// pointers on that promise; compute(stage) consumes a landed stage. Both are inlined lambdas of the caller. Needs common.cuh.
#pragma once

template <int Stages, class Load, class Compute>
__device__ __forceinline__ void cp_async_pipeline(int slices, Load load, Compute compute) {
    static_assert(Stages >= 2, "at least two stages");
#pragma unroll
    for (int s = 0; s < Stages - 1; ++s) {
        if (s < slices) load(s, s);
        cp_async_commit();
    }
    for (int s = 0; s < slices; ++s) {
        cp_async_wait<Stages - 2>();
        __syncthreads();
        const int next = s + Stages - 1;
        if (next < slices) load(next % Stages, next);
        cp_async_commit();
        compute(s % Stages);
    }
    cp_async_wait<0>();
}

// The STAGES-deep cp.async pipeline over the K slices of a tile, shared by sgemm v6/v7/v9
// (sgemm/tile_warp.cuh), sgemm v8 and hgemm v6 (and v12, bgemm v2 on its tile) (docs/ladders/sgemm.md, v7).
// One place holds the group accounting that every such kernel must get exactly right:
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

// The pipeline with part of each refill held in registers across a slice's products (hgemm v6's DEFER=1,
// where an operand's rows are an odd number of halves apart and go through registers: common.cuh
// fetch_block_pairs). load(stage, s, held) issues slice s's cp.async copies and the loads of its held part into
// register set `held`; deposit(stage, held) stores that set into the stage. The prologue issues every prologue
// slice's loads (sets 0 … Stages-2, the index a constant of the unrolled step) before its first deposit, so their
// latencies overlap instead of following each other: one global round trip where there were Stages − 1 (of
// 166×419×98's four slices three are the prologue's; no faster there in hgemm v12 on the H200, c67: 10.3 µs
// against 9.9–10.2 without the held sets, hgemm/06_mma_sync.cu). In the loop a refill's loads (set 0) are issued
// before compute(s) and deposited after it, so their latency runs under the slice's products instead of before
// them. Safe: the refilled stage held slice s − 1, which every thread finished before this iteration's barrier,
// and slice s + Stages − 1 is read only after the barrier of its own iteration, which every thread reaches after
// its deposit. cp_async_pipeline below is this with nothing held.
template <int Stages, class Load, class Compute, class Deposit>
__device__ __forceinline__ void cp_async_pipeline_deferred(int slices, Load load, Compute compute, Deposit deposit) {
    static_assert(Stages >= 2, "at least two stages");
#pragma unroll
    for (int s = 0; s < Stages - 1; ++s) {
        if (s < slices) load(s, s, s);
        cp_async_commit();
    }
#pragma unroll
    for (int s = 0; s < Stages - 1; ++s)
        if (s < slices) deposit(s, s);
    for (int s = 0; s < slices; ++s) {
        cp_async_wait<Stages - 2>();
        __syncthreads();
        const int next = s + Stages - 1;
        if (next < slices) load(next % Stages, next, 0);
        cp_async_commit();
        compute(s % Stages);
        if (next < slices) deposit(next % Stages, 0);
    }
    cp_async_wait<0>();
}

template <int Stages, class Load, class Compute>
__device__ __forceinline__ void cp_async_pipeline(int slices, Load load, Compute compute) {
    cp_async_pipeline_deferred<Stages>(
        slices, [&](int stage, int s, int) { load(stage, s); }, compute, [](int, int) {});
}

// The same pipeline with each slice's first fragments loaded ahead (sgemm v7's PREFETCH=1,
// docs/ladders/sgemm.md, v7): ncu's stall samples of v7 (HOIST=1) put 59 % of its short-scoreboard
// stalls on the first FFMAs after the slice barrier, which wait for fragments that could only be
// read once the barrier was passed. Here a slice's k steps run as fetch(stage, kk + 1) then
// step(kk), two register buffers alternating, and the wait and barrier for slice s+1 come before
// slice s's last step: after them the refill is issued, slice s+1's first fragments are fetched,
// and slice s's last step (its fragments already in registers) runs while they arrive. The group
// accounting is the one above, moved earlier: after the barrier no thread reads slice s's stage
// again (its last fetch came before), so that stage takes slice s+Stages.
// fetch(stage, kk, buf) loads step kk of a landed stage into register buffer buf (0 or 1);
// step(buf) multiplies it. Steps (the k steps of a slice, BK) must be even.
// FetchFirst (PREFETCH=2): slice s+1's first fetch is issued before the refill instead of after
// it. Measured with PREFETCH=1 (docs/ladders/sgemm.md, v7): ptxas kept the program order, so the
// six LDS.128 of the fetch came after the refill's twelve copies and their address work, 41 FFMAs
// before the loop's end, and the last step's FFMAs waited on their scoreboard; fetched first, nvcc
// 13.0 issues them right after the barrier, ahead of about 70 refill instructions (nvdisasm).
template <int Stages, int Steps, bool FetchFirst, class Load, class Fetch, class Step>
__device__ __forceinline__ void cp_async_pipeline_ahead(int slices, Load load, Fetch fetch, Step step) {
    static_assert(Stages >= 2 && Steps % 2 == 0, "at least two stages; an even number of k steps");
#pragma unroll
    for (int s = 0; s < Stages - 1; ++s) {
        if (s < slices) load(s, s);
        cp_async_commit();
    }
    if (slices > 0) {
        cp_async_wait<Stages - 2>();
        __syncthreads();
        if (Stages - 1 < slices) load(Stages - 1, Stages - 1);
        cp_async_commit();
        fetch(0, 0, 0);
    }
    for (int s = 0; s < slices; ++s) {
        const int stage = s % Stages;
#pragma unroll
        for (int kk = 0; kk < Steps - 1; ++kk) {
            fetch(stage, kk + 1, (kk + 1) % 2);
            step(kk % 2);
        }
        if (s + 1 < slices) {
            cp_async_wait<Stages - 2>();
            __syncthreads();
            if (FetchFirst) fetch((s + 1) % Stages, 0, 0);
            const int next = s + Stages;
            if (next < slices) load(next % Stages, next);
            cp_async_commit();
            if (!FetchFirst) fetch((s + 1) % Stages, 0, 0);
        }
        step(1);  // the last step's buffer: Steps - 1 is odd
    }
    cp_async_wait<0>();
}

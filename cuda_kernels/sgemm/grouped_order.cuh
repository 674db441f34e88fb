// The block order of sgemm v7, v8 and v9 and hgemm v6–v8 (docs/ladders/sgemm.md, v7): Group block
// rows at a time down each block column, so that the blocks resident together read the same A rows and B
// columns from L2 instead of sweeping all of B once per block row. Group = 1 is launch order.
// The mapping depends on blockIdx.x/y only (the same tile in every grid.z slice of split-K) and
// is a bijection of the grid (the last group may hold fewer rows).
#pragma once

// Tile `id` of a rows × cols grid of tiles in the grouped order: the persistent kernels (hgemm v8)
// walk tile ids themselves; the others take theirs from the launch below.
template <int Group>
__device__ __forceinline__ void grouped_tile_coords(int id, int rows, int cols, int& bm, int& bn) {
    if (Group == 1) {
        bm = id / cols;
        bn = id % cols;
        return;
    }
    const int per_group = Group * cols, first = id / per_group * Group;
    const int height = min(rows - first, Group);
    bm = first + id % per_group % height;
    bn = id % per_group / height;
}

template <int Group>
__device__ __forceinline__ void grouped_block_coords(int& bm, int& bn) {
    // blocks start roughly in launch order, x fastest
    grouped_tile_coords<Group>(blockIdx.y * gridDim.x + blockIdx.x, gridDim.y, gridDim.x, bm, bn);
}

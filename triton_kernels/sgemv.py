"""Triton twins of the GEMV ladder (y = A·x, A row-major M×N; FP32, FP16 or BF16 storage,
FP32 accumulation).

Each twin says its CUDA rung's idea in Triton's terms: a program is a CUDA block
(``num_warps`` = THREADS / 32) and covers the same rows (``ROWS``); the columns a program
loads at once (``BLOCK_N``) are what one warp-wide load covers in the CUDA rung: 1 element
per lane in v0 (one row per lane), 32 in v1 (one element per lane), 32·VEC in v2 (16 bytes
per lane: VEC = 16 / element size, passed by the launch) and 32·VEC·UNROLL in v3. Triton
picks the register layout itself; whether its loads are 128 bits wide is its choice too (it
vectorises when it can prove 16-byte alignment, as it does for contiguous rows whose length
is a multiple of 16 bytes).

v3 splits the columns over a second grid axis exactly as its CUDA rung does (the same split
count, chosen by the launch) and reduces the FP32 partial sums in slice order in the last
program of each row group, found with an atomic counter (acquire-release), so the result does
not depend on which program finishes last.

This module holds kernels and plain config dicts only; study/ops/sgemv.py pairs them with
their CUDA rungs.
"""

import triton
import triton.language as tl


@triton.jit
def sgemv_rows(a_ptr, x_ptr, y_ptr, M, N, stride_am, BM: tl.constexpr):
    """v0: one row per lane, columns one at a time: each step the lanes of a warp read
    elements a row apart (uncoalesced), as in the CUDA rung."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    mask = rows < M
    acc = tl.zeros((BM,), dtype=tl.float32)
    for j in range(0, N):
        a = tl.load(a_ptr + rows * stride_am + j, mask=mask, other=0.0).to(tl.float32)
        acc += a * tl.load(x_ptr + j).to(tl.float32)
    tl.store(y_ptr + rows, acc.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _row_sums(a_ptr, x_ptr, rows, row_ok, c0, c1, stride_am, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    """FP32 sums over the columns [c0, c1) of the given rows, BLOCK_N columns per step."""
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    for n0 in range(c0, c1, BLOCK_N):
        c = n0 + cols
        x = tl.load(x_ptr + c, mask=c < c1, other=0.0).to(tl.float32)
        a = tl.load(a_ptr + rows[:, None] * stride_am + c[None, :], mask=row_ok[:, None] & (c[None, :] < c1),
                    other=0.0).to(tl.float32)
        acc += a * x[None, :]
    return tl.sum(acc, axis=1)


@triton.jit
def sgemv_warp(a_ptr, x_ptr, y_ptr, M, N, stride_am, ROWS: tl.constexpr):
    """v1: ROWS rows per program, 32 consecutive columns per step (one element per lane)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    total = _row_sums(a_ptr, x_ptr, rows, rows < M, 0, N, stride_am, ROWS, 32)
    tl.store(y_ptr + rows, total.to(y_ptr.dtype.element_ty), mask=rows < M)


@triton.jit
def sgemv_vector(a_ptr, x_ptr, y_ptr, M, N, stride_am, ROWS: tl.constexpr, VEC: tl.constexpr):
    """v2: ROWS rows per program, 32·VEC consecutive columns per step (16 bytes per lane)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    total = _row_sums(a_ptr, x_ptr, rows, rows < M, 0, N, stride_am, ROWS, 32 * VEC)
    tl.store(y_ptr + rows, total.to(y_ptr.dtype.element_ty), mask=rows < M)


@triton.jit
def sgemv_split_n(a_ptr, x_ptr, y_ptr, M, N, stride_am, split_n, part_ptr, count_ptr,
                  ROWS: tl.constexpr, UNROLL: tl.constexpr, VEC: tl.constexpr, SPLITS: tl.constexpr,
                  GROUPS: tl.constexpr = 16):
    """v3: the columns [pid_s·split_n, (pid_s+1)·split_n) of ROWS rows, 32·VEC·UNROLL per step;
    with SPLITS > 1, FP32 partials and an ordered reduction by the last program of the row group."""
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    rows = pid_m * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    c0 = pid_s * split_n
    total = _row_sums(a_ptr, x_ptr, rows, row_ok, c0, tl.minimum(N, c0 + split_n), stride_am, ROWS,
                      32 * VEC * UNROLL)
    if SPLITS == 1:
        tl.store(y_ptr + rows, total.to(y_ptr.dtype.element_ty), mask=row_ok)
    else:
        tl.store(part_ptr + pid_s * M + rows, total, mask=row_ok)
        tl.debug_barrier()  # every lane's partial is written before the release below
        seen = tl.atomic_add(count_ptr + pid_m, 1, sem="acq_rel", scope="gpu")
        if seen == SPLITS - 1:
            # GROUPS slices at a time, as the CUDA rung's whole block reduces: a fixed order whoever
            # is last, and thousands of slices at one row are not added one by one.
            groups = tl.arange(0, GROUPS)
            out = tl.zeros((GROUPS, ROWS), dtype=tl.float32)
            for q in range(0, SPLITS, GROUPS):
                ok = ((q + groups) < SPLITS)[:, None] & row_ok[None, :]
                out += tl.load(part_ptr + (q + groups)[:, None] * M + rows[None, :], mask=ok, other=0.0,
                               volatile=True)
            tl.store(y_ptr + rows, tl.sum(out, axis=0).to(y_ptr.dtype.element_ty), mask=row_ok)
            tl.store(count_ptr + pid_m, 0)  # ready for the next launch


@triton.jit
def sgemv_row_tiles(a_ptr, x_ptr, y_ptr, M, N, stride_am, TILE: tl.constexpr, BLOCK_N: tl.constexpr):
    """v4: a program per tile of whole rows, TILE elements of A: BLOCK_N (the row's length rounded up to
    a power of two, at most MAX_BLOCK_N; the launch passes it) columns of TILE // BLOCK_N rows at once.
    What the CUDA rung states, Triton decides: whether the tile goes through shared memory, and how
    wide each load is (rows that are no multiple of 16 bytes get narrow masked loads here, where the
    CUDA rung reads the tile's contiguous run with 16-byte loads whatever N is)."""
    ROWS: tl.constexpr = TILE // BLOCK_N
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    total = _row_sums(a_ptr, x_ptr, rows, rows < M, 0, N, stride_am, ROWS, BLOCK_N)
    tl.store(y_ptr + rows, total.to(y_ptr.dtype.element_ty), mask=rows < M)


# CUDA v0: 256 threads, one row each.
V0_THREAD_PER_ROW = dict(BM=256, num_warps=8, num_stages=1)
ROWS_SPACE = [dict(BM=bm, num_warps=bm // 32, num_stages=1) for bm in (64, 128, 256, 512)]
# CUDA v1: 256 threads = 8 warps, one row per warp.
V1_WARP_PER_ROW = dict(ROWS=8, num_warps=8, num_stages=1)
WARP_SPACE = [dict(ROWS=w, num_warps=w, num_stages=1) for w in (4, 8, 16, 32)]
# CUDA v2: 256 threads, WARP_ROWS=2: 16 rows per program; the launch passes VEC.
V2_VECTOR_LOADS = dict(ROWS=16, num_warps=8, num_stages=1)
VECTOR_SPACE = [dict(ROWS=w * r, num_warps=w, num_stages=s)
                for w, r in ((8, 1), (8, 2), (8, 4), (4, 2), (16, 2), (4, 4)) for s in (1, 2)]
# CUDA v3: 256 threads, WARP_ROWS=2, UNROLL=2; the launch passes VEC and SPLITS.
V3_SPLIT_N = dict(ROWS=16, UNROLL=2, num_warps=8, num_stages=1)
# The CUDA rung's points; one stage: its loads in flight come from UNROLL, as in CUDA.
SPLIT_SPACE = [dict(ROWS=w * r, UNROLL=u, num_warps=w, num_stages=1)
               for w, r, u in ((8, 2, 2), (8, 1, 4), (8, 2, 4), (8, 4, 1), (8, 4, 2), (4, 2, 2), (16, 1, 2), (16, 2, 2),
                               (4, 1, 4), (16, 1, 4))]
# CUDA v4: 256 threads × 8 vectors of 16 bytes (8192 FP32 elements, 16384 halves); Triton's tile is counted
# in elements whatever the dtype, so the FP32 size stands for both. The launch passes BLOCK_N. The space: the
# CUDA rung's (THREADS, TILE_VECS) points (its LANES are Triton's layout to choose).
MAX_BLOCK_N = 1024  # at most the smallest TILE below: every tile holds a row's first BLOCK_N columns
V4_ROW_TILES = dict(TILE=8192, num_warps=8, num_stages=1)
TILE_SPACE = [dict(TILE=t, num_warps=w, num_stages=1) for t, w in ((8192, 8), (4096, 8), (8192, 16), (8192, 4))]

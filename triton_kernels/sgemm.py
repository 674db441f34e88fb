"""Triton twins of the SGEMM ladder (FP32, C = A·B).

Each twin expresses its CUDA rung's idea in Triton's terms: the same block tile
(BM×BN, and BK where the rung tiles K), the same thread count (``num_warps`` =
threads / 32), the same layout of B, the same pipeline depth (``num_stages``: 1 =
no overlap, 2 = load tile k+1 while computing tile k).

What Triton does not let us say: how outputs map to threads. ``tl.dot`` always
stages operands through shared memory and register-tiles the product, so the
twins of v2 (shared-memory tiling) and v3 (register micro-tile) differ only in
block tile and warps; the report shows what that costs or gains. Every dot takes
its ``input_precision`` from the precision being measured (``ieee`` for FP32):
Triton's default for FP32 is TF32 (docs/toolchain.md 4.2), which would not be the
same problem.

Index arithmetic is 32-bit: the ops refuse matrices (batches) of 2**31 or more elements.
Program axis 2 walks the batch of a strided-batched GEMM (study/ops/bgemm.py); SGEMM launches
one entry with batch strides 0. This module holds kernels and plain config dicts only;
study/ops/sgemm.py and study/ops/bgemm.py pair them with their CUDA rungs.
"""

import triton
import triton.language as tl

from triton_kernels.gemm_tile import accumulate, grouped_program, grouped_tile, sum_ranges_by_last, tile
from triton_kernels.hgemm import split_plan


@triton.jit
def sgemm_naive(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_ab, stride_bb, stride_cb,
    BM: tl.constexpr, BN: tl.constexpr,
):
    """v0/v1: every output accumulates K rank-1 products read straight from global
    memory; no K-tiling, no shared memory. B's strides carry the layout: column-major B
    (stride_bk = 1) makes the BN lanes of one load K elements apart (uncoalesced).
    Program axis 2 is the batch entry (strided-batched GEMM; one entry and strides 0 for SGEMM)."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_b = tl.program_id(2)
    a_ptr += pid_b * stride_ab
    b_ptr += pid_b * stride_bb
    c_ptr += pid_b * stride_cb
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask_m = rm < M
    mask_n = rn < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K):
        a = tl.load(a_ptr + rm * stride_am + k * stride_ak, mask=mask_m, other=0.0)
        b = tl.load(b_ptr + k * stride_bk + rn * stride_bn, mask=mask_n, other=0.0)
        acc += a[:, None] * b[None, :]
    c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c, acc, mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def sgemm_tiled(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_ab, stride_bb, stride_cb,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INPUT_PRECISION: tl.constexpr,
):
    """v2–v4: BM×BK and BK×BN tiles staged through shared memory by ``tl.dot``; the
    pipeline depth comes from the launch's ``num_stages``. Program axis 2 is the batch entry."""
    pid_b = tl.program_id(2)
    tile(a_ptr + pid_b * stride_ab, b_ptr + pid_b * stride_bb, c_ptr + pid_b * stride_cb, M, N, K,
         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, tl.program_id(1), tl.program_id(0),
         BM, BN, BK, INPUT_PRECISION)


@triton.jit
def range_accumulate(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """The split twins' product over this program's K range (program axis 2: range ``pid_s`` of
    ``splits``, cdiv(K, ranges) rounded up to BK each, as the CUDA rungs' launch plans them) for
    its tile of C (axes 0 and 1: block column and row), in FP32; with the tile's rows and columns,
    which of them lie inside C, and (pid_s, splits)."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_s = tl.program_id(2)
    splits = tl.num_programs(2)
    split_k = tl.cdiv(tl.cdiv(K, splits), BK) * BK
    k_lo = pid_s * split_k
    k_hi = k_lo + tl.minimum(split_k, K - k_lo)  # not k_lo + split_k: it passes 2^31 when K nears it
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + (k_lo + rk)[None, :] * stride_ak
    b = b_ptr + (k_lo + rk)[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BK):
        a_tile = tl.load(a, mask=(rm[:, None] < M) & (k0 + rk[None, :] < k_hi), other=0.0)
        b_tile = tl.load(b, mask=(k0 + rk[:, None] < k_hi) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a_tile, b_tile, acc, input_precision=INPUT_PRECISION)
        a += BK * stride_ak
        b += BK * stride_bk
    return acc, rm, rn, (rm[:, None] < M) & (rn[None, :] < N), pid_s, splits


@triton.jit
def sgemm_split_k(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    part_ptr, count_ptr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INPUT_PRECISION: tl.constexpr,
):
    """v5: v4's tile over one of the ranges K is cut into along program axis 2 (cdiv(K, ranges)
    rounded up to BK each, as the CUDA rung's launch plans them); with several ranges, FP32
    partial tiles and an ordered reduction by the last program of the tile."""
    acc, rm, rn, inside, pid_s, splits = range_accumulate(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                                                          stride_bn, BM, BN, BK, INPUT_PRECISION)
    if splits == 1:
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=inside)
    else:
        tile = tl.program_id(1) * tl.num_programs(0) + tl.program_id(0)
        sum_ranges_by_last(acc, part_ptr, count_ptr, c_ptr, rm, rn, stride_cm, stride_cn, inside, tile, pid_s, splits,
                           M, N)


@triton.jit
def sgemm_grouped(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_ab, stride_bb, stride_cb,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, INPUT_PRECISION: tl.constexpr,
):
    """v7: a deeper pipeline (``num_stages`` 3–4) and the grouped program order. One product:
    the batch strides are accepted and unused (the grid's axis 2 is 1)."""
    pid_m, pid_n = grouped_program(M, BM, GROUP)
    tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
         pid_m, pid_n, BM, BN, BK, INPUT_PRECISION)


@triton.jit
def sgemm_split_k_partials(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    part_ptr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INPUT_PRECISION: tl.constexpr,
):
    """v10's first pass: v5's tile over one K range (the same plan from the grid), its FP32 partial
    tile written to plane ``pid_s`` of the workspace; with one range, C itself. The sum is
    ``reduce_ranges``, a second launch."""
    acc, rm, rn, inside, pid_s, splits = range_accumulate(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                                                          stride_bn, BM, BN, BK, INPUT_PRECISION)
    if splits == 1:
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=inside)
    else:
        tl.store(part_ptr + pid_s * M * N + rm[:, None] * N + rn[None, :], acc, mask=inside)


@triton.jit
def reduce_ranges(part_ptr, c_ptr, M, N, stride_cm, splits, COLS: tl.constexpr, GROUPS: tl.constexpr):
    """v10's second pass: COLS consecutive elements of C a program, the ``splits`` planes read GROUPS
    at a time (group g holds ranges g, g + GROUPS, …, added in increasing order, as in the CUDA
    rung); the GROUPS sums are then added by ``tl.sum``, whose order is Triton's (fixed for a
    config, not the CUDA rung's sequential one)."""
    e = tl.program_id(0) * COLS + tl.arange(0, COLS)
    plane = M * N
    inside = e < plane
    g = tl.arange(0, GROUPS)
    sums = tl.zeros((GROUPS, COLS), dtype=tl.float32)
    for s0 in range(0, splits, GROUPS):
        s = s0 + g
        sums += tl.load(part_ptr + s[:, None].to(tl.int64) * plane + e[None, :],
                        mask=(s[:, None] < splits) & inside[None, :], other=0.0)
    total = tl.sum(sums, axis=0)
    tl.store(c_ptr + (e // N) * stride_cm + e % N, total, mask=inside)


@triton.jit
def sgemm_3xtf32(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_ab, stride_bb, stride_cb,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):
    """v8: v7's tile with ``tl.dot(..., input_precision="tf32x3")``: Triton splits each FP32
    operand into TF32 high and low parts and adds three tensor-core products, the CUDA rung's
    emulation. Measured under the FP32 precision and gate; it takes no INPUT_PRECISION, so the
    launch cannot turn it back into IEEE FFMA."""
    pid_m, pid_n = grouped_program(M, BM, GROUP)
    tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
         pid_m, pid_n, BM, BN, BK, "tf32x3")


@triton.jit
def sgemm_3xtf32_transposed(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_ab, stride_bb, stride_cb,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):
    """v11: Cᵀ = Bᵀ·Aᵀ, as the CUDA rung computes it: ``tl.dot(Bᵀ tile, Aᵀ tile)`` in tf32x3, so that the
    dot's second operand is A's tile, whose K-contiguous rows are the K-major layout a TF32 ``wgmma``
    reads from shared memory, and B's N-contiguous tile is the first operand, which Triton may keep
    in registers. The BN × BM accumulator is stored transposed. Measured under the FP32 gate, as v8's
    twin."""
    pid_m, pid_n = grouped_program(M, BM, GROUP)
    acc = accumulate(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                     BM, BN, BK, "tf32x3", TRANSPOSED=True)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    c = c_ptr + rn[:, None] * stride_cn + rm[None, :] * stride_cm
    tl.store(c, acc, mask=(rn[:, None] < N) & (rm[None, :] < M))



@triton.jit
def sgemm_3xtf32_split_k(
    a_ptr, b_ptr, c_ptr, part_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, ldp, NUM_SMS,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, MIN_SLICES: tl.constexpr,
    FIT: tl.constexpr,
):
    """v12: v11's twin (Cᵀ = Bᵀ·Aᵀ in tf32x3) over hgemm v9's split-K units: the CUDA rung's plan
    (triton_kernels/hgemm.py's ``split_plan``), unit u the K slices [(u % splits)·per, +per) of tile
    u // splits in the grouped order, NUM_SMS programs walking the units; one split: C, as v11's twin;
    more: the FP32 accumulator into plane u % splits of the workspace (rows ``ldp`` apart), summed in
    plane order by hgemm's ``reduce_splits``, a second launch. FIT is the launch's (BM fitted to the
    shape before the launch, as the CUDA rung's); the kernel does not read it. What the twin cannot say:
    v11's producer warpgroup and its split of A once per stage (Triton's tf32x3 dot splits both
    operands in each warp), and a BM picked per shape under ``triton.autotune``, whose configs are
    fixed before the shape is known: there the FIT point runs at its declared BM and the space's
    smaller heights are found by timing."""
    splits, per = split_plan(M, N, K, NUM_SMS, BM, BN, BK, MIN_SLICES)
    rows = tl.cdiv(M, BM)
    cols = tl.cdiv(N, BN)
    for u in tl.range(tl.program_id(0), rows * cols * splits, NUM_SMS):
        pid_m, pid_n = grouped_tile(u // splits, rows, cols, GROUP)
        k_lo = (u % splits) * per * BK
        k_hi = tl.minimum(K, k_lo + per * BK)
        # v11's twin's product over the K range [k_lo, k_hi): the operands from k_lo on, K the range's length
        acc = accumulate(a_ptr + k_lo * stride_ak, b_ptr + k_lo * stride_bk, M, N, k_hi - k_lo, stride_am, stride_ak,
                         stride_bk, stride_bn, pid_m, pid_n, BM, BN, BK, "tf32x3", TRANSPOSED=True)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        inside = (rn[:, None] < N) & (rm[None, :] < M)
        if splits == 1:
            tl.store(c_ptr + rn[:, None] * stride_cn + rm[None, :] * stride_cm, acc, mask=inside)
        else:
            plane = part_ptr + (u % splits).to(tl.int64) * M * ldp
            tl.store(plane + rm[None, :].to(tl.int64) * ldp + rn[:, None], acc, mask=inside)


@triton.jit
def sgemm_skinny_m(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    part_ptr, count_ptr,
    ROWS: tl.constexpr, COLS: tl.constexpr, BK: tl.constexpr, A_FLOATS: tl.constexpr, BLOCKS_PER_SM: tl.constexpr,
):
    """v13: ROWS rows of A (fitted to M by the launch, as the CUDA rung's) times COLS columns of B over one
    range of K (program axis 1: the CUDA rung's plan, split_k recomputed from the grid), BK rows of B a step,
    each row an outer product added to the ROWS × COLS sums (FFMA-class FP32 arithmetic, no tl.dot: a dot
    needs 16 rows of A and would round through TF32 by default); several ranges: FP32 planes and the
    ordered sum by the column block's last program (``sum_ranges_by_last``, v5's twin's). A_FLOATS and
    BLOCKS_PER_SM are the plan's (the launch's); the kernel does not read them. What the twin cannot say:
    A's slice staged once in shared memory and read four k at a time by a broadcast, and the sum over the
    warps in warp order.
    (A step written as one ROWS × BK × COLS product summed over its middle axis came out wrong on the H200
    at BK of 2 and 4 under Triton 3.6, right in its interpreter: c52 at d3d4db5.)"""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    pid_m = tl.program_id(2)
    splits = tl.num_programs(1)
    split_k = tl.cdiv(tl.cdiv(K, splits), 4) * 4
    k_lo = pid_s * split_k
    k_hi = tl.minimum(K, k_lo + split_k)
    rm = pid_m * ROWS + tl.arange(0, ROWS)
    rn = pid_n * COLS + tl.arange(0, COLS)
    acc = tl.zeros((ROWS, COLS), dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BK):
        for kk in tl.static_range(BK):
            k = k0 + kk  # k < k_hi as a vector term of each mask (the interpreter refuses a scalar one)
            a = tl.load(a_ptr + rm * stride_am + k * stride_ak, mask=(rm < M) & (rm * 0 + k < k_hi), other=0.0)
            b = tl.load(b_ptr + k * stride_bk + rn * stride_bn, mask=(rn < N) & (rn * 0 + k < k_hi), other=0.0)
            acc += a[:, None] * b[None, :]
    inside = (rm[:, None] < M) & (rn[None, :] < N)
    if splits == 1:
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=inside)
    else:
        block = pid_m * tl.num_programs(0) + pid_n
        sum_ranges_by_last(acc, part_ptr, count_ptr, c_ptr, rm, rn, stride_cm, stride_cn, inside, block, pid_s,
                           splits, M, N)


def _naive_space():
    return [dict(BM=bm, BN=bn, num_warps=w, num_stages=1)
            for bm, bn, w in ((8, 32, 8), (16, 16, 8), (16, 32, 4), (32, 32, 8), (16, 64, 8), (32, 64, 8))]


def _tiled_space(stages):
    # BK >= 16: Triton 3.6 refuses an FP32 tl.dot with K < 16 (3.9 accepts 8).
    points = ((64, 64, 16, 8), (128, 128, 16, 8), (128, 64, 16, 4),
              (64, 128, 16, 4), (128, 128, 32, 8), (64, 64, 32, 4), (128, 256, 16, 8))
    return [dict(BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=s)
            for bm, bn, bk, w in points for s in stages]


NAIVE_SPACE = _naive_space()
# CUDA v0/v1: 8×32 outputs per block of 256 threads (one output each).
V0_NAIVE_COLMAJOR_B = dict(BM=8, BN=32, num_warps=8, num_stages=1)
V1_NAIVE = dict(BM=8, BN=32, num_warps=8, num_stages=1)
# CUDA v2: 64×64×16 tile, 256 threads, single shared buffer.
V2_SMEM_TILING = dict(BM=64, BN=64, BK=16, num_warps=8, num_stages=1)
# CUDA v3: 128×128×16 tile, 256 threads (8×8 outputs each), single shared buffer.
V3_REGISTER_TILE = dict(BM=128, BN=128, BK=16, num_warps=8, num_stages=1)
SINGLE_BUFFER_SPACE = _tiled_space((1,))
# CUDA v4: as v3, two shared buffers (load tile k+1 while computing tile k).
V4_DOUBLE_BUFFER = dict(BM=128, BN=128, BK=16, num_warps=8, num_stages=2)
DOUBLE_BUFFER_SPACE = _tiled_space((2,))
# CUDA v5: v4's tile and pipeline; the launch plans the K ranges (study/ops/sgemm.py, split_k_plan).
V5_SPLIT_K = V4_DOUBLE_BUFFER
# CUDA v6: 128×128×16, 256 threads, two stages. Triton maps outputs to warps itself (its layouts
# are warp tiles already), so v6's twin is v4's kernel at v6's tile: what Triton gives for free.
V6_WARP_TILE = dict(BM=128, BN=128, BK=16, num_warps=8, num_stages=2)
# CUDA v7: v6 with three stages and eight block rows per group. In the first 14 points the twin tuned
# to their corner, 64×64×32 on 4 warps (32 outputs a thread), at 4096³ and 8192³ (0.86–0.89× cuBLAS);
# the space adds more outputs a thread at fewer warps (128×128 on 4 warps is CUDA's 8×16 a thread)
# and a 64-deep K slice — after which it picks 64×128×32 on 4 warps, at the same speed.
V7_MULTISTAGE = dict(BM=128, BN=128, BK=16, GROUP=8, num_warps=8, num_stages=3)
MULTISTAGE_SPACE = [dict(p, GROUP=8) for p in _tiled_space((3, 4))] + [
    dict(BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=w, num_stages=s)
    for bm, bn, bk, w in ((128, 128, 16, 4), (128, 128, 32, 4), (128, 64, 32, 4), (64, 128, 32, 4), (64, 64, 32, 2),
                          (64, 64, 64, 4))
    for s in (3, 4)]
# CUDA v9: v5's split on v7's tile, 64×128×16 with 4 warps and 4 stages by default. The twin is v5's
# kernel (sgemm_split_k) at v9's tiles and stages: it keeps the launch order (no GROUP).
V9_SPLIT_K_MULTISTAGE = dict(BM=64, BN=128, BK=16, num_warps=4, num_stages=4)
SPLIT_MULTISTAGE_SPACE = _tiled_space((3, 4)) + [dict(BM=64, BN=64, BK=16, num_warps=4, num_stages=4)]
# CUDA v10: v9's split on a 64×64×16 tile (4 warps, 4 stages), the reduction 256 threads in 8 range
# groups (32 elements of C a block). The twin is v5's split at v10's tile (no GROUP, as v9's twin), then
# reduce_ranges with the same groups.
V10_SPLIT_K_TWO_PASS = dict(BM=64, BN=64, BK=16, num_warps=4, num_stages=4)
TWO_PASS_SPACE = _tiled_space((3, 4)) + [dict(BM=64, BN=64, BK=16, num_warps=4, num_stages=4)]
REDUCE_COLS, REDUCE_GROUPS = 32, 8
# CUDA v8: 128×128×32, 256 threads, three stages, groups of eight block rows.
V8_3XTF32 = dict(BM=128, BN=128, BK=32, GROUP=8, num_warps=8, num_stages=3)
TENSOR_SPACE = [dict(BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=w, num_stages=s)
                for bm, bn, bk, w in ((128, 128, 32, 8), (128, 128, 32, 4), (128, 256, 32, 8), (256, 128, 32, 8),
                                      (128, 128, 16, 4), (64, 128, 32, 4))
                for s in (3, 4)]
# CUDA v11: 128×128×32 (BM × BN), a producer and two consumer warpgroups, four stages. The twin is
# v8's tile with the product transposed (sgemm_3xtf32_transposed), over v8's space.
V11_3XTF32_WGMMA = dict(BM=128, BN=128, BK=32, GROUP=8, num_warps=8, num_stages=4)
# CUDA v12: v11's tile and pipeline over split-K units, BM fitted to the shape (FIT=1; the launch fits it with
# the CUDA rung's rule over this space's heights), MIN_SLICES the plan's shortest range. The space: every
# height at MIN_SLICES 2–8, four warps below 128 rows (a BN × BM accumulator of 16–64 rows).
V12_3XTF32_SPLIT_K = dict(BM=128, BN=128, BK=32, GROUP=8, MIN_SLICES=4, FIT=1, num_warps=8, num_stages=4)
SPLIT_TENSOR_SPACE = [V12_3XTF32_SPLIT_K] + [
    dict(BM=bm, BN=128, BK=32, GROUP=8, MIN_SLICES=ms, FIT=0, num_warps=8 if bm == 128 else 4, num_stages=4)
    for bm, ms in ((128, 4), (128, 8), (64, 4), (64, 2), (32, 4), (32, 2), (16, 4), (16, 2), (16, 8))]
# CUDA v13: 128 columns a block of 256 threads, K ranges planned for four blocks a SM, every load of a step
# before its products (one stage). The twin's step is BK rows of B, unrolled.
V13_SKINNY_M = dict(COLS=128, BK=8, A_FLOATS=8192, BLOCKS_PER_SM=4, num_warps=8, num_stages=1)
SKINNY_SPACE = [V13_SKINNY_M] + [
    dict(COLS=cols, BK=bk, A_FLOATS=8192, BLOCKS_PER_SM=bps, num_warps=w, num_stages=s)
    for cols, bk, bps, w, s in ((128, 8, 8, 8, 1), (128, 8, 4, 8, 2), (128, 16, 4, 8, 1), (256, 8, 4, 8, 1),
                                (128, 4, 4, 4, 3), (64, 8, 8, 4, 2), (128, 8, 2, 8, 1), (128, 8, 1, 8, 1))]

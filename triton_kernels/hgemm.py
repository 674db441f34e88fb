"""Triton twins of the HGEMM ladder (FP16/BF16 storage, FP32 accumulation, C = A·B).

Each twin expresses its CUDA rung's idea in Triton's terms: the same block tile (BM×BN, and BK
where the rung tiles K), the same thread count (``num_warps`` = threads / 32) and the same
pipeline depth (``num_stages``: 1 = no overlap for v0–v4, 2 = load slice k+1 while computing
slice k for v5).

What Triton does not let a twin say is how outputs and shared-memory addresses map to threads,
so several CUDA rungs share one kernel and differ only by tile and warps:

- v0 and v1 are one kernel, ``hgemm_naive`` (every output accumulates K products of elements
  read straight from global memory, in FP32): whether a warp's lanes run along M (v0) or N (v1)
  is Triton's layout choice, not ours; the twins differ by block shape (32×8 against 8×32).
- v2–v5 are one kernel, ``hgemm_tiled``: ``tl.dot`` always stages its operands through shared
  memory and register-tiles the product, so the twins of v2 (shared-memory tiling) and v3
  (register tile) differ only in block tile and warps. The twin of v4 (bank conflicts removed by
  padding or an XOR swizzle) is v3's twin unchanged: Triton lays shared memory out with its own
  swizzle whatever we ask, so there is no conflict to remove and no knob to mirror SWIZZLE with.
  v5 adds ``num_stages=2``.
- ``tl.dot`` on FP16/BF16 operands runs on the tensor cores (``mma``/``wgmma``) with an FP32
  accumulator (the default ``out_dtype``), whereas the CUDA rungs v0–v5 multiply on the FFMA pipe:
  from v2 on, the gap between a CUDA rung and its twin is mostly the tensor cores, not the tiling.

Outputs are accumulated in FP32 and rounded to the storage type once, at the store. Index
arithmetic is 32-bit: the op refuses matrices of 2**31 or more elements. This module holds
kernels and plain config dicts only; study/ops/hgemm.py pairs them with the CUDA rungs.
"""

import triton
import triton.language as tl

from triton_kernels.gemm_tile import accumulate, grouped_program, grouped_tile, store, sum_ranges_by_last, tile


@triton.jit
def hgemm_naive(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr,
):
    """v0/v1: BM×BN outputs per program, each the sum of K products of halves converted to FP32,
    read straight from global memory (no K tiling, no shared memory, no tensor cores)."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask_m = rm < M
    mask_n = rn < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K):
        a = tl.load(a_ptr + rm * stride_am + k * stride_ak, mask=mask_m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + k * stride_bk + rn * stride_bn, mask=mask_n, other=0.0).to(tl.float32)
        acc += a[:, None] * b[None, :]
    c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def hgemm_tiled(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):
    """v2–v5: BM×BK and BK×BN tiles of halves through ``tl.dot`` into an FP32 accumulator; the
    pipeline depth is the launch's ``num_stages``. Out-of-range elements load as zeros."""
    tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
         tl.program_id(1), tl.program_id(0), BM, BN, BK, None)  # half operands: no input_precision


@triton.jit
def hgemm_grouped(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, FIT: tl.constexpr,
):
    """v6: ``tl.dot`` on the tensor cores (as every tiled twin), with the CUDA rung's pipeline depth
    (``num_stages`` 3–4) and its grouped order: programs taken GROUP block rows at a time down each
    block column (cuda_kernels/sgemm/grouped_order.cuh), so that those running together share A
    rows and B columns in L2. FIT is the launch's, not read here: at FIT=1 the launch has halved or quartered BM
    and BN to the shape already (study/ops/hgemm.py pointer_twin_launch); under ``triton.autotune``
    the space's points run as written, so its FIT=1 point is the declared tile. What the twin cannot
    say: mma.sync and ldmatrix — Triton 3.6 picks ``wgmma`` on sm_90 itself."""
    pid_m, pid_n = grouped_program(M, BM, GROUP)
    tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
         pid_m, pid_n, BM, BN, BK, None)


@triton.jit
def split_range_tile(a_ptr, b_ptr, c_ptr, part_ptr, count_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                     stride_cm, stride_cn, pid_s, splits, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                     GROUP: tl.constexpr):
    """This program's tile of one product (grid axes 0 and 1 in the grouped order) over K range ``pid_s`` of
    ``splits``, each cdiv(K, splits) rounded up to BK — the CUDA rungs' range: their plan makes the ranges equal
    (study/ops/hgemm_mma_sync.py split_mma_plan); with one range C from the accumulator, with more FP32 planes
    (M × N each) summed in range order by the tile's last program (``sum_ranges_by_last``), as the CUDA rungs'
    last block does (hgemm v12's twin; bgemm v2's on each entry)."""
    pid_m, pid_n = grouped_program(M, BM, GROUP)
    split_k = tl.cdiv(tl.cdiv(K, splits), BK) * BK
    k_lo = pid_s * split_k
    acc = accumulate(a_ptr + k_lo * stride_ak, b_ptr + k_lo * stride_bk, M, N, tl.minimum(split_k, K - k_lo),
                     stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n, BM, BN, BK, None)
    if splits == 1:
        store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BM, BN)
    else:
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        inside = (rm[:, None] < M) & (rn[None, :] < N)
        tile = pid_m * tl.cdiv(N, BN) + pid_n
        sum_ranges_by_last(acc, part_ptr, count_ptr, c_ptr, rm, rn, stride_cm, stride_cn, inside, tile, pid_s, splits,
                           M, N)


@triton.jit
def hgemm_grouped_split_k(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    part_ptr, count_ptr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, FIT: tl.constexpr,
    MIN_SLICES: tl.constexpr, BLOCKS_PER_SM: tl.constexpr,
):
    """v12: v6's twin over one of the K ranges on program axis 2 (:func:`split_range_tile`). FIT, MIN_SLICES and
    BLOCKS_PER_SM are the launch's (the tile and the plan), not read here. What the twin cannot say: v6's own (mma.sync,
    ldmatrix, the copy widths)."""
    split_range_tile(a_ptr, b_ptr, c_ptr, part_ptr, count_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                     stride_cm, stride_cn, tl.program_id(2), tl.num_programs(2), BM, BN, BK, GROUP)


@triton.jit
def descriptor_accumulate(a_desc, b_desc, K, pid_m, pid_n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A·B for C[pid_m·BM :, pid_n·BN :] from tensor-descriptor tiles (TMA on sm_90; what lies past M,
    N and K loads as zeros) into an FP32 accumulator, which is returned."""
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = a_desc.load([pid_m * BM, k0])
        b = b_desc.load([k0, pid_n * BN])
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def descriptor_tile(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn, pid_m, pid_n,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C[pid_m·BM :, pid_n·BN :] = A·B (:func:`descriptor_accumulate`), stored in C's type: the body
    of the v7 and v8 twins. Triton inlines it, so v8's persistent loop still holds the K loop it
    flattens."""
    acc = descriptor_accumulate(a_desc, b_desc, K, pid_m, pid_n, BM, BN, BK)
    store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BM, BN)


@triton.jit
def hgemm_descriptors(
    a_desc, b_desc, c_ptr,
    M, N, K,
    stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):
    """v7: the operand tiles come through tensor descriptors (host-side ``TensorDescriptor``s of A
    and B, block shapes BM×BK and BK×BN): on sm_90 Triton loads them with TMA into its swizzled
    shared layout, zero-filling what lies past M, N and K as the CUDA rung's tensor maps do, and
    ``tl.dot`` becomes wgmma; CUDA v7's tile, pipeline depth and grouped order. What the twin cannot
    say: the mbarrier handshake and the per-slice barrier, which Triton's pipeliner places itself."""
    pid_m, pid_n = grouped_program(M, BM, GROUP)
    descriptor_tile(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn, pid_m, pid_n, BM, BN, BK)


@triton.jit
def hgemm_persistent(
    a_desc, b_desc, c_ptr,
    M, N, K,
    stride_cm, stride_cn, NUM_SMS,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):
    """v8: v7's twin made persistent: NUM_SMS programs walk the tiles in the grouped order, and
    ``tl.range(..., flatten=True)`` lets Triton's pipeliner run the loads of a program's next tile
    across the tile boundary, as the CUDA rung's producer runs ahead of its consumers. What the twin
    cannot say: warp specialisation itself (a producer warpgroup, consumers that keep 232 registers).
    Triton 3.6's ``warp_specialize=True`` is for Blackwell; on Hopper the pipelining stays in
    software, one instruction stream per warp."""
    rows = tl.cdiv(M, BM)
    cols = tl.cdiv(N, BN)
    for t in tl.range(tl.program_id(0), rows * cols, NUM_SMS, flatten=True):
        pid_m, pid_n = grouped_tile(t, rows, cols, GROUP)
        descriptor_tile(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn, pid_m, pid_n, BM, BN, BK)


@triton.jit
def hgemm_pairs(
    a_desc, b_desc, c_ptr,
    M, N, K,
    stride_cm, stride_cn, NUM_SMS,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):
    """v11: v8's twin walking pairs of tiles as the CUDA rung's clusters do: programs 2c and 2c + 1 (an
    even grid, at most NUM_SMS) take block rows 2p and 2p + 1 of one block column, pairs in the grouped
    order over pair rows, so the two programs ask L2 for the same B slices at about the same time. What
    the twin cannot say: the cluster itself and the multicast copy (Triton 3.6's ``num_ctas`` lays out
    one program over several blocks; it does not let two programs share a load), so L2 still serves each
    program its own B; with odd block rows the last pair's second tile lies past M (masked, as CUDA's)."""
    pairs = tl.cdiv(tl.cdiv(M, BM), 2)
    cols = tl.cdiv(N, BN)
    for u in tl.range(tl.program_id(0) // 2, pairs * cols, tl.num_programs(0) // 2, flatten=True):
        pid_m, pid_n = pair_tile(u, pairs, cols, GROUP)
        descriptor_tile(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn, pid_m, pid_n, BM, BN, BK)


@triton.jit
def pair_tile(u, pairs, cols, GROUP: tl.constexpr):
    """Unit u of the pair walk (v11's twin; gemm_bias_relu v5's): programs 2c and 2c + 1 share the unit's
    pair p, in the grouped order over pair rows, and each takes block row 2p + its rank of block column
    pid_n. Returns (pid_m, pid_n)."""
    pid_p, pid_n = grouped_tile(u, pairs, cols, GROUP)
    return 2 * pid_p + tl.program_id(0) % 2, pid_n


@triton.jit
def split_plan(M, N, K, NUM_SMS, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MIN_SLICES: tl.constexpr):
    """v9's plan, as study/ops/hgemm.py's ``split_plan`` makes it for the CUDA rung: (splits, slices a
    split) from the tile count, the SMs and K's slices."""
    tiles = tl.cdiv(M, BM) * tl.cdiv(N, BN)
    slices = tl.cdiv(K, BK)
    splits = tl.maximum(1, tl.minimum(NUM_SMS // tiles, slices // MIN_SLICES))
    per = tl.cdiv(slices, splits)
    return tl.cdiv(slices, per), per


@triton.jit
def split_unit(a_desc, b_desc, u, splits, per, rows, cols, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               GROUP: tl.constexpr):
    """Unit u of the split walk: the K slices [(u % splits)·per, +per) of tile u // splits in the grouped
    order, (pid_m, pid_n, its FP32 accumulator): the body of the split-K twins (hgemm v9,
    gemm_bias_relu v3), which differ by what they do with the accumulator."""
    pid_m, pid_n = grouped_tile(u // splits, rows, cols, GROUP)
    k_begin = (u % splits) * per * BK
    k_end = tl.minimum(K, k_begin + per * BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(k_begin, k_end, BK):
        a = a_desc.load([pid_m * BM, k0])
        b = b_desc.load([k0, pid_n * BN])
        acc = tl.dot(a, b, acc)
    return pid_m, pid_n, acc


@triton.jit
def store_partial(part_ptr, acc, split, M, N, ldp, pid_m, pid_n, BM: tl.constexpr, BN: tl.constexpr):
    """A unit's FP32 accumulator into plane ``split`` of the workspace (rows ``ldp`` apart), clipped at
    M and N."""
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    plane = part_ptr + split.to(tl.int64) * M * ldp
    tl.store(plane + rm[:, None].to(tl.int64) * ldp + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def hgemm_split_k(
    a_desc, b_desc, c_ptr, part_ptr,
    M, N, K,
    stride_cm, stride_cn, ldp, NUM_SMS,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, MIN_SLICES: tl.constexpr,
):
    """v9: v8's twin over tiles × splits units (the CUDA rung's plan, :func:`split_plan`), unit u the K
    slices [(u % splits)·per, +per) of tile u // splits in the grouped order (:func:`split_unit`); one
    split: C, rounded, as v8's twin; more: the FP32 accumulator into plane u % splits of the workspace
    (rows ``ldp`` apart), summed in plane order by :func:`reduce_splits`, a second launch."""
    splits, per = split_plan(M, N, K, NUM_SMS, BM, BN, BK, MIN_SLICES)
    rows = tl.cdiv(M, BM)
    cols = tl.cdiv(N, BN)
    # Not flattened as v8's twin is: the store differs by the plan (C or a plane), a branch in the body
    # that Triton's flattening of nested loops is not asked to carry.
    for u in tl.range(tl.program_id(0), rows * cols * splits, NUM_SMS):
        pid_m, pid_n, acc = split_unit(a_desc, b_desc, u, splits, per, rows, cols, K, BM, BN, BK, GROUP)
        if splits == 1:
            store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BM, BN)
        else:
            store_partial(part_ptr, acc, u % splits, M, N, ldp, pid_m, pid_n, BM, BN)


@triton.jit
def hgemm_skinny_m(
    a_desc, b_desc, c_ptr, part_ptr,
    M, N, K,
    stride_cm, stride_cn, ldp, NUM_SMS, ldb,
    TOKENS: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MIN_SLICES: tl.constexpr,
    B_IN_PLACE: tl.constexpr = False, FIT_BN: tl.constexpr = 0,  # FIT_BN: the launch's (BN fitted to N), unread here
):
    """v10: skinny M (≤ 64 tokens) computed transposed, Cᵀ = Bᵀ·Aᵀ, as the CUDA rung does: each K slice
    loads a BK × BN box of B (the weights) and a TOKENS × BK box of A (every token: TMA zero-fills the
    rows past M) through the descriptors, and ``tl.dot(Bᵀ, Aᵀ)`` accumulates a BN × TOKENS block of Cᵀ,
    so the weights are the dot's 64-row M side and the tokens its N; the block goes back to C (or to
    the split's FP32 plane) transposed by the store's indices. Units: v9's split walk over one row of
    tiles (:func:`split_plan` with BM = TOKENS), summed after by :func:`reduce_splits`. What the twin
    cannot say: the operand roles of the instruction — ``tl.trans`` of a shared tile is a layout
    Triton's wgmma lowering may serve with the transpose bits (as the CUDA rung's imm-trans-a = 1) or
    with a copy, its choice; an N of 8 (``tl.dot`` needs every side ≥ 16, so the launch picks TOKENS ≥
    16); the producer warp and the mbarrier ring (software pipelining, ``num_stages``). With
    ``B_IN_PLACE`` (B's rows no multiple of 16 bytes apart: no descriptor can describe them) ``b_desc``
    is B's pointer, rows ``ldb`` elements apart, and each box is loaded by masked pointer loads where B
    lies (the CUDA rung reads it by eight tensor maps, one per residue of k mod 8, and shifts each on
    chip; a descriptor here would need the same), the loads' width Triton's choice."""
    splits, per = split_plan(M, N, K, NUM_SMS, TOKENS, BN, BK, MIN_SLICES)
    for u in tl.range(tl.program_id(0), tl.cdiv(N, BN) * splits, NUM_SMS):
        acc = skinny_unit(a_desc, b_desc, u, splits, per, N, K, ldb, TOKENS, BN, BK, B_IN_PLACE)
        skinny_store(c_ptr, part_ptr, acc, u, splits, M, N, stride_cm, stride_cn, ldp, TOKENS, BN)


@triton.jit
def skinny_unit(a_desc, b_desc, u, splits, per, N, K, ldb, TOKENS: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, B_IN_PLACE: tl.constexpr):
    """v10's unit ``u`` (block column u // splits, K range u % splits): the BN × TOKENS block of Cᵀ; B's
    box through its descriptor, or, ``B_IN_PLACE``, by pointer (``b_desc`` then B's first element, rows
    ``ldb`` apart), zeros past K and N as TMA fills them."""
    pid_n = u // splits
    k_begin = (u % splits) * per * BK
    k_end = tl.minimum(K, k_begin + per * BK)
    acc = tl.zeros((BN, TOKENS), dtype=tl.float32)
    rn = pid_n * BN + tl.arange(0, BN)
    for k0 in range(k_begin, k_end, BK):
        if B_IN_PLACE:
            rk = k0 + tl.arange(0, BK)
            w = tl.load(b_desc + rk[:, None].to(tl.int64) * ldb + rn[None, :],
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        else:
            w = b_desc.load([k0, pid_n * BN])
        x = a_desc.load([0, k0])
        acc = tl.dot(tl.trans(w), tl.trans(x), acc)
    return acc


@triton.jit
def skinny_store(c_ptr, part_ptr, acc, u, splits, M, N, stride_cm, stride_cn, ldp, TOKENS: tl.constexpr,
                 BN: tl.constexpr):
    """A unit's block of Cᵀ back into C (one split: rounded to C's type) or into its split's FP32 plane."""
    rm = tl.arange(0, TOKENS)
    rn = (u // splits) * BN + tl.arange(0, BN)
    inside = (rn[:, None] < N) & (rm[None, :] < M)
    if splits == 1:
        tl.store(c_ptr + rm[None, :] * stride_cm + rn[:, None] * stride_cn, acc.to(c_ptr.dtype.element_ty),
                 mask=inside)
    else:
        plane = part_ptr + (u % splits).to(tl.int64) * M * ldp
        tl.store(plane + rm[None, :].to(tl.int64) * ldp + rn[:, None], acc, mask=inside)


def skinny_blocks(nargs):
    """``triton.autotune``'s pre-hook for v10's twin: each config's boxes on the descriptors (A: TOKENS
    rows, the launch's pick, × BK; B: BK × BN)."""
    nargs["a_desc"].block_shape = [nargs["TOKENS"], nargs["BK"]]
    if hasattr(nargs["b_desc"], "block_shape"):  # B in place: a pointer, no box
        nargs["b_desc"].block_shape = [nargs["BK"], nargs["BN"]]


@triton.jit
def sum_planes(part_ptr, M, N, ldp, splits, BLOCK: tl.constexpr):
    """The sum of the ``splits`` planes, in plane order as the CUDA rungs add them, over this program's
    BLOCK consecutive elements of C: (the FP32 sums, their rows, their columns, which are inside C)."""
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = e < M * N
    row = e // N
    col = e % N
    at = row * ldp + col
    total = tl.load(part_ptr + at, mask=inside, other=0.0)
    for s in range(1, splits):
        total += tl.load(part_ptr + s * M * ldp + at, mask=inside, other=0.0)
    return total, row, col, inside


@triton.jit
def reduce_splits(part_ptr, c_ptr, M, N, ldp, stride_cm, splits, BLOCK: tl.constexpr):
    """v9's second pass: C = the sum of the ``splits`` planes (:func:`sum_planes`), rounded once to C's
    type; BLOCK consecutive elements of C a program."""
    total, row, col, inside = sum_planes(part_ptr, M, N, ldp, splits, BLOCK)
    tl.store(c_ptr + row * stride_cm + col, total.to(c_ptr.dtype.element_ty), mask=inside)


def descriptor_blocks(nargs):
    """``triton.autotune``'s pre-hook for the descriptor twins (``hgemm_descriptors``,
    ``hgemm_persistent`` and bgemm's ``bgemm_persistent``): each config's block shapes on the
    descriptors before it runs (a descriptor carries its box, so one made for another tile would
    load the wrong one); a batch's descriptors keep boxes of one entry."""
    a, b = nargs["a_desc"], nargs["b_desc"]
    one = [1] * (len(a.shape) - 2)
    a.block_shape = [*one, nargs["BM"], nargs["BK"]]
    b.block_shape = [*one, nargs["BK"], nargs["BN"]]


def _naive_space():
    return [dict(BM=bm, BN=bn, num_warps=w, num_stages=1)
            for bm, bn, w in ((32, 8, 8), (8, 32, 8), (32, 4, 4), (4, 32, 4), (16, 16, 8), (32, 32, 8),
                              (16, 64, 8), (64, 16, 8))]


def _tiled_space(stages):
    # BK >= 16 (tl.dot's smallest K); v2's 32×32×32 with 32 warps is the CUDA rung's 1024 threads.
    points = ((32, 32, 32, 32), (32, 32, 32, 4), (64, 64, 32, 4), (128, 128, 32, 8), (128, 128, 64, 8),
              (64, 128, 32, 4), (128, 64, 32, 4), (128, 256, 32, 8), (256, 128, 32, 8))
    return [dict(BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=stages) for bm, bn, bk, w in points]


NAIVE_SPACE = _naive_space()
# CUDA v0: 32×8 outputs per block of 256 threads, one each (lanes along M in CUDA).
V0_NAIVE = dict(BM=32, BN=8, num_warps=8, num_stages=1)
# CUDA v1: 8×32 outputs per block of 256 threads (lanes along N in CUDA).
V1_COALESCED = dict(BM=8, BN=32, num_warps=8, num_stages=1)
# CUDA v2: 32×32×32 tiles, 1024 threads (one output each), one shared buffer.
V2_SMEM_TILING = dict(BM=32, BN=32, BK=32, num_warps=32, num_stages=1)
SINGLE_STAGE_SPACE = _tiled_space(1)
# CUDA v3: 128×128×32, 256 threads (8×8 outputs each), one shared buffer.
V3_REGISTER_TILE = dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=1)
# CUDA v4: v3's tile without bank conflicts; Triton swizzles shared memory itself: v3's twin.
V4_BANK_CONFLICTS = dict(V3_REGISTER_TILE)
# CUDA v5: v4 with two shared stages.
V5_DOUBLE_BUFFER = dict(BM=128, BN=128, BK=32, num_warps=8, num_stages=2)
TWO_STAGE_SPACE = _tiled_space(2)
# CUDA v6: 128×128×32, 128 threads (warps of 64×64), 4 stages, 8 block rows per group; FIT=1, as in the CUDA
# rung: BM, BN halved to 64 where 128×128 tiles are fewer than the SMs, quartered to 32 × 32 where those still leave
# a quarter of them idle or a wave of 32 × 32 tiles covers a quarter less (the launch's, study/ops/hgemm_mma_sync.py
# fitted_tile).
V6_MMA_SYNC = dict(BM=128, BN=128, BK=32, GROUP=8, num_warps=4, num_stages=4, FIT=1)
MMA_SPACE = [dict(BM=bm, BN=bn, BK=32, GROUP=8, num_warps=w, num_stages=s, FIT=fit)
             for bm, bn, w, s, fit in ((128, 128, 8, 3, 0), (128, 128, 8, 4, 0), (128, 256, 8, 3, 0),
                                       (256, 128, 8, 3, 0), (128, 128, 4, 4, 1), (64, 128, 4, 4, 0),
                                       (128, 256, 8, 4, 0), (256, 128, 8, 4, 0))] + [
    # the CUDA rung's fitted 64 × 64 tile with BK = 64, as written: half the K slices of a tiny product's serial
    # loop (the odd suite's FP16 misses); and its 32 × 32 points (cuBLAS's FP16 tile at those shapes)
    dict(BM=bm, BN=bm, BK=bk, GROUP=8, num_warps=4, num_stages=s, FIT=0)
    for bm, bk, s in ((64, 64, 3), (32, 32, 4), (32, 64, 3), (32, 128, 3))]
# CUDA v12: v6's declared tile (fitted to the shape) over K ranges; MIN_SLICES the plan's shortest range,
# BLOCKS_PER_SM the blocks an SM it plans for.
V12_SPLIT_K_MMA_SYNC = dict(BM=128, BN=128, BK=32, GROUP=8, num_warps=4, num_stages=4, FIT=1, MIN_SLICES=4,
                            BLOCKS_PER_SM=2)
# Under triton.autotune the points run as written (no fitting): the 64 × 64 and 32 × 32 tiles FIT picks at few tiles
# are points.
SPLIT_MMA_SPACE = [dict(BM=bm, BN=bm, BK=bk, GROUP=8, num_warps=4, num_stages=s, FIT=int(bm == 128), MIN_SLICES=least,
                        BLOCKS_PER_SM=per_sm)
                   for bm, bk, s, least, per_sm in ((128, 32, 4, 2, 2), (128, 32, 4, 4, 2), (128, 32, 4, 8, 2),
                                                    (128, 64, 3, 4, 2), (64, 32, 4, 4, 2), (64, 32, 4, 2, 2),
                                                    (64, 32, 4, 4, 3), (64, 32, 4, 4, 4), (32, 32, 4, 4, 2))]
# CUDA v7: 128×256×64, two warpgroups (8 warps), 3 stages, 8 block rows per group; the space is the
# CUDA rung's (one warpgroup, 4 warps, per 64 rows).
V7_WGMMA_TMA = dict(BM=128, BN=256, BK=64, GROUP=8, num_warps=8, num_stages=3)
WGMMA_SPACE = [dict(BM=bm, BN=bn, BK=64, GROUP=8, num_warps=bm // 16, num_stages=s)
               for bm, bn, s in ((128, 256, 4), (128, 256, 3), (128, 128, 4), (128, 128, 6), (64, 256, 5),
                                 (64, 128, 6))]
# CUDA v8: 128×256×64, a producer and two consumer warpgroups (12 warps), 4 stages, persistent. The
# twin has no producer warpgroup: its 8 warps are v7's consumers, each loading for itself.
V8_WARP_SPECIALIZED = dict(BM=128, BN=256, BK=64, GROUP=8, num_warps=8, num_stages=4)
PERSISTENT_SPACE = [dict(BM=128, BN=bn, BK=64, GROUP=g, num_warps=8, num_stages=s)
                    for bn, s, g in ((256, 4, 8), (256, 3, 8), (256, 4, 16), (128, 6, 8))]
# CUDA v11: v8's tile and pipeline over pairs of tiles; the space is the CUDA rung's.
V11_CLUSTER_MULTICAST = dict(BM=128, BN=256, BK=64, GROUP=8, num_warps=8, num_stages=4)
PAIR_SPACE = [dict(BM=128, BN=bn, BK=64, GROUP=g, num_warps=8, num_stages=s)
              for bn, s, g in ((256, 4, 8), (256, 3, 8), (256, 4, 4), (256, 4, 16), (128, 6, 8))]
# CUDA v9: v8's tile and pipeline over split-K units (MIN_SLICES: the plan's shortest range, a launch
# parameter); the space is the CUDA rung's.
V9_SPLIT_K = dict(BM=128, BN=256, BK=64, GROUP=8, MIN_SLICES=4, num_warps=8, num_stages=4)
SPLIT_SPACE = [dict(BM=128, BN=bn, BK=64, GROUP=8, MIN_SLICES=ms, num_warps=8, num_stages=s)
               for bn, s, ms in ((256, 4, 4), (256, 4, 2), (256, 4, 8), (256, 3, 4), (128, 6, 4), (128, 6, 2))]
REDUCE_BLOCK = 1024  # elements of C a program of reduce_splits sums
# CUDA v10: 128 weight columns (two consumer warpgroups: the twin's 8 warps; CUDA's producer warp has no
# counterpart), 8 stages, v9's split plan at MIN_SLICES 4, and with FIT_BN=1 the width fitted to N by the
# launch (study/ops/skinny_fit.py: 64, 128 or 256 columns, warps BN / 16); TOKENS is the launch's (from M);
# the space is the CUDA rung's. Under the autotuner a point is its own width: FIT_BN acts where the config
# is the launch's (so the tuner times the declared point as the unfitted 128-column point, twice).
V10_SKINNY_M = dict(BN=128, BK=64, MIN_SLICES=4, FIT_BN=1, num_warps=8, num_stages=8)
SKINNY_SPACE = [V10_SKINNY_M] + [dict(BN=bn, BK=64, MIN_SLICES=ms, FIT_BN=0, num_warps=bn // 16, num_stages=s)
                                 for bn, s, ms in ((128, 8, 4), (128, 8, 2), (128, 8, 8), (128, 4, 4), (256, 5, 4),
                                                   (256, 5, 2), (64, 8, 4))]

"""Triton twins of bgemm's tensor-core rungs (FP16/BF16 storage, FP32 accumulation, C[b] = A[b]·B[b]).

bgemm v0's twin is SGEMM's ``tl.dot`` kernel with the entry on program axis 2
(triton_kernels/sgemm.py). v1's twin is hgemm v8's (triton_kernels/hgemm.py, ``hgemm_persistent``)
over a batch: A and B come through 3-D tensor descriptors (entry, rows, columns) with boxes of one
entry, so TMA zero-fills what lies past an entry's M, N and K instead of reading the next entry, and
NUM_SMS programs walk batch × rows × cols tiles entry by entry, as the CUDA rung's persistent blocks
do. v2's twin is hgemm v12's (``split_range_tile``: v6's twin's tile over a K range, the ranges summed
by a tile's last program) on each entry, the entry and the range on program axis 2. v3's twin is hgemm v10's
(Cᵀ = Bᵀ·Aᵀ, the tokens the dot's N) over the batch, a tile's ranges summed by its last program as v2's twin's.
Index arithmetic is 32-bit: the op refuses batches of 2**31 or more elements.
"""

import triton
import triton.language as tl

from triton_kernels.gemm_tile import grouped_tile, store, sum_ranges_by_last
from triton_kernels.hgemm import SKINNY_SPACE, SPLIT_MMA_SPACE, V10_SKINNY_M, split_plan, split_range_tile


@triton.jit
def bgemm_persistent(
    a_desc, b_desc, c_ptr,
    BATCH, M, N, K,
    stride_cb, stride_cm, stride_cn, NUM_SMS,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
    FIT_N: tl.constexpr = 0,  # the launch's (the 64- or 256-wide tile, study/ops/bgemm.py fitted_n), unread here
):
    """v1: tile t of the walk is entry t // (rows·cols), then the grouped order inside the entry;
    ``flatten=True`` lets the pipeliner load the next tile's first slices (and the next entry's)
    while this one finishes. What the twin cannot say: the producer warpgroup and TMA stores of C."""
    rows = tl.cdiv(M, BM)
    cols = tl.cdiv(N, BN)
    per_entry = rows * cols
    for t in tl.range(tl.program_id(0), BATCH * per_entry, NUM_SMS, flatten=True):
        entry = t // per_entry
        pid_m, pid_n = grouped_tile(t - entry * per_entry, rows, cols, GROUP)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = a_desc.load([entry, pid_m * BM, k0]).reshape(BM, BK)
            b = b_desc.load([entry, k0, pid_n * BN]).reshape(BK, BN)
            acc = tl.dot(a, b, acc)
        store(c_ptr + entry * stride_cb, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BM, BN)


@triton.jit
def bgemm_split_k(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_ab, stride_bb, stride_cb,
    part_ptr, count_ptr, BATCH,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, FIT: tl.constexpr,
    MIN_SLICES: tl.constexpr, BLOCKS_PER_SM: tl.constexpr,
):
    """v2: program axis 2 is entry · splits + range (splits = its size over BATCH); the entry's matrices, its
    planes (splits of M × N) and its tiles' counts, then hgemm v12's twin's tile over the range. FIT, MIN_SLICES
    and BLOCKS_PER_SM are the launch's (the tile and the plan). What the twin cannot say: hgemm v6's (mma.sync,
    ldmatrix, the copy widths)."""
    splits = tl.num_programs(2) // BATCH
    entry = tl.program_id(2) // splits
    tiles = tl.cdiv(M, BM) * tl.cdiv(N, BN)
    split_range_tile(a_ptr + entry * stride_ab, b_ptr + entry * stride_bb, c_ptr + entry * stride_cb,
                     part_ptr + entry * splits * M * N, count_ptr + entry * tiles, M, N, K, stride_am, stride_ak,
                     stride_bk, stride_bn, stride_cm, stride_cn, tl.program_id(2) % splits, splits, BM, BN, BK, GROUP)


@triton.jit
def bgemm_skinny_m(
    a_ptr, b_ptr, c_ptr, part_ptr, count_ptr,
    BATCH, M, N, K,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn, stride_cb, stride_cm, stride_cn, NUM_SMS,
    TOKENS: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MIN_SLICES: tl.constexpr,
    FIT_BN: tl.constexpr = 0,  # the launch's (BN fitted to N), unread here
):
    """v3: unit u of the walk is entry u // (tiles · splits), then v10's unit inside the entry (its block column
    and K range, the plan over NUM_SMS // BATCH blocks as the CUDA rung's); each K slice loads a BK × BN block of
    the entry's B and its TOKENS × BK rows of A (zeros past M, N and K) and ``tl.dot(Bᵀ, Aᵀ)`` accumulates a
    BN × TOKENS block of Cᵀ, stored transposed; with more ranges than one, the entry's planes (M × N each) summed
    in range order by the tile's last program (``sum_ranges_by_last``), where the CUDA rung's last unit does it.
    What the twin cannot say: TMA (pointer loads of Triton's width), the producer warp and mbarrier ring, an N
    of 8 (``tl.dot`` needs every side ≥ 16: TOKENS ≥ 16)."""
    splits, per = split_plan(M, N, K, NUM_SMS // BATCH, TOKENS, BN, BK, MIN_SLICES)
    tiles = tl.cdiv(N, BN)
    per_entry = tiles * splits
    rm = tl.arange(0, TOKENS)
    for u in tl.range(tl.program_id(0), BATCH * per_entry, NUM_SMS):
        entry = u // per_entry
        pid_n = u % per_entry // splits
        pid_s = u % splits
        k_begin = pid_s * per * BK
        k_end = tl.minimum(K, k_begin + per * BK)
        rn = pid_n * BN + tl.arange(0, BN)
        a = a_ptr + entry * stride_ab
        b = b_ptr + entry * stride_bb
        acc = tl.zeros((BN, TOKENS), dtype=tl.float32)
        for k0 in range(k_begin, k_end, BK):
            rk = k0 + tl.arange(0, BK)
            w = tl.load(b + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            x = tl.load(a + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            acc = tl.dot(tl.trans(w), tl.trans(x), acc)
        c = c_ptr + entry * stride_cb
        inside = (rm[:, None] < M) & (rn[None, :] < N)
        if splits == 1:
            tl.store(c + rm[:, None] * stride_cm + rn[None, :] * stride_cn, tl.trans(acc).to(c_ptr.dtype.element_ty),
                     mask=inside)
        else:
            sum_ranges_by_last(tl.trans(acc), part_ptr + entry * splits * M * N, count_ptr + entry * tiles, c, rm, rn,
                               stride_cm, stride_cn, inside, pid_n, pid_s, splits, M, N)


# CUDA v1: 128×128×64, a producer and two consumer warpgroups, 4 stages, persistent, the 64-wide point where
# N ≤ 64 and the 256-wide one at one or two K slices (FIT_N, the launch's: study/ops/bgemm.py fitted_n; under the
# autotuner a point is its own tile); the twin's 8 warps are the consumers (Triton 3.6 does not specialise warps on
# Hopper).
V1_BATCHED_WGMMA = dict(BM=128, BN=128, BK=64, GROUP=8, FIT_N=1, num_warps=8, num_stages=4)
BATCHED_SPACE = [V1_BATCHED_WGMMA] + [dict(BM=128, BN=bn, BK=64, GROUP=8, FIT_N=0, num_warps=8, num_stages=s)
                                      for bn, s in ((128, 4), (256, 4), (256, 3), (128, 6), (64, 6), (64, 8))]
# CUDA v2: hgemm v12's declared tile (fitted to the batch's shape) and space.
V2_BATCHED_SPLIT_K = dict(BM=128, BN=128, BK=32, GROUP=8, num_warps=4, num_stages=4, FIT=1, MIN_SLICES=4,
                          BLOCKS_PER_SM=2)
BATCHED_SPLIT_SPACE = SPLIT_MMA_SPACE  # hgemm v12's twin's
# CUDA v3: hgemm v10's config and space (BN weight columns, BK = 64, MIN_SLICES the plan's shortest range), and
# the 64-wide tile at MIN_SLICES 8, as the CUDA rung's — which lacks v10's 256-wide point at MIN_SLICES 2.
V3_BATCHED_SKINNY_M = dict(V10_SKINNY_M)
BATCHED_SKINNY_SPACE = [*SKINNY_SPACE, dict(BN=64, BK=64, MIN_SLICES=8, FIT_BN=0, num_warps=4, num_stages=8)]

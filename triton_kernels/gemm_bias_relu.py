"""Triton twins of the fusion study's GEMM + bias + ReLU (docs/ladders/gemm_bias_relu.md).

C = relu(A·B + bias), the bias of length N broadcast over the rows, added in FP32 to the FP32
accumulator before the one rounding to C's type:

- v0 (unfused): the bare GEMM twin (hgemm v8's for FP16/BF16, sgemm v7's for FP32, at their
  mirrored configs; study/ops/gemm_bias_relu.py launches it) and then ``bias_relu``, a pointwise
  pass that reads C back and writes it again — the round trip fusion removes.
- v1 (fused, SIMT): sgemm v7's twin (``tl.dot`` in IEEE FP32, grouped order) with the bias and
  ReLU applied to the accumulator before the store.
- v2 (fused, tensor cores): hgemm v8's persistent twin (tensor descriptors, TMA) with the same
  epilogue.
- v3 (split-K): hgemm v9's twin (v8's over tiles × K ranges, the same plan) with the epilogue where
  C is written: on the accumulator when the plan has one split, else in the reduction that sums the
  FP32 partial planes in order (``reduce_splits_bias_relu``).
- v4 (skinny M): hgemm v10's twin (Cᵀ = Bᵀ·Aᵀ, the tokens the dot's N) with the epilogue placed as
  v3's: on the accumulator (the bias along its rows, C's columns) with one split, else in the reduction.
- v5 (pairs): hgemm v11's twin (programs 2c and 2c + 1 walk the two tiles of each pair of block rows)
  with v2's epilogue.

What a twin cannot say: where the bias is held (the CUDA rungs load each thread's columns once a
tile into registers; Triton places the loaded vector as its layout dictates). Plain kernels and
config dicts only.
"""

import triton
import triton.language as tl

from triton_kernels.gemm_tile import accumulate, grouped_program, grouped_tile, store
from triton_kernels.hgemm import (PAIR_SPACE, PERSISTENT_SPACE, SKINNY_SPACE, SPLIT_SPACE,  # noqa: F401
                                   V8_WARP_SPECIALIZED, V9_SPLIT_K, V10_SKINNY_M, V11_CLUSTER_MULTICAST,
                                   descriptor_accumulate, descriptor_blocks, pair_tile, skinny_blocks, skinny_store,
                                   skinny_unit, split_plan, split_unit, store_partial, sum_planes)
from triton_kernels.sgemm import MULTISTAGE_SPACE, V7_MULTISTAGE


@triton.jit
def with_bias_relu(acc, bias_ptr, N, pid_n, BN: tl.constexpr):
    """relu(acc + bias) for the BN columns of block column pid_n (columns past N add 0)."""
    rn = pid_n * BN + tl.arange(0, BN)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    return tl.maximum(acc + bias[None, :], 0.0)


@triton.jit
def bias_relu_tile(a_desc, b_desc, bias_ptr, c_ptr, M, N, K, stride_cm, stride_cn, pid_m, pid_n,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C[pid_m·BM :, pid_n·BN :] = relu(A·B + bias) from tensor-descriptor tiles: hgemm's descriptor_tile with
    the epilogue, the body of the v2 and v5 twins (Triton inlines it)."""
    acc = descriptor_accumulate(a_desc, b_desc, K, pid_m, pid_n, BM, BN, BK)
    store(c_ptr, with_bias_relu(acc, bias_ptr, N, pid_n, BN), M, N, stride_cm, stride_cn, pid_m, pid_n, BM, BN)


@triton.jit
def bias_relu(c_ptr, bias_ptr, M, N, stride_cm, BM: tl.constexpr, BN: tl.constexpr):
    """v0's second kernel: C = relu(C + bias) in place over a BM × BN block of C, in FP32."""
    rm = tl.program_id(1) * BM + tl.arange(0, BM)
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    c = c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :]
    x = tl.load(c, mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    tl.store(c, tl.maximum(x + bias[None, :], 0.0).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gemm_bias_relu_grouped(
    a_ptr, b_ptr, bias_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, INPUT_PRECISION: tl.constexpr,
):
    """v1: sgemm v7's twin (grouped programs, ``num_stages`` 3–4) with the epilogue before the store."""
    pid_m, pid_n = grouped_program(M, BM, GROUP)
    acc = accumulate(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                     BM, BN, BK, INPUT_PRECISION)
    store(c_ptr, with_bias_relu(acc, bias_ptr, N, pid_n, BN), M, N, stride_cm, stride_cn, pid_m, pid_n, BM, BN)


@triton.jit
def gemm_bias_relu_persistent(
    a_desc, b_desc, bias_ptr, c_ptr,
    M, N, K,
    stride_cm, stride_cn, NUM_SMS,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):
    """v2: hgemm v8's persistent twin (TMA descriptors, NUM_SMS programs walking the tiles in the
    grouped order) with the epilogue before the store."""
    rows = tl.cdiv(M, BM)
    cols = tl.cdiv(N, BN)
    for t in tl.range(tl.program_id(0), rows * cols, NUM_SMS, flatten=True):
        pid_m, pid_n = grouped_tile(t, rows, cols, GROUP)
        bias_relu_tile(a_desc, b_desc, bias_ptr, c_ptr, M, N, K, stride_cm, stride_cn, pid_m, pid_n, BM, BN, BK)


@triton.jit
def gemm_bias_relu_pairs(
    a_desc, b_desc, bias_ptr, c_ptr,
    M, N, K,
    stride_cm, stride_cn, NUM_SMS,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
):
    """v5: hgemm v11's twin (programs 2c and 2c + 1 take the two tiles of each pair, which share their B
    slices) with the epilogue before the store. What it cannot say is v11's twin's: the cluster and the
    multicast copy, so L2 serves each program its own B."""
    pairs = tl.cdiv(tl.cdiv(M, BM), 2)
    cols = tl.cdiv(N, BN)
    for u in tl.range(tl.program_id(0) // 2, pairs * cols, tl.num_programs(0) // 2, flatten=True):
        pid_m, pid_n = pair_tile(u, pairs, cols, GROUP)
        bias_relu_tile(a_desc, b_desc, bias_ptr, c_ptr, M, N, K, stride_cm, stride_cn, pid_m, pid_n, BM, BN, BK)


@triton.jit
def gemm_bias_relu_split_k(
    a_desc, b_desc, bias_ptr, c_ptr, part_ptr,
    M, N, K,
    stride_cm, stride_cn, ldp, NUM_SMS,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, MIN_SLICES: tl.constexpr,
):
    """v3: hgemm v9's twin (its units, plan and partial planes) with the epilogue: one split, C =
    relu(acc + bias) as v2's twin stores it; more, the FP32 partials, whose sum
    :func:`reduce_splits_bias_relu` takes through the epilogue in a second launch (the bias and ReLU
    cannot go on a partial sum)."""
    splits, per = split_plan(M, N, K, NUM_SMS, BM, BN, BK, MIN_SLICES)
    rows = tl.cdiv(M, BM)
    cols = tl.cdiv(N, BN)
    for u in tl.range(tl.program_id(0), rows * cols * splits, NUM_SMS):
        pid_m, pid_n, acc = split_unit(a_desc, b_desc, u, splits, per, rows, cols, K, BM, BN, BK, GROUP)
        if splits == 1:
            store(c_ptr, with_bias_relu(acc, bias_ptr, N, pid_n, BN), M, N, stride_cm, stride_cn, pid_m, pid_n, BM, BN)
        else:
            store_partial(part_ptr, acc, u % splits, M, N, ldp, pid_m, pid_n, BM, BN)


@triton.jit
def gemm_bias_relu_skinny_m(
    a_desc, b_desc, bias_ptr, c_ptr, part_ptr,
    M, N, K,
    stride_cm, stride_cn, ldp, NUM_SMS, ldb,
    TOKENS: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MIN_SLICES: tl.constexpr,
    B_IN_PLACE: tl.constexpr = False, FIT_BN: tl.constexpr = 0,  # FIT_BN: the launch's (BN fitted to N), unread here
):
    """v4: hgemm v10's twin (Cᵀ = Bᵀ·Aᵀ, its units, plan, partial planes, B in place where no descriptor
    can describe it) with the epilogue: one split, relu(acc + bias) along the block's BN weight columns
    (Cᵀ's rows) before C's rounding; more, the FP32 partials, whose sum :func:`reduce_splits_bias_relu`
    takes through the epilogue."""
    splits, per = split_plan(M, N, K, NUM_SMS, TOKENS, BN, BK, MIN_SLICES)
    for u in tl.range(tl.program_id(0), tl.cdiv(N, BN) * splits, NUM_SMS):
        acc = skinny_unit(a_desc, b_desc, u, splits, per, N, K, ldb, TOKENS, BN, BK, B_IN_PLACE)
        if splits == 1:
            rn = (u // splits) * BN + tl.arange(0, BN)
            bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
            acc = tl.maximum(acc + bias[:, None], 0.0)
        skinny_store(c_ptr, part_ptr, acc, u, splits, M, N, stride_cm, stride_cn, ldp, TOKENS, BN)


@triton.jit
def reduce_splits_bias_relu(part_ptr, c_ptr, bias_ptr, M, N, ldp, stride_cm, splits, BLOCK: tl.constexpr):
    """v3's second pass: C = relu(the sum of the ``splits`` planes in plane order + bias), in FP32,
    rounded once to C's type; BLOCK consecutive elements of C a program (hgemm v9's reduction with the
    epilogue)."""
    total, row, col, inside = sum_planes(part_ptr, M, N, ldp, splits, BLOCK)
    bias = tl.load(bias_ptr + col, mask=inside, other=0.0).to(tl.float32)
    tl.store(c_ptr + row * stride_cm + col, tl.maximum(total + bias, 0.0).to(c_ptr.dtype.element_ty), mask=inside)


# CUDA v0's pass: 256 threads a block over 16-byte vectors; the twin's block is 16 rows × 256 columns.
V0_UNFUSED = dict(BM=16, BN=256, num_warps=8, num_stages=1)
POINTWISE_SPACE = [dict(BM=bm, BN=bn, num_warps=w, num_stages=1)
                   for bm, bn, w in ((16, 256, 8), (8, 512, 8), (32, 256, 8), (4, 1024, 4), (64, 128, 8))]
# CUDA v1: sgemm v7's tile; its twin's config and space.
V1_FUSED_SIMT = dict(V7_MULTISTAGE)
SIMT_SPACE = MULTISTAGE_SPACE
# CUDA v2: hgemm v8's tile; its twin's config and space.
V2_FUSED_WGMMA = dict(V8_WARP_SPECIALIZED)
WGMMA_SPACE = PERSISTENT_SPACE
# CUDA v5: hgemm v11's tile and pipeline over pairs of tiles; its twin's config and space.
V5_CLUSTER_MULTICAST = dict(V11_CLUSTER_MULTICAST)
PAIRS_SPACE = PAIR_SPACE
# CUDA v3: hgemm v9's tile, pipeline and split plan (MIN_SLICES); its twin's config and space.
V3_SPLIT_K = dict(V9_SPLIT_K)
SPLIT_K_SPACE = SPLIT_SPACE
# CUDA v4: hgemm v10's kernel (TOKENS from the launch); its twin's config and space.
V4_SKINNY_M = dict(V10_SKINNY_M)
SKINNY_M_SPACE = SKINNY_SPACE

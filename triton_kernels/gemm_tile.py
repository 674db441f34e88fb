"""What the tiled GEMM twins share (triton_kernels/sgemm.py, triton_kernels/hgemm.py,
triton_kernels/gemm_bias_relu.py): one program's C tile through ``tl.dot`` (its product and its
store apart, so that an epilogue can go between), and the grouped program order of the CUDA rungs'
grouped_order.cuh; the ordered sum of a tile's K ranges by its last program (the split twins)."""

import triton
import triton.language as tl


@triton.jit
def accumulate(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INPUT_PRECISION: tl.constexpr,
               TRANSPOSED: tl.constexpr = False):
    """A·B for C[pid_m·BM :, pid_n·BN :]: BM×BK and BK×BN tiles staged through shared memory by
    ``tl.dot`` (the pipeline depth is the launch's ``num_stages``) into an FP32 accumulator, which is
    returned. INPUT_PRECISION is the FP32 operands' (``ieee``, ``tf32``, ``tf32x3``); None for half
    operands. Out-of-range elements load as zeros. TRANSPOSED (sgemm v11's twin): the BN×BM
    accumulator of Cᵀ = Bᵀ·Aᵀ, ``tl.dot(Bᵀ tile, Aᵀ tile)``."""
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    if TRANSPOSED:
        acc = tl.zeros((BN, BM), dtype=tl.float32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k_left = K - k0
        a_tile = tl.load(a, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b_tile = tl.load(b, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        if TRANSPOSED:
            acc = tl.dot(tl.trans(b_tile), tl.trans(a_tile), acc, input_precision=INPUT_PRECISION)
        else:
            acc = tl.dot(a_tile, b_tile, acc, input_precision=INPUT_PRECISION)
        a += BK * stride_ak
        b += BK * stride_bk
    return acc


@triton.jit
def store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BM: tl.constexpr, BN: tl.constexpr):
    """The FP32 tile ``acc`` into C[pid_m·BM :, pid_n·BN :] in C's type, clipped at M and N."""
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
         pid_m, pid_n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """C[pid_m·BM :, pid_n·BN :] = A·B (:func:`accumulate`, then :func:`store`)."""
    acc = accumulate(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, pid_m, pid_n,
                     BM, BN, BK, INPUT_PRECISION)
    store(c_ptr, acc, M, N, stride_cm, stride_cn, pid_m, pid_n, BM, BN)


@triton.jit
def grouped_tile(tile, rows, cols, GROUP: tl.constexpr):
    """(pid_m, pid_n) of tile number ``tile`` of a rows × cols grid of tiles taken GROUP block rows at
    a time down each block column (cuda_kernels/sgemm/grouped_order.cuh): the persistent twins walk
    tile numbers themselves."""
    per_group = GROUP * cols
    first = tile // per_group * GROUP
    height = tl.minimum(rows - first, GROUP)
    return first + tile % per_group % height, tile % per_group // height


@triton.jit
def grouped_program(M, BM: tl.constexpr, GROUP: tl.constexpr):
    """(pid_m, pid_n) of this program with programs taken GROUP block rows at a time down each
    block column, so those running together share A rows and B columns in L2 (grid: axis 0 the
    block columns, axis 1 the block rows)."""
    pid = tl.program_id(1) * tl.num_programs(0) + tl.program_id(0)
    return grouped_tile(pid, tl.cdiv(M, BM), tl.num_programs(0), GROUP)


@triton.jit
def sum_ranges_by_last(acc, part_ptr, count_ptr, c_ptr, rm, rn, stride_cm, stride_cn, inside, block, pid_s, splits,
                       M, N):
    """A K range's FP32 sums (rows ``rm``, columns ``rn`` of C) when K is split: into plane ``pid_s`` of the
    workspace (M × N a plane), then counted on ``count_ptr[block]``; the block's last program to finish adds
    the planes in range order (the same sum whoever is last) into C and sets the count back to zero for
    the next launch (sgemm v5's twin, v13's; hgemm v12's, whose C in its storage type takes the
    FP32 sum rounded once by the store)."""
    plane = rm[:, None] * N + rn[None, :]
    tl.store(part_ptr + pid_s * M * N + plane, acc, mask=inside)
    tl.debug_barrier()  # every thread's partials are written before the release below
    seen = tl.atomic_add(count_ptr + block, 1, sem="acq_rel", scope="gpu")
    if seen == splits - 1:
        total = tl.zeros(acc.shape, dtype=tl.float32)
        for q in range(0, splits):  # range order: the same sum whoever is last
            total += tl.load(part_ptr + q * M * N + plane, mask=inside, other=0.0, volatile=True)
        c = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
        tl.store(c, total.to(c_ptr.dtype.element_ty), mask=inside)
        tl.store(count_ptr + block, 0)  # ready for the next launch

"""hgemm v6's launch (cuda_kernels/hgemm/06_mma_sync.cu, docs/ladders/hgemm.md v6): its shared memory, each
operand's copy width, and the tile FIT=1 fits to the shape — also the tile its Triton twin takes."""

from __future__ import annotations

from study.ops.gemm_common import HALVES, aligned_defines
from study.problem import cdiv, sm_count


def mma_smem(defines) -> int:
    """v6's dynamic shared memory: STAGES stages of A rows padded to BK + 8 halves and B rows padded to
    BN + 8 (the kernel computes the same SMEM_BYTES and traps when given less)."""
    bm, bn, bk = defines["BM"], defines["BN"], defines["BK"]
    return defines["STAGES"] * (bm * (bk + 8) + bk * (bn + 8)) * 2


def copy_width(columns: int, leading: int, tensor) -> int:
    """Halves a cp.async of one operand of v6 moves: the widest of 8, 4 and 2 (16, 8 and 4 bytes) that
    divides its row length (K for A, N for B) and leading dimension and whose bytes align its base, so a
    copy lies wholly inside or outside a row; 1 where rows are an odd number of halves apart (no cp.async
    size fits: pairs through registers, cuda_kernels/common.cuh copy_block_pairs)."""
    return next((v for v in (8, 4, 2) if columns % v == 0 and leading % v == 0 and tensor.data_ptr() % (2 * v) == 0), 1)


SMALLEST_FIT = 64  # v6's FIT halves BM and BN down to this: 2 × 2 warps of 32 × 32, one m16 × n8 pair deep at least


def fitted_tile(m: int, n: int, bm: int, bn: int, sms: int) -> tuple[int, int]:
    """v6 with FIT=1: BM × BN, or a tile of BM or BN halved (down to 64 each), whichever is largest among those
    whose count of tiles reaches the SMs; where none does, the one of most tiles, then least padding. Small
    products get tiles enough to spread over the SMs: at 222×2002×204 BF16 the declared 128 × 128 makes 32
    blocks for 132 SMs, and cuBLAS runs a 64 × 64 tile there (ncu, reports/h200/profiles/hgemm.md), as it
    does at 166×419×98."""
    tiles = [(tm, tn) for tm in (bm, bm // 2) for tn in (bn, bn // 2) if min(tm, tn) >= SMALLEST_FIT]

    def count(tile):
        return cdiv(m, tile[0]) * cdiv(n, tile[1])

    filling = [t for t in tiles if count(t) >= sms]
    if filling:
        return max(filling, key=lambda t: (t[0] * t[1], -count(t), t[0]))
    return max(tiles, key=lambda t: (count(t), -cdiv(m, t[0]) * t[0] * cdiv(n, t[1]) * t[1], t[0] * t[1]))


def copy_widths(config, tensors, out, shape, precision):
    """v6's defines: the tiled kernels' (ALIGNED, every row of A, B and C on 16 bytes), A_VEC and B_VEC, each
    operand's :func:`copy_width` — 8 wherever ALIGNED is 1 — and, with FIT=1, the tile :func:`fitted_tile`
    picks, its warps kept 2 × 2 (WM, WN half of BM, BN)."""
    a, b = tensors["A"], tensors["B"]
    defines = {**aligned_defines(HALVES)(config, tensors, out, shape, precision),
               "A_VEC": copy_width(shape["K"], a.stride(-2), a), "B_VEC": copy_width(shape["N"], b.stride(-2), b)}
    if defines.get("FIT"):
        if (defines["BM"], defines["BN"]) != (2 * defines["WM"], 2 * defines["WN"]):
            raise ValueError(f"FIT keeps 2 × 2 warps: BM = 2·WM and BN = 2·WN, not {defines}")
        bm, bn = fitted_tile(shape["M"], shape["N"], defines["BM"], defines["BN"], sm_count(out))
        defines.update(BM=bm, BN=bn, WM=bm // 2, WN=bn // 2)
    return defines

"""The mma.sync family's launches: hgemm v6's (cuda_kernels/hgemm/06_mma_sync.cu, docs/ladders/hgemm.md v6) — its
shared memory, each operand's copy width, and the tile FIT=1 fits to the shape, also the tile its Triton twin
takes — and hgemm v12's, v6's tile over K ranges (12_split_k_mma_sync.cu: its plan, launch and twin launch),
which bgemm v2 runs over a batch (cuda_kernels/bgemm/02_batched_split_k.cu). Two ops run it, so it lives here,
not in either op's module."""

from __future__ import annotations

import numpy as np
import torch

from study.backends import cuda
from study.backends.launch import Unsupported
from study.ops.gemm_common import (GRID_Z, HALVES, SPLIT_BLOCKS_PER_SM, aligned_defines, grid_rows_check,
                                   split_plan, split_workspace, tiled_args, twin_split_plans)
from study.ops.twin_configs import launch_configs
from study.paths import CUDA_DIR
from study.problem import CudaLaunch, CudaLauncher, cdiv, sm_count


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
# ... and quarters them to 32 × 32 (2 × 2 warps of 16 × 16, cuBLAS's FP16 tile at the odd suite's smallest products)
# where the halved tile's blocks (tiles × K ranges) leave a quarter of the SMs idle or more, or where 32 × 32 tiles,
# one wave of them at most, cover at most three quarters of the halved tiles' area. Measured on an H100 (the tuning
# logs of reports/h100-80gb-hbm3/experiments/v6-32x32-b4fc074/, FP16 and BF16, and
# reports/h100-80gb-hbm3/suites/README.md): v6's 32 × 32 1.3–1.4× faster than 64 × 64 at 2, 17 and 21 blocks,
# 4–12 % at 71, a tie at 128 (of 132 SMs); v12's at 4517×62×2411 0.50× cuBLAS against 0.80× at 64 × 64 with five K
# ranges (on the H200), the quarter's 284 tiles leaving K unsplit and A read twice, but 0.93× against 0.72× at
# 1045×20×3741, whose 20 columns 32 × 32 tiles cover in half the area.
QUARTER_TILE = 32
QUARTER_BELOW = 0.75


def one_range(tile) -> int:
    """v6's K ranges a tile (its whole K): what FIT weighs a tile's blocks by where no split is planned."""
    return 1


def fitted_tile(m: int, n: int, bm: int, bn: int, sms: int, ranges=one_range) -> tuple[int, int]:
    """v6 with FIT=1: BM × BN, or a tile of BM or BN halved (down to 64 each): of those whose count of tiles
    reaches the SMs, the one of fewest tiles (the largest that still fills them), then least padding — a larger
    tile that makes no fewer tiles only computes more zeros — then the taller; where none reaches them, the one of
    most tiles, then least padding; and 32 × 32 instead where that one's blocks, its tiles times the K ranges
    ``ranges(tile)`` plans for them (v12's, :func:`split_ranges`; one for v6), are fewer than QUARTER_BELOW of the
    SMs, or where 32 × 32 tiles, no more of them than SMs, cover at most QUARTER_BELOW of its padded area (bgemm
    v2's batch of 32 × 32 products on their share of one SM: 32 × 32, not 64 × 64; a larger product, whose quarter
    takes more than one wave of small tiles, keeps the halved tile). Small products get tiles enough to spread over
    the SMs: at 222×2002×204 BF16 the declared 128 × 128 makes 32 blocks for 132 SMs, and cuBLAS runs a 64 × 64 tile
    there (ncu, reports/h200/profiles/hgemm.md); in FP16 at 166×419×98 and 36×93×217 a 32 × 32 one
    (reports/h200/suites/hgemm-odd-fp16.md)."""
    tiles = [(tm, tn) for tm in (bm, bm // 2) for tn in (bn, bn // 2) if min(tm, tn) >= SMALLEST_FIT]

    def count(tile):
        return cdiv(m, tile[0]) * cdiv(n, tile[1])

    def padded(tile):
        return cdiv(m, tile[0]) * tile[0] * cdiv(n, tile[1]) * tile[1]

    filling = [t for t in tiles if count(t) >= sms]
    if filling:
        fitted = min(filling, key=lambda t: (count(t), padded(t), -t[0]))
    else:
        fitted = max(tiles, key=lambda t: (count(t), -padded(t), t[0] * t[1]))
    quarter = (QUARTER_TILE, QUARTER_TILE)
    idle = count(fitted) * ranges(fitted) < QUARTER_BELOW * sms
    less_padding = count(quarter) <= sms and padded(quarter) <= QUARTER_BELOW * padded(fitted)
    return quarter if idle or less_padding else fitted


# DEFER=1 holds an odd operand's pairs of halves in registers across a slice (cuda_kernels/hgemm/mma_sync_tile.cuh),
# on tiles of at most 64 × 128: at 128 × 128 nvcc 13.0 spills more with it (sm_90a, BF16, -Xptxas -v: v6 with both
# operands in pairs 268 → 364 bytes, v12 0 → 92, bgemm v2 176 → 388), so a 128 × 128 tile runs DEFER=0.
DEFER_LARGEST_TILE = 64 * 128


def copy_widths(config, tensors, out, shape, precision, ranges=one_range):
    """v6's defines: the tiled kernels' (ALIGNED, every row of A, B and C on 16 bytes), A_VEC and B_VEC, each
    operand's :func:`copy_width` — 8 wherever ALIGNED is 1 — and, with FIT=1, the tile :func:`fitted_tile`
    picks (a tile's K ranges ``ranges``: v12's, :func:`split_copy_widths`), its warps kept 2 × 2 (WM, WN half of
    BM, BN); DEFER kept only on tiles of at most DEFER_LARGEST_TILE."""
    a, b = tensors["A"], tensors["B"]
    defines = {**aligned_defines(HALVES)(config, tensors, out, shape, precision),
               "A_VEC": copy_width(shape["K"], a.stride(-2), a), "B_VEC": copy_width(shape["N"], b.stride(-2), b)}
    if defines.get("FIT"):
        if (defines["BM"], defines["BN"]) != (2 * defines["WM"], 2 * defines["WN"]):
            raise ValueError(f"FIT keeps 2 × 2 warps: BM = 2·WM and BN = 2·WN, not {defines}")
        # a batch's entries share the SMs (bgemm v2): each entry's tiles need reach only their share
        bm, bn = fitted_tile(shape["M"], shape["N"], defines["BM"], defines["BN"],
                             cdiv(sm_count(out), shape.get("batch", 1)), ranges)
        defines.update(BM=bm, BN=bn, WM=bm // 2, WN=bn // 2)
    if defines.get("DEFER") and defines["BM"] * defines["BN"] > DEFER_LARGEST_TILE:
        defines["DEFER"] = 0  # recorded: the tile ran without it
    return defines


# ---- v12 (and bgemm v2, over a batch): v6's tile over K ranges ------------------------------------------------

def split_mma_plan(m: int, n: int, k: int, bm: int, bn: int, bk: int, min_slices: int, sms: int,
                   batch: int = 1, per_sm: int = SPLIT_BLOCKS_PER_SM) -> tuple[int, int]:
    """v12's (splits, halves of K a range) for a BM × BN tile (FIT's, already fitted): hgemm v9's
    :func:`split_plan` over ``per_sm`` blocks an SM (the config's BLOCKS_PER_SM; v6's fitted 64 × 64 tile holds
    two an SM with both operands in pairs, three otherwise: 12_split_k_mma_sync.cu), shared by the ``batch``
    entries' tiles (bgemm v2), so the ranges are equal and none is empty; ranges of BK multiples, the last possibly
    shorter. The twins' kernels recompute the range from their grid (cdiv(cdiv(K, splits), BK) · BK), the same."""
    splits, per = split_plan(m, n, k, bm, bn, bk, min_slices, planned_blocks(sms, batch, per_sm))
    return splits, per * bk


def split_ranges(shape, config, sms: int):
    """The K ranges :func:`split_mma_plan` plans for a tile (the config's BK, MIN_SLICES and BLOCKS_PER_SM; the
    CUDA launch may cap the last by the driver's count once the tile is built): what FIT weighs a tile's blocks by."""
    batch, m, n, k = shape.get("batch", 1), shape["M"], shape["N"], shape["K"]
    return lambda tile: split_mma_plan(m, n, k, *tile, config["BK"], config["MIN_SLICES"], sms, batch,
                                       config["BLOCKS_PER_SM"])[0]


def split_copy_widths(config, tensors, out, shape, precision):
    """v12's (and bgemm v2's) defines: :func:`copy_widths`, FIT weighing each tile's blocks by its K ranges."""
    return copy_widths(config, tensors, out, shape, precision, split_ranges(shape, config, sm_count(out)))


def planned_blocks(sms: int, batch: int, per_sm: int = SPLIT_BLOCKS_PER_SM) -> int:
    """The blocks one product's tiles × ranges may fill: ``per_sm`` an SM, shared by the batch's entries."""
    return sms * per_sm // batch


def split_mma_launch(defines, tensors, out, shape, precision, kernel: str, symbol: str) -> CudaLaunch:
    """hgemm v12: v6's grid (its fitted tile, :func:`split_copy_widths`) times the plan's ranges on grid.z, the FP32
    workspace (splits planes of M rows ldp floats apart) and a counter a tile, zeroed once here: the last
    block of each tile sets its count back (cuda_kernels/hgemm/12_split_k_mma_sync.cu). bgemm v2 (a ``batch`` in
    the shape): grid.z = batch × splits, an entry's planes and counters together, ``splits`` among the
    arguments (cuda_kernels/bgemm/02_batched_split_k.cu). ``kernel`` and ``symbol``: the rung's file (under
    cuda_kernels/) and kernel, whose build :func:`cuda.resident_blocks` asks the driver about."""
    batch, m, n, k = shape.get("batch", 1), shape["M"], shape["N"], shape["K"]
    bm, bn, threads, smem = defines["BM"], defines["BN"], defines["THREADS"], mma_smem(defines)
    # The plan's blocks an SM: BLOCKS_PER_SM, capped by what the driver says this build holds (its registers vary
    # with the copy widths: at 64 × 64 three, two with both operands in pairs), so that a plan meant to fill one
    # wave of blocks never asks for a second.
    resident = cuda.resident_blocks(CUDA_DIR / kernel, symbol, defines, threads, smem)
    if resident < 1:
        raise Unsupported(f"the driver fits no block of {threads} threads and {smem} bytes of shared memory an SM")
    per_sm = min(defines["BLOCKS_PER_SM"], resident)
    splits, split_k = split_mma_plan(m, n, k, bm, bn, defines["BK"], defines["MIN_SLICES"], sm_count(out), batch,
                                     per_sm)
    ldp = split_workspace(n)
    partial = torch.empty(batch * splits * m * ldp if splits > 1 else 1, dtype=torch.float32, device=out.device)
    counter = torch.zeros(batch * cdiv(m, bm) * cdiv(n, bn), dtype=torch.int32, device=out.device)
    args = (*tiled_args(tensors, out, shape), *((np.int32(splits),) if "batch" in shape else ()), np.int32(split_k),
            cuda.as_cupy(partial), np.int32(ldp), cuda.as_cupy(counter))
    return CudaLaunch(grid=(cdiv(n, bn), cdiv(m, bm), batch * splits), block=(threads, 1, 1), args=args, smem=smem,
                      facts={"BM": bm, "BN": bn, "splits": splits, "split_k": split_k, "blocks_per_sm": per_sm},
                      keep=(partial, counter))


def batch_grid_check(params, shape, precision) -> str | None:
    """v6's grid rows (grid.y) and, with a batch, its entries on grid.z (splits only where the batch is small)."""
    reason = grid_rows_check(params, shape, precision)
    if reason is None and shape.get("batch", 1) > GRID_Z:
        return f"batch={shape['batch']} is beyond the {GRID_Z} entries one launch's grid.z can hold"
    return reason


def split_mma_launcher(kernel: str, symbol: str) -> CudaLauncher:
    """v12's launch (:func:`split_mma_launch`) for the rung whose file and kernel these are."""
    return CudaLauncher(launch=lambda *case: split_mma_launch(*case, kernel, symbol), check=batch_grid_check,
                        defines=split_copy_widths)


SPLIT_MMA = split_mma_launcher("hgemm/12_split_k_mma_sync.cu", "hgemm_v12_split_k_mma_sync")
BATCHED_SPLIT_MMA = split_mma_launcher("bgemm/02_batched_split_k.cu", "bgemm_v2_batched_split_k")


def split_mma_twin_launch(kernel, tensors, out, shape, config, precision):
    """v12's twin (bgemm v2's, with a ``batch``): v6's twin's tile (fitted where the config says FIT=1, counting
    the batch's tiles; under ``triton.autotune`` the space's points as written), each config's plan and a
    workspace for the largest (:func:`twin_split_plans` over the blocks :func:`split_mma_plan` plans for), and a
    counter for the most tiles; the grid's third axis the ranges (entry · splits + range). Its plan fills the
    config's BLOCKS_PER_SM an SM: the CUDA rung caps that by what the driver says its build holds, which
    Triton's build need not match and which is not asked of it, so the plans differ where the cap binds."""
    a, b = tensors["A"], tensors["B"]
    batch, m, n, k = shape.get("batch", 1), shape["M"], shape["N"], shape["K"]
    sms = sm_count(out)
    meta = dict(config)
    if meta.get("FIT"):
        meta["BM"], meta["BN"] = fitted_tile(m, n, meta["BM"], meta["BN"], cdiv(sms, batch),
                                             split_ranges(shape, meta, sms))
    # split_mma_plan's split_plan, per config (the kernel's planes are M × N, inside the M × ldp the workspace holds)
    plan, _, partial = twin_split_plans(kernel, meta, m, n, k, sms, out.device, batch=batch,
                                        blocks=lambda cfg: planned_blocks(sms, batch, cfg["BLOCKS_PER_SM"]))
    tiles = max(cdiv(m, t["BM"]) * cdiv(n, t["BN"]) for t in launch_configs(kernel, meta, "BM"))
    counter = torch.zeros(batch * tiles, dtype=torch.int32, device=out.device)
    entries = [t.stride(0) for t in (a, b, out)] if "batch" in shape else []

    def grid(cfg):
        return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]), batch * plan(cfg)[0])

    def fn():
        kernel[grid](a, b, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                     out.stride(-2), out.stride(-1), *entries, partial, counter,
                     *((batch,) if "batch" in shape else ()), **meta)

    fn.facts = {"BM": meta["BM"], "BN": meta["BN"], "splits": plan(meta)[0]} if "BM" in meta else {}
    return fn

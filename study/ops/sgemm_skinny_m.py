"""sgemm v13: a decode step's few rows of A on the FFMA pipe as one streaming pass over B
(cuda_kernels/sgemm/13_skinny_m.cu, docs/ladders/sgemm.md v13) — its rows fitted to M, the plan of its K
ranges, its launch and its Triton twin's (triton_kernels/sgemm.py, ``sgemm_skinny_m``)."""

from __future__ import annotations

import numpy as np
import torch

from study.backends import cuda
from study.backends.launch import Unsupported
from study.ops.gemm_common import FLOATS, GRID_Y, aligned_defines, tiled_args
from study.ops.twin_configs import launch_configs
from study.paths import CUDA_DIR
from study.problem import CudaLaunch, CudaLauncher, cdiv, out_of_scope, sm_count

# ROWS rows of A a block, the smallest of SKINNY_ROWS that holds M (M > 32: row groups of 32, each a pass
# over B); M > SKINNY_MAX_M is left to the tile rungs. A range of K is at least SKINNY_MIN_RANGE rows
# (shorter ones are mostly staging and sums) and at most what A_FLOATS of shared memory hold of A's slice.
SKINNY_ROWS = (1, 2, 4, 8, 16, 32)
SKINNY_MAX_M = 64
SKINNY_MIN_RANGE = 64
# What a block costs beside its rows of B, in rows of B, for the plan's model: staging A's slice, the warps'
# sums, a plane written and read. A modelling constant (not fitted): it makes the plan take one full wave
# of longer ranges over two waves of ranges barely shorter.
SKINNY_BLOCK_ROWS = 64
KERNEL, SYMBOL = CUDA_DIR / "sgemm" / "13_skinny_m.cu", "sgemm_v13_skinny_m"  # resident_blocks compiles it


def skinny_rows(m: int) -> int:
    """v13's ROWS for M rows of A: the smallest of SKINNY_ROWS that holds them, else the largest."""
    return next((r for r in SKINNY_ROWS if r >= m), SKINNY_ROWS[-1])


def longest_range(a_floats: int, rows: int) -> int:
    """The longest range of K whose slice of ROWS rows of A fits A_FLOATS floats of shared memory (a multiple of 4)."""
    return max(4, a_floats // rows // 4 * 4)


def skinny_smem(rows: int, split_k: int, threads: int, cols: int) -> int:
    """v13's dynamic shared memory: A's slice (ROWS × a range), or the warps' sums of one row after the pass."""
    return 4 * max(rows * split_k, threads // 32 * cols)


def skinny_plan(m: int, n: int, k: int, rows: int, cols: int, a_floats: int, blocks_per_sm: int,
                sms: int) -> tuple[int, int]:
    """(splits, split_k) for v13 and its twin: K cut into ranges of split_k rows (a multiple of 4; the last
    may be shorter), at most A_FLOATS / ROWS rows each (A's slice in shared memory) and at most
    cdiv(K, SKINNY_MIN_RANGE) of them, their count the one whose waves of column blocks × row groups ×
    ranges, ``blocks_per_sm`` a SM at once, take the least time by a model: each wave as long as its
    ranges, plus SKINNY_BLOCK_ROWS. A block count just past a whole wave costs a second one: the first plan
    asked for cdiv(SMs · blocks a SM, blocks) ranges, which overshoots a wave (1×4096×4096: 32 × 17 = 544
    blocks for 528 places), and assumed 4 blocks a SM where 16 rows fit 2 (16×4096×4096: 17 × 32 = 544
    blocks, three waves of 264, the last 6 % full). split_k is then cdiv(K, splits) rounded up to 4 at a
    split count that leaves no range empty, which the twin recomputes from its grid
    (``tl.num_programs(1)``): given the same blocks a SM, both split alike."""
    longest = longest_range(a_floats, rows)
    blocks, places = cdiv(n, cols) * cdiv(m, rows), sms * blocks_per_sm
    fewest = cdiv(k, longest)

    def cost(splits):
        return cdiv(blocks * splits, places) * (cdiv(cdiv(k, splits), 4) * 4 + SKINNY_BLOCK_ROWS)

    splits = min(range(fewest, max(fewest, cdiv(k, SKINNY_MIN_RANGE)) + 1), key=lambda s: (cost(s), s))
    while True:  # fewer splits while the rounded ranges cover K in fewer; split_k never grows past `longest`
        split_k = cdiv(cdiv(k, splits), 4) * 4
        if cdiv(k, split_k) == splits:
            return splits, split_k
        splits = cdiv(k, split_k)


def skinny_defines(config, tensors, out, shape, precision):
    """v13's defines: the tiled kernels' (the config, the storage macro, ALIGNED), ROWS fitted to M."""
    return {**aligned_defines(FLOATS)(config, tensors, out, shape, precision), "ROWS": skinny_rows(shape["M"])}


def skinny_check(params, shape, precision) -> str | None:
    if shape["M"] > SKINNY_MAX_M:
        return out_of_scope(f"v13 is for M ≤ {SKINNY_MAX_M} (a pass over B for each {SKINNY_ROWS[-1]} rows of A); "
                            f"M={shape['M']}: v7–v12 tile larger M")
    return None


def skinny_launch(defines, tensors, out, shape, precision):
    """v13: the pointer kernels' arguments (:func:`tiled_args`), split_k, the FP32 workspace of the ranges'
    planes (M × N each) and a zeroed count a column block of the ranges done, reset by the kernel after its
    sum; the grid column blocks × ranges × row groups; A's slice (or the warps' sums of a row) in shared
    memory."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    if shape.get("batch", 1) != 1:
        raise Unsupported("sgemm v13 computes one product: its grid.z holds the row groups")
    if a.stride(-1) != 1 or b.stride(-1) != 1:
        raise Unsupported(f"v13 reads rows of A and B's contiguous elements; column strides {a.stride(-1)} "
                          f"and {b.stride(-1)}")
    rows, cols, threads = defines["ROWS"], defines["COLS"], defines["THREADS"]
    # The blocks an SM holds at once, as the driver counts them from this build's registers (at 256 threads
    # 64 at one row: 4; 97–128 at 8 or 16 rows: 2; 252 at 32: 1) and the largest slice of A; BLOCKS_PER_SM
    # caps it (autotune's points ask for fewer, longer ranges).
    most = skinny_smem(rows, longest_range(defines["A_FLOATS"], rows), threads, cols)
    resident = cuda.resident_blocks(KERNEL, SYMBOL, defines, threads, most)
    if resident < 1:
        raise Unsupported(f"the driver fits no block of {threads} threads and {most} bytes of shared memory an SM")
    per_sm = min(defines["BLOCKS_PER_SM"], resident)
    splits, split_k = skinny_plan(m, n, k, rows, cols, defines["A_FLOATS"], per_sm, sm_count(out))
    if splits > GRID_Y:
        raise Unsupported(f"K={k} needs {splits} ranges of {split_k} rows, more than grid.y's {GRID_Y}")
    grid = (cdiv(n, cols), splits, cdiv(m, rows))
    partial = torch.empty(splits * m * n if splits > 1 else 1, dtype=torch.float32, device=out.device)
    column_done = torch.zeros(grid[0] * grid[2] if splits > 1 else 1, dtype=torch.int32, device=out.device)
    args = (*tiled_args(tensors, out, shape), np.int32(split_k), cuda.as_cupy(partial), cuda.as_cupy(column_done))
    smem = skinny_smem(rows, split_k, threads, cols)
    return CudaLaunch(grid=grid, block=(threads, 1, 1), args=args, smem=smem,
                      facts={"rows": rows, "splits": splits, "split_k": split_k, "blocks_per_sm": per_sm},
                      keep=(partial, column_done))


SKINNY_M = CudaLauncher(launch=skinny_launch, defines=skinny_defines, check=skinny_check)


# ---- the Triton twin's launch ---------------------------------------------------------------------------

def skinny_twin_launch(kernel, tensors, out, shape, config, precision):
    """v13's twin: ROWS fitted to M (:func:`skinny_rows`), the CUDA rung's plan of the config's columns (under
    autotune each config's own, worked out here once), a workspace for the largest plan and counts for the
    most column blocks, the grid column blocks × ranges × row groups. Its waves are of the config's
    BLOCKS_PER_SM blocks a SM: the CUDA rung counts what the driver says its build holds (2 at 8 or 16
    rows), which Triton's build need not match and which is not asked of it here, so the two plans differ
    where that count is below BLOCKS_PER_SM (16×4800×1600: 6 ranges against the twin's 13)."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    rows, sms = skinny_rows(m), sm_count(out)
    configs = launch_configs(kernel, config, "COLS")

    def key(cfg):
        return cfg["COLS"], cfg["A_FLOATS"], cfg["BLOCKS_PER_SM"]

    plans = {key(c): skinny_plan(m, n, k, rows, *key(c), sms) for c in configs}
    partial = torch.empty(max(s for s, _ in plans.values()) * m * n, dtype=torch.float32, device=out.device)
    counter = torch.zeros(max(cdiv(n, c["COLS"]) for c in configs) * cdiv(m, rows), dtype=torch.int32,
                          device=out.device)

    def grid(cfg):
        return cdiv(n, cfg["COLS"]), plans[key(cfg)][0], cdiv(m, rows)

    def fn():
        kernel[grid](a, b, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1), out.stride(-2),
                     out.stride(-1), partial, counter, ROWS=rows, **config)

    # The plan where the config fixes it; under triton.autotune (config {}) each point plans its own.
    fn.facts = {"rows": rows}
    if "COLS" in config:
        splits, split_k = plans[key(config)]
        fn.facts.update(splits=splits, split_k=split_k)
    return fn


def skinny_twin_check(shape, precision) -> str | None:
    return skinny_check(None, shape, precision)

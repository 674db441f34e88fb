"""SGEMM: C = A·B in FP32, A (M×K) and B (K×N) row-major unless a rung says otherwise.

The ladder is the seed's FP32 ladder (docs/ladders/sgemm.md): v0 naive with column-major
B → v1 coalesced → v2 shared-memory tiling → v3 register micro-tile → v4 cp.async double
buffering, then past the seed: v5 split-K for skinny shapes → v6 warp tiling → v7 deeper
pipeline and grouped block order → v8 3xTF32 (FP32-accurate tensor-core emulation, recorded
as math ``3xtf32``) → v9 split-K on v7's tile → v10 the same split with its sum as a second kernel
over all of C → v11 3xTF32 on wgmma (Cᵀ = Bᵀ·Aᵀ, so that A is the K-major shared operand TF32 wgmma
needs) → v12 v11 over split-K units (hgemm v9's plan and ordered sum), its tile height fitted to a
few rows of M → v13 a decode step's few rows on the FFMA pipe, one streaming pass over B. A rung is one
line below; its kernel file and its Triton twin hold the rest.

Correctness gate. Each element's error is divided by ``(|A|·|B|)_ij``, the scale of
the classic dot-product error bound |fl(a·b) − a·b| ≤ γ_K·(|a|·|b|). With inputs
uniform in [−1, 1), an FP32 kernel's rounding gives about 3e-8 of that scale per
element whatever K is (and a few times that at the maximum over millions of
elements), whereas TF32 operands give more than 1e-5 at K ≤ 4096. The tolerance
2e-6 therefore passes any FP32 summation order by a wide margin and fails a kernel
that silently used TF32: "FP32" in a report means FP32.

TF32 (``--dtype tf32``: FP32 storage, operands rounded to TF32 by the tensor cores) is judged on
another scale, ``sqrt((A∘A)·(B∘B))_ij``, the root-sum-square of the products: operand rounding
errors of random sign add like a random walk, so measured against it they no longer shrink as
K grows (against |A|·|B| they do, which lets no fixed tolerance tell TF32 from BF16 operands at
every K). Simulated on the CPU at 1×1×1 … 64×64×65536 (docs/ladders/sgemm.md): operands rounded
to TF32 reach 1.4e-3 of it, truncated to TF32 3.7e-3, rounded to BF16 6.7e-3 to 1.1e-2 (all but
a lone 1×1×1 product, 1.7e-3). The tolerance 5e-3 passes either TF32 conversion and fails BF16.
"""

from __future__ import annotations

import numpy as np
import torch

from study.backends import cuda
from study.ops.gemm_common import (BASELINES, FLOATS, FP32_TOLERANCE, GRID_Z, SPLIT_BLOCKS_PER_SM, Gemm,
                                   aligned_defines, ffma_warp_tile_smem, fp32_bytes_needed, grid_rows_check, no_smem,
                                   reduce_after_tuned_partials as reduce_after_tuned_splits, reduce_splits, tiled,
                                   tiled_args, tiled_twin_launch, twin_split_plans)
from study.ops.sgemm_skinny_m import SKINNY_M, skinny_twin_check, skinny_twin_launch
from study.ops.sgemm_wgmma import SPLIT_WGMMA, WGMMA, fitted_height
from study.ops.tma_staging import pointer_staged_operands
from study.precision import FP32, TF32
from study.problem import CudaLaunch, CudaLauncher, KernelCall, cdiv, sm_count
from study.registry import Rung, register, twin
from triton_kernels import sgemm as tk

# v11 and v12 (study/ops/sgemm_wgmma.py): A and B arrive by TMA, whose one map reads rows 16 bytes apart by a
# multiple (K and N multiples of 4 floats; else A's residue maps, B staged).
TMA_FLOATS = {"N": FLOATS, "K": FLOATS}
REDUCE_SYMBOL = "sgemm_v10_reduce_ranges"  # v10's second kernel, in its own file

# The split-K plan of v5 and v9: enough blocks for two per SM (SPLIT_BLOCKS_PER_SM: v5's launch bounds;
# v9's tiles hold one to three), each K range at least four BK slices long (a shorter range is mostly
# pipeline fill and reduction).
MIN_SLICES_PER_SPLIT = 4


def split_k_plan(m: int, n: int, k: int, bm: int, bn: int, bk: int, sms: int) -> tuple[int, int]:
    """(splits, split_k) for v5, v9 and their twins: K is cut into ``splits`` ranges of ``split_k``
    (a multiple of ``bk``; the last may be shorter) when the M×N tiles alone give fewer than
    SPLIT_BLOCKS_PER_SM blocks per SM; split_k is cdiv(K, splits) rounded up to ``bk``, which
    the Triton twin recomputes from its grid, so both split alike."""
    tiles = cdiv(m, bm) * cdiv(n, bn)
    want = max(1, cdiv(sms * SPLIT_BLOCKS_PER_SM, tiles))
    splits = max(1, min(want, k // (bk * MIN_SLICES_PER_SPLIT), GRID_Z))
    splits = cdiv(k, cdiv(cdiv(k, splits), bk) * bk)  # no empty range
    return splits, cdiv(cdiv(k, splits), bk) * bk


def tensor_warp_tile_smem(defines) -> int:
    """v8's dynamic shared memory: STAGES stages of A rows padded by 8 floats and B rows by 4
    (08_3xtf32.cu, which computes the same SMEM_BYTES and traps when given less)."""
    bm, bn, bk = defines["BM"], defines["BN"], defines["BK"]
    return defines.get("STAGES", 2) * (bm * (bk + 8) + bk * (bn + 4)) * 4


class SGEMM(Gemm):
    name = "sgemm"
    precisions = (FP32, TF32)
    default_precisions = ("fp32",)
    headline_shapes = ({"M": 4096, "N": 4096, "K": 4096},)  # the seed ladder's shape
    default_shapes = ({"M": 4096, "N": 4096, "K": 4096}, {"M": 1000, "N": 1500, "K": 1700})
    # Past 64- and 128-wide tiles and BK = 16 and 32 (the scalar paths); the same with every row
    # 16-byte aligned (the float4/cp.async paths); K = 1 (a column-major B's columns are 1 apart);
    # a long K on few tiles (v5's K ranges, partials and ordered reduction, scalar and 16-byte).
    sanitize_shapes = ({"M": 67, "N": 131, "K": 33}, {"M": 68, "N": 132, "K": 36}, {"M": 3, "N": 129, "K": 1},
                       {"M": 5, "N": 7, "K": 1000}, {"M": 68, "N": 132, "K": 1024})
    tolerance = FP32_TOLERANCE  # the module docstring derives them

    def bytes_needed(self, shape, precision) -> int:
        return fp32_bytes_needed(self.batch(shape), shape["M"], shape["N"], shape["K"])


# ---- launchers ---------------------------------------------------------------------------------------

def split_k(smem, reduce_kernel: bool) -> CudaLauncher:
    """v5, v9 (``reduce_kernel`` False: the last block of each tile adds its partials, a counter per
    tile) and v10 (True: the sum is a second kernel over all of C): the tiled launch with the K ranges
    on grid.z and a workspace of partial tiles; ``smem(defines)`` as :func:`tiled`'s."""
    def launch(defines, tensors, out, shape, precision):
        m, n, k = shape["M"], shape["N"], shape["K"]
        if shape.get("batch", 1) != 1:
            raise ValueError("the split-K rung computes one product: its grid.z holds the K ranges")
        splits, split_k = split_k_plan(m, n, k, defines["BM"], defines["BN"], defines["BK"], sm_count(out))
        partial = torch.empty(splits * m * n if splits > 1 else 1, dtype=torch.float32, device=out.device)
        args, after = tiled_args(tensors, out, shape) + [np.int32(split_k), cuda.as_cupy(partial)], ()
        grid = (cdiv(n, defines["BN"]), cdiv(m, defines["BM"]), splits)
        if reduce_kernel and splits > 1:
            cols = defines["REDUCE_THREADS"] // defines["REDUCE_GROUPS"]
            reduce = CudaLaunch(grid=(cdiv(m * n, cols), 1, 1), block=(defines["REDUCE_THREADS"], 1, 1),
                                args=(cuda.as_cupy(partial), cuda.as_cupy(out, padded_rows=True), np.int32(m),
                                      np.int32(n), np.int32(out.stride(-2)), np.int32(splits)))
            after = (KernelCall(None, REDUCE_SYMBOL, defines, reduce),)
        elif not reduce_kernel:
            counter = torch.zeros(grid[0] * grid[1], dtype=torch.int32, device=out.device)
            args.append(cuda.as_cupy(counter))
        return CudaLaunch(grid=grid, block=(defines["THREADS"], 1, 1), args=tuple(args), smem=smem(defines),
                          facts={"splits": splits, "split_k": split_k}, after=after)

    return CudaLauncher(launch=launch, check=grid_rows_check, defines=aligned_defines(FLOATS))


TILED = tiled()                                  # v0–v4: static shared memory
WARP_TILED = tiled(ffma_warp_tile_smem)          # v6, v7: FFMA warp tiles in dynamic shared memory
TENSOR_TILED = tiled(tensor_warp_tile_smem)      # v8: mma.sync warp tiles
SPLIT_K = split_k(no_smem, reduce_kernel=False)                   # v5
SPLIT_K_MULTISTAGE = split_k(ffma_warp_tile_smem, reduce_kernel=False)  # v9: v7's tile
SPLIT_K_TWO_PASS = split_k(ffma_warp_tile_smem, reduce_kernel=True)     # v10
# ---- the Triton twins' launches -------------------------------------------------------------------

def own_math_twin_launch(kernel, tensors, out, shape, config, precision):
    """The twins whose kernel fixes its math, so that no launch can change it: the naive ones (v0, v1,
    FFMA element by element) and the 3xTF32 ones (v8, v11, ``tl.dot`` in tf32x3): no input precision."""
    return tiled_twin_launch(kernel, tensors, out, shape, config, precision, input_precision=False)


def pointer_twin_staging(shape: dict, bm: int) -> tuple:
    """The operands a 3xTF32 pointer twin of tile height ``bm`` stages where Triton cannot load their rows 16
    bytes a lane: A always; B only where more than one row tile reads it. A copy costs a read and a write of the
    operand at every launch. Unstaged, the twins read a misaligned A, even once, at a fraction of the memory's
    rate (v12's at 4517×62×2411: 0.196 ms on the H200, reports/h200/suites/sgemm-odd.md; staged 0.118 ms on an
    H100, reports/h100-80gb-hbm3/suites/sgemm-odd.md; cuBLAS 0.054 on both), but a B read once at 1.4 TB/s:
    at 11×2473×16329 (M = 11, one row tile) copying its 161 MB took v12's twin from 0.117 to 0.227 ms (cuBLAS
    0.112 on both cards)."""
    return ("A", "B") if cdiv(shape["M"], bm) > 1 else ("A",)


def staged_own_math_twin_launch(kernel, tensors, out, shape, config, precision):
    """v11's twin: :func:`own_math_twin_launch` on A and B as Triton loads them 16 bytes a lane, staged rows where
    theirs are not and :func:`pointer_twin_staging` says the copy pays (study/ops/tma_staging.py
    ``pointer_staged_operands``), copied inside the timed call as the CUDA rung stages what TMA cannot read.
    Unstaged, the twin ran 0.26–0.35× cuBLAS FP32 at the odd suite's large products, whose A or B rows are no
    multiple of 16 floats long (1199×1726×1463, 2715×772×730, 1689×2805×11411; reports/h200/suites/sgemm-odd.md),
    and 1.47× at 4096³ (reports/h200/sgemm-ladder.md)."""
    a, b, copy = pointer_staged_operands(tensors["A"], tensors["B"], pointer_twin_staging(shape, config["BM"]))
    run = own_math_twin_launch(kernel, {**tensors, "A": a, "B": b}, out, shape, config, precision)

    def fn():
        copy()
        run()

    fn.facts = copy.facts
    return fn


def split_k_twin_launch(kernel, tensors, out, shape, config, precision, two_pass: bool = False):
    """The split twins (v5/v9's, v10's with ``two_pass``): the same split_k_plan from the config's tile
    (under autotune, each config's own, planned here once, not at every launch), a workspace sized for
    the largest plan of the twin's space; v5/v9's counters, or v10's reduction kernel after the
    partials."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    meta = {**config, "INPUT_PRECISION": precision.triton_input_precision}
    sms = sm_count(out)
    configs = [meta] + list(getattr(kernel, "configs", []))
    tiles = [(c.kwargs if hasattr(c, "kwargs") else c) for c in configs]
    splits_of = {(t["BM"], t["BN"], t["BK"]): split_k_plan(m, n, k, t["BM"], t["BN"], t["BK"], sms)[0]
                 for t in tiles if "BM" in t}
    partial = torch.empty(max(splits_of.values()) * m * n, dtype=torch.float32, device=out.device)

    def splits(cfg):
        return splits_of[(cfg["BM"], cfg["BN"], cfg["BK"])]

    def grid(cfg):
        return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]), splits(cfg))

    if two_pass:  # v10's twin: partials, then the reduction kernel
        def fn():
            kernel[grid](a, b, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                         out.stride(-2), out.stride(-1), partial, **meta)
            # The plan the launch just used: under triton.autotune, the tuned config's tile.
            best = getattr(kernel, "best_config", None)
            reduce_partials(partial, out, m, n, out.stride(-2), splits(best.kwargs if best is not None else meta))

        return fn
    counter = torch.zeros(max(cdiv(m, t["BM"]) * cdiv(n, t["BN"]) for t in tiles if "BM" in t),
                          dtype=torch.int32, device=out.device)

    def fn():
        kernel[grid](a, b, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                     out.stride(-2), out.stride(-1), partial, counter, **meta)

    return fn


def two_pass_twin_launch(kernel, tensors, out, shape, config, precision):
    return split_k_twin_launch(kernel, tensors, out, shape, config, precision, two_pass=True)


def reduce_partials(partial, out, m, n, stride_cm, splits):
    """v10's twin, second pass: the ``splits`` partial planes summed into C (nothing when K was not split)."""
    if splits > 1:
        tk.reduce_ranges[(cdiv(m * n, tk.REDUCE_COLS),)](partial, out, m, n, stride_cm, splits,
                                                         COLS=tk.REDUCE_COLS, GROUPS=tk.REDUCE_GROUPS)


def reduce_after_tuned_partials(nargs, exception=None):
    """v10's twin under ``triton.autotune``: each config's partials are summed inside the timed call
    (its ``post_hook``), as the rung's closure does after the tuned config, so that tuning ranks whole
    two-pass runs, as the CUDA tuner does, not the first kernel alone."""
    if exception is None:
        m, n, k = nargs["M"], nargs["N"], nargs["K"]
        splits, _ = split_k_plan(m, n, k, nargs["BM"], nargs["BN"], nargs["BK"], sm_count(nargs["c_ptr"]))
        reduce_partials(nargs["part_ptr"], nargs["c_ptr"], m, n, nargs["stride_cm"], splits)


def fitted_twin_config(config, shape: dict, sms: int) -> dict:
    """v12's twin's meta-parameters: the config, BM fitted where it says FIT=1 (:func:`fitted_height` over
    the heights of the twin's space, the CUDA rung's rule)."""
    if not config.get("FIT"):
        return dict(config)
    return {**config, "BM": fitted_height(shape, {p["BM"] for p in tk.SPLIT_TENSOR_SPACE}, config, sms)}


def split_tensor_twin_launch(kernel, tensors, out, shape, config, precision):
    """v12's twin: pointers as v11's twin (A and B staged as there, B by the fitted height's row tiles), BM fitted
    (:func:`fitted_twin_config`), hgemm v9's plan of the config's tile (under autotune each config's own, worked
    out here once), a workspace for the largest plan, NUM_SMS programs, and hgemm's ordered reduction after the
    partials when the plan that ran has two splits or more (under autotune,
    :func:`study.ops.gemm_common.reduce_after_tuned_partials`)."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    sms = sm_count(out)
    meta = fitted_twin_config(config, shape, sms)
    a, b, copy = pointer_staged_operands(tensors["A"], tensors["B"], pointer_twin_staging(shape, meta["BM"]))
    plan, ldp, partial = twin_split_plans(kernel, meta, m, n, k, sms, out.device)

    def grid(cfg):
        return (min(cdiv(m, cfg["BM"]) * cdiv(n, cfg["BN"]) * plan(cfg)[0], sms),)

    def fn():
        copy()
        kernel[grid](a, b, out, partial, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                     out.stride(-2), out.stride(-1), ldp, sms, **meta)
        best = getattr(kernel, "best_config", None)  # under triton.autotune, the config that just ran
        reduce_splits(partial, out, m, n, ldp, out.stride(-2), plan(best.kwargs if best is not None else meta)[0])

    fn.facts = {**copy.facts, **({"BM": meta["BM"], "splits": plan(meta)[0], "slices_per_split": plan(meta)[1]}
                                 if "BM" in meta else {})}
    return fn


def tiled_twin(kernel, fixed, space, **kw):
    return twin(kernel, fixed, space, launch=tiled_twin_launch, **kw)


# The naive twins multiply and add element by element: FFMA, never tensor cores, so FP32 only (a
# "tf32" record of theirs would be FP32 arithmetic under a TF32 label). The CUDA rungs declare
# the same in their headers (the default, fp32).
FFMA_ONLY = ("fp32",)

register(
    SGEMM(),
    rungs=[
        Rung("v0_naive_colmajor_b", "one thread per output, B column-major",
             "— (the baseline: a warp's B reads are K·4 bytes apart, uncoalesced)",
             cuda="00_naive_colmajor_b.cu", launch=TILED,
             triton=twin(tk.sgemm_naive, tk.V0_NAIVE_COLMAJOR_B, tk.NAIVE_SPACE, launch=own_math_twin_launch,
                         precisions=FFMA_ONLY),
             layout={"B": "col"}),
        Rung("v1_naive", "B row-major: a warp reads 32 consecutive floats", "uncoalesced global loads",
             cuda="01_naive.cu", launch=TILED,
             triton=twin(tk.sgemm_naive, tk.V1_NAIVE, tk.NAIVE_SPACE, launch=own_math_twin_launch,
                         precisions=FFMA_ONLY)),
        Rung("v2_smem_tiling", "64×64×16 tiles in shared memory, float4 global→shared copies",
             "re-reading every operand from global memory", cuda="02_smem_tiling.cu", launch=TILED,
             triton=tiled_twin(tk.sgemm_tiled, tk.V2_SMEM_TILING, tk.SINGLE_BUFFER_SPACE)),
        Rung("v3_register_tile", "128×128×16 tile, 8×8 outputs per thread, float4 shared loads, 64 accumulators",
             "too many shared-memory loads per FFMA", cuda="03_register_tile.cu", launch=TILED,
             triton=tiled_twin(tk.sgemm_tiled, tk.V3_REGISTER_TILE, tk.SINGLE_BUFFER_SPACE)),
        Rung("v4_double_buffer", "cp.async double buffering: load tile k+1 while computing tile k",
             "waiting at the barrier for each tile's loads", cuda="04_double_buffer.cu", launch=TILED,
             triton=tiled_twin(tk.sgemm_tiled, tk.V4_DOUBLE_BUFFER, tk.DOUBLE_BUFFER_SPACE)),
        Rung("v5_split_k", "split-K: K ranges on extra blocks when the M×N tiles are too few, ordered last-block "
             "reduction", "idle SMs on skinny shapes (small M·N, long K)", cuda="05_split_k.cu", launch=SPLIT_K,
             triton=twin(tk.sgemm_split_k, tk.V5_SPLIT_K, tk.DOUBLE_BUFFER_SPACE, launch=split_k_twin_launch)),
        Rung("v6_warp_tile", "warp tiling: a warp owns a 32×64 sub-tile, its lanes 8×8 outputs each; 8×16 "
             "thread tiles in the space", "shared-memory reads spread over the block's width; issue slots "
             "spent on loads", cuda="06_warp_tile.cu", launch=WARP_TILED,
             triton=tiled_twin(tk.sgemm_tiled, tk.V6_WARP_TILE, tk.DOUBLE_BUFFER_SPACE)),
        Rung("v7_multistage", "3–4 cp.async stages, blocks grouped 8 block rows at a time for L2 reuse",
             "load latency two stages leave exposed; L2 misses of the launch order", cuda="07_multistage.cu",
             launch=WARP_TILED, triton=tiled_twin(tk.sgemm_grouped, tk.V7_MULTISTAGE, tk.MULTISTAGE_SPACE)),
        Rung("v8_3xtf32", "3xTF32: FP32 operands split into TF32 hi + lo, three mma.sync m16n8k8 products "
             "(FP32-accurate tensor-core emulation)", "the FFMA pipe's ceiling", cuda="08_3xtf32.cu",
             launch=TENSOR_TILED,
             triton=twin(tk.sgemm_3xtf32, tk.V8_3XTF32, tk.TENSOR_SPACE, launch=own_math_twin_launch,
                         precisions=("fp32",)),  # the FP32 problem
             math={"fp32": "3xtf32"}),
        Rung("v9_split_k_multistage", "v5's split-K and ordered reduction on v7's warp-tiled multi-stage tile, "
             "64-row tiles in the space", "v5's half-empty 128-row tiles and v4 inner loop on skinny shapes",
             cuda="09_split_k_multistage.cu", launch=SPLIT_K_MULTISTAGE,
             triton=twin(tk.sgemm_split_k, tk.V9_SPLIT_K_MULTISTAGE, tk.SPLIT_MULTISTAGE_SPACE,
                         launch=split_k_twin_launch)),
        Rung("v10_split_k_two_pass", "v9's K ranges into partial tiles, then a second kernel sums them over all of C "
             "(fixed order: strided range groups, then the groups in order)",
             "v9's reduction by one block per tile while the other SMs idle", cuda="10_split_k_two_pass.cu",
             launch=SPLIT_K_TWO_PASS,
             triton=twin(tk.sgemm_split_k_partials, tk.V10_SPLIT_K_TWO_PASS, tk.TWO_PASS_SPACE,
                         launch=two_pass_twin_launch, post_hook=reduce_after_tuned_partials)),
        Rung("v11_3xtf32_wgmma", "3xTF32 on wgmma: Cᵀ = Bᵀ·Aᵀ, B's fragments split in registers, A split once "
             "per stage by a producer warpgroup (FP32-accurate tensor-core emulation)", "v8's legacy mma.sync path and "
             "its per-warp splits", cuda="11_3xtf32_wgmma.cu", launch=WGMMA, multiples=TMA_FLOATS,
             triton=twin(tk.sgemm_3xtf32_transposed, tk.V11_3XTF32_WGMMA, tk.TENSOR_SPACE,
                         launch=staged_own_math_twin_launch, precisions=("fp32",)),
             math={"fp32": "3xtf32"}),
        Rung("v12_3xtf32_split_k", "v11 over tiles × K ranges where the tiles are fewer than the SMs (hgemm v9's plan), "
             "FP32 partial planes summed in order by a second kernel; A's tile height (wgmma's N) fitted to M ≤ 64: "
             "16, 32 or 64 rows", "v11's idle SMs on products of few tiles and its 128-row tile on products of a few "
             "rows (decode-sized M, skinny products)", cuda="12_3xtf32_split_k.cu", launch=SPLIT_WGMMA,
             multiples=TMA_FLOATS,
             triton=twin(tk.sgemm_3xtf32_split_k, tk.V12_3XTF32_SPLIT_K, tk.SPLIT_TENSOR_SPACE,
                         launch=split_tensor_twin_launch, precisions=("fp32",),
                         post_hook=reduce_after_tuned_splits),
             math={"fp32": "3xtf32"}),
        Rung("v13_skinny_m", "decode-sized M on the FFMA pipe: a block's ROWS rows of A (fitted to M) staged once, "
             "its warps streaming 128 columns of B over a K range, ranges summed in order by the last block",
             "the tile rungs' 128-row tiles of absent rows and their pass over B a row of tiles (M ≤ 64)",
             cuda="13_skinny_m.cu", launch=SKINNY_M,
             triton=twin(tk.sgemm_skinny_m, tk.V13_SKINNY_M, tk.SKINNY_SPACE, launch=skinny_twin_launch,
                         check=skinny_twin_check, precisions=("fp32",))),
    ],
    baselines=BASELINES,
    headline=("v4_double_buffer", "v7_multistage", "v11_3xtf32_wgmma"),
)

"""BGEMM: strided-batched C[b] = A[b]·B[b] in FP32, TF32, FP16 or BF16 (docs/ladders/bgemm.md).

A (batch×M×K), B (batch×K×N) and C (batch×M×N) are contiguous, so entry b of each starts
b·M·K, b·K·N and b·M·N elements in: cuBLAS's strided-batched GEMM (``torch.bmm``). The shapes
are those of attention heads (a batch of 32–256 products of 64–1024-wide matrices) and one batch
of many tiny products, where a tile built for 4096² matrices leaves most of a block idle.

The rungs reuse each GEMM ladder's best tiling with the batch entry as a launch axis: v0 calls the
SGEMM ladder's v4 tile (cuda_kernels/sgemm/tile_double_buffer.cuh) on the entry's matrices, the
entry on the third grid axis, and its Triton twin is SGEMM's ``tl.dot`` kernel with a batch
program axis (FP32, TF32); v1 is the tensor-core ladder's best, hgemm v8, with the entry as its
tensor maps' third dimension and the persistent grid walking the whole batch, its twin hgemm v8's
twin with 3-D tensor descriptors (FP16, BF16); v2 is hgemm v12 (v6's mma.sync tile over K ranges, read in place) on
each entry, for decode attention's few rows against a long context (FP16, BF16); v3 is hgemm v10 (skinny M
computed transposed, the tokens wgmma's N) over the batch with 3-D maps, for the same decode steps.

Correctness gate, entry by entry: SGEMM's for FP32 and TF32 (study/ops/sgemm.py), HGEMM's for
FP16 and BF16 (the scale |A|·|B| plus η, the storage type's smallest normal; study/ops/hgemm.py
derives the tolerances).
"""

from __future__ import annotations

import torch

from study.ops.gemm_common import (CUBLASLT, FP32_TOLERANCE, HALF_TOLERANCE, HALVES, TMA_HALVES, Gemm,
                                   aligned_defines, fp32_bytes_needed, persistent_launch, tensor_descriptors, tiled,
                                   tiled_twin_launch, twin_split_plans)
from study.ops.hgemm import skinny_defines, skinny_launch, skinny_scope, skinny_twin_tokens
from study.ops.hgemm_mma_sync import BATCHED_SPLIT_MMA, split_mma_twin_launch
from study.ops.skinny_fit import fit_twin_meta
from study.ops.tma_staging import staged_launcher
from study.ops.twin_configs import launch_configs, launched_facts
from study.precision import BF16_TENSOR, FP16_TENSOR, FP32, TF32
from study.problem import CudaLauncher, cdiv, sm_count
from study.registry import Baseline, Rung, register, twin
from triton_kernels import bgemm as tkb
from triton_kernels import hgemm as tkh
from triton_kernels import sgemm as tk

class BGEMM(Gemm):
    """The GEMM problem with a batch axis (inputs batch×M×K and batch×K×N, the batch on the third grid
    axis, work times batch, the 32-bit and grid.z limits); the half precisions take HGEMM's gate."""

    name = "bgemm"
    axes = ("batch", "M", "N", "K")
    precisions = (FP32, TF32, FP16_TENSOR, BF16_TENSOR)
    default_precisions = ("fp32", "fp16")
    tolerance = {**FP32_TOLERANCE, **HALF_TOLERANCE}
    headline_shapes = ({"batch": 32, "M": 1024, "N": 1024, "K": 128},)  # attention scores, 1024 tokens
    default_shapes = ({"batch": 256, "M": 512, "N": 512, "K": 64},     # attention scores, 512 tokens, head dim 64
                      {"batch": 128, "M": 1024, "N": 64, "K": 1024},   # scores × values, 1024 tokens
                      {"batch": 32, "M": 1024, "N": 1024, "K": 128},
                      {"batch": 8192, "M": 32, "N": 32, "K": 32})      # many tiny products
    # Tile tails everywhere (scalar paths), and a shape whose every entry is 16-byte aligned, so the
    # sanitizer also sees the 16-byte cp.async path with batch offsets; one with 16-byte rows in either
    # storage (K and N multiples of 8), which the TMA rung takes, with tails in M, N and K; 5 rows of 704 k, which
    # the skinny rung (v3, M ≤ 64) runs in two K ranges an entry, their planes summed by each tile's last unit.
    sanitize_shapes = ({"batch": 3, "M": 67, "N": 131, "K": 33}, {"batch": 3, "M": 68, "N": 132, "K": 36},
                       {"batch": 3, "M": 72, "N": 136, "K": 40}, {"batch": 3, "M": 5, "N": 72, "K": 704})
    paddable = False  # align measures M, N, K ops; a padded batch would also need its 32-bit limit padded

    def bytes_needed(self, shape, precision) -> int:
        """SGEMM's estimate, per entry (an upper bound for the half storages)."""
        return fp32_bytes_needed(self.batch(shape), shape["M"], shape["N"], shape["K"])


# v1 with FIT_N=1, where an entry has at most NARROW_N columns: its space's 64-wide point, which the tuner picked at
# 128 × (1024×64×1024) and 8192 × (32×32×32) (5ed7e35, reports/h200/bgemm-runs/bgemm-bn64.md: 1.01× torch.bmm
# against the declared 128-wide tile's 0.95×, FP16) — a 128-wide tile there multiplies zeros over half its columns.
NARROW_N = 64
NARROW_TILE = {"BN": 64, "STAGES": 6}
# ... and where an entry's K is at most SHORT_K_SLICES slices (attention scores, K = head dim) and N fills a 256-wide
# tile, with enough such tiles for every SM: the 256-wide point with 4 stages. A tile is then one or two slices, so
# its fixed part (stage fill, the C boxes' barriers and TMA stores) weighs as much as its products; half the tiles
# halve it, and B's box feeds twice the columns. The tuner picked it at 32 × (4096×4096×128) FP16 (c95 at bc421bd,
# H200 7b6c705b, autotune on, cold: 0.3465 ms against the declared tile's 0.3855, 0.99× torch.bmm; the suite had
# 0.87×; reports/h200/experiments/bgemm-short-k-bc421bd).
SHORT_K_SLICES = 2
WIDE_TILE = {"BN": 256, "STAGES": 4}


def fitted_n(config, shape, sms: int) -> dict:
    """The tile v1 (or its twin) with this config takes for ``shape``, as v1's defines ({"BN", "STAGES"}):
    :data:`NARROW_TILE` where FIT_N=1 and N ≤ NARROW_N, :data:`WIDE_TILE` where FIT_N=1, K ≤ SHORT_K_SLICES·BK,
    N ≥ 256 and the batch holds a 256-wide tile for each of ``sms`` SMs; else {}, the config's own (an autotuned
    twin launch's config names no tile: each point runs as written)."""
    if not config.get("FIT_N") or "BN" not in config:
        return {}
    if shape["N"] <= NARROW_N:
        return NARROW_TILE
    wide_tiles = shape["batch"] * cdiv(shape["M"], config["BM"]) * cdiv(shape["N"], WIDE_TILE["BN"])
    if shape["K"] <= SHORT_K_SLICES * config["BK"] and shape["N"] >= WIDE_TILE["BN"] and wide_tiles >= sms:
        return WIDE_TILE
    return {}


def fitted_n_defines(config, tensors, out, shape, precision):
    """v1's defines: v8's (:func:`aligned_defines`), with FIT_N=1 the tile :func:`fitted_n` names."""
    defines = aligned_defines(HALVES)(config, tensors, out, shape, precision)
    return {**defines, **fitted_n(defines, shape, sm_count(out))}


# v1: v8's persistent launch over the batch (3-D maps), its n tile fitted as above; rows TMA cannot take staged.
BATCHED_PERSISTENT = staged_launcher(CudaLauncher(launch=persistent_launch, defines=fitted_n_defines))


def persistent_twin_launch(kernel, tensors, out, shape, config, precision):
    """v1's twin: hgemm v8's twin over the batch, 3-D descriptors (boxes of one entry), at most one
    program per SM walking batch × tiles; the tile the CUDA rung's FIT_N takes (:func:`fitted_n`, recorded)."""
    batch, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
    sms = sm_count(out)
    tile = fitted_n(config, shape, sms)
    meta = {**config, **({"BN": tile["BN"], "num_stages": tile["STAGES"]} if tile else {})}
    a_desc, b_desc, copy = tensor_descriptors(tensors["A"], tensors["B"], shape, meta)

    def grid(cfg):
        return (min(batch * cdiv(m, cfg["BM"]) * cdiv(n, cfg["BN"]), sms),)

    def fn():
        copy()
        kernel[grid](a_desc, b_desc, out, batch, m, n, k, out.stride(0), out.stride(1), out.stride(2), sms, **meta)

    fn.facts = {**copy.facts, **launched_facts(config, meta)}  # recorded over the config (triton_launch)
    return fn


# v3: v10's launch over the batch (study/ops/hgemm.py, skinny_launch); rows of A and B TMA cannot take staged
# inside the launch; C by plain stores (any rows).
BATCHED_SKINNY = staged_launcher(CudaLauncher(launch=skinny_launch, defines=skinny_defines), names=("A", "B"),
                                 out=False, check=skinny_scope("v3", "v1/v2"))


def batched_skinny_twin_check(shape, precision) -> str | None:
    return skinny_scope("v3", "v1/v2")(None, shape, precision)


def batched_skinny_twin_launch(kernel, tensors, out, shape, config, precision):
    """v3's twin: the pointers and strides of the batch, TOKENS the CUDA rung's pick (at least 16), each config's
    plan (the CUDA rung's: v10's over the SMs an entry's share), a workspace for the largest and a count per tile
    of each entry."""
    a, b = tensors["A"], tensors["B"]
    batch, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
    tokens, sms = skinny_twin_tokens(m), sm_count(out)
    meta = fit_twin_meta(config, shape, sms)
    plan, _, partial = twin_split_plans(kernel, meta, m, n, k, sms, out.device, rows=tokens, batch=batch,
                                        blocks=lambda cfg: sms // batch)
    counts = torch.zeros(batch * max(cdiv(n, t["BN"]) for t in launch_configs(kernel, meta, "BN")), dtype=torch.int32,
                         device=out.device)

    def grid(cfg):
        return (min(batch * cdiv(n, cfg["BN"]) * plan(cfg)[0], sms),)

    def fn():
        kernel[grid](a, b, out, partial, counts, batch, m, n, k, a.stride(0), a.stride(1), a.stride(2), b.stride(0),
                     b.stride(1), b.stride(2), out.stride(0), out.stride(1), out.stride(2), sms, TOKENS=tokens, **meta)

    fn.facts = {"tokens": tokens, **({"splits": plan(meta)[0]} if "BN" in meta else {}), **launched_facts(config, meta)}
    return fn


def torch_bmm(tensors, out, precision):
    a, b = tensors["A"], tensors["B"]
    return lambda: torch.bmm(a, b, out=out)


register(
    BGEMM(),
    rungs=[
        Rung("v0_batched_tiles", "SGEMM v4's 128×128×16 double-buffered tile, one grid z-slice per batch entry",
             "— (the baseline of this op: SGEMM's tiling, whatever the matrix size)", cuda="00_batched_tiles.cu",
             launch=tiled(),
             triton=twin(tk.sgemm_tiled, tk.V4_DOUBLE_BUFFER, tk.DOUBLE_BUFFER_SPACE, launch=tiled_twin_launch,
                         precisions=("fp32", "tf32"))),
        Rung("v1_batched_wgmma", "hgemm v8 over the batch: warp-specialised wgmma fed by 3-D TMA maps (the entry "
             "their third dimension), a persistent grid walking batch × tiles, C by TMA stores; 64-wide n tiles in "
             "the space", "v0's FFMA pipe (FP32 arithmetic) and its one grid z-slice per entry",
             cuda="01_batched_wgmma.cu", launch=BATCHED_PERSISTENT, multiples=TMA_HALVES,
             triton=twin(tkb.bgemm_persistent, tkb.V1_BATCHED_WGMMA, tkb.BATCHED_SPACE, launch=persistent_twin_launch,
                         precisions=("fp16", "bf16"), pre_hook=tkh.descriptor_blocks)),
        Rung("v2_batched_split_k", "hgemm v12 on each entry: v6's mma.sync tile read in place and fitted to the "
             "batch's tiles, over K ranges where the batch's tiles are fewer than two a SM, summed in range order by "
             "each tile's last block", "v1's idle SMs and empty 128-row tiles at decode-sized M with a long context",
             cuda="02_batched_split_k.cu", launch=BATCHED_SPLIT_MMA,
             triton=twin(tkb.bgemm_split_k, tkb.V2_BATCHED_SPLIT_K, tkb.BATCHED_SPLIT_SPACE,
                         launch=split_mma_twin_launch, precisions=("fp16", "bf16"))),
        Rung("v3_batched_skinny_m", "hgemm v10 over the batch: each entry computed as Cᵀ = Bᵀ·Aᵀ, its 1–64 tokens "
             "wgmma's N (8/16/32/64), 3-D TMA maps (the entry their third dimension), a persistent grid walking the "
             "batch's tiles × splits, a tile's planes summed by its last unit", "v1's 128-row and v2's 64-row tiles "
             "at 1–16 tokens, and v2's short K ranges", cuda="03_batched_skinny_m.cu", launch=BATCHED_SKINNY,
             triton=twin(tkb.bgemm_skinny_m, tkb.V3_BATCHED_SKINNY_M, tkb.BATCHED_SKINNY_SPACE,
                         launch=batched_skinny_twin_launch, check=batched_skinny_twin_check,
                         precisions=("fp16", "bf16"))),
    ],
    baselines=[Baseline("torch_bmm", "torch.bmm", "cuBLAS", "cublas", torch_bmm, "torch.bmm", reference=True),
               CUBLASLT],
    headline=("v0_batched_tiles", "v1_batched_wgmma"),
)

"""HGEMM: C = A·B with FP16 or BF16 storage and FP32 accumulation; A (M×K), B (K×N) and C (M×N)
row-major, C in the storage type.

The ladder is the seed's FP16 GEMM (docs/seeds.md §2, docs/ladders/hgemm.md): v0 naive with a
warp's threads along M → v1 coalesced (threads along N) → v2 32×32 shared-memory tiles → v3 an
8×8 register tile per thread (A kept k-contiguous in shared memory, with the bank conflicts that
brings) → v4 the conflicts removed by padding or an XOR swizzle (both in the space) → v5 cp.async
double buffering → v6 the tensor cores: mma.sync m16n8k16 fed by ldmatrix, FP32 accumulators, a
multi-stage cp.async pipeline → v7 Hopper's wgmma, its operands read from shared memory that TMA
fills (128-byte swizzle, an mbarrier per stage; sm_90a) → v8 warp specialisation (a TMA producer
warpgroup, two wgmma consumer warpgroups) in a persistent grid, C leaving by TMA stores → v9 split-K
for products of few tiles → v10 skinny M (≤ 64 tokens) computed as Cᵀ = Bᵀ·Aᵀ, the tokens wgmma's N → v11
2-block clusters multicasting B → v12 split-K on v6's in-place tile, for skinny products at any alignment. v0–v5
multiply on the FFMA pipe in FP32; their Triton twins from v2 on use ``tl.dot``, i.e. the tensor
cores. A rung is one line below.

Correctness gate. As SGEMM's, each element's error is divided by ``(|A|·|B|)_ij``, the scale of the
dot-product error bound, plus η, the storage type's smallest normal number (2^-14 for FP16; 2^-126
for BF16): an output below η is rounded with an absolute error of up to η·2^-11 (FP16 subnormals),
which against a tiny |A|·|B| alone (K = 1, two small factors) would fail any correct kernel.
With that, the one rounding every kernel must do — C to the storage type — costs at most 2^-11
(FP16, 4.9e-4) or 2^-8 (BF16, 3.9e-3) of the scale, reached where |C| ≈ |A|·|B| (small K);
FP32 accumulation adds ~1e-7. A kernel that accumulates in the storage type instead rounds the
running sum at every k, and those errors do not shrink against the scale as K grows.

Simulated on the CPU (``python tests/test_hgemm.py`` prints it; inputs as ``make_inputs`` draws
them, seeds 0–2, twelve shapes from 1×1×1 to 256×256×64, 64×64×4096 and 32×32×8192): FP32 accumulation then one rounding
reaches 4.87e-4 (FP16) and 3.86e-3 (BF16) at K ≤ 2, 2.6e-4 / 2.1e-3 at K = 64, 3.1e-5 / 2.4e-4 at
K = 4096; accumulating in FP16 (each fused multiply-add rounded to FP16) gives 7.6e-4 at K = 2 and
1.05e-3 to 1.8e-3 for every K from 8 to 8192, in BF16 5.9e-3 at K = 2 and 7.5e-3 to 1.6e-2 from
K = 8 on. The tolerances, 7e-4 (FP16) and 5.5e-3 (BF16), sit about 1.4× above the final rounding's
bound and 1.4–1.5× below accumulation in the storage type (K ≥ 8). What this gate cannot see: an
accumulator kept in the storage type but rounded only once per 16 k (``mma`` with an FP16
accumulator) errs by 2.2e-4–4.9e-4 (FP16) and 2.0e-3–3.8e-3 (BF16) in the same simulation, inside
the final rounding's own bound at K = 1, so no tolerance on this scale can both pass every correct
kernel and fail it (docs/ladders/hgemm.md, Correctness).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from study.backends import cuda, tma
from study.backends.launch import Unsupported
from study.backends.tma import alignment_reason
# v9's split-K (its plan, workspace, launch and ordered sum) is gemm_common's, shared with gemm_bias_relu v3
# and sgemm v12; its names stay importable from here.
from study.ops.gemm_common import (BASELINES, HALF_BOX, HALF_METRIC, HALF_TOLERANCE, HALVES, PERSISTENT,
                                   SMALLEST_NORMAL, TMA_HALVES, Gemm, aligned_defines, grid_rows_check,
                                   persistent_launch, persistent_twin_launch, reduce_after_tuned_partials,
                                   reduce_splits, split_launch, split_plan, split_workspace,
                                   tensor_descriptors, tiled, twin_split_plans)
from study.ops.hgemm_mma_sync import SPLIT_MMA, copy_widths, fitted_tile, mma_smem, split_mma_twin_launch
from study.ops.skinny_fit import fit_defines, fit_twin_meta
from study.ops.tma_staging import staged_launcher
from study.ops.twin_configs import launched_facts
from study.precision import BF16_TENSOR, FP16_TENSOR
from study.problem import CudaLaunch, CudaLauncher, cdiv, out_of_scope, sm_count
from study.registry import Rung, register, twin
from study.report.seed_ladder import SECTION
from triton_kernels import hgemm as tk

TOLERANCE = HALF_TOLERANCE  # the module docstring derives them
UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8}      # the largest relative error of one rounding
__all__ = ["SMALLEST_NORMAL", "TOLERANCE", "UNIT_ROUNDOFF", "HGEMM"]


def wgmma_tma_smem(defines) -> int:
    """v7's dynamic shared memory: STAGES stages of a BM × 64 box of A and BN/64 boxes of BK × 64 of B
    (2 bytes each), one 8-byte (full) mbarrier per stage and 1024 bytes to align the base to the
    swizzle atom."""
    bm, bn, bk, stages = defines["BM"], defines["BN"], defines["BK"], defines["STAGES"]
    return stages * (bm * HALF_BOX + bn * bk) * 2 + stages * 8 + 1024


class HGEMM(Gemm):
    name = "hgemm"
    precisions = (FP16_TENSOR, BF16_TENSOR)
    default_precisions = ("fp16", "bf16")
    # The seed's 4096³, a size where the tensor-core library is at its best (8192³), and one that no
    # tile divides and whose N is no multiple of 8 (the CUDA rungs' scalar paths). The headline keeps the
    # seed's shape alone: a pair at the power cap costs its timeout whatever the size (docs/method.md §8),
    # and 8192³, where v11 leads, is the ladder's report (docs/ladders/hgemm.md).
    headline_shapes = ({"M": 4096, "N": 4096, "K": 4096},)  # docs/seeds.md §2
    default_shapes = ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192},
                      {"M": 4000, "N": 4100, "K": 4200})
    # Tails past every tile with N odd (scalar paths); 16-byte rows with M short of a 128-row tile;
    # 16-byte rows with a tail in every dimension (the vector and cp.async paths' zero fill); K = 1;
    # one tile with 9 K slices, which v9 splits in two (its partial planes and their sum under the tools).
    sanitize_shapes = ({"M": 67, "N": 131, "K": 40}, {"M": 64, "N": 128, "K": 64}, {"M": 72, "N": 136, "K": 40},
                       {"M": 3, "N": 5, "K": 1}, {"M": 17, "N": 72, "K": 520})
    tolerance = TOLERANCE
    vector = HALVES
    error_metric = HALF_METRIC
    report_sections = (SECTION,)  # the seed's ladder beside this GPU's (study/report/seed_ladder.py)

    def bytes_needed(self, shape, precision) -> int:
        m, n, k = shape["M"], shape["N"], shape["K"]
        # A, B and C in storage; float64 A, B, |A|, |B|; float64 reference, scale and the two
        # temporaries of the comparison.
        return precision.element_bytes * (m * k + k * n + m * n) + 8 * 2 * (m * k + k * n) + 8 * 4 * m * n


# ---- launchers ---------------------------------------------------------------------------------------

def wgmma_tma_launch(defines, tensors, out, shape, precision):
    """v7: tensor maps of A (boxes BM rows of 64) and B (BK rows of 64), C by pointer, stored in
    4-byte pairs: it needs the 16-byte rows that A and B need."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    reason = alignment_reason("C", out)
    if reason:
        raise Unsupported(reason)
    args = (tma.tensor_map("A", a, HALF_BOX, defines["BM"]), tma.tensor_map("B", b, HALF_BOX, defines["BK"]),
            cuda.as_cupy(out, padded_rows=True), np.int32(m), np.int32(n), np.int32(k), np.int32(out.stride(-2)))
    return CudaLaunch(grid=(cdiv(n, defines["BN"]), cdiv(m, defines["BM"]), 1), block=(defines["THREADS"], 1, 1),
                      args=args, smem=wgmma_tma_smem(defines), keep=(a, b, out))


TILED = tiled(vector=HALVES)                    # v0–v5: static shared memory
MMA_TILED = dataclasses.replace(tiled(mma_smem, vector=HALVES), defines=copy_widths)  # v6, its copy widths
# v7: rows TMA cannot take (A, B, and C, which v7 stores in 4-byte pairs) staged inside the launch
# (study/ops/tma_staging.py); the grid's row blocks on grid.y.
WGMMA_TMA = staged_launcher(CudaLauncher(launch=wgmma_tma_launch, defines=aligned_defines(HALVES)), check=grid_rows_check)


# v11: v8's launch over pairs of tiles one above the other (block rows 2p, 2p + 1), a 2-block cluster each: at most
# SMs / 2 clusters walk them (an even grid); rows TMA cannot take staged inside the launch, as v8's.
PAIRS = staged_launcher(CudaLauncher(launch=functools.partial(persistent_launch, cluster=2),
                                     defines=aligned_defines(HALVES)))

# v9: as v8, rows TMA cannot take staged inside the launch.
SPLIT_K = staged_launcher(CudaLauncher(launch=split_launch, defines=aligned_defines(HALVES)))

SKINNY_TOKENS = (8, 16, 32, 64)  # v10's TOKENS: the wgmma N widths it is compiled for (hopper.cuh, wgmma_m64k16_ta)


def skinny_tokens(m: int) -> int:
    """v10's TOKENS for M rows of A: the smallest width that holds them (TMA reads the rows past M as zeros)."""
    return next(t for t in SKINNY_TOKENS if t >= m)


def skinny_scope(rung: str, larger: str):
    """The check of a rung on v10's kernel (v10; gemm_bias_relu v4): M ≤ 64 only, the tokens its wgmma
    instruction's N, one tile row of at most 64; ``larger``: the rungs that take larger M."""
    def check(params, shape, precision) -> str | None:
        if shape["M"] > SKINNY_TOKENS[-1]:
            return out_of_scope(f"{rung} is for M ≤ {SKINNY_TOKENS[-1]} (the tokens are its wgmma's N, one tile of "
                                f"at most {SKINNY_TOKENS[-1]} rows); M={shape['M']}: {larger} take larger M")
        return None

    return check


skinny_check = skinny_scope("v10", "v8/v9")


SKINNY_SHIFTER_THREADS = 128  # v10's shifter warps where B is read in place (hgemm/skinny_m.cuh)
RAW_COLS = HALF_BOX + 8  # v10 in place: a raw box row, 64 columns from up to 7 before them (tma.residue_maps)


def weights_in_place(b) -> bool:
    """Whether v10 reads B in place by eight tensor maps, one per residue of k mod 8 (:func:`weight_maps`;
    hgemm/skinny_m.cuh), rather than by one: rows of contiguous elements that one map cannot describe (no
    multiple of 16 bytes apart, or an unaligned start). Staging them instead copied B — all the traffic
    of a skinny product — twice more at every launch."""
    return tma.reads_in_place("B", b)


def weight_maps(b, box_rows: int, in_place: bool):
    """v10's WeightMaps (hgemm/skinny_m.cuh) for B (K × N), as a NumPy array of one void CuPy passes by
    value, and what the launch must keep alive: with TMA, B's map (boxes of ``box_rows`` × 64); in place,
    :func:`study.backends.tma.residue_maps` (boxes of 8 rows × RAW_COLS, which the kernel starts at the
    aligned column before its tile's and shifts by each residue's offset on chip)."""
    return tma.packed_maps("B", b, (HALF_BOX, box_rows), (RAW_COLS, 8), in_place)


def skinny_defines(config, tensors, out, shape, precision):
    """v10's defines: v8's (the config, the storage macro, ALIGNED), TOKENS, picked from M, B_IN_PLACE — never
    over a batch (bgemm v3): the residue maps are written for one matrix, and a batch's B is staged instead — and
    with FIT_BN=1 the weight tile fitted to N (study/ops/skinny_fit.py)."""
    return fit_defines({**aligned_defines(HALVES)(config, tensors, out, shape, precision),
                        "TOKENS": skinny_tokens(shape["M"]),
                        "B_IN_PLACE": int("batch" not in shape and weights_in_place(tensors["B"]))}, shape, sm_count(out))


def skinny_smem(defines) -> int:
    """v10's dynamic shared memory: STAGES stages of a TOKENS × 64 box of A and BN/64 boxes of BK × 64 of
    B (2 bytes each), two 8-byte mbarriers per stage, 1024 bytes to align the base to the swizzle atom; with
    B_IN_PLACE the raw weights (BN/64 · BK rows of RAW_COLS) and a third mbarrier per stage, and at most as
    many stages as fit (the kernel computes the same SMEM_BYTES and traps when given less)."""
    in_place = bool(defines.get("B_IN_PLACE"))
    raw = in_place * defines["BN"] // 64 * defines["BK"] * RAW_COLS
    stage = (defines["TOKENS"] * HALF_BOX + defines["BN"] * defines["BK"] + raw) * 2 + 8 * (2 + in_place)
    return tma.stages_that_fit(defines["STAGES"], stage) * stage + 1024


def skinny_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v10: tensor maps of A (boxes of TOKENS rows of 64 k) and of B in one WeightMaps (:func:`weight_maps`:
    B's map of BK rows of 64 n, or with B_IN_PLACE eight, one per residue of k mod 8), C by
    pointer (any rows: plain stores), a persistent grid over (N / BN tiles) × splits units planned as
    v9's with BM = TOKENS (:func:`split_plan`: one row of tiles), the FP32 workspace and, with two splits
    or more, a count per tile, zeroed here and by the kernel after each sum, of the units done: the last
    sums the tile's planes into C in the same launch (hgemm/skinny_m.cuh, sum_tile). gemm_bias_relu v4's
    launch is this one with the bias after C. bgemm v3 (a ``batch`` in the shape): the maps 3-D (the entry their
    third dimension), the plan over the SMs an entry's share, the grid over the batch's units, each entry's planes
    and counts, ``batch`` among the arguments after C and C's entry stride after its leading dimension."""
    a, b = tensors["A"], tensors["B"]
    batch, m, n, k = shape.get("batch", 1), shape["M"], shape["N"], shape["K"]
    if b.stride(-1) != 1:
        raise Unsupported(f"v10 reads rows of B's contiguous elements; B has column stride {b.stride(-1)}")
    in_place = bool(defines["B_IN_PLACE"])
    tokens, sms = defines["TOKENS"], sm_count(out)
    splits, per = split_plan(m, n, k, tokens, defines["BN"], defines["BK"], defines["MIN_SLICES"], sms // batch)
    tiles = cdiv(n, defines["BN"])
    blocks = min(batch * tiles * splits, sms)
    ldp = split_workspace(n)
    partial = torch.empty(batch * splits * m * ldp if splits > 1 else 1, dtype=torch.float32, device=out.device)
    tile_done = torch.zeros(batch * tiles if splits > 1 else 1, dtype=torch.int32, device=out.device)
    map_a = tma.tensor_map("A", a, HALF_BOX, tokens)
    maps_b, keep_b = weight_maps(b, defines["BK"], in_place)
    batched = "batch" in shape
    args = (map_a, maps_b, cuda.as_cupy(out, padded_rows=True), *((np.int32(batch),) if batched else ()),
            np.int32(m), np.int32(n), np.int32(k), np.int32(out.stride(-2)),
            *((np.int64(out.stride(0)),) if batched else ()),
            np.int32(splits), np.int32(per), cuda.as_cupy(partial), np.int32(ldp), cuda.as_cupy(tile_done))
    threads = defines["THREADS"] + SKINNY_SHIFTER_THREADS * in_place
    return CudaLaunch(grid=(blocks, 1, 1), block=(threads, 1, 1), args=args, smem=skinny_smem(defines),
                      facts={"blocks": blocks, "splits": splits, "slices_per_split": per, "tokens": tokens,
                             **({"in_place": "B"} if in_place else {})},
                      keep=(a, b, out, partial, tile_done, *keep_b))


# v10: rows of A TMA cannot take staged inside the launch, B's read in place (B_IN_PLACE); C is written by plain
# stores (any rows).
SKINNY_M = staged_launcher(CudaLauncher(launch=skinny_launch, defines=skinny_defines), names=("A",), out=False,
                           check=skinny_check)


# ---- the Triton twins' launches -------------------------------------------------------------------

def pointer_twin_launch(kernel, tensors, out, shape, config, precision):
    """The pointer twins (v0–v6): pointers, sizes and strides; a block of programs over C's tiles. With FIT=1
    (v6's), the tile :func:`fitted_tile` picks, recorded with the config."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    meta = dict(config)
    fitted = {}
    if meta.get("FIT"):
        bm, bn = fitted_tile(m, n, meta["BM"], meta["BN"], sm_count(out))
        meta.update(BM=bm, BN=bn)
        fitted = {"BM": bm, "BN": bn}

    def grid(cfg):
        return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]))

    def fn():
        kernel[grid](a, b, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                     out.stride(-2), out.stride(-1), **meta)

    fn.facts = fitted
    return fn


def descriptor_twin_launch(kernel, tensors, out, shape, config, precision):
    """v7's twin: TMA descriptors, the config's tiles as their boxes; a program per tile."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    meta = dict(config)
    a_desc, b_desc, copy = tensor_descriptors(a, b, shape, meta)

    def grid(cfg):
        return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]))

    def fn():
        copy()
        kernel[grid](a_desc, b_desc, out, m, n, k, out.stride(-2), out.stride(-1), **meta)

    fn.facts = copy.facts  # what it staged, recorded with the config (study.backends.triton_launch)
    return fn


def split_twin_launch(kernel, tensors, out, shape, config, precision, extra=(), reduce=tk.reduce_splits):
    """v9's twin: v8's descriptors, the plan of the config's tile (under autotune each config's own,
    worked out here once), a workspace for the largest plan of the twin's space, and the reduction
    after the partials when the plan that ran has two splits or more; ``extra``: names of tensors
    passed after the descriptors and, by the reduction kernel ``reduce``, after C (gemm_bias_relu v3's
    bias)."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    meta = dict(config)
    a_desc, b_desc, copy = tensor_descriptors(a, b, shape, meta)
    more = [tensors[name] for name in extra]
    sms = sm_count(out)
    plan, ldp, partial = twin_split_plans(kernel, meta, m, n, k, sms, out.device)

    def splits(cfg):
        return plan(cfg)[0]

    def grid(cfg):
        return (min(cdiv(m, cfg["BM"]) * cdiv(n, cfg["BN"]) * splits(cfg), sms),)

    def fn():
        copy()
        kernel[grid](a_desc, b_desc, *more, out, partial, m, n, k, out.stride(-2), out.stride(-1), ldp, sms, **meta)
        best = getattr(kernel, "best_config", None)  # under triton.autotune, the config that just ran
        reduce_splits(partial, out, m, n, ldp, out.stride(-2), splits(best.kwargs if best is not None else meta),
                      reduce, more)

    fn.facts = {**copy.facts, **({"splits": splits(meta)} if "BM" in meta else {})}
    return fn


SKINNY_TWIN_TOKENS = 16  # tl.dot needs every side ≥ 16: the twin's smallest TOKENS (the CUDA rung's is 8)


def skinny_twin_tokens(m: int) -> int:
    """v10's twin's TOKENS: the CUDA rung's pick, at least 16."""
    return max(SKINNY_TWIN_TOKENS, skinny_tokens(m))


def skinny_twin_check(shape, precision) -> str | None:
    return skinny_check(None, shape, precision)


def skinny_twin_launch(kernel, tensors, out, shape, config, precision, extra=(), reduce=tk.reduce_splits):
    """v10's twin: descriptors of A (TOKENS × BK boxes, TOKENS picked from M) and B (BK × BN), the plan of
    the config's tile (under autotune each config's own), a workspace for the largest, and the reduction
    after the partials when the plan that ran has two splits or more (v9's twin's scheme); ``extra``:
    names of tensors passed after the descriptors and, by the reduction kernel ``reduce``, after C
    (gemm_bias_relu v4's bias). B's rows that no descriptor can describe are read in place by pointer
    (``B_IN_PLACE``, as the CUDA rung's), not staged: staging copied all of a skinny product's traffic
    twice more at every launch (1×50257×1600 BF16: 236 µs, 0.31× cuBLAS, c41)."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    tokens = skinny_twin_tokens(m)
    meta = fit_twin_meta(config, shape, sm_count(out))
    in_place = weights_in_place(b)
    a_desc, b_desc, copy = tensor_descriptors(a, b, shape, {"BM": tokens, "BK": meta.get("BK", 64),
                                                            "BN": meta.get("BN", 64)}, b_in_place=in_place)
    more = [tensors[name] for name in extra]
    sms = sm_count(out)
    plan, ldp, partial = twin_split_plans(kernel, meta, m, n, k, sms, out.device, rows=tokens)

    def splits(cfg):
        return plan(cfg)[0]

    def grid(cfg):
        return (min(cdiv(n, cfg["BN"]) * splits(cfg), sms),)

    def fn():
        copy()
        kernel[grid](a_desc, b_desc, *more, out, partial, m, n, k, out.stride(-2), out.stride(-1), ldp, sms,
                     b.stride(-2), TOKENS=tokens, B_IN_PLACE=in_place, **meta)
        best = getattr(kernel, "best_config", None)  # under triton.autotune, the config that just ran
        reduce_splits(partial, out, m, n, ldp, out.stride(-2), splits(best.kwargs if best is not None else meta),
                      reduce, more)

    fn.facts = {**copy.facts, "tokens": tokens, **({"splits": splits(meta)} if "BN" in meta else {}),
                **({"in_place": "B"} if in_place else {}), **launched_facts(config, meta)}
    return fn


def pointer_twin(kernel, fixed, space):
    return twin(kernel, fixed, space, launch=pointer_twin_launch)


register(
    HGEMM(),
    rungs=[
        Rung("v0_naive", "one thread per output, a warp's threads along M",
             "— (the baseline: a warp's A loads and C stores are a row apart, uncoalesced)",
             cuda="00_naive.cu", launch=TILED, triton=pointer_twin(tk.hgemm_naive, tk.V0_NAIVE, tk.NAIVE_SPACE)),
        Rung("v1_coalesced", "a warp's threads along N: 32 consecutive halves of a B row and of a C row",
             "uncoalesced global loads and stores", cuda="01_coalesced.cu", launch=TILED,
             triton=pointer_twin(tk.hgemm_naive, tk.V1_COALESCED, tk.NAIVE_SPACE)),
        Rung("v2_smem_tiling", "32×32×32 tiles of A and B in shared memory, one output per thread",
             "re-reading every operand from global memory", cuda="02_smem_tiling.cu", launch=TILED,
             triton=pointer_twin(tk.hgemm_tiled, tk.V2_SMEM_TILING, tk.SINGLE_STAGE_SPACE)),
        Rung("v3_register_tile", "128×128×32 tile, 8×8 FP32 outputs per thread, 16-byte loads; A k-contiguous in "
             "shared memory (4-way bank conflicts left on purpose)", "two shared loads and conversions per FFMA",
             cuda="03_register_tile.cu", launch=TILED,
             triton=pointer_twin(tk.hgemm_tiled, tk.V3_REGISTER_TILE, tk.SINGLE_STAGE_SPACE)),
        Rung("v4_bank_conflicts", "A's shared rows padded (SWIZZLE=0) or XOR-swizzled (SWIZZLE=1)",
             "bank conflicts on A's fragment reads", cuda="04_bank_conflicts.cu", launch=TILED,
             triton=pointer_twin(tk.hgemm_tiled, tk.V4_BANK_CONFLICTS, tk.SINGLE_STAGE_SPACE)),
        Rung("v5_double_buffer", "cp.async double buffering: load slice k+1 while computing slice k",
             "waiting at the barrier for each slice's loads", cuda="05_double_buffer.cu", launch=TILED,
             triton=pointer_twin(tk.hgemm_tiled, tk.V5_DOUBLE_BUFFER, tk.TWO_STAGE_SPACE)),
        Rung("v6_mma_sync", "tensor cores: mma.sync m16n8k16 fed by ldmatrix(.trans), 3–4 cp.async stages, "
             "grouped block order", "the FFMA pipe (FP32 arithmetic) of v0–v5", cuda="06_mma_sync.cu",
             launch=MMA_TILED, triton=pointer_twin(tk.hgemm_grouped, tk.V6_MMA_SYNC, tk.MMA_SPACE)),
        Rung("v7_wgmma_tma", "Hopper wgmma m64nBNk16 from shared memory that TMA fills (128-byte swizzle), an mbarrier "
             "per stage, 3–6 stages", "v6's ldmatrix fragment loads and legacy HMMA issue", cuda="07_wgmma_tma.cu",
             launch=WGMMA_TMA, multiples=TMA_HALVES,
             triton=twin(tk.hgemm_descriptors, tk.V7_WGMMA_TMA, tk.WGMMA_SPACE, launch=descriptor_twin_launch,
                         pre_hook=tk.descriptor_blocks)),
        Rung("v8_warp_specialized", "a producer warpgroup issues TMA, two consumer warpgroups (setmaxnreg 40/232) "
             "issue wgmma, full/empty mbarriers per stage; persistent: one block per SM walks the tiles; C through shared "
             "memory and TMA stores", "v7's block barrier every K slice, its epilogue bubble and half-sector C stores",
             cuda="08_warp_specialized.cu", launch=PERSISTENT, multiples=TMA_HALVES,
             triton=twin(tk.hgemm_persistent, tk.V8_WARP_SPECIALIZED, tk.PERSISTENT_SPACE,
                         launch=persistent_twin_launch, pre_hook=tk.descriptor_blocks)),
        Rung("v9_split_k", "v8 over tiles × K ranges where the tiles are fewer than the SMs (planned from the tile "
             "count), FP32 partial planes summed in order by a second kernel", "v8's idle SMs on products of few tiles "
             "(decode-sized M, skinny products)", cuda="09_split_k.cu", launch=SPLIT_K, multiples=TMA_HALVES,
             triton=twin(tk.hgemm_split_k, tk.V9_SPLIT_K, tk.SPLIT_SPACE, launch=split_twin_launch,
                         pre_hook=tk.descriptor_blocks, post_hook=reduce_after_tuned_partials)),
        Rung("v10_skinny_m", "skinny M (≤ 64 tokens) computed as Cᵀ = Bᵀ·Aᵀ: the weight tile is wgmma's A read "
             "MN-major (imm-trans-a = 1), the tokens its N (8/16/32/64, picked from M); a producer warp, v9's split "
             "plan, a tile's planes summed by its last unit in the same launch (the twin: a second kernel)",
             "v8/v9's 128-row tiles at decode-sized M (idle tensor-core rows, too few weight columns per SM)",
             cuda="10_skinny_m.cu", launch=SKINNY_M, multiples=TMA_HALVES,
             triton=twin(tk.hgemm_skinny_m, tk.V10_SKINNY_M, tk.SKINNY_SPACE, launch=skinny_twin_launch,
                         check=skinny_twin_check, pre_hook=tk.skinny_blocks,
                         post_hook=functools.partial(reduce_after_tuned_partials, rows="TOKENS"))),
        Rung("v11_cluster_multicast", "v8 in 2-block clusters walking pairs of tiles that share their columns: each "
             "block loads its A and half of the B slice, multicast by TMA into both blocks; a stage is refilled once "
             "both blocks' consumers released it (remote mbarrier arrivals)", "v8's L2 → SM traffic for B, read "
             "twice by the two blocks of a block column", cuda="11_cluster_multicast.cu", launch=PAIRS,
             multiples=TMA_HALVES,
             triton=twin(tk.hgemm_pairs, tk.V11_CLUSTER_MULTICAST, tk.PAIR_SPACE,
                         launch=functools.partial(persistent_twin_launch, cluster=2), pre_hook=tk.descriptor_blocks)),
        Rung("v12_split_k_mma_sync", "v6's tile (fitted, every operand read in place) over K ranges on grid.z where "
             "even its fitted tiles are fewer than two a SM; FP32 planes summed in range order by each tile's last "
             "block, in the same launch", "v6's idle SMs on few tiles of a long K; v9's staging copies of rows TMA "
             "cannot read", cuda="12_split_k_mma_sync.cu", launch=SPLIT_MMA,
             triton=twin(tk.hgemm_grouped_split_k, tk.V12_SPLIT_K_MMA_SYNC, tk.SPLIT_MMA_SPACE,
                         launch=split_mma_twin_launch)),
    ],
    baselines=BASELINES,
    headline=("v6_mma_sync", "v8_warp_specialized"),
)

"""What the GEMM ops share (sgemm, hgemm, bgemm, gemm_bias_relu), so that none of them imports
another: the problem of C = A·B on row-major operands, with an optional batch axis (inputs,
structured inputs, output, reference, work, the op-wide checks); the launchers of the kernel
families more than one op runs — the tiled pointer kernels of the SGEMM ladder (sgemm v0–v10,
bgemm v0, gemm_bias_relu v1) and hgemm v8's persistent TMA kernel (hgemm v8, bgemm v1,
gemm_bias_relu v0 and v2) — with their Triton twins' launches; split-K over a persistent kernel
(hgemm v9's plan, workspace, launch and ordered sum: hgemm v9, gemm_bias_relu v3, sgemm v12); and the
library baselines of every GEMM op (cuBLAS through ``torch.matmul``, cuBLASLt through nvmath-python).

The gates' reasoning is each op's docstring's: SGEMM's for FP32 (scale |A|·|B|) and TF32 (the
products' root-sum-square), HGEMM's for FP16 and BF16 (|A|·|B| plus η, the storage type's smallest
normal number).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from study import draws
from study.backends import cuda, tma
from study.backends.launch import Unsupported
from study.backends.tma import alignment_reason
from study.problem import (DEFAULT_SMS, DTYPES, CudaLaunch, CudaLauncher, KernelCall, Problem, cdiv, offsets_reason,
                           sm_count)
from study.ops.tma_staging import staged_launcher, staged_operands
from study.ops.twin_configs import launch_configs
from study.registry import Baseline
from triton_kernels import hgemm as hgemm_twins

GRID_Y = 65535   # CUDA's limit on gridDim.y: the row blocks of a launch
GRID_Z = 65535   # CUDA's limit on gridDim.z: the batch axis of a launch
FLOATS = 4       # floats in 16 bytes: the FP32 kernels' float4 loads and 16-byte cp.async copies
HALVES = 8       # halves in 16 bytes: the FP16/BF16 kernels' vector loads, cp.async copies and stores
HALF_BOX = 64    # halves in one 128-byte swizzled TMA box row (cuda_kernels/hopper.cuh)
TMA_HALVES = {"N": HALVES, "K": HALVES}  # the axes a TMA rung on 16-bit rows needs in whole 16 bytes
SMALLEST_NORMAL = {"fp16": 2.0**-14, "bf16": 2.0**-126}  # η: below it a storage type rounds absolutely
# The gates' tolerances: FP32 and TF32 as study/ops/sgemm.py derives them, FP16 and BF16 as study/ops/hgemm.py does.
FP32_TOLERANCE = {"fp32": 2e-6, "tf32": 5e-3}
HALF_TOLERANCE = {"fp16": 7e-4, "bf16": 5.5e-3}
STRUCTURED_SEED = 2**31 - 1  # the fixed seed of the structured inputs
FP32_METRIC = "max |out − ref| / (|A|·|B|)"
RSS_METRIC = "max |out − ref| / sqrt((A∘A)·(B∘B)), the products' root-sum-square"
HALF_METRIC = "max |out − ref| / (|A|·|B| + η), η the storage type's smallest normal number"


def half(precision) -> bool:
    """FP16 or BF16 storage: HGEMM's gate (the scale plus η)."""
    return precision.dtype != "float32"


def uniform_operands(shape, dtype, seed, lead=()):
    """A (M×K), then B (K×N), uniform in [−1, 1), drawn in FP32 from a generator seeded with ``seed``
    (study.draws: kept for the other precisions of the shape) and rounded to ``dtype`` (``lead``: a
    batch's leading dimension): the reference is the exact product of the values the kernels read."""
    a, b = draws.uniform(seed, [(*lead, shape["M"], shape["K"]), (*lead, shape["K"], shape["N"])])
    return a.to(dtype, copy=True), b.to(dtype, copy=True)


def integer_operands(shape, dtype, gen, lead=()):
    """A, then B, of integers in [−2, 2] from ``gen``: exact in every storage type."""
    a = torch.randint(-2, 3, (*lead, shape["M"], shape["K"]), generator=gen).to(dtype)
    b = torch.randint(-2, 3, (*lead, shape["K"], shape["N"]), generator=gen).to(dtype)
    return a, b


SPLIT_BLOCKS_PER_SM = 2  # sgemm's split-K plan: enough K ranges for two blocks per SM


def fp32_bytes_needed(batch: int, m: int, n: int, k: int) -> int:
    """GPU memory of an FP32 GEMM case: per entry FP32 inputs, output and a re-laid B, float64 copies
    of A, B, |A|, |B|, the float64 reference, scale and the two temporaries of the comparison; and
    split-K's workspace (fewer than M·N + two blocks per SM's tiles of partials, of up to 128×256)."""
    return batch * (4 * (m * k + 2 * k * n + m * n) + 8 * 2 * (m * k + k * n) + 8 * 4 * m * n) \
        + 4 * (m * n + SPLIT_BLOCKS_PER_SM * DEFAULT_SMS * 128 * 256)


class Gemm(Problem):
    """C = A·B, row-major, or ``batch`` independent products where the op has a batch axis (leading
    tensor dimension, work times batch). An op sets its name, precisions, shapes, tolerances and
    ``bytes_needed``; the rest is here."""

    axes = ("M", "N", "K")
    bound = "compute"
    paddable = True  # the CUDA rungs take lda, ldb, ldc; Triton and the libraries take strides
    error_metric = FP32_METRIC
    vector = FLOATS  # elements in 16 bytes as the op's ALIGNED counts them (cuda_defines)

    @staticmethod
    def batch(shape) -> int:
        return shape.get("batch", 1)

    @staticmethod
    def lead(shape) -> tuple:
        return (shape["batch"],) if "batch" in shape else ()

    def metric(self, precision) -> str:
        return RSS_METRIC if precision.math == "tf32" else HALF_METRIC if half(precision) else self.error_metric

    def flops(self, shape) -> int:
        return 2 * self.batch(shape) * shape["M"] * shape["N"] * shape["K"]

    def bytes(self, shape, precision) -> int:
        m, n, k = shape["M"], shape["N"], shape["K"]
        return precision.element_bytes * self.batch(shape) * (m * k + k * n + m * n)

    def check(self, shape, precision) -> str | None:
        reason = super().check(shape, precision)
        if reason:
            return reason
        biggest = self.batch(shape) * max(shape["M"] * shape["K"], shape["K"] * shape["N"], shape["M"] * shape["N"])
        reason = offsets_reason("a batch" if "batch" in shape else "a matrix", biggest)
        if reason:
            return reason
        if self.batch(shape) > GRID_Z:
            return f"batch={self.batch(shape)} is beyond the {GRID_Z} entries one launch's grid.z can hold"
        return None

    def make_inputs(self, shape, precision, seed, device):
        """Uniform in [−1, 1), drawn in FP32 and stored in the precision's type (FP16 and BF16: rounded,
        so the reference is the exact product of the values the kernels read)."""
        a, b = uniform_operands(shape, DTYPES[precision.dtype], seed, self.lead(shape))
        return {"A": a.to(device), "B": b.to(device)}

    def structured_inputs(self, shape, precision, device):
        """Small random integers in [−2, 2] (a fixed seed), exact in every storage type: every product and
        partial sum is exact in FP32 while 4K < 2^24, so the float64 reference is the exact answer and any
        misplaced element shows, with no rounding to hide in (rounding C to FP16 or BF16 is exact while
        |C| ≤ 2048 or 256, and within the tolerance beyond)."""
        a, b = integer_operands(shape, DTYPES[precision.dtype], torch.Generator().manual_seed(STRUCTURED_SEED),
                                self.lead(shape))
        return {"A": a.to(device), "B": b.to(device)}

    def make_output(self, shape, precision, device):
        # Poisoned: an element the kernel never writes stays NaN and fails the gate.
        return torch.full((*self.lead(shape), shape["M"], shape["N"]), float("nan"), dtype=DTYPES[precision.dtype],
                          device=device)

    def with_layout(self, tensors, layout):
        """Logical K×N B, stored column-major where the rung asks (strides (1, K))."""
        out = dict(tensors)
        if layout.get("B") == "col":  # built, not `.t().contiguous().t()`, which keeps (N, 1) strides when K = 1
            b = tensors["B"]
            out["B"] = torch.empty((b.size(1), b.size(0)), dtype=b.dtype, device=b.device).copy_(b.t()).t()
        return out

    def cuda_defines(self, config, tensors, out, shape, precision):
        """The config, the storage macro and ALIGNED (:func:`aligned_defines`, ``vector`` elements in 16 bytes)."""
        return aligned_defines(self.vector)(config, tensors, out, shape, precision)

    def reference(self, tensors, precision):
        a = tensors["A"].to(torch.float64)  # @ multiplies a batch entry by entry
        b = tensors["B"].to(torch.float64)
        if precision.math == "tf32":
            return a @ b, ((a * a) @ (b * b)).sqrt()
        scale = a.abs() @ b.abs()
        return a @ b, (scale + SMALLEST_NORMAL[precision.name] if half(precision) else scale)


# ---- the launchers several GEMM ops run ------------------------------------------------------------

def aligned_defines(vector: int):
    """The defines of a tiled GEMM kernel: the config, the storage macro and ALIGNED, 1 when every row
    of A, B and C starts on 16 bytes (K, N and the leading dimensions multiples of ``vector`` elements,
    the base addresses aligned), so 16-byte loads, cp.async copies and stores may be used; 0 selects
    the kernels' scalar paths. B may be column-major (sgemm v0): its leading dimension is then its
    column stride."""
    def defines(config, tensors, out, shape, precision):
        a, b = tensors["A"], tensors["B"]
        leading = (a.stride(-2), max(b.stride(-2), b.stride(-1)), out.stride(-2))
        aligned = (shape["K"] % vector == 0 and shape["N"] % vector == 0 and all(ld % vector == 0 for ld in leading)
                   and all(t.data_ptr() % 16 == 0 for t in (a, b, out)))
        return {**config, **precision.cuda_defines, "ALIGNED": int(aligned)}

    return defines


def grid_rows_check(params, shape, precision) -> str | None:
    """A grid of row blocks on grid.y: at most GRID_Y of them."""
    if cdiv(shape["M"], params["BM"]) > GRID_Y:
        return f"M={shape['M']} needs more than {GRID_Y} row blocks of BM={params['BM']} (grid.y limit)"
    return None


def b_as_stored(b):
    """B as the CUDA kernels index it: a column-major B (sgemm v0, strides (1, K) from ``with_layout``)
    as its N×K storage, whose rows are B's columns; otherwise B itself. Not ``is_contiguous()``: torch
    calls a column-major 1×N B contiguous, and its row stride N would be passed as ldb."""
    col_major = b.dim() == 2 and b.stride(-2) == 1 and b.stride(-1) == b.size(-2)
    return b.transpose(-2, -1) if col_major else b


def tiled_args(tensors, out, shape) -> list:
    """The pointer kernels' arguments: A, B (as stored), C, M, N, K and the leading dimensions — rows of
    A, B (columns, when B is column-major) and C are this many elements apart (a padded view)."""
    b_storage = b_as_stored(tensors["B"])
    return [cuda.as_cupy(tensors["A"], padded_rows=True), cuda.as_cupy(b_storage, padded_rows=True),
            cuda.as_cupy(out, padded_rows=True), np.int32(shape["M"]), np.int32(shape["N"]), np.int32(shape["K"]),
            np.int32(tensors["A"].stride(-2)), np.int32(b_storage.stride(-2)), np.int32(out.stride(-2))]


def no_smem(defines) -> int:
    return 0


def tiled(smem=no_smem, vector: int = FLOATS) -> CudaLauncher:
    """A block per BM × BN tile of C, the batch entry on grid.z (1 for one product); ``smem(defines)``:
    its dynamic shared memory (0: static buffers only); ALIGNED with ``vector`` elements in 16 bytes."""
    def launch(defines, tensors, out, shape, precision):
        grid = (cdiv(shape["N"], defines["BN"]), cdiv(shape["M"], defines["BM"]), shape.get("batch", 1))
        return CudaLaunch(grid=grid, block=(defines["THREADS"], 1, 1), args=tuple(tiled_args(tensors, out, shape)),
                          smem=smem(defines))

    return CudaLauncher(launch=launch, check=grid_rows_check, defines=aligned_defines(vector))


def ffma_warp_tile_smem(defines) -> int:
    """sgemm v6/v7's (and the rungs on their tile): STAGES stages of Aᵀ and B rows padded by 4 floats
    (cuda_kernels/sgemm/tile_warp.cuh). The kernels compute the same SMEM_BYTES and trap when given less."""
    return defines.get("STAGES", 2) * defines["BK"] * (defines["BM"] + 4 + defines["BN"] + 4) * 4


def persistent_smem(defines) -> int:
    """hgemm v8's (and the rungs on its kernel): STAGES stages of a BM × 64 box of A and BN/64 boxes of
    BK × 64 of B (2 bytes each), two 8-byte mbarriers (full, empty) per stage, two 64 × 64 boxes of C
    per consumer warpgroup (one per 64 rows) and 1024 bytes to align the base to the swizzle atom."""
    bm, bn, bk, stages = defines["BM"], defines["BN"], defines["BK"], defines["STAGES"]
    return stages * (bm * HALF_BOX + bn * bk) * 2 + bm // 64 * 2 * HALF_BOX * HALF_BOX * 2 + stages * 8 * 2 + 1024


def persistent_tma_launch(defines, a, b, out, sizes, tiles: int, cluster: int = 1) -> CudaLaunch:
    """hgemm v8's launch: tensor maps of A (boxes BM rows of 64), B (BK rows of 64) and C (64 × 64), each
    a matrix or a batch of them (study/backends/tma.py), then ``sizes`` as int32 arguments; one block per
    SM walks the ``tiles`` (fewer if fewer tiles), or (v11) one cluster of ``cluster`` blocks per ``cluster``
    SMs. C leaves by TMA stores, so it needs the 16-byte rows that A and B need."""
    reason = alignment_reason("C", out)
    if reason:
        raise Unsupported(reason)
    maps = (tma.tensor_map("A", a, HALF_BOX, defines["BM"]), tma.tensor_map("B", b, HALF_BOX, defines["BK"]),
            tma.tensor_map("C", out, HALF_BOX, HALF_BOX))
    blocks = cluster * min(tiles, sm_count(a) // cluster)
    return CudaLaunch(grid=(blocks, 1, 1), block=(defines["THREADS"], 1, 1), args=(*maps, *map(np.int32, sizes)),
                      smem=persistent_smem(defines), facts={"blocks": blocks}, keep=(a, b, out))


def persistent_launch(defines, tensors, out, shape, precision, cluster: int = 1) -> CudaLaunch:
    """hgemm v8 over one product or a batch (bgemm v1: the entry its tensor maps' third dimension, the
    persistent grid walking batch × tiles); hgemm v11 (``cluster`` 2) over columns of two tiles."""
    batch, m, n, k = shape.get("batch", 1), shape["M"], shape["N"], shape["K"]
    sizes = (batch, m, n, k) if "batch" in shape else (m, n, k)
    units = batch * cdiv(cdiv(m, defines["BM"]), cluster) * cdiv(n, defines["BN"])
    return persistent_tma_launch(defines, tensors["A"], tensors["B"], out, sizes, units, cluster)


# hgemm v8's kernel: no grid-axis limit (one block per SM walks the tiles); rows TMA cannot take (A, B,
# and C, which leaves by TMA stores) staged inside the launch (study/ops/tma_staging.py).
PERSISTENT = staged_launcher(CudaLauncher(launch=persistent_launch, defines=aligned_defines(HALVES)))


# ---- split-K over a persistent kernel (hgemm v9, gemm_bias_relu v3, sgemm v12) ----------------------------

def split_plan(m: int, n: int, k: int, bm: int, bn: int, bk: int, min_slices: int, sms: int) -> tuple[int, int]:
    """hgemm v9's (splits, K slices a split): as many splits as the SMs over the tiles, at most K's slices over
    ``min_slices``, at least one; then as few as cover the slices in equal ranges, so none is empty
    (triton_kernels/hgemm.py's ``split_plan`` is the same for the twin)."""
    tiles, slices = cdiv(m, bm) * cdiv(n, bn), cdiv(k, bk)
    splits = max(1, min(sms // tiles, slices // min_slices))
    per = cdiv(slices, splits)
    return cdiv(slices, per), per


def split_workspace(n: int) -> int:
    """The row stride of hgemm v9's FP32 partial planes: N rounded up to 4 floats (16 bytes)."""
    return cdiv(n, 4) * 4


def persistent_units(defines, tensors, out, shape, units: int) -> CudaLaunch:
    """hgemm v8's launch (:func:`persistent_tma_launch`) with one block per SM walking ``units``."""
    sizes = (shape["M"], shape["N"], shape["K"])
    return persistent_tma_launch(defines, tensors["A"], tensors["B"], out, sizes, units)


def split_launch(defines, tensors, out, shape, precision, reduce: str = "hgemm_v9_reduce_splits",
                 extra: tuple = (), first=persistent_units) -> CudaLaunch:
    """hgemm v9: v8's launch over tiles × splits units (:func:`split_plan`), the FP32 workspace and its
    plan among the arguments; with two splits or more, the reduction kernel ``reduce`` (in the rung's
    file) after it on C, the tensors named ``extra`` among its arguments after C (gemm_bias_relu v3's
    bias, which its reduction adds). ``first(defines, tensors, out, shape, units)``: the launch of the
    persistent kernel the units run on (v8's; sgemm v12's is v11's)."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    sms = sm_count(out)
    splits, per = split_plan(m, n, k, defines["BM"], defines["BN"], defines["BK"], defines["MIN_SLICES"], sms)
    tiles = cdiv(m, defines["BM"]) * cdiv(n, defines["BN"])
    base = first(defines, tensors, out, shape, tiles * splits)
    ldp = split_workspace(n)
    partial = torch.empty(splits * m * ldp if splits > 1 else 1, dtype=torch.float32, device=out.device)
    args = (*base.args, np.int32(splits), np.int32(per), cuda.as_cupy(partial), np.int32(ldp))
    after = split_reduce(defines, partial, out, [tensors[name] for name in extra], m, n, ldp, splits, reduce)
    return dataclasses.replace(base, args=args, after=after, keep=(*base.keep, partial),
                               facts={**base.facts, "splits": splits, "slices_per_split": per})


def split_reduce(defines, partial, out, extra, m: int, n: int, ldp: int, splits: int, reduce: str) -> tuple:
    """The second kernel of a split-K launch (hgemm v9 and v10, gemm_bias_relu v3, sgemm v12): with two
    splits or more, the reduction ``reduce`` (in the rung's file) summing the ``splits`` planes of
    ``partial`` into C, the tensors ``extra`` among its arguments after C; with one, nothing."""
    if splits == 1:
        return ()
    threads = defines["REDUCE_THREADS"]
    sms = sm_count(out)
    second = CudaLaunch(grid=(min(cdiv(m * n, threads), REDUCE_BLOCKS_PER_SM * sms), 1, 1), block=(threads, 1, 1),
                        args=(cuda.as_cupy(partial), cuda.as_cupy(out, padded_rows=True),
                              *(cuda.as_cupy(t) for t in extra), np.int32(m), np.int32(n), np.int32(ldp),
                              np.int32(out.stride(-2)), np.int32(splits)))
    return (KernelCall(None, reduce, defines, second),)


REDUCE_BLOCKS_PER_SM = 8  # v9's reduction: a grid-stride loop over C, enough blocks to keep the loads in flight


# ---- the Triton twins' launches several GEMM ops use --------------------------------------------------

def tiled_twin_launch(kernel, tensors, out, shape, config, precision, input_precision: bool = True):
    """A ``tl.dot`` (or naive) twin over C's tiles, the batch entry on the grid's third axis: pointers,
    sizes, strides, the batch entries' strides (0 for one product) and, for a ``tl.dot`` twin
    (``input_precision``), the precision's ``input_precision``."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    meta = dict(config)
    if input_precision:
        meta["INPUT_PRECISION"] = precision.triton_input_precision
    batch = shape.get("batch", 1)
    entry = [t.stride(0) if t.dim() == 3 else 0 for t in (a, b, out)]

    def grid(cfg):
        return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]), batch)

    def fn():
        kernel[grid](a, b, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                     out.stride(-2), out.stride(-1), *entry, **meta)

    return fn


def tensor_descriptors(a, b, shape, meta, b_in_place: bool = False):
    """Triton's host tensor descriptors of A (boxes BM × BK) and B (BK × BN) for the TMA twins, or of
    batches of them (bgemm's: 3-D tensors, the entry first, boxes of one entry, so that what lies past
    an entry's edges loads as zeros), and the copy to call first in the timed ``fn``: an operand whose
    rows TMA cannot read is described in staged rows that the copy fills (study/ops/tma_staging.py; a
    no-op when none is), its ``facts`` what the twin's launch records (``staged``). Under
    ``triton.autotune`` (no config in ``meta``) triton_kernels.hgemm.descriptor_blocks sets the boxes
    per config. ``b_in_place``: B is neither staged nor described but returned as it is, for a twin that
    reads it by pointer (hgemm v10's)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    a, b, copy = staged_operands(a, b, ("A",) if b_in_place else ("A", "B"))
    m, n, k = shape["M"], shape["N"], shape["K"]
    lead = list(a.shape[:-2])  # [batch] or []
    one = [1] * len(lead)

    def strides(t):
        return [*t.stride()[:-1], 1]  # rows may be padded; elements contiguous

    a_desc = TensorDescriptor(a, [*lead, m, k], strides(a), [*one, meta.get("BM", 64), meta.get("BK", 64)])
    if b_in_place:
        return a_desc, b, copy
    b_desc = TensorDescriptor(b, [*lead, k, n], strides(b), [*one, meta.get("BK", 64), meta.get("BN", 64)])
    return a_desc, b_desc, copy


def persistent_twin_launch(kernel, tensors, out, shape, config, precision, extra=(), cluster: int = 1):
    """hgemm v8's twin: TMA descriptors, at most one program per SM walking the tiles (v11's: ``cluster``
    programs a column of ``cluster`` tiles); ``extra``: tensors after the descriptors (gemm_bias_relu v2's bias)."""
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    meta = dict(config)
    a_desc, b_desc, copy = tensor_descriptors(a, b, shape, meta)
    more = [tensors[name] for name in extra]
    sms = sm_count(a)

    def grid(cfg):
        return (cluster * min(cdiv(cdiv(m, cfg["BM"]), cluster) * cdiv(n, cfg["BN"]), sms // cluster),)

    def fn():
        copy()
        kernel[grid](a_desc, b_desc, *more, out, m, n, k, out.stride(-2), out.stride(-1), sms, **meta)

    fn.facts = copy.facts  # what it staged, recorded with the config (study.backends.triton_launch)
    return fn


def twin_split_plans(kernel, meta, m, n, k, sms: int, device, rows: int | None = None, batch: int = 1, blocks=None):
    """The split-K twins' plans (hgemm v9/v10/v12, gemm_bias_relu v3, sgemm v12, bgemm v2): :func:`split_plan` of each
    tile the launch may run (its config's, or each of the autotune space's) over ``blocks(config)`` blocks (v12's
    BLOCKS_PER_SM; else ``sms``), one FP32 workspace for the largest plan's ``batch`` entries (none where none splits);
    ``rows``: the height where no config says it (v10's TOKENS). Returns (plan(cfg) → (splits, slices), ldp, ws)."""
    def key(cfg):
        return (rows or cfg["BM"], cfg["BN"], cfg["BK"], cfg["MIN_SLICES"], blocks(cfg) if blocks else sms)

    plans = {key(t): split_plan(m, n, k, *key(t)) for t in launch_configs(kernel, meta, "BN")}
    ldp = split_workspace(n)
    most = max(s for s, _ in plans.values())
    partial = torch.empty(batch * most * m * ldp if most > 1 else 1, dtype=torch.float32, device=device)
    return (lambda cfg: plans[key(cfg)]), ldp, partial


def reduce_splits(partial, out, m, n, ldp, stride_cm, splits, kernel=hgemm_twins.reduce_splits, extra=()):
    """hgemm v9's twin's second pass (sgemm v12's too), when the plan that ran has two splits or more:
    ``kernel`` (the plain sum, or gemm_bias_relu v3's with its epilogue), the tensors ``extra`` after C."""
    if splits > 1:
        kernel[(cdiv(m * n, hgemm_twins.REDUCE_BLOCK),)](partial, out, *extra, m, n, ldp, stride_cm, splits,
                                                         BLOCK=hgemm_twins.REDUCE_BLOCK)


def reduce_after_tuned_partials(nargs, exception=None, kernel=hgemm_twins.reduce_splits, extra=(), rows="BM"):
    """hgemm v9's twin (v10's, sgemm v12's too) under ``triton.autotune``: each config's partials summed
    inside the timed call (its ``post_hook``), as the rung's closure does after the tuned config, so that
    tuning ranks whole two-pass runs, as the CUDA tuner does, not the first kernel alone. ``kernel`` and
    ``extra`` (names of the partials kernel's arguments it also takes, after C): as :func:`reduce_splits`'s;
    ``rows``: the argument holding the tile's rows (v10's twin: TOKENS)."""
    if exception is None:
        m, n, k = nargs["M"], nargs["N"], nargs["K"]
        splits, _ = split_plan(m, n, k, nargs[rows], nargs["BN"], nargs["BK"], nargs["MIN_SLICES"], nargs["NUM_SMS"])
        reduce_splits(nargs["part_ptr"], nargs["c_ptr"], m, n, nargs["ldp"], nargs["stride_cm"], splits, kernel,
                      [nargs[name] for name in extra])


# ---- the library baselines ----------------------------------------------------------------------------

def torch_matmul(tensors, out, precision):
    a, b = tensors["A"], tensors["B"]
    return lambda: torch.matmul(a, b, out=out)


def nvmath_matmul(tensors, out, precision, autotune=False):
    from study.backends import cublaslt

    return cublaslt.matmul(tensors, out, precision, autotune=autotune)


# cuBLAS through torch.matmul (FP16/BF16: FP32 accumulation, reduced-precision reductions off,
# study/backends/library.py) and cuBLASLt through nvmath-python with COMPUTE_32F
# (study/backends/cublaslt.py): A and B as they come, batched or not.
CUBLASLT = Baseline("nvmath_matmul", "nvmath Matmul (cuBLASLt)", "cuBLASLt", "cublaslt", nvmath_matmul,
                    "nvmath.linalg.advanced.Matmul", tunable=True, requires="nvmath")
BASELINES = [Baseline("torch_matmul", "torch.matmul", "cuBLAS", "cublas", torch_matmul, "torch.matmul",
                      reference=True), CUBLASLT]

"""SGEMM: C = A·B in FP32, A (M×K) and B (K×N) row-major unless a rung says otherwise.

The ladder is the seed's FP32 ladder (docs/ladders/sgemm.md): v0 naive with column-major
B → v1 coalesced → v2 shared-memory tiling → v3 register micro-tile → v4 cp.async double
buffering, then past the seed: v5 split-K for skinny shapes → v6 warp tiling → v7 deeper
pipeline and grouped block order → v8 3xTF32 (FP32-accurate tensor-core emulation, recorded
as math ``3xtf32``) → v9 split-K on v7's tile → v10 the same split with its sum as a second kernel
over all of C → v11 3xTF32 on wgmma (Cᵀ = Bᵀ·Aᵀ, so that A is the K-major shared operand TF32 wgmma
needs). A rung is one line below; its kernel file and its Triton twin hold the rest.

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

from study.backends import Unsupported
from study.backends.tma import tma_reason
from study.precision import FP32, TF32
from study.problem import DEFAULT_SMS, DTYPES, CudaLaunch, KernelCall, Problem, cdiv, offsets_reason, sm_count
from study.registry import Baseline, Rung, register, twin
from triton_kernels import sgemm as tk

GRID_Z = 65535  # CUDA's limit on gridDim.z: the batch axis of a launch
# v11: A and B arrive by TMA (rows 16 bytes apart by a multiple: K and N multiples of 4 floats) in
# boxes of 32 floats, one 128-byte swizzled row; a persistent grid of one block per SM.
WGMMA_RUNG = "v11_3xtf32_wgmma"
TMA_FLOATS = 4   # floats in 16 bytes
TMA_BOX = 32     # floats in one 128-byte swizzled box row (cuda_kernels/sgemm/11_3xtf32_wgmma.cu)
REDUCE_SYMBOL = "sgemm_v10_reduce_ranges"  # v10's second kernel, in its own file

# The split-K plan of v5 and v9: enough blocks for two per SM (v5's launch bounds; v9's tiles hold one to
# three), each K range at least four BK slices long (a shorter range is mostly pipeline fill and reduction).
SPLIT_BLOCKS_PER_SM = 2
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


def shared_bytes(defines) -> int:
    """Dynamic shared memory of the rungs that declare it (0: static only): v6/v7's stages of A^T
    and B rows padded by 4 (tile_warp.cuh), v8's A rows padded by 8 and B rows by 4
    (08_3xtf32.cu). The kernels compute the same SMEM_BYTES and trap when given less."""
    bm, bn, bk, stages = defines.get("BM"), defines.get("BN"), defines.get("BK"), defines.get("STAGES", 2)
    if "WM" not in defines:
        return 0
    if "TM" in defines:  # FFMA warp tiles (v6, v7)
        return stages * bk * (bm + 4 + bn + 4) * 4
    return stages * (bm * (bk + 8) + bk * (bn + 4)) * 4  # tensor-core warp tiles (v8)


def wgmma_shared_bytes(defines) -> int:
    """v11's dynamic shared memory: STAGES stages of A's BM × 32 box, its lo plane and BN/32 boxes of
    BK × 32 of B (4 bytes each), three 8-byte mbarriers a stage and 1024 bytes to align the base to
    the swizzle atom (the kernel's SMEM_BYTES)."""
    bm, bn, bk, stages = defines["BM"], defines["BN"], defines["BK"], defines["STAGES"]
    return stages * ((2 * bm * TMA_BOX + bk * bn) * 4 + 24) + 1024


def b_as_stored(b):
    """B as the CUDA kernels index it: a column-major B (v0, strides (1, K) from ``with_layout``)
    as its N×K storage, whose rows are B's columns; otherwise B itself. Not ``is_contiguous()``:
    torch calls a column-major 1×N B contiguous, and its row stride N would be passed as ldb."""
    col_major = b.dim() == 2 and b.stride(-2) == 1 and b.stride(-1) == b.size(-2)
    return b.transpose(-2, -1) if col_major else b


class SGEMM(Problem):
    name = "sgemm"
    axes = ("M", "N", "K")
    bound = "compute"
    precisions = (FP32, TF32)
    default_precisions = ("fp32",)
    default_shapes = ({"M": 4096, "N": 4096, "K": 4096}, {"M": 1000, "N": 1500, "K": 1700})
    # Past 64- and 128-wide tiles and BK = 16 and 32 (the scalar paths); the same with every row
    # 16-byte aligned (the float4/cp.async paths); K = 1 (a column-major B's columns are 1 apart);
    # a long K on few tiles (v5's K ranges, partials and ordered reduction, scalar and 16-byte).
    sanitize_shapes = ({"M": 67, "N": 131, "K": 33}, {"M": 68, "N": 132, "K": 36}, {"M": 3, "N": 129, "K": 1},
                       {"M": 5, "N": 7, "K": 1000}, {"M": 68, "N": 132, "K": 1024})
    tolerance = {"fp32": 2e-6, "tf32": 5e-3}
    paddable = True  # the CUDA rungs take lda, ldb, ldc; Triton and the libraries take strides
    error_metric = "max |out − ref| / (|A|·|B|)"
    rss_metric = "max |out − ref| / sqrt((A∘A)·(B∘B)), the products' root-sum-square"

    def metric(self, precision) -> str:
        return self.rss_metric if precision.math == "tf32" else self.error_metric

    # A batch axis (an op that declares one: bgemm) makes every method below act on ``batch``
    # independent products: leading tensor dimension, third grid axis, work times batch.
    @staticmethod
    def batch(shape) -> int:
        return shape.get("batch", 1)

    @staticmethod
    def _lead(shape) -> tuple:
        return (shape["batch"],) if "batch" in shape else ()

    def flops(self, shape) -> int:
        return 2 * self.batch(shape) * shape["M"] * shape["N"] * shape["K"]

    def bytes(self, shape, precision) -> int:
        m, n, k = shape["M"], shape["N"], shape["K"]
        return precision.element_bytes * self.batch(shape) * (m * k + k * n + m * n)

    def bytes_needed(self, shape, precision) -> int:
        m, n, k = shape["M"], shape["N"], shape["K"]
        # fp32 inputs, output and a re-laid B; float64 copies of A, B, |A|, |B|;
        # float64 reference, scale and the two temporaries of the comparison; v5's and v9's workspace
        # (fewer than M·N + two blocks per SM's tiles of partials, tiles of up to 128×256).
        return self.batch(shape) * (4 * (m * k + 2 * k * n + m * n) + 8 * 2 * (m * k + k * n) + 8 * 4 * m * n) \
            + 4 * (m * n + SPLIT_BLOCKS_PER_SM * DEFAULT_SMS * 128 * 256)

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

    # ---- data -----------------------------------------------------------------
    def make_inputs(self, shape, precision, seed, device):
        """Uniform in [−1, 1), drawn in FP32 and stored in the precision's type (bgemm's FP16 and BF16:
        rounded, so the reference is the exact product of the values the kernels read)."""
        gen, lead, dtype = torch.Generator().manual_seed(seed), self._lead(shape), DTYPES[precision.dtype]
        a = torch.rand(*lead, shape["M"], shape["K"], generator=gen, dtype=torch.float32) * 2 - 1
        b = torch.rand(*lead, shape["K"], shape["N"], generator=gen, dtype=torch.float32) * 2 - 1
        return {"A": a.to(device, dtype), "B": b.to(device, dtype)}

    def structured_inputs(self, shape, precision, device):
        """Small random integers in [−2, 2] (a fixed seed): every product and partial sum is exact in
        FP32 while 4K < 2^24, so the float64 reference is the exact answer and any misplaced
        element shows, with no rounding to hide in. Stored in the precision's type: the integers are
        exact in FP16 and BF16 too (bgemm's; study/ops/hgemm.py says why C stays exact)."""
        gen, lead, dtype = torch.Generator().manual_seed(2**31 - 1), self._lead(shape), DTYPES[precision.dtype]
        a = torch.randint(-2, 3, (*lead, shape["M"], shape["K"]), generator=gen).float()
        b = torch.randint(-2, 3, (*lead, shape["K"], shape["N"]), generator=gen).float()
        return {"A": a.to(device, dtype), "B": b.to(device, dtype)}

    def make_output(self, shape, precision, device):
        # Poisoned: an element the kernel never writes stays NaN and fails the gate.
        return torch.full((*self._lead(shape), shape["M"], shape["N"]), float("nan"),
                          dtype=DTYPES[precision.dtype], device=device)

    def with_layout(self, tensors, layout):
        """Logical K×N B, stored column-major where the rung asks (strides (1, K))."""
        out = dict(tensors)
        if layout.get("B") == "col":  # built, not `.t().contiguous().t()`, which keeps (N, 1) strides when K = 1
            b = tensors["B"]
            out["B"] = torch.empty((b.size(1), b.size(0)), dtype=b.dtype, device=b.device).copy_(b.t()).t()
        return out

    def reference(self, tensors, precision):
        a = tensors["A"].to(torch.float64)  # @ multiplies a batch entry by entry
        b = tensors["B"].to(torch.float64)
        if precision.math == "tf32":
            return a @ b, ((a * a) @ (b * b)).sqrt()
        return a @ b, a.abs() @ b.abs()

    # ---- CUDA glue ------------------------------------------------------------
    def axis_multiples(self, rung: str) -> dict[str, int]:
        return {"N": TMA_FLOATS, "K": TMA_FLOATS} if rung == WGMMA_RUNG else {}

    def cuda_check(self, params, shape, precision, rung="") -> str | None:
        if rung == WGMMA_RUNG:  # persistent: a 1-D grid
            return tma_reason(self, shape, rung, "TMA reads")
        if cdiv(shape["M"], params["BM"]) > 65535:
            return f"M={shape['M']} needs more than 65535 row blocks of BM={params['BM']} (grid.y limit)"
        return None

    def cuda_defines(self, config, tensors, out, shape, precision):
        """The config plus ALIGNED: 1 when every row of A, B and C starts on 16 bytes (K, N and the
        leading dimensions multiples of 4, the base addresses aligned), so ``float4``/16-byte
        ``cp.async`` may be used; 0 selects the kernels' scalar paths."""
        a, b = tensors["A"], tensors["B"]
        leading = (a.stride(-2), max(b.stride(-2), b.stride(-1)), out.stride(-2))  # B may be column-major (v0)
        aligned = (shape["K"] % 4 == 0 and shape["N"] % 4 == 0 and all(ld % 4 == 0 for ld in leading)
                   and all(t.data_ptr() % 16 == 0 for t in (a, b, out)))
        return {**super().cuda_defines(config, tensors, out, shape, precision), "ALIGNED": int(aligned)}

    def cuda_launch(self, rung, defines, tensors, out, shape):
        from study.backends.cuda import as_cupy

        b_storage = b_as_stored(tensors["B"])
        m, n, k = shape["M"], shape["N"], shape["K"]
        if rung == WGMMA_RUNG:
            return self._wgmma_launch(defines, tensors, out, shape)
        grid = (cdiv(n, defines["BN"]), cdiv(m, defines["BM"]), self.batch(shape))
        args = [as_cupy(tensors["A"], padded_rows=True), as_cupy(b_storage, padded_rows=True),
                as_cupy(out, padded_rows=True), np.int32(m), np.int32(n), np.int32(k),
                # leading dimensions: rows of A, B (columns, when B is column-major) and C are
                # this many elements apart (a padded view: docs/ladders/sgemm.md, alignment)
                np.int32(tensors["A"].stride(-2)), np.int32(b_storage.stride(-2)), np.int32(out.stride(-2))]
        facts, smem, after = {}, shared_bytes(defines), ()
        if defines.get("SPLIT"):  # v5, v9, v10: K ranges on grid.z and a workspace of partial tiles
            if self.batch(shape) != 1:
                raise ValueError("the split-K rung computes one product: its grid.z holds the K ranges")
            splits, split_k = split_k_plan(m, n, k, defines["BM"], defines["BN"], defines["BK"], sm_count(out))
            partial = torch.empty(splits * m * n if splits > 1 else 1, dtype=torch.float32, device=out.device)
            args += [np.int32(split_k), as_cupy(partial)]
            if "REDUCE_THREADS" in defines:  # v10: the sum is a second kernel over all of C
                if splits > 1:
                    cols = defines["REDUCE_THREADS"] // defines["REDUCE_GROUPS"]
                    reduce = CudaLaunch(grid=(cdiv(m * n, cols), 1, 1), block=(defines["REDUCE_THREADS"], 1, 1),
                                        args=(as_cupy(partial), as_cupy(out, padded_rows=True), np.int32(m),
                                              np.int32(n), np.int32(out.stride(-2)), np.int32(splits)))
                    after = (KernelCall(None, REDUCE_SYMBOL, defines, reduce),)
            else:  # v5, v9: the last block of each tile adds its partials, a counter per tile
                counter = torch.zeros(grid[0] * grid[1], dtype=torch.int32, device=out.device)
                args.append(as_cupy(counter))
            grid = (grid[0], grid[1], splits)
            facts = {"splits": splits, "split_k": split_k}
        return CudaLaunch(grid=grid, block=(defines["THREADS"], 1, 1), args=tuple(args), smem=smem, facts=facts,
                          after=after)

    def _wgmma_launch(self, defines, tensors, out, shape):
        """v11: tensor maps of A (boxes of BM rows × 32 floats) and B (BK rows × 32), C by pointer
        (stored element by element), one block per SM walking the tiles (fewer if fewer tiles)."""
        from study.backends.cuda import as_cupy
        from study.backends.tma import tensor_map

        if self.batch(shape) != 1:
            raise Unsupported("sgemm v11 computes one product; its tensor maps are 2-D")
        a, b = tensors["A"], tensors["B"]
        m, n, k = shape["M"], shape["N"], shape["K"]
        maps = (tensor_map("A", a, TMA_BOX, defines["BM"]), tensor_map("B", b, TMA_BOX, defines["BK"]))
        blocks = min(cdiv(m, defines["BM"]) * cdiv(n, defines["BN"]), sm_count(out))
        args = (*maps, as_cupy(out, padded_rows=True), np.int32(m), np.int32(n), np.int32(k), np.int32(out.stride(-2)))
        return CudaLaunch(grid=(blocks, 1, 1), block=(defines["THREADS"], 1, 1), args=args,
                          smem=wgmma_shared_bytes(defines), facts={"blocks": blocks}, keep=(a, b, out))

    # ---- Triton glue ----------------------------------------------------------
    def triton_launch(self, kernel, tensors, out, shape, config, precision):
        a, b = tensors["A"], tensors["B"]
        m, n, k = shape["M"], shape["N"], shape["K"]
        meta = dict(config)
        if "INPUT_PRECISION" in kernel.arg_names:  # only the tl.dot kernels take it
            meta["INPUT_PRECISION"] = precision.triton_input_precision

        batch = self.batch(shape)
        if "part_ptr" in kernel.arg_names:  # the split-K twins: grid.z holds K ranges planned per tile size
            return self._split_k_launch(kernel, a, b, out, m, n, k, meta)
        entry = [t.stride(0) if t.dim() == 3 else 0 for t in (a, b, out)]  # batch strides; 0 for one product

        def grid(cfg):
            return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]), batch)

        def fn():
            kernel[grid](a, b, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                         out.stride(-2), out.stride(-1), *entry, **meta)

        return fn

    @staticmethod
    def _split_k_launch(kernel, a, b, out, m, n, k, meta):
        """The split twins (v5/v9's, v10's): the same split_k_plan from the config's tile (under
        autotune, each config's own, planned here once, not at every launch), a workspace sized for
        the largest plan of the twin's space; v5/v9's counters, or v10's reduction kernel after the
        partials."""
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

        if "count_ptr" not in kernel.arg_names:  # v10's twin: partials, then the reduction kernel
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


def torch_matmul(tensors, out, precision):
    a, b = tensors["A"], tensors["B"]
    return lambda: torch.matmul(a, b, out=out)


def nvmath_matmul(tensors, out, precision, autotune=False):
    from study.backends import cublaslt

    return cublaslt.matmul(tensors, out, precision, autotune=autotune)


# The naive twins multiply and add element by element: FFMA, never tensor cores, so FP32 only (a
# "tf32" record of theirs would be FP32 arithmetic under a TF32 label). The CUDA rungs declare
# the same in their headers (the default, fp32).
FFMA_ONLY = ("fp32",)

# cuBLASLt through nvmath-python: A and B as they come, batched or not (bgemm registers it too).
CUBLASLT = Baseline("nvmath_matmul", "nvmath Matmul (cuBLASLt)", "cuBLASLt", "cublaslt", nvmath_matmul,
                    "nvmath.linalg.advanced.Matmul", tunable=True, requires="nvmath")
BASELINES = [Baseline("torch_matmul", "torch.matmul", "cuBLAS", "cublas", torch_matmul, "torch.matmul",
                      reference=True), CUBLASLT]

register(
    SGEMM(),
    rungs=[
        Rung("v0_naive_colmajor_b", "one thread per output, B column-major",
             "— (the baseline: a warp's B reads are K·4 bytes apart, uncoalesced)",
             cuda="00_naive_colmajor_b.cu",
             triton=twin(tk.sgemm_naive, tk.V0_NAIVE_COLMAJOR_B, tk.NAIVE_SPACE, precisions=FFMA_ONLY),
             layout={"B": "col"}),
        Rung("v1_naive", "B row-major: a warp reads 32 consecutive floats", "uncoalesced global loads",
             cuda="01_naive.cu", triton=twin(tk.sgemm_naive, tk.V1_NAIVE, tk.NAIVE_SPACE, precisions=FFMA_ONLY)),
        Rung("v2_smem_tiling", "64×64×16 tiles in shared memory, float4 global→shared copies",
             "re-reading every operand from global memory", cuda="02_smem_tiling.cu",
             triton=twin(tk.sgemm_tiled, tk.V2_SMEM_TILING, tk.SINGLE_BUFFER_SPACE)),
        Rung("v3_register_tile", "128×128×16 tile, 8×8 outputs per thread, float4 shared loads, 64 accumulators",
             "too many shared-memory loads per FFMA", cuda="03_register_tile.cu",
             triton=twin(tk.sgemm_tiled, tk.V3_REGISTER_TILE, tk.SINGLE_BUFFER_SPACE)),
        Rung("v4_double_buffer", "cp.async double buffering: load tile k+1 while computing tile k",
             "waiting at the barrier for each tile's loads", cuda="04_double_buffer.cu",
             triton=twin(tk.sgemm_tiled, tk.V4_DOUBLE_BUFFER, tk.DOUBLE_BUFFER_SPACE)),
        Rung("v5_split_k", "split-K: K ranges on extra blocks when the M×N tiles are too few, ordered last-block "
             "reduction", "idle SMs on skinny shapes (small M·N, long K)", cuda="05_split_k.cu",
             triton=twin(tk.sgemm_split_k, tk.V5_SPLIT_K, tk.DOUBLE_BUFFER_SPACE)),
        Rung("v6_warp_tile", "warp tiling: a warp owns a 32×64 sub-tile, its lanes 8×8 outputs each; 8×16 "
             "thread tiles in the space", "shared-memory reads spread over the block's width; issue slots "
             "spent on loads", cuda="06_warp_tile.cu",
             triton=twin(tk.sgemm_tiled, tk.V6_WARP_TILE, tk.DOUBLE_BUFFER_SPACE)),
        Rung("v7_multistage", "3–4 cp.async stages, blocks grouped 8 block rows at a time for L2 reuse",
             "load latency two stages leave exposed; L2 misses of the launch order", cuda="07_multistage.cu",
             triton=twin(tk.sgemm_grouped, tk.V7_MULTISTAGE, tk.MULTISTAGE_SPACE)),
        Rung("v8_3xtf32", "3xTF32: FP32 operands split into TF32 hi + lo, three mma.sync m16n8k8 products "
             "(FP32-accurate tensor-core emulation)", "the FFMA pipe's ceiling", cuda="08_3xtf32.cu",
             triton=twin(tk.sgemm_3xtf32, tk.V8_3XTF32, tk.TENSOR_SPACE, precisions=("fp32",)),  # the FP32 problem
             math={"fp32": "3xtf32"}),
        Rung("v9_split_k_multistage", "v5's split-K and ordered reduction on v7's warp-tiled multi-stage tile, "
             "64-row tiles in the space", "v5's half-empty 128-row tiles and v4 inner loop on skinny shapes",
             cuda="09_split_k_multistage.cu",
             triton=twin(tk.sgemm_split_k, tk.V9_SPLIT_K_MULTISTAGE, tk.SPLIT_MULTISTAGE_SPACE)),
        Rung("v10_split_k_two_pass", "v9's K ranges into partial tiles, then a second kernel sums them over all of C "
             "(fixed order: strided range groups, then the groups in order)",
             "v9's reduction by one block per tile while the other SMs idle", cuda="10_split_k_two_pass.cu",
             triton=twin(tk.sgemm_split_k_partials, tk.V10_SPLIT_K_TWO_PASS, tk.TWO_PASS_SPACE,
                         post_hook=reduce_after_tuned_partials)),
        Rung(WGMMA_RUNG, "3xTF32 on wgmma: Cᵀ = Bᵀ·Aᵀ, B's fragments split in registers, A split once per stage "
             "by a producer warpgroup (FP32-accurate tensor-core emulation)", "v8's legacy mma.sync path and its "
             "per-warp splits", cuda="11_3xtf32_wgmma.cu",
             triton=twin(tk.sgemm_3xtf32_transposed, tk.V11_3XTF32_WGMMA, tk.TENSOR_SPACE, precisions=("fp32",)),
             math={"fp32": "3xtf32"}),
    ],
    baselines=BASELINES,
)

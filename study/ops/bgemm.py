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
twin with 3-D tensor descriptors (FP16, BF16).

Correctness gate, entry by entry: SGEMM's for FP32 and TF32 (study/ops/sgemm.py), HGEMM's for
FP16 and BF16 (the scale |A|·|B| plus η, the storage type's smallest normal; study/ops/hgemm.py
derives the tolerances).
"""

from __future__ import annotations

import torch

from study.backends.tma import tma_reason
from study.ops.hgemm import HGEMM, SMALLEST_NORMAL, TOLERANCE, VECTOR, persistent_tma_launch, tensor_descriptors
from study.ops.sgemm import CUBLASLT, SGEMM
from study.precision import BF16_TENSOR, FP16_TENSOR, FP32, TF32
from study.problem import cdiv, sm_count
from study.registry import Baseline, Rung, register, twin
from triton_kernels import bgemm as tkb
from triton_kernels import hgemm as tkh
from triton_kernels import sgemm as tk

TENSOR_RUNG = "v1_batched_wgmma"  # hgemm v8's tile over the batch: TMA, so K and N multiples of 8


def half(precision) -> bool:
    """FP16 or BF16 storage: HGEMM's gate, data and rungs."""
    return precision.dtype != "float32"


class BGEMM(SGEMM):
    """SGEMM with a batch axis: SGEMM's methods handle it (inputs batch×M×K and batch×K×N, the
    batch on the third grid axis, work times batch, the 32-bit and grid.z limits); the half
    precisions take HGEMM's gate and storage, and the tensor-core rung HGEMM v8's TMA launch."""

    name = "bgemm"
    axes = ("batch", "M", "N", "K")
    precisions = (FP32, TF32, FP16_TENSOR, BF16_TENSOR)
    default_precisions = ("fp32", "fp16")
    tolerance = {**SGEMM.tolerance, **TOLERANCE}
    default_shapes = ({"batch": 256, "M": 512, "N": 512, "K": 64},     # attention scores, 512 tokens, head dim 64
                      {"batch": 128, "M": 1024, "N": 64, "K": 1024},   # scores × values, 1024 tokens
                      {"batch": 32, "M": 1024, "N": 1024, "K": 128},
                      {"batch": 8192, "M": 32, "N": 32, "K": 32})      # many tiny products
    # Tile tails everywhere (scalar paths), and a shape whose every entry is 16-byte aligned, so the
    # sanitizer also sees the 16-byte cp.async path with batch offsets; one with 16-byte rows in either
    # storage (K and N multiples of 8), which the TMA rung takes, with tails in M, N and K.
    sanitize_shapes = ({"batch": 3, "M": 67, "N": 131, "K": 33}, {"batch": 3, "M": 68, "N": 132, "K": 36},
                       {"batch": 3, "M": 72, "N": 136, "K": 40})
    paddable = False  # align measures M, N, K ops; a padded batch would also need its 32-bit limit padded

    def metric(self, precision) -> str:
        return HGEMM.error_metric if half(precision) else super().metric(precision)

    def reference(self, tensors, precision):
        ref, scale = super().reference(tensors, precision)
        return (ref, scale + SMALLEST_NORMAL[precision.name]) if half(precision) else (ref, scale)

    # ---- the tensor-core rung: 3-D tensor maps, a persistent grid -----------------------------
    def axis_multiples(self, rung: str) -> dict[str, int]:
        return {"N": VECTOR, "K": VECTOR} if rung == TENSOR_RUNG else {}

    def cuda_check(self, params, shape, precision, rung="") -> str | None:
        if rung == TENSOR_RUNG:  # one block per SM walks the batch: no grid-axis limit
            return tma_reason(self, shape, rung, "TMA reads")
        return super().cuda_check(params, shape, precision, rung)

    def cuda_launch(self, rung, defines, tensors, out, shape):
        if rung != TENSOR_RUNG:
            return super().cuda_launch(rung, defines, tensors, out, shape)
        batch, m, n, k = self.batch(shape), shape["M"], shape["N"], shape["K"]
        tiles = batch * cdiv(m, defines["BM"]) * cdiv(n, defines["BN"])  # v8's launch, its maps 3-D
        return persistent_tma_launch(defines, tensors["A"], tensors["B"], out, (batch, m, n, k), tiles)

    def triton_check(self, shape, precision, rung="") -> str | None:
        return tma_reason(self, shape, rung, "Triton's tensor descriptors (TMA) read")

    def triton_launch(self, kernel, tensors, out, shape, config, precision):
        if "a_desc" not in kernel.arg_names:
            return super().triton_launch(kernel, tensors, out, shape, config, precision)
        batch, m, n, k = self.batch(shape), shape["M"], shape["N"], shape["K"]
        meta = dict(config)
        a_desc, b_desc = tensor_descriptors(tensors["A"], tensors["B"], shape, meta)  # 3-D: boxes of one entry
        sms = sm_count(out)

        def grid(cfg):
            return (min(batch * cdiv(m, cfg["BM"]) * cdiv(n, cfg["BN"]), sms),)

        def fn():
            kernel[grid](a_desc, b_desc, out, batch, m, n, k, out.stride(0), out.stride(1), out.stride(2), sms, **meta)

        return fn


def torch_bmm(tensors, out, precision):
    a, b = tensors["A"], tensors["B"]
    return lambda: torch.bmm(a, b, out=out)


register(
    BGEMM(),
    rungs=[
        Rung("v0_batched_tiles", "SGEMM v4's 128×128×16 double-buffered tile, one grid z-slice per batch entry",
             "— (the baseline of this op: SGEMM's tiling, whatever the matrix size)", cuda="00_batched_tiles.cu",
             triton=twin(tk.sgemm_tiled, tk.V4_DOUBLE_BUFFER, tk.DOUBLE_BUFFER_SPACE, precisions=("fp32", "tf32"))),
        Rung(TENSOR_RUNG, "hgemm v8 over the batch: warp-specialised wgmma fed by 3-D TMA maps (the entry their "
             "third dimension), a persistent grid walking batch × tiles, C by TMA stores; 64-wide n tiles in the space",
             "v0's FFMA pipe (FP32 arithmetic) and its one grid z-slice per entry", cuda="01_batched_wgmma.cu",
             triton=twin(tkb.bgemm_persistent, tkb.V1_BATCHED_WGMMA, tkb.BATCHED_SPACE, precisions=("fp16", "bf16"),
                         pre_hook=tkh.descriptor_blocks)),
    ],
    baselines=[Baseline("torch_bmm", "torch.bmm", "cuBLAS", "cublas", torch_bmm, "torch.bmm", reference=True),
               CUBLASLT],
)

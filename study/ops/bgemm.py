"""BGEMM: strided-batched C[b] = A[b]·B[b] in FP32 (docs/ladders/bgemm.md).

A (batch×M×K), B (batch×K×N) and C (batch×M×N) are contiguous, so entry b of each starts
b·M·K, b·K·N and b·M·N elements in: cuBLAS's strided-batched GEMM (``torch.bmm``). The shapes
are those of attention heads (a batch of 32–256 products of 64–1024-wide matrices) and one batch
of many tiny products, where a tile built for 4096² matrices leaves most of a block idle.

The rungs reuse the SGEMM ladder's best tiling with the batch entry on the third grid axis: the
CUDA kernel calls the v4 tile (cuda_kernels/sgemm/tile_double_buffer.cuh) on the entry's
matrices, the Triton twin is SGEMM's ``tl.dot`` kernel with its batch program axis. The
correctness gate and its tolerance are SGEMM's, entry by entry (study/ops/sgemm.py).
"""

from __future__ import annotations

import torch

from study.ops.sgemm import CUBLASLT, SGEMM
from study.registry import Baseline, Rung, register, twin
from triton_kernels import sgemm as tk


class BGEMM(SGEMM):
    """SGEMM with a batch axis: SGEMM's methods handle it (inputs batch×M×K and batch×K×N, the
    batch on the third grid axis, work times batch, the 32-bit and grid.z limits)."""

    name = "bgemm"
    axes = ("batch", "M", "N", "K")
    default_shapes = ({"batch": 256, "M": 512, "N": 512, "K": 64},     # attention scores, 512 tokens, head dim 64
                      {"batch": 128, "M": 1024, "N": 64, "K": 1024},   # scores × values, 1024 tokens
                      {"batch": 32, "M": 1024, "N": 1024, "K": 128},
                      {"batch": 8192, "M": 32, "N": 32, "K": 32})      # many tiny products
    # Tile tails everywhere (scalar paths), and a shape whose every entry is 16-byte aligned, so the
    # sanitizer also sees the 16-byte cp.async path with batch offsets.
    sanitize_shapes = ({"batch": 3, "M": 67, "N": 131, "K": 33}, {"batch": 3, "M": 68, "N": 132, "K": 36})
    paddable = False  # align measures M, N, K ops; a padded batch would also need its 32-bit limit padded


def torch_bmm(tensors, out, precision):
    a, b = tensors["A"], tensors["B"]
    return lambda: torch.bmm(a, b, out=out)


register(
    BGEMM(),
    rungs=[
        Rung("v0_batched_tiles", "SGEMM v4's 128×128×16 double-buffered tile, one grid z-slice per batch entry",
             "— (the baseline of this op: SGEMM's tiling, whatever the matrix size)", cuda="00_batched_tiles.cu",
             triton=twin(tk.sgemm_tiled, tk.V4_DOUBLE_BUFFER, tk.DOUBLE_BUFFER_SPACE)),
    ],
    baselines=[Baseline("torch_bmm", "torch.bmm", "cuBLAS", "cublas", torch_bmm, "torch.bmm", reference=True),
               CUBLASLT],
)

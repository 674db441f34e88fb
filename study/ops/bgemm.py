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

import numpy as np
import torch

from study.ops.sgemm import SGEMM, nvmath_matmul
from study.problem import INT32_MAX, CudaLaunch, cdiv
from study.registry import Baseline, Rung, register, twin
from triton_kernels import sgemm as tk

GRID_Z = 65535  # CUDA's limit on gridDim.z: the batch axis of the launch


class BGEMM(SGEMM):
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

    def _one(self, shape) -> dict:
        return {"M": shape["M"], "N": shape["N"], "K": shape["K"]}

    def flops(self, shape) -> int:
        return shape["batch"] * super().flops(self._one(shape))

    def bytes(self, shape, precision) -> int:
        return shape["batch"] * super().bytes(self._one(shape), precision)

    def bytes_needed(self, shape, precision) -> int:
        return shape["batch"] * super().bytes_needed(self._one(shape), precision)

    def check(self, shape, precision) -> str | None:
        reason = super(SGEMM, self).check(shape, precision)  # sizes and precision (SGEMM's adds 2-D limits)
        if reason:
            return reason
        m, n, k, batch = shape["M"], shape["N"], shape["K"], shape["batch"]
        biggest = batch * max(m * k, k * n, m * n)
        if biggest > INT32_MAX:
            return (f"a batch of {biggest} elements is beyond the 32-bit element offsets the Triton twins use "
                    f"(at most {INT32_MAX})")
        if batch > GRID_Z:
            return f"batch={batch} is beyond the {GRID_Z} entries one launch's grid.z can hold"
        return None

    # ---- data -----------------------------------------------------------------
    def make_inputs(self, shape, precision, seed, device):
        gen = torch.Generator().manual_seed(seed)
        batch, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
        a = torch.rand(batch, m, k, generator=gen, dtype=torch.float32) * 2 - 1
        b = torch.rand(batch, k, n, generator=gen, dtype=torch.float32) * 2 - 1
        return {"A": a.to(device), "B": b.to(device)}

    def structured_inputs(self, shape, precision, device):
        """SGEMM's small random integers (exact answers), one batch of them."""
        gen = torch.Generator().manual_seed(2**31 - 1)
        batch, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
        a = torch.randint(-2, 3, (batch, m, k), generator=gen).float()
        b = torch.randint(-2, 3, (batch, k, n), generator=gen).float()
        return {"A": a.to(device), "B": b.to(device)}

    def make_output(self, shape, precision, device):
        return torch.full((shape["batch"], shape["M"], shape["N"]), float("nan"), dtype=torch.float32, device=device)

    def with_layout(self, tensors, layout):
        return dict(tensors)

    def reference(self, tensors, precision):
        a = tensors["A"].to(torch.float64)
        b = tensors["B"].to(torch.float64)
        if precision.math == "tf32":  # SGEMM's TF32 scale, entry by entry
            return torch.bmm(a, b), torch.bmm(a * a, b * b).sqrt()
        return torch.bmm(a, b), torch.bmm(a.abs(), b.abs())

    # ---- CUDA glue ------------------------------------------------------------
    def cuda_launch(self, rung, defines, tensors, out, shape):
        from study.backends.cuda import as_cupy

        # ALIGNED (SGEMM's test: K and N multiples of 4, 16-byte base addresses) also aligns every
        # entry: its offsets b·M·K, b·K·N, b·M·N are multiples of 4 elements when K and N are.
        return CudaLaunch(
            grid=(cdiv(shape["N"], defines["BN"]), cdiv(shape["M"], defines["BM"]), shape["batch"]),
            block=(defines["THREADS"], 1, 1),
            args=(as_cupy(tensors["A"], padded_rows=True), as_cupy(tensors["B"], padded_rows=True),
                  as_cupy(out, padded_rows=True),
                  np.int32(shape["M"]), np.int32(shape["N"]), np.int32(shape["K"]),
                  np.int32(tensors["A"].stride(1)), np.int32(tensors["B"].stride(1)), np.int32(out.stride(1))))

    # ---- Triton glue ----------------------------------------------------------
    def triton_launch(self, kernel, tensors, out, shape, config, precision):
        a, b = tensors["A"], tensors["B"]
        m, n, k, batch = shape["M"], shape["N"], shape["K"], shape["batch"]
        meta = dict(config)
        if "INPUT_PRECISION" in kernel.arg_names:
            meta["INPUT_PRECISION"] = precision.triton_input_precision

        def grid(cfg):
            return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]), batch)

        def fn():
            kernel[grid](a, b, out, m, n, k, a.stride(1), a.stride(2), b.stride(1), b.stride(2),
                         out.stride(1), out.stride(2), a.stride(0), b.stride(0), out.stride(0), **meta)

        return fn


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
               Baseline("nvmath_matmul", "nvmath Matmul (cuBLASLt)", "cuBLASLt", "cublaslt", nvmath_matmul,
                        "nvmath.linalg.advanced.Matmul", tunable=True, requires="nvmath")],
)

"""An op of one's own, loaded as a plugin: ``out = ALPHA·x + y`` over N elements (AXPY), with one
CUDA rung, its Triton twin and torch as the reference. docs/extending.md walks through it.

    PYTHONPATH=examples/axpy_plugin STUDY_PLUGINS=axpy_op python -m study list
    PYTHONPATH=examples/axpy_plugin STUDY_PLUGINS=axpy_op python -m study compare --op axpy   # GPU
"""

from pathlib import Path

import numpy as np
import torch

from axpy_triton import BLOCKS_SPACE, V0_BLOCKS, axpy_blocks
from study.backends import cuda
from study.precision import BF16_STORAGE, FP16_STORAGE, FP32
from study.problem import DTYPES, CudaLaunch, CudaLauncher, Problem, cdiv, sm_count
from study.registry import Baseline, Rung, register, twin

ALPHA = 1.5
# The gate's error is |out − ref| / (|ALPHA·x| + |y|): one rounding to the storage type, a little over
# half its unit in the last place (FP32 and FP16 to nearest, BF16 8 bits).
TOLERANCE = {"fp32": 2e-7, "fp16": 1e-3, "bf16": 8e-3}


class Axpy(Problem):
    name = "axpy"
    axes = ("N",)
    bound = "memory"
    precisions = (FP32, FP16_STORAGE, BF16_STORAGE)
    default_precisions = ("fp32", "bf16")
    default_shapes = ({"N": 2**26},)             # 768 MiB of traffic in FP32: far past the 60 MB L2
    sanitize_shapes = ({"N": 1031}, {"N": 70001})  # tails in the last block, and a grid that strides
    tolerance = TOLERANCE
    error_metric = "max |out − ref| / (|ALPHA·x| + |y|)"

    def flops(self, shape) -> int:
        return 2 * shape["N"]

    def bytes(self, shape, precision) -> int:
        return 3 * precision.element_bytes * shape["N"]  # x and y read, out written

    def bytes_needed(self, shape, precision) -> int:
        return (3 * precision.element_bytes + 3 * 8) * shape["N"]  # and the float64 reference and scale

    def make_inputs(self, shape, precision, seed, device):
        gen = torch.Generator().manual_seed(seed)
        x, y = (torch.rand(2, shape["N"], generator=gen) * 2 - 1)
        return {"x": x.to(DTYPES[precision.dtype]).to(device), "y": y.to(DTYPES[precision.dtype]).to(device)}

    def make_output(self, shape, precision, device):
        return torch.full((shape["N"],), float("nan"), dtype=DTYPES[precision.dtype], device=device)

    def reference(self, tensors, precision):
        x, y = tensors["x"].to(torch.float64), tensors["y"].to(torch.float64)
        return ALPHA * x + y, (ALPHA * x).abs() + y.abs() + torch.finfo(torch.float64).tiny


def grid_stride_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """As many blocks as BLOCKS_PER_SM on every SM, or fewer when N needs fewer."""
    n, threads = shape["N"], defines["THREADS"]
    blocks = min(cdiv(n, threads), defines["BLOCKS_PER_SM"] * sm_count(out))
    args = (cuda.as_cupy(tensors["x"]), cuda.as_cupy(tensors["y"]), cuda.as_cupy(out), np.float32(ALPHA),
            np.int64(n))
    return CudaLaunch(grid=(blocks, 1, 1), block=(threads, 1, 1), args=args)


def blocks_twin_launch(kernel, tensors, out, shape, config, precision):
    n, x, y = shape["N"], tensors["x"], tensors["y"]
    meta = dict(config)
    return lambda: kernel[lambda m: (cdiv(n, m["BLOCK"]),)](x, y, out, ALPHA, n, **meta)


def torch_axpy(tensors, out, precision):
    x, y = tensors["x"], tensors["y"]
    return lambda: torch.add(y, x, alpha=ALPHA, out=out)


register(
    Axpy(),
    rungs=[Rung("v0_grid_stride", "a grid-stride loop, FP32 arithmetic", "— (the baseline rung)",
                cuda="00_grid_stride.cu", launch=CudaLauncher(launch=grid_stride_launch),
                triton=twin(axpy_blocks, V0_BLOCKS, BLOCKS_SPACE, launch=blocks_twin_launch))],
    baselines=[Baseline("torch_add", "torch.add(y, x, alpha=ALPHA)", "ATen", "torch", torch_axpy, "torch.add",
                        reference=True)],
    kernel_dir=Path(__file__).parent / "kernels",
)

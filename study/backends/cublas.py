"""cuBLAS baseline through torch, with TF32 explicitly off so that "FP32" means FP32.

The switch uses torch's newer ``fp32_precision`` API only: mixing it with the legacy
``allow_tf32`` getters raises in torch ≥ 2.9 (TOOLCHAIN.md 3.1). The previous
setting is restored when the measurement ends, and the setting used is recorded.
"""

from __future__ import annotations

import contextlib

import torch

from study.backends import Launch


def check(impl, problem, shape, dtype) -> str | None:
    return None


@contextlib.contextmanager
def fp32_without_tf32():
    matmul = torch.backends.cuda.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = "ieee"
    try:
        yield
    finally:
        matmul.fp32_precision = previous


def prepare(impl, problem, tensors, shape, dtype, config=None, autotune=False) -> Launch:
    out = problem.make_output(shape, dtype, tensors[next(iter(tensors))].device)
    fn = impl.target.run(tensors, out)
    config = {"library": "cublas", "entry": impl.source, "tf32": False, "fp32_precision": "ieee",
              "blas_library": str(torch.backends.cuda.preferred_blas_library()).split(".")[-1]}
    return Launch(fn=fn, out=out, config=config, context=fp32_without_tf32)

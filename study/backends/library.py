"""Library baselines (``torch.matmul``, ``torch.mv`` → cuBLAS, ...), switched by precision.

While a baseline runs, torch's ``fp32_precision`` is set from the precision (``ieee``, or
``tf32`` for the TF32 precision only) through the newer API only: mixing it with the legacy
``allow_tf32`` getters raises in torch ≥ 2.9 (docs/toolchain.md 3.1). cuBLAS's reduced-
precision reductions for FP16/BF16 (split-K partial sums in half precision) are switched off,
because every handwritten kernel here accumulates in FP32. The previous settings are restored
when the measurement ends, and the settings used are recorded with the result.
"""

from __future__ import annotations

import contextlib
import importlib.util

import torch

from study.backends.launch import Launch
from study.problem import pad_rows


def check(impl, problem, shape, precision) -> str | None:
    if precision.name not in impl.precisions:
        return f"{impl.title} is not measured at {precision.name} ({', '.join(impl.precisions)} only)"
    return missing_requirement(impl)


def missing_requirement(impl) -> str | None:
    """Why an optional library baseline cannot run here (its Python package is missing), or None."""
    needs = getattr(impl.target, "requires", None) if impl.rung is None else None
    if needs and importlib.util.find_spec(needs) is None:
        return f"{impl.title} needs the Python package {needs!r}, which is not installed here"
    return None


@contextlib.contextmanager
def switches(precision):
    """torch's cuBLAS switches for ``precision``, restored afterwards."""
    matmul = torch.backends.cuda.matmul
    previous = (matmul.fp32_precision, matmul.allow_fp16_reduced_precision_reduction,
                matmul.allow_bf16_reduced_precision_reduction)
    matmul.fp32_precision = precision.cublas_fp32_precision
    matmul.allow_fp16_reduced_precision_reduction = False
    matmul.allow_bf16_reduced_precision_reduction = False
    try:
        yield
    finally:
        (matmul.fp32_precision, matmul.allow_fp16_reduced_precision_reduction,
         matmul.allow_bf16_reduced_precision_reduction) = previous


def prepare(impl, problem, tensors, shape, precision, config=None, tune=None, pad=0) -> Launch:
    """``tune``: a tunable baseline runs its library's own search (``autotune=True``); ``config`` is
    not used (a library has no declared config of the study's)."""
    baseline = impl.target
    out = pad_rows(problem.make_output(shape, precision, tensors[next(iter(tensors))].device), pad)
    made = baseline.run(tensors, out, precision, autotune=tune is not None) if baseline.tunable else \
        baseline.run(tensors, out, precision)
    fn, chosen = made if isinstance(made, tuple) else (made, {})
    config = {"library": baseline.library, "entry": baseline.source, **chosen}
    if baseline.backend == "cublas":  # torch's switches are what decide its cuBLAS call
        config.update({"tf32": precision.cublas_fp32_precision == "tf32",
                       "fp32_precision": precision.cublas_fp32_precision, "reduced_precision_reduction": False,
                       "blas_library": str(torch.backends.cuda.preferred_blas_library()).split(".")[-1]})
    return Launch(fn=fn, out=out, config=config, context=lambda: switches(precision))

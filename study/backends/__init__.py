"""The backends behind one small interface.

Each backend module has ``check(impl, problem, shape, precision)`` → a skip reason or None,
and ``prepare(impl, problem, tensors, shape, precision, config=None, tune=None, pad=0)`` →
:class:`Launch`. ``prepare`` does everything that must stay out of the timed region (layout
changes, output and workspace allocation, compilation, DLPack views, library switches) and
returns a Launch whose ``fn`` contains only the launch. ``config`` names one point of the
implementation's space; without it, ``tune`` (a :class:`Tuning`) asks the backend for its own
search — CUDA times every point of the rung's space (:mod:`study.backends.cuda_tune`), Triton runs
``triton.autotune``, a tunable library baseline its library's own autotuning — and neither means
the declared config. Whatever the backend, that is one call.
"""

from __future__ import annotations

from study.backends import cuda_launch, library, triton_launch
from study.backends.launch import Launch, Tuning, Unsupported

__all__ = ["Launch", "Tuning", "Unsupported", "backend"]
MODULES = {"cuda": cuda_launch, "triton": triton_launch, "cublas": library, "cublaslt": library, "torch": library,
           "inductor": library}


def backend(name: str):
    """The module that implements a backend: ``cuda``, ``triton``, or a library backend
    (``cublas``: torch calls that reach cuBLAS; ``cublaslt``: nvmath-python's cuBLASLt; ``torch``:
    torch's own ATen kernels, such as softmax; ``inductor``: what ``torch.compile`` generates)."""
    if name not in MODULES:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(MODULES)}")
    return MODULES[name]

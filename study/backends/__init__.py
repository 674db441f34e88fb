"""The backends behind one small interface.

Each backend module has ``check(impl, problem, shape, precision)`` → a skip reason or None,
and ``prepare(impl, problem, tensors, shape, precision, config=None, autotune=False)`` →
:class:`Launch`. ``prepare`` does everything that must stay out of the timed region (layout
changes, output and workspace allocation, compilation, DLPack views, library switches) and
returns a Launch whose ``fn`` contains only the launch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from typing import Any, Callable, ContextManager


class Unsupported(ValueError):
    """Raised by ``prepare`` when a rung cannot run these particular tensors (found only once the
    tensors exist: a padded view whose rows break an alignment the rung needs, say). The runner
    records the case as skipped with this reason; it is never a crash and never a number."""


def rung_argument(check, impl) -> dict:
    """``{"rung": key}`` for an op's cuda_check / triton_check that takes the rung, else nothing: a
    plugin op written before the checks learnt the rung keeps working."""
    return {"rung": impl.rung} if "rung" in inspect.signature(check).parameters else {}


@dataclasses.dataclass
class Launch:
    fn: Callable[[], Any]
    out: Any
    config: dict
    context: Callable[[], ContextManager] = contextlib.nullcontext
    chosen: Callable[[], dict] | None = None  # a tuner's pick, known only after the first launch
    keep: Any = None  # what the launch needs alive (workspaces) that fn does not hold itself


def backend(name: str):
    """The module that implements a backend: ``cuda``, ``triton``, or a library backend
    (``cublas``: torch calls that reach cuBLAS; ``cublaslt``: nvmath-python's cuBLASLt; ``torch``:
    torch's own ATen kernels, such as softmax; ``inductor``: what ``torch.compile`` generates)."""
    from study.backends import cuda_launch, library, triton_launch

    modules = {"cuda": cuda_launch, "triton": triton_launch, "cublas": library, "cublaslt": library,
               "torch": library, "inductor": library}
    if name not in modules:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(modules)}")
    return modules[name]

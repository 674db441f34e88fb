"""The three backends behind one small interface.

``prepare`` does everything that must stay out of the timed region (layout
changes, output allocation, compilation, DLPack views) and returns a
:class:`Launch` whose ``fn`` contains only the launch.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, ContextManager


@dataclasses.dataclass
class Launch:
    fn: Callable[[], Any]
    out: Any
    config: dict
    context: Callable[[], ContextManager] = contextlib.nullcontext
    chosen: Callable[[], dict] | None = None  # a tuner's pick, known only after the first launch


def backend(name: str):
    """The module that implements a backend (``cuda``, ``triton``, ``cublas``)."""
    from study.backends import cublas, cuda_launch, triton_launch

    return {"cuda": cuda_launch, "triton": triton_launch, "cublas": cublas}[name]

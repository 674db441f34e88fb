"""What every problem (op) provides, and the correctness gate shared by all of them."""

from __future__ import annotations

import dataclasses
import re
from typing import Mapping

import torch

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one output with the reference.

    ``err`` is the problem's gate metric (for GEMM the error of each element divided
    by the error bound's scale, see :meth:`Problem.scale`); ``max_abs`` and
    ``max_rel`` are recorded for readers who prefer the plain figures.
    """

    ok: bool
    err: float
    tolerance: float
    max_abs: float
    max_rel: float
    unwritten: int
    message: str


class Problem:
    """Base class of an op: shapes, inputs, reference, throughput and tolerance.

    Subclasses set the class attributes and implement the abstract methods; the
    backends call the ``*_launch`` hooks so that they stay free of op knowledge.
    """

    name: str = ""
    axes: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    default_shapes: tuple[Mapping[str, int], ...] = ()
    tolerance: Mapping[str, float] = {}
    throughput_unit: str = "GFLOPS"

    # ---- shapes ---------------------------------------------------------------
    def parse_shape(self, text: str) -> dict[str, int]:
        """``"MxNxK"`` → ``{"M": .., "N": .., "K": ..}``; a clear ValueError otherwise."""
        parts = re.split(r"[x×,]", text.strip().lower())
        if len(parts) != len(self.axes) or not all(re.fullmatch(r"-?\d+", p) for p in parts):
            raise ValueError(f"{self.name}: shape {text!r} is not of the form "
                             f"{'x'.join(self.axes)} with whole numbers (e.g. 4096x4096x4096)")
        shape = dict(zip(self.axes, (int(p) for p in parts)))
        bad = [f"{k}={v}" for k, v in shape.items() if v < 1]
        if bad:
            raise ValueError(f"{self.name}: every size must be at least 1; got {', '.join(bad)}")
        return shape

    @staticmethod
    def shape_label(shape: Mapping[str, int]) -> str:
        return "x".join(str(v) for v in shape.values())

    def check(self, shape: Mapping[str, int], dtype: str) -> str | None:
        """A reason this (shape, dtype) cannot be run at all, or None."""
        if dtype not in self.dtypes:
            return f"{self.name} is defined for {', '.join(self.dtypes)} only; {dtype} is not supported"
        if any(v < 1 for v in shape.values()):
            return f"{self.name}: sizes must be at least 1"
        return None

    def check_memory(self, shape: Mapping[str, int], dtype: str, free_bytes: int) -> str | None:
        need = self.bytes_needed(shape, dtype)
        if need > free_bytes:
            return (f"needs about {need / 2**30:.1f} GiB of GPU memory (inputs, output, float64 "
                    f"reference) but {free_bytes / 2**30:.1f} GiB are free")
        return None

    # ---- to implement ---------------------------------------------------------
    def flops(self, shape) -> int:
        raise NotImplementedError

    def bytes(self, shape, dtype) -> int:
        raise NotImplementedError

    def bytes_needed(self, shape, dtype) -> int:
        raise NotImplementedError

    def make_inputs(self, shape, dtype, seed: int, device) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def make_output(self, shape, dtype, device) -> torch.Tensor:
        raise NotImplementedError

    def reference(self, tensors) -> tuple[torch.Tensor, torch.Tensor]:
        """(reference in float64, per-element error scale in float64)."""
        raise NotImplementedError

    def with_layout(self, tensors, layout: Mapping[str, str]) -> dict[str, torch.Tensor]:
        return dict(tensors)

    # ---- the gate -------------------------------------------------------------
    def verify(self, out: torch.Tensor, ref: torch.Tensor, scale: torch.Tensor, dtype: str) -> Verdict:
        """Compare ``out`` with the float64 reference; NaN (the poison) never passes."""
        tol = self.tolerance[dtype]
        out64 = out.to(torch.float64)
        unwritten = int(torch.isnan(out64).sum())
        diff = (out64 - ref).abs()
        finite = bool(torch.isfinite(diff).all())
        max_abs = float(diff.max()) if finite else float("inf")
        max_rel = float((diff / ref.abs().clamp_min(torch.finfo(torch.float64).tiny)).max()) if finite else float("inf")
        err = float((diff / scale.clamp_min(torch.finfo(torch.float64).tiny)).max()) if finite else float("inf")
        if unwritten:
            msg = f"{unwritten} output elements were never written (still NaN)"
        elif not finite:
            msg = "output holds inf or NaN"
        elif err > tol:
            msg = f"error {err:.3g} exceeds the {dtype} tolerance {tol:.3g}"
        else:
            msg = ""
        return Verdict(ok=not msg, err=err, tolerance=tol, max_abs=max_abs, max_rel=max_rel,
                       unwritten=unwritten, message=msg)

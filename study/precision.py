"""Precisions: a storage dtype plus a math mode, named as on the command line.

``--dtype fp32|tf32|fp16|bf16`` picks one of an op's precisions. The storage dtype is
torch's name of the element type (``float32``, ``float16``, ``bfloat16``); the math mode
says which unit does the arithmetic:

- ``ieee``: FP32 arithmetic (FFMA), whatever the storage: an FP16 GEMV loads halves and
  multiplies and adds in FP32;
- ``tf32``: tensor cores on FP32 operands rounded to TF32 (10 mantissa bits);
- ``fp16`` / ``bf16``: tensor cores on FP16 / BF16 operands, FP32 accumulation.

From the precision follow: the op's tolerance (keyed by precision name), the peak
(:mod:`study.hardware`, keyed by architecture and math mode), Triton's ``input_precision``
for ``tl.dot``, the cuBLAS switch (torch's ``fp32_precision``, set for the measurement and
restored after) and the CUDA defines (one ``STORAGE_*`` macro that ``common.cuh`` turns into
the ``storage_t`` typedef). Pure data: no torch import.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

MATH_MODES = {
    "ieee": "FP32 arithmetic (FFMA)",
    "tf32": "TF32 tensor cores, FP32 accumulation",
    "3xtf32": "three TF32 tensor-core products (FP32-accurate emulation)",
    "fp16": "FP16 tensor cores, FP32 accumulation",
    "bf16": "BF16 tensor cores, FP32 accumulation",
}
# storage dtype -> (the CUDA macro that selects it in cuda_kernels/common.cuh, bytes per element)
STORAGE = {"float32": ("STORAGE_FP32", 4), "float16": ("STORAGE_FP16", 2), "bfloat16": ("STORAGE_BF16", 2)}


@dataclasses.dataclass(frozen=True)
class Precision:
    name: str     # the --dtype name: fp32, tf32, fp16, bf16
    dtype: str    # storage, torch's name
    math: str     # a key of MATH_MODES

    def __post_init__(self):
        if self.math not in MATH_MODES:
            raise ValueError(f"unknown math mode {self.math!r}; known: {', '.join(MATH_MODES)}")
        if self.dtype not in STORAGE:
            raise ValueError(f"unknown storage dtype {self.dtype!r}; known: {', '.join(STORAGE)}")

    @property
    def triton_input_precision(self) -> str | None:
        """``tl.dot``'s ``input_precision`` for FP32 operands (Triton defaults to TF32, which
        would not be the FP32 problem, docs/toolchain.md 4.2); None for half types."""
        if self.dtype != "float32":
            return None
        return {"ieee": "ieee", "tf32": "tf32", "3xtf32": "tf32x3"}[self.math]

    @property
    def cublas_fp32_precision(self) -> str:
        """torch's ``backends.cuda.matmul.fp32_precision`` while a baseline runs: TF32 only
        for the ``tf32`` precision, IEEE FP32 otherwise (docs/toolchain.md 3.1)."""
        return "tf32" if self.math == "tf32" else "ieee"

    @property
    def cuda_defines(self) -> dict:
        return {STORAGE[self.dtype][0]: 1}

    @property
    def element_bytes(self) -> int:
        return STORAGE[self.dtype][1]

    def to_json(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "math": self.math}


# The precisions ops choose from. A memory-bound op on half storage computes in FP32 (ieee);
# a tensor-core GEMM on the same storage uses the fp16/bf16 math modes.
FP32 = Precision("fp32", "float32", "ieee")
TF32 = Precision("tf32", "float32", "tf32")
FP16_STORAGE = Precision("fp16", "float16", "ieee")
BF16_STORAGE = Precision("bf16", "bfloat16", "ieee")
FP16_TENSOR = Precision("fp16", "float16", "fp16")
BF16_TENSOR = Precision("bf16", "bfloat16", "bf16")
NAMES = ("fp32", "tf32", "fp16", "bf16")


def select(accepted: Iterable[Precision], names: Iterable[str], op: str) -> list[Precision]:
    """The op's precisions called ``names``; a ValueError naming the valid ones otherwise."""
    by_name = {p.name: p for p in accepted}
    chosen = []
    for name in names:
        if name not in by_name:
            what = "unknown dtype" if name not in NAMES else f"{op} does not accept"
            raise ValueError(f"{what} {name!r}; {op} accepts: {', '.join(by_name)}")
        chosen.append(by_name[name])
    return chosen

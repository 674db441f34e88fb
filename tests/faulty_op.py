"""A test-only op whose CUDA rung faults (tests/kernels/fault/00_illegal_address.cu).

Registered only when STUDY_PLUGINS names this module (with tests/ on PYTHONPATH), so the
default ladders never contain it."""

from pathlib import Path

from study.ops.sgemm import SGEMM, cublas_matmul
from study.registry import Baseline, Rung, register
from triton_kernels import sgemm as tk


class Fault(SGEMM):
    name = "fault"
    default_shapes = ({"M": 64, "N": 64, "K": 64},)


register(
    Fault(),
    rungs=[Rung("v0_illegal_address", "writes 4 TiB past C", "— (tests crash isolation)",
                cuda=str(Path(__file__).parent / "kernels" / "fault" / "00_illegal_address.cu"),
                triton=tk.V1_NAIVE)],
    baseline=Baseline("cuBLAS (torch.matmul, TF32 off)", cublas_matmul, "torch.matmul"),
)

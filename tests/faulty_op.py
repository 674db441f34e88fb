"""A test-only op whose CUDA rung faults (tests/kernels/fault/00_illegal_address.cu).

Registered only when STUDY_PLUGINS names this module (with tests/ on PYTHONPATH), so the
default ladders never contain it. Its kernels live outside cuda_kernels/, in its own folder,
as a user's own op would."""

from pathlib import Path

from study.ops.sgemm import BASELINES, SGEMM, TILED, own_math_twin_launch
from study.registry import Rung, register, twin
from triton_kernels import sgemm as tk


class Fault(SGEMM):
    name = "fault"
    default_shapes = ({"M": 64, "N": 64, "K": 64},)


register(
    Fault(),
    rungs=[Rung("v0_illegal_address", "writes 4 TiB past C", "— (tests crash isolation)",
                cuda="00_illegal_address.cu", launch=TILED,
                triton=twin(tk.sgemm_naive, tk.V1_NAIVE, tk.NAIVE_SPACE, launch=own_math_twin_launch))],
    baselines=BASELINES[:1],  # torch.matmul only: the test counts what runs
    kernel_dir=Path(__file__).parent / "kernels" / "fault",
)

"""A test-only op with planted defects (tests/kernels/planted/): one the output check must
catch (v0: wrong row) and three only a sanitizer tool can (v1: a read past the end, memcheck;
v2: a read of never-written memory, initcheck; v3: a missing barrier, racecheck). Registered
only when STUDY_PLUGINS names this module (tests/ on PYTHONPATH)."""

from pathlib import Path

import numpy as np
import torch

from study.backends import cuda
from study.ops.sgemv import SGEMV, torch_mv, twin_launch
from study.precision import FP32
from study.problem import CudaLaunch, CudaLauncher, cdiv
from study.registry import Baseline, Rung, register, twin
from triton_kernels import sgemv as tk


class Planted(SGEMV):
    name = "planted"
    precisions = (FP32,)
    default_precisions = ("fp32",)
    default_shapes = ({"M": 64, "N": 1000},)
    default_modes = ("cold",)
    sanitize_shapes = ({"M": 64, "N": 1000},)

    def cuda_defines(self, config, tensors, out, shape, precision):
        return {**config, **precision.cuda_defines}



def launch(defines, tensors, out, shape, precision, probe: bool = False):
    m, n = shape["M"], shape["N"]
    rows = defines["THREADS"] // defines["LANES"]
    args = [cuda.as_cupy(tensors["A"]), cuda.as_cupy(tensors["x"]), cuda.as_cupy(out), np.int32(m), np.int32(n)]
    if probe:
        args.append(cuda.as_cupy(torch.empty(m, device=out.device)))  # never written, on purpose
    return CudaLaunch(grid=(cdiv(m, rows), 1, 1), block=(defines["THREADS"], 1, 1), args=tuple(args))


LAUNCH = CudaLauncher(launch=launch)
PROBED = CudaLauncher(launch=lambda *args: launch(*args, probe=True))  # v2: an extra buffer it reads unwritten
TWIN = twin(tk.sgemv_warp, tk.V1_WARP_PER_ROW, tk.WARP_SPACE, launch=twin_launch)
register(
    Planted(),
    rungs=[Rung("v0_wrong_row", "reads the next row", "— (planted: wrong output)", cuda="00_wrong_row.cu",
                launch=LAUNCH, triton=TWIN),
           Rung("v1_read_past_end", "reads x[N]", "— (planted: memcheck)", cuda="01_read_past_end.cu", launch=LAUNCH,
                triton=TWIN),
           Rung("v2_uninitialized_read", "reads never-written memory", "— (planted: initcheck)",
                cuda="02_uninitialized_read.cu", launch=PROBED, triton=TWIN),
           Rung("v3_race", "no barrier between a shared write and read", "— (planted: racecheck)",
                cuda="03_race.cu", launch=LAUNCH, triton=TWIN)],
    baselines=[Baseline("torch_mv", "torch.mv", "cuBLAS", "cublas", torch_mv, "torch.mv", reference=True)],
    kernel_dir=Path(__file__).parent / "kernels" / "planted",
)

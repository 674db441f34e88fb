"""A test-only op whose implementations cheat the timer once their gate has passed (registered only when
STUDY_PLUGINS names this module, tests/ on PYTHONPATH): ``lazy`` does its work for its first launches
and then nothing (an output left over from the gate); ``side_stream`` does it on a stream the timing
events are not on, so that the events bracket an empty interval. The first must come out ``wrong``
(its output checked again after the timing), the second ``impossible`` (GB/s above the memory's
theoretical bandwidth, cold). Library-style baselines: what they cheat with is Python, not a kernel."""

import torch

from study.ops.sgemv import SGEMV, torch_mv
from study.precision import FP32
from study.registry import Baseline, register

WORKING_LAUNCHES = 3  # the first launch and the gate, and one more


class Cheat(SGEMV):
    name = "cheat"
    precisions = (FP32,)
    default_precisions = ("fp32",)
    default_shapes = ({"M": 16384, "N": 16384},)  # 1 GiB: a real pass over it takes 0.2 ms or more
    default_modes = ("cold",)


def lazy(tensors, out, precision):
    a, x = tensors["A"], tensors["x"]
    calls = [0]

    def fn():
        calls[0] += 1
        if calls[0] <= WORKING_LAUNCHES:
            torch.mv(a, x, out=out)

    return fn


def side_stream(tensors, out, precision):
    a, x = tensors["A"], tensors["x"]
    other = torch.cuda.Stream()

    def fn():
        other.wait_stream(torch.cuda.current_stream())  # after what came before it (the poison, a flush) ...
        with torch.cuda.stream(other):  # ... but nothing on the timed stream waits for it
            torch.mv(a, x, out=out)

    return fn


register(
    Cheat(),
    rungs=[],
    baselines=[Baseline("torch_mv", "torch.mv", "cuBLAS", "cublas", torch_mv, "torch.mv", reference=True),
               Baseline("lazy", "torch.mv, then nothing", "cheat", "torch", lazy, "tests/cheating_op.py::lazy"),
               Baseline("side_stream", "torch.mv on another stream", "cheat", "torch", side_stream,
                        "tests/cheating_op.py::side_stream")],
)

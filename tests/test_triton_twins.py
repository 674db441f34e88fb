"""Every Triton twin, with the config that mirrors its CUDA rung, against the float64
reference on small awkward shapes. On CPU this runs in Triton's interpreter."""

import os

import pytest

from study.backends import backend
from study.registry import implementations, ladder

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
SHAPES = [(1, 1, 1), (17, 33, 65), (33, 17, 20)]
TWINS = [i for i in implementations() if i.backend == "triton"]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("impl", TWINS, ids=lambda i: i.rung)
def test_twin_matches_reference(impl, shape):
    problem = ladder(impl.op).problem
    shape = dict(zip(problem.axes, shape))
    tensors = problem.make_inputs(shape, "float32", seed=sum(shape.values()), device=DEVICE)
    ref, scale = problem.reference(tensors)
    launch = backend("triton").prepare(impl, problem, tensors, shape, "float32")
    launch.fn()
    verdict = problem.verify(launch.out, ref, scale, "float32")
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("impl", TWINS, ids=lambda i: i.rung)
def test_twin_space_holds_its_fixed_config_and_launch_keys(impl):
    assert dict(impl.params) in [dict(c) for c in impl.space]
    for point in impl.space:
        assert {"BM", "BN", "num_warps", "num_stages"} <= set(point)


def test_twins_mirror_their_cuda_rungs():
    """Same block tile and thread count as the CUDA rung; a second stage exactly where CUDA double-buffers."""
    impls = implementations()
    for cuda in (i for i in impls if i.backend == "cuda"):
        twin = next(i for i in impls if i.backend == "triton" and i.rung == cuda.rung)
        assert (twin.params["BM"], twin.params["BN"]) == (cuda.params["BM"], cuda.params["BN"])
        assert twin.params["num_warps"] * 32 == cuda.params["THREADS"]
        if "BK" in cuda.params:
            assert twin.params["BK"] == cuda.params["BK"]
        assert twin.params["num_stages"] == (2 if "double_buffer" in cuda.rung else 1)
        assert twin.layout == cuda.layout

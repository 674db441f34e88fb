"""Every Triton twin, with the config that mirrors its CUDA rung, against the float64
reference on small awkward shapes at every precision it can run here. On CPU this runs in
Triton's interpreter (which skips BF16, with the reason)."""

import os

import pytest

from study.backends import backend
from study.registry import implementations, ladder
from study.runner import check_output

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
SHAPES = {"sgemm": [(1, 1, 1), (17, 33, 65), (33, 17, 20)], "sgemv": [(1, 1), (3, 4097), (17, 300), (33, 8)],
          "bgemm": [(1, 1, 1, 1), (3, 17, 33, 20), (2, 33, 17, 65)]}
TWINS = [i for i in implementations() if i.backend == "triton"]
CASES = [(impl, shape, p) for impl in TWINS for shape in SHAPES[impl.op]
         for p in ladder(impl.op).problem.precisions if p.name in impl.precisions]


@pytest.mark.parametrize("impl,shape,precision", CASES,
                         ids=lambda v: getattr(v, "name", None) if not isinstance(v, tuple) else "x".join(map(str, v)))
def test_twin_matches_reference(impl, shape, precision):
    problem = ladder(impl.op).problem
    shape = dict(zip(problem.axes, shape))
    reason = backend("triton").check(impl, problem, shape, precision)
    if reason:
        assert DEVICE == "cpu" and "interpreter" in reason  # only the interpreter refuses anything here
        pytest.skip(reason)
    tensors = problem.make_inputs(shape, precision, seed=sum(shape.values()), device=DEVICE)
    ref, scale = problem.reference(tensors, precision)
    launch = backend("triton").prepare(impl, problem, tensors, shape, precision)
    verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("impl", TWINS, ids=lambda i: i.name)
def test_twin_space_holds_its_fixed_config_and_launch_keys(impl):
    assert dict(impl.params) in [dict(c) for c in impl.space]
    assert len({tuple(sorted(c.items())) for c in impl.space}) == len(impl.space)
    for point in impl.space:
        assert {"num_warps", "num_stages"} <= set(point)
        assert set(point) == set(impl.params)


def _mirror(op, cuda, tw):
    """Mismatches between a CUDA rung's config and its twin's: threads = warps × 32, the same
    block tile, the same rows per block and loads in flight, a second stage where CUDA double-buffers."""
    out = []
    if tw["num_warps"] * 32 != cuda["THREADS"]:
        out.append(f"warps {tw['num_warps']} vs THREADS {cuda['THREADS']}")
    for key in ("BM", "BN", "BK", "UNROLL"):
        if key in cuda and key in tw and cuda[key] != tw[key]:
            out.append(f"{key} {tw[key]} vs {cuda[key]}")
    if op == "sgemv":
        rows = cuda["THREADS"] // cuda["LANES"] * cuda.get("WARP_ROWS", 1)  # rows per block, as the launch reads it
        if tw.get("ROWS", tw.get("BM")) != rows:
            out.append(f"{tw.get('ROWS', tw.get('BM'))} vs {rows} rows per block")
    return out


def test_twins_mirror_their_cuda_rungs():
    impls = implementations()
    for cuda in (i for i in impls if i.backend == "cuda"):
        tw = next(i for i in impls if i.backend == "triton" and i.op == cuda.op and i.rung == cuda.rung)
        assert _mirror(cuda.op, cuda.params, tw.params) == [], cuda.name
        if cuda.op == "sgemm":
            assert tw.params["num_stages"] == (2 if "double_buffer" in cuda.rung else 1)


def test_the_mirror_check_can_fail():
    assert _mirror("sgemv", {"THREADS": 256, "LANES": 32, "WARP_ROWS": 2}, {"ROWS": 8, "num_warps": 8})
    assert _mirror("sgemv", {"THREADS": 256, "LANES": 1}, {"BM": 8, "num_warps": 8})
    assert _mirror("sgemm", {"THREADS": 256, "BM": 64}, {"BM": 128, "num_warps": 8})

"""The cuBLASLt baseline without a GPU: a stand-in for nvmath-python records what the glue asks
of it (planning, autotuning, in-place execution on the case's output), the plan gives the
baseline an autotune axis of its own, --backend leaves it out, a missing package skips it."""

import sys
import types

import pytest
import torch

from study.backends import backend
from study.backends.library import missing_requirement
from study.precision import FP32
from study.catalog import implementation, ladder
from study.plan import plan
from study.problem import check_output


class _Algorithm:
    def __init__(self, number):
        self.algorithm_id, self.tile, self.stages, self.split_k = number, f"TILE_{number}", "STAGES_8", 1

    @property
    def cluster_shape(self):
        raise RuntimeError("not reported by this cuBLASLt")


class _Matmul:
    made = []

    def __init__(self, a, b, c=None, *, beta=None, options=None, stream=None):
        self.a, self.b, self.c, self.beta, self.options = a, b, c, beta, options
        self.calls, self.algorithms = [], []
        _Matmul.made.append(self)

    def plan(self, preferences=None, epilog=None, epilog_inputs=None, stream=None):
        limit = getattr(preferences, "limit", None) or 3
        self.algorithms = [_Algorithm(i) for i in range(limit)]
        self.epilog, self.epilog_inputs = epilog, epilog_inputs
        self.calls.append(("plan", limit))
        return self.algorithms

    def autotune(self, iterations=10, stream=None):
        self.algorithms = self.algorithms[::-1]  # "the last one timed fastest"
        self.calls.append(("autotune", iterations))

    def execute(self, stream=None):
        self.calls.append(("execute",))
        d = (self.a.double() @ self.b.double()).float()
        if self.epilog == "RELU_BIAS":  # as cuBLASLt: one bias value per row of the result, then ReLU
            assert self.c.stride(0) == 1, "RELU_BIAS needs a column-major result"
            d = torch.relu(d + self.epilog_inputs["bias"].float()[:, None])
        self.c.copy_(d)  # in place, as inplace=True asks
        return self.c


class _Epilog(str):
    @property
    def name(self):
        return str(self)


@pytest.fixture
def fake_nvmath(monkeypatch):
    advanced = types.ModuleType("nvmath.linalg.advanced")
    advanced.Matmul = _Matmul
    advanced.MatmulComputeType = types.SimpleNamespace(COMPUTE_32F="32F", COMPUTE_32F_FAST_TF32="32F_TF32")
    advanced.MatmulOptions = lambda **kw: types.SimpleNamespace(**kw)
    advanced.MatmulPlanPreferences = lambda **kw: types.SimpleNamespace(**kw)
    advanced.MatmulEpilog = types.SimpleNamespace(RELU_BIAS=_Epilog("RELU_BIAS"))
    linalg = types.ModuleType("nvmath.linalg")
    linalg.advanced = advanced
    root = types.ModuleType("nvmath")
    root.linalg = linalg
    for name, module in (("nvmath", root), ("nvmath.linalg", linalg), ("nvmath.linalg.advanced", advanced)):
        monkeypatch.setitem(sys.modules, name, module)
    _Matmul.made.clear()
    return _Matmul


LT = "sgemm/nvmath_matmul/cublaslt"


def _prepare(autotune):
    impl = implementation(LT)
    problem = ladder("sgemm").problem
    shape = {"M": 33, "N": 17, "K": 65}
    tensors = problem.make_inputs(shape, FP32, 0, "cpu")
    launch = backend(impl.backend).prepare(impl, problem, tensors, shape, FP32, tune=True if autotune else None)
    return problem, tensors, launch


@pytest.mark.parametrize("autotune", [False, True])
def test_the_heuristic_or_the_autotuned_choice_is_recorded_and_execute_writes_the_output(fake_nvmath, autotune):
    problem, tensors, launch = _prepare(autotune)
    (mm,) = fake_nvmath.made
    assert mm.c is launch.out and mm.beta == 0.0 and mm.options.inplace and mm.options.compute_type == "32F"
    assert mm.calls == ([("plan", 16), ("autotune", 10)] if autotune else [("plan", 3)])
    cfg = launch.config
    assert cfg["library"] == "cuBLASLt" and cfg["autotuned"] is autotune and cfg["compute_type"] == "COMPUTE_32F"
    assert cfg["algorithms_considered"] == (16 if autotune else 1)  # off: the heuristic's first only
    assert cfg["algorithm"] == {"algorithm_id": 15 if autotune else 0, "tile": f"TILE_{15 if autotune else 0}",
                                "stages": "STAGES_8", "split_k": 1}  # cluster_shape unreported: left out
    assert "fp32_precision" not in cfg  # torch's switches do not decide a cuBLASLt call
    ref, scale = problem.reference(tensors, FP32)
    with launch.context():
        verdict = check_output(launch.fn, launch.out, problem, ref, scale, FP32)
    assert verdict.ok, verdict.message
    assert mm.calls[-1] == ("execute",) and len(fake_nvmath.made) == 1  # planned once, outside the closure


def test_a_tf32_run_asks_for_the_fast_tf32_compute_type(fake_nvmath):
    from study.backends import cublaslt
    from study.precision import TF32

    a, b = torch.ones(4, 3), torch.ones(3, 5)
    _, info = cublaslt.matmul({"A": a, "B": b}, torch.empty(4, 5), TF32)
    assert info["compute_type"] == "COMPUTE_32F_FAST_TF32" and fake_nvmath.made[0].options.compute_type == "32F_TF32"


def test_the_baseline_has_its_own_autotune_axis_and_follows_backend():
    shapes = {"sgemm": [{"M": 8, "N": 8, "K": 8}]}
    both = plan(["sgemm"], shapes=shapes, autotune="both")
    assert sorted(c.autotune for c in both if c.impl.name == LT) == ["off", "on"]
    assert [c.autotune for c in both if c.impl.name == "sgemm/torch_matmul/cublas"] == ["n/a"]
    only_cuda = plan(["sgemm"], shapes=shapes, backends=["cuda"])
    assert LT not in {c.impl.name for c in only_cuda}
    assert "sgemm/torch_matmul/cublas" in {c.impl.name for c in only_cuda}  # the reference always runs
    assert {c.impl.name for c in plan(["sgemm"], shapes=shapes, backends=["cublaslt"])} == \
        {LT, "sgemm/torch_matmul/cublas"}


def test_without_nvmath_the_rows_are_skipped_with_the_reason(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nvmath" else real(name, *a))
    impl = implementation(LT)
    reason = backend(impl.backend).check(impl, ladder("sgemm").problem, {"M": 8, "N": 8, "K": 8}, FP32)
    assert reason == "nvmath Matmul (cuBLASLt) needs the Python package 'nvmath', which is not installed here"
    assert missing_requirement(implementation("sgemm/torch_matmul/cublas")) is None


def test_the_hgemm_baseline_asks_fp32_accumulation_at_fp16_and_bf16(fake_nvmath):
    from study.ops.hgemm import HGEMM

    problem, impl = ladder("hgemm").problem, implementation("hgemm/nvmath_matmul/cublaslt")
    shape = {"M": 4, "N": 5, "K": 3}
    for precision in problem.precisions:
        t = problem.make_inputs(shape, precision, 0, "cpu")
        _, info = impl.target.run(t, problem.make_output(shape, precision, "cpu"), precision)
        assert isinstance(problem, HGEMM) and info["compute_type"] == "COMPUTE_32F"
        assert fake_nvmath.made[-1].options.compute_type == "32F"


@pytest.mark.parametrize("autotune", [False, True])
def test_the_relu_bias_epilogue_runs_on_the_transposed_product_into_c_itself(fake_nvmath, autotune):
    """cuBLASLt's bias has one value per row of its column-major result; the op's has one per column
    of a row-major C: the glue asks for Cᵀ = Bᵀ·Aᵀ written into C's memory, which the stand-in
    computes as cuBLASLt would (and refuses a row-major result)."""
    problem, impl = ladder("gemm_bias_relu").problem, implementation("gemm_bias_relu/nvmath_relu_bias/cublaslt")
    shape = {"M": 7, "N": 5, "K": 9}
    for precision in problem.precisions:
        tensors = problem.make_inputs(shape, precision, 0, "cpu")
        launch = backend(impl.backend).prepare(impl, problem, tensors, shape, precision, tune=True if autotune else None)
        mm = fake_nvmath.made[-1]
        assert mm.c.data_ptr() == launch.out.data_ptr() and mm.c.shape == (5, 7) and mm.epilog == "RELU_BIAS"
        assert mm.epilog_inputs["bias"] is tensors["bias"] and launch.config["epilog"] == "RELU_BIAS"
        ref, scale = problem.reference(tensors, precision)
        verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision)
        assert verdict.ok, verdict.message

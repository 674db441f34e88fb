"""GPU tests (`pytest -m gpu`): every implementation correct on awkward shapes, every CUDA
autotune point correct, bad inputs handled, and a tiny-budget run of the whole pipeline."""

import pytest
import torch

from study.backends import backend
from study.registry import implementations, ladder

pytestmark = pytest.mark.gpu
AWKWARD = [(1, 1, 1), (17, 33, 65), (1000, 1500, 1700), (4097, 4095, 257)]
IMPLS = implementations()


def _data(op, shape, seed=7):
    problem = ladder(op).problem
    shape = dict(zip(problem.axes, shape))
    tensors = problem.make_inputs(shape, "float32", seed, "cuda")
    ref, scale = problem.reference(tensors)
    return problem, shape, tensors, ref, scale


def _run(impl, problem, shape, tensors, ref, scale, **kw):
    launch = backend(impl.backend).prepare(impl, problem, tensors, shape, "float32", **kw)
    with launch.context():
        launch.fn()
    torch.cuda.synchronize()
    return problem.verify(launch.out, ref, scale, "float32"), launch


@pytest.mark.parametrize("shape", AWKWARD, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("impl", IMPLS, ids=lambda i: i.name)
def test_every_implementation_is_correct_on_awkward_shapes(impl, shape):
    problem, shape, tensors, ref, scale = _data(impl.op, shape, seed=sum(shape))
    verdict, _ = _run(impl, problem, shape, tensors, ref, scale)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("shape", [(17, 33, 65), (1000, 1500, 1700)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("impl", [i for i in IMPLS if i.backend == "cuda"], ids=lambda i: i.name)
def test_every_cuda_autotune_point_is_correct(impl, shape):
    problem, shape, tensors, ref, scale = _data(impl.op, shape)
    for point in impl.space:
        verdict, launch = _run(impl, problem, shape, tensors, ref, scale, config=point)
        assert verdict.ok, f"{launch.config}: {verdict.message}"


def test_misaligned_rows_take_the_scalar_path_and_stay_correct():
    impl = next(i for i in IMPLS if i.rung == "v4_double_buffer" and i.backend == "cuda")
    problem, shape, tensors, ref, scale = _data("sgemm", (64, 64, 64))
    storage = torch.empty(64 * 64 + 1, device="cuda")
    a = storage[1:].view(64, 64)  # 4-byte offset: float4 would fault
    a.copy_(tensors["A"])
    verdict, launch = _run(impl, problem, shape, {"A": a, "B": tensors["B"]}, ref, scale)
    assert launch.config["ALIGNED"] == 0 and verdict.ok, verdict.message


def test_non_contiguous_input_is_refused_with_a_clear_message():
    impl = next(i for i in IMPLS if i.rung == "v1_naive" and i.backend == "cuda")
    problem, shape, tensors, ref, scale = _data("sgemm", (32, 32, 32))
    sliced = torch.empty(32, 64, device="cuda")[:, :32]
    sliced.copy_(tensors["A"])
    with pytest.raises(ValueError, match="contiguous"):
        _run(impl, problem, shape, {"A": sliced, "B": tensors["B"]}, ref, scale)


def test_cublas_baseline_turns_tf32_off_and_restores_the_setting():
    impl = next(i for i in IMPLS if i.backend == "cublas")
    problem, shape, tensors, ref, scale = _data("sgemm", (256, 256, 1024))
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    matmul.fp32_precision = "tf32"
    try:
        verdict, launch = _run(impl, problem, shape, tensors, ref, scale)
        assert verdict.ok, verdict.message  # TF32 would exceed the FP32 tolerance
        assert launch.config["tf32"] is False and matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = before


def test_tiny_budget_run_of_the_whole_pipeline(tmp_path, monkeypatch):
    from study import hardware, report, results
    from study.runner import Session, TimerSettings, plan, run

    monkeypatch.setenv("STUDY_CACHE_DIR", str(tmp_path / "cache"))
    cases = plan(["sgemm"], shapes={"sgemm": [{"M": 256, "N": 192, "K": 130}]}, autotune="both")
    device = hardware.current_device()
    settings = TimerSettings(reps=20, warmup_ms=1, min_warmup=1)
    records = run(cases, Session(settings, device, seed=3))
    doc = results.document(results.environment(device, settings, ["pytest"]), records)
    assert {m["implementation"] for m in doc["measurements"]} == {i.name for i in IMPLS}
    for m in doc["measurements"]:
        assert m["status"] == "ok", (m["implementation"], m["reason"])
        assert len(m["samples_ms"]) == 20 and m["median_ms"] > 0 and m["vs_cublas"] > 0
        assert m["pct_peak"] is None or 0 < m["pct_peak"] < 100
    tuned = [m for m in doc["measurements"] if m["backend"] == "cuda" and m["autotune"] == "on"]
    assert all(m["autotune_log"]["trials"] for m in tuned)
    path = tmp_path / "r.json"
    results.write(path, doc)
    md = report.write_report(results.load(path), tmp_path / "r.md")
    assert "v4" in md.read_text() and (tmp_path / "figures" / "r-sgemm.png").is_file()

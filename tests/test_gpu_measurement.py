"""GPU tests of issue 3: crash isolation, nothing lost on interruption, resuming, modes,
noise-based stopping and clocks."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from study.paths import ROOT

pytestmark = pytest.mark.gpu
TESTS = Path(__file__).parent


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("study-cache")  # ceilings are measured once for the module


def _env(cache, **extra):
    path = os.pathsep.join(filter(None, [str(TESTS), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return {**os.environ, "STUDY_CACHE_DIR": str(cache), "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **extra}


def _study(args, cache, **extra):
    return subprocess.run([sys.executable, "-m", "study", *args], cwd=ROOT, env=_env(cache, **extra),
                          capture_output=True, text=True, timeout=900)


def test_a_faulting_kernel_is_recorded_and_the_run_goes_on_in_a_fresh_worker(tmp_path, cache):
    proc = _study(["compare", "--op", "fault", "--op", "sgemm", "--rung", "v0", "--shape", "64x64x64",
                   "--out", str(tmp_path), "--reps", "20"], cache, STUDY_PLUGINS="faulty_op")
    assert proc.returncode == 1, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "compare.json").read_text())
    assert doc["complete"] is True
    by = {m["implementation"]: m for m in doc["measurements"]}
    fault = by.pop("fault/v0_illegal_address/cuda")
    assert fault["status"] == "crashed" and "illegal memory access" in fault["reason"], fault["reason"]
    assert "fresh worker" in fault["reason"]
    assert "moduleUnload" not in proc.stderr  # the dead worker left without CuPy's teardown traceback
    # cuBLASLt runs where nvmath-python is installed and is a recorded skip where it is not.
    lt = by.pop("sgemm/nvmath_matmul/cublaslt")
    assert lt["status"] == ("ok" if importlib.util.find_spec("nvmath") else "skipped"), lt["reason"]
    assert {m["status"] for m in by.values()} == {"ok"}, {k: m["reason"] for k, m in by.items()}
    assert set(by) == {"fault/v0_illegal_address/triton", "fault/torch_matmul/cublas",
                       "sgemm/v0_naive_colmajor_b/cuda", "sgemm/v0_naive_colmajor_b/triton", "sgemm/torch_matmul/cublas"}


def test_an_interrupted_run_keeps_every_result_and_the_same_command_resumes(tmp_path, cache):
    args = ["compare", "--op", "sgemm", "--shape", "768x512x640", "--out", str(tmp_path), "--reps", "20"]
    path = tmp_path / "compare.json"
    journal = tmp_path / "compare.json.journal"  # a line per completed case; the document waits
    proc = subprocess.Popen([sys.executable, "-m", "study", *args], cwd=ROOT, env=_env(cache),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if journal.is_file() and len(journal.read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert "run the same command again to resume" in err
    first = json.loads(path.read_text())
    kept, planned = len(first["measurements"]), len(first["plan"])  # cuBLASLt's row adds one
    assert first["complete"] is False and 3 <= kept < planned
    again = _study(args, cache)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resuming: {kept} of {planned} cases" in again.stderr
    second = json.loads(path.read_text())  # its plan extended by the best rungs paired with the reference
    assert second["complete"] is True and second["plan"][:planned] == first["plan"]
    assert len(second["measurements"]) == len(second["plan"]) > planned
    assert all(key.endswith("|paired") for key in second["plan"][planned:])
    for old, new in zip(first["measurements"], second["measurements"]):
        assert old["samples_ms"] == new["samples_ms"] and old["case"] == new["case"]


def _session_run(mode, **kw):
    from study import hardware
    from study.plan import plan
    from study.session import Session, run
    from study.timing import TimerSettings

    cases = plan(["sgemm"], shapes={"sgemm": [{"M": 256, "N": 320, "K": 288}]}, modes=[mode])
    device = hardware.current_device()
    settings = TimerSettings(mode=mode, min_time_s=0.01, timeout_s=5, **kw)
    return run(cases, Session(settings, device, clocks=hardware.Clocks(), launch_overhead_ms=0.002))


@pytest.mark.parametrize("mode", ["hot", "graph"])
def test_hot_and_graph_modes_measure_every_backend(mode):
    for m in _session_run(mode):
        assert m["status"] == "ok", (m["implementation"], m["reason"])
        assert m["mode"] == mode and m["timing"]["mode"] == mode and m["median_ms"] > 0
        if mode == "graph":
            assert m["timing"]["launches_per_sample"] >= 1
    if mode == "graph":
        assert max(m["timing"]["launches_per_sample"] for m in _session_run(mode, graph_launches=7)) == 7


def test_noise_based_stopping_records_its_criterion_and_the_clocks():
    from study import hardware, stats

    max_clock = hardware.current_device().max_sm_clock_mhz
    records = _session_run("cold")
    for m in records:
        t, c = m["timing"], m["clocks"]
        assert t["stop"] in ("noise", "ci", "timeout") and t["kept"] >= 20 and len(m["samples_ms"]) == t["kept"]
        assert t["above_target"] == (t["stop"] in ("timeout", "max_samples"))
        tick = stats.summarize(m["samples_ms"]).resolution / m["median_ms"]  # the ci rule's floor: one timer tick
        if t["stop"] == "noise":
            assert t["noise"] <= 0.005
        elif t["stop"] == "ci":
            assert t["median_ci"] <= max(0.001, tick)
        assert c["available"] and c["readings"] >= 1 and c["sm_mhz_max"] <= 1.02 * max_clock
        assert isinstance(m["launch_bound"], bool)


def test_validate_compares_the_timers_and_measures_the_instrument_offset(tmp_path, cache):
    import shutil

    proc = _study(["validate", "--out", str(tmp_path), "--kernel", "sgemm/v2_smem_tiling/cuda", "1024x1024x1024"],
                  cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "validate.json").read_text())
    (row,) = doc["kernels"]
    assert doc["complete"] and row["status"] == "ok"
    assert abs(row["vs_do_bench"] - 1) < 0.05 and row["spread"] < 0.05
    if shutil.which("ncu"):
        # an empty kernel runs for a few µs at most, and less than an event pair around it measures
        assert 0 < doc["ncu_empty"]["median_ms"] < doc["launch_overhead_ms"] < 0.05
        assert abs(row["vs_ncu"] - 1) < 0.1
    else:
        assert not doc["ncu_available"] and "not installed" in (tmp_path / "validate.md").read_text()


def test_validate_pairs_a_rung_with_its_reference_under_both_flushes(tmp_path, cache):
    proc = _study(["validate", "--out", str(tmp_path), "--no-ncu", "--pair", "sgemv/v2_vector_loads/cuda",
                   "sgemv/torch_mv/cublas", "4096x4096", "fp32"], cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "validate.json").read_text())
    (row,) = doc["pairs"]
    assert doc["complete"] and row["status"] == "ok" and not doc["kernels"]
    for pairing in (row["paired"], row["paired_write_flush"]):
        assert pairing["rounds"] >= 10 and pairing["ci"][0] <= pairing["ratio"] <= pairing["ci"][1]
    assert len(row["do_bench"]["ratios"]) == 10 and row["within_target"] == (
        abs(row["paired_write_flush"]["ratio"] / row["do_bench"]["ratio"] - 1) <= 0.02)
    assert "study, write flush / do_bench" in (tmp_path / "validate.md").read_text()


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


@pytest.mark.skipif(_gpu_count() < 2, reason=f"needs two GPUs; this machine has {_gpu_count()}")
def test_several_gpus_share_one_run_and_each_record_names_its_gpu(tmp_path, cache):
    count = _gpu_count()
    shapes = ["1024x4096", "2048x2048", "4096x1024", "512x8192"][:max(2, count)]
    proc = _study(["compare", "--op", "sgemv", "--dtype", "fp32", "--mode", "cold", "--gpus", "all", "--out",
                   str(tmp_path), "--reps", "20", *[a for s in shapes for a in ("--shape", s)]], cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "compare.json").read_text())
    gpus = doc["environment"]["gpus"]
    assert [g["index"] for g in gpus] == list(range(count)) and all(g["uuid"] and g["launch_overhead_ms"] for g in gpus)
    used = {m["gpu"]["index"] for m in doc["measurements"]}
    assert used <= set(range(count)) and len(used) >= 2  # groups went to more than one GPU
    for shape in shapes:  # a group (shape) never spans two GPUs
        assert len({m["gpu"]["uuid"] for m in doc["measurements"] if "x".join(map(str, m["shape"].values())) == shape}) == 1
    assert doc["complete"] and {m["status"] for m in doc["measurements"]} == {"ok"}


def test_a_small_sweep_writes_its_csv_heatmap_and_page(tmp_path, cache):
    proc = _study(["sweep", "--op", "sgemv", "--m", "64,1000", "--n", "256:1024:x4", "--rung", "v2", "--backend",
                   "cuda", "--mode", "cold", "--reps", "20", "--out", str(tmp_path)], cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "4 shapes (2 M × 2 N) → 24 cases" in proc.stderr and " left] " in proc.stderr
    rows = (tmp_path / "sweep-sgemv.csv").read_text().splitlines()
    assert len(rows) == 1 + 24 and rows[0].startswith("op,implementation,M,N,")
    assert sorted(p.name for p in (tmp_path / "figures").glob("sweep-sgemv-*.png")) == [
        "sweep-sgemv-bf16-cold.png", "sweep-sgemv-fp16-cold.png", "sweep-sgemv-fp32-cold.png"]
    assert "24 measurements over 4 shapes: 24 ok." in (tmp_path / "sweep-sgemv.md").read_text()


def test_cublaslt_records_the_algorithm_it_ran(tmp_path, cache):
    import importlib.util

    if importlib.util.find_spec("nvmath") is None:
        pytest.skip("nvmath-python is not installed here (pip install -e \".[cublaslt]\")")
    proc = _study(["compare", "--op", "sgemm", "--backend", "cublaslt", "--shape", "1024x1024x1024", "--autotune",
                   "both", "--reps", "20", "--out", str(tmp_path)], cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "compare.json").read_text())
    lt = {m["autotune"]: m for m in doc["measurements"] if m["backend"] == "cublaslt"}
    assert set(lt) == {"off", "on"} and all(m["status"] == "ok" for m in lt.values())
    assert lt["on"]["config"]["autotuned"] and lt["on"]["config"]["algorithms_considered"] > 1
    assert "algorithm_id" in lt["off"]["config"]["algorithm"] and not lt["off"]["config"]["autotuned"]


def test_align_runs_every_leading_dimension_and_the_scalar_path_stays_correct(tmp_path, cache):
    proc = _study(["align", "--base", "96", "--rung", "v4", "--backend", "cuda", "--backend", "triton",
                   "--reps", "20", "--out", str(tmp_path)], cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "align-sgemm-96.json").read_text())
    ms = doc["measurements"]
    assert len(ms) == 16 * 3 and {m["status"] for m in ms} == {"ok"}
    cuda = {m["pad"]: m["config"]["ALIGNED"] for m in ms if m["backend"] == "cuda"}
    assert cuda == {p: int(p % 4 == 0) for p in range(16)}
    assert (tmp_path / "figures" / "align-sgemm-96.png").is_file()
    assert "| 97" in (tmp_path / "align-sgemm-96.md").read_text()


def test_work_skipped_after_the_gate_or_hidden_on_another_stream_is_never_ranked(tmp_path, cache):
    # tests/cheating_op.py: a closure that stops working after its gate, and one that works on a stream
    # the events are not on. Both pass the gate; neither may be ranked.
    proc = _study(["compare", "--op", "cheat", "--out", str(tmp_path), "--reps", "20", "--paired", "off"], cache,
                  STUDY_PLUGINS="cheating_op")
    assert proc.returncode == 1, proc.stderr[-3000:]
    by = {m["implementation"]: m for m in json.loads((tmp_path / "compare.json").read_text())["measurements"]}
    assert by["cheat/torch_mv/cublas"]["status"] == "ok"
    lazy = by["cheat/lazy/torch"]
    assert lazy["status"] == "wrong" and lazy["reason"].startswith("the output changed after the gate"), lazy["reason"]
    hidden = by["cheat/side_stream/torch"]
    assert hidden["status"] == "impossible" and "above the memory's theoretical" in hidden["reason"], hidden["reason"]
    page = (tmp_path / "compare.md").read_text()
    assert "**Impossible figures**" in page and "cheat/side_stream/torch" in page


def test_a_paired_run_times_the_best_rungs_against_the_reference_at_steady_clocks(tmp_path, cache):
    proc = _study(["compare", "--op", "sgemm", "--rung", "v4", "--shape", "1024x1024x1024", "--out", str(tmp_path)],
                  cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "compare.json").read_text())
    paired = [m for m in doc["measurements"] if m.get("paired")]
    assert {m["backend"] for m in paired} == {"cuda", "triton"}  # the best rung of each series, paired
    for m in paired:
        pairing = m["paired"]
        assert m["status"] == "ok" and pairing["rounds"] >= 10 and pairing["reference"] == "sgemm/torch_matmul/cublas"
        assert pairing["ci"][0] <= pairing["ratio"] <= pairing["ci"][1]
        assert m["steady"]["launches"] > 0 and pairing["reference_steady"]["launches"] > 0
        assert m["clocks"]["power_w_median"] > 0 and m["clocks"]["power_limit_w"] > 0
    assert "Paired against the reference" in (tmp_path / "compare.md").read_text()

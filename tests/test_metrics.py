"""Peaks keyed by (architecture, math mode) and every derived figure, computed once."""

import math

import pytest

from study import hardware, metrics

H200 = hardware.Device(name="NVIDIA H200", slug="h200", capability=(9, 0), sms=132, max_sm_clock_mhz=1980.0,
                       max_mem_clock_mhz=3201.0, bus_width_bits=6016, l2_bytes=62914560, memory_bytes=150 * 2**30,
                       driver="x", clock_source="NVML")


def test_the_peak_table_gives_the_h200_datasheet_figures():
    assert H200.peak_flops("ieee") == pytest.approx(66.9e12, rel=1e-3)
    assert H200.peak_flops("bf16") == pytest.approx(1070.5e12, rel=1e-3)   # at 1980 MHz
    assert H200.peak_flops("tf32") == pytest.approx(H200.peak_flops("fp16") / 2)
    assert H200.peak_flops("3xtf32") == pytest.approx(H200.peak_flops("tf32") / 3)
    assert H200.memory_peak_bytes == pytest.approx(4.815e12, rel=1e-3)
    data = H200.to_json()
    assert data["datasheet_peaks_gflops"]["bf16"] == pytest.approx(989.4e3, rel=1e-3)  # at 1830 MHz
    assert data["datasheet_tensor_clock_mhz"] == 1830.0 and "ieee" not in data["datasheet_peaks_gflops"]
    assert hardware.Device(**{**H200.__dict__, "capability": (6, 1)}).peak_flops("ieee") is None


ENV = {"gpu": H200.to_json(), "ceilings": {"ffma_gflops": 65000.0, "copy_gbps": 4270.0, "tensor_bf16_gflops": 765000.0}}


def _record(bound, math, median_ms, flops, nbytes, **kw):
    return {"op": "x", "shape": {"M": 1}, "precision": math, "mode": "cold", "status": "ok", "median_ms": median_ms,
            "math": math, "work": {"flops": flops, "bytes": nbytes, "bound": bound}, **kw}


def test_a_compute_bound_record_is_judged_against_its_math_modes_peak_and_ceiling():
    d = metrics.derive(_record("compute", "bf16", 1.0, 700e9, 1e9), ENV)
    assert d["gflops"] == pytest.approx(700e3) and d["gbps"] == pytest.approx(1000)
    assert d["pct_peak"] == pytest.approx(100 * 700e3 / 1070.5e3, rel=1e-3) and d["peak"] == "BF16 tensor cores"
    assert d["pct_ceiling"] == pytest.approx(100 * 700 / 765) and d["intensity"] == pytest.approx(700)
    ieee = metrics.derive(_record("compute", "ieee", 1.0, 33.45e9, 1e9), ENV)
    assert ieee["pct_peak"] == pytest.approx(50, rel=1e-3) and ieee["ceiling"] == "FFMA loop"
    tf32 = metrics.derive(_record("compute", "tf32", 1.0, 1e9, 1e9), ENV)
    assert tf32["pct_ceiling"] is None  # no TF32 ceiling in this environment: not made up


def test_a_memory_bound_record_is_judged_against_bandwidth_and_the_copy():
    d = metrics.derive(_record("memory", "ieee", 0.25, 2 * 16384**2, 4 * 16384**2), ENV)
    assert d["gbps"] == pytest.approx(4 * 16384**2 / 0.25e-3 / 1e9)
    assert d["pct_peak"] == pytest.approx(100 * d["gbps"] / 4815.0, rel=1e-3) and d["peak"] == "memory bandwidth"
    assert d["pct_ceiling"] == pytest.approx(100 * d["gbps"] / 4270.0) and d["ceiling"] == "device copy"
    assert metrics.headline({**_record("memory", "ieee", 0.25, 1, 1), **d}) == d["gbps"]


def test_nothing_is_derived_for_a_record_that_is_not_ok():
    d = metrics.derive(_record("compute", "ieee", None, 1e9, 1e9, status="wrong"), ENV)
    assert d["gflops"] is None and d["pct_peak"] is None and d["intensity"] == pytest.approx(1)


def test_x_ref_pairs_within_op_shape_precision_and_mode():
    rows = [_record("memory", "ieee", 2.0, 1, 1, reference=True, implementation="ref"),
            _record("memory", "ieee", 1.0, 1, 1, implementation="fast"),
            {**_record("memory", "ieee", 1.0, 1, 1, implementation="hot"), "mode": "hot"},
            {**_record("memory", "ieee", 4.0, 1, 1, reference=True, implementation="hot ref"), "mode": "hot"},
            {**_record("memory", "ieee", 1.0, 1, 1, implementation="other precision"), "precision": "fp16"}]
    out = {r["implementation"]: r["x_ref"] for r in metrics.finalize(rows, ENV)}
    assert out == {"ref": 1.0, "fast": 2.0, "hot": 4.0, "hot ref": 1.0, "other precision": None}


def test_per_ghz_divides_the_headline_by_the_median_clock_for_compute_bound_ops_only():
    from study.metrics import per_ghz

    record = {"work": {"bound": "compute"}, "gflops": 1500.0, "clocks": {"sm_mhz_median": 1500.0}}
    assert per_ghz(record) == 1000.0
    assert per_ghz({**record, "clocks": {"sm_mhz_median": None}}) is None  # no clock recorded
    assert per_ghz({**record, "clocks": None}) is None
    assert per_ghz({"work": {"bound": "memory"}, "gbps": 3000.0, "clocks": {"sm_mhz_median": 1500.0}}) is None


def test_a_memory_bound_record_is_judged_against_a_copy_of_as_many_bytes_where_the_curve_exists():
    curve = [[64 * 2**20, 3500.0], [128 * 2**20, 4000.0], [2 * 2**30, 4300.0]]
    env = {**ENV, "ceilings": {**ENV["ceilings"], metrics.COPY_CURVE: curve}}
    nbytes = 96 * 2**20  # halfway between 64 and 128 MiB in log2: 3500 + 500 · log2(1.5)
    d = metrics.derive(_record("memory", "ieee", 0.03, 0, nbytes), env)
    at = 3500.0 + 500.0 * math.log2(1.5)
    assert d["pct_ceiling"] == pytest.approx(100 * d["gbps"] / at) and d["ceiling"] == metrics.SIZED_COPY
    assert metrics.copy_ceiling(curve, 2**20) == 3500.0 and metrics.copy_ceiling(curve, 2**40) == 4300.0
    assert metrics.copy_ceiling(curve, 128 * 2**20) == pytest.approx(4000.0)
    compute = metrics.derive(_record("compute", "bf16", 1.0, 7e11, 1e9), env)
    assert compute["ceiling"] != metrics.SIZED_COPY  # the curve is the memory-bound ceiling only
    assert metrics.derive(_record("memory", "ieee", 0.03, 0, nbytes), ENV)["ceiling"] == "device copy"

"""Reports render from a small made-up results file (tests/data/results_small.json),
without a GPU: tables, numbers, statuses, legend and figure."""

import json
import shutil
from pathlib import Path

import pytest

from study import report, results
from study.__main__ import main

DATA = Path(__file__).parent / "data" / "results_small.json"


@pytest.fixture
def doc():
    return results.load(DATA)


def test_finalize_derives_vs_cublas_from_medians(doc):
    by = {(m["rung"], m["backend"], m["autotune"]): m for m in doc["measurements"]}
    assert by[("v0_naive_colmajor_b", "cuda", "off")]["vs_cublas"] == pytest.approx(0.5)
    assert by[("v0_naive_colmajor_b", "triton", "off")]["vs_cublas"] == pytest.approx(0.25)
    assert by[(None, "cublas", "n/a")]["vs_cublas"] == pytest.approx(1.0)
    assert by[("v1_naive", "cuda", "off")]["vs_cublas"] is None  # wrong is never ranked


def test_ladder_table_puts_backends_side_by_side(doc):
    text = report.render(doc, Path("x.md"), draw=False)
    rows = [line for line in text.splitlines() if line.startswith("| v0")]
    assert len(rows) == 2  # the autotune-off table, then the autotune-on table
    assert rows[1].count("—") >= 6  # nothing of v0 was measured with autotune on
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[2:10] == ["1,200 ⚑launch-bound", "23.4 %", "25.0 %", "0.50×",
                           "600 ⚑noisy ⚑throttled", "11.7 %", "12.5 %", "0.25×"]
    v1 = next(line for line in text.splitlines() if line.startswith("| v1"))
    assert "**wrong**" in v1 and "**skipped**" in v1
    base = next(line for line in text.splitlines() if "cuBLAS baseline" in line)
    assert "2,400" in base and "46.9 %" in base


def test_statuses_reasons_device_block_and_legend(doc):
    text = report.render(doc, Path("x.md"), draw=False)
    assert "Made-up GPU X1" in text and "5,120 GFLOPS" in text and "`0123abcd`" in text
    assert "**wrong** — error 3e-05 exceeds" in text
    assert "**skipped** — M=100 needs" in text
    assert "**crashed** — CudaCompileError: boom" in text
    assert "### sgemm 100×200×300 float32, autotune off" in text
    assert "### sgemm 100×200×300 float32, autotune on" in text
    assert "median" in text and "2× the L2 size" in text and "TF32 off" in text
    assert "*measured* FP32 ceiling, an FFMA loop at 4,800 GFLOPS" in text
    assert "An empty kernel measured 2.00 µs" in text and "at most 0.5 %" in text


def test_flagged_measurements_are_listed_with_their_clocks(doc):
    text = report.render(doc, Path("x.md"), draw=False)
    line = next(l for l in text.splitlines() if l.startswith("- `sgemm/v0_naive_colmajor_b/triton`"))
    assert "noisy, throttled" in line and "1200.0–1980.0 MHz" in line and "sw_power_cap" in line
    assert "stop `timeout`" in line
    detail = next(l for l in text.splitlines() if l.startswith("| `sgemm/v0_naive_colmajor_b/triton`"))
    assert "timeout (40 throttled discarded)" in detail


def test_incomplete_runs_say_so(doc):
    doc["complete"] = False
    assert "Incomplete run" in report.render(doc, Path("x.md"), draw=False)


def test_report_command_regenerates_markdown_and_figure(tmp_path, capsys):
    src = tmp_path / "compare.json"
    shutil.copy(DATA, src)
    assert main(["report", str(src)]) == 0
    md = (tmp_path / "compare.md").read_text()
    assert "![sgemm ladder](figures/compare-sgemm.png)" in md
    assert (tmp_path / "figures" / "compare-sgemm.png").stat().st_size > 1000


def test_report_refuses_other_files(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": 99, "environment": {}, "measurements": []}))
    assert main(["report", str(bad)]) == 2
    assert "schema 99" in capsys.readouterr().err
    bad.write_text("[]")
    assert main(["report", str(bad)]) == 2


def test_reason_line_keeps_the_message_of_a_compiler_error():
    reason = "CompilationError: at 21:14:\n    acc = tl.dot(a, b)\n          ^\nK >= 16 required"
    assert report.reason_line(reason) == "CompilationError: K >= 16 required"
    assert report.reason_line("skipped for a reason") == "skipped for a reason"
    assert report.reason_line(None) == ""


def test_results_round_trip_keeps_full_precision_and_nulls_non_finite(tmp_path, doc):
    doc["measurements"][1]["median_ms"] = 0.1234567890123
    doc["measurements"][3]["error"]["err"] = float("inf")
    path = tmp_path / "r.json"
    results.write(path, doc)
    back = results.load(path)
    assert back["measurements"][1]["median_ms"] == 0.1234567890123
    assert back["measurements"][3]["error"]["err"] is None


def test_without_nvml_clocks_are_unknown_with_a_warning_and_reported_so(doc, monkeypatch):
    import sys

    from study import hardware

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml now raises ImportError
    with pytest.warns(UserWarning, match="clocks are recorded as unknown"):
        clocks = hardware.Clocks()
    assert not clocks.available and clocks.sm_mhz() is None and clocks.reasons() == 0
    m = doc["measurements"][0]
    m["clocks"] = {"available": False, "sm_mhz_min": None, "sm_mhz_median": None, "sm_mhz_max": None}
    name = m["implementation"]
    text = report.render(doc, Path("x.md"), draw=False)
    row = next(l for l in text.splitlines() if l.startswith(f"| `{name}`"))
    assert "| unknown " in row

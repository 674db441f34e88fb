"""Reports render from results alone, without a GPU: a schema-2 file (tests/data/results_small.json,
SGEMM as the previous schema stored it) and a schema-3 document built here (a memory-bound op,
two timing modes, two baselines). Tables, numbers, statuses, legend and figures."""

import copy
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


def test_a_schema_2_file_is_upgraded_and_derives_x_ref_from_medians(doc):
    by = {(m["rung"], m["backend"], m["autotune"]): m for m in doc["measurements"]}
    assert by[("v0_naive_colmajor_b", "cuda", "off")]["x_ref"] == pytest.approx(0.5)
    assert by[("v0_naive_colmajor_b", "triton", "off")]["x_ref"] == pytest.approx(0.25)
    assert by[(None, "cublas", "n/a")]["x_ref"] == pytest.approx(1.0)
    assert by[("v1_naive", "cuda", "off")]["x_ref"] is None  # wrong is never ranked
    base = by[(None, "cublas", "n/a")]
    assert base["work"]["flops"] == 2 * 100 * 200 * 300 and doc["upgraded_from"] == 2
    assert base["gflops"] == pytest.approx(2 * 100 * 200 * 300 / 0.005e-3 / 1e9)  # derived again, not carried over
    assert "vs_cublas" not in base and by[("v1_naive", "cuda", "off")]["work"]["flops"] == 2 * 100 * 200 * 300


def test_schema_2_ladder_table_puts_backends_side_by_side(doc):
    text = report.render(doc, Path("x.md"), draw=False)
    rows = [line for line in text.splitlines() if line.startswith("| v0")]
    assert len(rows) == 2  # the autotune-off table, then the autotune-on table
    assert set(c.strip() for c in rows[1].strip("|").split("|")[2:]) == {"—"}  # nothing of v0 with autotune on
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[2:10] == ["1,200 ⚑launch-bound", "23.4 %", "25.0 %", "0.50×",
                           "600 ⚑noisy ⚑throttled", "11.7 %", "12.5 %", "0.25×"]
    v1 = next(line for line in text.splitlines() if line.startswith("| v1"))
    assert "**wrong**" in v1 and "**skipped**" in v1
    base = next(line for line in text.splitlines() if "reference)" in line)
    assert "2,400" in base and "46.9 %" in base and "1.00×" in base


def test_statuses_reasons_device_block_and_legend(doc):
    text = report.render(doc, Path("x.md"), draw=False)
    assert "Made-up GPU X1" in text and "FP32 FFMA 5,120 GFLOPS" in text and "`0123abcd`" in text
    assert "**wrong** — error 3e-05 exceeds" in text
    assert "**skipped** — M=100 needs" in text
    assert "**crashed** — CudaCompileError: boom" in text
    assert "### sgemm 100×200×300 fp32 (float32, ieee), autotune off" in text
    assert "### sgemm 100×200×300 fp32 (float32, ieee), autotune on" in text
    assert "median" in text and "2× the L2 size" in text and "TF32 off" in text
    assert "FFMA loop 4,800 GFLOPS" in text and "Headline unit: **GFLOPS**" in text
    assert "an empty kernel's, 2.00 µs this run" in text and "at most 0.5 %" in text
    assert "## How these numbers were measured\n\n- **Gate.**" in text  # a list, one term an item


def test_flagged_measurements_are_listed_with_their_clocks(doc):
    text = report.render(doc, Path("x.md"), draw=False)
    line = next(l for l in text.splitlines() if l.startswith("- `sgemm/v0_naive_colmajor_b/triton`"))
    assert "noisy, throttled" in line and "1200.0–1980.0 MHz" in line and "sw_power_cap" in line
    assert "stop `timeout`" in line
    detail = next(l for l in text.splitlines() if l.startswith("| `sgemm/v0_naive_colmajor_b/triton`"))
    assert "timeout (40 throttled discarded)" in detail


def _gemv_doc(doc):
    """A schema-3 document: sgemv at one shape, fp16, cold and hot, two rungs, two baselines."""
    env = copy.deepcopy(doc["environment"])
    env["gpu"]["peaks_gflops"] = {"ieee": 5120.0}
    env["ceilings"]["copy_gbps"] = 2900.0
    work = {"flops": 2 * 1000 * 2000, "bytes": 2 * (1000 * 2000 + 2000 + 1000), "bound": "memory"}
    base = {"op": "sgemv", "shape": {"M": 1000, "N": 2000}, "precision": "fp16", "dtype": "float16", "math": "ieee",
            "status": "ok", "reason": "", "work": work, "config": {}, "error": None, "samples_ms": [1.0],
            "min_ms": None, "q1_ms": None, "q3_ms": None, "mean_ms": None, "rel_stdev": None, "timing": {},
            "clocks": {}, "library": None, "reference": False, "baseline": None}
    records = []
    for mode, scale in (("cold", 1.0), ("hot", 0.5)):
        for rung, index, backend, ms in (("v0_a", 0, "cuda", 0.004), ("v0_a", 0, "triton", 0.008),
                                         ("v1_b", 1, "cuda", 0.002), ("v1_b", 1, "triton", 0.0025)):
            records.append({**base, "rung": rung, "rung_index": index, "backend": backend, "autotune": "off",
                            "mode": mode, "implementation": f"sgemv/{rung}/{backend}", "median_ms": ms * scale})
        for key, library, ref, ms in (("torch_mv", "cuBLAS", True, 0.002), ("cupy_dot", "cuBLAS (CuPy)", False, 0.004)):
            records.append({**base, "rung": None, "rung_index": None, "backend": "cublas", "autotune": "n/a",
                            "mode": mode, "baseline": key, "library": library, "reference": ref,
                            "implementation": f"sgemv/{key}/cublas", "median_ms": ms * scale})
    return results.document(env, records)


def test_a_memory_bound_op_is_reported_in_gbps_with_cold_and_hot_side_by_side(doc):
    gemv = _gemv_doc(doc)
    by = {(m["implementation"], m["mode"]): m for m in gemv["measurements"]}
    cold = by[("sgemv/v1_b/cuda", "cold")]
    assert cold["gbps"] == pytest.approx(4006000 / 0.002e-3 / 1e9)
    assert cold["pct_peak"] == pytest.approx(100 * cold["gbps"] / 3072.0)
    assert cold["pct_ceiling"] == pytest.approx(100 * cold["gbps"] / 2900.0) and cold["ceiling"] == "device copy"
    assert cold["x_ref"] == pytest.approx(1.0) and by[("sgemv/v0_a/cuda", "hot")]["x_ref"] == pytest.approx(0.5)
    assert by[("sgemv/cupy_dot/cublas", "cold")]["x_ref"] == pytest.approx(0.5)
    text = report.render(gemv, Path("x.md"), draw=False)
    header = next(l for l in text.splitlines() if l.startswith("| #"))
    assert "CUDA GB/s cold" in header and "CUDA GB/s hot" in header and "Triton × ref hot" in header
    assert "GFLOPS" not in header and "Headline unit: **GB/s**" in text
    table = [l for l in text.splitlines() if l.startswith("| ") and "`sgemv/" not in l and "---" not in l]
    columns = list(zip(*[[c.strip() for c in l.strip("|").split("|")] for l in table[1:]]))
    assert all(any(c not in ("", "—") for c in col) for col in columns)  # no blank column
    ref_row = next(l for l in table if "**torch_mv** (cuBLAS, reference)" in l)
    other = next(l for l in table if "**cupy_dot** (cuBLAS (CuPy), baseline)" in l)
    assert "1.00×" in ref_row and "0.50×" in other
    assert text.index("**torch_mv**") < text.index("**cupy_dot**")  # the reference first
    assert "⚑L2" in text  # hot GB/s above the 3,072 GB/s peak: L2, and the legend says so
    assert "is L2 bandwidth, not HBM" in text and "minimum bytes" in text


def test_with_the_copy_curve_a_gbps_figure_is_judged_against_a_copy_of_as_many_bytes(doc):
    from study import metrics

    plain = _gemv_doc(doc)
    doc = copy.deepcopy(doc)
    doc["environment"]["ceilings"][metrics.COPY_CURVE] = [[4 * 2**20, 1000.0], [64 * 2**20, 3500.0]]
    gemv = _gemv_doc(doc)  # 4,006,000 bytes moved: below the curve's first point, its figure
    cold = next(m for m in gemv["measurements"] if m["implementation"] == "sgemv/v1_b/cuda" and m["mode"] == "cold")
    assert cold["pct_ceiling"] == pytest.approx(100 * cold["gbps"] / 1000.0) and cold["ceiling"] == metrics.SIZED_COPY
    text = report.render(gemv, Path("x.md"), draw=False)
    assert "device copy of as many bytes as the case moves" in text and "4 MiB 1,000 GB/s, 64 MiB 3,500 GB/s" in text
    assert "as many bytes" not in report.render(plain, Path("x.md"), draw=False)  # no curve: the 2 GiB copy


def test_the_report_command_draws_the_ladder_and_the_roofline(tmp_path, doc):
    path = tmp_path / "g.json"
    results.write(path, _gemv_doc(doc))
    assert main(["report", str(path)]) == 0
    md = (tmp_path / "g.md").read_text()
    for name in ("g-sgemv.png", "g-sgemv-roofline.png"):
        assert f"(figures/{name})" in md and (tmp_path / "figures" / name).stat().st_size > 1000


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
    results.write(path, {**doc, "schema": results.SCHEMA})
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


def test_a_report_names_the_gpus_when_its_records_ran_on_several():
    from study.report import gpus_used

    ms = [{"gpu": {"index": i % 2, "uuid": f"GPU-{i % 2}"}} for i in range(5)]
    assert gpus_used(ms) == "`GPU-0`: 3 measurements; `GPU-1`: 2 measurements"
    assert gpus_used(ms[::2][:1]) is None and gpus_used([{}]) is None  # one GPU (or none known): said once above


def test_an_emulating_rung_is_labelled_and_its_peak_explained(doc):
    # A 3xTF32 record in an FP32 table must not read as FFMA: its row and the legend say what it is.
    doc = copy.deepcopy(doc)
    for m in doc["measurements"]:
        if m["rung"] == "v0_naive_colmajor_b":
            m["math"] = "3xtf32"
    text = report.render(doc, Path("x.md"), draw=False)
    v0 = next(line for line in text.splitlines() if line.startswith("| v0"))
    assert "3xTF32: FP32-accurate tensor-core emulation" in v0
    v1 = next(line for line in text.splitlines() if line.startswith("| v1"))
    assert "emulation" not in v1
    assert "a third of the TF32 peak" in text


def test_the_best_figure_needs_two_shapes_and_keeps_an_emulation_apart(tmp_path, doc, monkeypatch):
    import seaborn

    assert report.best_figure(doc["measurements"], "sgemm", tmp_path / "one.png") is None  # one shape
    more = copy.deepcopy(doc["measurements"])
    for m in more:
        m["shape"] = {"M": 64, "N": 64, "K": 64}
        if m["rung"] == "v0_naive_colmajor_b" and m["backend"] == "cuda":
            m["math"] = "3xtf32"  # a CUDA rung of another math mode: its own series, never "CUDA"
    seen, catplot = {}, seaborn.catplot

    def spy(data, **kw):  # what the figure is drawn from
        seen["series"] = sorted(set(data["series"]))
        return catplot(data=data, **kw)

    monkeypatch.setattr(seaborn, "catplot", spy)
    path = report.best_figure(doc["measurements"] + more, "sgemm", tmp_path / "best.png")
    assert path.stat().st_size > 1000
    assert seen["series"] == ["CUDA", "CUDA (3xtf32)", "Triton"]


def test_the_best_table_gives_the_best_figure_numbers_and_keeps_an_emulation_apart(doc):
    assert report.best_table(doc["measurements"], "sgemm") is None  # one shape: no figure, no table
    more = copy.deepcopy(doc["measurements"])
    for m in more:
        m["shape"] = {"M": 64, "N": 64, "K": 64}
        if m["rung"] == "v0_naive_colmajor_b" and m["backend"] == "cuda":
            m["math"] = "3xtf32"
    table = report.best_table(doc["measurements"] + more, "sgemm")
    header, _, *rows = table.splitlines()
    assert [c.strip() for c in header.strip("|").split("|")][3:] == ["CUDA", "CUDA (3xtf32)", "Triton"]
    cells = {row.split("|")[1].strip(): [c.strip() for c in row.strip("|").split("|")] for row in rows}
    assert cells["64×64×64"][4].startswith("v0 (off)") and cells["64×64×64"][4].endswith("0.50×")
    assert cells["64×64×64"][3] == "—"  # v0 was the only CUDA rung that passed, and it went to its own column
    assert cells["100×200×300"][3].startswith("v0 (off)")  # the original shape: v0 is FFMA there
    assert "v1" not in table  # v1 is wrong: never ranked
    assert cells["100×200×300"][2] == "2,400 (torch_matmul)" and cells["64×64×64"][5].endswith("0.25×")
    text = report.render({**doc, "measurements": doc["measurements"] + more}, Path("x.md"), draw=False)
    assert table in text


def test_a_ladder_of_one_precision_over_many_shapes_wraps_its_panels(tmp_path, doc, monkeypatch):
    # Seven shapes in one row (the sgemm ladder) made a figure too wide to read: past WRAP shapes
    # the panels wrap, and every panel still gets its shape's reference line.
    import matplotlib.axes
    import seaborn

    shapes = [{"M": 64 * (i + 1), "N": 64, "K": 64} for i in range(report.WRAP + 2)]
    many = []
    for shape in shapes:
        for m in copy.deepcopy(doc["measurements"]):
            m["shape"] = shape
            many.append(m)
    seen, catplot, axhline = {}, seaborn.catplot, matplotlib.axes.Axes.axhline

    def spy(data, **kw):
        seen.update(kw)
        return catplot(data=data, **kw)

    def line(ax, *args, **kw):
        seen["lines"] = seen.get("lines", 0) + 1
        return axhline(ax, *args, **kw)

    monkeypatch.setattr(seaborn, "catplot", spy)
    monkeypatch.setattr(matplotlib.axes.Axes, "axhline", line)
    assert report.figure(many, "sgemm", tmp_path / "wide.png").stat().st_size > 1000
    assert seen["col_wrap"] == report.WRAP and "row" not in seen
    assert seen["lines"] == len(shapes)
    seen.clear()
    report.figure(many[: len(doc["measurements"]) * report.WRAP], "sgemm", tmp_path / "row.png")
    assert "col_wrap" not in seen and seen["row"] == "precision" and seen["lines"] == report.WRAP


def test_runs_at_different_clocks_get_an_equal_clock_table(doc):
    text = report.render(doc, Path("x.md"), draw=False)
    assert "At an equal clock" not in text  # every median at 1980 MHz: × ref alone is fair
    doc = copy.deepcopy(doc)
    for m in doc["measurements"]:
        if m["implementation"] == "sgemm/torch_matmul/cublas":
            m["clocks"] = {**m["clocks"], "sm_mhz_median": 1500.0, "sm_mhz_min": 1400.0}
    text = report.render(doc, Path("x.md"), draw=False)
    assert text.count("At an equal clock") == 1  # autotune off only: no ok rung ran with autotune on
    row = next(line for line in text.splitlines() if line.startswith("| `sgemm/v0_naive_colmajor_b/cuda`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # 1,200 GFLOPS at 1980 MHz against the reference's 2,400 at 1500: 606 and 1,600 per GHz, 0.38×
    assert cells == ["`sgemm/v0_naive_colmajor_b/cuda`", "1,200", "1980 (1980–1980)", "606", "0.38×"]
    base = next(line for line in text.splitlines() if line.startswith("| `sgemm/torch_matmul/cublas`"))
    assert "1500 (1400–1980)" in base and "1,600" in base and "1.00×" in base


def _hgemm_record(rung_index, backend, gflops, autotune="off", shape=None, reference=False, status="ok"):
    rung = None if reference else f"v{rung_index}_rung"
    return {"op": "hgemm", "rung": rung, "rung_index": None if reference else rung_index, "backend": backend,
            "implementation": f"hgemm/{rung or 'torch_matmul'}/{backend}", "reference": reference,
            "shape": shape or {"M": 4096, "N": 4096, "K": 4096}, "precision": "fp16", "autotune": autotune,
            "status": status, "work": {"bound": "compute"}, "gflops": gflops, "pct_peak": 100 * gflops / 1e6,
            "peak": "FP16 tensor cores"}


def test_the_hgemm_ladder_sets_the_seeds_steps_beside_its_rungs_and_embeds_the_saved_ncu_table(tmp_path):
    from study.report import seed_ladder

    ms = [_hgemm_record(i, "cuda", 1000.0 * (i + 1)) for i in range(4)]
    ms += [_hgemm_record(2, "cuda", 9000.0, autotune="on"), _hgemm_record(2, "triton", 300000.0, autotune="on"),
           _hgemm_record(3, "cuda", 99999.0, status="wrong"),  # never the best
           _hgemm_record(0, "cuda", 1e5, shape={"M": 8192, "N": 8192, "K": 8192}),  # another shape
           _hgemm_record(None, "cublas", 700000.0, autotune="n/a", reference=True)]
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "hgemm.md").write_text("| implementation | ms |\n|---|---|\n| `hgemm/v6/cuda` | 0.44 |\n")
    text = "\n".join(seed_ladder.section(ms, None, tmp_path))
    row = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| v")}
    assert "~30 · 10 %" in row["v2"] and "9.0 · 0.90 % tuned" in row["v2"] and "300.0 · 30.0 % tuned" in row["v2"]
    assert "4.0 · 0.40 %" in row["v3"] and "100.0" not in row["v3"]  # the wrong one is not ranked
    assert "1.0 · 0.10 %" in row["v0"] and "100.0" not in row["v0"]  # 8192³ is not the seed's shape
    assert "~310 · 95 %+" in text and "700.0 · 70.0 % (torch_matmul)" in text
    assert "| `hgemm/v6/cuda` | 0.44 |" in text  # the saved ncu table, embedded
    assert seed_ladder.section(ms[:3], None, tmp_path) == []  # three of the seed's steps are no ladder


def test_a_paired_record_shows_its_interval_and_an_impossible_one_its_figure_never_ranked(doc):
    gemv = _gemv_doc(doc)
    records = [dict(m) for m in gemv["measurements"]]
    fast = next(m for m in records if m["implementation"] == "sgemv/v1_b/cuda" and m["mode"] == "cold")
    pairing = {"reference": "sgemv/torch_mv/cublas", "ratio": 1.004, "ci": [0.997, 1.011], "rounds": 24,
               "stop": "ci", "ratios": [0.98, 1.03] * 12, "reference_median_ms": 0.002,
               "reference_clocks": {"sm_mhz_median": 1900.0, "power_w_median": 400.0}}
    records.append({**fast, "paired": pairing, "median_ms": 0.00199,
                    "clocks": {"sm_mhz_median": 1995.0, "power_w_median": 410.0, "at_power_cap": False}})
    wild = next(m for m in records if m["implementation"] == "sgemv/v0_a/triton" and m["mode"] == "cold")
    wild.update(status="impossible", median_ms=1e-5, reason="400,600 GB/s from a flushed L2 is above the memory's "
                                                            "theoretical 3,072 GB/s: work left out of the timed launch")
    text = report.render(results.document(gemv["environment"], records), Path("x.md"), draw=False)
    row = next(l for l in text.splitlines() if l.startswith("| `sgemv/v1_b/cuda`") and "24" in l)
    assert "1.00× [0.997, 1.011] same within noise" in row and "1995 / 1900" in row and "410 / 400" in row
    assert "| +5.1 %  |" in row  # B-first rounds 1.03, A-first 0.98: the order effect, from the rounds kept
    assert "Paired against the reference" in text
    ladder = [l for l in text.splitlines() if l.startswith("| v1")]  # the unpaired record keeps the ladder's row
    assert len(ladder) == 1 and "2.00×" not in ladder[0].split("|")[4]
    assert "**impossible** 400,600" in text and "**Impossible figures**" in text
    impossible = next(m for m in results.document(gemv["environment"], records)["measurements"]
                      if m["status"] == "impossible")
    assert impossible["gbps"] > 100_000 and impossible["x_ref"] is None  # shown, never ranked
    from study.report.labels import flags

    assert "clocks" in flags(records[-1]) and "clocks" not in flags(fast)  # 5 % apart: beyond 3 %
    assert "power-mix" not in flags(records[-1])
    assert "power-mix" in flags({**records[-1], "steady": {"sm_mhz": [1760.0] * 3}})  # alone 1760, paired 1995 MHz


def test_the_details_leave_out_a_flags_column_nothing_fills(doc):
    from study.report.labels import flags
    from study.report.tables import detail_table

    quiet = [m for m in doc["measurements"] if not flags(m)]
    loud = [m for m in doc["measurements"] if flags(m)]
    assert quiet and loud
    header = detail_table(quiet).splitlines()[0]
    assert "flags" not in header and "implementation" in header and "config" in header
    assert "flags" in detail_table(quiet + loud[:1]).splitlines()[0]

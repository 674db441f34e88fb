import pytest

from study.validate import judge, markdown, parse_ncu_csv

CSV = '''==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python","h","gemm","1","7","(256, 1, 1)","(8, 8, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","10.50"
"1","1","python","h","splitk_reduce","1","7","(256, 1, 1)","(8, 8, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,500"
"2","1","python","h","gemm","1","7","(256, 1, 1)","(8, 8, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","11.50"
"3","1","python","h","splitk_reduce","1","7","(256, 1, 1)","(8, 8, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","2,500"
'''


def test_ncu_csv_sums_the_kernels_of_each_launch():
    per_launch, kernels = parse_ncu_csv(CSV, launches=2)
    assert kernels == 2 and per_launch == pytest.approx([0.012, 0.014])
    with pytest.raises(ValueError, match="3 launches"):
        parse_ncu_csv(CSV, launches=3)
    with pytest.raises(ValueError, match="no CSV"):
        parse_ncu_csv("ncu: nothing profiled", launches=1)


def test_ncu_short_unit_names_are_understood():
    short = CSV.replace('"usecond"', '"us"').replace('"nsecond"', '"ns"')
    assert parse_ncu_csv(short, launches=2)[0] == pytest.approx([0.012, 0.014])


def _row(a, b, do_bench, ncu):
    return {"implementation": "sgemm/v1_naive/cuda", "backend": "cuda", "shape": {"M": 1, "N": 1, "K": 1},
            "status": "ok", "do_bench_ms": do_bench, "ncu": {"median_ms": ncu},
            "study": [{"median_ms": a, "timing": {"stop": "noise", "noise": 0.001}, "clocks": {"sm_mhz_median": 1980}},
                      {"median_ms": b, "timing": {"stop": "noise", "noise": 0.001}, "clocks": {"sm_mhz_median": 1980}}]}


def test_judge_applies_the_targets():
    good = judge(_row(1.00, 1.004, 1.01, 0.99))
    assert good["targeted"] and all(good["pass"].values())
    bad = judge(_row(1.0, 1.05, 0.9, 0.9))
    assert bad["pass"] == {"do_bench": False, "ncu": False, "spread": False}
    short = judge(_row(0.01, 0.01, 0.0105, 0.008))
    assert not short["targeted"] and short["pass"]["ncu"] is False


def test_markdown_explains_each_miss_from_the_measurements():
    doc = {"environment": {"gpu": {"name": "X", "driver": "1"}, "git": {"commit": "c"}, "utc": "t",
                           "torch": "2", "triton": "3"},
           "ncu_available": True, "launch_overhead_ms": 0.002,
           "kernels": [judge(_row(1.0, 1.05, 0.9, 0.9)), judge(_row(0.01, 0.01, 0.0105, 0.008))]}
    text = markdown(doc)
    assert "1.139 ✗" in text and "(✗ < 50 µs)" in text
    assert "study − ncu = 2.00 µs (the empty-kernel launch measures 2.00 µs" in text
    assert "the two study runs gave 1.0000 and 1.0500 ms" in text


def test_a_miss_against_ncu_is_shown_with_the_measured_instrument_offset():
    doc = {"environment": {"gpu": {"name": "X", "driver": "1"}, "git": {"commit": "c"}, "utc": "t",
                           "torch": "2", "triton": "3"},
           "ncu_available": True, "launch_overhead_ms": 0.004, "ncu_empty": {"median_ms": 0.0015}}
    offset = 0.004 - 0.0015
    row = judge(_row(0.074, 0.074, 0.074, 0.0714), offset)
    assert row["targeted"] and row["pass"]["ncu"] is False  # the offset never changes a verdict
    assert row["vs_ncu_less_offset"] == pytest.approx((0.074 - offset) / 0.0714)
    text = markdown({**doc, "kernels": [row]})
    assert "events read 4.00 µs and ncu 1.50 µs: 2.50 µs" in text
    assert "kernels shorter than 83 µs" in text
    assert "study − ncu = 2.60 µs, against an events-vs-ncu offset of 2.50 µs" in text
    assert f"study/ncu = {row['vs_ncu_less_offset']:.3f}" in text
    assert judge(_row(0.074, 0.074, 0.074, 0.0714))["vs_ncu_less_offset"] is None


def test_a_bad_config_override_of_the_ncu_target_is_a_usage_error(capsys):
    from study import child

    assert child.ncu("hgemm/v6_mma_sync/cuda", "64x64x64", 1, config_text="FOO=1") == 2
    assert "FOO=1" in capsys.readouterr().err


def _pair_row(read, written, do_bench, interleaved=None):
    ci = lambda r: [r - 0.003, r + 0.003]  # noqa: E731
    absolute = {"study_read_flush_ms": 1.0, "study_write_flush_ms": 1.04, "do_bench_ms": 1.05}
    return {"implementation": "hgemm/v8_warp_specialized/cuda", "reference": "hgemm/torch_matmul/cublas",
            "shape": "8192x8192x8192", "precision": "bf16", "status": "ok",
            "paired": {"ratio": read, "ci": ci(read), "rounds": 20, "power_mix": 0.01, "interleaved": interleaved,
                       "interleaved_borrowed": (interleaved or {}).get("borrowed")},
            "paired_write_flush": {"ratio": written, "ci": ci(written), "rounds": 12},
            "do_bench": {"ratio": do_bench, "min": do_bench - 0.01, "max": do_bench + 0.01},
            "clocks": {"implementation": {"sm_mhz_median": 1530.0}, "reference": {"sm_mhz_median": 1530.0}},
            "absolute": {"implementation": absolute, "reference": absolute},
            "within_target": abs(written / do_bench - 1) <= 0.02}


def test_a_pair_is_judged_against_do_bench_with_the_same_flush_and_both_are_shown():
    from study.validate_pairs import markdown as pairs_markdown

    # hgemm v8 on the H200: 2.3 % ahead with the study's read flush, level with do_bench's write flush
    text = "\n".join(pairs_markdown([_pair_row(1.023, 1.004, 0.999)]))
    cells = [c.strip() for c in text.splitlines()[[i for i, line in enumerate(text.splitlines())
                                                     if "hgemm/v8" in line][0]].split("|")]
    assert "+2.40 %" in cells and "+0.50 % ✓" in cells and "1.004 [1.001, 1.007]" in cells
    missed = "\n".join(pairs_markdown([_pair_row(1.023, 1.050, 0.999)]))
    assert "+5.11 % ✗" in missed
    settled = "\n".join(pairs_markdown([_pair_row(2.21, 2.20, 2.206, {"ratio": 2.483, "borrowed": 0.13})]))
    assert "⚑re-settled (interleaved 2.483, a side 13 % above its own clock)" in settled

"""Suites of shapes (study.suites): derived from published model dimensions or drawn with a fixed
seed, each shape in its op's axes; compare --suite plans them; the page's suite verdict counts the
skipped shapes beside the geometric mean instead of averaging over what ran."""

import math
from pathlib import Path

import pytest

from study import report, results, suites
from study.catalog import ladder
from study.report import suite as suite_report
from study.select import cases

DATA = Path(__file__).parent / "data" / "results_small.json"


@pytest.mark.parametrize("name", list(suites.SUITES))
def test_every_suite_shape_is_in_its_ops_axes(name):
    for op, shapes in suites.SUITES[name].shapes.items():
        axes = ladder(op).problem.axes
        assert shapes and all(tuple(s) == axes and min(s.values()) >= 1 for s in shapes), (name, op)


def test_a_model_suite_follows_from_the_models_dimensions():
    llama = suites.suite("llama2-7b").shapes
    assert {"M": 4096, "N": 12288, "K": 4096} in llama["hgemm"]          # the fused Q, K, V projection
    assert {"M": 1, "N": 32000, "K": 4096} in llama["sgemm"]             # the LM head at one token
    assert {"M": 16, "N": 4096, "K": 11008} in llama["hgemm"]            # the MLP's down projection
    assert {"batch": 32, "M": 1, "N": 4096, "K": 128} in llama["bgemm"]  # a decode step's scores
    assert {"M": 32000, "N": 4096} in llama["sgemv"] and {"M": 4096, "N": 32000} in llama["softmax"]
    gpt2 = suites.suite("gpt2-xl").shapes
    assert {"M": 16, "N": 50257, "K": 1600} in gpt2["hgemm"] and {"batch": 25, "M": 1024, "N": 64, "K": 1024} in gpt2["bgemm"]


def test_the_odd_suite_is_seeded_and_mostly_no_multiple_of_8():
    odd = suites.suite("odd").shapes
    sizes = [v for s in odd["hgemm"] for v in s.values()]
    assert len(odd["hgemm"]) == suites.ODD_COUNT and all(1 <= v <= suites.MAX_SIZE for v in sizes)
    assert sum(v % 8 != 0 for v in sizes) >= 0.7 * len(sizes)
    assert all(math.prod(s.values()) <= 2**36 for s in odd["sgemm"])
    assert odd == suites._odd_suite().shapes  # the same draw every time


def test_compare_plans_a_suites_shapes_for_the_ops_it_covers():
    planned = cases(["hgemm"], suites=["gpt2-xl"], backends=["cuda"], rungs=["v8"], dtypes=["bf16"])
    shapes = {tuple(c.shape.values()) for c in planned}
    assert shapes == {tuple(s.values()) for s in suites.suite("gpt2-xl").shapes["hgemm"]}
    with_extra = cases(["hgemm"], shapes=["64x64x64"], suites=["gpt2-xl"], backends=["cuda"], rungs=["v8"],
                       dtypes=["bf16"])
    assert len({tuple(c.shape.values()) for c in with_extra}) == len(shapes) + 1


def _record(shape, backend, rung, x_ref, status="ok", reason=""):
    return {"op": "hgemm", "implementation": f"hgemm/{rung}/{backend}", "backend": backend, "rung": rung,
            "rung_index": 8, "shape": shape, "precision": "bf16", "dtype": "bfloat16", "mode": "cold",
            "autotune": "off", "status": status, "reason": reason, "x_ref": x_ref if status == "ok" else None,
            "math": "bf16"}


def test_the_suite_verdict_counts_skipped_shapes_beside_the_geometric_mean(tmp_path):
    a, b, c = ({"M": 1, "N": 4800, "K": 1600}, {"M": 4096, "N": 1600, "K": 1600}, {"M": 16, "N": 50257, "K": 1600})
    ms = [_record(a, "cuda", "v8_ws", 0.5), _record(b, "cuda", "v8_ws", 1.0), _record(b, "cuda", "v7_tma", 0.9),
          _record(c, "cuda", "v8_ws", None, "skipped", "TMA reads rows that start 16 bytes apart by a multiple"),
          _record(a, "triton", "v8_ws", 0.8), _record(b, "triton", "v8_ws", 0.8), _record(c, "triton", "v8_ws", 0.2)]
    found = suite_report.summary(ms, "hgemm")
    cuda = found[("bf16", "CUDA")]
    assert cuda["ratios"] == {"1×4800×1600": 0.5, "4096×1600×1600": 1.0}
    assert cuda["skipped"] == {"16×50257×1600": "skipped: TMA reads rows that start 16 bytes apart by a multiple"}
    lines = "\n".join(suite_report.lines(ms, "hgemm", tmp_path / "figures" / "s.png", tmp_path))
    row = next(line for line in lines.splitlines() if "| CUDA" in line)
    assert f"{math.sqrt(0.5):.3f}×" in row and "0.500× at 1×4800×1600" in row and row.rstrip(" |").endswith("1")
    assert "- CUDA bf16 16×50257×1600: skipped: TMA reads" in lines and (tmp_path / "figures" / "s.png").is_file()
    triton = next(line for line in lines.splitlines() if "| Triton" in line)
    assert f"{(0.8 * 0.8 * 0.2) ** (1 / 3):.3f}×" in triton


def test_the_suite_is_judged_against_its_goals_and_names_the_shapes_below_with_the_profiles_saved_there(tmp_path):
    from study.report import goals
    from test_profile import OUTPUT

    a, b, c = ({"M": 1, "N": 4800, "K": 1600}, {"M": 4096, "N": 1600, "K": 1600}, {"M": 16, "N": 50257, "K": 1600})
    ms = [_record(a, "cuda", "v8_ws", 0.5), _record(b, "cuda", "v8_ws", 1.0), _record(c, "cuda", "v10_skinny", 0.7),
          _record(a, "triton", "v8_ws", 0.95), _record(b, "triton", "v8_ws", 0.95), _record(c, "triton", "v8_ws", 0.9)]
    (tmp_path / "profiles").mkdir()  # profiles one level above the report's folder, as reports/h200/profiles
    (tmp_path / "profiles" / "ncu-hgemm-v8_ws-cuda-1x4800x1600-bf16.csv").write_text(OUTPUT)
    (tmp_path / "profiles" / "ncu-hgemm-v8_ws-cuda-4096x1600x1600-bf16.csv").write_text(OUTPUT)  # a shape above
    (tmp_path / "profiles" / "ncu-hgemm-v8_ws-cuda-16x50257x1600.csv").write_text(OUTPUT)  # hgemm's default: FP16
    text = "\n".join(suite_report.lines(ms, "hgemm", None, tmp_path / "suites"))
    assert f"- CUDA bf16: geometric mean {(0.5 * 0.7) ** (1 / 3):.3f}× (goal ≥ 0.95×: missed); every shape ≥ 0.75×: " \
           "missed at 2 of 3: 1×4800×1600 0.500× (v8_ws), 16×50257×1600 0.700× (v10_skinny)" in text
    assert f"- Triton bf16: geometric mean {(0.95 * 0.95 * 0.9) ** (1 / 3):.3f}× (goal ≥ 0.9×: met)" in text
    evidence = next(line for line in text.splitlines() if line.startswith("- 1×4800×1600 bf16:"))
    assert "(../profiles/ncu-hgemm-v8_ws-cuda-1x4800x1600-bf16.csv)" in evidence
    assert "`sgemm_v5_split_k<128, 8>` 3.9629, `splitk_reduce` 0.0411" in evidence and "issue active 76.5 %" in evidence
    assert "the one with the most time in all, `sgemm_v5_split_k<128, 8>`" in evidence  # v8_ws is no rung of hgemm
    assert "- not profiled yet: 16×50257×1600 bf16" in text and "4096×1600×1600 bf16:" not in text
    # a shape no CUDA rung ran misses the per-shape goal and is counted beside the mean, which then cannot meet
    ms += [_record({"M": 5, "N": 7, "K": 9}, "cuda", "v8_ws", None, "skipped", "out of scope")]
    text = "\n".join(suite_report.lines(ms, "hgemm", None, tmp_path / "suites"))
    assert "geometric mean 0.705× over 3 of 4 shapes (1 not run) (goal ≥ 0.95×: missed)" in text
    assert "missed at 3 of 4: 1×4800×1600 0.500× (v8_ws), 16×50257×1600 0.700× (v10_skinny), 5×7×9 not run" in text
    # FP32: the verdict series is judged, not the FFMA or 3xTF32 series beside it; an op without goals has none
    keys = [("fp32", "CUDA"), ("fp32", "CUDA (3xtf32)"), ("fp32", "CUDA (ieee, or 3xtf32 where error ≤ ref)"),
            ("fp32", "Triton"), ("bf16", "CUDA")]
    assert goals.judged(keys) == {("fp32", "CUDA (ieee, or 3xtf32 where error ≤ ref)"): "CUDA", ("fp32", "Triton"): "Triton",
                                  ("bf16", "CUDA"): "CUDA"}
    assert goals.lines({("fp32", "CUDA"): {}}, {("fp32", "CUDA"): {"skipped": {}}}, "softmax_plugin", tmp_path) == []


def test_a_missed_geometric_mean_names_its_lowest_shapes_and_cites_their_profiles(tmp_path):
    # Every shape above the per-shape goal, the mean below its own: the shapes that hold it down are named (at most
    # LOWEST, those under the per-shape goal being named there) and their saved profiles cited; a met mean names none.
    from test_profile import OUTPUT

    shapes = [{"M": m, "N": 64, "K": 64} for m in (1, 2, 3, 4, 5)]
    ms = [_record(s, "cuda", "v1", x) for s, x in zip(shapes, (0.8, 0.85, 0.9, 0.7, 1.3))]
    ms += [_record(s, "triton", "v1", x) for s, x in zip(shapes, (0.95, 0.8, 1.0, 1.0, 1.0))]
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "ncu-hgemm-v1-cuda-2x64x64-bf16.csv").write_text(OUTPUT)
    text = "\n".join(suite_report.lines(ms, "hgemm", None, tmp_path / "suites"))
    assert "(goal ≥ 0.95×: missed); lowest: 1×64×64 0.800× (v1), 2×64×64 0.850× (v1), 3×64×64 0.900× (v1); " \
           "every shape ≥ 0.75×: missed at 1 of 5: 4×64×64 0.700× (v1)" in text
    assert "(goal ≥ 0.9×: met)" in text and text.count("lowest:") == 1
    inputs = 2 * (2 * 64 + 64 * 64)  # hgemm at 2×64×64 BF16: A and B read once; C (256 bytes) written once
    assert next(line for line in text.splitlines() if line.startswith("- 2×64×64 bf16:")).endswith(
        f"achieved 23.8 %; a launch's DRAM read 202.4 MB, {202375168 / inputs:.2f}× its inputs' 8.4 kB, and written "
        "67.6 MB (a floor: L2 writes back later) of its output's 256 B")
    assert "- not profiled yet: 1×64×64 bf16, 3×64×64 bf16, 4×64×64 bf16" in text
    ms = [m for m in ms if m["backend"] == "cuda"] + [_record(s, "triton", "v1", 0.5) for s in shapes]
    triton = next(line for line in "\n".join(suite_report.lines(ms, "hgemm", None, tmp_path)).splitlines()
                  if line.startswith("- Triton"))
    assert triton.endswith("(goal ≥ 0.9×: missed); lowest: 1×64×64 0.500× (v1), 2×64×64 0.500× (v1), 3×64×64 "
                           "0.500× (v1)")


def test_the_fp32_verdict_credits_3xtf32_only_where_its_gate_error_is_at_most_the_references():
    a, b, c, d, e = ({"M": 1, "N": 4096, "K": 4096}, {"M": 4096, "N": 4096, "K": 4096}, {"M": 16, "N": 4096, "K": 4096},
                     {"M": 8, "N": 4096, "K": 4096}, {"M": 2, "N": 4096, "K": 4096})

    def fp32(shape, rung, x_ref, err, math="ieee", reference=False, paired=None):
        backend = "cublas" if reference else "cuda"
        return {"op": "sgemm", "implementation": f"sgemm/{rung}/{backend}", "backend": backend,
                "rung": None if reference else rung, "rung_index": 11, "shape": shape, "precision": "fp32",
                "dtype": "float32", "mode": "cold", "autotune": "off", "status": "ok", "reason": "", "x_ref": x_ref,
                "math": math, "reference": reference, "error": None if err is None else {"err": err},
                "paired": paired}

    ms = [fp32(s, "torch_matmul", 1.0, 2e-8, reference=True) for s in (a, b, c, d)]
    ms += [fp32(e, "torch_matmul", 1.0, None, reference=True)]  # a reference without its error
    ms += [fp32(a, "v9", 0.3, 9e-8), fp32(a, "v11", 0.8, 6e-8, "3xtf32"),  # FFMA counts whatever its error;
           fp32(b, "v7", 0.75, 1e-8), fp32(b, "v11", 2.2, 2e-8, "3xtf32"),  # 3xTF32 at the ref's error counts
           fp32(c, "v11", 0.9, 5e-8, "3xtf32"),  # no FFMA rung ran, 3xTF32 less accurate: skipped
           fp32(d, "v9", 0.6, 1e-8), fp32(d, "v9", 0.5, 1e-8, paired={"ratio": 0.5}),  # paired stands for v9
           fp32(d, "v12", 1.4, 1e-8, "3xtf32"),  # ... and a faster rung still wins over it
           fp32(e, "v9", 0.4, 1e-8), fp32(e, "v11", 1.9, 1e-8, "3xtf32")]  # no reference error: FFMA only
    found = suite_report.summary(ms, "sgemm")
    accurate = found[("fp32", "CUDA (ieee, or 3xtf32 where error ≤ ref)")]
    assert accurate["ratios"] == {"1×4096×4096": 0.3, "4096×4096×4096": 2.2, "8×4096×4096": 1.4,
                                  "2×4096×4096": 0.4}
    assert list(accurate["skipped"]) == ["16×4096×4096"] and "gate error" in accurate["skipped"]["16×4096×4096"]
    assert found[("fp32", "CUDA (3xtf32)")]["ratios"]["1×4096×4096"] == 0.8  # the emulation's own series is kept
    assert not any("where error" in series for _, series in suite_report.summary(
        [m for m in ms if m.get("math") != "3xtf32"], "sgemm"))  # without an emulation, no such series
    ms = [m for m in ms if m["rung"] != "v12"]
    assert suite_report.summary(ms, "sgemm")[("fp32", "CUDA (ieee, or 3xtf32 where error ≤ ref)")]["ratios"][
        "8×4096×4096"] == 0.5  # v9's paired record, not its faster unpaired one


def test_a_suite_runs_page_is_titled_by_its_file_ops_and_suite():
    doc = results.load(DATA)
    doc["environment"]["suites"] = ["odd"]
    doc["measurements"] += [{**m, "shape": {**m["shape"], "M": 101}} for m in doc["measurements"]]  # two shapes
    text = report.render(doc, Path("hgemm-odd.md"), draw=False)
    assert text.splitlines()[0] == f"# hgemm-odd: sgemm on {doc['environment']['gpu']['name']}, suite odd"
    assert "### sgemm: the suite" in text



def test_the_memory_bound_suites_reach_the_rows_the_issue_names_within_the_element_bound():
    vocab = suites.suite("vocab").shapes["softmax"]
    assert {"M": 1024, "N": 262144} in vocab and {"M": 8192, "N": 50257} in vocab
    attention = suites.suite("attention").shapes["softmax"]
    assert {"M": 32, "N": 131072} in attention  # a few dozen rows of 2^17
    aspect = suites.suite("gemv-aspect").shapes["sgemv"]
    assert {"M": 1, "N": 2**20} in aspect and {"M": 2**22, "N": 16} in aspect
    for name in ("vocab", "attention", "gemv-aspect"):
        assert all(math.prod(s.values()) <= suites.ELEMENT_BOUND for op in suites.suite(name).shapes.values()
                   for s in op)


def test_a_memory_bound_suite_is_judged_by_its_share_of_the_copy_ceiling_and_its_twin_against_cuda(tmp_path):
    # softmax: shapes of 64 MiB or more need 80 % of the size-matched copy ceiling and 1× the reference; long rows
    # over a few dozen rows and vocabulary rows over a thousand need 85 % (FP32, BF16); the best Triton twin per
    # shape ÷ the best CUDA rung, geometric mean ≥ 0.9×. Misses are named, and cited with profiles or "not yet".
    def rec(rows, n, backend, x_ref, share, precision="fp32"):
        size = 4 if precision == "fp32" else 2
        return {"op": "softmax", "implementation": f"softmax/v6/{backend}", "backend": backend, "rung": "v6",
                "rung_index": 6, "shape": {"M": rows, "N": n}, "precision": precision, "dtype": "float32",
                "mode": "cold", "autotune": "off", "status": "ok", "reason": "", "x_ref": x_ref, "math": "ieee",
                "pct_ceiling": share, "work": {"bytes": 2 * rows * n * size, "bound": "memory"}}

    ms = [rec(8192, 32000, "cuda", 2.0, 90.0),    # 2 GB, vocabulary rows: both goals met
          rec(1024, 50257, "cuda", 1.5, 82.0),    # 412 MB: 80 % met, the rows' 85 % missed
          rec(32, 131072, "cuda", 1.2, 70.0),     # 34 MB, long rows: only the rows' goal, missed
          rec(4096, 4096, "cuda", 0.9, 95.0),     # 134 MB at 0.9× the reference: the large goal missed
          rec(8, 1024, "cuda", 1.3, 10.0),        # small, short: judged by neither
          rec(8192, 32000, "triton", 1.8, 81.0), rec(1024, 50257, "triton", 1.5, 82.0),
          rec(32, 131072, "triton", 0.6, 35.0)]
    text = "\n".join(suite_report.lines(ms, "softmax", None, tmp_path / "suites"))
    assert ("- CUDA fp32, 3 shapes of 64 MiB or more: ≥ 80 % of the copy ceiling and ≥ 1× the reference: missed at 1: "
            "4096×4096 95.0 %, 0.900× (v6)") in text
    assert ("- CUDA fp32, 3 shapes of long or vocabulary-sized rows: ≥ 85 % of the copy ceiling: missed at 2: "
            "1024×50257 82.0 % (v6), 32×131072 70.0 % (v6)") in text
    mean = (0.9 * 1.0 * 0.5) ** (1 / 3)
    assert f"- Triton fp32: best twin ÷ best CUDA rung per shape, geometric mean {mean:.3f}× over 3 shapes (goal ≥ 0.9×: " \
           "missed)" in text
    assert "- not profiled yet: 1024×50257 fp32, 32×131072 fp32, 4096×4096 fp32" in text
    # a profile with ncu's DRAM byte counters says how many times the minimum traffic the kernel moved
    from test_profile import OUTPUT

    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "ncu-softmax-v6-cuda-32x131072.csv").write_text(OUTPUT)  # softmax's default: FP32
    text = "\n".join(suite_report.lines(ms, "softmax", None, tmp_path / "suites"))
    evidence = next(line for line in text.splitlines() if line.startswith("- 32×131072 fp32:"))
    inputs = 4 * 32 * 131072  # X read once (16.8 MB); Y written once, as many bytes
    read = 201326592 + 1048576  # both kernels of the launch
    assert evidence.endswith(f"; a launch's DRAM read 202.4 MB, {read / inputs:.2f}× its inputs' 16.8 MB, and written "
                             "67.6 MB (a floor: L2 writes back later) of its output's 16.8 MB")
    # a shape the op cannot take gets the bytes without the ratios; a profile without the counters, no bytes
    from study.report import goals

    launch = {"launch_dram_read_bytes": 2048.0, "launch_dram_write_bytes": 0.0}
    assert goals._traffic(launch, {"implementation": "softmax/v6/cuda", "shape": "32x0x9"}) == \
        "; a launch's DRAM read 2.0 kB and written 0 B"
    assert goals._traffic({"launch_dram_read_bytes": None, "launch_dram_write_bytes": 0.0},
                          {"implementation": "softmax/v6/cuda", "shape": "32x131072"}) == ""
    without = OUTPUT
    for metric in ("dram__bytes_read.sum", "dram__bytes_write.sum"):
        without = without.replace(f'"{metric}"', f'"{metric}_not_collected"')
    (tmp_path / "profiles" / "ncu-softmax-v6-cuda-32x131072.csv").write_text(without)
    text = "\n".join(suite_report.lines(ms, "softmax", None, tmp_path / "suites"))
    evidence = next(line for line in text.splitlines() if line.startswith("- 32×131072 fp32:"))
    assert evidence.endswith("occupancy achieved 23.8 %")
    # a record without a copy ceiling cannot meet the share goals: named as such, not as 0 %
    text = "\n".join(suite_report.lines([{**ms[0], "pct_ceiling": None}, *ms[1:]], "softmax", None, tmp_path / "s"))
    assert "missed at 3: 1024×50257 82.0 % (v6), 32×131072 70.0 % (v6), 8192×32000 no copy ceiling (v6)" in text
    # GEMV has no rows goal; a geometric mean that rounds to its goal is printed finely enough to tell
    lines, below = goals.memory_lines({("fp16", "CUDA"): {"64×64": {**rec(64, 64, "cuda", 1.0, 50.0), "x_ref": 1.0}},
                                       ("fp16", "Triton"): {"64×64": {**rec(64, 64, "triton", 0.8996, 50.0)}}},
                                      "sgemv")
    assert lines == ["- Triton fp16: best twin ÷ best CUDA rung per shape, geometric mean 0.8996× over 1 shape "
                     "(goal ≥ 0.9×: missed); lowest: 64×64 0.8996× (v6)"] and below == {("64×64", "fp16")}

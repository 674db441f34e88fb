"""Leading dimensions without a GPU: padded views, the plan of `study align`, a Triton twin and
the library baseline on padded operands (the interpreter), keys and reruns, the page."""

import json
from pathlib import Path

import pytest
import torch

from study import align, results
from study.__main__ import main
from study.compare import rerun_plan
from study.backends import backend
from study.measure import run_compare
from study.problem import pad_rows
from study.catalog import implementation, ladder
from study.plan import plan
from study.problem import check_output
from study.session import crashed_record

ENV = json.loads((Path(__file__).parent / "data" / "results_small.json").read_text())["environment"]


def test_a_padded_view_holds_the_values_with_nan_between_its_rows():
    t = torch.arange(12.0).reshape(3, 4)
    v = pad_rows(t, 3)
    assert v.stride() == (7, 1) and torch.equal(v, t) and not v.is_contiguous()
    assert torch.isnan(v.as_strided((3, 3), (7, 1), storage_offset=4)).all()  # the padding
    assert pad_rows(t, 0) is t
    batched = pad_rows(torch.ones(2, 3, 4), 1)
    assert batched.stride() == (15, 5, 1)


@pytest.mark.parametrize("name", ["sgemm/v4_double_buffer/triton", "sgemm/torch_matmul/cublas"])
def test_padded_operands_give_the_right_product_through_their_strides(name, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    impl = implementation(name)
    problem = ladder("sgemm").problem
    precision = problem.precision("fp32")
    shape = {"M": 33, "N": 20, "K": 17}
    tensors = problem.make_inputs(shape, precision, 5, "cpu")
    ref, scale = problem.reference(tensors, precision)
    padded = {k: pad_rows(t, 3) for k, t in tensors.items()}
    launch = backend(impl.backend).prepare(impl, problem, padded, shape, precision, pad=3)
    assert launch.out.stride() == (shape["N"] + 3, 1)
    verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision, launch.poison)
    assert verdict.ok, verdict.message


def test_align_plans_every_padding_of_one_rung_and_the_baselines():
    problem = ladder("sgemm").problem
    cases = align.padded(plan(["sgemm"], shapes={"sgemm": [align.shape(problem, 64)]}, rungs=["v4"]))
    assert len(cases) == 16 * 4 and sorted({c.pad for c in cases}) == list(range(16))
    assert {c.impl.name for c in cases} == {"sgemm/v4_double_buffer/cuda", "sgemm/v4_double_buffer/triton",
                                           "sgemm/torch_matmul/cublas", "sgemm/nvmath_matmul/cublaslt"}
    keys = [c.key for c in cases]
    assert len(set(keys)) == len(keys) and keys[-1].endswith("|pad=15") and "|pad" not in keys[0]
    with pytest.raises(ValueError, match="axes M, N, K"):
        align.shape(ladder("bgemm").problem, 64)


def _fake(case):
    record = crashed_record(case, "fake")
    ms = 1.0 + (0.1 if case.pad % 4 else 0.0)  # made up: a misaligned leading dimension costs 10 %
    record.update(status="ok", median_ms=ms, samples_ms=[ms, ms], reason="",
                  config={"ALIGNED": int(case.pad % 4 == 0)} if case.impl.backend == "cuda" else {})
    return record


def test_the_page_figure_csv_and_a_rerun_of_an_align_run(tmp_path):
    problem = ladder("sgemm").problem
    cases = align.padded(plan(["sgemm"], shapes={"sgemm": [align.shape(problem, 64)]}, rungs=["v4"],
                              backends=["cuda", "cublas"]), pads=range(6))
    env = {**ENV, "command": "python -m study align --base 64 --backend cuda --backend cublas"}
    path = tmp_path / "align-sgemm-64.json"
    doc = run_compare(cases, env, path, _fake, say=lambda _: None)
    assert align.is_align(doc)
    assert main(["report", str(path)]) == 0
    page = (tmp_path / "align-sgemm-64.md").read_text()
    assert "| leading dim" in page and "| 65 " in page and "(0.91) ·scalar" in page
    assert (tmp_path / "figures" / "align-sgemm-64.png").is_file()
    rows = (tmp_path / "align-sgemm-64.csv").read_text().splitlines()
    assert len(rows) == 1 + 12 and ",pad," in rows[0]
    again, _, _ = rerun_plan(results.load(path))
    assert sorted(c.key for c in again) == sorted(c.key for c in cases) and max(c.pad for c in again) == 5


def test_align_refuses_what_it_cannot_pad(capsys):
    assert main(["align", "--op", "sgemv"]) == 2
    assert "sgemv's kernels take no leading dimensions" in capsys.readouterr().err
    assert main(["align", "--base", "0"]) == 2
    assert "--base must be at least 1" in capsys.readouterr().err
    assert main(["align", "--mode", "cold", "--mode", "hot"]) == 2
    assert "one precision and one timing mode" in capsys.readouterr().err
    assert main(["align", "--op", "bgemm"]) == 2


def test_x_ref_and_report_tables_keep_paddings_apart(tmp_path):
    problem = ladder("sgemm").problem
    cases = align.padded(plan(["sgemm"], shapes={"sgemm": [align.shape(problem, 64)]}, rungs=["v4"],
                              backends=["cuda"]), pads=range(2))

    def timed(case):  # the reference takes 1 ms unpadded and 2 ms padded; the rung 2 ms and 4 ms
        record = _fake(case)
        ms = (1.0 if case.impl.rung is None else 2.0) * (2 if case.pad else 1)
        record.update(median_ms=ms, samples_ms=[ms, ms])
        return record

    doc = run_compare(cases, ENV, tmp_path / "c.json", timed, say=lambda _: None)
    assert {(m["pad"], m["backend"], m["x_ref"]) for m in doc["measurements"]} == {
        (0, "cublas", 1.0), (1, "cublas", 1.0), (0, "cuda", 0.5), (1, "cuda", 0.5)}
    from study import report

    text = report.render(doc, tmp_path / "c.md", draw=False)
    assert text.count("rows padded by 1") == 1 and text.count("### sgemm") == 2

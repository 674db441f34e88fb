"""study sweep without a GPU: ranges, the grid, the case count and its limit, resuming, and the
CSV, heatmaps and page made from made-up results."""

import csv
import json
from pathlib import Path

import pytest

from study import sweep
from study.__main__ import main
from study.measure import run_compare
from study.catalog import ladder
from study.plan import plan
from study.session import crashed_record

DATA = Path(__file__).parent / "data" / "results_small.json"


@pytest.mark.parametrize("spec,values", [
    ("4096", [4096]),
    ("64,100,4096", [64, 100, 4096]),
    ("64:1024:x2", [64, 128, 256, 512, 1024]),
    ("64:1000:x2", [64, 128, 256, 512]),
    ("256:1024:256", [256, 512, 768, 1024]),
    ("256:1024:+256", [256, 512, 768, 1024]),
    ("1:9:x3,5", [1, 3, 5, 9]),
    ("8,8,1:2:1", [1, 2, 8]),
])
def test_ranges_lists_and_steps(spec, values):
    assert sweep.parse_values(spec) == values


@pytest.mark.parametrize("spec,words", [
    ("", "empty item"), ("a", "neither a whole number"), ("1:2", "neither a whole number"),
    ("8:4:x2", "1 <= START <= STOP"), ("0:4:1", "1 <= START <= STOP"), ("1:8:x1", "above 1"),
    ("1:8:0", "at least 1"), ("1:8:y2", "not a step"), ("0", "at least 1"), ("-3", "at least 1"),
])
def test_malformed_ranges_say_what_is_wrong(spec, words):
    with pytest.raises(sweep.RangeError, match=words):
        sweep.parse_values(spec)


def test_the_grid_is_the_product_in_the_ops_axis_order():
    shapes = sweep.grid(("M", "N", "K"), {"K": "4096", "N": "1,2", "M": "8:16:x2"})
    assert shapes == [{"M": 8, "N": 1, "K": 4096}, {"M": 8, "N": 2, "K": 4096},
                      {"M": 16, "N": 1, "K": 4096}, {"M": 16, "N": 2, "K": 4096}]
    with pytest.raises(sweep.RangeError, match="no values for K"):
        sweep.grid(("M", "N", "K"), {"M": "1", "N": "1"})
    with pytest.raises(sweep.RangeError, match="batch is not an axis"):
        sweep.grid(("M", "N"), {"M": "1", "N": "1", "batch": "2"})


def test_the_count_is_said_first_and_a_large_sweep_needs_yes(capsys):
    args = ["sweep", "--op", "sgemm", "--m", "64:8192:x2", "--n", "256:8192:x2", "--k", "4096"]
    assert main(args) == 2
    err = capsys.readouterr().err
    per_shape = 2 * len(ladder("sgemm").rungs) + 2  # each rung's CUDA and Triton, cuBLAS, cuBLASLt
    assert f"48 shapes (8 M × 6 N × 1 K) → {48 * per_shape} cases" in err and "above the limit of 300" in err
    assert main([*args, "--limit", "5000"]) == 2  # under the limit now: refused only for the missing GPU
    assert "needs a CUDA GPU" in capsys.readouterr().err
    assert main(["sweep", "--op", "sgemv", "--m", "3", "--n", "5", "--k", "4"]) == 2
    assert "k is not an axis (the op's axes are M, N)" in capsys.readouterr().err
    assert main(["sweep", "--op", "sgemv", "--axis", "M=1,2", "--n", "5:9:2", "--dtype", "fp16"]) == 2
    gemv = (2 * len(ladder("sgemv").rungs) + 1) * 2  # each rung's CUDA and Triton, cuBLAS; cold and hot
    assert f"6 shapes (2 M × 3 N) → {6 * gemv} cases" in capsys.readouterr().err
    assert main(["sweep", "--op", "nope", "--m", "1"]) == 2
    assert "unknown op 'nope'" in capsys.readouterr().err


def _fake_measure(calls):
    def measure(case):
        calls.append(case.key)
        record = crashed_record(case, "fake")
        shape = case.shape
        ms = 1e-6 * shape["M"] * shape["N"] * shape["K"] / (3.0 if case.impl.backend == "cublas" else 2.0)
        record.update(status="ok", median_ms=ms, samples_ms=[ms, ms], reason="")
        return record
    return measure


def _sweep_cases():
    shapes = sweep.grid(("M", "N", "K"), {"M": "64:128:x2", "N": "32,96", "K": "16"})
    return plan(["sgemm"], shapes={"sgemm": shapes}, backends=["cuda"], rungs=["v1", "v2"])


def _env():
    return json.loads(DATA.read_text())["environment"]


def test_a_sweep_resumes_like_compare(tmp_path):
    path, calls = tmp_path / "sweep-sgemm.json", []
    measure = _fake_measure(calls)

    def stop_after_five(case):
        if len(calls) == 5:
            raise KeyboardInterrupt
        return measure(case)

    with pytest.raises(KeyboardInterrupt):
        run_compare(_sweep_cases(), _env(), path, stop_after_five, say=lambda _: None)
    again, said = [], []
    doc = run_compare(_sweep_cases(), _env(), path, _fake_measure(again), say=said.append)
    assert said[-1].startswith("resuming: 5 of 12") and len(again) == 7 and doc["complete"]


def test_csv_heatmaps_and_page_from_made_up_results(tmp_path):
    doc = run_compare(_sweep_cases(), _env(), tmp_path / "sweep-sgemm.json", _fake_measure([]), say=lambda _: None)
    doc["measurements"][3]["status"] = "wrong"
    doc["measurements"][3]["reason"] = "max error 1e-2 > 1e-5\nmore"
    csv_path, md_path = sweep.write_outputs(doc, tmp_path / "sweep-sgemm.json")
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 12 and list(rows[0])[:5] == ["op", "implementation", "M", "N", "K"]
    assert {r["backend"] for r in rows} == {"cuda", "cublas"}
    ok = [r for r in rows if r["status"] == "ok" and r["backend"] == "cuda"]
    assert all(float(r["x_ref"]) == pytest.approx(2 / 3) for r in ok)  # made up: cuda takes 3/2 of cuBLAS's time
    assert rows[3]["reason"] == "max error 1e-2 > 1e-5"  # one line per reason
    figures = sorted((tmp_path / "figures").glob("*.png"))
    assert [f.name for f in figures] == ["sweep-sgemm-fp32-cold-K16.png"]
    page = md_path.read_text()
    assert "12 measurements over 4 shapes: 11 ok, 1 wrong." in page
    assert "(figures/sweep-sgemm-fp32-cold-K16.png)" in page and "## Not measured" in page
    cells = sweep.best_cells(doc)
    (key, by_backend), = cells.items()
    assert key == ("fp32", "cold", (("K", 16),))
    assert set(by_backend) == {("cublas", "n/a"), ("cuda", "off")}
    assert len(by_backend[("cuda", "off")]) == 4  # the best rung at each (M, N), wrong ones left out


def test_eta_reads_hours_minutes_and_seconds():
    assert sweep.eta_text(59.6) == "1m00s" and sweep.eta_text(3725) == "1h02m" and sweep.eta_text(-1) == "?"


def test_report_and_merge_of_a_sweep_write_its_csv_and_page(tmp_path):
    env = {**_env(), "command": "python -m study sweep --op sgemm --m 64:128:x2 --n 32,96 --k 16"}
    assert sweep.is_sweep({"environment": env}) and not sweep.is_sweep({"environment": _env()})
    from study.shards import shard_cases

    paths = []
    for i in range(2):
        path = tmp_path / f"sweep-sgemm-shard-{i}-of-2.json"
        run_compare(shard_cases(_sweep_cases(), i, 2), env, path, _fake_measure([]), say=lambda _: None)
        paths.append(path)
    assert main(["report", str(paths[0])]) == 0
    assert (tmp_path / "sweep-sgemm-shard-0-of-2.csv").is_file()
    merged = tmp_path / "sweep-sgemm.json"
    assert main(["merge", *map(str, paths), "--out", str(merged)]) == 0
    assert len((tmp_path / "sweep-sgemm.csv").read_text().splitlines()) == 1 + 12
    assert "12 measurements over 4 shapes" in (tmp_path / "sweep-sgemm.md").read_text()


def test_huge_ranges_and_a_doubled_axis_are_refused_before_anything_is_built(capsys):
    with pytest.raises(sweep.RangeError, match="at most 10,000 an axis"):
        sweep.parse_values("1:100000000:1")
    with pytest.raises(sweep.RangeError, match="shapes; at most 100,000"):
        sweep.grid(("M", "N", "K"), {"M": "1:1000:1", "N": "1:1000:1", "K": "1"})
    assert main(["sweep", "--op", "sgemv", "--m", "4", "--axis", "M=8", "--n", "4"]) == 2
    assert "axis M is given twice" in capsys.readouterr().err
    assert main(["sweep", "--op", "sgemm", "--m", "64:8192:x2", "--n", "64:8192:x2", "--k", "4096",
                 "--shard", "0/2"]) == 2  # 64 shapes, 768 cases: its first shard alone is above 300
    assert "cases in this shard is above the limit of 300" in capsys.readouterr().err


def test_a_sweep_takes_a_suites_shapes_and_names_a_suite_without_the_op(capsys):
    from study.suites import suite

    listed = [dict(s) for s in suite("llama2-7b").shapes["hgemm"]]
    cases, line = sweep.cases("hgemm", {}, ["fp16"], ["cuda"], ["v8"], suites=["llama2-7b"])
    assert {tuple(c.shape.items()) for c in cases} == {tuple(s.items()) for s in listed}
    assert line.startswith(f"sweep hgemm: {len(listed)} shapes (suite llama2-7b) → ")
    # with axes: the grid's shapes, then the suite's that the grid lacks
    cases, line = sweep.cases("hgemm", {"M": "1", "N": "4096", "K": "4096,8192"}, ["fp16"], ["cuda"], ["v8"],
                              suites=["llama2-7b"])
    assert f"shapes (1 M × 1 N × 2 K + suite llama2-7b)" in line
    assert len({tuple(c.shape.items()) for c in cases}) == len(listed) + 1  # 1×4096×4096 is in the suite too
    with pytest.raises(sweep.UsageError, match="suite vocab has no shapes of hgemm; it covers softmax"):
        sweep.cases("hgemm", {}, suites=["vocab"])
    assert main(["sweep", "--op", "sgemv", "--suite", "gemv-aspect", "--dtype", "fp16", "--backend", "cuda",
                 "--rung", "v3"]) == 2
    err = capsys.readouterr().err
    count = len(suite("gemv-aspect").shapes["sgemv"])
    assert f"sweep sgemv: {count} shapes (suite gemv-aspect) → " in err and "needs a CUDA GPU" in err
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "--op", "sgemv", "--suite", "nope"])
    assert exit_.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_a_suite_sweeps_page_gives_the_suites_verdict_instead_of_heatmaps(tmp_path):
    env = {**_env(), "suites": ["odd"]}
    doc = run_compare(_sweep_cases(), env, tmp_path / "sweep-sgemm.json", _fake_measure([]), say=lambda _: None)
    csv_path, md_path = sweep.write_outputs(doc, tmp_path / "sweep-sgemm.json")
    assert len(list(csv.DictReader(csv_path.open()))) == 12
    figures = sorted(f.name for f in (tmp_path / "figures").glob("*.png"))
    assert figures == ["sweep-sgemm-sgemm-suite.png"]  # the sorted per-shape figure, no heatmap
    page = md_path.read_text()
    assert "The shapes of suite odd" in page and "### sgemm: the suite" in page and "heatmap" not in page
    row = next(line for line in page.splitlines() if line.startswith("| fp32") and "CUDA" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == ["fp32", "CUDA", "4", "0.667×", "0.667× at 64×32×16", "0"]

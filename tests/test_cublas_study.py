"""The cuBLAS study's page without a GPU: its steps' commands, what it measures again, and the
page written from made-up results (best per backend, wrong never best, sources named)."""

import json
from pathlib import Path

from study import cublas_study, results
from study.__main__ import main
from study.measure import run_compare
from study.backends import backend
from study.catalog import ladder
from study.plan import plan
from study.problem import is_out_of_scope
from study.session import crashed_record

ENV = json.loads((Path(__file__).parent / "data" / "results_small.json").read_text())["environment"]


def _fake(case):
    record = crashed_record(case, "fake")
    backend = case.impl.backend
    # made up: cuBLAS 1 ms, cuBLASLt 1.25 ms, the CUDA rungs 2 ms minus 0.1 ms per rung, Triton 1.6 ms
    ms = {"cublas": 1.0, "cublaslt": 1.25, "triton": 1.6}.get(backend) or 2.0 - 0.1 * (case.impl.rung_index or 0)
    record.update(status="ok", median_ms=ms, samples_ms=[ms, ms], reason="")
    return record


def _write(folder, name, cases, command, wrong=None):
    path = folder / f"{name}.json"
    doc = run_compare(cases, {**ENV, "command": command}, path, _fake, say=lambda _: None)
    if wrong:
        for m in doc["measurements"]:
            if m["implementation"] == wrong:
                m.update(status="wrong", reason="max error 1 > 1e-5")
        results.write(path, doc)
    return path


def _fake_run(ran: list, codes=lambda n: 0):
    """compare.run as the study calls it, recording each step's options instead of measuring."""
    def run(cases, options, finish=None):
        ran.append(options)
        return codes(len(ran)), None

    return run


def _cli_cases(argv):
    """The cases the command line plans for ``argv`` (what the step says it equals)."""
    from study import align, sweep
    from study.cli.parser import parser
    from study.select import cases

    args = parser("").parse_args(argv)
    if args.command == "align":
        return align.cases(args.op, args.base, args.rung, args.dtype, args.backend, args.autotune, args.mode)[0]
    if args.command == "sweep":
        given = [(a, v) for a, v in (("m", args.m), ("n", args.n), ("k", args.k)) if v is not None]
        specs = sweep.axis_specs(ladder(args.op).problem, given)
        return sweep.cases(args.op, specs, args.dtype, args.backend, args.rung, args.autotune, args.mode)[0]
    return cases(args.op, args.shape, args.dtype, args.backend, args.rung, args.autotune, args.mode)


def test_every_step_is_a_study_command_with_its_own_file(tmp_path):
    from study.cli.parser import parser

    names = [s.name for s in cublas_study.STEPS]
    assert len(set(names)) == len(names)
    for step in cublas_study.STEPS:
        argv = step.command(tmp_path)
        assert argv[0] in ("compare", "align", "sweep") and argv[-2:] == ["--name", step.name]
        parser("").parse_args(argv)  # a step the CLI would refuse fails here, not on the GPU
        # the flow the study calls plans exactly what its command line would
        assert [c.key for c in step.cases(lambda _: None)[0]] == [c.key for c in _cli_cases(list(step.argv))]


def test_the_half_precision_step_plans_the_tensor_core_rungs_and_the_libraries():
    step = next(s for s in cublas_study.STEPS if s.name == "seed-half")
    cases, _ = step.cases(lambda _: None)
    assert {c.precision.name for c in cases} == {"fp16", "bf16"} and {c.shape_text for c in cases} == \
        {"2048x2048x2048", "4096x4096x4096"}
    assert {c.impl.rung for c in cases if c.impl.rung} == {"v6_mma_sync", "v7_wgmma_tma", "v8_warp_specialized"}
    assert {c.impl.backend for c in cases if c.impl.rung is None} == {"cublas", "cublaslt"}


def test_complete_steps_are_not_measured_again_and_an_interrupt_stops_the_study(tmp_path, monkeypatch):
    first = cublas_study.STEPS[0]  # complete, a record of every rung: not measured again
    _write(tmp_path, first.name, plan(["sgemm"], shapes={"sgemm": [{"M": 64, "N": 64, "K": 64}]}),
           "python -m study compare --op sgemm")
    ran = []
    monkeypatch.setattr(cublas_study.compare, "run", _fake_run(ran, lambda n: 130 if n == 2 else 1))
    said = []
    assert cublas_study.run(tmp_path, say=said.append) == 130
    assert [options.name for options in ran] == [s.name for s in cublas_study.STEPS[1:3]]
    assert "not measured again" in said[0]


def test_the_page_shows_each_backends_best_and_never_a_wrong_one(tmp_path):
    folder = tmp_path / "cublas-study"
    folder.mkdir()
    cases = plan(["sgemm"], shapes={"sgemm": [{"M": 1024, "N": 1024, "K": 1024}]}, autotune="both")
    rungs = ladder("sgemm").rungs
    _write(folder, "seed-fp32", cases, "python -m study compare --op sgemm --autotune both",
           wrong=f"sgemm/{rungs[-1].key}/cuda")  # the fastest (made up), in both autotune modes
    gemv = plan(["sgemv"], shapes={"sgemv": [{"M": 1024, "N": 1024}]}, precisions={"sgemv": ["fp32"]})
    _write(tmp_path, "compare", gemv, "python -m study compare --autotune both")
    assert main(["cublas-study", "--page-only", "--out", str(folder)]) == 0
    page = (tmp_path / "cublas-study.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| 1024×1024×1024"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "2.1" and cells[3] == "1.7 (0.80×)" and cells[4] == "1.7 (0.80×)"  # 2.15 TFLOP in 1 ms
    runner_up = len(rungs) - 2  # made up: 2 ms − 0.1 ms per rung index
    # the cell's best (an emulated one is labelled, the best FFMA rung after it: the test below)
    best = cells[5].split(";")[0].removesuffix(" (3xTF32 emulation)")
    assert best.endswith(f" v{runner_up}") or best.endswith(f" v{runner_up} tuned")
    assert f"({1 / (2.0 - 0.1 * runner_up):.2f}×)" in cells[5]  # the last rung is faster but wrong: never best
    assert "2 measurement(s) wrong or crashed" in page and f"{rungs[-1].key}/cuda" in page
    assert "From [`compare.json`](compare.json)" in page and "| 1024×1024" in page  # GEMV from the comparison
    assert "Not measured yet (`python -m study align" in page


def test_an_emulated_best_is_labelled_and_set_beside_the_best_ffma_rung(tmp_path):
    """FP32 rows: when the fastest CUDA rung is 3xTF32 (tensor cores), the cell says so and names the
    fastest rung computing in FP32 itself, so that the FFMA ladder's figure is never the emulation's."""
    folder = tmp_path / "cublas-study"
    folder.mkdir()
    # The cases a run would measure: the fake measures whatever it is given, so those out of a rung's scope
    # (v13 is for M ≤ 64), which a run records as skipped, are left out here.
    shape = {"M": 1024, "N": 1024, "K": 1024}
    cases = [c for c in plan(["sgemm"], shapes={"sgemm": [shape]}, autotune="off")
             if not is_out_of_scope(backend(c.impl.backend).check(c.impl, ladder("sgemm").problem, shape, c.precision))]
    rungs = ladder("sgemm").rungs
    fastest = max(c.impl.rung_index for c in cases if c.impl.backend == "cuda")
    assert rungs[fastest].math.get("fp32") == "3xtf32"  # the made-up fastest rung is an emulation
    ffma = max(i for i, r in enumerate(rungs) if r.math.get("fp32", "ieee") == "ieee" and i < fastest)
    _write(folder, "seed-fp32", cases, "python -m study compare --op sgemm")
    assert main(["cublas-study", "--page-only", "--out", str(folder)]) == 0
    row = next(line for line in (tmp_path / "cublas-study.md").read_text().splitlines()
               if line.startswith("| 1024×1024×1024"))
    cuda = [c.strip() for c in row.strip("|").split("|")][5]
    assert cuda.startswith(f"{2.147 / (2.0 - 0.1 * fastest):.1f} (") and "(3xTF32 emulation); FFMA" in cuda
    assert cuda.endswith(f" v{ffma}")


def test_page_only_needs_the_folder(capsys, tmp_path):
    assert main(["cublas-study", "--page-only"]) == 2
    assert "--page-only needs --out" in capsys.readouterr().err
    assert main(["cublas-study", "--page-only", "--out", str(tmp_path)]) == 2
    assert "no results of the cuBLAS study" in capsys.readouterr().err


def test_cublaslts_two_choices_are_set_side_by_side_with_what_autotune_changed():
    def record(backend, autotune, ms, algorithm=None):
        config = {"algorithm": algorithm, "algorithms_considered": 8} if algorithm else {}
        return {"shape": {"M": 1024, "N": 1024, "K": 1024}, "precision": "tf32", "mode": "cold", "backend": backend,
                "autotune": autotune, "status": "ok", "rung": None, "reference": backend == "cublas",
                "work": {"bound": "compute"}, "gflops": 2 * 1024**3 / ms / 1e6, "x_ref": 1.0 / ms, "config": config}

    heuristic = {"algorithm_id": 43, "tile": "(256, 128)", "split_k": -1}
    tuned = {"algorithm_id": 43, "tile": "(128, 128)", "split_k": 1}
    doc = {"measurements": [record("cublas", "n/a", 1.0), record("cublaslt", "off", 1.0, heuristic),
                            record("cublaslt", "on", 1.25, tuned)]}
    header, (row,) = cublas_study.lt_table([doc])
    cells = dict(zip(header, row))
    assert cells["Lt autotuned"] == "1.7 (0.80×)" and cells["autotune changed"] == "tile, split_k"
    assert "tile (256, 128)" in row[4] and "tile (128, 128)" in row[6] and cells["considered"] == "8"
    doc["measurements"][2]["config"]["algorithm"] = heuristic
    assert dict(zip(header, cublas_study.lt_table([doc])[1][0]))["autotune changed"] == "nothing"


def test_each_step_runs_as_its_own_command_line_and_records_it(tmp_path, monkeypatch):
    # A step's results file records the command the step equals (and a sweep or align file is known
    # by it), with --gpus passed on; the flow is called as a function, this process's argv untouched.
    import sys

    seen = []
    monkeypatch.setattr(cublas_study.compare, "run", _fake_run(seen))
    before = list(sys.argv)
    assert cublas_study.run(tmp_path, say=lambda _: None, gpus=[0], gpus_text="all") == 0
    assert sys.argv == before
    for step, options in zip(cublas_study.STEPS, seen):
        assert options.argv == ["python", "-m", "study", *step.command(tmp_path), "--gpus", "all"]
        assert options.gpus == [0] and options.name == step.name and options.out == tmp_path


def test_a_comparison_without_the_gemv_shapes_leaves_that_table_not_measured(tmp_path):
    folder = tmp_path / "cublas-study"
    folder.mkdir()
    gemv = plan(["sgemv"], shapes={"sgemv": [{"M": 64, "N": 32}]}, precisions={"sgemv": ["fp32"]})
    _write(tmp_path, "compare", gemv, "python -m study compare")
    cases = plan(["sgemm"], shapes={"sgemm": [{"M": 64, "N": 64, "K": 64}]})
    _write(folder, "seed-tf32", cases, "python -m study compare --op sgemm")
    page = cublas_study.markdown(folder, tmp_path / "cublas-study.md")
    gemv_section = page.split("## GEMV")[1].split("##")[0]
    assert "Not measured yet" in gemv_section and "compare.json" not in gemv_section


def test_a_step_with_a_why_says_it_under_its_own_table_only(tmp_path):
    folder = tmp_path / "cublas-study"
    folder.mkdir()
    shape = {"sgemm": [{"M": 256, "N": 256, "K": 256}]}
    _write(folder, "seed-fp32", plan(["sgemm"], shapes=shape), "python -m study compare --op sgemm")
    _write(folder, "seed-tf32", plan(["sgemm"], shapes=shape, precisions={"sgemm": ["tf32"]}),
           "python -m study compare --op sgemm --dtype tf32")
    page = cublas_study.write_page(folder).read_text()
    why = next(s.why for s in cublas_study.STEPS if s.name == "seed-tf32")
    assert why and page.count(why) == 1
    tf32, half = page.index("## GEMM, TF32"), page.index("## GEMM, FP16 and BF16")
    assert tf32 < page.index(why) < half  # under the TF32 table, not the FP32 one


def test_a_step_file_measured_before_the_ladder_grew_says_which_rungs_it_lacks(tmp_path):
    folder = tmp_path / "cublas-study"
    folder.mkdir()
    shape = {"sgemm": [{"M": 256, "N": 256, "K": 256}]}
    rungs = [r.key for r in ladder("sgemm").rungs]
    _write(folder, "seed-fp32", plan(["sgemm"], shapes=shape, rungs=rungs[:3]), "python -m study compare --op sgemm")
    _write(folder, "seed-half", plan(["hgemm"], shapes={"hgemm": [{"M": 256, "N": 256, "K": 256}]},
                                     rungs=["v6", "v7", "v8"]), "python -m study compare --op hgemm")
    page = cublas_study.markdown(folder, tmp_path / "cublas-study.md")
    fp32 = page.split("## GEMM, FP32")[1].split("## ")[0]
    assert "Rungs this step measures that have no record here:** " + ", ".join(rungs[3:]) + ";" in fp32
    half = page.split("## GEMM, FP16 and BF16")[1].split("## ")[0]
    assert "no record here" not in half  # the step names v6-v8 only, and has them all


def test_a_complete_step_file_without_a_rung_the_step_measures_is_measured_again(tmp_path, monkeypatch):
    first = cublas_study.STEPS[0]
    rungs = [r.key for r in ladder("sgemm").rungs]
    _write(tmp_path, first.name, plan(["sgemm"], shapes={"sgemm": [{"M": 64, "N": 64, "K": 64}]}, rungs=rungs[:-1]),
           "python -m study compare --op sgemm")
    ran, said = [], []
    monkeypatch.setattr(cublas_study.compare, "run", _fake_run(ran, lambda n: 130))
    cublas_study.run(tmp_path, say=said.append)
    assert ran[0].name == first.name and f"no record of {rungs[-1]}: measured again" in said[0]

import subprocess
import sys

import pytest
import torch

from study.__main__ import main
from study.paths import ROOT


def test_compare_without_a_gpu_exits_2_and_points_to_report(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["compare"]) == 2
    err = capsys.readouterr().err
    assert "needs a CUDA GPU" in err and "study report" in err


@pytest.mark.parametrize("argv,message", [
    (["compare", "--op", "nosuchop"], "unknown op 'nosuchop'"),
    (["compare", "--rung", "v9_magic"], "unknown rung v9_magic"),
    (["compare", "--op", "sgemm", "--shape", "4096x4096"], "of the form MxNxK"),
    (["compare", "--shape", "64"], "fits none of the ops of this run: sgemm: shape '64' is not of the form MxNxK"),
    (["compare", "--shape", "sgemv:64x64x64"], "sgemv: shape '64x64x64' is not of the form MxN"),
    (["compare", "--op", "sgemm", "--shape", "sgemv:64x64"], "'sgemv' is not an op of this run (sgemm)"),
    (["compare", "--shape", "0x10x10"], "at least 1"),
    (["compare", "--dtype", "float8"], "unknown dtype 'float8'; known: fp32, tf32, fp16, bf16"),
    (["compare", "--op", "hgemm", "--dtype", "fp32"], "hgemm does not accept 'fp32'; hgemm accepts: fp16, bf16"),
    (["compare", "--op", "sgemv", "--op", "hgemm", "--dtype", "tf32"],
     "sgemv does not accept 'tf32'; sgemv accepts: fp32, fp16, bf16; hgemm does not accept"),
    (["compare", "--op", "sgemv", "--dtype", "tf32"], "sgemv does not accept 'tf32'; sgemv accepts: fp32, fp16, bf16"),
    (["compare", "--op", "sgemm", "--dtype", "bf16"], "sgemm does not accept 'bf16'; sgemm accepts: fp32, tf32"),
    (["compare", "--reps", "3"], "at least 20 timed repetitions"),
    (["compare", "--ci", "0"], "--ci is a percentage in (0, 100); got 0"),
    (["compare", "--trials", "0"], "at least one trial"),
    (["validate", "--kernel", "sgemm/v9_magic/cuda", "64x64x64"], "unknown implementation sgemm/v9_magic/cuda"),
    (["validate", "--kernel", "sgemm/v1_naive/cuda", "64x64"], "of the form MxNxK"),
])
def test_bad_arguments_get_a_clear_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_argparse_rejects_unknown_backend_and_autotune_modes(capsys):
    for argv in (["compare", "--backend", "opencl"], ["compare", "--autotune", "maybe"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2


def test_runs_from_the_repo_root_without_installing():
    proc = subprocess.run([sys.executable, "-m", "study", "compare", "--help"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "examples:" in proc.stdout and "--autotune" in proc.stdout


@pytest.mark.parametrize("argv,message", [
    (["compare", "--noise", "-1"], "--noise is a percentage in (0, 100); got -1"),
    (["compare", "--timeout", "0.01", "--min-time", "0.1"], "shorter than the minimum GPU time"),
    (["compare", "--min-samples", "2"], "at least 10 samples"),
    (["compare", "--reps", "0"], "at least 20"),
])
def test_impossible_timing_configurations_are_refused(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command", ["ceilings", "validate"])
def test_gpu_commands_exit_2_without_a_gpu(command, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main([command]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_shapes_go_to_the_ops_whose_form_they_fit(capsys):
    from study.cli.parser import parser
    from study.select import cases as select

    def _cases(args):
        return select(args.op, args.shape, args.dtype, args.backend, args.rung, args.autotune, args.mode,
                      say=lambda text: print(text, file=sys.stderr))

    def _parser():
        return parser("")

    cases = _cases(_parser().parse_args(["compare", "--shape", "64x32", "--shape", "sgemm:8x8x8"]))
    # a bare MxN fits both ops of that form
    assert {(c.impl.op, c.shape_text) for c in cases} == {("sgemv", "64x32"), ("softmax", "64x32"), ("sgemm", "8x8x8")}
    cases = _cases(_parser().parse_args(["compare", "--shape", "64x32", "--dtype", "fp16", "--mode", "hot"]))
    assert {c.impl.op for c in cases} == {"sgemv", "softmax"} and {c.precision.name for c in cases} == {"fp16"}
    assert {c.mode for c in cases} == {"hot"}
    assert "sgemm: no --shape of its form MxNxK was given; not run" in capsys.readouterr().err
    cases = _cases(_parser().parse_args(["compare", "--dtype", "fp16"]))  # the memory-bound ops and the half GEMMs
    assert {c.impl.op for c in cases} == {"sgemv", "softmax", "hgemm", "gemm_bias_relu", "bgemm"}
    assert {c.precision.name for c in cases} == {"fp16"}
    assert "sgemm: accepts none of --dtype fp16; not run" in capsys.readouterr().err
    cases = _cases(_parser().parse_args(["compare", "--dtype", "fp32", "--dtype", "bf16"]))
    assert {(c.impl.op, c.precision.name) for c in cases} == {("sgemm", "fp32"), ("sgemv", "fp32"), ("sgemv", "bf16"),
                                                              ("bgemm", "fp32"), ("bgemm", "bf16"), ("softmax", "fp32"),
                                                              ("softmax", "bf16"),
                                                              ("hgemm", "bf16"), ("gemm_bias_relu", "fp32"),
                                                              ("gemm_bias_relu", "bf16")}


def test_a_plugin_that_fails_to_import_is_named_and_exits_2(tmp_path):
    (tmp_path / "broken_op.py").write_text("raise RuntimeError('half-written op')\n")
    env = {**__import__("os").environ, "STUDY_PLUGINS": "broken_op", "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "study", "list"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "the plugin 'broken_op' (STUDY_PLUGINS) failed to import: RuntimeError: half-written op" in proc.stderr
    assert "Traceback" not in proc.stderr


SUBCOMMANDS = ("list", "compare", "sweep", "align", "ceilings", "validate", "diff", "merge", "rerun", "sanitize",
               "profile", "env", "cublas-study", "report", "index", "repeats")


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_explains_itself_with_examples(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "examples:" in out and f"python -m study {command}" in out


def test_a_results_file_goes_round_report_diff_and_merge_without_a_gpu(tmp_path, capsys):
    # Two shards of one run, made on the CPU by the compare flow's own measuring (a fake measure in
    # place of the GPU): merged, reported and diffed by the command line, as a user would.
    from study import results
    from study.measure import run_compare
    from study.plan import plan
    from study.session import crashed_record
    from study.shards import shard_cases

    env = results.load(ROOT / "tests" / "data" / "results_small.json")["environment"]
    env = {**env, "timer": {k: v for k, v in env["timer"].items() if k not in ("mode", "flush_l2")}}
    cases = plan(["sgemm", "sgemv"], shapes={"sgemm": [{"M": 8, "N": 8, "K": 8}], "sgemv": [{"M": 8, "N": 8}]})

    def measure(case):
        record = crashed_record(case, "")
        record.update(status="ok", median_ms=1.0, samples_ms=[1.0, 1.0, 1.01] * 10)
        return record

    shards = []
    for index in range(2):
        path = tmp_path / f"shard-{index}.json"
        run_compare(shard_cases(cases, index, 2), {**env, "shard": [index, 2]}, path, measure, say=lambda _: None)
        shards.append(path)
    merged = tmp_path / "merged.json"
    assert main(["merge", *map(str, shards), "--out", str(merged)]) == 0
    assert len(results.load(merged)["measurements"]) == len(cases) and (tmp_path / "merged.md").is_file()
    assert main(["report", str(merged), "--md", str(tmp_path / "again.md")]) == 0
    page = (tmp_path / "again.md").read_text()
    assert "## sgemm" in page and "## sgemv" in page and "Merged by `python -m study merge` from 2" in page
    assert main(["diff", str(merged), str(merged), "--md", str(tmp_path / "diff.md")]) == 0
    assert f"{len(cases)} same within noise" in (tmp_path / "diff.md").read_text()
    capsys.readouterr()
    assert main(["report", str(tmp_path / "nothing.json")]) == 2 and "error:" in capsys.readouterr().err

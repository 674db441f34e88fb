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
    (["compare", "--ci", "0"], "confidence target"),
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
    (["compare", "--noise", "-1"], "noise target"),
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
    from study.__main__ import _parser, _cases

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

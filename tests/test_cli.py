import subprocess
import sys

import pytest
import torch

from study.__main__ import main
from study.registry import ROOT


def test_compare_without_a_gpu_exits_2_and_points_to_report(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["compare"]) == 2
    err = capsys.readouterr().err
    assert "needs a CUDA GPU" in err and "study report" in err


@pytest.mark.parametrize("argv,message", [
    (["compare", "--op", "nosuchop"], "unknown op 'nosuchop'"),
    (["compare", "--rung", "v9_magic"], "unknown rung v9_magic"),
    (["compare", "--shape", "4096x4096"], "of the form MxNxK"),
    (["compare", "--shape", "0x10x10"], "at least 1"),
    (["compare", "--dtype", "float8"], "unknown dtype float8"),
    (["compare", "--reps", "3"], "at least 20 timed repetitions"),
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

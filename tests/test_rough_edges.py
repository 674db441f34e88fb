"""What a new user mistypes or feeds the command line gets one line that says what is wrong, and
exit 2: nothing is overwritten, nothing ends in a traceback."""

import json
import os
import subprocess
import sys

import pytest
import torch

from study.__main__ import main
from study.paths import ROOT

SMALL = ROOT / "tests" / "data" / "results_small.json"


def _error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_a_results_file_that_is_not_json_is_named(tmp_path, capsys):
    bad = tmp_path / "half.json"
    bad.write_text('{"schema": 3, "measurements": [')
    assert f"{bad}: not JSON (" in _error(["report", str(bad)], capsys)


def test_a_schema_written_as_a_string_is_told_apart_from_an_unknown_one(tmp_path, capsys):
    doc = json.loads(SMALL.read_text())
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**doc, "schema": str(doc["schema"])}))
    assert f"'schema' is '{doc['schema']}', a str; a results file's schema is a number" in _error(
        ["report", str(path)], capsys)


def test_a_record_missing_a_field_is_named_not_a_traceback(tmp_path, capsys):
    doc = json.loads(SMALL.read_text())
    del doc["measurements"][1]["shape"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    name = doc["measurements"][1]["implementation"]
    assert f"{path}: measurement 1 ({name}) lacks 'shape'" in _error(["report", str(path)], capsys)


def test_a_negative_size_reaches_the_ops_own_check(capsys):
    assert "every size must be at least 1; got M=-1" in _error(["compare", "--op", "sgemm", "--shape", "-1x4x4"],
                                                                 capsys)


@pytest.mark.parametrize("flag", ["--noise", "--ci"])
def test_noise_and_ci_are_percentages(flag, capsys):
    assert f"{flag} is a percentage in (0, 100); got 150" in _error(["compare", flag, "150"], capsys)


def test_a_misspelt_gpu_list_is_told_before_the_gpu_check(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    err = _error(["compare", "--op", "sgemv", "--gpus", "0,x"], capsys)
    assert "--gpus 0,x: a comma-separated list of GPU indices, or all" in err and "needs a CUDA GPU" not in err
    assert "each named once" in _error(["cublas-study", "--gpus", "1,1"], capsys)


def test_a_negative_diff_threshold_is_refused(capsys):
    assert "--threshold is how much slower" in _error(["diff", str(SMALL), str(SMALL), "--threshold", "-5"], capsys)


def test_merge_never_writes_over_one_of_its_inputs(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        path.write_text(SMALL.read_text())
    before = a.read_text()
    assert "is one of the files to merge" in _error(["merge", str(a), str(b), "--out", str(a)], capsys)
    assert a.read_text() == before


def test_a_merge_refusal_names_only_the_settings_that_differ(tmp_path, capsys):
    doc = json.loads(SMALL.read_text())
    other = json.loads(SMALL.read_text())
    other["environment"]["timer"] = {**other["environment"]["timer"], "noise": 0.01}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    b.write_text(json.dumps(other))
    err = _error(["merge", str(a), str(b), "--out", str(tmp_path / "m.json")], capsys)
    assert "timer settings {'noise': 0.01} where" in err and "'min_samples'" not in err


def test_the_top_level_help_lists_every_exit_code(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(f"\n  {code} " in out for code in (0, 1, 2, 130))


def test_list_shows_where_each_rung_lives(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "04_on_chip.cu" in out and "softmax.py::softmax_whole" in out and "in cuda_kernels/softmax/" in out


def test_a_plugin_whose_kernel_file_is_missing_is_one_line(tmp_path):
    (tmp_path / "lost_op.py").write_text(
        "from pathlib import Path\n"
        "from study.ops.sgemv import ROWS, SGEMV, torch_mv\n"
        "from study.registry import Baseline, Rung, register\n"
        "class Lost(SGEMV):\n    name = 'lost'\n"
        "register(Lost(), rungs=[Rung('v0_gone', 'x', 'y', cuda='00_gone.cu', launch=ROWS)],\n"
        "         baselines=[Baseline('torch_mv', 'torch.mv', 'cuBLAS', 'cublas', torch_mv, 'torch.mv', reference=True)],\n"
        f"         kernel_dir=Path({str(tmp_path)!r}))\n")
    env = {**os.environ, "STUDY_PLUGINS": "lost_op", "PYTHONPATH": str(tmp_path)}
    for command in (["list"], ["compare", "--op", "lost"]):
        proc = subprocess.run([sys.executable, "-m", "study", *command], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"lost rung v0_gone: its kernel {tmp_path / '00_gone.cu'} does not exist" in proc.stderr

"""The planted-defect op (tests/planted_op.py) registers soundly and its kernels compile; the GPU
tests (tests/test_gpu_sanitize.py) show compare catching the output defect and sanitize the rest."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from study.backends.cuda import nvcc_command
from study.paths import ROOT

TESTS = Path(__file__).parent
ENV = {**os.environ, "STUDY_PLUGINS": "planted_op", "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)]),
       "TRITON_INTERPRET": "1"}


def test_the_planted_op_registers_with_a_sound_registry():
    proc = subprocess.run([sys.executable, "-m", "study", "list"], cwd=ROOT, env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for rung in ("v0_wrong_row", "v1_read_past_end", "v2_uninitialized_read", "v3_race"):
        assert rung in proc.stdout


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH: the CUDA sources cannot be compiled here")
@pytest.mark.parametrize("path", sorted((TESTS / "kernels" / "planted").glob("*.cu")), ids=lambda p: p.name)
def test_the_planted_kernels_compile(path, tmp_path):
    from study import kernel_header

    header = kernel_header.read(path, "planted")
    cmd = nvcc_command(path, {**header.params, "STORAGE_FP32": 1}, "sm_90a", tmp_path / "x.cubin")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_cheating_op_registers_with_a_sound_registry():
    env = {**ENV, "STUDY_PLUGINS": "cheating_op"}
    proc = subprocess.run([sys.executable, "-m", "study", "list"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "lazy (baseline)" in proc.stdout and "side_stream (baseline)" in proc.stdout

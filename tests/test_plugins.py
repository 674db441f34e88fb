"""An op of a user's own, in a folder outside the repository, registered through STUDY_PLUGINS:
listed with absolute paths, its kernel files checked by the registry's integrity rules."""

import json
import os
import subprocess
import sys

from study.paths import ROOT

OP = '''
from pathlib import Path

import torch

from study.ops.sgemv import ROWS, SGEMV, thread_twin_launch, torch_mv
from study.registry import Baseline, Rung, register, twin
from triton_kernels import sgemv as tk


class Saxpyish(SGEMV):
    name = "mygemv"


LAUNCH = ROWS  # sgemv's launcher of a block of rows: this kernel takes sgemv v0's arguments


register(
    Saxpyish(),
    rungs=[Rung("v0_mine", "my own GEMV", "nothing yet", cuda="00_mine.cu", launch=LAUNCH,
                triton=twin(tk.sgemv_rows, tk.V0_THREAD_PER_ROW, tk.ROWS_SPACE, launch=thread_twin_launch))],
    baselines=[Baseline("torch_mv", "torch.mv", "cuBLAS", "cublas", torch_mv, "torch.mv", reference=True),
               Baseline("matmul", "torch.matmul", "cuBLAS", "cublas",
                        lambda t, out, p: (lambda: torch.matmul(t["A"], t["x"], out=out)), "torch.matmul")],
    kernel_dir=Path(__file__).parent / "my_kernels",
)
'''


def _plugin(tmp_path, kernel_text):
    (tmp_path / "my_kernels").mkdir()
    (tmp_path / "my_kernels" / "00_mine.cu").write_text(kernel_text)
    (tmp_path / "my_op.py").write_text(OP)
    env = {**os.environ, "STUDY_PLUGINS": "my_op", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
           "TRITON_INTERPRET": "1"}
    return lambda *args: subprocess.run([sys.executable, "-m", "study", *args], cwd=ROOT, env=env,
                                        capture_output=True, text=True)


KERNEL = (ROOT / "cuda_kernels" / "sgemv" / "00_thread_per_row.cu").read_text().replace(
    "sgemv_v0_thread_per_row(", "mygemv_v0_mine(")


def test_a_plugin_op_from_a_folder_outside_the_repository_is_listed_with_absolute_paths(tmp_path):
    study = _plugin(tmp_path, KERNEL)
    proc = study("list", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    mine = rows["mygemv/v0_mine/cuda"]
    assert mine["source"] == str((tmp_path / "my_kernels" / "00_mine.cu").resolve())
    assert rows["mygemv/v0_mine/triton"]["source"] == "triton_kernels/sgemv.py::sgemv_rows"  # inside: relative
    assert rows["mygemv/torch_mv/cublas"]["reference"] and not rows["mygemv/matmul/cublas"]["reference"]
    assert "sgemm/v0_naive_colmajor_b/cuda" in rows  # nothing else lost
    text = study("list")
    assert text.returncode == 0 and "mygemv" in text.stdout and "matmul (baseline)" in text.stdout


def test_a_plugin_kernel_that_breaks_the_rules_is_named_by_the_integrity_check(tmp_path):
    study = _plugin(tmp_path, KERNEL.replace("mygemv_v0_mine(", "something_else("))
    (tmp_path / "my_kernels" / "01_stray.cu").write_text("// config: THREADS=1\n")
    proc = study("list")
    assert proc.returncode == 2
    assert "00_mine.cu must define the kernel mygemv_v0_mine" in proc.stderr
    assert f"{(tmp_path / 'my_kernels' / '01_stray.cu').resolve()} is not registered by any rung" in proc.stderr


def test_a_plugin_cuda_rung_without_a_launcher_is_named_by_the_integrity_check(tmp_path):
    # A rung owns its launch: one registered without it could not run, and the registry says so.
    study = _plugin(tmp_path, KERNEL)
    (tmp_path / "my_op.py").write_text(OP.replace("LAUNCH = ROWS", "LAUNCH = None"))
    proc = study("list")
    assert proc.returncode == 2
    assert "op 'mygemv': CUDA rung 'v0_mine' declares no launcher (Rung(..., launch=...))" in proc.stderr

"""Every registered .cu compiles with nvcc for sm_80 and sm_90a, the way NVRTC compiles it
(same -D defines, common.cuh from the same folder); every autotune point too (sm_90a)."""

import shutil
import subprocess

import pytest

from study.backends.cuda import nvcc_command
from study.registry import implementations

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: the CUDA sources cannot be compiled here")
CUDA = [i for i in implementations() if i.backend == "cuda"]


def _compile(impl, config, arch, tmp_path):
    out = tmp_path / f"{impl.target.symbol}.cubin"
    cmd = nvcc_command(impl.target.path, config, arch, out)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    assert out.stat().st_size > 0


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("aligned", [0, 1])
@pytest.mark.parametrize("impl", CUDA, ids=lambda i: i.rung)
def test_default_config_compiles(impl, aligned, arch, tmp_path):
    _compile(impl, {**impl.params, "ALIGNED": aligned}, arch, tmp_path)


@pytest.mark.parametrize("impl", CUDA, ids=lambda i: i.rung)
def test_every_autotune_point_compiles(impl, tmp_path):
    for point in impl.space:
        _compile(impl, {**point, "ALIGNED": 1}, "sm_90a", tmp_path)


def test_a_broken_config_fails_loudly(tmp_path):
    impl = next(i for i in CUDA if i.rung.startswith("v3"))
    bad = {**impl.params, "THREADS": 64, "ALIGNED": 1}  # violates THREADS == (BM/TM)*(BN/TN)
    cmd = nvcc_command(impl.target.path, bad, "sm_90a", tmp_path / "x.cubin")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode != 0 and "THREADS must be" in proc.stderr


@pytest.mark.parametrize("name,config", [("ffma_loop", {"ITERS": 16384, "CHAINS": 8, "THREADS": 256}),
                                         ("empty", {"THREADS": 32}), ("delay", {"THREADS": 32})])
def test_ceiling_kernels_compile(name, config, tmp_path):
    from study.ceilings import FFMA, MICROBENCH

    if name == "ffma_loop":
        assert config == FFMA  # the test compiles what `study ceilings` launches
    cmd = nvcc_command(MICROBENCH / f"{name}.cu", config, "sm_90a", tmp_path / "x.cubin")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr

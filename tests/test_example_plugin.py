"""The plugin docs/extending.md walks through (examples/axpy_plugin): listed with its paths, sound by
the registry's integrity rules, its kernel compiled by nvcc, its twin right in Triton's interpreter,
and the test suite itself collecting and running with it loaded (tests take an op's shapes from the
registry, so a well-formed plugin is tested like a built-in op)."""

import json
import os
import subprocess
import sys

from study.paths import ROOT

PLUGIN = ROOT / "examples" / "axpy_plugin"
ENV = {**os.environ, "STUDY_PLUGINS": "axpy_op", "TRITON_INTERPRET": "1",
       "PYTHONPATH": os.pathsep.join([str(PLUGIN), str(ROOT), str(ROOT / "tests")])}


def _run(*args, timeout=900):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def test_the_example_plugin_is_listed_with_its_paths_and_is_sound():
    proc = _run("-m", "study", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["axpy/v0_grid_stride/cuda"]["source"] == "examples/axpy_plugin/kernels/00_grid_stride.cu"
    assert rows["axpy/v0_grid_stride/triton"]["source"] == "examples/axpy_plugin/axpy_triton.py::axpy_blocks"
    assert rows["axpy/torch_add/torch"]["reference"]
    proc = _run("-c", "from study import catalog; print(catalog.check_integrity())")
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_the_suite_runs_with_the_plugin_loaded():
    # the whole suite collects; the plugin's own cases run: its twin in the interpreter, its kernel by nvcc
    proc = _run("-m", "pytest", "-q", "-p", "no:cacheprovider", "--co", "tests")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = _run("-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-k", "axpy", "tests/test_triton_twins.py",
                "tests/test_nvcc.py", "tests/test_sanitize.py")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout

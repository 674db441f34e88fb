"""GPU (`pytest -m gpu`, needs compute-sanitizer): planted defects are found by the instrument
that can find them, and every registered CUDA rung is clean under memcheck and racecheck."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from study.paths import ROOT

def _no_tool() -> str | None:
    from study.sanitize import SanitizerMissing, find_tool

    try:
        find_tool()
        return None
    except SanitizerMissing as exc:
        return str(exc)


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_no_tool() is not None, reason=_no_tool() or "")]
TESTS = Path(__file__).parent


def _study(args, tmp_path, plugins=True):
    env = {**os.environ, "STUDY_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if plugins:
        env["STUDY_PLUGINS"] = "planted_op"
    return subprocess.run([sys.executable, "-m", "study", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=1800)


def test_compare_catches_the_output_defect_and_sanitize_the_others(tmp_path):
    proc = _study(["compare", "--op", "planted", "--backend", "cuda", "--reps", "20", "--out", str(tmp_path)], tmp_path)
    doc = json.loads((tmp_path / "compare.json").read_text())
    status = {m["rung"]: m["status"] for m in doc["measurements"] if m["backend"] == "cuda"}
    assert proc.returncode == 1 and status["v0_wrong_row"] == "wrong", proc.stderr[-2000:]
    assert {status[r] for r in ("v1_read_past_end", "v2_uninitialized_read", "v3_race")} == {"ok"}  # outputs right
    proc = _study(["sanitize", "--op", "planted", "--rung", "v1", "--rung", "v2", "--rung", "v3", "--out",
                   str(tmp_path)], tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    found = {(r["implementation"].split("/")[1], r["tool"]): r["status"]
             for r in json.loads((tmp_path / "sanitize.json").read_text())["results"]}
    planted = {("v1_read_past_end", "memcheck"), ("v2_uninitialized_read", "initcheck"), ("v3_race", "racecheck")}
    assert {key for key, status in found.items() if status == "hazards"} == planted  # each by its tool, only
    # and the report of the compare run now marks the rungs whose source was found unclean
    subprocess.run([sys.executable, "-m", "study", "report", str(tmp_path / "compare.json")], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "⚑sanitizer" in (tmp_path / "compare.md").read_text()


def test_every_registered_cuda_rung_is_clean_under_memcheck_and_racecheck(tmp_path):
    jobs = max(4, (os.cpu_count() or 8) // 2)  # each run is a process that mostly waits on the sanitizer
    proc = _study(["sanitize", "--tool", "memcheck", "--tool", "racecheck", "--jobs", str(jobs), "--out",
                   str(tmp_path)], tmp_path, plugins=False)
    rows = json.loads((tmp_path / "sanitize.json").read_text())["results"]
    unclean = [r for r in rows if r["status"] not in ("clean", "skipped")]
    assert proc.returncode == 0 and not unclean, [(r["implementation"], r["tool"], r["status"], r["first"])
                                                  for r in unclean]
    assert all(r.get("reason") for r in rows if r["status"] == "skipped")
    checked = {(r["implementation"], r["tool"]) for r in rows if r["status"] == "clean"}
    assert {r["implementation"] for r in rows} == {i for i, _ in checked}  # every rung checked somewhere

"""The time left a run prints: from the planned cases' priors (the median time of such a case in this
GPU's committed results), scaled by how the run compares with them and damped so that the first
cases cannot swing it; from the run's own pace where no prior is known."""

import json
import types

import pytest

from study import compare
from study.compare import PRIOR_DAMPING_S, Progress, priors


def _case(op, backend, autotune, n):
    impl = types.SimpleNamespace(op=op, backend=backend)
    return types.SimpleNamespace(impl=impl, autotune=autotune, key=f"{op}|{backend}|{autotune}|{n}", label="x")


def test_priors_are_the_median_case_time_of_the_committed_results(tmp_path):
    (tmp_path / "runs").mkdir()
    walls = [1.0, 2.0, 9.0]
    (tmp_path / "runs" / "a.json").write_text(json.dumps({"measurements": [
        {"op": "hgemm", "backend": "cuda", "autotune": "on", "wall_s": w} for w in walls]
        + [{"op": "hgemm", "backend": "cuda", "autotune": "on", "wall_s": 50.0, "paired": {"ratio": 1}}]}))
    (tmp_path / "broken.json").write_text("{")
    assert priors(tmp_path) == {("hgemm", "cuda", "on"): 2.0}  # paired rounds are no such case
    assert priors(tmp_path / "nowhere") == {}


def test_the_first_estimate_comes_from_the_priors_and_the_run_refines_it(monkeypatch):
    monkeypatch.setattr(compare, "say", lambda text: None)
    cases = [_case("hgemm", "cuda", "on", n) for n in range(10)] + [_case("sgemv", "cuda", "off", n) for n in range(10)]
    known = {("hgemm", "cuda", "on"): 3.0, ("sgemv", "cuda", "off"): 1.0}
    progress = Progress(cases, known)
    progress(1, 20, cases[0], {"status": "skipped", "reason": ""})
    # one hgemm case done: 19 left at their priors' mean (9·3 + 10·1) / 19, at the run's pace so far
    mean = (9 * 3.0 + 10 * 1.0) / 19
    assert progress.left(1, 20, elapsed=3.0) == pytest.approx(mean * 19)  # as fast as its prior
    slower = progress.left(1, 20, elapsed=30.0)  # ten times slower than its prior: damped
    assert slower == pytest.approx((30.0 + PRIOR_DAMPING_S) / (3.0 + PRIOR_DAMPING_S) * mean * 19)
    assert mean * 19 < slower < 10 * mean * 19


def test_without_priors_the_run_s_own_pace_is_the_estimate(monkeypatch):
    monkeypatch.setattr(compare, "say", lambda text: None)
    cases = [_case("softmax", "cuda", "off", n) for n in range(4)]
    progress = Progress(cases, {})
    progress(3, 4, cases[2], {"status": "skipped", "reason": ""})  # two resumed before this one
    assert progress.left(3, 4, elapsed=5.0) == pytest.approx(5.0)

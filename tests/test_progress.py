"""The time left a run prints: from the planned cases' priors (the median time of such a case in this
GPU's committed results, at its shape where one was measured there) and those of the paired cases the run
will add, scaled by how the run compares with them and damped so that the first cases cannot swing it;
from the run's own pace where no prior is known."""

import json
import types

import pytest

from study import compare
from study.compare import PRIOR_DAMPING_S, Progress, priors


def _case(op, backend, autotune, n, paired=False):
    impl = types.SimpleNamespace(op=op, backend=backend)
    return types.SimpleNamespace(impl=impl, autotune=autotune, key=f"{op}|{backend}|{autotune}|{n}|{paired}",
                                 label="x", paired=paired, shape_text=f"{n}x{n}", precision=types.SimpleNamespace(
                                     name="fp32"))


def test_priors_are_the_median_case_time_of_the_committed_results(tmp_path):
    (tmp_path / "runs").mkdir()
    walls = [(1.0, "64x64x64"), (2.0, "64x64x64"), (9.0, "8192x8192x8192")]
    (tmp_path / "runs" / "a.json").write_text(json.dumps({"measurements": [
        {"op": "hgemm", "backend": "cuda", "autotune": "on", "wall_s": w, "implementation": "hgemm/v8/cuda",
         "shape": dict(zip("MNK", map(int, s.split("x")))), "precision": "fp16", "mode": "cold"} for w, s in walls]
        + [{"op": "hgemm", "backend": "cuda", "autotune": "on", "wall_s": 50.0, "paired": {"ratio": 1}}]}))
    (tmp_path / "broken.json").write_text("{")
    assert priors(tmp_path) == {("hgemm", "cuda", "on"): 2.0,  # paired rounds are no such case
                                ("hgemm", "cuda", "on", "64x64x64", "fp16"): 1.5,
                                ("hgemm", "cuda", "on", "8192x8192x8192", "fp16"): 9.0,
                                ("paired", "hgemm", "cuda"): 50.0}
    assert priors(tmp_path / "nowhere") == {}
    known = priors(tmp_path)
    big = types.SimpleNamespace(impl=types.SimpleNamespace(op="hgemm", backend="cuda"), autotune="on", paired=False,
                                shape_text="8192x8192x8192", precision=types.SimpleNamespace(name="fp16"))
    assert compare.prior_of(big, known) == 9.0  # its shape's, not the op's median
    assert compare.prior_of(types.SimpleNamespace(**{**vars(big), "shape_text": "1x1x1"}), known) == 2.0
    assert compare.prior_of(types.SimpleNamespace(**{**vars(big), "paired": True}), known) == 50.0


def test_the_pairs_a_run_will_add_are_in_its_first_estimate(monkeypatch):
    monkeypatch.setattr(compare, "say", lambda text: None)
    cases = [_case("hgemm", "cuda", "off", n) for n in range(4)]
    pairs = [_case("hgemm", "cuda", "off", 0, paired=True)]
    known = {("hgemm", "cuda", "off"): 2.0, ("paired", "hgemm", "cuda"): 20.0}
    progress = Progress(cases, known, pairs)
    progress(1, 4, cases[0], {"status": "skipped", "reason": ""})
    assert progress.left(1, 4, elapsed=2.0) == pytest.approx(3 * 2.0 + 20.0)  # three planned, one pair to come
    for n in (2, 3, 4):
        progress(n, 4, cases[n - 1], {"status": "skipped", "reason": ""})
    assert progress.left(4, 4, elapsed=8.0) == pytest.approx(20.0)  # the plan measured: the pair is what is left
    progress(5, 5, pairs[0], {"status": "skipped", "reason": ""})  # the run added it, then measured it
    assert progress.left(5, 5, elapsed=28.0) == 0.0


def test_expected_pairs_are_one_a_series():
    from study.plan import best_pairs, expected_pairs
    from study.select import planned

    cases = planned(["sgemm"], {"sgemm": [{"M": 64, "N": 64, "K": 64}]}, None, ["cuda", "cublas"], None, "off",
                    ["cold"], False)
    heads = expected_pairs(cases)
    assert heads and all(c.paired and c.impl.rung for c in heads)
    records = [{"case": c.key, "status": "ok", "median_ms": 1.0 + i} for i, c in enumerate(cases)]
    from study.plan import series_of

    # the pairing adds one case a series, the same series as expected (its fastest rung, not the first)
    assert sorted(map(series_of, best_pairs(cases, records))) == sorted(map(series_of, heads))


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

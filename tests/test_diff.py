"""study diff without a GPU: the bootstrap interval on synthetic samples, pairing and verdicts,
environment differences, the exit code."""

import copy
import json
import random
from pathlib import Path

import pytest

from study import diff, results
from study.keys import CaseKey
from study.__main__ import main

DATA = Path(__file__).parent / "data" / "results_small.json"


def _samples(center, n=20, spread=0.005, seed=0):
    """n samples around ``center`` with a 0.5 % spread: what the noise rule stops at (20 samples)."""
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, spread)) for _ in range(n)]


def test_a_3_percent_shift_is_detected_at_the_default_sample_counts():
    for seed in range(10):
        ratio, lo, hi = diff.bootstrap_ratio(_samples(1.0, seed=seed), _samples(1.03, seed=100 + seed), seed=seed)
        assert lo > 1.0 and ratio == pytest.approx(1.03, abs=0.01)
        _, lo, hi = diff.bootstrap_ratio(_samples(1.0, seed=seed), _samples(0.97, seed=100 + seed), seed=seed)
        assert hi < 1.0


def test_identical_distributions_are_called_the_same():
    same = 0
    for seed in range(40):
        a = {"status": "ok", "samples_ms": _samples(1.0, seed=seed), "median_ms": 1.0}
        b = {"status": "ok", "samples_ms": _samples(1.0, seed=1000 + seed), "median_ms": 1.0}
        same += diff.compare_pair(("k",), a, b).verdict == "same within noise"
    assert same >= 36  # a 95 % interval: about 2 in 40 may exclude 1 by chance


def test_a_shift_inside_the_runs_spread_is_the_same_one_beyond_it_is_not():
    a = {"status": "ok", "samples_ms": _samples(1.0, n=20000, spread=0.01, seed=1)}
    small = {"status": "ok", "samples_ms": _samples(1.004, n=20000, spread=0.01, seed=2)}
    large = {"status": "ok", "samples_ms": _samples(1.03, n=20000, spread=0.01, seed=3)}
    pair = diff.compare_pair(("k",), a, small)
    assert pair.lo > 1 and pair.verdict == "same within noise"  # the interval alone would say slower
    assert diff.compare_pair(("k",), a, large).verdict == "slower"
    assert diff.compare_pair(("k",), large, a).verdict == "faster"
    noisy = {"status": "ok", "samples_ms": _samples(1.0, n=20000, spread=0.10, seed=4)}
    slow = {"status": "ok", "samples_ms": _samples(1.08, n=20000, spread=0.10, seed=5)}
    pair = diff.compare_pair(("k",), noisy, slow, threshold=0.05)
    assert pair.lo > 1.05 and pair.verdict == "slower" and diff.regressions([pair], 0.05) == [pair]


def test_a_changed_setting_is_named_alone():
    a, b = _doc(), _doc()
    b["environment"]["timer"] = {**a["environment"]["timer"], "flush": "read"}
    (label, old, new), = diff.environment_differences(a, b)
    assert label == "timer settings" and old == {"flush": "(absent)"} and new == {"flush": "read"}


def _doc():
    doc = results.load(DATA)
    for m in doc["measurements"]:
        if m["status"] == "ok":
            m["samples_ms"] = _samples(m["median_ms"], n=30, seed=len(m["implementation"]))
    return doc


def test_pairs_verdicts_and_environment_differences(tmp_path):
    a, b = _doc(), copy.deepcopy(_doc())
    by = {(m["implementation"], m["autotune"]): m for m in b["measurements"]}
    slow = by[("sgemm/v0_naive_colmajor_b/cuda", "off")]
    slow["samples_ms"] = [x * 1.2 for x in slow["samples_ms"]]
    crashed = by[("sgemm/v0_naive_colmajor_b/triton", "off")]
    crashed.update(status="crashed", samples_ms=[], median_ms=None)
    b["measurements"] = [m for m in b["measurements"] if m["implementation"] != "sgemm/v1_naive/triton"]
    extra = copy.deepcopy(by[("sgemm/torch_matmul/cublas", "n/a")])
    extra["shape"] = {"M": 1, "N": 2, "K": 3}
    b["measurements"].append(extra)
    b["environment"]["gpu"]["driver"] = "1000.0"
    pairs = {p.key[:2] + p.key[3:4]: p for p in diff.pair_runs(a, b)}
    assert pairs[("sgemm/v0_naive_colmajor_b/cuda", "100x200x300", "off")].verdict == "slower"
    assert pairs[("sgemm/v0_naive_colmajor_b/triton", "100x200x300", "off")].verdict == "status changed"
    assert pairs[("sgemm/v1_naive/triton", "100x200x300", "off")].verdict == "only in A"
    assert pairs[("sgemm/torch_matmul/cublas", "1x2x3", "n/a")].verdict == "only in B"
    assert pairs[("sgemm/torch_matmul/cublas", "100x200x300", "n/a")].verdict == "same within noise"
    assert diff.environment_differences(a, b)[0] == ("driver", "999.1", "1000.0")
    text = diff.markdown("a.json", "b.json", a, b, list(pairs.values()), 0.05)
    assert text.index("Environment differences") < text.index("## Pairs") and "`999.1` → `1000.0`" in text
    assert "**1 slower by more than 5 %** (exit 1)" in text


def test_the_command_exits_1_only_for_a_slowdown_beyond_the_threshold(tmp_path, capsys):
    a, b = _doc(), _doc()
    m = next(m for m in b["measurements"] if m["implementation"] == "sgemm/v0_naive_colmajor_b/cuda")
    m["samples_ms"] = [x * 1.04 for x in m["samples_ms"]]
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    results.write(pa, {**a, "schema": results.SCHEMA})
    results.write(pb, {**b, "schema": results.SCHEMA})
    assert main(["diff", str(pa), str(pb), "--md", str(tmp_path / "d.md")]) == 0  # 4 % < the 5 % threshold
    assert main(["diff", str(pa), str(pb), "--threshold", "2"]) == 1
    out = capsys.readouterr().out
    assert "slower" in out and "1 slower by more than 2 %" in out
    assert "## Pairs" in (tmp_path / "d.md").read_text()


def test_files_with_nothing_in_common_say_so(tmp_path, capsys):
    a, b = _doc(), _doc()
    for m in b["measurements"]:
        m["op"], m["implementation"] = "sgemv", m["implementation"].replace("sgemm", "sgemv")
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    results.write(pa, {**a, "schema": results.SCHEMA})
    results.write(pb, {**b, "schema": results.SCHEMA})
    assert main(["diff", str(pa), str(pb)]) == 2  # a CI diff of the wrong files must not pass
    assert "nothing to pair: " in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": 99, "environment": {}, "measurements": []}))
    assert main(["diff", str(pa), str(bad)]) == 2


def test_pairs_are_grouped_by_the_gpus_they_ran_on():
    # B's cases ran on two GPUs, one of which runs everything 2 % slower: the by-GPU table shows
    # that group's shift whole, and the other group the same.
    a, b = _doc(), _doc()
    timed = [m for m in b["measurements"] if m["status"] == "ok"]
    for m in a["measurements"]:
        m["gpu"] = {"index": 0, "uuid": "GPU-a"}
    for i, m in enumerate(b["measurements"]):
        m["gpu"] = {"index": i % 2, "uuid": f"GPU-b{i % 2}"}
        if i % 2:
            m["samples_ms"] = [x * 1.02 for x in m["samples_ms"]]
    rows = {(r[0], r[1]): r for r in diff.by_gpu(diff.pair_runs(a, b))}
    assert set(rows) == {("GPU-a", "GPU-b0"), ("GPU-a", "GPU-b1")}
    assert sum(int(r[2]) for r in rows.values()) == len(timed)
    assert float(rows[("GPU-a", "GPU-b1")][4]) == pytest.approx(1.02, abs=0.003)
    assert rows[("GPU-a", "GPU-b1")][3].startswith("0 ")
    assert float(rows[("GPU-a", "GPU-b0")][4]) == pytest.approx(1.0, abs=0.003)
    assert "## By GPU" in diff.markdown("a", "b", a, b, diff.pair_runs(a, b), 0.05)


def test_a_declared_floor_calls_small_shifts_the_same_and_never_excuses_a_regression(tmp_path, capsys):
    a, b = _doc(), _doc()
    ok = [m for m in b["measurements"] if m["status"] == "ok"]
    ok[0]["samples_ms"] = [x * 1.012 for x in ok[0]["samples_ms"]]  # 1.2 %: beyond the runs' 0.5 % spread
    ok[1]["samples_ms"] = [x * 1.08 for x in ok[1]["samples_ms"]]   # 8 %: beyond the 5 % threshold
    verdicts = lambda floor: {p.key: p.verdict for p in diff.pair_runs(a, b, floor=floor)}  # noqa: E731
    strict, loose = verdicts(0.0), verdicts(0.02)
    first, second = CaseKey.of_record(ok[0]), CaseKey.of_record(ok[1])
    assert strict[first] == "slower" and loose[first] == "same within noise"
    assert strict[second] == loose[second] == "slower" == verdicts(0.5)[second]  # the threshold still bounds it
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    results.write(pa, {**a, "schema": results.SCHEMA})
    results.write(pb, {**b, "schema": results.SCHEMA})
    assert main(["diff", str(pa), str(pb), "--floor", "2", "--md", str(tmp_path / "d.md")]) == 1  # the 8 % stays
    assert "run-to-run floor of 2 %" in (tmp_path / "d.md").read_text()
    assert main(["diff", str(pa), str(pb), "--floor", "-1"]) == 2
    assert "--floor must be at least 0" in capsys.readouterr().err

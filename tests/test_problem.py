import pytest
import torch

from study.registry import ladder
from study.runner import TimerSettings, plan

SGEMM = ladder("sgemm").problem


def _case(m, n, k, seed=1):
    t = SGEMM.make_inputs({"M": m, "N": n, "K": k}, "float32", seed, "cpu")
    ref, scale = SGEMM.reference(t)
    return t, ref, scale


def _round_to_tf32(x):
    bits = x.view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)  # 10 mantissa bits, round to nearest


def test_fp32_product_passes_and_records_errors():
    t, ref, scale = _case(64, 48, 300)
    v = SGEMM.verify(t["A"] @ t["B"], ref, scale, "float32")
    assert v.ok, v.message
    assert 0 < v.err < v.tolerance and v.max_abs > 0 and v.unwritten == 0


def test_tf32_operands_fail_the_fp32_gate():
    t, ref, scale = _case(64, 48, 300)
    out = _round_to_tf32(t["A"]) @ _round_to_tf32(t["B"])
    v = SGEMM.verify(out, ref, scale, "float32")
    assert not v.ok and "exceeds" in v.message


def test_unwritten_and_wrong_outputs_fail():
    t, ref, scale = _case(16, 16, 16)
    out = t["A"] @ t["B"]
    out[3, 4] = float("nan")
    v = SGEMM.verify(out, ref, scale, "float32")
    assert not v.ok and v.unwritten == 1 and "never written" in v.message
    out = t["A"] @ t["B"]
    out[0, 0] += 1e-3
    assert not SGEMM.verify(out, ref, scale, "float32").ok


def test_column_major_layout_keeps_values_and_changes_strides():
    t, _, _ = _case(5, 7, 3)
    b = SGEMM.with_layout(t, {"B": "col"})["B"]
    assert b.shape == (3, 7) and b.stride() == (1, 3)
    assert torch.equal(b, t["B"])


@pytest.mark.parametrize("text,message", [("4096x4096", "of the form"), ("0x4x4", "at least 1"),
                                          ("-3x4x4", "at least 1"), ("axbxc", "of the form")])
def test_bad_shapes_are_refused_with_a_reason(text, message):
    with pytest.raises(ValueError, match=message):
        SGEMM.parse_shape(text)


def test_unsupported_dtype_huge_and_oversized_shapes_are_skipped_with_reasons():
    assert "float32 only" in SGEMM.check({"M": 8, "N": 8, "K": 8}, "float16")
    assert "32-bit" in SGEMM.check({"M": 70000, "N": 70000, "K": 8}, "float32")
    reason = SGEMM.check_memory({"M": 65536, "N": 65536, "K": 4096}, "float32", free_bytes=10 * 2**30)
    assert reason and "GiB" in reason
    assert SGEMM.check_memory({"M": 64, "N": 64, "K": 64}, "float32", free_bytes=10 * 2**30) is None


def test_plan_counts_cases_and_always_includes_the_baseline():
    cases = plan(["sgemm"], autotune="both")
    per_shape = 5 * 2 * 2 + 1  # rungs x backends x autotune modes + cuBLAS once
    assert len(cases) == per_shape * len(SGEMM.default_shapes)
    only = plan(["sgemm"], backends=["cuda"], rungs=["v3"], shapes={"sgemm": [{"M": 8, "N": 8, "K": 8}]})
    assert [(c.impl.backend, c.impl.rung, c.autotune) for c in only] == [
        ("cuda", "v3_register_tile", "off"), ("cublas", None, "n/a")]
    with pytest.raises(KeyError, match="unknown rung"):
        plan(["sgemm"], rungs=["v9_magic"])


@pytest.mark.parametrize("kwargs,message", [
    (dict(reps=0), "at least 20"), (dict(reps=5), "at least 20"), (dict(noise=-0.01), "noise target"),
    (dict(noise=0), "noise target"), (dict(min_samples=3), "at least 10 samples"),
    (dict(timeout_s=0), "timeout > 0"), (dict(timeout_s=0.05, min_time_s=0.1), "shorter than the minimum GPU time"),
    (dict(mode="lukewarm"), "mode must be"), (dict(min_warmup=0), "warm-up"), (dict(warmup_ms=-1), "warm-up"),
    (dict(throttle_threshold=1.5), "throttle threshold"), (dict(graph_launches=0), "at least one launch"),
])
def test_impossible_timer_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TimerSettings(**kwargs)


def test_stop_rule_by_noise_time_count_and_timeout():
    from study.runner import stop_rule

    st = TimerSettings(min_samples=10, min_time_s=0.001, timeout_s=5, noise=0.01, max_samples=30)
    steady = [1.0] * 9
    assert stop_rule(st, steady, 0.1) is None  # too few samples
    assert stop_rule(st, steady + [1.0], 0.1) == "noise"
    noisy = [1.0, 2.0] * 5
    assert stop_rule(st, noisy, 0.1) is None  # 33 % relative stdev: keep sampling
    assert stop_rule(st, noisy, 6.0) == "timeout"
    assert stop_rule(st, noisy * 3, 0.1) == "max_samples"
    short = TimerSettings(min_samples=10, min_time_s=1.0, timeout_s=5)
    assert stop_rule(short, [1.0] * 10, 0.1) is None  # 10 ms of GPU time < 1 s
    fixed = TimerSettings(reps=20, timeout_s=5)
    assert stop_rule(fixed, noisy * 2, 0.1) == "reps" and stop_rule(fixed, noisy, 0.1) is None

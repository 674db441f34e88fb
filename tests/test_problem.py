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


@pytest.mark.parametrize("kwargs", [dict(reps=0), dict(reps=5), dict(min_warmup=0), dict(warmup_ms=-1)])
def test_impossible_timer_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        TimerSettings(**kwargs)

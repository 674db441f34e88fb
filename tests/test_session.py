"""Session.measure's control flow without a GPU: a fake backend and a fake timer drive each
outcome — skipped (with the reason), wrong (never timed), crashed (with the error), ok."""

import itertools
import types

import pytest
import torch

from study import session as session_module
from study import stats
from study import timer as timer_module
from study.backends import Launch
from study.catalog import implementation, ladder
from study.plan import Case
from study.session import Session
from study.timing import TimerSettings, power_mix

IMPL = implementation("sgemv/v1_warp_per_row/cuda")
PROBLEM = ladder("sgemv").problem
FP32 = PROBLEM.precision("fp32")
SHAPE = {"M": 8, "N": 16}


class FakeTimer:
    def __init__(self, settings, device, clocks=None):
        self.settings, self.calls = settings, []

    @classmethod
    def for_gpu(cls, settings, device, clocks=None):
        return cls(settings, device, clocks)

    def warm_up(self, fn, flush=True):
        self.calls.append(("warm_up", flush))
        return 3, 0.5

    def settle(self, fn, first, flush=False):
        self.calls.append(("settle",))
        return {"settled": True, "seconds": 0.2, "launches": 40, "sm_mhz": [1980.0, 1500.0, 1500.0, 1500.0]}

    def measure(self, fn, first, flush, per_call=1, mode="cold"):
        self.calls.append(("measure", mode))
        for _ in range(3):
            fn()  # the samples launch the kernel: a kernel that stops working does so here
        return {"samples": [0.5, 0.5, 0.6], "timing": {"mode": mode, "stop": "reps"}, "clocks": {"available": False}}

    reference_mhz = 1530.0  # interleaved, the reference ran 2 % above the 1500 MHz it settled at alone
    reference_watts = None  # interleaved, the reference's median draw (of a 700 W limit)

    def paired(self, fns, firsts, flush, per_calls=(1, 1), settle_each=False, stop_early=None):
        self.calls.append(("paired", len(fns), settle_each))
        self.stop_early = stop_early or getattr(self, "stop_early", None)  # the interleaved call's, kept
        if settle_each:  # each side settled before its batches: both back at the clock they hold alone
            return {"samples": [0.5, 0.5, 0.6], "reference_samples": [0.55, 0.55, 0.6], "ratios": [1.1, 1.09, 1.11],
                    "ratio": 1.1, "ci": [1.09, 1.11], "rounds": 4, "stop": "ci", "wall_s": 0.3,
                    "discarded_throttled": [0, 0], "settle_each": True, "settled_mhz": [[1500.0] * 4, [1500.0] * 4],
                    "clocks": {"available": True, "sm_mhz_median": 1500.0},
                    "reference_clocks": {"available": True, "sm_mhz_median": 1500.0}}
        return {"samples": [0.5, 0.5, 0.6], "reference_samples": [0.6, 0.6, 0.7], "ratios": [1.2, 1.18, 1.22],
                "ratio": 1.2, "ci": [1.18, 1.22], "rounds": 3, "stop": "ci", "wall_s": 0.1,
                "discarded_throttled": [0, 0], "settle_each": False,
                "clocks": {"available": True, "sm_mhz_median": 1500.0},
                "reference_clocks": {"available": True, "sm_mhz_median": self.reference_mhz,
                                     "power_w_median": self.reference_watts, "power_limit_w": 700.0}}


def _backend(check=None, wrong=False, fail=None, wrong_when=lambda tensors: False, works=None):
    """A backend whose launch writes the right answer (or a wrong one, always or for some inputs;
    or, with ``works``, only for its first that many launches), or raises."""
    def prepare(impl, problem, tensors, shape, precision, config=None, tune=None, pad=0):
        if fail:
            raise fail
        out = problem.make_output(shape, precision, "cpu")
        off = 1.0 if wrong or wrong_when(tensors) else 0.0
        answer = (tensors["A"].double() @ tensors["x"].double()).float() + off
        calls = [0]

        def fn():
            calls[0] += 1
            if works is None or calls[0] <= works:
                out.copy_(answer)

        return Launch(fn=fn, out=out, config={"fake": 1})

    return types.SimpleNamespace(check=lambda *a: check, prepare=prepare)


@pytest.fixture
def session(monkeypatch):
    monkeypatch.setattr(timer_module, "for_gpu", FakeTimer.for_gpu)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (2**34, 2**34), raising=False)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    s = Session(TimerSettings(reps=20), device=None, launch_overhead_ms=1.0)

    def inputs(problem, case):
        tensors = problem.make_inputs(case.shape, case.precision, 0, "cpu")
        return (tensors, *problem.reference(tensors, case.precision))

    monkeypatch.setattr(s, "_inputs", inputs)
    return s


def _measure(session, monkeypatch, fake, mode="cold", precision=FP32):
    monkeypatch.setattr(session_module, "backend", lambda name: fake)
    return session.measure(Case(IMPL, SHAPE, precision, "off", mode))


def test_a_skip_reason_is_recorded_and_nothing_runs(session, monkeypatch):
    record = _measure(session, monkeypatch, _backend(check="this rung implements fp32 only"))
    assert record["status"] == "skipped" and record["reason"] == "this rung implements fp32 only"
    assert session.timer.calls == [] and record["samples_ms"] == []


def test_a_wrong_output_is_recorded_with_its_error_and_never_timed(session, monkeypatch):
    record = _measure(session, monkeypatch, _backend(wrong=True))
    assert record["status"] == "wrong" and "exceeds the fp32 tolerance" in record["reason"]
    assert record["error"]["err"] > record["error"]["tolerance"] and session.timer.calls == []


def test_an_exception_is_recorded_as_crashed_with_its_message(session, monkeypatch):
    record = _measure(session, monkeypatch, _backend(fail=RuntimeError("launch failed: too many resources")))
    assert record["status"] == "crashed" and "RuntimeError: launch failed: too many resources" in record["reason"]
    assert "Traceback" in record["traceback"]


def test_a_correct_output_is_timed_in_the_cases_mode_and_summarised(session, monkeypatch):
    record = _measure(session, monkeypatch, _backend(), mode="hot", precision=PROBLEM.precision("fp16"))
    assert record["status"] == "ok" and record["median_ms"] == 0.5 and record["samples_ms"] == [0.5, 0.5, 0.6]
    assert session.timer.calls == [("warm_up", False), ("settle",), ("measure", "hot")]  # hot: no flush
    assert (record["precision"], record["dtype"], record["math"], record["mode"]) == ("fp16", "float16", "ieee", "hot")
    assert record["work"] == {"flops": 2 * 8 * 16, "bytes": 2 * (8 * 16 + 16 + 8), "bound": "memory"}
    assert record["launch_bound"] is True
    assert "gbps" not in record  # figures are derived from the record later, in one place (metrics)


def test_the_last_group_s_memory_is_handed_back_before_the_next_group_s_is_checked(session, monkeypatch):
    released = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: released.append(session._data))
    # the driver has room only once the last group's tensors and the allocator's cache are gone
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: ((2**34 if released else 0), 2**34), raising=False)
    session._key, session._data = ("another group",), ("its tensors",)
    record = _measure(session, monkeypatch, _backend())
    assert record["status"] == "ok" and released == [None] and session._data is None
    session._key = ("another group",)
    released.clear()
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (0, 2**34), raising=False)
    record = _measure(session, monkeypatch, _backend())  # what does not fit once released is still refused
    assert record["status"] == "skipped" and "GiB are free" in record["reason"] and released == [None]


def test_a_shape_the_problem_refuses_is_skipped_before_the_backend_is_asked(session, monkeypatch):
    monkeypatch.setattr(session_module, "backend", lambda name: pytest.fail("the backend must not be consulted"))
    record = session.measure(Case(IMPL, {"M": 70000, "N": 70000}, FP32, "off"))
    assert record["status"] == "skipped" and "32-bit" in record["reason"]


def _integers(tensors):
    return bool((tensors["x"] == tensors["x"].round()).all())


def test_a_correct_kernel_passes_every_trial_and_the_record_says_how_many(session, monkeypatch):
    record = _measure(session, monkeypatch, _backend())
    assert record["status"] == "ok" and record["trials"] == {"count": 4, "structured": True, "failed": None}


def test_a_kernel_wrong_only_on_structured_inputs_is_caught_before_timing(session, monkeypatch):
    record = _measure(session, monkeypatch, _backend(wrong_when=_integers))
    assert record["status"] == "wrong" and record["reason"].startswith("structured inputs (trial 4): error")
    assert record["trials"]["failed"]["inputs"] == "structured" and session.timer.calls == []


def test_the_first_failing_random_trial_is_recorded_with_its_seed(session, monkeypatch):
    first = PROBLEM.make_inputs(SHAPE, FP32, 0, "cpu")["x"]
    fake = _backend(wrong_when=lambda t: not _integers(t) and not bool((t["x"] == first).all()))
    record = _measure(session, monkeypatch, fake)
    assert record["status"] == "wrong" and record["reason"].startswith("random inputs (trial 2, seed 7919)")
    assert record["trials"]["failed"]["seed"] == 7919 and session.timer.calls == []


def test_structured_inputs_are_exact_integers_that_index_mistakes_change():
    for op, shape in (("sgemv", {"M": 37, "N": 70}), ("sgemm", {"M": 9, "N": 11, "K": 13})):
        problem = ladder(op).problem
        t = problem.structured_inputs(shape, problem.precisions[0], "cpu")
        assert all(bool((v == v.round()).all()) for v in t.values())
        ref, _ = problem.reference(t, problem.precisions[0])
        assert bool((ref == ref.round()).all()) and ref.abs().max() > 0
        first = next(iter(t))
        swapped = {**t, first: t[first].flip(0)}  # a reversed row index
        assert not torch.equal(problem.reference(swapped, problem.precisions[0])[0], ref)


@pytest.mark.parametrize("op,shape", [("sgemv", {"M": 64, "N": 1500}), ("sgemv", {"M": 16, "N": 4095}),
                                      ("sgemm", {"M": 32, "N": 32, "K": 30})])
def test_structured_inputs_do_not_cancel_out(op, shape):
    """Periodic patterns summed to zero over every 15 columns; a kernel writing zeros must fail."""
    problem = ladder(op).problem
    precision = problem.precisions[0]
    t = problem.structured_inputs(shape, precision, "cpu")
    ref, scale = problem.reference(t, precision)
    zeros = torch.zeros_like(ref, dtype=torch.float32)
    assert not problem.verify(zeros, ref, scale, precision).ok


def test_work_that_stops_once_the_gate_has_passed_is_caught_after_the_timing(session, monkeypatch):
    # Right at its first launches (the gate, the trials' fresh launches), then nothing: the samples time
    # no work, and the output checked again after them is still the poison.
    record = _measure(session, monkeypatch, _backend(works=2))
    assert record["status"] == "wrong" and record["reason"].startswith("the output changed after the gate: ")
    assert "never written" in record["reason"] and record["samples_ms"] == [0.5, 0.5, 0.6]


def test_a_figure_above_the_physical_peak_is_impossible_and_shown():
    from study.session import impossible

    h200 = types.SimpleNamespace(peak_flops=lambda math: {"ieee": 66.9e12, "bf16": 1070e12}.get(math),
                                 memory_peak_bytes=4.8e12)
    gemm = {"flops": 2 * 8192**3, "bytes": 3 * 2 * 8192**2, "bound": "compute"}
    assert impossible(gemm, 1.4, h200, "bf16", "cold") == ""  # 785 TFLOPS: below the BF16 peak
    assert "above the theoretical peak of bf16" in impossible(gemm, 0.5, h200, "bf16", "cold")  # 2,199 TFLOPS
    gemv = {"flops": 2 * 16384**2, "bytes": 2 * 16384**2, "bound": "memory"}
    assert impossible(gemv, 0.12, h200, "ieee", "cold") == ""  # 4.5 TB/s from HBM
    assert "memory's theoretical" in impossible(gemv, 0.05, h200, "ieee", "cold")  # 10.7 TB/s cold: impossible
    assert impossible(gemv, 0.05, h200, "ieee", "hot") == ""  # hot: served from the L2, as ⚑L2 says
    # a GEMV whose work ran on another stream, as seen on the H200: 157 TFLOPS and far past the memory's
    # bandwidth; a memory-bound op states its bytes, a compute-bound one its FLOP/s
    assert "memory's theoretical" in impossible(gemv, 0.0034, h200, "ieee", "cold")
    assert "peak of ieee" in impossible({**gemv, "bound": "compute"}, 0.0034, h200, "ieee", "cold")


def test_a_paired_case_records_its_rounds_ratio_and_interval(session, monkeypatch):
    monkeypatch.setattr(session_module, "backend", lambda name: _backend())
    record = session.measure(Case(IMPL, SHAPE, FP32, "off", "cold", paired=True))
    assert record["status"] == "ok" and [c for c in session.timer.calls if c[0] == "paired"] == [("paired", 2, False)]
    pairing = record["paired"]
    assert pairing["reference"] == "sgemv/torch_mv/cublas" and pairing["ratio"] == 1.2 and pairing["rounds"] == 3
    from study import metrics
    from study.report.labels import flags

    gaps = metrics.pair_gaps(record)  # derived from the clocks the record keeps, not stored beside them
    # what going first cost, derived from the rounds kept (A first 1.2 and 1.22, B first 1.18)
    assert gaps["order_effect"] == pytest.approx(1.18 / 1.21)
    assert pairing["ci"] == [1.18, 1.22] and gaps["clock_spread"] == pytest.approx(30 / 1530)
    assert record["samples_ms"] == [0.5, 0.5, 0.6] and pairing["reference_median_ms"] == 0.6
    assert power_mix((record["steady"], pairing["reference_steady"]),
                     (record["clocks"], pairing["reference_clocks"]))["alone_mhz"] == [1500.0, 1500.0]
    assert gaps["power_mix"] == pytest.approx(30 / 1500) and "interleaved" not in pairing
    assert not {"clocks", "power-mix", "re-settled"} & set(flags(record))

    [derived] = metrics.with_x_ref([record])
    assert derived["x_ref"] == 1.2 and derived["x_ref_ci"] == [1.18, 1.22] and derived["paired_rounds"] == 3


def test_a_pair_that_lends_itself_clock_headroom_is_timed_again_each_side_settled(session, monkeypatch):
    # as sgemm v11 beside cuBLAS's FP32 GEMM: interleaved, the reference ran 6 % above its own settled clock
    monkeypatch.setattr(session_module, "backend", lambda name: _backend())
    monkeypatch.setattr(FakeTimer, "reference_mhz", 1590.0)
    record = session.measure(Case(IMPL, SHAPE, FP32, "off", "cold", paired=True))
    assert [c for c in session.timer.calls if c[0] == "paired"] == [("paired", 2, False), ("paired", 2, True)]
    pairing = record["paired"]
    assert pairing["ratio"] == 1.1 and pairing["ci"] == [1.09, 1.11] and pairing["rounds"] == 4  # the headline
    from study.metrics import pair_gaps

    assert pairing["interleaved"]["ratio"] == 1.2 and pair_gaps(record)["interleaved_borrowed"] == pytest.approx(0.06)
    assert pairing["settle_each"] and pairing["settled_mhz"] == [[1500.0] * 4, [1500.0] * 4]
    from study import metrics
    from study.report.labels import flags

    assert metrics.pair_gaps(record)["power_mix"] == 0.0 and "re-settled" in flags(record)
    assert "power-mix" not in flags(record) and metrics.with_x_ref([record])[0]["x_ref"] == 1.1


def test_the_interleaved_rounds_end_once_they_show_headroom_lent(session, monkeypatch):
    # the session's early stop is the test that times the pair again, applied to the clocks so far
    monkeypatch.setattr(session_module, "backend", lambda name: _backend())
    session.measure(Case(IMPL, SHAPE, FP32, "off", "cold", paired=True))
    assert [c for c in session.timer.calls if c[0] == "paired"] == [("paired", 2, False)]
    lent = session.timer.stop_early
    settled_alone = 1500.0  # FakeTimer.settle's last readings, both sides
    assert lent({"sm_mhz_median": settled_alone}, {"sm_mhz_median": settled_alone * 1.05})  # 5 % above: lent
    assert not lent({"sm_mhz_median": settled_alone}, {"sm_mhz_median": settled_alone * 1.02})  # within the gap
    assert not lent({"sm_mhz_median": settled_alone * 0.96}, {"sm_mhz_median": None})  # below its own: drift


def test_the_timer_ends_the_rounds_when_asked_only_at_an_even_count_from_min_rounds(monkeypatch):
    # Timer.paired's loop with batches faked: noisy ratios (the interval never closes), A at 1950 MHz and
    # B at 1965; stop_early asked with both sides' clock summaries
    import random

    rng = random.Random(5)
    settings = TimerSettings(min_rounds=16, max_rounds=40)
    device = types.SimpleNamespace(max_sm_clock_mhz=1980.0)
    timer = timer_module.Timer(settings, device, None, instruments=None)

    def samples(fn, reps, flush, per_call):
        base = 1.0 if fn == "a" else 2.0
        return [base * (1 + 0.05 * rng.random()) for _ in range(reps)], (1950.0 if fn == "a" else 1965.0), 0, 600.0

    monkeypatch.setattr(timer, "samples", samples)
    asked = []

    def stop_early(clocks, reference_clocks):
        asked.append(len(asked))
        assert clocks["sm_mhz_median"] == 1950.0 and reference_clocks["sm_mhz_median"] == 1965.0
        return len(asked) == 2  # the second time it is asked

    got = timer.paired(("a", "b"), (1.0, 2.0), False, stop_early=stop_early)
    assert got["stop"] == "borrowed" and got["rounds"] == 18 and got["ratio"] is not None  # asked at 16, then 18
    got = timer.paired(("a", "b"), (1.0, 2.0), False, stop_early=lambda clocks, reference: False)
    assert got["stop"] == "max_rounds" and got["rounds"] == 40
    got = timer.paired(("a", "b"), (1.0, 2.0), False)
    assert got["stop"] == "max_rounds"


def test_a_pair_that_drifts_below_its_own_clock_is_not_timed_again(session, monkeypatch):
    # a side running below the clock it settled at (hgemm v8 beside cuBLAS: settled at 1530 MHz, 1470 in its
    # rounds) borrowed nothing; the borrowing test alone does not re-time it (no draw given here: at the cap the
    # cap rule does, test_a_pair_interleaved_at_the_power_cap_is_timed_again_each_side_settled)
    monkeypatch.setattr(session_module, "backend", lambda name: _backend())
    monkeypatch.setattr(FakeTimer, "reference_mhz", 1440.0)
    record = session.measure(Case(IMPL, SHAPE, FP32, "off", "cold", paired=True))
    assert [c for c in session.timer.calls if c[0] == "paired"] == [("paired", 2, False)]
    from study import metrics
    from study.report.labels import flags

    gaps = metrics.pair_gaps(record)
    assert gaps["power_mix"] == pytest.approx(0.04) and gaps["borrowed"] == 0.0
    assert record["paired"]["ratio"] == 1.2 and not {"power-mix", "re-settled"} & set(flags(record))


class _Readings:
    """NVML as settle() reads it: a steady SM clock and the power draws given, in turn."""

    available, power_limit_w = True, 700.0

    def __init__(self, watts):
        self.watts = itertools.cycle(watts)

    def sm_mhz(self):
        return 1980.0

    def power_w(self):
        return next(self.watts)


@pytest.mark.parametrize("watts, settles", [((150.0, 260.0), True),    # a short kernel's launch gaps, far from the cap
                                            ((690.0, 697.0), True),    # at the cap, steady
                                            ((560.0, 690.0), False)])  # ramping up to the cap
def test_settling_waits_for_the_power_state_only_near_the_cap(monkeypatch, watts, settles):
    from study.timing import TimerSettings

    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    timer = timer_module.Timer(TimerSettings(settle_max_s=0.4), None, _Readings(watts), None)
    steady = timer.settle(lambda: None, per_launch_ms=50.0)
    assert steady["settled"] is settles and steady["launches"] == len(steady["power_w"])
    assert (steady["seconds"] < 0.4) is settles


class _CutReadings(_Readings):
    """NVML at the cap's first cut, as hgemm v8 at 8192³ BF16 on the H200 read it (c71): the clock already cut, the
    draw (NVML's one-second average) still far below the cap; then the draw catching up."""

    def __init__(self, clocks, watts):
        super().__init__(watts)
        self.clocks = itertools.chain(clocks, itertools.repeat(clocks[-1]))

    def sm_mhz(self):
        return next(self.clocks)


@pytest.mark.parametrize("watts, settles", [((414.8, 414.8, 415.2, 415.2, 423.1), False),  # the draw behind the cut
                                            ((414.8, 415.2, 560.0, 688.0, 691.0, 692.0), True)])  # then at the cap
def test_a_clock_cut_far_from_the_cap_is_not_taken_as_settled(monkeypatch, watts, settles):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    readings = _CutReadings([1980.0, 1980.0, 1530.0, 1530.0, 1515.0], itertools.chain(watts, itertools.repeat(watts[-1])))
    timer = timer_module.Timer(TimerSettings(settle_max_s=0.5), None, readings, None)
    steady = timer.settle(lambda: None, per_launch_ms=50.0)
    assert steady["settled"] is settles and (steady["seconds"] < 0.5) is settles
    if settles:
        assert steady["power_w"][-1] >= 0.8 * 700.0 and steady["sm_mhz"][-1] == 1515.0


def test_a_pair_interleaved_at_the_power_cap_is_timed_again_each_side_settled(session, monkeypatch):
    # hgemm v8 beside cuBLAS at 8192³ BF16 (67503fba, c71 r3): both settled at 1,500 MHz and ran interleaved at
    # 1,500, nothing borrowed; at 692 of 700 W the two shared one clock, where alone cuBLAS holds 2–3 % above v8
    monkeypatch.setattr(session_module, "backend", lambda name: _backend())
    monkeypatch.setattr(FakeTimer, "reference_mhz", 1500.0)
    monkeypatch.setattr(FakeTimer, "reference_watts", 691.7)
    record = session.measure(Case(IMPL, SHAPE, FP32, "off", "cold", paired=True))
    assert [c for c in session.timer.calls if c[0] == "paired"] == [("paired", 2, False), ("paired", 2, True)]
    assert record["paired"]["ratio"] == 1.1 and record["paired"]["interleaved"]["ratio"] == 1.2  # the headline
    lent = session.timer.stop_early
    at_cap = {"sm_mhz_median": 1500.0, "power_w_median": 691.7, "power_limit_w": 700.0}
    assert lent(at_cap, at_cap) and lent({"sm_mhz_median": 1500.0}, at_cap)  # either side at the cap
    below = {**at_cap, "power_w_median": 600.0}
    assert not lent(below, below) and not lent({**at_cap, "power_limit_w": None}, below)  # no limit: unknown
    from study.timing import shared_cap

    assert shared_cap((at_cap, below)) and not shared_cap(({}, None))


def test_a_pair_whose_kernels_lend_each_other_clock_headroom_is_told_apart():
    # sgemm v11 beside cuBLAS's FP32 GEMM on the H200: alone it settled at 1740 MHz, paired it ran at 1965
    mix = power_mix(({"sm_mhz": [1980.0, 1980.0, 1740.0, 1740.0, 1740.0]}, {"sm_mhz": [1950.0, 1965.0]}),
                                 ({"sm_mhz_median": 1965.0}, {"sm_mhz_median": 1875.0}))
    assert mix["alone_mhz"] == [1740.0, 1957.5] and mix["power_mix"] == pytest.approx(225 / 1740)
    assert mix["borrowed"] == pytest.approx(225 / 1740)
    even = power_mix(({"sm_mhz": [1860.0, 1515.0, 1515.0, 1500.0]}, {"sm_mhz": [1530.0] * 3}),
                                  ({"sm_mhz_median": 1545.0}, {"sm_mhz_median": 1530.0}))  # hgemm v8 and cuBLAS
    assert even["power_mix"] == pytest.approx(30 / 1515) and even["borrowed"] == pytest.approx(30 / 1515)
    drift = power_mix(({"sm_mhz": [1530.0] * 3}, {"sm_mhz": [1515.0] * 3}),
                      ({"sm_mhz_median": 1470.0}, {"sm_mhz_median": 1515.0}))  # both at the cap, v8 drifting down
    assert drift["power_mix"] == pytest.approx(60 / 1530) and drift["borrowed"] == 0.0
    assert power_mix(({"settled": None}, {}), ({}, {}))["power_mix"] is None  # no NVML: unknown


def test_a_paired_round_with_a_throttled_batch_is_dropped_whole_and_rounds_stay_balanced():
    from study.timing import TimerSettings

    clocks = iter([1900.0, 1900.0, 1900.0, 1000.0] + [1900.0] * 400)  # the second round (B, A): A's batch throttles
    calls = []

    def samples(fn, reps, flush, per_call):
        calls.append(fn)
        return [fn()] * reps, next(clocks), 0, 650.0

    settings = TimerSettings(min_rounds=10, max_rounds=40, recovery_s=0.0)
    timer = timer_module.Timer(settings, types.SimpleNamespace(max_sm_clock_mhz=1980.0), None, None)
    timer.samples = samples
    pairing = timer.paired((lambda: 1.0, lambda: 1.25), (1.0, 1.25), flush=False)
    # sixteen rounds: eight ABBA units, the fewest whose median has an interval
    assert pairing["discarded_throttled"] == [10, 0] and pairing["rounds"] == 16 and pairing["stop"] == "ci"
    assert pairing["ratio"] == 1.25 and pairing["ci"] == [1.25, 1.25] and len(pairing["samples"]) == 16 * 10
    assert stats.order_effect(pairing["ratios"]) == 1.0
    # kept rounds alternate which side goes first: A B, B A (dropped), B A, A B, B A, …: eight of each
    firsts = [calls[i]() for i in range(0, len(calls), 2)]
    assert firsts[:5] == [1.0, 1.25, 1.25, 1.0, 1.25] and len(firsts) == 17
    assert not pairing["settle_each"] and "settled_mhz" not in pairing


def test_settled_rounds_settle_each_kernel_before_each_of_its_batches():
    from study.timing import TimerSettings

    events = []

    def samples(fn, reps, flush, per_call):
        events.append(("batch", fn()))
        return [fn()] * reps, 1700.0, 0, 650.0

    def settle(fn, first, flush=False):
        events.append(("settle", fn()))
        return {"settled": True, "sm_mhz": [1980.0, 1740.0 if fn() == 1.0 else 1950.0]}

    settings = TimerSettings(min_rounds=10, max_rounds=40, recovery_s=0.0)
    timer = timer_module.Timer(settings, types.SimpleNamespace(max_sm_clock_mhz=1980.0), None, None)
    timer.samples, timer.settle = samples, settle
    pairing = timer.paired((lambda: 1.0, lambda: 2.5), (1.0, 2.5), flush=True, settle_each=True)
    assert pairing["ratio"] == 2.5 and pairing["rounds"] == 16 and pairing["settle_each"]
    assert events[:4] == [("settle", 1.0), ("batch", 1.0), ("settle", 2.5), ("batch", 2.5)]
    assert events[4:8] == [("settle", 2.5), ("batch", 2.5), ("settle", 1.0), ("batch", 1.0)]
    assert pairing["settled_mhz"] == [[1740.0] * 16, [1950.0] * 16]


@pytest.mark.parametrize("reasons, kept", [(0x4, True),            # the power cap alone: the kernel's steady state
                                           (0x4 | 0x1, True),      # ... while NVML also calls the GPU idle
                                           (0x4 | 0x20, False),    # the cap and thermal slowdown: a disturbance
                                           (0x8, False),           # hardware slowdown
                                           (0x0, False)])          # no reason given: below the threshold, dropped
def test_a_batch_slowed_by_the_power_cap_alone_is_kept(monkeypatch, reasons, kept):
    # c28: hgemm 8192³ FP16 at the 700 W cap ran every paired round at 1,485 MHz or less (75 % of 1980 is 1485);
    # each was dropped as throttled and the pair failed with no round kept
    from study.timing import TimerSettings

    monkeypatch.setattr(timer_module.time, "sleep", lambda s: None)
    seen = timer_module.Readings(TimerSettings(), max_clock_mhz=1980.0)
    assert seen.keep([1.0, 1.0], 1400.0, reasons, 690.0) is kept
    assert seen.discarded == (0 if kept else 2)
    assert seen.keep([1.0], 1980.0, 0x20, 400.0)  # above the threshold: kept whatever the reason

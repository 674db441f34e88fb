"""How samples are taken and when sampling stops: the settings written beside every result, and the
stopping rule (:func:`stop_rule`). Pure: the GPU side is :mod:`study.timer`.
"""

from __future__ import annotations

import dataclasses
import statistics

from study import stats

MODES = ("cold", "hot", "graph")


class TimingConfigError(ValueError):
    """A timing configuration that cannot produce a sound measurement."""


@dataclasses.dataclass(frozen=True)
class TimerSettings:
    """How every sample is taken and when sampling stops; written beside every result.

    Modes: ``cold`` reads a buffer of ``flush_factor`` × L2 before each sample (not timed; a
    read, so that no dirty line is left for the kernel to write back) and brackets each launch
    with its own events; ``hot`` launches back to back without a flush; ``graph`` captures N
    launches in one CUDA graph and times each replay (per-launch time = replay / N; no flush, so
    hot caches).

    Stopping: with ``reps`` set, exactly that many samples are kept; otherwise sampling
    continues, with at least ``min_samples`` samples and ``min_time_s`` of GPU time, until
    the relative standard deviation of the kept samples inside Tukey's fences is at most
    ``noise`` (a steady kernel: stop ``noise``) or the median's 95 % confidence interval is
    within ± ``ci`` of it, or within one timer tick (a kernel with an intrinsic jitter that more
    samples cannot lower, but whose median they pin down: stop ``ci``), or until ``timeout_s``
    (wall) has passed, which the report flags (see :mod:`study.stats`). Batches whose SM clock
    (NVML, read while the batch runs and after it) is below ``throttle_threshold`` × the
    maximum SM clock are discarded, followed by a ``recovery_s`` pause, unless
    ``discard_throttled`` is off.

    Steady state: before its samples, a kernel runs back to back until its SM clock and power
    settle (the last three readings within 1 % and 3 %), for at most ``settle_max_s`` (0: not at
    all); at the 700 W cap a compute-bound kernel's clock falls for the first few hundred
    milliseconds, and it is compared at the clock it holds in a loop (docs/method.md §3).

    Pairing (a case measured against its op's reference, ``--paired``): rounds of a batch each,
    alternating the implementation and the reference (ABBA), at least ``min_rounds``, until the
    median of the ABBA units' ratios (an A-first round with the B-first one after it) has a 95 %
    interval within ± ``pair_ci`` of it, or ``max_rounds``, or ``timeout_s``.
    """

    mode: str = "cold"
    reps: int | None = None
    noise: float = 0.005
    ci: float = 0.001
    min_samples: int = 20
    min_time_s: float = 0.1
    timeout_s: float = 15.0
    max_samples: int = 20_000  # µs kernels with heavy tails never meet a target: docs/method.md §3
    warmup_ms: float = 25.0
    min_warmup: int = 3
    flush_factor: int = 2
    throttle_threshold: float = 0.75
    discard_throttled: bool = True
    recovery_s: float = 0.05
    graph_launches: int | None = None
    tune_reps: int = 10
    gate_trials: int = 3  # correctness trials before timing: fresh random inputs, then structured ones
    settle_max_s: float = 2.0
    pair_ci: float = 0.004
    min_rounds: int = 16  # eight ABBA units: the fewest whose median has a distribution-free 95 % interval
    max_rounds: int = 400

    def __post_init__(self):
        if self.mode not in MODES:
            raise TimingConfigError(f"mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if self.reps is not None and self.reps < 20:
            raise TimingConfigError(f"a fixed repetition count needs at least 20 timed repetitions "
                                    f"for a stable median; got {self.reps}")
        if not 0 < self.noise < 1:
            raise TimingConfigError(f"the noise target is a relative standard deviation in (0, 1); "
                                    f"got {self.noise}")
        if not 0 < self.ci < 1:
            raise TimingConfigError(f"the confidence target is a relative half-width in (0, 1); got {self.ci}")
        if self.min_samples < 10:
            raise TimingConfigError(f"at least 10 samples are needed before the noise can be judged; "
                                    f"got {self.min_samples}")
        if self.min_time_s < 0 or self.timeout_s <= 0:
            raise TimingConfigError("the minimum GPU time must be ≥ 0 and the timeout > 0")
        if self.timeout_s < self.min_time_s:
            raise TimingConfigError(f"the timeout ({self.timeout_s} s) is shorter than the minimum GPU "
                                    f"time ({self.min_time_s} s): no measurement could finish")
        if self.max_samples < max(self.min_samples, self.reps or 0):
            raise TimingConfigError("max_samples is below the samples the other settings require")
        if self.min_warmup < 1 or self.warmup_ms < 0:
            raise TimingConfigError("warm-up needs at least one launch and a non-negative duration")
        if self.flush_factor < 1 or self.tune_reps < 3:
            raise TimingConfigError("flush_factor must be ≥ 1 and tune_reps ≥ 3")
        if not 0 <= self.throttle_threshold <= 1 or self.recovery_s < 0:
            raise TimingConfigError("the throttle threshold is a fraction of the max clock in [0, 1]")
        if self.graph_launches is not None and self.graph_launches < 1:
            raise TimingConfigError("a graph needs at least one launch")
        if self.gate_trials < 1:
            raise TimingConfigError(f"the correctness gate needs at least one trial; got {self.gate_trials}")
        if self.settle_max_s < 0:
            raise TimingConfigError("the steady-state bound is a duration in s, at least 0")
        if not 0 < self.pair_ci < 1 or not 3 <= self.min_rounds <= self.max_rounds:
            raise TimingConfigError("pairing needs a relative half-width in (0, 1) and 3 <= min_rounds <= max_rounds")

    @property
    def flush_l2(self) -> bool:
        return flushes(self.mode)

    def to_json(self) -> dict:
        """The settings as results record them. ``mode`` is the mode of :meth:`Timer.time`
        (ceilings, validate); a compare run records each case's mode with the case instead."""
        return {**dataclasses.asdict(self), "flush_l2": self.flush_l2, "flush": "read of flush_factor × L2",
                "timer": "torch.cuda.Event pairs on the stream the kernel runs on",
                "headline": "median", "stop": "reps" if self.reps else "noise or ci"}


def flushes(mode: str) -> bool:
    """Whether samples of this timing mode start from a flushed L2."""
    return mode == "cold"


def stop_rule(st: TimerSettings, kept: list[float], elapsed_s: float) -> str | None:
    """Why sampling stops now (``reps``, ``noise``, ``ci``, ``max_samples``, ``timeout``), or None."""
    if st.reps is not None:
        if len(kept) >= st.reps:
            return "reps"
    elif len(kept) >= st.min_samples and sum(kept) * 1e-3 >= st.min_time_s:
        summary = stats.summarize(kept)
        if summary.noise <= st.noise:
            return "noise"
        tick = summary.resolution / summary.median if summary.median > 0 else 0.0
        if summary.median_ci <= max(st.ci, tick):  # within one timer tick: as narrow as the instrument allows
            return "ci"
    if st.reps is None and len(kept) >= st.max_samples:
        return "max_samples"
    return "timeout" if elapsed_s > st.timeout_s else None


def pair_stop(st: TimerSettings, ratios: list[float], elapsed_s: float) -> str | None:
    """Why a paired measurement stops now (``ci``, ``max_rounds``, ``timeout``), or None: the median of
    the kept rounds' ABBA units (:func:`study.stats.abba_units`, an A-first round and the B-first round
    after it) known within ± ``pair_ci`` (order statistics, as :func:`stop_rule`'s ``ci``: eight units
    at least) over an even count of rounds, or ``timeout_s`` passed, however few rounds were kept (a
    stop other than ``ci`` is above target)."""
    balanced = len(ratios) % 2 == 0
    if (balanced and len(ratios) >= st.min_rounds
            and stats.summarize(stats.abba_units(ratios)).median_ci <= st.pair_ci):
        return "ci"
    if balanced and len(ratios) >= st.max_rounds:
        return "max_rounds"
    return "timeout" if elapsed_s > st.timeout_s else None


PAIR_CLOCK_GAP = 0.03  # a pair whose sides ran further apart, or further from their own clocks, is flagged
SETTLE_WINDOW = 3  # settled: the last this many readings of clock and power agree (study.timer.Timer.settle)


def power_mix(steadies: tuple, clocks: tuple) -> dict:
    """How far each side of a pair ran from the SM clock it settled at alone (:meth:`study.timer.Timer.settle`): two
    kernels of unlike power lend each other headroom under the cap, and their paired ratio is then the
    ratio at clocks neither holds in a loop of its own. On the H200, sgemm v11 (3xTF32 on wgmma) settled
    at 1740 MHz alone and ran at 1950 beside cuBLAS's SIMT FP32 GEMM: its paired × cuBLAS 2.48, the
    ratio of the two timed each alone 2.21 (docs/method.md §8). ``power_mix``: the larger gap, or None;
    ``borrowed``: how far a side ran *above* its own clock (the larger), the mark of headroom lent (None
    when unknown, 0 when neither did). A side running below its settled clock is not lent anything: two kernels
    both at the cap drift a few % below the clock of their first settling as the GPU warms (hgemm v8 beside
    cuBLAS at 8192³ BF16: settled at 1530 MHz, 1470 in its rounds, settled again before each batch or not)."""
    alone = [_settled_mhz(s) for s in steadies]
    paired = [(c or {}).get("sm_mhz_median") for c in clocks]
    gaps = [(p - a) / a for a, p in zip(alone, paired) if a and p]
    return {"alone_mhz": alone, "paired_mhz": paired, "power_mix": max(map(abs, gaps)) if gaps else None,
            "borrowed": max(0.0, *gaps) if gaps else None}


PAIR_AT_CAP = 0.9  # interleaved rounds whose median draw, on either side, reached this share of the power limit


def shared_cap(clocks: tuple) -> bool:
    """Whether a pair's interleaved rounds ran at the power cap: either side's median draw at PAIR_AT_CAP of its
    limit or more. Interleaved at the cap the two kernels share one power state and one clock; alone, each holds
    the clock its own draw per cycle allows, and the headline is the ratio at those clocks, so such a pair is
    timed re-settled whatever :func:`power_mix` says. The single settle that test relies on cannot tell clocks
    2–3 % apart: on the H200 at 8192³ BF16 (nine runs of hgemm v8 beside cuBLAS on three GPUs,
    ``reports/h200/paired/repeats/``) the re-settled rounds held v8 at 1,440–1,470 MHz and cuBLAS at
    1,470–1,500, 2–3 % above v8 in every run, where the interleaved rounds ran both at one clock; the
    interleaved ratios were 1.023–1.035, the re-settled 0.993–1.010; one run whose settles happened to end
    level (1,500 MHz both) kept its interleaved 1.027 as the headline (docs/method.md §8)."""
    for c in clocks:
        watts, limit = (c or {}).get("power_w_median"), (c or {}).get("power_limit_w")
        if watts and limit and watts >= PAIR_AT_CAP * limit:
            return True
    return False


def _settled_mhz(steady: dict | None) -> float | None:
    readings = [c for c in (steady or {}).get("sm_mhz") or [] if c]
    return statistics.median(readings[-SETTLE_WINDOW:]) if readings else None

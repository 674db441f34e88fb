"""The GPU side of timing: samples between CUDA events on the stream the kernel runs on, the L2
flush, the lead kernel, warm-up, CUDA graphs, the SM clock read batch by batch, and the loop that
samples until :func:`study.timing.stop_rule` says so (:class:`study.timing.TimerSettings` states the
rules). One set of instruments per GPU per process (:func:`for_gpu`), whoever times.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from study import hardware, stats
from study.backends.cuda import StreamCache, load_function
from study.paths import MICROBENCH_DIR
from study.timing import SETTLE_WINDOW, TimerSettings, pair_stop, stop_rule

LEAD_MIN_S = 200e-6        # the shortest lead: covers the first launches of any batch
LEAD_MAX_S = 20e-3         # the longest: a full launch queue blocks the host behind the lead itself
HOST_S_PER_SAMPLE = 50e-6  # first guess of the host's time to queue one sample; then measured
FLUSH_MS_ESTIMATE = 0.04   # a cold sample's flush, as the batch size reckons it (2 × 60 MB read)
BATCH_TARGET_MS = 10.0     # GPU time of one batch: the SM clock is read once a batch
MAX_BATCH = 256            # samples a batch, whatever the kernel's length
MAX_WARMUP_LAUNCHES = 10_000
GRAPH_TARGET_MS = 1.0      # work one graph replays, when the settings name no launch count
MAX_GRAPH_LAUNCHES = 200
SETTLE_CHUNK_MS = 50.0     # back-to-back work between two readings of clock and power while settling
SETTLE_MIN_S = 0.15        # settling runs at least this long: a kernel's first chunk says nothing yet
SETTLE_CLOCK = 0.01        # settled: the last SETTLE_WINDOW SM clocks within 1 % of each other
SETTLE_POWER = 0.03        # ... and the power draws within 3 %,
SETTLE_FAR_FROM_CAP = 0.8  # or all below 80 % of the power limit: far from the cap, nothing cuts the clock
AT_CAP = 0.97              # a median draw at 97 % of the power limit or more: the samples ran at the cap


def clock_summary(readings: list, power: list, threshold: float, reasons: int, clocks) -> dict:
    """The clocks and power a record keeps: SM clock min/median/max of the batches, the median and
    largest draw, the limit, and whether the samples ran at the power cap (a median draw at AT_CAP of
    the limit, or the driver's own power-cap reason)."""
    ordered, watts = sorted(readings), sorted(power)
    limit = getattr(clocks, "power_limit_w", None) if clocks else None
    median_w = watts[len(watts) // 2] if watts else None
    capped = bool(reasons & hardware.SW_POWER_CAP) or bool(limit and median_w and median_w >= AT_CAP * limit)
    return {"available": bool(clocks and clocks.available),
            "sm_mhz_min": ordered[0] if ordered else None,
            "sm_mhz_median": ordered[len(ordered) // 2] if ordered else None,
            "sm_mhz_max": ordered[-1] if ordered else None,
            "readings": len(ordered), "threshold_mhz": threshold,
            "below_threshold": sum(1 for c in ordered if c < threshold),
            "throttle_reasons": hardware.decode_reasons(reasons),
            "power_w_median": median_w, "power_w_max": watts[-1] if watts else None, "power_limit_w": limit,
            "at_power_cap": capped if watts or reasons else None}


def batch_size(per_launch_ms: float, per_call: int, flush: bool, least: int = 1) -> int:
    """Samples in one batch: about BATCH_TARGET_MS of GPU time (the SM clock is read once a batch),
    at least ``least``, at most MAX_BATCH."""
    per_sample = per_launch_ms * per_call + (FLUSH_MS_ESTIMATE if flush else 0.0)
    return max(least, min(MAX_BATCH, math.ceil(BATCH_TARGET_MS / max(per_sample, 1e-3))))


class Readings:
    """What the batches of one kernel saw: SM clocks, power draws, clock-event reasons, and the
    samples discarded because their batch ran below the throttle threshold."""

    def __init__(self, settings: TimerSettings, max_clock_mhz: float):
        self.settings = settings
        self.threshold = settings.throttle_threshold * max_clock_mhz
        self.clocks, self.power, self.reasons, self.discarded = [], [], 0, 0

    def keep(self, got: list, clock: float | None, reasons: int, watts: float | None) -> bool:
        """Note one batch; False when it ran throttled and is to be discarded (after the recovery pause).
        A batch the power cap alone slowed is kept: that is the clock a compute-bound kernel holds in a loop
        at the limit (c28: every round of hgemm 8192³ FP16 at 1,485 MHz and below was discarded, and the
        pair failed with none kept), the state paired measurement compares kernels in (docs/method.md §3)."""
        self.reasons |= reasons
        if watts is not None:
            self.power.append(watts)
        if clock is not None:
            self.clocks.append(clock)
        if (clock is not None and clock < self.threshold and self.settings.discard_throttled
                and not hardware.held_by_power_cap(reasons)):
            self.discarded += len(got)
            time.sleep(self.settings.recovery_s)
            return False
        return True

    def summary(self, clocks) -> dict:
        return clock_summary(self.clocks, self.power, self.threshold, self.reasons, clocks)


def _lead_kernel():
    try:
        return load_function(MICROBENCH_DIR / "delay.cu", "delay_kernel", {"THREADS": 32}), StreamCache()
    except ImportError:  # no CuPy: batches start without lead work (first samples may carry launch latency)
        return None


class Instruments:
    """What timing needs on one GPU, made once per process: the flush buffer, the lead kernel, the
    host's measured pace and the count of host-bound batches, the flush's own duration."""

    def __init__(self, device, flush_factor: int):
        import torch

        # The flush READS 2 × L2 of its own buffer (written once, here): L2 is left full of clean
        # lines of no use to the kernel. A write flush (a memset, as do_bench and nvbench do) left
        # 60 MB of dirty lines that the timed kernel had to write back as it evicted them: on the
        # H200 that added ~9 µs to every memory-bound kernel (an FP16 16384² GEMV 130.8 µs after a
        # write flush, 121.9 µs after a read, 121.7 µs hot), 40 % at 4096² (docs/method.md §3).
        self.flush_factor = flush_factor
        self.flush_buffer = torch.zeros(flush_factor * device.l2_bytes // 8, dtype=torch.int64, device="cuda")
        self.flush_sum = torch.zeros((), dtype=torch.int64, device="cuda")
        self.lead = _lead_kernel()
        self.host_s_per_sample = HOST_S_PER_SAMPLE
        self.host_bound_batches = 0
        self.flush_ms = None


_INSTRUMENTS: dict = {}


def for_gpu(settings: TimerSettings, device, clocks=None, write_flush: bool = False) -> "Timer":
    """The timer of the current GPU with ``settings``: every timer of a process on one GPU shares its
    :class:`Instruments` (the 2 × L2 flush buffer is allocated once), whoever times — the session,
    the ceilings, validate, the CUDA tuner. ``write_flush``: flush by writing the buffer, as do_bench
    does (validate measures what that costs a kernel; the study's own flush reads)."""
    import torch

    index = torch.cuda.current_device()
    found = _INSTRUMENTS.get(index)
    if found is None or found.flush_factor != settings.flush_factor:
        found = _INSTRUMENTS[index] = Instruments(device, settings.flush_factor)
    return Timer(settings, device, clocks, found, write_flush)


class Timer:
    """Events, the L2 flush, warm-up, graphs, clocks and the stopping rule, under one set of
    settings, on one GPU's :class:`Instruments` (made by :func:`for_gpu`)."""

    def __init__(self, settings: TimerSettings, device, clocks, instruments: Instruments, write_flush: bool = False):
        self.settings = settings
        self.device = device
        self.clocks = clocks
        self.instruments = instruments
        self.write_flush = write_flush

    @property
    def host_bound_batches(self) -> int:
        return self.instruments.host_bound_batches

    def lead(self, seconds: float) -> None:
        """Keep the GPU busy while the host queues a batch (cuda_kernels/microbench/delay.cu)."""
        if self.instruments.lead is not None:
            kernel, streams = self.instruments.lead
            kernel((1, 1, 1), (32, 1, 1), (np.uint64(int(seconds * 1e9)),), stream=streams.current())

    def samples(self, fn: Callable[[], object], reps: int, flush: bool = True, per_call: int = 1):
        """``reps`` event-timed calls (ms per launch), each after an untimed L2 flush if asked.
        Returns (samples, lowest SM clock seen while they ran or None, clock-event reasons
        read while they ran, the board's power draw read while they ran or None).

        The lead kernel before the batch lasts as long as the host needs to queue the whole
        batch (measured on the previous batch, 1.5× for margin): then the GPU never waits for
        the host between two samples. Without it, back-to-back launches of a few µs (hot mode)
        were timed with the host's launch latency inside them: on the H200, a 16 MB GEMV read
        about half as fast hot as cold. A batch whose queueing still outlasted the lead plus its
        own GPU time is counted in ``host_bound_batches``."""
        import torch

        kit = self.instruments
        if flush and kit.flush_ms is None:
            kit.flush_ms = self._time_flush()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        lead_s = min(LEAD_MAX_S, max(LEAD_MIN_S, 1.5 * reps * kit.host_s_per_sample))
        self.lead(lead_s)
        queued = time.perf_counter()
        for start, end in zip(starts, ends):
            if flush:
                self.flush()
            start.record()
            fn()
            end.record()
        queued = time.perf_counter() - queued
        during = self.clocks.sm_mhz() if self.clocks else None  # the batch is still running
        power = self.clocks.power_w() if self.clocks else None
        reasons = self.clocks.reasons() if self.clocks else 0
        torch.cuda.synchronize()
        after = self.clocks.sm_mhz() if self.clocks else None
        seen = [c for c in (during, after) if c is not None]
        samples = [s.elapsed_time(e) / per_call for s, e in zip(starts, ends)]
        # At most double per batch: a host blocked behind a full launch queue measures the GPU's
        # time, not its own, and must not lengthen the next lead without bound.
        kit.host_s_per_sample = min(queued / reps, 2 * kit.host_s_per_sample)
        gpu_s = (sum(samples) * per_call + (reps * kit.flush_ms if flush else 0.0)) * 1e-3
        if kit.lead is not None and queued > lead_s + gpu_s:
            kit.host_bound_batches += 1
        return samples, (min(seen) if seen else None), reasons & ~hardware.IDLE, power

    def flush(self) -> None:
        """Evict L2 by reading 2 × its size, leaving no dirty line behind (see Instruments); with
        ``write_flush``, by writing it, as do_bench does."""
        kit = self.instruments
        if self.write_flush:
            kit.flush_buffer.zero_()
        else:
            import torch

            torch.sum(kit.flush_buffer, dim=0, out=kit.flush_sum)

    def _time_flush(self) -> float:
        """Milliseconds of one L2 flush (the GPU time between two samples of cold mode)."""
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.flush()
        start.record()
        self.flush()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def warm_up(self, fn: Callable[[], object], flush: bool = True) -> tuple[int, float]:
        """Launch until the count and duration rules are met; returns (launches, first sample ms)."""
        import torch

        first = self.samples(fn, 1, flush)[0][0]
        extra = max(self.settings.min_warmup - 1, math.ceil(self.settings.warmup_ms / max(first, 1e-3)) - 1)
        for _ in range(min(extra, MAX_WARMUP_LAUNCHES)):
            fn()
        torch.cuda.synchronize()
        return extra + 1, first

    def time(self, fn: Callable[[], object]) -> dict:
        """Warm-up, then sampling, in the settings' mode (graphs excepted: see Session)."""
        flush = self.settings.flush_l2
        warm, first = self.warm_up(fn, flush)
        return {**self.measure(fn, first, flush, mode=self.settings.mode), "warmup_launches": warm, "first_ms": first}

    def capture(self, fn: Callable[[], object], per_launch_ms: float):
        """A CUDA graph of N launches (N from the settings, or enough for about GRAPH_TARGET_MS)."""
        import torch

        n = self.settings.graph_launches or max(1, min(MAX_GRAPH_LAUNCHES,
                                                       math.ceil(GRAPH_TARGET_MS / max(per_launch_ms, 1e-3))))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up on a side stream before capture, as torch advises
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n):
                fn()
        return graph, n

    def measure(self, fn: Callable[[], object], per_launch_ms: float, flush: bool, per_call: int = 1,
                mode: str = "cold") -> dict:
        """Sample until the stopping rule says so; the kept samples and how sampling went."""
        st = self.settings
        batch = batch_size(per_launch_ms, per_call, flush)
        seen, kept = Readings(st, self.device.max_sm_clock_mhz), []
        stop, started, host_bound = None, time.perf_counter(), self.host_bound_batches
        while stop is None:
            want = batch if st.reps is None else min(batch, st.reps - len(kept))
            got, *batch_seen = self.samples(fn, want, flush, per_call)
            if seen.keep(got, *batch_seen):
                kept.extend(got)
            stop = stop_rule(st, kept, time.perf_counter() - started)
        summary = stats.summarize(kept) if kept else None
        noise = summary.noise if summary else None
        ci = summary.median_ci if summary else None
        return {
            "samples": kept,
            "timing": {"mode": mode, "stop": stop, "noise": noise, "median_ci": None if ci == math.inf else ci,
                       "resolution_ms": summary.resolution if summary else None,
                       "noise_target": None if st.reps else st.noise, "ci_target": None if st.reps else st.ci,
                       "above_target": st.reps is None and stop not in ("noise", "ci"),
                       "kept": len(kept), "outliers": summary.outliers if summary else None,
                       "discarded_throttled": seen.discarded,
                       "host_bound_batches": self.host_bound_batches - host_bound,
                       "launches_per_sample": per_call, "gpu_time_s": sum(kept) * per_call * 1e-3,
                       "wall_s": time.perf_counter() - started},
            "clocks": seen.summary(self.clocks),
        }

    def settle(self, fn: Callable[[], object], per_launch_ms: float, flush: bool = False) -> dict:
        """Run ``fn`` back to back until the SM clock and the power draw settle (the last SETTLE_WINDOW
        readings within SETTLE_CLOCK and SETTLE_POWER of each other, after at least SETTLE_MIN_S), for at
        most ``settle_max_s``: at the power cap a compute-bound kernel's clock falls for its first few
        hundred milliseconds of work, and sampling from a cold start would time it above the clock it
        holds in a loop. A short kernel's draw swings with its launch gaps: far below the cap, a steady
        clock suffices, unless it is cut below the highest seen (the cap cuts the clock before NVML's draw
        shows it). With ``flush``, each launch follows an L2 flush, as cold samples do: the clock it
        settles at is the one of the loop it is timed in. What happened is recorded; without NVML
        nothing is run."""
        import torch

        limit = self.settings.settle_max_s
        if not limit or not (self.clocks and self.clocks.available):
            return {"settled": None, "seconds": 0.0, "launches": 0}
        per_launch = per_launch_ms + (FLUSH_MS_ESTIMATE if flush else 0.0)
        chunk = max(1, math.ceil(SETTLE_CHUNK_MS / max(per_launch, 1e-3)))
        clocks, power, launches, started = [], [], 0, time.perf_counter()
        settled = False
        far_from_cap = SETTLE_FAR_FROM_CAP * (getattr(self.clocks, "power_limit_w", None) or 0.0)
        while True:
            for _ in range(chunk):
                if flush:
                    self.flush()
                fn()
            launches += chunk
            clocks.append(self.clocks.sm_mhz() or 0.0)  # read while the chunk runs
            power.append(self.clocks.power_w() or 0.0)
            torch.cuda.synchronize()
            elapsed = time.perf_counter() - started
            last_c, last_p = clocks[-SETTLE_WINDOW:], power[-SETTLE_WINDOW:]
            # A clock cut below the highest seen while the draw reads far from the cap is the cap's cut before
            # NVML's draw (an average over its last second) shows it: not settled. On the H200 hgemm v8 at
            # 8192³ BF16 read 1,530, 1,530, 1,515 MHz at 415–423 W and was taken as settled; its clock in a loop
            # of its own is 1,440–1,470 at 690 W (c71).
            cut = min(last_c) < (1 - SETTLE_CLOCK) * max(clocks)
            far = max(last_p) < far_from_cap
            settled = (elapsed >= SETTLE_MIN_S and len(last_c) == SETTLE_WINDOW
                       and max(last_c) <= (1 + SETTLE_CLOCK) * min(last_c)
                       and (far and not cut or not far and max(last_p) <= (1 + SETTLE_POWER) * min(last_p)))
            if settled or elapsed >= limit:
                break
        return {"settled": settled, "seconds": elapsed, "launches": launches, "sm_mhz": clocks, "power_w": power}

    def paired(self, fns: tuple, firsts: tuple, flush: bool, per_calls: tuple = (1, 1),
               settle_each: bool = False, stop_early: Callable[[dict, dict], bool] | None = None) -> dict:
        """Alternating rounds of two implementations of one case, A (the measured one) and B (its op's
        reference): each round a batch of A and a batch of B, A first and B first in turn (ABBA: a
        drift of the GPU's state weighs on both alike), both in the same power state; the ratio of each
        round is B's median over A's (> 1: A is faster). A round in which either batch ran throttled is
        discarded whole, as :meth:`measure` discards a batch. Rounds until :func:`study.timing.pair_stop`.
        The ratio is the median of the ABBA units (an A-first round's ratio with the B-first one after it,
        :func:`study.stats.abba_units`), so that a cost of going first cancels (its size follows from the
        rounds' ratios: study.metrics.pair_gaps).
        With ``settle_each``, each batch follows a :meth:`settle` of its own kernel: two kernels of unlike
        power lend each other headroom under the cap when interleaved (study.timing.power_mix), and only a
        kernel settled alone runs at the clock it holds in a loop of its own; ``settled_mhz`` keeps where
        each settle ended. ``stop_early(clocks, reference_clocks)``, asked after each even round from
        ``min_rounds`` on with both sides' clock summaries so far, ends the rounds (stop ``borrowed``) when it
        answers True: the session's test that one side runs on headroom the other lends it, after which it
        times the pair again settled (study.session.Session._paired), so that the rounds it would throw
        away are not run to the timeout. Returns both sides' samples and clocks, every kept round's ratio,
        and the median unit ratio with its 95 % bootstrap interval (None without an A-first and a B-first
        round kept)."""
        st = self.settings
        batches = [batch_size(first, n, flush, least=3) for first, n in zip(firsts, per_calls)]
        seen = (Readings(st, self.device.max_sm_clock_mhz), Readings(st, self.device.max_sm_clock_mhz))
        kept, ratios, stop, started = ([], []), [], None, time.perf_counter()
        settled_mhz = ([], [])
        while stop is None:
            got = [[], []]
            order = (0, 1) if len(ratios) % 2 == 0 else (1, 0)  # kept rounds alternate: an even count is balanced
            for side in order:
                if settle_each:
                    # a graph replay runs per_call launches: its chunks are sized by the replay's time
                    ended = self.settle(fns[side], firsts[side] * per_calls[side], flush).get("sm_mhz") or [None]
                    settled_mhz[side].append(ended[-1])
                got[side], *batch_seen = self.samples(fns[side], batches[side], flush, per_calls[side])
                if not seen[side].keep(got[side], *batch_seen):
                    got[side] = None
            if got[0] and got[1]:
                kept[0].extend(got[0])
                kept[1].extend(got[1])
                ratios.append(stats.summarize(got[1]).median / stats.summarize(got[0]).median)
            stop = pair_stop(st, ratios, time.perf_counter() - started)
            if (stop is None and stop_early is not None and len(ratios) % 2 == 0 and len(ratios) >= st.min_rounds
                    and stop_early(seen[0].summary(self.clocks), seen[1].summary(self.clocks))):
                stop = "borrowed"
        units = stats.abba_units(ratios)
        ratio, low, high = stats.median_interval(units) if units else (None, None, None)
        return {"samples": kept[0], "reference_samples": kept[1], "ratios": ratios, "ratio": ratio,
                "ci": None if ratio is None else [low, high], "rounds": len(ratios), "stop": stop,
                "discarded_throttled": [s.discarded for s in seen], "wall_s": time.perf_counter() - started,
                "clocks": seen[0].summary(self.clocks), "reference_clocks": seen[1].summary(self.clocks),
                "settle_each": settle_each, **({"settled_mhz": list(settled_mhz)} if settle_each else {})}

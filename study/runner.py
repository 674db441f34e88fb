"""The one runner every backend goes through.

For each case: skip checks (with reasons) → inputs and float64 reference (once per
op, shape and precision) → prepare (layout, allocation, compilation; CUDA autotuning
picks its config here) → first launch (JIT, Triton autotuning, lazy loading) →
correctness gate on a NaN-poisoned output (outside tolerance: ``wrong``, never
timed) → warm-up → samples in the chosen mode (cold: L2 flushed before each; hot;
graph), each between two CUDA events on torch's current stream, batch by batch with
the SM clock read while each batch runs, until the stopping rule is met (see
:class:`TimerSettings`) → statistics (:mod:`study.stats`). An exception at any step is
recorded as ``crashed`` with its message and the run goes on; the CLI runs cases in
worker processes (:mod:`study.worker`) so that a faulting kernel cannot take the run
down with it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
import traceback
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from study import hardware, stats
from study.backends import Unsupported, backend
from study.precision import Precision, select
from study.problem import pad_rows
from study.registry import Implementation, implementations_of, ladder

AUTOTUNE_MODES = ("off", "on", "both")
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


@dataclasses.dataclass(frozen=True)
class Case:
    impl: Implementation
    shape: dict
    precision: Precision
    autotune: str  # "off", "on", or "n/a" (a baseline without a search of its own)
    mode: str = "cold"
    pad: int = 0   # rows of every matrix this many elements further apart than their length (align)

    @property
    def shape_text(self) -> str:
        from study.results import shape_text

        return shape_text(self.shape)

    @property
    def key(self) -> str:
        """Identifies the case across runs (resuming matches on it)."""
        key = f"{self.impl.name}|{self.shape_text}|{self.precision.name}|{self.autotune}|{self.mode}"
        return key + (f"|pad={self.pad}" if self.pad else "")

    @property
    def label(self) -> str:
        tune = "" if self.autotune == "n/a" else f" autotune={self.autotune}"
        pad = f" pad={self.pad}" if self.pad else ""
        return f"{self.impl.name} {self.shape_text} {self.precision.name} {self.mode}{tune}{pad}"


def plan(ops: Iterable[str], shapes: dict | None = None, precisions: dict | None = None,
         backends: Iterable[str] | None = None, rungs: Iterable[str] | None = None,
         autotune: str = "off", modes: Iterable[str] | None = None) -> list[Case]:
    """The product of the named axes: shapes × precisions × timing modes × implementations ×
    autotune modes. Baselines are always included so that × ref is defined.

    ``shapes``/``precisions`` map op → list (shape dicts / --dtype names); missing ops use
    the problem's defaults. ``modes`` (cold, hot, graph) default to each op's own. Unknown
    rung names raise KeyError naming the known ones, unknown precisions ValueError.
    """
    if autotune not in AUTOTUNE_MODES:
        raise ValueError(f"--autotune must be one of {', '.join(AUTOTUNE_MODES)}; got {autotune!r}")
    tunes = ("off", "on") if autotune == "both" else (autotune,)
    backends = set(backends) if backends else None
    wanted_rungs = set(rungs) if rungs else None
    cases = []
    for op in ops:
        lad = ladder(op)
        problem = lad.problem
        known = {r.key for r in lad.rungs} | {f"v{i}" for i in range(len(lad.rungs))}
        if wanted_rungs and not wanted_rungs <= known | {"baseline"}:
            unknown = ", ".join(sorted(wanted_rungs - known - {"baseline"}))
            raise KeyError(f"{op}: unknown rung {unknown}; known: {', '.join(r.key for r in lad.rungs)}")
        names = (precisions or {}).get(op) or problem.default_precisions or [problem.precisions[0].name]
        chosen = select(problem.precisions, names, op)
        op_modes = list(modes) if modes else list(problem.default_modes)
        for mode in op_modes:
            if mode not in MODES:
                raise ValueError(f"--mode must be one of {', '.join(MODES)}; got {mode!r}")
        for shape in (shapes or {}).get(op) or [dict(s) for s in problem.default_shapes]:
            for precision in chosen:
                for mode in op_modes:
                    for impl in implementations_of(lad):
                        if impl.rung is None:
                            # The reference always runs (× ref needs it); other baselines follow --backend.
                            if backends and not impl.reference and impl.backend not in backends:
                                continue
                            baseline_tunes = tunes if impl.target.tunable else ("n/a",)
                            cases.extend(Case(impl, shape, precision, tune, mode) for tune in baseline_tunes)
                            continue
                        if backends and impl.backend not in backends:
                            continue
                        if wanted_rungs and not ({impl.rung, f"v{impl.rung_index}"} & wanted_rungs):
                            continue
                        cases.extend(Case(impl, shape, precision, tune, mode) for tune in tunes)
    return cases


# ---- timing ---------------------------------------------------------------------

LEAD_MIN_S = 200e-6       # the shortest lead: covers the first launches of any batch
LEAD_MAX_S = 20e-3        # the longest: a full launch queue blocks the host behind the lead itself
HOST_S_PER_SAMPLE = 50e-6  # first guess of the host's time to queue one sample; then measured


def _lead_kernel():
    try:
        from study.backends.cuda import StreamCache, load_function
        from study.paths import MICROBENCH_DIR

        return load_function(MICROBENCH_DIR / "delay.cu", "delay_kernel", {"THREADS": 32}), StreamCache()
    except ImportError:  # no CuPy: batches start without lead work (first samples may carry launch latency)
        return None


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


class Timer:
    """Events, the L2 flush, warm-up, graphs, clocks and the stopping rule; one per run."""

    def __init__(self, settings: TimerSettings, device, clocks=None):
        import torch

        self.settings = settings
        self.device = device
        self.clocks = clocks
        # The flush READS 2 × L2 of its own buffer (written once, here): L2 is left full of clean
        # lines of no use to the kernel. A write flush (a memset, as do_bench and nvbench do) left
        # 60 MB of dirty lines that the timed kernel had to write back as it evicted them: on the
        # H200 that added ~9 µs to every memory-bound kernel (an FP16 16384² GEMV 130.8 µs after a
        # write flush, 121.9 µs after a read, 121.7 µs hot), 40 % at 4096² (docs/method.md §3).
        self._flush = torch.zeros(settings.flush_factor * device.l2_bytes // 8, dtype=torch.int64, device="cuda")
        self._flush_sum = torch.zeros((), dtype=torch.int64, device="cuda")
        self.flush_bytes = self._flush.numel() * 8
        self._lead = _lead_kernel()
        self.host_s_per_sample = HOST_S_PER_SAMPLE
        self.host_bound_batches = 0
        self.flush_ms = None

    def lead(self, seconds: float) -> None:
        """Keep the GPU busy while the host queues a batch (cuda_kernels/microbench/delay.cu)."""
        if self._lead is not None:
            kernel, streams = self._lead
            kernel((1, 1, 1), (32, 1, 1), (np.uint64(int(seconds * 1e9)),), stream=streams.current())

    def samples(self, fn: Callable[[], object], reps: int, flush: bool = True, per_call: int = 1):
        """``reps`` event-timed calls (ms per launch), each after an untimed L2 flush if asked.
        Returns (samples, lowest SM clock seen while they ran or None, clock-event reasons
        read while they ran).

        The lead kernel before the batch lasts as long as the host needs to queue the whole
        batch (measured on the previous batch, 1.5× for margin): then the GPU never waits for
        the host between two samples. Without it, back-to-back launches of a few µs (hot mode)
        were timed with the host's launch latency inside them: on the H200, a 16 MB GEMV read
        about half as fast hot as cold. A batch whose queueing still outlasted the lead plus its
        own GPU time is counted in ``host_bound_batches``."""
        import torch

        if flush and self.flush_ms is None:
            self.flush_ms = self._time_flush()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        lead_s = min(LEAD_MAX_S, max(LEAD_MIN_S, 1.5 * reps * self.host_s_per_sample))
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
        reasons = self.clocks.reasons() if self.clocks else 0
        torch.cuda.synchronize()
        after = self.clocks.sm_mhz() if self.clocks else None
        seen = [c for c in (during, after) if c is not None]
        samples = [s.elapsed_time(e) / per_call for s, e in zip(starts, ends)]
        # At most double per batch: a host blocked behind a full launch queue measures the GPU's
        # time, not its own, and must not lengthen the next lead without bound.
        self.host_s_per_sample = min(queued / reps, 2 * self.host_s_per_sample)
        gpu_s = (sum(samples) * per_call + (reps * self.flush_ms if flush else 0.0)) * 1e-3
        if self._lead is not None and queued > lead_s + gpu_s:
            self.host_bound_batches += 1
        return samples, (min(seen) if seen else None), reasons & ~hardware.IDLE

    def flush(self) -> None:
        """Evict L2 by reading 2 × its size, leaving no dirty line behind (see __init__)."""
        import torch

        torch.sum(self._flush, dim=0, out=self._flush_sum)

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
        for _ in range(min(extra, 10_000)):
            fn()
        torch.cuda.synchronize()
        return extra + 1, first

    def time(self, fn: Callable[[], object]) -> dict:
        """Warm-up, then sampling, in the settings' mode (graphs excepted: see Session)."""
        flush = self.settings.flush_l2
        warm, first = self.warm_up(fn, flush)
        return {**self.measure(fn, first, flush, mode=self.settings.mode), "warmup_launches": warm, "first_ms": first}

    def capture(self, fn: Callable[[], object], per_launch_ms: float):
        """A CUDA graph of N launches (N from the settings, or enough for about 1 ms)."""
        import torch

        n = self.settings.graph_launches or max(1, min(200, math.ceil(1.0 / max(per_launch_ms, 1e-3))))
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
        max_clock = self.device.max_sm_clock_mhz
        threshold = st.throttle_threshold * max_clock
        per_sample = per_launch_ms * per_call + (0.04 if flush else 0.0)
        batch = max(1, min(256, math.ceil(10.0 / max(per_sample, 1e-3))))
        kept, discarded, readings, reasons = [], 0, [], 0
        stop, started, host_bound = None, time.perf_counter(), self.host_bound_batches
        while stop is None:
            want = batch if st.reps is None else min(batch, st.reps - len(kept))
            got, clock, seen_reasons = self.samples(fn, want, flush, per_call)
            reasons |= seen_reasons
            if clock is not None:
                readings.append(clock)
            if clock is not None and clock < threshold and st.discard_throttled:
                discarded += len(got)
                time.sleep(st.recovery_s)
            else:
                kept.extend(got)
            stop = stop_rule(st, kept, time.perf_counter() - started)
        summary = stats.summarize(kept) if kept else None
        noise = summary.noise if summary else None
        ci = summary.median_ci if summary else None
        ordered = sorted(readings)
        return {
            "samples": kept,
            "timing": {"mode": mode, "stop": stop, "noise": noise, "median_ci": None if ci == math.inf else ci,
                       "resolution_ms": summary.resolution if summary else None,
                       "noise_target": None if st.reps else st.noise, "ci_target": None if st.reps else st.ci,
                       "above_target": st.reps is None and stop not in ("noise", "ci"),
                       "kept": len(kept), "outliers": summary.outliers if summary else None,
                       "discarded_throttled": discarded,
                       "host_bound_batches": self.host_bound_batches - host_bound,
                       "launches_per_sample": per_call, "gpu_time_s": sum(kept) * per_call * 1e-3,
                       "wall_s": time.perf_counter() - started},
            "clocks": {"available": bool(self.clocks and self.clocks.available),
                       "sm_mhz_min": ordered[0] if ordered else None,
                       "sm_mhz_median": ordered[len(ordered) // 2] if ordered else None,
                       "sm_mhz_max": ordered[-1] if ordered else None,
                       "readings": len(ordered), "threshold_mhz": threshold,
                       "below_threshold": sum(1 for c in ordered if c < threshold),
                       "throttle_reasons": hardware.decode_reasons(reasons)},
        }


# ---- CUDA autotuning --------------------------------------------------------------

def _cache_path() -> Path:
    from study.paths import cache_dir

    return cache_dir() / "cuda_autotune.json"


def _tune_key(impl, device, shape, precision, mode, pad: int = 0) -> str:
    from study.backends.cuda import kernel_source  # with common.cuh inlined: an edited helper re-tunes

    space = json.dumps([dict(p) for p in impl.space], sort_keys=True)
    source = (kernel_source(impl.target.path) + space).encode()
    digest = hashlib.sha256(source).hexdigest()[:16]
    from study.results import shape_text

    shape_s = shape_text(shape)
    return (f"{device.name}|sm_{device.capability[0]}{device.capability[1]}|{impl.name}|{shape_s}|"
            f"{precision.name}|{mode}|{digest}" + (f"|pad={pad}" if pad else ""))


def tune_cuda(impl, problem, tensors, ref, scale, shape, precision, mode, timer: Timer,
              device, pad: int = 0) -> tuple[dict, dict]:
    """Time every point of the kernel's space with the runner's own timer, in the case's timing
    mode; keep the fastest correct one. Cached per GPU, shape, precision, mode and kernel source."""
    path = _cache_path()
    cache = json.loads(path.read_text()) if path.is_file() else {}
    key = _tune_key(impl, device, shape, precision, mode, pad)
    if key in cache:
        return dict(cache[key]["config"]), {"cached": True, **cache[key]}
    cuda = backend("cuda")
    trials = []
    for point in impl.space:
        try:
            launch = cuda.prepare(impl, problem, tensors, shape, precision, config=point, pad=pad)
            verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision)
            if not verdict.ok:
                trials.append({"config": dict(point), "status": "wrong", "reason": verdict.message})
                continue
            flush = flushes(mode)
            timer.warm_up(launch.fn, flush)
            median = stats.summarize(timer.samples(launch.fn, timer.settings.tune_reps, flush)[0]).median
            trials.append({"config": dict(point), "status": "ok", "median_ms": median})
        except Unsupported:  # these tensors, not this point: every point would refuse them
            raise
        except Exception as exc:  # a point that fails to compile or launch is dropped, with why
            trials.append({"config": dict(point), "status": "crashed", "reason": _one_line(exc)})
    good = [t for t in trials if t["status"] == "ok"]
    if not good:
        raise RuntimeError("no point of the autotune space ran correctly: "
                           + "; ".join(f"{t['config']}: {t['reason']}" for t in trials))
    best = min(good, key=lambda t: t["median_ms"])
    entry = {"config": best["config"], "trials": trials}
    from study.results import update_entry

    update_entry(path, key, entry)  # other GPU lanes may be adding theirs
    return dict(best["config"]), {"cached": False, **entry}


# ---- one measurement ----------------------------------------------------------------

def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) < 4000 else text[:4000] + " …"


def _source_hash(impl) -> str | None:
    """What a CUDA rung compiled, so that sanitizer results of that very source can be matched."""
    from study.sanitize import source_hash

    return source_hash(impl)


def _record(case: Case, **fields) -> dict:
    impl = case.impl
    problem = ladder(impl.op).problem
    record = {
        "op": impl.op, "rung": impl.rung, "rung_index": impl.rung_index, "baseline": impl.baseline,
        "backend": impl.backend, "library": impl.library, "reference": impl.reference,
        "implementation": impl.name, "source": impl.source, "source_hash": _source_hash(impl),
        "shape": dict(case.shape),
        "precision": case.precision.name, "dtype": case.precision.dtype, "math": impl.math_of(case.precision),
        "autotune": case.autotune, "mode": case.mode, "pad": case.pad, "status": None, "reason": "",
        "work": problem.work(case.shape, case.precision),
        "config": {}, "autotune_log": None, "error": None, "samples_ms": [], "median_ms": None,
        "min_ms": None, "q1_ms": None, "q3_ms": None, "mean_ms": None, "rel_stdev": None,
        "outliers": None, "warmup_launches": None, "timing": None, "clocks": None, "launch_bound": None,
    }
    record.update(fields)
    return record


class Session:
    """Holds what cases share: the device, the timer, and the current inputs and reference."""

    def __init__(self, settings: TimerSettings, device, seed: int = 0, clocks=None,
                 launch_overhead_ms: float | None = None, gpu: dict | None = None):
        self.settings = settings
        self.device = device
        self.gpu = gpu  # {"index", "uuid"} of the GPU measured on, stamped on every record
        self.seed = seed
        self.timer = Timer(settings, device, clocks)
        self.launch_overhead_ms = launch_overhead_ms
        self._key = None
        self._data = None
        self._trial_key = None
        self._trial_data = None

    @staticmethod
    def _group(problem, shape, precision, pad=0) -> tuple:
        """What the inputs and reference are built once for: op, shape, precision, padding."""
        return problem.name, tuple(shape.items()), precision.name, pad

    def _inputs(self, problem, shape, precision, pad=0):
        key = self._group(problem, shape, precision, pad)
        if key != self._key:
            import torch

            self._key, self._data = None, None
            self._trial_key, self._trial_data = None, None  # the last group's trial inputs go too
            torch.cuda.empty_cache()
            tensors = problem.make_inputs(shape, precision, self.seed, "cuda")
            ref, scale = problem.reference(tensors, precision)
            tensors = {name: pad_rows(t, pad) for name, t in tensors.items()}
            self._key, self._data = key, (tensors, ref, scale)
        return self._data

    def measure(self, case: Case) -> dict:
        """One record, whatever happens: skipped (with the reason), wrong (never timed),
        crashed (with the error), or ok (with samples); stamped with the GPU it ran on."""
        record = self._outcome(case)
        record["gpu"] = self.gpu
        return record

    def _outcome(self, case: Case) -> dict:
        impl = case.impl
        problem = ladder(impl.op).problem
        try:
            import torch

            reason = problem.check(case.shape, case.precision) or backend(impl.backend).check(
                impl, problem, case.shape, case.precision)
            if reason is None and case.pad and not problem.paddable:
                reason = f"{problem.name}'s kernels take no leading dimensions: padded rows (pad={case.pad}) are not run"
            if reason is None and self._key != self._group(problem, case.shape, case.precision, case.pad):
                reason = problem.check_memory(case.shape, case.precision, torch.cuda.mem_get_info()[0],
                                              trial_sets=self.settings.gate_trials)
            if reason:
                return _record(case, status="skipped", reason=reason)
            tensors, ref, scale = self._inputs(problem, case.shape, case.precision, case.pad)
            return self._measure(case, problem, tensors, ref, scale)
        except TimingConfigError as exc:
            return _record(case, status="skipped", reason=f"timing configuration: {exc}")
        except Unsupported as exc:
            return _record(case, status="skipped", reason=str(exc))
        except Exception as exc:
            return _record(case, status="crashed", reason=_one_line(exc), traceback=traceback.format_exc(limit=6))

    def _trial_inputs(self, problem, shape, precision, device, pad=0) -> list[tuple]:
        """(kind, seed, inputs, reference, scale) of the extra gate trials, built once per op, shape
        and precision and kept while the cases of that group run."""
        key = (*self._group(problem, shape, precision, pad), self.settings.gate_trials)
        if key != self._trial_key:
            self._trial_key, self._trial_data = None, None
            runs = [("random", self.seed + 7919 * t, problem.make_inputs(shape, precision, self.seed + 7919 * t,
                                                                          device))
                    for t in range(1, self.settings.gate_trials)]
            structured = problem.structured_inputs(shape, precision, device)
            if structured is not None:
                runs.append(("structured", None, structured))
            self._trial_key = key
            self._trial_data = [(kind, seed, {n: pad_rows(t, pad) for n, t in inputs.items()},
                                 *problem.reference(inputs, precision)) for kind, seed, inputs in runs]
        return self._trial_data

    def _trials(self, case, problem, config, tensors) -> dict:
        """The gate again before any timing: ``gate_trials - 1`` more trials on fresh random inputs
        (new seeds, a fresh NaN-poisoned output each), then one on the problem's structured inputs
        (small integers whose exact answer the float64 reference has, where a misplaced element has
        no rounding to hide in). Stops at the first failing trial."""
        impl, shape, precision = case.impl, case.shape, case.precision
        runs = self._trial_inputs(problem, shape, precision, next(iter(tensors.values())).device, case.pad)
        structured = any(kind == "structured" for kind, *_ in runs)
        for trial, (kind, seed, inputs, ref, scale) in enumerate(runs, 2):
            launch = backend(impl.backend).prepare(impl, problem, inputs, shape, precision, config=config,
                                                   autotune=case.autotune == "on", pad=case.pad)
            with launch.context():
                verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision)
            if not verdict.ok:
                return {"count": trial, "structured": structured,
                        "failed": {"trial": trial, "inputs": kind, "seed": seed, "error": _error(verdict, problem, precision)}}
        return {"count": len(runs) + 1, "structured": structured, "failed": None}

    def _measure(self, case, problem, tensors, ref, scale) -> dict:
        import torch

        impl, shape, precision, mode = case.impl, case.shape, case.precision, case.mode
        config, log = None, None
        if impl.backend == "cuda" and case.autotune == "on":
            config, log = tune_cuda(impl, problem, tensors, ref, scale, shape, precision, mode, self.timer,
                                    self.device, pad=case.pad)
        launch = backend(impl.backend).prepare(impl, problem, tensors, shape, precision, config=config,
                                               autotune=case.autotune == "on", pad=case.pad)
        with launch.context():
            launch.fn()  # JIT compilation, Triton autotuning, lazy module loading
            torch.cuda.synchronize()
            chosen = launch.chosen() if launch.chosen else launch.config
            verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision)
            error = _error(verdict, problem, precision)
            if not verdict.ok:
                return _record(case, status="wrong", reason=verdict.message, config=chosen, autotune_log=log,
                               error=error, trials={"count": 1, "failed": {"trial": 1, "inputs": "random",
                                                                           "seed": self.seed, "error": error}})
            trials = self._trials(case, problem, config, tensors)
            if trials["failed"]:
                failed = trials["failed"]
                return _record(case, status="wrong", config=chosen, autotune_log=log, error=failed["error"],
                               trials=trials, reason=f"{failed['inputs']} inputs (trial {failed['trial']}"
                               + (f", seed {failed['seed']}" if failed["seed"] is not None else "")
                               + f"): {failed['error']['message']}")
            flush = flushes(mode)
            warm, first = self.timer.warm_up(launch.fn, flush)
            if first * 1e-3 > self.settings.timeout_s:
                raise TimingConfigError(f"the timeout ({self.settings.timeout_s} s) is shorter than one "
                                        f"sample ({first * 1e-3:.3f} s)")
            fn, per_call = launch.fn, 1
            if mode == "graph":
                graph, per_call = self.timer.capture(launch.fn, first)
                # A launch outside the capture stream records nothing and only warns: the
                # replay must produce the output by itself before it is timed.
                replayed = check_output(graph.replay, launch.out, problem, ref, scale, precision)
                if not replayed.ok:
                    raise RuntimeError(f"the CUDA graph replay did not produce a correct output "
                                       f"({replayed.message}): a launch escaped the capture stream")
                fn = graph.replay
            sampling = self.timer.measure(fn, first, flush, per_call, mode=mode)
        # Kept to the nanosecond: the events tick in 32 ns steps on the H200, and 17 digits per sample made
        # results files three times larger for nothing. A graph replay's time is divided by its launches,
        # whose tick is 32 ns / N: those keep picoseconds.
        digits = 6 if per_call == 1 else 9
        samples = [round(s, digits) for s in sampling["samples"]]
        if not samples:
            raise RuntimeError("every sample was discarded as throttled before the timeout; "
                               f"clocks seen: {sampling['clocks']}")
        summary = stats.summarize(samples)
        return _record(case, status="ok", config=chosen, autotune_log=log, error=error, trials=trials,
                       samples_ms=samples, median_ms=summary.median, min_ms=summary.min,
                       q1_ms=summary.q1, q3_ms=summary.q3, mean_ms=summary.mean,
                       rel_stdev=summary.rel_stdev, outliers=summary.outliers, warmup_launches=warm,
                       timing=sampling["timing"], clocks=sampling["clocks"],
                       launch_bound=(None if self.launch_overhead_ms is None
                                     else summary.median < 2 * self.launch_overhead_ms))


def _error(verdict, problem, precision) -> dict:
    return {"err": verdict.err, "tolerance": verdict.tolerance, "max_abs": verdict.max_abs, "max_rel": verdict.max_rel,
            "unwritten": verdict.unwritten, "metric": problem.metric(precision), "message": verdict.message}


def check_output(fn, out, problem, ref, scale, precision):
    """The correctness gate: poison the output, run once, compare with the reference.
    NaN left anywhere means an element was never written."""
    import torch

    out.fill_(float("nan"))
    fn()
    if out.is_cuda:
        torch.cuda.synchronize()
    return problem.verify(out, ref, scale, precision)


def ordered(cases: list[Case]) -> list[Case]:
    """Grouped by op, shape, precision and padding (inputs and reference are built once per
    group), the baselines first in each group."""
    order = sorted(range(len(cases)), key=lambda i: (cases[i].impl.op, tuple(cases[i].shape.values()),
                                                     cases[i].precision.name, cases[i].pad,
                                                     cases[i].impl.rung is not None, i))
    return [cases[i] for i in order]


def crashed_record(case: Case, reason: str) -> dict:
    return _record(case, status="crashed", reason=reason)


def run(cases: list[Case], session: Session, progress: Callable[[int, int, Case, dict], None] | None = None,
        on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Measure every case in this process (the CLI isolates them in workers, study.worker)."""
    results = []
    for n, case in enumerate(ordered(cases), 1):
        started = time.perf_counter()
        record = session.measure(case)
        record["wall_s"] = time.perf_counter() - started
        results.append(record)
        if on_result:
            on_result(record)
        if progress:
            progress(n, len(cases), case, record)
    return results

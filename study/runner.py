"""The one runner every backend goes through.

For each case: skip checks (with reasons) → inputs and float64 reference (once per
op, shape and dtype) → prepare (layout, allocation, compilation; CUDA autotuning
picks its config here) → first launch (JIT, Triton autotuning, lazy loading) →
correctness gate on a NaN-poisoned output (outside tolerance: ``wrong``, never
timed) → warm-up → timed repetitions, each between two CUDA events on torch's
current stream with the L2 flushed before it by writing a buffer twice the L2 →
statistics. An exception at any step is recorded as ``crashed`` with its message
and the run goes on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
import traceback
from pathlib import Path
from typing import Callable, Iterable

from study import stats
from study.backends import backend
from study.registry import Implementation, implementations_of, ladder

AUTOTUNE_MODES = ("off", "on", "both")


@dataclasses.dataclass(frozen=True)
class TimerSettings:
    """How every sample is taken; written beside every result."""

    reps: int = 30            # timed repetitions per measurement (at least 20)
    warmup_ms: float = 25.0   # warm-up lasts at least this much GPU time ...
    min_warmup: int = 3       # ... and at least this many launches
    flush_l2: bool = True     # write a buffer of flush_factor × L2 before every sample
    flush_factor: int = 2
    tune_reps: int = 10       # repetitions per candidate when the CUDA tuner compares configs

    def __post_init__(self):
        if self.reps < 20:
            raise ValueError(f"at least 20 timed repetitions are needed for a stable median; got {self.reps}")
        if self.min_warmup < 1 or self.warmup_ms < 0:
            raise ValueError("warm-up needs at least one launch and a non-negative duration")
        if self.flush_factor < 1 or self.tune_reps < 3:
            raise ValueError("flush_factor must be ≥ 1 and tune_reps ≥ 3")

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "timer": "torch.cuda.Event pairs around each launch, same stream",
                "headline": "median"}


@dataclasses.dataclass(frozen=True)
class Case:
    impl: Implementation
    shape: dict
    dtype: str
    autotune: str  # "off", "on", or "n/a" (cuBLAS: its switch arrives with cuBLASLt)

    @property
    def label(self) -> str:
        shape = "x".join(str(v) for v in self.shape.values())
        tune = "" if self.autotune == "n/a" else f" autotune={self.autotune}"
        return f"{self.impl.name} {shape} {self.dtype}{tune}"


def plan(ops: Iterable[str], shapes: dict | None = None, dtypes: dict | None = None,
         backends: Iterable[str] | None = None, rungs: Iterable[str] | None = None,
         autotune: str = "off") -> list[Case]:
    """The product of the named axes, baseline always included so × cuBLAS is defined.

    ``shapes``/``dtypes`` map op → list; missing ops use the problem's defaults. Unknown
    rung names raise KeyError naming the known ones.
    """
    if autotune not in AUTOTUNE_MODES:
        raise ValueError(f"--autotune must be one of {', '.join(AUTOTUNE_MODES)}; got {autotune!r}")
    modes = ("off", "on") if autotune == "both" else (autotune,)
    backends = set(backends) if backends else None
    wanted_rungs = set(rungs) if rungs else None
    cases = []
    for op in ops:
        lad = ladder(op)
        known = {r.key for r in lad.rungs} | {f"v{i}" for i in range(len(lad.rungs))}
        if wanted_rungs and not wanted_rungs <= known | {"baseline"}:
            unknown = ", ".join(sorted(wanted_rungs - known - {"baseline"}))
            raise KeyError(f"{op}: unknown rung {unknown}; known: {', '.join(r.key for r in lad.rungs)}")
        impls = implementations_of(lad)
        for shape in (shapes or {}).get(op) or [dict(s) for s in lad.problem.default_shapes]:
            for dtype in (dtypes or {}).get(op) or [lad.problem.dtypes[0]]:
                for impl in impls:
                    if impl.backend == "cublas":
                        cases.append(Case(impl, shape, dtype, "n/a"))
                        continue
                    if backends and impl.backend not in backends:
                        continue
                    if wanted_rungs and not ({impl.rung, f"v{impl.rung_index}"} & wanted_rungs):
                        continue
                    cases.extend(Case(impl, shape, dtype, mode) for mode in modes)
    return cases


# ---- timing ---------------------------------------------------------------------

class Timer:
    """Events, the L2 flush buffer and the warm-up rule; one per run."""

    def __init__(self, settings: TimerSettings, l2_bytes: int):
        import torch

        self.settings = settings
        self.flush_bytes = settings.flush_factor * l2_bytes if settings.flush_l2 else 0
        self._flush = torch.empty(self.flush_bytes, dtype=torch.uint8, device="cuda") if self.flush_bytes else None

    def samples(self, fn: Callable[[], object], reps: int) -> list[float]:
        """``reps`` event-timed launches (ms), each after an L2 flush that is not timed."""
        import torch

        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for start, end in zip(starts, ends):
            if self._flush is not None:
                self._flush.zero_()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]

    def warm_up(self, fn: Callable[[], object]) -> int:
        """Launch until both the count and the duration rule are met; returns the count."""
        first = self.samples(fn, 1)[0]
        per_launch = max(first, 1e-3)
        extra = max(self.settings.min_warmup - 1, math.ceil(self.settings.warmup_ms / per_launch) - 1)
        extra = min(extra, 10_000)
        for _ in range(extra):
            fn()
        import torch

        torch.cuda.synchronize()
        return extra + 1


# ---- CUDA autotuning --------------------------------------------------------------

def _cache_path() -> Path:
    root = Path(os.environ.get("STUDY_CACHE_DIR", Path.home() / ".cache" / "study"))
    return root / "cuda_autotune.json"


def _tune_key(impl, device, shape, dtype) -> str:
    space = json.dumps([dict(p) for p in impl.space], sort_keys=True)
    source = (impl.target.path.read_text() + space).encode()
    digest = hashlib.sha256(source).hexdigest()[:16]
    shape_s = "x".join(str(v) for v in shape.values())
    return f"{device.name}|sm_{device.capability[0]}{device.capability[1]}|{impl.name}|{shape_s}|{dtype}|{digest}"


def tune_cuda(impl, problem, tensors, ref, scale, shape, dtype, timer: Timer, device) -> tuple[dict, dict]:
    """Time every point of the kernel's space with the runner's own timer; keep the fastest
    correct one. Cached per GPU, shape, dtype and kernel source."""
    path = _cache_path()
    cache = json.loads(path.read_text()) if path.is_file() else {}
    key = _tune_key(impl, device, shape, dtype)
    if key in cache:
        return dict(cache[key]["config"]), {"cached": True, **cache[key]}
    cuda = backend("cuda")
    trials = []
    for point in impl.space:
        try:
            launch = cuda.prepare(impl, problem, tensors, shape, dtype, config=point)
            launch.fn()
            verdict = problem.verify(launch.out, ref, scale, dtype)
            if not verdict.ok:
                trials.append({"config": dict(point), "status": "wrong", "reason": verdict.message})
                continue
            timer.warm_up(launch.fn)
            median = stats.summarize(timer.samples(launch.fn, timer.settings.tune_reps)).median
            trials.append({"config": dict(point), "status": "ok", "median_ms": median})
        except Exception as exc:  # a point that fails to compile or launch is dropped, with why
            trials.append({"config": dict(point), "status": "crashed", "reason": _one_line(exc)})
    good = [t for t in trials if t["status"] == "ok"]
    if not good:
        raise RuntimeError("no point of the autotune space ran correctly: "
                           + "; ".join(f"{t['config']}: {t['reason']}" for t in trials))
    best = min(good, key=lambda t: t["median_ms"])
    entry = {"config": best["config"], "trials": trials}
    cache[key] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1))
    tmp.replace(path)
    return dict(best["config"]), {"cached": False, **entry}


# ---- one measurement ----------------------------------------------------------------

def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) < 4000 else text[:4000] + " …"


def _record(case: Case, **fields) -> dict:
    impl = case.impl
    record = {
        "op": impl.op, "rung": impl.rung, "rung_index": impl.rung_index, "backend": impl.backend,
        "implementation": impl.name, "source": impl.source, "shape": dict(case.shape),
        "dtype": case.dtype, "autotune": case.autotune, "status": None, "reason": "", "config": {},
        "autotune_log": None, "error": None, "samples_ms": [], "median_ms": None, "min_ms": None,
        "q1_ms": None, "q3_ms": None, "mean_ms": None, "rel_stdev": None, "outliers": None,
        "warmup_launches": None, "gflops": None, "pct_peak": None, "vs_cublas": None,
    }
    record.update(fields)
    return record


class Session:
    """Holds what cases share: the device, the timer, and the current inputs and reference."""

    def __init__(self, settings: TimerSettings, device, seed: int = 0):
        self.settings = settings
        self.device = device
        self.seed = seed
        self.timer = Timer(settings, device.l2_bytes)
        self._key = None
        self._data = None

    def _inputs(self, problem, shape, dtype):
        key = (problem.name, tuple(shape.items()), dtype)
        if key != self._key:
            import torch

            self._key, self._data = None, None
            torch.cuda.empty_cache()
            tensors = problem.make_inputs(shape, dtype, self.seed, "cuda")
            ref, scale = problem.reference(tensors)
            self._key, self._data = key, (tensors, ref, scale)
        return self._data

    def measure(self, case: Case) -> dict:
        impl = case.impl
        lad = ladder(impl.op)
        problem = lad.problem
        try:
            import torch

            reason = problem.check(case.shape, case.dtype) or backend(impl.backend).check(
                impl, problem, case.shape, case.dtype)
            if reason is None and self._key != (problem.name, tuple(case.shape.items()), case.dtype):
                reason = problem.check_memory(case.shape, case.dtype, torch.cuda.mem_get_info()[0])
            if reason:
                return _record(case, status="skipped", reason=reason)
            tensors, ref, scale = self._inputs(problem, case.shape, case.dtype)
            return self._measure(case, problem, tensors, ref, scale)
        except Exception as exc:
            return _record(case, status="crashed", reason=_one_line(exc),
                           traceback=traceback.format_exc(limit=6))

    def _measure(self, case, problem, tensors, ref, scale) -> dict:
        impl, shape, dtype = case.impl, case.shape, case.dtype
        be = backend(impl.backend)
        config, log = None, None
        if impl.backend == "cuda" and case.autotune == "on":
            config, log = tune_cuda(impl, problem, tensors, ref, scale, shape, dtype, self.timer, self.device)
        launch = be.prepare(impl, problem, tensors, shape, dtype, config=config,
                            autotune=case.autotune == "on")
        with launch.context():
            launch.fn()  # JIT compilation, Triton autotuning, lazy module loading
            import torch

            torch.cuda.synchronize()
            chosen = launch.chosen() if launch.chosen else launch.config
            launch.out.fill_(float("nan"))
            launch.fn()
            verdict = problem.verify(launch.out, ref, scale, dtype)
            error = {"err": verdict.err, "tolerance": verdict.tolerance, "max_abs": verdict.max_abs,
                     "max_rel": verdict.max_rel, "unwritten": verdict.unwritten,
                     "metric": "max |out − ref| / (|A|·|B|)"}
            if not verdict.ok:
                return _record(case, status="wrong", reason=verdict.message, config=chosen,
                               autotune_log=log, error=error)
            warm = self.timer.warm_up(launch.fn)
            samples = self.timer.samples(launch.fn, self.settings.reps)
        summary = stats.summarize(samples)
        flops = problem.flops(shape)
        gflops = flops / (summary.median * 1e-3) / 1e9
        peak = self.device.fp32_peak_flops if dtype == "float32" else None
        return _record(case, status="ok", config=chosen, autotune_log=log, error=error,
                       samples_ms=samples, median_ms=summary.median, min_ms=summary.min,
                       q1_ms=summary.q1, q3_ms=summary.q3, mean_ms=summary.mean,
                       rel_stdev=summary.rel_stdev, outliers=summary.outliers, warmup_launches=warm,
                       gflops=gflops, pct_peak=None if peak is None else 100 * gflops * 1e9 / peak)


def run(cases: list[Case], session: Session, progress: Callable[[int, int, Case, dict], None] | None = None,
        on_result: Callable[[dict], None] | None = None) -> list[dict]:
    """Measure every case, grouped so that inputs and reference are built once per group."""
    order = sorted(range(len(cases)), key=lambda i: (cases[i].impl.op, tuple(cases[i].shape.values()),
                                                     cases[i].dtype, cases[i].impl.backend != "cublas", i))
    results = []
    for n, i in enumerate(order, 1):
        started = time.perf_counter()
        record = session.measure(cases[i])
        record["wall_s"] = time.perf_counter() - started
        results.append(record)
        if on_result:
            on_result(record)
        if progress:
            progress(n, len(cases), cases[i], record)
    return results

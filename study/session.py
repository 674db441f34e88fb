"""One measurement, whatever happens: the session every case of a process goes through.

For each case: skip checks (with reasons) → inputs and float64 reference (once per op, shape,
precision and padding) → prepare (layout, allocation, compilation; with autotune on, the backend's
own search: CUDA points timed by this session's timer, ``triton.autotune``, cuBLASLt's) → first
launch (JIT, Triton autotuning, lazy loading) → correctness gate on a NaN-poisoned output, then the
extra trials (outside tolerance: ``wrong``, never timed) → warm-up → samples in the case's timing
mode (:mod:`study.timer`) → statistics (:mod:`study.stats`) → the record. An exception at any step is
recorded as ``crashed`` with its message and the run goes on; the compare flow runs cases in worker
processes (:mod:`study.worker`) so that a faulting kernel cannot take the run down with it.
"""

from __future__ import annotations

import time
import traceback
from typing import Callable

from study import catalog, stats, timer
from study.backends import Tuning, Unsupported, backend, cuda
from study.backends.cuda_tune import one_line
from study.plan import Case, ordered
from study.problem import check_output, error_record, pad_rows
from study.timing import TimerSettings, TimingConfigError, flushes

SEED_STRIDE = 7919  # the extra gate trials draw seeds seed + SEED_STRIDE·t, t = 1, 2, …


def source_hash(impl) -> str | None:
    """What a CUDA rung compiled, so that sanitizer results of that very source can be matched."""
    return cuda.source_hash(impl.target.path) if impl.backend == "cuda" else None


def _record(case: Case, **fields) -> dict:
    impl = case.impl
    problem = catalog.ladder(impl.op).problem
    record = {
        "op": impl.op, "rung": impl.rung, "rung_index": impl.rung_index, "baseline": impl.baseline,
        "backend": impl.backend, "library": impl.library, "reference": impl.reference,
        "implementation": impl.name, "source": impl.source, "source_hash": source_hash(impl),
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
        self.timer = timer.for_gpu(settings, device, clocks)
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
        problem = catalog.ladder(impl.op).problem
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
            return _record(case, status="crashed", reason=one_line(exc), traceback=traceback.format_exc(limit=6))

    def _trial_inputs(self, problem, shape, precision, device, pad=0) -> list[tuple]:
        """(kind, seed, inputs, reference, scale) of the extra gate trials, built once per op, shape
        and precision and kept while the cases of that group run."""
        key = (*self._group(problem, shape, precision, pad), self.settings.gate_trials)
        if key != self._trial_key:
            self._trial_key, self._trial_data = None, None
            runs = [("random", self.seed + SEED_STRIDE * t,
                     problem.make_inputs(shape, precision, self.seed + SEED_STRIDE * t, device))
                    for t in range(1, self.settings.gate_trials)]
            structured = problem.structured_inputs(shape, precision, device)
            if structured is not None:
                runs.append(("structured", None, structured))
            self._trial_key = key
            self._trial_data = [(kind, seed, {n: pad_rows(t, pad) for n, t in inputs.items()},
                                 *problem.reference(inputs, precision)) for kind, seed, inputs in runs]
        return self._trial_data

    def _trials(self, case, problem, config, tensors, tuning) -> dict:
        """The gate again before any timing: ``gate_trials - 1`` more trials on fresh random inputs
        (new seeds, a fresh NaN-poisoned output each), then one on the problem's structured inputs
        (small integers whose exact answer the float64 reference has, where a misplaced element has
        no rounding to hide in). Stops at the first failing trial."""
        impl, shape, precision = case.impl, case.shape, case.precision
        runs = self._trial_inputs(problem, shape, precision, next(iter(tensors.values())).device, case.pad)
        structured = any(kind == "structured" for kind, *_ in runs)
        for trial, (kind, seed, inputs, ref, scale) in enumerate(runs, 2):
            launch = backend(impl.backend).prepare(impl, problem, inputs, shape, precision, config=config,
                                                   tune=tuning, pad=case.pad)
            with launch.context():
                verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision)
            if not verdict.ok:
                return {"count": trial, "structured": structured,
                        "failed": {"trial": trial, "inputs": kind, "seed": seed,
                                   "error": error_record(verdict, problem, precision)}}
        return {"count": len(runs) + 1, "structured": structured, "failed": None}

    def _measure(self, case, problem, tensors, ref, scale) -> dict:
        import torch

        impl, shape, precision, mode = case.impl, case.shape, case.precision, case.mode
        flush = flushes(mode)
        tuning = Tuning(self.timer, self.device, mode, flush, ref, scale) if case.autotune == "on" else None
        launch = backend(impl.backend).prepare(impl, problem, tensors, shape, precision, tune=tuning, pad=case.pad)
        # The CUDA search's pick, for the extra gate trials: they launch it, not a search of their own.
        config, log = (launch.point, launch.log) if launch.log is not None else (None, None)
        with launch.context():
            launch.fn()  # JIT compilation, Triton autotuning, lazy module loading
            torch.cuda.synchronize()
            chosen = launch.chosen() if launch.chosen else launch.config
            verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision)
            error = error_record(verdict, problem, precision)
            if not verdict.ok:
                return _record(case, status="wrong", reason=verdict.message, config=chosen, autotune_log=log,
                               error=error, trials={"count": 1, "failed": {"trial": 1, "inputs": "random",
                                                                           "seed": self.seed, "error": error}})
            trials = self._trials(case, problem, config, tensors, tuning)
            if trials["failed"]:
                failed = trials["failed"]
                return _record(case, status="wrong", config=chosen, autotune_log=log, error=failed["error"],
                               trials=trials, reason=f"{failed['inputs']} inputs (trial {failed['trial']}"
                               + (f", seed {failed['seed']}" if failed["seed"] is not None else "")
                               + f"): {failed['error']['message']}")
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

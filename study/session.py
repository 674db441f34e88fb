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
from study.plan import Case, group_of, ordered
from study.problem import check_output, error_record, one_line, pad_rows
from study.timing import PAIR_CLOCK_GAP, TimerSettings, TimingConfigError, flushes, power_mix, shared_cap

SEED_STRIDE = 7919  # the extra gate trials draw seeds seed + SEED_STRIDE·t, t = 1, 2, …


def _record(case: Case, **fields) -> dict:
    impl = case.impl
    problem = catalog.ladder(impl.op).problem
    record = {
        "op": impl.op, "rung": impl.rung, "rung_index": impl.rung_index, "baseline": impl.baseline,
        "backend": impl.backend, "library": impl.library, "reference": impl.reference,
        "implementation": impl.name, "source": impl.source, "source_hash": cuda.source_hash_of(impl),
        "shape": dict(case.shape),
        "precision": case.precision.name, "dtype": case.precision.dtype, "math": impl.math_of(case.precision),
        "autotune": case.autotune, "mode": case.mode, "pad": case.pad, "status": None, "reason": "",
        "work": problem.work(case.shape, case.precision),
        "config": {}, "autotune_log": None, "error": None, "samples_ms": [], "median_ms": None,
        "min_ms": None, "q1_ms": None, "q3_ms": None, "mean_ms": None, "rel_stdev": None,
        "outliers": None, "warmup_launches": None, "timing": None, "clocks": None, "launch_bound": None,
        "steady": None, "paired": None,
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
        self._key = self._data = None  # the inputs and reference of the current group
        self._trial_key = self._trial_data = None  # those of the current correctness trial

    def _inputs(self, problem, case: Case):
        """The inputs and reference of the case's group (plan.group_of), built once for all its cases."""
        shape, precision, pad, key = case.shape, case.precision, case.pad, group_of(case)
        if key != self._key:
            self._release()
            tensors = problem.make_inputs(shape, precision, self.seed, "cuda")
            ref, scale = problem.reference(tensors, precision)
            tensors = {name: pad_rows(t, pad) for name, t in tensors.items()}
            self._key, self._data = key, (tensors, ref, scale)
        return self._data

    def _release(self) -> None:
        """Drops the last group's inputs, reference and trial inputs and hands their memory back to the driver,
        before the next group's memory is checked and drawn: a check that counted the last group's tensors as taken
        skipped a case that fits (c83: 8192×128256 FP32 softmax, 113.5 GiB needed, 21.9 GiB free beside the
        BF16 group before it, on an H200 of about 139 GiB)."""
        if self._key is None and self._trial_key is None:
            return  # released already (the memory check's, before _inputs draws the group): once a group
        import torch

        self._key, self._data = None, None
        self._trial_key, self._trial_data = None, None
        torch.cuda.empty_cache()

    def measure(self, case: Case) -> dict:
        """One record, whatever happens: skipped (with the reason), wrong (never timed),
        crashed (with the error), or ok (with samples); stamped with the GPU it ran on."""
        record = self._outcome(case)
        record["gpu"] = self.gpu
        return record

    def ready(self, case: Case):
        """The case's gated launch on the session's inputs (no extra trials, no timing): for instruments
        other than the study's timer (validate's do_bench and write-flush timings) to run exactly what the
        session measures. A RuntimeError says why the gate failed."""
        problem = catalog.ladder(case.impl.op).problem
        tensors, ref, scale = self._inputs(problem, case)
        got = self._ready(case, case.impl, case.autotune, problem, tensors, ref, scale, trials=False)
        if got["launch"] is None:
            raise RuntimeError(f"{case.impl.name}: {got['reason']}")
        return got["launch"]

    def _outcome(self, case: Case) -> dict:
        impl = case.impl
        problem = catalog.ladder(impl.op).problem
        try:
            import torch

            reason = problem.check(case.shape, case.precision) or backend(impl.backend).check(
                impl, problem, case.shape, case.precision)
            if reason is None and case.pad and not problem.paddable:
                reason = f"{problem.name}'s kernels take no leading dimensions: padded rows (pad={case.pad}) are not run"
            if reason is None and self._key != group_of(case):
                self._release()
                reason = problem.check_memory(case.shape, case.precision, torch.cuda.mem_get_info()[0],
                                              trial_sets=self.settings.gate_trials)
            if reason:
                return _record(case, status="skipped", reason=reason)
            tensors, ref, scale = self._inputs(problem, case)
            return self._measure(case, problem, tensors, ref, scale)
        except TimingConfigError as exc:
            return _record(case, status="skipped", reason=f"timing configuration: {exc}")
        except Unsupported as exc:
            return _record(case, status="skipped", reason=str(exc))
        except Exception as exc:
            return _record(case, status="crashed", reason=one_line(exc), traceback=traceback.format_exc(limit=6))

    def _trial_inputs(self, problem, case: Case, device) -> list[tuple]:
        """(kind, seed, inputs, reference, scale) of the extra gate trials, built once per group
        (plan.group_of) and kept while its cases run."""
        shape, precision, pad, key = case.shape, case.precision, case.pad, group_of(case)
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
        runs = self._trial_inputs(problem, case, next(iter(tensors.values())).device)
        structured = any(kind == "structured" for kind, *_ in runs)
        for trial, (kind, seed, inputs, ref, scale) in enumerate(runs, 2):
            launch = backend(impl.backend).prepare(impl, problem, inputs, shape, precision, config=config,
                                                   tune=tuning, pad=case.pad)
            with launch.context():
                verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision, launch.poison)
            if not verdict.ok:
                return {"count": trial, "structured": structured,
                        "failed": {"trial": trial, "inputs": kind, "seed": seed,
                                   "error": error_record(verdict, problem, precision)}}
        return {"count": len(runs) + 1, "structured": structured, "failed": None}

    def _ready(self, case, impl, autotune: str, problem, tensors, ref, scale, trials: bool = True) -> dict:
        """Prepare ``impl`` for the case's shape and precision (its own search where ``autotune`` is on),
        launch it once (compilation, Triton's search), gate it and, with ``trials``, run the extra gate
        trials. Returns the launch and its record's fields; without a launch, the fields of a wrong
        record (never timed)."""
        import torch

        tuning = Tuning(self.timer, case.mode, ref, scale) if autotune == "on" else None
        launch = backend(impl.backend).prepare(impl, problem, tensors, case.shape, case.precision, tune=tuning,
                                               pad=case.pad)
        # The CUDA search's pick, for the extra gate trials: they launch it, not a search of their own.
        config, log = (launch.point, launch.log) if launch.log is not None else (None, None)
        with launch.context():
            launch.fn()  # JIT compilation, Triton autotuning, lazy module loading
            torch.cuda.synchronize()
            chosen = launch.chosen() if launch.chosen else launch.config
            verdict = check_output(launch.fn, launch.out, problem, ref, scale, case.precision, launch.poison)
        error = error_record(verdict, problem, case.precision)
        fields = {"config": chosen, "autotune_log": log, "error": error}
        if not verdict.ok:
            return {"launch": None, **fields, "status": "wrong", "reason": verdict.message,
                    "trials": {"count": 1, "failed": {"trial": 1, "inputs": "random", "seed": self.seed, "error": error}}}
        if not trials:
            return {"launch": launch, **fields}
        with launch.context():
            done = self._trials(case, problem, config, tensors, tuning)
        if done["failed"]:
            failed = done["failed"]
            return {"launch": None, **fields, "status": "wrong", "error": failed["error"], "trials": done,
                    "reason": f"{failed['inputs']} inputs (trial {failed['trial']}"
                              + (f", seed {failed['seed']}" if failed["seed"] is not None else "")
                              + f"): {failed['error']['message']}"}
        return {"launch": launch, **fields, "trials": done}

    def _timed(self, launch, case, problem, ref, scale) -> dict:
        """Warm up, settle (study.timer.Timer.settle) and, in graph mode, capture: what the samples run."""
        flush = flushes(case.mode)
        warm, first = self.timer.warm_up(launch.fn, flush)
        if first * 1e-3 > self.settings.timeout_s:
            raise TimingConfigError(f"the timeout ({self.settings.timeout_s} s) is shorter than one "
                                    f"sample ({first * 1e-3:.3f} s)")
        steady = self.timer.settle(launch.fn, first, flush)
        fn, per_call = launch.fn, 1
        if case.mode == "graph":
            graph, per_call = self.timer.capture(launch.fn, first)
            # A launch outside the capture stream records nothing and only warns: the
            # replay must produce the output by itself before it is timed.
            replayed = check_output(graph.replay, launch.out, problem, ref, scale, case.precision,
                                    launch.poison)
            if not replayed.ok:
                raise RuntimeError(f"the CUDA graph replay did not produce a correct output "
                                   f"({replayed.message}): a launch escaped the capture stream")
            fn = graph.replay
        return {"fn": fn, "per_call": per_call, "first": first, "warm": warm, "steady": steady, "flush": flush}

    def _measure(self, case, problem, tensors, ref, scale) -> dict:
        impl = case.impl
        mine = self._ready(case, impl, case.autotune, problem, tensors, ref, scale)
        launch = mine.pop("launch")
        if launch is None:
            return _record(case, **mine)
        paired = None
        with launch.context():
            run = self._timed(launch, case, problem, ref, scale)
            if case.paired:
                sampling, paired = self._paired(case, problem, tensors, ref, scale, run)
            else:
                sampling = self.timer.measure(run["fn"], run["first"], run["flush"], run["per_call"], mode=case.mode)
            # Checked again after the timing: a kernel whose work stops once the gate has passed (an
            # output cached, a loop skipped after its first launches) is caught here, never ranked.
            again = check_output(run["fn"], launch.out, problem, ref, scale, case.precision, launch.poison)
        # Kept to the nanosecond: the events tick in 32 ns steps on the H200, and 17 digits per sample made
        # results files three times larger for nothing. A graph replay's time is divided by its launches,
        # whose tick is 32 ns / N: those keep picoseconds.
        digits = 6 if run["per_call"] == 1 else 9
        samples = [round(s, digits) for s in sampling["samples"]]
        if not samples:
            raise RuntimeError("every sample was discarded as throttled before the timeout; "
                               f"clocks seen: {sampling['clocks']}")
        summary = stats.summarize(samples)
        status, reason = "ok", ""
        if not again.ok:
            status, reason = "wrong", f"the output changed after the gate: {again.message}"
        else:
            reason = impossible(problem.work(case.shape, case.precision), summary.median, self.device,
                                impl.math_of(case.precision), case.mode)
            status = "impossible" if reason else "ok"
        return _record(case, status=status, reason=reason, **mine, samples_ms=samples, median_ms=summary.median,
                       min_ms=summary.min, q1_ms=summary.q1, q3_ms=summary.q3, mean_ms=summary.mean,
                       rel_stdev=summary.rel_stdev, outliers=summary.outliers, warmup_launches=run["warm"],
                       timing=sampling["timing"], clocks=sampling["clocks"], steady=run["steady"], paired=paired,
                       launch_bound=(None if self.launch_overhead_ms is None
                                     else summary.median < 2 * self.launch_overhead_ms))

    def _paired(self, case, problem, tensors, ref, scale, run) -> tuple[dict, dict]:
        """Alternating rounds of the case's implementation and its op's reference (study.timer.Timer.paired),
        the reference ready, gated and settled as the implementation was: (the implementation's sampling, the
        pairing's record: raw figures only; the clock spread and power mix are derived, study.metrics). A pair
        one of whose sides ran more than PAIR_CLOCK_GAP above the clock it settled at alone (study.timing.power_mix),
        or whose interleaved rounds ran at the power cap (study.timing.shared_cap), is timed again with each side
        settled before each batch, and that ratio is the headline (docs/method.md §8); its interleaved rounds
        end as soon as they show it (``min_rounds`` at the earliest), not at the timeout."""
        reference = catalog.reference(case.impl.op)
        if reference is None:
            raise RuntimeError(f"{case.impl.op} has no reference baseline to pair with")
        autotune = case.autotune if reference.target.tunable else "n/a"
        theirs = self._ready(case, reference, autotune, problem, tensors, ref, scale, trials=False)
        if theirs["launch"] is None:
            raise RuntimeError(f"the reference {reference.name} failed the gate: {theirs['reason']}")
        with theirs["launch"].context():
            other = self._timed(theirs["launch"], case, problem, ref, scale)
            fns, firsts, per_calls = (run["fn"], other["fn"]), (run["first"], other["first"]), (run["per_call"],
                                                                                             other["per_call"])
            steadies = (run["steady"], other["steady"])

            def lent(clocks, reference_clocks) -> bool:  # the rounds so far ran at clocks neither holds alone
                return ((power_mix(steadies, (clocks, reference_clocks))["borrowed"] or 0) > PAIR_CLOCK_GAP
                        or shared_cap((clocks, reference_clocks)))

            pairing = self.timer.paired(fns, firsts, run["flush"], per_calls, stop_early=lent)
            interleaved = None
            if pairing["ratios"] and lent(pairing["clocks"], pairing["reference_clocks"]):
                # Interleaved, one ran above the clock it holds in a loop of its own, on headroom the other
                # lent it, or both shared the cap's one clock. The headline is the rounds in which each kernel
                # is settled again before its batch; the interleaved pairing stays beside it.
                interleaved = {"ratio": pairing["ratio"], "ci": pairing["ci"], "rounds": pairing["rounds"],
                               "clocks": pairing["clocks"], "reference_clocks": pairing["reference_clocks"]}
                pairing = self.timer.paired(fns, firsts, run["flush"], per_calls, settle_each=True)
        if pairing["ratio"] is None:
            raise RuntimeError(f"{pairing['rounds']} round(s) kept before the timeout, the rest discarded as "
                               "throttled: no A-first round with a B-first one to pair; clocks seen: "
                               f"{pairing['clocks']}, the reference's {pairing['reference_clocks']}")
        mine, theirs_discarded = pairing["discarded_throttled"]
        sampling = {"samples": pairing["samples"], "clocks": pairing["clocks"],
                    "timing": {"mode": case.mode, "stop": pairing["stop"], "above_target": pairing["stop"] != "ci",
                               "rounds": pairing["rounds"], "kept": len(pairing["samples"]),
                               "discarded_throttled": mine, "launches_per_sample": run["per_call"],
                               "wall_s": pairing["wall_s"]}}
        paired = {"reference": reference.name, "reference_autotune": autotune, "ratio": pairing["ratio"],
                  "ci": pairing["ci"], "rounds": pairing["rounds"], "ratios": pairing["ratios"], "stop": pairing["stop"],
                  "reference_median_ms": stats.summarize(pairing["reference_samples"]).median,
                  "reference_discarded_throttled": theirs_discarded, "reference_clocks": pairing["reference_clocks"],
                  "reference_steady": other["steady"], "settle_each": pairing["settle_each"]}
        if interleaved:
            paired.update(interleaved=interleaved, settled_mhz=pairing["settled_mhz"])
        return sampling, paired


def impossible(work: dict, median_ms: float, device, math: str, mode: str) -> str:
    """Why a median cannot be: FLOP/s above the theoretical peak of the math mode (at the max SM clock),
    or, cold, bytes/s above the theoretical memory bandwidth (the data came from HBM); "" when it can.
    Such a figure is recorded with status ``impossible``, shown and never ranked. Where both are
    exceeded, a memory-bound op's reason is its bytes, a compute-bound op's its FLOP/s."""
    seconds = median_ms * 1e-3
    reasons = []
    peak = device.peak_flops(math) if device is not None else None
    if peak and work.get("flops") and work["flops"] / seconds > peak:
        reasons.append(f"{work['flops'] / seconds / 1e9:,.0f} GFLOPS is above the theoretical peak of {math}, "
                       f"{peak / 1e9:,.0f} GFLOPS: work left out of the timed launch")
    bandwidth = device.memory_peak_bytes if device is not None and mode == "cold" else None
    if bandwidth and work.get("bytes") and work["bytes"] / seconds > bandwidth:
        reasons.insert(len(reasons) if work.get("bound") != "memory" else 0,
                       f"{work['bytes'] / seconds / 1e9:,.0f} GB/s from a flushed L2 is above the memory's "
                       f"theoretical {bandwidth / 1e9:,.0f} GB/s: work left out of the timed launch")
    return reasons[0] if reasons else ""


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

"""The compare flow on the GPU: the ceilings and the environment, every case of a plan measured in a
worker process (or one per GPU), journaled as it completes (:mod:`study.measure`), then the report.
``compare``, ``sweep``, ``align``, ``rerun`` and the cuBLAS study's steps all end here.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

from study import ceilings, diff, hardware, metrics, pages, plan, results
from study.keys import CaseKey
from study.measure import LaneDead, run_compare, run_interruptibly
from study.paths import report_dir
from study.report.labels import reason_line
from study.report.tables import summary_table
from study.select import UsageError
from study.session import Session, crashed_record
from study.shards import shard_cases
from study.sweep import eta_text
from study.timing import TimerSettings, TimingConfigError
from study.worker import WorkerPool, start_all


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run measures and where it writes: the timer's settings, the results folder (default
    ``reports/<gpu>/``) and file stem, the inputs' seed, a worker per case (``isolate``), a fresh start
    instead of resuming, the GPUs (several: one worker each), the shard (i, n), whether the best rung of
    each series is timed again paired with the reference (``pair_best``, for the report's best-rung
    table: study.plan.best_pairs), the command the results record (default: this process's) and the
    suites its shapes came from (study.suites; the page adds their verdicts)."""

    settings: TimerSettings
    out: Path | None = None
    name: str = "compare"
    seed: int = 0
    isolate: bool = True
    fresh: bool = False
    gpus: list | None = None
    shard: tuple[int, int] | None = None
    what: str = ""
    argv: list | None = None
    pair_best: bool = True
    suites: tuple = ()


PRIOR_DAMPING_S = 60.0  # seconds of priors the first finished cases are weighed against (one slow case moves little)


def priors(folder: Path) -> dict:
    """The median wall time of a kind of case in the results files under ``folder`` (this GPU's committed
    reports): what the time left is first estimated from. Keys: (op, backend, autotune); (op, backend,
    autotune, shape, precision), the same at one shape (a GEMM at 8192³ takes longer than the op's
    typical case); and ("paired", op, backend), a case timed in rounds with the reference (many times an
    unpaired one at the power cap). Read raw (no figures derived); a file that is not a results file is
    passed over."""
    seen: dict = {}
    for _, doc in results.documents(folder):
        for m in doc.get("measurements") or []:
            if not isinstance(m, dict) or not isinstance(m.get("wall_s"), (int, float)):
                continue
            op, backend = m.get("op"), m.get("backend")
            if m.get("paired"):
                seen.setdefault(("paired", op, backend), []).append(m["wall_s"])
                continue
            seen.setdefault((op, backend, m.get("autotune")), []).append(m["wall_s"])
            try:
                key = CaseKey.of_record(m)
            except (KeyError, TypeError, AttributeError):  # a record without its case's fields: its kind only
                continue
            seen.setdefault((op, backend, key.autotune, key.shape, key.precision), []).append(m["wall_s"])
    return {key: statistics.median(values) for key, values in seen.items()}


def prior_of(case, known: dict):
    """A case's prior (:func:`priors`): paired, at its shape, else of its kind; None where none is known."""
    op, backend = case.impl.op, case.impl.backend
    if case.paired:
        return known.get(("paired", op, backend))
    return (known.get((op, backend, case.autotune, case.shape_text, case.precision.name))
            or known.get((op, backend, case.autotune)))


class Progress:
    """One line per measured case, with the time left: the planned cases' priors (:func:`priors`, the
    median time of such a case in this GPU's committed results) and those of the paired cases the run
    will add once its plan is measured (``pairs``: study.plan.expected_pairs), scaled by how this run
    compares with them so far, damped by PRIOR_DAMPING_S so that the first cases cannot swing it; without
    priors, this run's pace. Cases resumed from an earlier run do not count towards either."""

    def __init__(self, cases=(), known: dict | None = None, pairs=()):
        self.started = time.perf_counter()
        self.first = None
        known = known or {}
        self.planned = len(cases)
        costs = {c.key: prior_of(c, known) for c in cases}
        pair_costs = [prior_of(c, known) for c in pairs]
        found = [v for v in costs.values() if v]
        self.typical = statistics.median(found) if found else None  # a case no prior covers, or one added later
        self.cost = {key: value or self.typical for key, value in costs.items()} if found else {}
        found_pairs = [v for v in pair_costs if v]
        self.pair_typical = statistics.median(found_pairs) if found_pairs else self.typical
        self.pair_cost = [v or self.pair_typical for v in pair_costs]  # the expected pairs not measured yet
        self.spent = 0.0  # the priors of the cases this run has measured

    def left(self, n: int, total: int, elapsed: float) -> float:
        """Seconds left after ``n`` of ``total`` cases, ``elapsed`` into this run: the planned cases not
        measured yet and the expected pairs (once the run has added them, they are among ``total``)."""
        extended = total > self.planned
        planned_left = 0 if extended else total - n
        pairs_left = total - n if extended else len(self.pair_cost)
        if self.typical is None:
            return elapsed / max(n - self.first, 1) * (planned_left + pairs_left)
        # the cases not measured yet, at their priors' mean (some were resumed from an earlier run and
        # never come: their count, total - n, says how many are left, not which)
        mean = statistics.fmean(self.cost.values()) if self.cost else self.typical
        pair_mean = statistics.fmean(self.pair_cost) if self.pair_cost else self.pair_typical
        pace = (elapsed + PRIOR_DAMPING_S) / (self.spent + PRIOR_DAMPING_S)
        return pace * (mean * planned_left + pair_mean * pairs_left)

    def __call__(self, n, total, case, record):
        if self.first is None:
            self.first = n - 1
        if record["status"] == "ok":
            value = metrics.headline({**record, **metrics.derive(record, {})})
            what = f"{value:,.0f} {metrics.unit(record['work']['bound'])}  ({record['median_ms']:.4f} ms)"
        else:
            what = f"{record['status']}: {reason_line(record['reason'])[:160]}"
        if case.key in self.cost:
            self.spent += self.cost.pop(case.key)
        elif case.paired and self.pair_cost:  # a pair the run added to its plan: one of those expected
            self.spent += self.pair_cost.pop() or 0.0
        else:
            self.spent += (self.pair_typical if case.paired else self.typical) or 0.0
        left = self.left(n, total, time.perf_counter() - self.started)
        say(f"[{n:>{len(str(total))}}/{total} {eta_text(left):>6} left] {case.label:<72} {what}")


def pool_measure(pool, lanes: int = 1):
    """Measure a case in ``pool``'s worker; every record names the GPU, also a crashed one. In a
    run of several lanes a worker that cannot start hands its work to the others (LaneDead)."""
    def measure(case):
        record = pool.measure(case, lambda why: crashed_record(case, why))
        if pool.dead and lanes > 1:
            raise LaneDead(f"GPU {pool.gpu_index}: {record['reason']}")
        if record.get("gpu") is None and pool.facts:
            record["gpu"] = {"index": pool.facts.get("index"), "uuid": pool.facts.get("uuid")}
        return record

    return measure


def _environment(device, options: RunOptions, cases) -> dict:
    env = results.environment(device, options.settings, options.argv or results.python_argv())
    for per_case in ("mode", "flush_l2"):  # each record carries its own mode
        env["timer"].pop(per_case)
    env.update(modes=sorted({c.mode for c in cases}), seed=options.seed,
               shard=list(options.shard) if options.shard else None)
    if options.suites:  # the page then adds each op's suite verdict (study/report/suite.py)
        env["suites"] = list(options.suites)
    return env


def run(cases: list, options: RunOptions, finish: Callable | None = None) -> tuple[int, dict | None]:
    """Measure ``cases`` and write the results and their page (``finish(doc, json_path, md_path)`` in
    place of the comparison report: a sweep's or an align run's page). Returns (exit code: 0, 1 when a
    case was wrong or crashed, 130 when interrupted; the document, or None when interrupted)."""
    settings, gpus = options.settings, options.gpus
    if gpus:
        import torch

        torch.cuda.set_device(gpus[0])  # the environment describes a GPU the run uses
    device = hardware.current_device()
    json_path, md_path = results.default_paths(options.out or report_dir(device.slug), options.name)
    known = priors(report_dir(device.slug))
    pools: list = []

    def work() -> dict:
        if gpus:
            return work_on_gpus()
        clocks = hardware.Clocks()
        measured, source = ceilings.load_or_measure(device, settings, clocks)
        say(f"ceilings: {source}")
        overhead = ceilings.launch_overhead_ms(device, settings, clocks)
        env = _environment(device, options, cases)
        env["ceilings"] = {**ceilings.summary(measured), "source": source, "measured_utc": measured.get("utc")}
        env["launch_overhead_ms"] = overhead
        env["clocks_available"] = clocks.available
        say(f"{len(cases)} cases on {device.name}: {len({c.impl.name for c in cases})} implementations, "
            f"{len({(c.impl.op, json.dumps(c.shape)) for c in cases})} shapes, "
            f"precisions {', '.join(sorted({c.precision.name for c in cases}))}, {options.what}, "
            f"modes {', '.join(env['modes'])}; empty-kernel launch {overhead * 1e3:.2f} µs; results to {json_path}")
        if not options.isolate:
            import torch

            gpu = {"index": torch.cuda.current_device(), "uuid": hardware.nvml_facts()["uuid"]}
            measure = Session(settings, device, seed=options.seed, clocks=clocks, launch_overhead_ms=overhead,
                              gpu=gpu).measure
        else:
            pools.append(WorkerPool(settings, seed=options.seed, launch_overhead_ms=overhead))
            measure = pool_measure(pools[0])
        return run_compare(cases, env, json_path, measure, progress=progress(), fresh=options.fresh,
                           say=say, extension=pairing)

    def progress() -> Progress:
        return Progress(cases, known, plan.expected_pairs(cases) if options.pair_best else ())

    def pairing(records: list[dict]) -> list:
        """The best rung of each series timed again, paired with the reference, in the same file."""
        pairs = plan.best_pairs(cases, records) if options.pair_best else []
        if pairs:
            say(f"pairing the best rung of each series with the reference: {len(pairs)} more cases")
        return pairs

    def work_on_gpus() -> dict:
        pools.extend(WorkerPool(settings, seed=options.seed, gpu_index=g) for g in gpus)
        say(f"starting {len(pools)} worker{'s' if len(pools) > 1 else ''} on GPU {', '.join(map(str, gpus))} "
            f"(each measures its own ceilings and launch overhead)")
        ready = start_all(pools, say)
        if not ready:
            raise UsageError(f"no worker could start on GPU {', '.join(map(str, gpus))}")
        models = sorted({p.facts["name"] for p in ready})
        if len(models) > 1:
            raise UsageError(f"--gpus spans {' and '.join(models)}: peaks and ceilings differ by model; run each "
                             f"model on its own, or shard and `merge --allow-mixed`")
        facts = [p.facts for p in ready]
        env = _environment(device, options, cases)
        env.update(gpus=facts, ceilings=facts[0]["ceilings"], launch_overhead_ms=facts[0]["launch_overhead_ms"])
        say(f"{len(cases)} cases on {len(ready)} {models[0]}, {options.what}; results to {json_path}")
        return run_compare(cases, env, json_path, [pool_measure(p, len(ready)) for p in ready],
                           progress=progress(),
                           fresh=options.fresh, say=say, extension=pairing)

    def cleanup() -> None:
        for pool in pools:
            pool.close(kill=True, final=True)

    doc, code = run_interruptibly(work, json_path, len(cases), cleanup, say)
    if doc is None:
        return code, None
    if finish is None:
        pages.write_report(doc, md_path)
        print(summary_table(doc))
        say(f"\nwrote {json_path} and {md_path}")
    else:
        finish(doc, json_path, md_path)
    return (1 if any(m["status"] in ("wrong", "crashed", "impossible") for m in doc["measurements"]) else 0), doc


def sharded(cases: list, shard: tuple[int, int] | None, name: str | None, stem: str) -> tuple[list, str]:
    """The cases of shard (i, n) and the file stem it writes (``<stem>-shard-i-of-n`` unless named)."""
    if not shard:
        return cases, name or stem
    index, count = shard
    return shard_cases(cases, index, count), name or f"{stem}-shard-{index}-of-{count}"


def rerun_plan(doc: dict):
    """The cases, timer settings and seed of a results file, to measure them again exactly."""
    # An upgraded (schema 1/2) file's plan keys predate precisions and modes; its records' keys do not.
    keys = [CaseKey.of_record(m) for m in doc["measurements"]] if doc.get("upgraded_from") or not doc.get("plan") \
        else [CaseKey.parse(k) for k in doc["plan"]]
    cases = []
    for key in keys:
        try:
            cases.append(plan.case_of(key))
        except KeyError:
            raise UsageError(f"{key.implementation} is not an implementation of this version of the study") from None
    timer = doc["environment"]["timer"]
    fields = {f: timer[f] for f in TimerSettings.__dataclass_fields__ if f in timer}
    try:
        settings = TimerSettings(**fields)
    except TimingConfigError as exc:
        raise UsageError(f"the file's timer settings: {exc}") from None
    return cases, settings, doc["environment"].get("seed", 0)


def rerun(old: dict, planned: tuple, source: Path, out: Path) -> int:
    """Measure the cases of ``old`` (read from ``source``; ``planned``: its :func:`rerun_plan`) again into
    ``out``, then print the diff."""
    cases, settings, seed = planned
    code, new = run(cases, RunOptions(settings, out=out.parent, name=out.stem, seed=seed, what=f"rerun of {source}",
                                      pair_best=False))  # the file's own plan: its paired cases are in it
    if new is None:
        return code
    pairs = diff.pair_runs(old, new)
    print(diff.terminal(old, new, pairs, diff.DEFAULT_THRESHOLD))
    return code

"""Cases: what one measurement measures, and the plan of a run — the product of its named axes
(shapes × precisions × timing modes × implementations × autotune settings), baselines always in.

A case's key (:class:`study.keys.CaseKey`) is how the compare flow journals and resumes it, how a
worker receives it and how ``rerun`` reads a file's plan back (:func:`case_of`).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

from study import catalog, keys
from study.precision import Precision, select
from study.registry import Implementation, implementations_of
from study.timing import MODES

AUTOTUNE_MODES = ("off", "on", "both")


@dataclasses.dataclass(frozen=True)
class Case:
    impl: Implementation
    shape: dict
    precision: Precision
    autotune: str  # "off", "on", or "n/a" (a baseline without a search of its own)
    mode: str = "cold"
    pad: int = 0   # rows of every matrix this many elements further apart than their length (align)
    paired: bool = False  # timed in rounds alternating with its op's reference (study.timer.Timer.paired)

    @property
    def shape_text(self) -> str:
        return keys.shape_text(self.shape)

    @property
    def case_key(self) -> keys.CaseKey:
        return keys.CaseKey(self.impl.name, self.shape_text, self.precision.name, self.autotune, self.mode, self.pad,
                            self.paired)

    @property
    def key(self) -> str:
        """Identifies the case across runs (resuming matches on it)."""
        return self.case_key.text

    @property
    def label(self) -> str:
        return self.case_key.label


def case_of(key: keys.CaseKey | str) -> Case:
    """The case a key names, in this version of the study: a KeyError names an implementation it no
    longer has, a ValueError a shape or precision its op does not take."""
    key = keys.CaseKey.parse(key) if isinstance(key, str) else key
    impl = catalog.implementation(key.implementation)
    problem = catalog.ladder(impl.op).problem
    return Case(impl, problem.parse_shape(key.shape), problem.precision(key.precision), key.autotune, key.mode,
                key.pad, key.paired)


def plan(ops: Iterable[str], shapes: dict | None = None, precisions: dict | None = None,
         backends: Iterable[str] | None = None, rungs: Iterable[str] | None = None,
         autotune: str = "off", modes: Iterable[str] | None = None, paired: bool = False) -> list[Case]:
    """The product of the named axes: shapes × precisions × timing modes × implementations ×
    autotune modes. Baselines are always included so that × ref is defined; with ``paired`` every
    rung is timed in rounds alternating with the reference.

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
        lad = catalog.ladder(op)
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
                        if not rung_wanted(impl.rung, impl.rung_index, wanted_rungs):
                            continue
                        cases.extend(Case(impl, shape, precision, tune, mode, paired=paired) for tune in tunes)
    return cases


def rung_wanted(key: str, index: int, wanted) -> bool:
    """Whether ``--rung`` names the rung (by its key or ``vN``); every rung when it names none."""
    return not wanted or bool({key, f"v{index}"} & set(wanted))


def best_pairs(cases: list[Case], records: list[dict]) -> list[Case]:
    """The paired cases a report's best-rung table needs: per op, shape, precision and timing mode, the
    fastest ok rung of each series (a backend, or a backend and a math mode not the precision's own:
    3xTF32 in FP32), by the figures of ``records`` (the unpaired run of ``cases``), timed again in
    rounds alternating with the reference. Cases already paired are left out. Every timing mode and
    padding is paired: the best-rung table reads the first mode, the paired table shows them all."""
    by_key = {c.key: c for c in cases}
    best: dict = {}
    for m in records:
        case = by_key.get(m.get("case"))
        if case is None or case.paired or case.impl.rung is None or m["status"] != "ok" or not m.get("median_ms"):
            continue
        series = series_of(case)
        if series not in best or m["median_ms"] < best[series][1]:
            best[series] = (case, m["median_ms"])
    return [dataclasses.replace(case, paired=True) for case, _ in best.values()]


def series_of(case: Case) -> tuple:
    """The series :func:`best_pairs` pairs the fastest rung of: op, shape, precision, timing mode, padding,
    backend and math mode."""
    return (case.impl.op, case.shape_text, case.precision.name, case.mode, case.pad, case.impl.backend,
            case.impl.math_of(case.precision))


def expected_pairs(cases: list[Case]) -> list[Case]:
    """One case of each series :func:`best_pairs` will pair once ``cases`` are measured (at most that many:
    a series with no ok rung pairs none), paired: what the time left counts before the pairing is planned."""
    heads: dict = {}
    for case in cases:
        if not case.paired and case.impl.rung is not None:
            heads.setdefault(series_of(case), dataclasses.replace(case, paired=True))
    return list(heads.values())


def ordered(cases: list[Case]) -> list[Case]:
    """Grouped by op, shape, precision and padding (inputs and reference are built once per
    group), the baselines first in each group."""
    order = sorted(range(len(cases)), key=lambda i: (cases[i].impl.op, tuple(cases[i].shape.values()),
                                                     cases[i].precision.name, cases[i].pad,
                                                     cases[i].impl.rung is not None, i))
    return [cases[i] for i in order]


def group_of(case: Case) -> tuple:
    """The unit that stays whole on one GPU or shard: op, shape, precision (and padding: a rung and
    its reference at the same leading dimensions)."""
    return (case.impl.op, case.shape_text, case.precision.name, case.pad)

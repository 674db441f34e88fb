"""A suite's verdict against the study's goals (docs/suites.md, Goals): per op the geometric mean the best
handwritten CUDA rung per shape must reach over the suite (÷ the reference), the ratio every shape must
reach, and the geometric mean of the best Triton twin. The series judged at a precision is a backend's
verdict series where it has one (FFMA, or 3xTF32 where its gate error is at most the reference's), else
the backend itself. Each shape below the per-shape goal is named with its best rung, and with what the
Nsight Compute profiles saved beside the report (``python -m study profile``, a ``profiles/`` folder next
to the report's or one level up) say of it there: the kernels a launch ran and the main one's limits."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from study.report.labels import num


@dataclasses.dataclass(frozen=True)
class Goal:
    geomean: float           # best CUDA rung per shape ÷ the reference, geometric mean over the suite
    worst: float | None      # every shape's best CUDA rung ÷ the reference at least this
    triton: float | None     # best Triton twin per shape ÷ the reference, geometric mean over the suite


# The GEMM ladders' goals (any shape a model brings); softmax's and GEMV's geometric means. Their other
# goals — the copy ceiling, the Triton twin against the best CUDA rung — are read from their reports'
# ceiling columns, not judged here.
GOALS = {**{op: Goal(0.95, 0.75, 0.9) for op in ("sgemm", "hgemm", "bgemm", "gemm_bias_relu")},
         "softmax": Goal(1.1, None, None), "sgemv": Goal(1.0, None, None)}
VERDICT = "where error ≤ ref"  # the mark of a verdict series (study/report/suite.py, _accurate)


def judged(series_keys) -> dict:
    """{(precision, series): backend label} of the series the goals judge: per precision and backend its
    verdict series if it has one, else the plain one (a math mode's own series, 3xTF32, is not judged)."""
    keys = list(series_keys)
    verdicts = {(p, s.split(" (")[0]) for p, s in keys if VERDICT in s}
    return {(p, s): s.split(" (")[0] for p, s in keys
            if VERDICT in s or (" (" not in s and (p, s) not in verdicts)}


def _profiles(folder: Path, op: str) -> list[tuple[Path, dict, dict]]:
    """(CSV, what was profiled, its summary) of each saved profile of the op beside the report."""
    from study.profile_table import load  # here: profile_table imports study.report.labels, whose package imports this

    found = []
    for where in (folder / "profiles", folder.parent / "profiles"):
        for path in sorted(where.glob(f"ncu-{op}-*.csv")):
            try:
                meta, summary = load(path)
            except ValueError:
                continue  # not a raw page (a source page is summed by `profile --source`)
            found.append((path, meta, summary))
    return found


def _evidence(path: Path, meta: dict, s: dict, folder: Path) -> str:
    ran = ", ".join(f"`{k['kernel']}` {num(k['ms'], '.4f')}" for k in s["sequence"])
    tensor = "" if s["tensor_pipe_pct"] is None else f", tensor pipe {s['tensor_pipe_pct']:.1f} %"
    stall = "" if s["top_stall"] is None else f", top stall {s['top_stall']} {s['top_stall_cycles']:.2f} cycles/issue"
    link = Path("..") / path.parent.name / path.name if path.parent != folder / "profiles" else Path("profiles") / path.name
    return (f"`{meta.get('implementation')}` ([ncu]({link.as_posix()})), ms a kernel in launch order: {ran}; the "
            f"longest in all, `{s['kernel']}`: issue active "
            f"{num(s['issue_active_pct'], '.1f')} %{stall}, DRAM {num(s['dram_pct'], '.1f')} %{tensor}, "
            f"occupancy achieved {num(s['occupancy_achieved_pct'], '.1f')} %")


def lines(records: dict, op: str, folder: Path, geomean) -> list[str]:
    """The goals' lines for a suite section: each judged series' geometric mean against its goal, the shapes
    below the per-shape goal (best rung, × reference), and the saved profiles at those shapes."""
    goal = GOALS.get(op)
    if goal is None:
        return []
    out, below = [], set()
    for (precision, series), backend in sorted(judged(records).items()):
        best_of = records[(precision, series)]
        target = goal.geomean if backend == "CUDA" else goal.triton if backend == "Triton" else None
        mean = geomean(m["x_ref"] for m in best_of.values())
        if target is None or mean is None:
            continue
        line = f"- {series} {precision}: geometric mean {mean:.3f}× (goal ≥ {target}×: {'met' if mean >= target else 'missed'})"
        if backend == "CUDA" and goal.worst is not None:
            low = sorted((m["x_ref"], shape) for shape, m in best_of.items() if m["x_ref"] < goal.worst)
            line += (f"; every shape ≥ {goal.worst}×: " + ("met" if not low else f"missed at {len(low)} of {len(best_of)}: "
                     + ", ".join(f"{shape} {x:.3f}× ({best_of[shape]['rung']})" for x, shape in low)))
            below |= {(shape, precision) for _, shape in low}
        out.append(line)
    if not out:
        return []
    out = [f"Against the suite goals (docs/suites.md, Goals): best CUDA rung per shape ÷ the reference, "
           f"geometric mean ≥ {goal.geomean}×" + (f" and every shape ≥ {goal.worst}×" if goal.worst else "")
           + (f"; best Triton twin, geometric mean ≥ {goal.triton}×" if goal.triton else "") + ":", "", *out, ""]
    if below:
        def at(meta):  # the (shape, precision) cases below the goal a profile was taken at (None: the op's default)
            shape = (meta.get("shape") or "").replace("x", "×")
            return {(sh, p) for sh, p in below if sh == shape and meta.get("precision") in (None, p)}

        profiled = [(path, meta, s, at(meta)) for path, meta, s in _profiles(folder, op) if at(meta)]
        out += ["Nsight Compute at the shapes below the per-shape goal, from the profiles saved beside this report:", ""]
        out += [f"- {shape} {precision}: {_evidence(path, meta, s, folder)}"
                for path, meta, s, cases in profiled for shape, precision in sorted(cases)]
        missing = sorted(below - set().union(*(cases for *_, cases in profiled)))
        if missing:
            out.append("- not profiled yet: " + ", ".join(f"{shape} {precision}" for shape, precision in missing))
        out.append("")
    return out

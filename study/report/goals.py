"""A suite's verdict against the study's goals (docs/suites.md, Goals): per op the geometric mean the best
handwritten CUDA rung per shape must reach over the suite (÷ the reference), the ratio every shape must
reach, and the geometric mean of the best Triton twin. The series judged at a precision is a backend's
verdict series where it has one (FFMA, or 3xTF32 where its gate error is at most the reference's), else
the backend itself. A shape the series did not run misses the per-shape goal and is counted beside the
geometric mean, which is over the shapes that ran. Each shape below the per-shape goal, and the lowest
shapes of a missed geometric mean, are named with their best rung and with what the Nsight Compute
profiles saved beside the report (``python -m study profile``, a ``profiles/`` folder next to the
report's or one level up) say of them there: the kernels the launch ran, in order, the limits of the
rung's own kernel, and the launch's DRAM bytes against the op's minimum."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from study.report.labels import VERDICT_MARK, num, size
from study.stats import geomean


@dataclasses.dataclass(frozen=True)
class Goal:
    geomean: float           # best CUDA rung per shape ÷ the reference, geometric mean over the suite
    worst: float | None      # every shape's best CUDA rung ÷ the reference at least this
    triton: float | None     # best Triton twin per shape ÷ the reference, geometric mean over the suite


# The GEMM ladders' goals (any shape a model brings); softmax's and GEMV's geometric means, their other goals in
# MEMORY below.
GOALS = {**{op: Goal(0.95, 0.75, 0.9) for op in ("sgemm", "hgemm", "bgemm", "gemm_bias_relu")},
         "softmax": Goal(1.1, None, None), "sgemv": Goal(1.0, None, None)}


@dataclasses.dataclass(frozen=True)
class MemoryGoal:
    """The memory-bound ops' goals beside the geometric mean (issue "Memory-bound ops at any shape")."""
    large_bytes: int = 64 << 20   # a shape moving at least this many bytes ...
    large_ceiling: float = 80.0   # ... has its best CUDA rung at this % of the size-matched copy ceiling or more
    large_ratio: float = 1.0      # ... and at this × the reference or more
    triton: float = 0.9           # best Triton twin ÷ best CUDA rung per shape, geometric mean
    rows_ceiling: float | None = None  # softmax: this % of the copy ceiling at the long and vocabulary rows


MEMORY = {"softmax": MemoryGoal(rows_ceiling=85.0), "sgemv": MemoryGoal()}
LONG_ROW = 1 << 17        # softmax's long rows: 2^17 elements or more, over a few dozen rows (16–64) ...
FEW_ROWS = (16, 64)
VOCABULARY = (32000, 1024)  # ... and vocabulary-sized rows (32,000 or more) over 1,024 rows or more
ROW_PRECISIONS = ("fp32", "bf16")
LOWEST = 3  # a missed geometric mean names this many of its lowest shapes (and cites their profiles)


def judged(series_keys) -> dict:
    """{(precision, series): backend label} of the series the goals judge: per precision and backend its
    verdict series if it has one, else the plain one (a math mode's own series, 3xTF32, is not judged)."""
    keys = list(series_keys)
    verdicts = {(p, s.split(" (")[0]) for p, s in keys if VERDICT_MARK in s}
    return {(p, s): s.split(" (")[0] for p, s in keys
            if VERDICT_MARK in s or (" (" not in s and (p, s) not in verdicts)}


def _default_precision(op: str) -> str | None:
    """The precision a profile taken without ``--precision`` ran at: the op's first (study/profile.py)."""
    from study.catalog import ladder  # here: the catalog loads every op, which a report module need not

    try:
        return ladder(op).problem.precisions[0].name
    except KeyError:
        return None  # an op of a plugin not loaded: its default unknown, such a profile matches nothing


def _profiles(folder: Path, op: str) -> list[tuple[Path, dict, list[dict]]]:
    """(CSV, what was profiled, its kernel rows) of each saved raw profile of the op beside the report."""
    from study.profile_table import load_rows  # here: profile_table's package imports this module

    found = []
    for where in (folder / "profiles", folder.parent / "profiles"):
        for path in sorted(where.glob(f"ncu-{op}-*.csv")):
            try:
                found.append((path, *load_rows(path)))
            except ValueError:
                continue  # not a raw page (a source page is summed by `profile --source`)
    return found


def _own_kernel(implementation: str) -> str | None:
    """The kernel a CUDA rung's file names as its own (its symbol); None for a library or a twin."""
    from study.catalog import implementations

    found = next((i for i in implementations() if i.name == implementation and i.backend == "cuda"), None)
    return found.target.symbol if found else None


def _minimum_bytes(meta: dict) -> tuple[int, int] | None:
    """(inputs, output): the op's minimum device-memory traffic at the profiled shape and precision (its
    Problem.bytes) split into the bytes read and the output's bytes written; None where the shape or precision is
    not one of the op's."""
    from study.catalog import ladder  # here: the catalog loads every op, which a report module need not

    op = (meta.get("implementation") or "").split("/", 1)[0]
    try:
        problem = ladder(op).problem
        precision = problem.precision(meta.get("precision") or _default_precision(op))
        shape = problem.parse_shape(meta.get("shape") or "")
    except (KeyError, ValueError):
        return None
    output = problem.make_output(shape, precision, "meta")  # its size only: no memory
    written = output.numel() * output.element_size()
    return problem.bytes(shape, precision) - written, written


def _traffic(launch: dict, meta: dict) -> str:
    """'; a launch's DRAM read R, r× its inputs' I, and written W (a floor …) of its output's O': whether a
    memory-bound launch read each input byte once (a second pass over a row that did not stay on chip reads about
    twice). Writes are a floor for the output (L2 is write-back: what it holds when the kernel ends reaches DRAM
    later) and may count a launch's scratch (split-K partials, exchanged words). ``launch``: the summary of all
    the launch's kernels; nothing for a profile taken without the byte counters."""
    read, written = launch.get("launch_dram_read_bytes"), launch.get("launch_dram_write_bytes")
    if read is None or written is None:
        return ""
    least = _minimum_bytes(meta)
    if least is None or not least[0]:
        return f"; a launch's DRAM read {size(read)} and written {size(written)}"
    return (f"; a launch's DRAM read {size(read)}, {read / least[0]:.2f}× its inputs' {size(least[0])}, and written "
            f"{size(written)} (a floor: L2 writes back later) of its output's {size(least[1])}")


def _evidence(path: Path, meta: dict, rows: list[dict], folder: Path) -> str:
    from study.profile_table import short_name, summarise  # here: profile_table's package imports this module

    everything = summarise(rows, meta.get("launches"))
    ran = ", ".join(f"`{k['kernel']}` {num(k['ms'], '.4f')}" for k in everything["sequence"])
    own = _own_kernel(meta.get("implementation") or "")
    mine = [r for r in rows if short_name(r.get("Kernel Name", "?")) == own]
    # the rung's own kernel, else the one with the most time
    s = summarise(mine, meta.get("launches")) if mine else everything
    tensor = "" if s["tensor_pipe_pct"] is None else f", tensor pipe {s['tensor_pipe_pct']:.1f} %"
    stall = "" if s["top_stall"] is None else f", top stall {s['top_stall']} {s['top_stall_cycles']:.2f} cycles/issue"
    link = Path("..") / path.parent.name / path.name if path.parent != folder / "profiles" else Path("profiles") / path.name
    which = "the rung's own" if mine else "the one with the most time in all"
    launches = f", {s['launches']} launches averaged" if s["launches"] > 1 else ""
    return (f"`{meta.get('implementation')}` ([ncu]({link.as_posix()})), ms a kernel in launch order: {ran}; "
            f"{which}, `{s['kernel']}`{launches}: issue active {num(s['issue_active_pct'], '.1f')} %{stall}, "
            f"DRAM {num(s['dram_pct'], '.1f')} %{tensor}, occupancy achieved "
            f"{num(s['occupancy_achieved_pct'], '.1f')} %"
            f"{_traffic(everything, meta)}")


def lines(records: dict, found: dict, op: str, folder: Path) -> list[str]:
    """The goals' lines for a suite section (``records``: study/report/suite.py best_records' first part,
    ``found``: its summary, with each series' skipped shapes): each judged series' geometric mean against
    its goal, the shapes below the per-shape goal or not run (best rung, × reference), and the saved
    profiles at those shapes."""
    goal = GOALS.get(op)
    if goal is None:
        return []
    out, below = [], set()
    for (precision, series), backend in sorted(judged(records).items()):
        best_of, skipped = records[(precision, series)], found[(precision, series)]["skipped"]
        target = goal.geomean if backend == "CUDA" else goal.triton if backend == "Triton" else None
        mean = geomean(m["x_ref"] for m in best_of.values())
        if target is None or mean is None:
            continue
        total = len(best_of) + len(skipped)
        over = f" over {len(best_of)} of {total} shapes ({len(skipped)} not run)" if skipped else ""
        line = (f"- {series} {precision}: geometric mean {mean:.3f}×{over} (goal ≥ {target}×: "
                f"{'met' if mean >= target and not skipped else 'missed'})")
        if mean < target:  # the shapes that hold the mean down (those under the per-shape goal: named below)
            floor = goal.worst if backend == "CUDA" and goal.worst is not None else 0.0
            text, shapes = _lowest({shape: m["x_ref"] for shape, m in best_of.items() if m["x_ref"] >= floor},
                                   best_of, target)
            line += text
            below |= {(shape, precision) for shape in shapes}
        if skipped and (backend != "CUDA" or goal.worst is None):
            line += "; not run: " + ", ".join(sorted(skipped))
        if backend == "CUDA" and goal.worst is not None:
            low = sorted((m["x_ref"], shape) for shape, m in best_of.items() if m["x_ref"] < goal.worst)
            missed = [f"{shape} {x:.3f}× ({best_of[shape]['rung']})" for x, shape in low] + [
                f"{shape} not run" for shape in skipped]
            line += f"; every shape ≥ {goal.worst}×: " + (
                "met" if not missed else f"missed at {len(missed)} of {total}: " + ", ".join(missed))
            below |= {(shape, precision) for _, shape in low}
        out.append(line)
    more, missed = memory_lines(records, op)
    out += more
    below |= missed
    if not out:
        return []
    out = [f"Against the suite goals (docs/suites.md, Goals): best CUDA rung per shape ÷ the reference, "
           f"geometric mean ≥ {goal.geomean}×" + (f" and every shape ≥ {goal.worst}×" if goal.worst else "")
           + (f"; best Triton twin, geometric mean ≥ {goal.triton}×" if goal.triton else "")
           + (_memory_intro(MEMORY[op]) if op in MEMORY else "") + ":", "", *out, ""]
    if below:
        default = _default_precision(op)

        def at(meta):  # the (shape, precision) cases below the goal a profile was taken at
            shape, precision = (meta.get("shape") or "").replace("x", "×"), meta.get("precision") or default
            return {(sh, p) for sh, p in below if sh == shape and p == precision}

        profiled = [(path, meta, rows, at(meta)) for path, meta, rows in _profiles(folder, op) if at(meta)]
        out += ["Nsight Compute at the shapes named above, from the profiles saved beside this report:", ""]
        out += [f"- {shape} {precision}: {_evidence(path, meta, rows, folder)}"
                for path, meta, rows, cases in profiled for shape, precision in sorted(cases)]
        missing = sorted(below - set().union(*(cases for *_, cases in profiled)))
        if missing:
            out.append("- not profiled yet: " + ", ".join(f"{shape} {precision}" for shape, precision in missing))
        out.append("")
    return out


def _lowest(ratios: dict, records: dict, goal: float) -> tuple[str, list]:
    """A missed mean's lowest shapes: of ``ratios`` ({shape: ratio}), the LOWEST under ``goal``, as the
    line's "; lowest: …" (each with its record's rung) and as the shapes whose profiles the page cites."""
    lowest = sorted((x, shape) for shape, x in ratios.items() if x < goal)[:LOWEST]
    if not lowest:
        return "", []
    return ("; lowest: " + ", ".join(f"{shape} {_ratio(x, goal)}× ({records[shape]['rung']})" for x, shape in lowest),
            [shape for _, shape in lowest])


def _ratio(x: float, goal: float) -> str:
    """A ratio to three decimals, or four where three would print its goal (0.8996 is no 0.900)."""
    return f"{x:.3f}" if f"{x:.3f}" != f"{goal:.3f}" or x >= goal else f"{x:.4f}"


def _bytes(m: dict) -> int:
    return (m.get("work") or {}).get("bytes") or 0


def _below(m: dict, share: float) -> bool:
    """Whether a record's % of the size-matched copy ceiling (``ceilings --copy-sizes``) is under ``share``; a
    record without one (no ceiling measured) cannot show the goal met."""
    return m.get("pct_ceiling") is None or m["pct_ceiling"] < share


def _share(m: dict) -> str:
    return "no copy ceiling" if m.get("pct_ceiling") is None else f"{m['pct_ceiling']:.1f} %"


def _memory_intro(goal: MemoryGoal) -> str:
    return (f"; at every shape of {goal.large_bytes >> 20} MiB or more, ≥ {goal.large_ceiling:g} % of the "
            f"size-matched copy ceiling and ≥ {goal.large_ratio:g}× the reference"
            + (f"; FP32 and BF16 rows of {LONG_ROW:,} or more over {FEW_ROWS[0]}–{FEW_ROWS[1]} rows and of "
               f"{VOCABULARY[0]:,} or more over {VOCABULARY[1]:,} rows or more, ≥ {goal.rows_ceiling:g} % of it"
               if goal.rows_ceiling else "")
            + f"; best Triton twin per shape ÷ best CUDA rung, geometric mean ≥ {goal.triton}×")


def _count(n: int) -> str:
    return f"{n} shape" + ("" if n == 1 else "s")


def _rows_shape(shape: str) -> bool:
    """Whether a softmax shape (rows × row length, as labelled) is one whose copy-ceiling share is judged: long
    rows over a few dozen rows, or vocabulary-sized rows over a thousand or more."""
    rows, length = (int(x) for x in shape.split("×"))
    return (length >= LONG_ROW and FEW_ROWS[0] <= rows <= FEW_ROWS[1]) or (
        length >= VOCABULARY[0] and rows >= VOCABULARY[1])


def memory_lines(records: dict, op: str) -> tuple[list[str], set]:
    """The memory-bound goals' lines (:data:`MEMORY`) per precision: the shapes of at least ``large_bytes`` at
    ``large_ceiling`` % of the size-matched copy ceiling and ``large_ratio`` × the reference; softmax's long and
    vocabulary rows at ``rows_ceiling`` % (FP32, BF16); the best Triton twin against the best CUDA rung per
    shape (geometric mean). Each miss is named with its figures; returns the lines and the (shape, precision)
    cases the CUDA rung missed at, whose saved profiles the page cites."""
    goal = MEMORY.get(op)
    if goal is None:
        return [], set()
    out, below = [], set()
    for precision in sorted({p for p, series in records if series == "CUDA"}):
        cuda = records[(precision, "CUDA")]
        large = {shape: m for shape, m in cuda.items() if _bytes(m) >= goal.large_bytes}
        if large:
            low = [shape for shape, m in sorted(large.items())
                   if _below(m, goal.large_ceiling) or m["x_ref"] < goal.large_ratio]
            missed = [f"{shape} {_share(large[shape])}, {large[shape]['x_ref']:.3f}× ({large[shape]['rung']})"
                      for shape in low]
            below |= {(shape, precision) for shape in low}
            out.append(f"- CUDA {precision}, {_count(len(large))} of {goal.large_bytes >> 20} MiB or more: "
                       f"≥ {goal.large_ceiling:g} % of the copy ceiling and ≥ {goal.large_ratio:g}× the reference: "
                       + ("met" if not missed else f"missed at {len(missed)}: " + ", ".join(missed)))
        rows = {shape: m for shape, m in cuda.items() if goal.rows_ceiling and _rows_shape(shape)}
        if rows and precision in ROW_PRECISIONS:
            low = [shape for shape, m in sorted(rows.items()) if _below(m, goal.rows_ceiling)]
            missed = [f"{shape} {_share(rows[shape])} ({rows[shape]['rung']})" for shape in low]
            below |= {(shape, precision) for shape in low}
            out.append(f"- CUDA {precision}, {_count(len(rows))} of long or vocabulary-sized rows: ≥ {goal.rows_ceiling:g} % "
                       "of the copy ceiling: " + ("met" if not missed else f"missed at {len(missed)}: "
                                                  + ", ".join(missed)))
        triton = records.get((precision, "Triton"), {})
        both = sorted(set(triton) & set(cuda))
        mean = geomean(triton[shape]["x_ref"] / cuda[shape]["x_ref"] for shape in both)
        if mean is not None:
            line = (f"- Triton {precision}: best twin ÷ best CUDA rung per shape, geometric mean "
                    f"{_ratio(mean, goal.triton)}× over "
                    f"{_count(len(both))} (goal ≥ {goal.triton}×: {'met' if mean >= goal.triton else 'missed'})")
            if mean < goal.triton:
                text, shapes = _lowest({shape: triton[shape]["x_ref"] / cuda[shape]["x_ref"] for shape in both},
                                       triton, goal.triton)
                line += text
                below |= {(shape, precision) for shape in shapes}
            out.append(line)
    return out, below

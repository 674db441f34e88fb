"""``python -m study sweep``: one op over a grid of shapes, as a tidy CSV and heatmaps.

Each axis of the op (``--m``, ``--n``, ``--k``, … or ``--axis NAME=SPEC``) takes a list of
values or ranges: ``4096``, ``64,100,4096``, ``64:8192:x2`` (multiply by 2 up to 8192),
``256:2048:256`` or ``256:2048:+256`` (add 256). The grid is their product; each point is a
shape measured exactly as ``compare`` measures it (same runner, gate, workers, resume), so a
sweep is a compare with many shapes. What a sweep adds is its output: one CSV row per
measurement (op, implementation, the shape's axes, precision, status, median, throughput,
% of peak, × the reference) and, per backend, a heatmap of the best implementation's throughput
and of its ratio to the reference over the first two axes, one figure per value of the others.
"""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

from study import keys, metrics, results, select
from study.report import png, suite
from study.select import UsageError
from study.suites import shapes_of as suite_shapes

CASE_LIMIT = 300  # above this many cases a sweep asks for --yes: at ~1 s a case that is minutes of GPU
MAX_VALUES = 10_000   # values of one axis: more is a typo, not a sweep
MAX_SHAPES = 100_000  # points of a grid, refused before any is built


class RangeError(ValueError):
    """A malformed axis specification."""


def parse_values(spec: str) -> list[int]:
    """``"64:8192:x2"`` → [64, 128, …, 8192]; ``"256:1024:256"`` (or ``+256``) → [256, 512, 768, 1024];
    ``"64,100,4096"`` → those; items may mix. Values ≥ 1, ascending, without repeats."""
    values: list[int] = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            raise RangeError(f"{spec!r}: an empty item")
        fields = item.split(":")
        try:
            if len(fields) == 1:
                values.append(int(fields[0]))
                continue
            if len(fields) != 3:
                raise ValueError
            start, stop, step = int(fields[0]), int(fields[1]), fields[2].strip()
        except ValueError:
            raise RangeError(f"{item!r} is neither a whole number nor START:STOP:STEP (STEP like 256, +256 "
                             f"or x2)") from None
        if start < 1 or stop < start:
            raise RangeError(f"{item!r}: the range must satisfy 1 <= START <= STOP")
        if step.startswith(("x", "*")):
            try:
                factor = float(step[1:])
            except ValueError:
                raise RangeError(f"{item!r}: {step!r} is not a factor like x2") from None
            if factor <= 1:
                raise RangeError(f"{item!r}: a multiplicative step must be above 1")
            v = start
            while v <= stop:
                values.append(int(round(v)))
                v *= factor
        else:
            try:
                add = int(step.lstrip("+"))
            except ValueError:
                raise RangeError(f"{item!r}: {step!r} is not a step like 256, +256 or x2") from None
            if add < 1:
                raise RangeError(f"{item!r}: an additive step must be at least 1")
            if (stop - start) // add + 1 > MAX_VALUES:
                raise RangeError(f"{item!r} has {(stop - start) // add + 1:,} values; at most {MAX_VALUES:,} an axis")
            values.extend(range(start, stop + 1, add))
    bad = [v for v in values if v < 1]
    if bad:
        raise RangeError(f"{spec!r}: sizes must be at least 1; got {bad[0]}")
    return sorted(set(values))


def grid(axes: tuple[str, ...], specs: dict[str, str]) -> list[dict[str, int]]:
    """Every shape of the product of the axes' values, in the op's axis order."""
    missing = [a for a in axes if a not in specs]
    extra = [a for a in specs if a not in axes]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no values for {', '.join(missing)}")
        if extra:
            parts.append(f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} not an axis")
        raise RangeError("; ".join(parts) + f" (the op's axes are {', '.join(axes)})")
    values = [parse_values(specs[a]) for a in axes]
    points = math.prod(len(v) for v in values)
    if points > MAX_SHAPES:
        raise RangeError(f"{' × '.join(str(len(v)) for v in values)} = {points:,} shapes; at most {MAX_SHAPES:,}")
    return [dict(zip(axes, point)) for point in itertools.product(*values)]


def axis_specs(problem, given: list[tuple[str, str]]) -> dict[str, str]:
    """axis -> spec from (name as given, spec) pairs (``--m`` and ``--axis batch=…`` alike; names in any
    case); an axis given twice is a usage error."""
    by_lower = {a.lower(): a for a in problem.axes}
    specs: dict = {}
    for axis, value in given:
        name = by_lower.get(axis.lower(), axis)
        if name in specs:
            raise UsageError(f"axis {name} is given twice (--{axis.lower()} and --axis, or --axis twice)")
        specs[name] = value
    return specs


def cases(op: str, specs: dict[str, str], dtypes=None, backends=None, rungs=None, autotune: str = "off",
          modes=None, paired: bool = False, suites=()) -> tuple[list, str]:
    """(the cases of a sweep of ``op`` over the product of its axes' values and the shapes of ``suites``,
    a line that counts them). With suites and no axis given, the suites' shapes alone."""
    all_ops, problem = select.one_op(op)
    try:
        listed = suite_shapes(op, suites, required=True)
    except KeyError as exc:
        raise UsageError(f"sweep {op}: {exc.args[0]}") from None
    try:
        shapes = grid(problem.axes, specs) if specs or not listed else []
    except RangeError as exc:
        raise UsageError(f"sweep {op}: {exc}") from None
    shapes += [s for s in listed if s not in shapes]
    precisions = select.parse_dtypes(dtypes, [op], all_ops) if dtypes else None
    planned = select.planned([op], {op: shapes}, precisions, backends, rungs, autotune, modes, paired)
    parts = [" × ".join(f"{len(parse_values(specs[a]))} {a}" for a in problem.axes)] if specs else []
    parts += [f"suite {name}" for name in suites]
    return planned, f"sweep {op}: {len(shapes)} shapes ({' + '.join(parts)}) → {len(planned)} cases"


# ---- output --------------------------------------------------------------------------------

FIELDS = ("op", "implementation", "rung", "baseline", "backend", "precision", "dtype", "math", "autotune", "mode",
          "pad", "status", "reason", "median_ms", "gflops", "gbps", "pct_peak", "x_ref")


def _axes(doc: dict) -> list[str]:
    return list(dict.fromkeys(k for m in doc["measurements"] for k in m["shape"]))


def rows(doc: dict) -> list[dict]:
    """The tidy rows of a results document: one per measurement, each axis a column."""
    axes = _axes(doc)
    out = []
    for m in doc["measurements"]:
        row = {f: m.get(f) for f in FIELDS}
        row.update({a: m["shape"].get(a) for a in axes})
        row["reason"] = (row["reason"] or "").splitlines()[0][:300] if row["reason"] else ""
        out.append(row)
    return out


def write_csv(doc: dict, path: Path) -> Path:
    table = rows(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*FIELDS[:2], *_axes(doc), *FIELDS[2:]])
        writer.writeheader()
        for row in table:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return path


def best_cells(doc: dict) -> dict:
    """(precision, autotune, mode, other axes' values) -> backend -> (row axis value, column axis value) ->
    the best ok record of that backend there (the reference baseline stands for its own backend)."""
    cells: dict = {}
    for m in doc["measurements"]:
        if m["status"] != "ok":
            continue
        axes = list(m["shape"])
        r, c = m["shape"][axes[0]], (m["shape"][axes[1]] if len(axes) > 1 else 1)
        fixed = tuple((a, m["shape"][a]) for a in axes[2:])
        backend = m["backend"] if m["reference"] or m["rung"] else f"{m['backend']} ({m['baseline']})"
        key = (m["precision"], m["mode"], fixed)
        slot = cells.setdefault(key, {}).setdefault((backend, m["autotune"]), {})
        best = slot.get((r, c))
        if best is None or metrics.headline(m) > metrics.headline(best):
            slot[(r, c)] = m
    return cells


def heatmaps(doc: dict, fig_dir: Path, stem: str) -> list[tuple[str, Path]]:
    """One figure per (precision, mode, other axes): a column per (backend, autotune); the top row
    the best throughput, the bottom row its × reference. Returns (title, path) pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import seaborn as sns

    figures = []
    op = doc["measurements"][0]["op"] if doc["measurements"] else "op"
    for (precision, mode, fixed), by_backend in sorted(best_cells(doc).items(), key=str):
        columns = sorted(by_backend, key=lambda k: (not any(m["reference"] for m in by_backend[k].values()), k))
        some = next(iter(next(iter(by_backend.values())).values()))
        axes = list(some["shape"])
        unit = metrics.unit(some["work"]["bound"])
        rows_v = sorted({rc[0] for b in by_backend.values() for rc in b})
        cols_v = sorted({rc[1] for b in by_backend.values() for rc in b})
        fig, grid_ax = plt.subplots(2, len(columns), figsize=(2.2 + 0.55 * len(cols_v) * len(columns),
                                                             1.6 + 0.9 * len(rows_v)), squeeze=False)
        top = max(metrics.headline(m) for b in by_backend.values() for m in b.values())
        per = 1.0
        if unit == "GFLOPS" and top >= 1e4:  # six-digit cells do not fit a heatmap's square: TFLOPS, one decimal
            unit, per, top = "TFLOPS", 1e3, top / 1e3
        for j, key in enumerate(columns):
            cells = by_backend[key]
            for i, (what, fmt) in enumerate(((unit, ",.1f" if per > 1 else ",.0f"), ("× ref", ".2f"))):
                ax = grid_ax[i][j]
                if i == 1 and all(m["reference"] for m in cells.values()):
                    ax.axis("off")  # the reference over itself
                    continue
                data = np.full((len(rows_v), len(cols_v)), np.nan)
                for (r, c), m in cells.items():
                    value = metrics.headline(m) / per if i == 0 else m.get("x_ref")
                    data[rows_v.index(r), cols_v.index(c)] = np.nan if value is None else value
                # One scale for every backend's throughput (comparable colours); × ref centred on 1.
                scale = dict(cmap="viridis", vmin=0, vmax=top) if i == 0 else dict(cmap="RdYlGn", vmin=0, vmax=2,
                                                                                    center=1.0)
                sns.heatmap(data, ax=ax, annot=len(cols_v) * len(rows_v) <= 144, fmt=fmt, cbar=False,
                            xticklabels=cols_v, yticklabels=rows_v, annot_kws={"fontsize": 7}, **scale)
                ax.set_xlabel(axes[1] if len(axes) > 1 else "")
                ax.set_ylabel(axes[0])
                ax.tick_params(axis="y", labelrotation=0)  # upright: rotated, 8192 4096 2048 ran into one word
                backend, autotune = key
                ax.set_title(f"{backend}{'' if autotune == 'n/a' else f', autotune {autotune}'}: {what}",
                             fontsize=8)
        others = ", ".join(f"{a}={v}" for a, v in fixed)
        title = f"{op} {precision} {mode}" + (f", {others}" if others else "")
        fig.suptitle(f"{title} — best implementation per backend", fontsize=9)
        fig.tight_layout()
        fig_dir.mkdir(parents=True, exist_ok=True)
        safe = "-".join([stem, precision, mode, *(f"{a}{v}" for a, v in fixed)])
        path = fig_dir / f"{safe}.png"
        png.save(fig, path, dpi=110)
        plt.close(fig)
        figures.append((title, path))
    return figures


def markdown(doc: dict, csv_path: Path, figures: list[tuple[str, Path]], md_path: Path,
             verdict: list[str] = ()) -> str:
    from collections import Counter

    env = doc["environment"]
    statuses = Counter(m["status"] for m in doc["measurements"])
    shapes = {tuple(m["shape"].items()) for m in doc["measurements"]}
    gpu = (env.get("gpu") or {}).get("name", "?")
    lines = [f"# `study sweep` on {gpu}", "",
             f"Generated from `{Path(csv_path).name}` and the results file beside it by `{env.get('command', '')}` at "
             f"commit `{(env.get('git') or {}).get('commit')}`; do not edit by hand.", "",
             f"{len(doc['measurements'])} measurements over {len(shapes)} shapes: "
             + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) + ".", ""]
    suites = env.get("suites") or []
    if suites:  # a suite is a list of shapes, not a grid: its verdict and per-shape figure, no heatmaps
        lines += [f"The shapes of suite {', '.join(suites)} (`python -m study list --suites`; docs/suites.md).", "",
                  *verdict]
    else:
        lines += ["Each heatmap cell is the best implementation of that backend at that shape (highest throughput "
                  "among its rungs that passed the gate); the bottom row is that figure over the reference "
                  "baseline's at the same shape. Empty cells: nothing of that backend ran correctly there "
                  "(see the CSV's status and reason).", ""]
    for title, path in figures:
        lines += [f"## {title}", "", f"![{title}]({Path(path).relative_to(md_path.parent).as_posix()})", ""]
    not_ok = [m for m in doc["measurements"] if m["status"] not in ("ok",)]
    if not_ok:
        lines += ["## Not measured", "", "| implementation | shape | precision | status | reason |",
                  "|---|---|---|---|---|"]
        for m in not_ok[:200]:
            reason = (m.get("reason") or "").splitlines()[0][:160] if m.get("reason") else ""
            lines.append(f"| `{m['implementation']}` | {keys.shape_text(m['shape'])} | {m['precision']} | {m['status']} | "
                         f"{reason} |")
        if len(not_ok) > 200:
            lines.append(f"| … {len(not_ok) - 200} more in the CSV | | | | |")
        lines.append("")
    return "\n".join(lines)


def is_sweep(doc: dict) -> bool:
    """Whether a results document came from ``study sweep`` (its own command, or its shards' merged)."""
    return " study sweep " in f" {doc.get('environment', {}).get('command', '')} "


def write_outputs(doc: dict, json_path: Path) -> tuple[Path, Path]:
    """CSV, heatmaps (a suite's verdict instead, when the sweep took a suite's shapes) and the Markdown page
    beside the results file; returns (csv, md)."""
    csv_path, md_path = results.beside(json_path, ".csv"), results.beside(json_path, ".md")
    write_csv(doc, csv_path)
    figures, verdict = [], []
    if doc["measurements"] and doc["environment"].get("suites"):
        for op in dict.fromkeys(m["op"] for m in doc["measurements"]):
            figure = json_path.parent / "figures" / f"{results.stem(json_path)}-{op}-suite.png"
            verdict += suite.lines(doc["measurements"], op, figure, md_path.parent)
    elif doc["measurements"]:
        figures = heatmaps(doc, json_path.parent / "figures", results.stem(json_path))
    md_path.write_text(markdown(doc, csv_path, figures, md_path, verdict))
    return csv_path, md_path


def eta_text(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    minutes, s = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{s:02d}s"

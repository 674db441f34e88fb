"""A suite run's verdict per op (``compare --suite``): for each precision and series (CUDA, Triton, a
math mode of its own such as 3xTF32, and where there is one, each backend's best of both: an
emulation's rung counted only where its gate error is at most the reference's), the best
rung per shape ÷ the reference, their geometric mean, the worst shape, and every shape the series did
not run, with the reason it recorded. A geometric mean over shapes where a series skipped would
flatter it, so the skipped are counted beside it."""

from __future__ import annotations

import math
from pathlib import Path

from tabulate import tabulate

from study.report import goals, png
from study.report.labels import BACKEND_LABEL, EMULATION, RUNG_BACKENDS, VERDICT_MARK, reason_line, shape_label
from study.report.tables import best_by_shape
from study.stats import geomean


def _precision(m: dict) -> str:
    return m.get("precision") or m["dtype"]


def _series(m: dict) -> str:
    own = (m.get("math") or "ieee") in EMULATION
    return BACKEND_LABEL.get(m["backend"], m["backend"]) + (f" ({m['math']})" if own else "")


def _gate_error(m: dict):
    error = m.get("error")
    return error.get("err") if isinstance(error, dict) else None


def _accurate(mine: list[dict]) -> dict:
    """{(precision, "<backend> (<own math>, or <emulation> where error ≤ ref)"): {shape: record}} for each
    backend with a rung of an emulation math mode at a precision (3xTF32 at FP32): per shape its best rung
    among those of the precision's own math, whatever their error (FFMA is FP32 arithmetic, in whatever
    order it sums), and those of the emulation whose gate error is at most the reference's there: the
    FP32 verdict of docs/suites.md, crediting tensor-core emulation only where it is as accurate as the
    library (at a decode-sized M cuBLAS FP32's error can be a third of 3xTF32's). A paired record stands
    for its own implementation's unpaired one, then the highest × ref wins, paired or not."""
    ref_error = {(shape_label(m["shape"]), _precision(m)): _gate_error(m) for m in mine
                 if m.get("reference") and m["status"] == "ok"}
    ranked = [m for m in mine if m["status"] == "ok" and m["backend"] in RUNG_BACKENDS and m["rung"] is not None
              and m.get("x_ref")]
    emulations = {(m["backend"], _precision(m)): m["math"] for m in ranked if (m.get("math") or "ieee") in EMULATION}
    own_math = {(m["backend"], _precision(m)): m.get("math") or "ieee" for m in ranked
                if (m.get("math") or "ieee") not in EMULATION}
    per_impl: dict = {}  # (precision, series, shape, implementation, autotune) -> its record, paired first
    for m in ranked:
        backend, precision, shape = m["backend"], _precision(m), shape_label(m["shape"])
        if (backend, precision) not in emulations:
            continue
        if (m.get("math") or "ieee") in EMULATION:
            ref, own = ref_error.get((shape, precision)), _gate_error(m)
            if ref is None or own is None or own > ref:
                continue
        series = (f"{BACKEND_LABEL.get(backend, backend)} ({own_math.get((backend, precision), 'own math')}, "
                  f"or {emulations[(backend, precision)]} {VERDICT_MARK})")
        key = (precision, series, shape, m["implementation"], m.get("autotune"))
        if key not in per_impl or (bool(m.get("paired")), m["x_ref"]) > (bool(per_impl[key].get("paired")),
                                                                          per_impl[key]["x_ref"]):
            per_impl[key] = m
    out: dict = {}
    for (precision, series, shape, _, _), m in per_impl.items():
        best = out.setdefault((precision, series), {}).get(shape)
        if best is None or m["x_ref"] > best["x_ref"]:
            out[(precision, series)][shape] = m
    return out


def best_records(measurements: list[dict], op: str, found=None) -> tuple[dict, list[dict]]:
    """({(precision, series): {shape: the best rung's record}}, the op's records of the first timing mode):
    :func:`best_by_shape`'s series, then each verdict series of :func:`_accurate`; ``found``:
    :func:`best_by_shape` of them, where the caller has it. Empty where there are fewer than two shapes."""
    found = found or best_by_shape(measurements, op)
    if found is None:
        return {}, []
    first, best = found
    mine = [m for m in measurements if m["op"] == op and (m.get("mode") or "cold") == first and not m.get("pad")]
    out: dict = {}
    for (shape, precision, series), m in best.items():
        out.setdefault((precision, series), {})[shape] = m
    out.update(_accurate(mine))
    return out, mine


def summary(measurements: list[dict], op: str, found=None) -> dict:
    """{(precision, series): {"ratios": {shape: × ref}, "skipped": {shape: reason}}} over every shape
    the op ran at in the first timing mode (a series with no ok rung at a shape: its recorded reason);
    ``found``: :func:`best_by_shape` of them, where the caller has it."""
    return summary_of(*best_records(measurements, op, found))


def summary_of(records: dict, mine: list[dict]) -> dict:
    """:func:`summary` from :func:`best_records`' two parts."""
    shapes = {(shape_label(m["shape"]), _precision(m)) for m in mine}
    out: dict = {}
    for (precision, series), best_of in records.items():
        entry = out[(precision, series)] = {"ratios": {shape: m["x_ref"] for shape, m in best_of.items()},
                                            "skipped": {}}
        for shape in sorted({s for s, p in shapes if p == precision} - set(best_of)):
            if VERDICT_MARK in series:
                entry["skipped"][shape] = "no rung ran at the precision's own math or within the reference's gate error"
                continue
            tried = [m for m in mine if m["backend"] in RUNG_BACKENDS and m["rung"] is not None
                     and _series(m) == series and shape_label(m["shape"]) == shape
                     and _precision(m) == precision]
            entry["skipped"][shape] = next((f"{m['status']}: {reason_line(m.get('reason') or '')}" for m in tried
                                            if m["status"] != "ok"), "not run")
    return out


def verdict(entry: dict) -> tuple[float | None, tuple[str, float] | None]:
    """(geometric mean, (worst shape, its ratio)) of one series' entry of :func:`summary`; Nones without ratios."""
    ratios = entry["ratios"]
    return geomean(ratios.values()), (min(ratios.items(), key=lambda kv: kv[1]) if ratios else None)


def lines(measurements: list[dict], op: str, figure_path: Path | None, folder: Path) -> list[str]:
    """The op's suite section: the table, the skipped shapes with their reasons, the verdict against the
    suite goals (study/report/goals.py), the sorted figure."""
    ranked = best_by_shape(measurements, op)
    records, mine = best_records(measurements, op, ranked)
    found = summary_of(records, mine)
    if not found:
        return []
    rows, skipped = [], []
    for (precision, series), entry in sorted(found.items()):
        mean, worst = verdict(entry)
        rows.append([precision, series, len(entry["ratios"]), f"{mean:.3f}×" if worst else "—",
                     f"{worst[1]:.3f}× at {worst[0]}" if worst else "—", len(entry["skipped"])])
        skipped += [f"- {series} {precision} {shape}: {why}" for shape, why in entry["skipped"].items()]
    mode = ranked[0]  # the timing mode summary() ranked in
    out = [f"### {op}: the suite", "",
           f"Best rung of each series per shape ÷ the reference ({mode}, either autotune setting; a paired "
           "record where there is one), over the shapes it ran; the skipped ones are counted, not averaged:", "",
           tabulate(rows, ["precision", "series", "shapes run", "geometric mean", "worst", "skipped"],
                    tablefmt="github", disable_numparse=True), ""]
    if skipped:
        out += ["Skipped, with the reason each recorded:", "", *skipped, ""]
    out += goals.lines(records, found, op, folder)
    if figure_path is not None:
        path = figure(found, op, figure_path)
        if path is not None:
            out += [f"![{op} suite]({path.relative_to(folder).as_posix()})", ""]
    return out


def figure(found: dict, op: str, path: Path) -> Path | None:
    """Per precision, × reference per shape, shapes sorted by the first series' ratio; a line at 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    precisions = sorted({p for p, _ in found})
    fig, axes = plt.subplots(len(precisions), 1, figsize=(10, 3.4 * len(precisions)), squeeze=False)
    for ax, precision in zip(axes[:, 0], precisions):
        series = sorted(s for p, s in found if p == precision)
        lead = found[(precision, series[0])]["ratios"]
        shapes = sorted({sh for s in series for sh in found[(precision, s)]["ratios"]},
                        key=lambda sh: lead.get(sh, math.inf))
        for s in series:
            ratios = found[(precision, s)]["ratios"]
            ax.plot(range(len(shapes)), [ratios.get(sh, math.nan) for sh in shapes], marker="o", linewidth=1,
                    label=s)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_xticks(range(len(shapes)), shapes, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("× reference")
        ax.set_title(f"{op} {precision}: shapes sorted by {series[0]}'s × reference", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # beside the axes: off the data
        ax.grid(axis="y", alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    png.save(fig, path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path

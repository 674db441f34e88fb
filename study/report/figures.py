"""The figures of a comparison report: the ladder by rung, the best rung against the reference by
shape, the roofline. matplotlib, seaborn and pandas are imported when a figure is drawn."""

from __future__ import annotations

from pathlib import Path

from study import metrics
from study.report import png
from study.report.labels import BACKEND_LABEL, modes_of, shape_label, unit_of
from study.report.tables import best_by_shape

def _label(m: dict, tunes: set) -> str:
    return BACKEND_LABEL.get(m["backend"], m["backend"]) + (f" (autotune {m['autotune']})" if len(tunes) > 1 else "")


WRAP = 4  # panels a row in a ladder figure of one precision


def figure(measurements: list[dict], op: str, path: Path) -> Path | None:
    """The ladder: the op's headline unit by rung (first timing mode), a panel per shape and a
    row per precision (one precision over more than WRAP shapes: rows of WRAP panels); the
    reference baseline dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    ok = [m for m in measurements if m["op"] == op and m["status"] == "ok"]
    first = (modes_of(ok) or ["cold"])[0]
    ok = [m for m in ok if (m.get("mode") or "cold") == first]
    rungs = [m for m in ok if m["rung"] is not None]
    if not rungs:
        return None
    unit = unit_of(rungs)
    tunes = {m["autotune"] for m in rungs}
    frame = pd.DataFrame([{"rung": f"v{m['rung_index']}", "implementation": _label(m, tunes),
                           "shape": shape_label(m["shape"]), "precision": m.get("precision") or m["dtype"],
                           unit: metrics.headline(m)} for m in rungs])
    shapes = list(dict.fromkeys(frame["shape"]))
    precisions = list(dict.fromkeys(frame["precision"]))
    sns.set_theme(style="whitegrid")
    # One precision over many shapes wraps into rows of WRAP panels: seven in one row (the sgemm
    # ladder's shapes) made a figure too wide to read. seaborn cannot wrap with a row facet.
    wrap = len(precisions) == 1 and len(shapes) > WRAP
    facets = dict(col_wrap=WRAP) if wrap else dict(row="precision", row_order=precisions)
    grid = sns.catplot(data=frame, kind="bar", x="rung", y=unit, hue="implementation", col="shape",
                       col_order=shapes, **facets, order=sorted(frame["rung"].unique(), key=lambda r: int(r[1:])),
                       height=3.2, aspect=1.2, sharey=False)
    panels = {(precisions[0], key): ax for key, ax in grid.axes_dict.items()} if wrap else grid.axes_dict
    for (precision, shape), ax in panels.items():  # (row, col) keys; a wrapped grid keys by column only
        base = [m for m in ok if m.get("reference") and shape_label(m["shape"]) == shape
                and (m.get("precision") or m["dtype"]) == precision]
        if base:
            value = metrics.headline(base[0])
            ax.axhline(value, color="black", linestyle="--", linewidth=1)
            ax.text(0.01, value, f" {base[0].get('baseline') or 'reference'}", va="bottom", ha="left", fontsize=8,
                    transform=ax.get_yaxis_transform())
        ax.set_title(f"{shape} {precision}")
    grid.figure.suptitle(f"{op}: {unit} by rung (median, {first})", y=1.02)
    path.parent.mkdir(parents=True, exist_ok=True)
    png.save(grid.figure, path, dpi=110, bbox_inches="tight")
    plt.close(grid.figure)
    return path



def best_figure(measurements: list[dict], op: str, path: Path) -> Path | None:
    """Handwritten against the reference over the shapes: per shape (and precision), the best
    CUDA rung and the best Triton twin as × reference (first timing mode, either autotune
    setting), each bar labelled with its rung; a rung computing in another math mode (3xTF32 in
    an FP32 table) is its own series, so FFMA is never credited with tensor-core speed. None
    below two shapes (the ladder figure says it all)."""
    found = best_by_shape(measurements, op)
    if found is None:
        return None
    first, best = found
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    frame = pd.DataFrame([{"shape": shape, "precision": precision, "series": name, "× reference": m["x_ref"]}
                          for (shape, precision, name), m in best.items()])
    shapes, series = list(dict.fromkeys(frame["shape"])), sorted(set(frame["series"]))
    sns.set_theme(style="whitegrid")
    grid = sns.catplot(data=frame, kind="bar", x="shape", y="× reference", hue="series", row="precision",
                       order=shapes, hue_order=series, height=3.6, aspect=max(2.0, 0.55 * len(shapes)),
                       sharey=False)
    for precision, ax in grid.axes_dict.items():
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
        for name, container in zip(series, ax.containers):  # one container per series, in hue order
            labels = []
            for bar in container:  # a bar's centre lies within 0.5 of its shape's category position
                shape = shapes[min(len(shapes) - 1, max(0, round(bar.get_x() + bar.get_width() / 2)))]
                hit = best.get((shape, precision, name))
                labels.append(f"v{hit['rung_index']}" if hit else "")
            ax.bar_label(container, labels=labels, fontsize=7)
        ax.tick_params(axis="x", labelrotation=20)
    grid.figure.suptitle(f"{op}: best handwritten rung against the reference, by shape (median, {first})", y=1.03)
    path.parent.mkdir(parents=True, exist_ok=True)
    png.save(grid.figure, path, dpi=110, bbox_inches="tight")
    plt.close(grid.figure)
    return path


def roofline(measurements: list[dict], op: str, env: dict, path: Path) -> Path | None:
    """Arithmetic intensity (FLOP per minimum byte) against GFLOPS, log-log: the compute roof of
    each math mode present and the memory roof; one point per implementation and shape (first
    timing mode), shaped by backend and coloured by rung."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    ok = [m for m in measurements if m["op"] == op and m["status"] == "ok" and m.get("intensity") and m.get("gflops")]
    first = (modes_of(ok) or ["cold"])[0]
    ok = [m for m in ok if (m.get("mode") or "cold") == first]
    gpu = env["gpu"]
    bandwidth = gpu.get("memory_peak_gbps")
    if not ok or not bandwidth:
        return None
    intensities = [m["intensity"] for m in ok]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    xs = np.geomspace(min(lo, 0.1), max(hi, 1000), 200)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    roofs: dict = {}  # peak -> the math modes that share it (FP16 and BF16 tensor cores: one line, not two)
    for math in sorted({m.get("math") or "ieee" for m in ok}):
        peak = (gpu.get("peaks_gflops") or {}).get(math)
        if peak:
            roofs.setdefault(peak, []).append(metrics.PEAK_NAMES.get(math, math))
    for peak, names in roofs.items():
        ax.plot(xs, np.minimum(peak, bandwidth * xs), linewidth=1.2,
                label=f"roof: {' = '.join(names)} {peak:,.0f} GFLOPS, memory {bandwidth:,.0f} GB/s")
    markers = {"cuda": "o", "triton": "s", "cublas": "*", "cublaslt": "P", "torch": "X", "inductor": "D"}
    rung_keys = sorted({(m["rung_index"], m["rung"]) for m in ok if m["rung"] is not None})
    colours = {key: plt.cm.viridis(i / max(1, len(rung_keys) - 1)) for i, (_, key) in enumerate(rung_keys)}
    seen = set()
    for m in ok:
        key = m["rung"]
        label = f"v{m['rung_index']}" if key else (m.get("baseline") or "baseline")
        legend_key = (label, m["backend"])
        ax.scatter(m["intensity"], m["gflops"], marker=markers.get(m["backend"], "x"),
                   color=colours.get(key, "black"), s=70 if not key else 36, alpha=0.85, edgecolors="none",
                   label=None if legend_key in seen else f"{label} {BACKEND_LABEL.get(m['backend'], m['backend'])}")
        seen.add(legend_key)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per minimum byte)")
    ax.set_ylabel("GFLOPS")
    ax.set_title(f"{op}: roofline ({first}, median)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), ncol=2 if len(seen) > 14 else 1,
              borderaxespad=0.0)  # beside the axes: inside, it covered the points
    ax.grid(True, which="both", linewidth=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    png.save(fig, path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


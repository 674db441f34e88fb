"""What fusion bought (the fusion study, docs/ladders/gemm_bias_relu.md): for each shape, precision,
backend and autotune setting of ``gemm_bias_relu``, its unfused rung (v0: the GEMM, then a pass over
C), its best fused rung and the bare GEMM both build on (the ``hgemm`` or ``sgemm`` rung named in
BARE below, measured in the same results file), side by side: times, the
bytes each moves at least, unfused / fused and the fused rung's cost over the bare GEMM (its
epilogue), and the eager-torch and cuBLASLt rows of the same case. From results alone; a bare GEMM
that was not measured is a dash, never a guess.
"""

from __future__ import annotations

from pathlib import Path

from study.precision import STORAGE
from study.report import png
from study.report.labels import BACKEND_LABEL, num, shape_label
from study.report.page import Section

OP = "gemm_bias_relu"
# The GEMM each precision's unfused rung runs and its fused rungs build on: the fastest handwritten rung
# of each GEMM op on the H200 (reports/h200/hgemm-ladder.md, sgemm-ladder.md). The op runs it; this
# module finds its records (it reads results only, so the table lives here, without the op's imports).
BARE = {"fp32": ("sgemm", "v7_multistage"), "fp16": ("hgemm", "v8_warp_specialized"),
        "bf16": ("hgemm", "v8_warp_specialized")}
# v3 (split-K) is left out: where it splits, its bare counterpart is hgemm v9, not BARE's v8; elsewhere it
# runs v2's path. v4 and v5 likewise: their bare counterparts are hgemm v10 and v11.
UNFUSED, FUSED = "v0_unfused", ("v1_fused_simt", "v2_fused_wgmma")
EAGER, ADDMM, LT = "eager_relu_matmul_bias", "eager_addmm_relu", "nvmath_relu_bias"


def traffic(shape: dict, dtype: str) -> dict:
    """The least each path moves to and from memory: the fused kernel reads A, B and the bias and
    writes C once; the unfused pair also reads C back and writes it again (2·M·N elements more).
    ``c``: C's own bytes — where C fits in the L2, the pass may read it back from there, not HBM."""
    e = STORAGE[dtype][1]
    m, n, k = shape["M"], shape["N"], shape["K"]
    fused = e * (m * k + k * n + m * n + n)
    return {"fused": fused, "unfused": fused + 2 * e * m * n, "c": e * m * n}


def _key(m: dict) -> tuple:
    return (tuple(sorted(m["shape"].items())), m.get("precision"), m.get("mode") or "cold")


def rows(measurements: list[dict]) -> list[dict]:
    """One row per (shape, precision, mode, backend, autotune) at which the unfused rung or a fused
    rung ran ok; the missing parts are None."""
    ok = [m for m in measurements if m["status"] == "ok"]
    ours = [m for m in ok if m["op"] == OP]
    out = []
    cases = sorted({(_key(m), m["backend"], m["autotune"]) for m in ours if m["rung"]},
                   key=lambda c: (c[0][1] or "", c[0][0], c[1], c[2]))
    for key, backend, tune in cases:
        same = [m for m in ours if _key(m) == key]
        unfused = next((m for m in same if m["rung"] == UNFUSED and m["backend"] == backend and m["autotune"] == tune),
                       None)
        fused = min((m for m in same if m["rung"] in FUSED and m["backend"] == backend and m["autotune"] == tune),
                    key=lambda m: m["median_ms"], default=None)
        if unfused is None and fused is None:
            continue
        precision = key[1]
        op, rung = BARE[precision]
        bare = next((m for m in ok if m["op"] == op and m["rung"] == rung and m["backend"] == backend
                     and m["autotune"] == tune and _key(m) == key), None)
        base = [m for m in same if m["rung"] is None]
        eager = next((m for m in base if m["baseline"] == EAGER), None)
        addmm = next((m for m in base if m["baseline"] == ADDMM), None)
        lt = next((m for m in base if m["baseline"] == LT and m["autotune"] in (tune, "n/a")), None)
        first = unfused or fused  # its shape keeps the op's axis order (M, N, K) for the label
        out.append({"shape": dict(first["shape"]), "precision": precision, "dtype": first["dtype"], "mode": key[2],
                    "backend": backend, "autotune": tune, "unfused": unfused, "fused": fused, "bare": bare,
                    "eager": eager, "addmm": addmm, "cublaslt": lt, "bytes": traffic(first["shape"], first["dtype"])})
    return out


def _ms(m) -> str:
    return num(None if m is None else m["median_ms"], ".4f")


def _ratio(a, b) -> str:
    return num(None if a is None or b is None else a["median_ms"] / b["median_ms"], ".2f", "×")


def table(measured: list[dict]) -> str:
    from tabulate import tabulate

    body = []
    for r in measured:
        fused, bare = r["fused"], r["bare"]
        cost = num(None if fused is None or bare is None else 100 * (fused["median_ms"] / bare["median_ms"] - 1),
                   "+.1f", " %")
        body.append([shape_label(r["shape"]), r["precision"], BACKEND_LABEL.get(r["backend"], r["backend"]), r["autotune"],
                     _ms(r["unfused"]), _ms(fused) + (f" ({fused['rung'].split('_')[0]})" if fused else ""), _ms(bare),
                     _ratio(r["unfused"], fused), cost, f"{r['bytes']['unfused'] / 1e6:,.0f}",
                     f"{r['bytes']['fused'] / 1e6:,.0f}", f"{r['bytes']['c'] / 2**20:,.0f}", _ratio(r["eager"], fused),
                     _ratio(r["addmm"], fused), _ratio(r["cublaslt"], fused)])
    header = ["shape", "precision", "backend", "autotune", "unfused ms (v0)", "fused ms (rung)", "bare GEMM ms",
              "unfused / fused", "fused over bare", "MB unfused", "MB fused", "C MiB", "× eager relu(mm + bias)",
              "× addmm + relu_", "× cuBLASLt epilogue"]
    return tabulate(body, header, tablefmt="github", disable_numparse=True)


def figure(measured: list[dict], path: Path) -> Path | None:
    """TFLOPS (2·M·N·K over the median) of unfused, fused and bare by shape: a panel per precision,
    a row per backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    points = []
    for r in measured:
        s = r["shape"]
        flops = 2 * s["M"] * s["N"] * s["K"]
        for what in ("unfused", "fused", "bare"):
            if r[what] is not None:
                points.append({"shape": shape_label(s), "precision": r["precision"], "path": what,
                               "backend": f"{BACKEND_LABEL.get(r['backend'], r['backend'])}, autotune {r['autotune']}",
                               "TFLOPS": flops / (r[what]["median_ms"] * 1e-3) / 1e12})
    if not points:
        return None
    frame = pd.DataFrame(points)
    sns.set_theme(style="whitegrid")
    # Each panel its own shapes (a precision measured at fewer shapes leaves no empty slots) and scale.
    grid = sns.catplot(data=frame, kind="bar", x="shape", y="TFLOPS", hue="path", hue_order=["unfused", "fused", "bare"],
                       col="precision", row="backend", height=3.0, aspect=1.5, sharex=False, sharey=False)
    for ax in grid.axes.flat:
        ax.tick_params(axis="x", labelrotation=15, labelsize=8)
    # short panel titles and room between rows: the rotated shapes of one row met the titles of the next
    grid.set_titles(row_template="{row_name}", col_template="{col_name}")
    grid.figure.subplots_adjust(hspace=0.45)
    grid.figure.suptitle("gemm_bias_relu: unfused (GEMM, then bias + ReLU), fused, and the bare GEMM", y=1.02)
    path.parent.mkdir(parents=True, exist_ok=True)
    png.save(grid.figure, path, dpi=110, bbox_inches="tight")
    plt.close(grid.figure)
    return path


def section(measurements: list[dict], figure_path: Path | None, folder: Path) -> list[str]:
    """The report's "What fusion bought" lines, its figure at ``figure_path`` (None: not drawn) linked
    relative to the report's ``folder``; nothing when no gemm_bias_relu rung ran ok."""
    measured = rows(measurements)
    if not measured:
        return []
    out = ["### What fusion bought", "",
           "Per case: the unfused rung (v0: the bare GEMM, then a pass over C), the fastest fused rung, and the bare "
           "GEMM they build on (`" + "`, `".join(sorted({f'{op} {rung}' for op, rung in BARE.values()})) + "`, "
           "measured in this file at the same shape; a dash where it was not). v0's GEMM runs at its declared "
           "config in both autotune settings (only its pass is tuned), whereas the fused rungs and the bare GEMM "
           "are tuned whole under autotune on: read unfused / fused with autotune off. *MB*: the least each moves "
           "to and from memory (the unfused pair reads C back and writes it again); where *C MiB* is below the "
           "L2's size, part of that round trip may be served by the L2 rather than HBM. *Fused over bare*: the "
           "epilogue's cost. *× eager …*: that eager torch baseline's time over the fused rung's "
           "(`relu(matmul + bias)`: three kernels; `addmm` + `relu_`: two); *× cuBLASLt epilogue*: `RELU_BIAS`'s "
           "(autotune as the row's) over the fused rung's.", "", table(measured), ""]
    if figure_path is not None:
        drawn = figure(measured, figure_path)
        if drawn is not None:
            out += [f"![{OP} fusion]({drawn.relative_to(folder).as_posix()})", ""]
    return out


SECTION = Section("fusion", section)  # gemm_bias_relu's (Problem.report_sections)

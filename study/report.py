"""Markdown and figures from a results document alone (no GPU, no registry needed).

Pure functions from results to text; the figure is the one side effect and goes to
``figures/`` beside the Markdown.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from tabulate import tabulate

BACKEND_LABEL = {"cuda": "CUDA", "triton": "Triton", "cublas": "cuBLAS"}


def shape_label(shape: dict) -> str:
    return "×".join(str(v) for v in shape.values())


def reason_line(reason: str | None) -> str:
    """The informative line of a (possibly multi-line) reason: compiler errors end with
    the actual message, after the source excerpt."""
    lines = [line.strip() for line in (reason or "").splitlines() if line.strip()]
    if not lines:
        return ""
    head = lines[0].split(":", 1)[0]
    return lines[0] if len(lines) == 1 else f"{head}: {lines[-1]}"


def _num(value, fmt: str, suffix: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{suffix}"


def _cell(m: dict | None) -> list[str]:
    """GFLOPS, % of peak, × cuBLAS for one measurement, or its status where not ok."""
    if m is None:
        return ["—", "—", "—"]
    if m["status"] != "ok":
        return [f"**{m['status']}**", "—", "—"]
    return [_num(m["gflops"], ",.0f"), _num(m["pct_peak"], ".1f", " %"), _num(m["vs_cublas"], ".2f", "×")]


def _groups(measurements):
    """(op) -> (shape json, dtype, autotune mode) -> list of measurements, in first-seen order."""
    ops: dict = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        key = (json.dumps(m["shape"]), m["dtype"])
        ops[m["op"]][key].append(m)
    return ops


def _modes(ms) -> list[str]:
    modes = sorted({m["autotune"] for m in ms if m["autotune"] != "n/a"})
    return modes or ["off"]


def ladder_table(ms: list[dict], mode: str) -> str:
    """Rung rows, CUDA | Triton | cuBLAS side by side; the baseline closes the table."""
    rungs = sorted({(m["rung_index"], m["rung"]) for m in ms if m["rung"] is not None})
    pick = {(m["rung"], m["backend"]): m for m in ms if m["autotune"] in (mode, "n/a")}
    header = ["#", "rung",
              "CUDA GFLOPS", "CUDA % peak", "CUDA × cuBLAS",
              "Triton GFLOPS", "Triton % peak", "Triton × cuBLAS",
              "cuBLAS GFLOPS", "cuBLAS % peak"]
    rows = []
    for index, rung in rungs:
        rows.append([f"v{index}", f"`{rung}`", *_cell(pick.get((rung, "cuda"))),
                     *_cell(pick.get((rung, "triton"))), "", ""])
    base = pick.get((None, "cublas"))
    base_cells = _cell(base)
    rows.append(["", "**cuBLAS baseline**", "", "", "", "", "", "", base_cells[0], base_cells[1]])
    return tabulate(rows, header, tablefmt="github", disable_numparse=True)


def detail_table(ms: list[dict]) -> str:
    header = ["implementation", "shape", "autotune", "status", "median ms", "min ms", "q1–q3 ms", "n",
              "rel. stdev", "error / tol.", "config"]
    rows = []
    for m in ms:
        err = m.get("error") or {}
        q = "—" if m["q1_ms"] is None else f"{m['q1_ms']:.4f}–{m['q3_ms']:.4f}"
        rows.append([
            f"`{m['implementation']}`", f"{shape_label(m['shape'])} {m['dtype']}", m["autotune"], m["status"], _num(m["median_ms"], ".4f"),
            _num(m["min_ms"], ".4f"), q, str(len(m["samples_ms"])) if m["samples_ms"] else "—",
            _num(None if m["rel_stdev"] is None else 100 * m["rel_stdev"], ".2f", " %"),
            "—" if not err else f"{_num(err.get('err'), '.2e')} / {_num(err.get('tolerance'), '.0e')}",
            "`" + ", ".join(f"{k}={v}" for k, v in (m["config"] or {}).items()) + "`",
        ])
    return tabulate(rows, header, tablefmt="github", disable_numparse=True)


def device_block(env: dict) -> str:
    gpu = env["gpu"]
    git = env.get("git", {})
    dirty = {True: " (dirty)", False: "", None: ""}[git.get("dirty")]
    rows = [
        ["GPU", f"{gpu['name']} (sm_{gpu['capability'][0]}{gpu['capability'][1]}, {gpu['sms']} SMs, "
                f"{gpu['l2_bytes'] / 2**20:.0f} MiB L2)"],
        ["max clocks", f"SM {gpu['max_sm_clock_mhz']:.0f} MHz, memory {gpu['max_mem_clock_mhz']:.0f} MHz "
                       f"({gpu['bus_width_bits']}-bit), from {gpu['clock_source']}"],
        ["FP32 peak (theoretical)", _num(gpu.get("fp32_peak_gflops"), ",.0f", " GFLOPS")],
        ["memory peak (theoretical)", _num(gpu.get("memory_peak_gbps"), ",.0f", " GB/s")],
        ["driver / CUDA", f"{gpu['driver']} / {env['cuda']}"],
        ["torch / triton / cupy", f"{env['torch']} / {env['triton']} / {env['cupy']}"],
        ["python", env["python"]],
        ["commit", f"`{git.get('commit', 'unknown')}`{dirty}"],
        ["command", f"`{env['command']}`"],
        ["measured (UTC)", env["utc"]],
    ]
    return tabulate(rows, ["", ""], tablefmt="github", disable_numparse=True)


def legend(env: dict) -> str:
    t = env["timer"]
    flush = (f"the L2 flushed before each by writing {t['flush_factor']}× the L2 size"
             if t["flush_l2"] else "no L2 flush (hot cache)")
    return (
        f"**How these numbers were measured.** Every implementation first passes a correctness gate "
        f"against a float64 reference on a NaN-poisoned output (outside tolerance: `wrong`, never "
        f"timed). Then at least {t['min_warmup']} warm-up launches and {t['warmup_ms']:g} ms of warm-up "
        f"(compilation and autotuning happen before), then {t['reps']} timed repetitions, each between "
        f"two CUDA events on the stream the kernel runs on, {flush}. The headline is the **median**; "
        f"min and quartiles are in the details. GFLOPS = 2·M·N·K / median. "
        f"**% peak** is of the theoretical FP32 peak: {env['gpu'].get('peak_source', '')}. "
        f"**× cuBLAS** = cuBLAS median / this median on the same shape and dtype (> 1: faster than cuBLAS); "
        f"cuBLAS runs through `torch.matmul` with TF32 off. "
        f"Autotune `off` uses each rung's declared config (the Triton twin mirrors its CUDA rung); "
        f"`on` searches the rung's space (CUDA: every `-D` point timed by this runner; Triton: "
        f"`triton.autotune`); the config used is in the details.")


def figure(measurements: list[dict], op: str, path: Path) -> Path | None:
    """One seaborn figure of the ladder: GFLOPS by rung, a panel per shape, cuBLAS dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    ok = [m for m in measurements if m["op"] == op and m["status"] == "ok"]
    rungs = [m for m in ok if m["rung"] is not None]
    if not rungs:
        return None
    modes = {m["autotune"] for m in rungs}
    frame = pd.DataFrame([{
        "rung": f"v{m['rung_index']}",
        "implementation": BACKEND_LABEL[m["backend"]] + (f" (autotune {m['autotune']})" if len(modes) > 1 else ""),
        "shape": shape_label(m["shape"]) + f" {m['dtype']}",
        "GFLOPS": m["gflops"],
    } for m in rungs])
    shapes = list(dict.fromkeys(frame["shape"]))
    sns.set_theme(style="whitegrid")
    grid = sns.catplot(data=frame, kind="bar", x="rung", y="GFLOPS", hue="implementation", col="shape",
                       col_order=shapes, order=sorted(frame["rung"].unique(), key=lambda r: int(r[1:])),
                       height=3.6, aspect=1.25, sharey=False)
    for shape, ax in zip(shapes, grid.axes.flat):
        base = [m for m in ok if m["backend"] == "cublas" and shape_label(m["shape"]) + f" {m['dtype']}" == shape]
        if base:
            ax.axhline(base[0]["gflops"], color="black", linestyle="--", linewidth=1)
            ax.text(0.01, base[0]["gflops"], " cuBLAS", va="bottom", ha="left", fontsize=8,
                    transform=ax.get_yaxis_transform())
        ax.set_title(shape)
    grid.figure.suptitle(f"{op}: GFLOPS by rung (median)", y=1.03)
    path.parent.mkdir(parents=True, exist_ok=True)
    grid.figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(grid.figure)
    return path


def render(doc: dict, md_path: Path, draw: bool = True) -> str:
    """The Markdown report of a results document; figures go beside it."""
    env, ms = doc["environment"], doc["measurements"]
    md_path = Path(md_path)
    out = [f"# `study compare` on {env['gpu']['name']}", "",
           f"Generated from `{md_path.stem}.json` beside it; `python -m study report {md_path.stem}.json` "
           "regenerates it without a GPU. Do not edit by hand.", "",
           device_block(env), ""]
    for op, groups in _groups(ms).items():
        out += [f"## {op}", ""]
        if draw:
            fig = figure(ms, op, md_path.parent / "figures" / f"{md_path.stem}-{op}.png")
            if fig is not None:
                out += [f"![{op} ladder]({fig.relative_to(md_path.parent).as_posix()})", ""]
        for (shape_json, dtype), group in groups.items():
            shape = json.loads(shape_json)
            for mode in _modes(group):
                out += [f"### {op} {shape_label(shape)} {dtype}, autotune {mode}", "",
                        ladder_table(group, mode), ""]
        problems = [m for m in ms if m["op"] == op and m["status"] != "ok"]
        if problems:
            out += ["**Not measured** (never ranked):", ""]
            out += [f"- `{m['implementation']}` {shape_label(m['shape'])} {m['dtype']} autotune "
                    f"{m['autotune']}: **{m['status']}** — {reason_line(m['reason'])}"
                    for m in problems]
            out.append("")
        out += ["<details><summary>All measurements</summary>", "",
                detail_table([m for m in ms if m["op"] == op]), "", "</details>", ""]
    out += ["## Legend", "", legend(env), ""]
    return "\n".join(out)


def write_report(doc: dict, md_path: Path) -> Path:
    md_path = Path(md_path)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(render(doc, md_path))
    return md_path

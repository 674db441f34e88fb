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


def flags(m: dict) -> list[str]:
    """Why a number deserves a second look: noise above target, throttling, launch-bound."""
    out = []
    timing, clocks = m.get("timing") or {}, m.get("clocks") or {}
    if timing.get("above_target"):
        out.append("noisy")
    if timing.get("discarded_throttled") or clocks.get("below_threshold"):
        out.append("throttled")
    if m.get("launch_bound"):
        out.append("launch-bound")
    return out


def _cell(m: dict | None) -> list[str]:
    """GFLOPS, % of peak, % of ceiling, × cuBLAS for one measurement, or its status where not ok."""
    if m is None:
        return ["—", "—", "—", "—"]
    if m["status"] != "ok":
        return [f"**{m['status']}**", "—", "—", "—"]
    mark = "".join(f" ⚑{f}" for f in flags(m))
    return [_num(m["gflops"], ",.0f") + mark, _num(m["pct_peak"], ".1f", " %"),
            _num(m.get("pct_ceiling"), ".1f", " %"), _num(m["vs_cublas"], ".2f", "×")]


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
              "CUDA GFLOPS", "CUDA % peak", "CUDA % ceiling", "CUDA × cuBLAS",
              "Triton GFLOPS", "Triton % peak", "Triton % ceiling", "Triton × cuBLAS",
              "cuBLAS GFLOPS", "cuBLAS % peak", "cuBLAS % ceiling"]
    rows = []
    for index, rung in rungs:
        rows.append([f"v{index}", f"`{rung}`", *_cell(pick.get((rung, "cuda"))),
                     *_cell(pick.get((rung, "triton"))), "", "", ""])
    base_cells = _cell(pick.get((None, "cublas")))
    rows.append(["", "**cuBLAS baseline**", *[""] * 8, *base_cells[:3]])
    return tabulate(rows, header, tablefmt="github", disable_numparse=True)


def detail_table(ms: list[dict]) -> str:
    header = ["implementation", "shape", "autotune", "mode", "status", "median ms", "min ms", "q1–q3 ms", "n",
              "stop", "noise (inliers)", "outliers", "rel. stdev (all)", "SM MHz (min–max)", "flags",
              "error / tol.", "config"]
    rows = []
    for m in ms:
        err = m.get("error") or {}
        timing, clocks = m.get("timing") or {}, m.get("clocks") or {}
        q = "—" if m["q1_ms"] is None else f"{m['q1_ms']:.4f}–{m['q3_ms']:.4f}"
        mhz = ("unknown" if clocks and not clocks.get("available") else
               "—" if clocks.get("sm_mhz_min") is None else f"{clocks['sm_mhz_min']:.0f}–{clocks['sm_mhz_max']:.0f}")
        stop = timing.get("stop") or "—"
        if timing.get("discarded_throttled"):
            stop += f" ({timing['discarded_throttled']} throttled discarded)"
        rows.append([
            f"`{m['implementation']}`", f"{shape_label(m['shape'])} {m['dtype']}", m["autotune"],
            m.get("mode") or "—", m["status"], _num(m["median_ms"], ".4f"),
            _num(m["min_ms"], ".4f"), q, str(len(m["samples_ms"])) if m["samples_ms"] else "—", stop,
            _num(None if timing.get("noise") is None else 100 * timing["noise"], ".2f", " %"),
            "—" if m.get("outliers") is None else str(m["outliers"]),
            _num(None if m["rel_stdev"] is None else 100 * m["rel_stdev"], ".2f", " %"), mhz,
            ", ".join(flags(m)) or "",
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
    t = {"mode": "cold", "flush_factor": 2, "noise": None, "min_samples": t.get("reps"), "min_time_s": 0,
         "timeout_s": 0, "throttle_threshold": None, "discard_throttled": False, **t}  # schema 1: fixed reps, cold
    mode = {
        "cold": f"the L2 flushed before each sample by writing {t['flush_factor']}× the L2 size (not timed), "
                f"each launch between its own pair of CUDA events",
        "hot": "launches back to back without flushing the L2, each between its own pair of CUDA events",
        "graph": "N launches captured in one CUDA graph, each replay between two CUDA events and divided by "
                 "N (no L2 flush)",
    }[t["mode"]]
    stop = (f"stops after exactly {t['reps']} kept samples" if t.get("reps") else
            f"continues until the relative standard deviation of the kept samples inside Tukey's fences is at most "
            f"{100 * t['noise']:g} %, "
            f"with at least {t['min_samples']} samples and {t['min_time_s']:g} s of GPU time, or "
            f"{t['timeout_s']:g} s have passed (⚑noisy: stopped by the timeout above the target)")
    throttle = ("Clocks were not recorded (results schema 1)." if t["throttle_threshold"] is None else
                f"Samples taken while the SM clock (NVML) was below {100 * t['throttle_threshold']:g} % of its "
                f"maximum are {'discarded, then a pause' if t['discard_throttled'] else 'kept and flagged'} "
                f"(⚑throttled).")
    ceilings = env.get("ceilings") or {}
    overhead = env.get("launch_overhead_ms")
    return (
        f"**How these numbers were measured.** Every implementation first passes a correctness gate "
        f"against a float64 reference on a NaN-poisoned output (outside tolerance: `wrong`, never "
        f"timed). Warm-up: at least {t['min_warmup']} launches and {t['warmup_ms']:g} ms (compilation and "
        f"autotuning happen before). Mode `{t['mode']}`: {mode}. Sampling {stop}. {throttle} "
        f"The headline is the **median**; min and quartiles are in the details. GFLOPS = 2·M·N·K / median. "
        f"**% peak** is of the *theoretical* FP32 peak: {env['gpu'].get('peak_source', '')}. "
        + (f"**% ceiling** is of the *measured* FP32 ceiling, an FFMA loop at "
           f"{ceilings['ffma_gflops']:,.0f} GFLOPS on this GPU (`python -m study ceilings`). "
           if ceilings.get("ffma_gflops") else "")
        + (f"An empty kernel measured {overhead * 1e3:.2f} µs this run; a median within 2× of it is "
           f"marked ⚑launch-bound: an event pair also spans a fixed cost around each launch that "
           f"Nsight Compute's kernel duration leaves out (`python -m study validate` measures it), a large "
           f"part of such a number; `--mode graph` spreads it over many launches. " if overhead else "")
        + "**× cuBLAS** = cuBLAS median / this median on the same shape and dtype (> 1: faster than cuBLAS); "
        "cuBLAS runs through `torch.matmul` with TF32 off. "
        "Autotune `off` uses each rung's declared config (the Triton twin mirrors its CUDA rung); "
        "`on` searches the rung's space (CUDA: every `-D` point timed by this runner; Triton: "
        "`triton.autotune`); the config used is in the details.")


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
    incomplete = doc.get("complete") is False
    out = [f"# `study compare` on {env['gpu']['name']}", "",
           *(["> **Incomplete run**: re-run the same command to resume it.", ""] if incomplete else []),
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
        flagged = [m for m in ms if m["op"] == op and m["status"] == "ok" and flags(m)]
        if flagged:
            out += ["**Check these numbers** (see the legend):", ""]
            out += [f"- `{m['implementation']}` {shape_label(m['shape'])} autotune {m['autotune']}: "
                    f"{', '.join(flags(m))} (noise {100 * (m['timing'] or {}).get('noise', 0):.2f} %, "
                    f"stop `{(m['timing'] or {}).get('stop')}`, SM clock "
                    f"{(m['clocks'] or {}).get('sm_mhz_min')}–{(m['clocks'] or {}).get('sm_mhz_max')} MHz, "
                    f"reasons {', '.join((m['clocks'] or {}).get('throttle_reasons') or []) or 'none'})"
                    for m in flagged]
            out.append("")
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

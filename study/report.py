"""Markdown and figures from a results document alone (no GPU, no registry needed).

Pure functions from results to text; the figures are the one side effect and go to
``figures/`` beside the Markdown. Every figure shown is derived in :mod:`study.metrics`;
this module only lays them out, in the unit of each op (GFLOPS or GB/s).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from tabulate import tabulate

from study import fusion, metrics, seed_ladder

BACKEND_LABEL = {"cuda": "CUDA", "triton": "Triton", "cublas": "cuBLAS", "cublaslt": "cuBLASLt", "torch": "PyTorch",
                 "inductor": "Inductor"}
# Sections an op adds after its figures: op -> (the figure's name, the function that writes them).
SECTIONS = {fusion.OP: ("fusion", fusion.section), seed_ladder.OP: ("seed", seed_ladder.section)}
RUNG_BACKENDS = ("cuda", "triton")
MODE_ORDER = ("cold", "hot", "graph")


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


def unit_of(ms: list[dict]) -> str:
    return metrics.unit((ms[0].get("work") or {}).get("bound", "compute")) if ms else "GFLOPS"


def flags(m: dict) -> list[str]:
    """Why a number deserves a second look: noise above target, throttling, launch-bound,
    above the memory peak (served from L2)."""
    out = []
    timing, clocks = m.get("timing") or {}, m.get("clocks") or {}
    if timing.get("above_target"):
        out.append("noisy")
    if timing.get("discarded_throttled") or clocks.get("below_threshold"):
        out.append("throttled")
    if m.get("launch_bound"):
        out.append("launch-bound")
    if timing.get("host_bound_batches"):
        out.append("host-bound")
    if m.get("sanitizer"):
        out.append("sanitizer")
    if (m.get("work") or {}).get("bound") == "memory" and (m.get("pct_peak") or 0) > 100:
        out.append("L2")
    return out


def _modes(ms) -> list[str]:
    present = {m.get("mode") or "cold" for m in ms}
    return [mode for mode in MODE_ORDER if mode in present]


def _tunes(ms) -> list[str]:
    return sorted({m["autotune"] for m in ms if m["autotune"] != "n/a"}) or ["off"]


def _headline_cell(m: dict | None) -> str:
    if m is None:
        return "—"
    if m["status"] != "ok":
        return f"**{m['status']}**"
    return _num(metrics.headline(m), ",.0f") + "".join(f" ⚑{f}" for f in flags(m))


# Math modes that emulate a precision on other units: their rows say so, so that a tensor-core
# rung in an FP32 table is never read as FFMA (its % peak is of the emulation's own peak).
EMULATION = {"3xtf32": "3xTF32: FP32-accurate tensor-core emulation"}
EMULATION_PEAK = {"3xtf32": "a **3xTF32** row (FP32 problem, FP32 gate, three TF32 tensor-core products per product) "
                            "counts the FP32 problem's FLOPs; its % peak is of a third of the TF32 peak"}


def ladder_table(ms: list[dict], tune: str) -> str:
    """One (op, shape, precision) at one autotune setting: rows are rungs, then baselines;
    a column group per backend (CUDA, Triton) with the headline per timing mode, % peak and
    % ceiling of the first mode, and × ref per mode. Baseline rows fill the first group.
    Columns empty in every row are left out."""
    unit = unit_of(ms)
    modes = _modes(ms)
    first = modes[0]
    pick = {(m["rung"] or m.get("baseline"), m["backend"], m.get("mode") or "cold"): m
            for m in ms if m["autotune"] in (tune, "n/a")}
    backends = [b for b in RUNG_BACKENDS if any(m["backend"] == b and m["rung"] for m in ms)] or [None]

    def group(key, backend) -> list[str]:
        by_mode = {mode: pick.get((key, backend, mode)) for mode in modes}
        head = by_mode[first]
        ok = head is not None and head["status"] == "ok"
        return ([_headline_cell(by_mode[mode]) for mode in modes]
                + [_num(head["pct_peak"], ".1f", " %") if ok else "—",
                   _num(head.get("pct_ceiling"), ".1f", " %") if ok else "—"]
                + [_num(by_mode[mode].get("x_ref"), ".2f", "×") if by_mode[mode] and by_mode[mode]["status"] == "ok"
                   else "—" for mode in modes])

    suffix = (lambda mode: f" {mode}") if len(modes) > 1 else (lambda mode: "")
    header = ["#", "rung"]
    for b in backends:
        label = BACKEND_LABEL[b] if b else "baseline"  # a table of baselines only
        header += ([f"{label} {unit}{suffix(mode)}" for mode in modes]
                   + [f"{label} % peak{suffix(first)}", f"{label} % ceiling{suffix(first)}"]
                   + [f"{label} × ref{suffix(mode)}" for mode in modes])
    rungs = sorted({(m["rung_index"], m["rung"]) for m in ms if m["rung"] is not None})
    emulated = {m["rung"]: m["math"] for m in ms if m["rung"] is not None and m.get("math") in EMULATION}
    rows = [[f"v{index}", f"`{rung}`" + (f" ({EMULATION[emulated[rung]]})" if rung in emulated else ""),
             *[c for b in backends for c in group(rung, b)]] for index, rung in rungs]
    width = len(header) - 2 - len(group("", backends[0]))
    bases = {}
    for m in ms:
        if m["rung"] is None:
            bases.setdefault((not m.get("reference"), m["baseline"] or "baseline"), m)
    for (_, key), m in sorted(bases.items()):
        role = "reference" if m.get("reference") else "baseline"
        title = f"**{m['baseline'] or 'baseline'}** ({m.get('library') or BACKEND_LABEL.get(m['backend'], m['backend'])}, {role})"
        rows.append(["", title, *group(key, m["backend"]), *[""] * width])
    keep = [i for i in range(len(header)) if i < 2 or any(r[i] not in ("—", "") for r in rows)]
    return tabulate([[r[i] for i in keep] for r in rows], [header[i] for i in keep], tablefmt="github",
                    disable_numparse=True)


def detail_table(ms: list[dict]) -> str:
    header = ["implementation", "shape", "precision", "autotune", "mode", "status", "median ms", "min ms",
              "q1–q3 ms", "n", "stop", "noise (inliers)", "median ± (95 %)", "outliers", "rel. stdev (all)",
              "SM MHz (min–max)", "flags", "error / tol.", "config"]
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
            f"`{m['implementation']}`", shape_label(m["shape"]), f"{m.get('precision')} ({m['dtype']}, {m.get('math')})",
            m["autotune"], m.get("mode") or "—", m["status"], _num(m["median_ms"], ".4f"),
            _num(m["min_ms"], ".4f"), q, str(len(m["samples_ms"])) if m["samples_ms"] else "—", stop,
            _num(None if timing.get("noise") is None else 100 * timing["noise"], ".2f", " %"),
            _num(None if timing.get("median_ci") is None else 100 * timing["median_ci"], ".3f", " %"),
            "—" if m.get("outliers") is None else str(m["outliers"]),
            _num(None if m["rel_stdev"] is None else 100 * m["rel_stdev"], ".2f", " %"), mhz,
            ", ".join(flags(m)) or "",
            "—" if not err else f"{_num(err.get('err'), '.2e')} / {_num(err.get('tolerance'), '.0e')}",
            "`" + ", ".join(f"{k}={v}" for k, v in (m["config"] or {}).items()) + "`",
        ])
    return tabulate(rows, header, tablefmt="github", disable_numparse=True)


def peaks_text(gpu: dict, maths: list[str]) -> str:
    """The peaks this report uses, each with the clock it assumes."""
    peaks = gpu.get("peaks_gflops") or {}
    clock = gpu.get("peak_clock_mhz") or gpu.get("max_sm_clock_mhz")
    parts = []
    for math in maths:
        if math in peaks:
            text = f"{metrics.PEAK_NAMES.get(math, math)} {peaks[math]:,.0f} GFLOPS at {clock:.0f} MHz"
            sheet = (gpu.get("datasheet_peaks_gflops") or {}).get(math)
            if sheet:
                text += f" (the datasheet's {sheet:,.0f} at {gpu['datasheet_tensor_clock_mhz']:.0f} MHz)"
            parts.append(text)
    parts.append(f"memory {_num(gpu.get('memory_peak_gbps'), ',.0f', ' GB/s')}")
    return "; ".join(parts)


def gpus_used(measurements: list[dict]) -> str | None:
    """The physical GPUs (UUID) the records ran on, with how many each, when there is more than
    one (``--gpus``, or a run resumed on another machine): two GPUs of one model differ by up to a
    few percent (reports/h200/scaling/), so a reader must know which numbers share one."""
    counts: dict = {}
    for m in measurements:
        gpu = m.get("gpu") or {}
        if gpu.get("uuid"):
            counts[gpu["uuid"]] = counts.get(gpu["uuid"], 0) + 1
    if len(counts) < 2:
        return None
    return "; ".join(f"`{uuid}`: {n} measurements" for uuid, n in counts.items())


def device_block(env: dict, maths: list[str], measurements: list[dict] | None = None) -> str:
    gpu = env["gpu"]
    git = env.get("git", {})
    dirty = {True: " (dirty)", False: "", None: ""}[git.get("dirty")]
    rows = [
        ["GPU", f"{gpu['name']} (sm_{gpu['capability'][0]}{gpu['capability'][1]}, {gpu['sms']} SMs, "
                f"{gpu['l2_bytes'] / 2**20:.0f} MiB L2)"],
        ["max clocks", f"SM {gpu['max_sm_clock_mhz']:.0f} MHz, memory {gpu['max_mem_clock_mhz']:.0f} MHz "
                       f"({gpu['bus_width_bits']}-bit), from {gpu['clock_source']}"],
        ["peaks (theoretical)", peaks_text(gpu, maths)],
        ["driver / CUDA", f"{gpu['driver']} / {env['cuda']}"],
        ["torch / triton / cupy", f"{env['torch']} / {env['triton']} / {env['cupy']}"],
        ["python", env["python"]],
        ["commit", f"`{git.get('commit', 'unknown')}`{dirty}"],
        ["command", f"`{env['command']}`"],
        ["measured (UTC)", env["utc"]],
    ]
    several = gpus_used(measurements or [])
    if several:
        rows.insert(1, ["GPUs (UUID)", several])
    return tabulate(rows, ["", ""], tablefmt="github", disable_numparse=True)


MODE_TEXT = {
    "cold": "`cold`: the L2 flushed before each sample by {how} {flush}× the L2 size (not timed), each launch "
            "between its own pair of CUDA events — what HBM delivers",
    "hot": "`hot`: launches back to back without flushing the L2, each between its own pair of CUDA events — data "
           "that fits in L2 is served from it, so a memory-bound figure above the memory peak (⚑L2) is L2 "
           "bandwidth, not HBM",
    "graph": "`graph`: N launches captured in one CUDA graph, each replay between two CUDA events and divided by "
             "N (no L2 flush)",
}


def legend(env: dict, ms: list[dict]) -> str:
    t = env["timer"]
    t = {"mode": "cold", "flush_factor": 2, "noise": None, "ci": None, "min_samples": t.get("reps"), "min_time_s": 0,
         "timeout_s": 0, "throttle_threshold": None, "discard_throttled": False, **t}  # schema 1: fixed reps, cold
    # Files before the read flush (docs/method.md §3) record no "flush": theirs wrote, leaving dirty lines.
    how = "reading" if str(t.get("flush", "")).startswith("read") else "writing (dirty lines left for the kernel)"
    modes = "; ".join(MODE_TEXT[mode].format(flush=t["flush_factor"], how=how) for mode in _modes(ms))
    tick = any("resolution_ms" in (m.get("timing") or {}) for m in ms)  # runs since the tick rule
    ci = (f" or the median's 95 % confidence interval (order statistics) is within ± {100 * t['ci']:g} % of it"
          + (" or one tick of the event timer" if tick else "") +
          " (stop `ci`: a kernel whose launches jitter more than that target, but whose median more samples "
          "pin down)" if t.get("ci") else "")
    stop = (f"stops after exactly {t['reps']} kept samples" if t.get("reps") else
            f"continues, with at least {t['min_samples']} samples and {t['min_time_s']:g} s of GPU time, until the "
            f"relative standard deviation of the kept samples inside Tukey's fences is at most "
            f"{100 * t['noise']:g} % (stop `noise`){ci}, or {t['timeout_s']:g} s have passed (⚑noisy: stopped "
            f"by the timeout or the sample limit with neither target met)")
    throttle = ("Clocks were not recorded (results schema 1)." if t["throttle_threshold"] is None else
                f"Samples taken while the SM clock (NVML) was below {100 * t['throttle_threshold']:g} % of its "
                f"maximum are {'discarded, then a pause' if t['discard_throttled'] else 'kept and flagged'} "
                f"(⚑throttled).")
    ceilings = env.get("ceilings") or {}
    overhead = env.get("launch_overhead_ms")
    gpu = env["gpu"]
    units = []
    if any((m.get("work") or {}).get("bound", "compute") == "compute" for m in ms):
        units.append("**GFLOPS** = the op's FLOPs (declared by its problem, e.g. 2·M·N·K for a GEMM) / median; "
                     "**% peak** of the theoretical peak of the unit the precision uses: "
                     f"{gpu.get('peak_source', '')}")
        for math, what in EMULATION_PEAK.items():
            if any(m.get("math") == math for m in ms):
                units.append(what)
    if any((m.get("work") or {}).get("bound") == "memory" for m in ms):
        units.append("**GB/s** = the op's minimum bytes (every input read once, every output written once) / "
                     f"median; **% peak** of the theoretical memory bandwidth ({gpu.get('memory_peak_source', '')})")
    measured = [f"{name} {ceilings[key]:,.0f} {'GB/s' if key == 'copy_gbps' else 'GFLOPS'}"
                for key, name in [*metrics.CEILINGS.values(), metrics.MEMORY_CEILING] if ceilings.get(key)]
    return (
        f"**How these numbers were measured.** Every implementation first passes a correctness gate "
        f"against a float64 reference on a NaN-poisoned output (outside tolerance: `wrong`, never "
        f"timed)" + (f", {t['gate_trials']} times on fresh random inputs and, for ops that have them, once more "
                     f"on small random integers whose exact answer leaves a misplaced element nowhere to hide"
                     if t.get("gate_trials") else "") + ". "
        f"Warm-up: at least {t['min_warmup']} launches and {t['warmup_ms']:g} ms (compilation and "
        f"autotuning happen before). Modes: {modes}. Sampling {stop}. {throttle} "
        f"The headline is the **median**; min and quartiles are in the details. " + ". ".join(units) + ". "
        + (f"**% ceiling** is of the *measured* ceiling of the same kind on this GPU (`python -m study "
           f"ceilings`): {', '.join(measured)}. " if measured else "")
        + ("A GB/s figure's ceiling is the device copy of as many bytes as the case moves, cold, its launch and "
           "ramp included (the copy-by-size curve of `ceilings --copy-sizes`, interpolated in log bytes): "
           + ", ".join(f"{b / 2**20:,.0f} MiB {g:,.0f} GB/s" for b, g in sorted(ceilings[metrics.COPY_CURVE]))
           + ". " if ceilings.get(metrics.COPY_CURVE) and any((m.get("work") or {}).get("bound") == "memory"
                                                              for m in ms) else "")
        + (f"An empty kernel measured {overhead * 1e3:.2f} µs this run; a median within 2× of it is "
           f"marked ⚑launch-bound: an event pair also spans a fixed cost around each launch that "
           f"Nsight Compute's kernel duration leaves out (`python -m study validate` measures it), a large "
           f"part of such a number; `--mode graph` spreads it over many launches. " if overhead else "")
        + ("Before each batch of samples a GPU delay kernel runs as long as the host took to queue the previous "
           "batch (at most 20 ms), so that no sample waits for the host; a batch whose queueing still took longer "
           "is counted and flagged ⚑host-bound. "
           if any("host_bound_batches" in (m.get("timing") or {}) for m in ms) else "" if not any(
               m.get("timing") for m in ms) else
           "Before each batch of samples a 200 µs GPU delay kernel covers the host's queueing of the first "
           "samples; back-to-back samples of kernels shorter than the host's launch time (hot mode) can still "
           "include the host's launch latency (this run predates the lead sized to the batch). ")
        + ("⚑sanitizer: `python -m study sanitize` (sanitize.json beside this report) found hazards in the very "
           "kernel source this measurement ran. " if any(m.get("sanitizer") for m in ms) else "")
        + "**× ref** = the reference baseline's median / this median on the same shape, precision and mode "
        "(> 1: faster than the reference); baseline rows give their own figures in the first column group. "
        "Library GEMM baselines run with TF32 off (on only for the `tf32` precision) and reduced-precision "
        "reductions off; the cuBLAS switches are in each record's config. "
        "Autotune `off` uses each rung's declared config (the Triton twin mirrors its CUDA rung); "
        "`on` searches the rung's space (CUDA: every `-D` point timed by this runner; Triton: "
        "`triton.autotune`); the config used is in the details.")


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
    first = (_modes(ok) or ["cold"])[0]
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
    grid.figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(grid.figure)
    return path


def best_by_shape(measurements: list[dict], op: str) -> tuple[str, dict] | None:
    """(timing mode, {(shape, precision, series): record}): per shape and precision the rung of each
    series with the highest × reference, in the first timing mode, either autotune setting. A series
    is a backend, or a backend and a math mode other than the precision's own (3xTF32 in an FP32
    table), so FFMA is never credited with tensor-core speed. None below two shapes."""
    ok = [m for m in measurements if m["op"] == op and m["status"] == "ok" and m["rung"] is not None
          and m.get("x_ref") and not m.get("pad")]  # a padded layout (align) is another problem
    first = (_modes(ok) or ["cold"])[0]
    ok = [m for m in ok if (m.get("mode") or "cold") == first]
    if len({shape_label(m["shape"]) for m in ok}) < 2:
        return None
    best: dict = {}
    for m in ok:
        own = (m.get("math") or "ieee") in EMULATION
        series = BACKEND_LABEL.get(m["backend"], m["backend"]) + (f" ({m['math']})" if own else "")
        key = (shape_label(m["shape"]), m.get("precision") or m["dtype"], series)
        if key not in best or m["x_ref"] > best[key]["x_ref"]:
            best[key] = m
    return first, best


def best_table(measurements: list[dict], op: str) -> str | None:
    """The best figure's numbers: per shape and precision, the reference's headline figure and each
    series' best rung (its autotune setting, figure and × reference). None where the figure is None."""
    found = best_by_shape(measurements, op)
    if found is None:
        return None
    first, best = found
    unit = unit_of([m for m in measurements if m["op"] == op])
    series = sorted({name for _, _, name in best})
    rows = []
    for shape, precision in dict.fromkeys((shape, precision) for shape, precision, _ in best):
        ref = next((m for m in measurements if m["op"] == op and m.get("reference") and m["status"] == "ok"
                    and shape_label(m["shape"]) == shape and (m.get("precision") or m["dtype"]) == precision
                    and (m.get("mode") or "cold") == first and not m.get("pad")), None)
        cells = []
        for name in series:
            m = best.get((shape, precision, name))
            cells.append(f"v{m['rung_index']} ({m['autotune']}) {_num(metrics.headline(m), ',.0f')} · "
                         f"{m['x_ref']:.2f}×" if m else "—")
        reference = f"{_num(metrics.headline(ref), ',.0f')} ({ref.get('baseline')})" if ref else "—"
        rows.append([shape, precision, reference, *cells])
    return tabulate(rows, ["shape", "precision", f"reference {unit}", *series], tablefmt="github", disable_numparse=True)


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
    grid.figure.savefig(path, dpi=110, bbox_inches="tight")
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
    first = (_modes(ok) or ["cold"])[0]
    ok = [m for m in ok if (m.get("mode") or "cold") == first]
    gpu = env["gpu"]
    bandwidth = gpu.get("memory_peak_gbps")
    if not ok or not bandwidth:
        return None
    intensities = [m["intensity"] for m in ok]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    xs = np.geomspace(min(lo, 0.1), max(hi, 1000), 200)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    maths = sorted({m.get("math") or "ieee" for m in ok})
    for math in maths:
        peak = (gpu.get("peaks_gflops") or {}).get(math)
        if peak:
            ax.plot(xs, np.minimum(peak, bandwidth * xs), linewidth=1.2,
                    label=f"roof: {metrics.PEAK_NAMES.get(math, math)} {peak:,.0f} GFLOPS, memory {bandwidth:,.0f} GB/s")
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
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    ax.grid(True, which="both", linewidth=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _groups(measurements):
    """op -> (shape json, precision, padding) -> measurements, in first-seen order."""
    ops: dict = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        ops[m["op"]][(json.dumps(m["shape"]), m.get("precision") or m["dtype"], m.get("pad") or 0)].append(m)
    return ops


def with_sanitizer_marks(ms: list[dict], folder: Path) -> list[dict]:
    """CUDA records whose very source (same hash) ``study sanitize`` found unclean, marked; results
    of another source are stale and ignored."""
    path = folder / "sanitize.json"
    if not path.is_file():
        return ms
    from study.sanitize import unclean_sources

    unclean = unclean_sources(json.loads(path.read_text()))
    return [{**m, "sanitizer": unclean[(m["source"], m.get("source_hash"))]}
            if (m["source"], m.get("source_hash")) in unclean else m for m in ms]


CLOCK_SPREAD = 0.05  # median SM clocks further apart than this: the equal-clock table is shown


def clock_table(ms: list[dict], tune: str) -> str | None:
    """One (op, shape, precision) at one autotune setting, compared at an equal SM clock: each ok
    measurement of a compute-bound op (first timing mode) with its median clock, its headline per
    GHz (metrics.per_ghz) and that figure against the reference's. None unless the median clocks
    differ by more than CLOCK_SPREAD — there the plain × ref mixes kernel and clock."""
    modes = _modes(ms)
    pick = [m for m in ms if m["status"] == "ok" and m["autotune"] in (tune, "n/a")
            and (m.get("mode") or "cold") == modes[0] and metrics.per_ghz(m) is not None]
    mhz = [m["clocks"]["sm_mhz_median"] for m in pick]
    if not pick or max(mhz) <= (1 + CLOCK_SPREAD) * min(mhz):
        return None
    ref = next((m for m in pick if m.get("reference")), None)
    unit = unit_of(ms)
    rows = []
    for m in sorted(pick, key=lambda m: (m["rung"] is None, m.get("rung_index") or 0, m["backend"])):
        clocks = m["clocks"]
        rows.append([f"`{m['implementation']}`", _num(metrics.headline(m), ",.0f"),
                     f"{clocks['sm_mhz_median']:.0f} ({clocks['sm_mhz_min']:.0f}–{clocks['sm_mhz_max']:.0f})",
                     _num(metrics.per_ghz(m), ",.0f"),
                     _num(metrics.per_ghz(m) / metrics.per_ghz(ref), ".2f", "×") if ref else "—"])
    return tabulate(rows, ["implementation", unit, "SM MHz median (min–max)", f"{unit} per GHz", "× ref per GHz"],
                    tablefmt="github", disable_numparse=True)


def render(doc: dict, md_path: Path, draw: bool = True) -> str:
    """The Markdown report of a results document; figures go beside it."""
    env = doc["environment"]
    md_path = Path(md_path)
    ms = with_sanitizer_marks(doc["measurements"], md_path.parent)
    incomplete = doc.get("complete") is False
    maths = sorted({m.get("math") or "ieee" for m in ms if (m.get("work") or {}).get("bound", "compute") == "compute"})
    out = [f"# `study compare` on {env['gpu']['name']}", "",
           *(["> **Incomplete run**: re-run the same command to resume it.", ""] if incomplete else []),
           f"Generated from `{md_path.stem}.json` beside it; `python -m study report {md_path.stem}.json` "
           "regenerates it without a GPU. Do not edit by hand.", "",
           device_block(env, maths, ms), ""]
    if env.get("merged_from"):
        out += [f"Merged by `python -m study merge` from {len(env['merged_from'])} results files: "
                + ", ".join(f"`{p}`" for p in env["merged_from"]) + ".", ""]
    if env.get("missing_shards"):
        out += [f"> **Shards missing**: {', '.join(map(str, env['missing_shards']))} — this file is not the whole "
                "run.", ""]
    if env.get("mixed"):
        out += ["> **Mixed environments** (merged with `--allow-mixed`; the block above is the first file's):", ""]
        out += [f"> - {line}" for line in env["mixed"]] + [""]
    for op, groups in _groups(ms).items():
        op_ms = [m for m in ms if m["op"] == op]
        out += [f"## {op}", "", f"Headline unit: **{unit_of(op_ms)}**.", ""]
        if draw:
            figures = md_path.parent / "figures"
            for kind, fig in (("ladder", figure(ms, op, figures / f"{md_path.stem}-{op}.png")),
                              ("best against the reference", best_figure(ms, op, figures / f"{md_path.stem}-{op}-best.png")),
                              ("roofline", roofline(ms, op, env, figures / f"{md_path.stem}-{op}-roofline.png"))):
                if fig is not None:
                    out += [f"![{op} {kind}]({fig.relative_to(md_path.parent).as_posix()})", ""]
        best = best_table(ms, op)
        if best:
            out += [f"Best handwritten rung against the reference, by shape (the best figure's numbers; each "
                    f"cell: rung (autotune), {unit_of(op_ms)} · × reference):", "", best, ""]
        if op in SECTIONS:
            name, write = SECTIONS[op]
            out += write(ms, md_path.parent / "figures" / f"{md_path.stem}-{op}-{name}.png" if draw else None,
                         md_path.parent)
        for (shape_json, precision, pad), group in groups.items():
            shape = json.loads(shape_json)
            dtype = group[0]["dtype"]
            math = next((m.get("math") or "ieee" for m in group if (m.get("math") or "ieee") not in EMULATION),
                        group[0].get("math"))  # the precision's own: a 3xTF32 row first must not relabel the table
            padded = f", rows padded by {pad}" if pad else ""
            for tune in _tunes(group):
                out += [f"### {op} {shape_label(shape)} {precision} ({dtype}, {math}){padded}, autotune {tune}", "",
                        ladder_table(group, tune), ""]
                clocked = clock_table(group, tune)
                if clocked:
                    out += [f"At an equal clock: these ran at median SM clocks more than {CLOCK_SPREAD:.0%} apart "
                            "(the GPU at its power cap), so × ref above mixes kernel and clock. Per GHz of each "
                            "run's median clock (to first order: a compute-bound rate scales with the SM clock):", "",
                            clocked, ""]
        flagged = [m for m in op_ms if m["status"] == "ok" and flags(m)]
        if flagged:
            out += ["**Check these numbers** (see the legend):", ""]
            out += [f"- `{m['implementation']}` {shape_label(m['shape'])} {m.get('precision')} {m.get('mode')} "
                    f"autotune {m['autotune']}: {', '.join(flags(m))} (noise "
                    f"{100 * ((m['timing'] or {}).get('noise') or 0):.2f} %, stop `{(m['timing'] or {}).get('stop')}`, "
                    f"SM clock {(m['clocks'] or {}).get('sm_mhz_min')}–{(m['clocks'] or {}).get('sm_mhz_max')} MHz, "
                    f"reasons {', '.join((m['clocks'] or {}).get('throttle_reasons') or []) or 'none'})"
                    for m in flagged]
            out.append("")
        problems = [m for m in op_ms if m["status"] != "ok"]
        if problems:
            out += ["**Not measured** (never ranked):", ""]
            out += [f"- `{m['implementation']}` {shape_label(m['shape'])} {m.get('precision') or m['dtype']} "
                    f"{m.get('mode')} autotune {m['autotune']}: **{m['status']}** — {reason_line(m['reason'])}"
                    for m in problems]
            out.append("")
        out += ["<details><summary>All measurements</summary>", "", detail_table(op_ms), "", "</details>", ""]
    out += ["## Legend", "", legend(env, ms), ""]
    return "\n".join(out)


def write_report(doc: dict, md_path: Path) -> Path:
    md_path = Path(md_path)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(render(doc, md_path))
    return md_path


def write_page(doc: dict, json_path: Path, md_path: Path | None = None) -> Path:
    """The page of a results file: a sweep's or an align run's own (CSV, figures and page beside
    the file) unless ``md_path`` asks for the comparison report, which every other file gets."""
    from study import align, sweep

    if md_path is None:
        for is_kind, kind in ((sweep.is_sweep, sweep), (align.is_align, align)):
            if is_kind(doc):
                return kind.write_outputs(doc, Path(json_path))[1]
    return write_report(doc, md_path or Path(json_path).with_suffix(".md"))

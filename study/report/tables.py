"""The tables of a comparison report, each a pure function of its records: the ladder table per
(op, shape, precision), the details, the device block, the best rung by shape, the equal-clock table
and the terminal summary."""

from __future__ import annotations

from tabulate import tabulate

from study import metrics
from study.report.labels import (BACKEND_LABEL, EMULATION, RUNG_BACKENDS, flags, headline_cell, modes_of, num,
                                 ratio_cell, shape_label, unit_of)

def ladder_table(ms: list[dict], tune: str) -> str:
    """One (op, shape, precision) at one autotune setting: rows are rungs, then baselines;
    a column group per backend (CUDA, Triton) with the headline per timing mode, % peak and
    % ceiling of the first mode, and × ref per mode. Baseline rows fill the first group.
    Columns empty in every row are left out."""
    unit = unit_of(ms)
    modes = modes_of(ms)
    first = modes[0]
    pick = {(m["rung"] or m.get("baseline"), m["backend"], m.get("mode") or "cold"): m
            for m in ms if m["autotune"] in (tune, "n/a")}
    backends = [b for b in RUNG_BACKENDS if any(m["backend"] == b and m["rung"] for m in ms)] or [None]

    def group(key, backend) -> list[str]:
        by_mode = {mode: pick.get((key, backend, mode)) for mode in modes}
        head = by_mode[first]
        ok = head is not None and head["status"] == "ok"
        return ([headline_cell(by_mode[mode]) for mode in modes]
                + [num(head["pct_peak"], ".1f", " %") if ok else "—",
                   num(head.get("pct_ceiling"), ".1f", " %") if ok else "—"]
                + [num(by_mode[mode].get("x_ref"), ".2f", "×") if by_mode[mode] and by_mode[mode]["status"] == "ok"
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
            m["autotune"], (m.get("mode") or "—") + (" paired" if m.get("paired") else ""), m["status"],
            num(m["median_ms"], ".4f"),
            num(m["min_ms"], ".4f"), q, str(len(m["samples_ms"])) if m["samples_ms"] else "—", stop,
            num(None if timing.get("noise") is None else 100 * timing["noise"], ".2f", " %"),
            num(None if timing.get("median_ci") is None else 100 * timing["median_ci"], ".3f", " %"),
            "—" if m.get("outliers") is None else str(m["outliers"]),
            num(None if m["rel_stdev"] is None else 100 * m["rel_stdev"], ".2f", " %"), mhz,
            ", ".join(flags(m)) or "",
            "—" if not err else f"{num(err.get('err'), '.2e')} / {num(err.get('tolerance'), '.0e')}",
            "`" + ", ".join(f"{k}={v}" for k, v in (m["config"] or {}).items()) + "`",
        ])
    # a column nothing fills (no record flagged, none with an error) says nothing: left out
    keep = [i for i, name in enumerate(header) if name not in ("flags", "error / tol.")
            or any(r[i] not in ("", "—") for r in rows)]
    return tabulate([[r[i] for i in keep] for r in rows], [header[i] for i in keep], tablefmt="github",
                    disable_numparse=True)


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
    parts.append(f"memory {num(gpu.get('memory_peak_gbps'), ',.0f', ' GB/s')}")
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



def best_by_shape(measurements: list[dict], op: str) -> tuple[str, dict] | None:
    """(timing mode, {(shape, precision, series): record}): per shape and precision the rung of each
    series with the highest × reference, in the first timing mode, either autotune setting. A series
    is a backend, or a backend and a math mode other than the precision's own (3xTF32 in an FP32
    table), so FFMA is never credited with tensor-core speed. Where the series' best was timed again
    paired with the reference (study.plan.best_pairs), the paired record stands for it. None below two
    shapes."""
    ok = [m for m in measurements if m["op"] == op and m["status"] == "ok" and m["rung"] is not None
          and m.get("x_ref") and not m.get("pad")]  # a padded layout (align) is another problem
    first = (modes_of(ok) or ["cold"])[0]
    ok = [m for m in ok if (m.get("mode") or "cold") == first]
    if len({shape_label(m["shape"]) for m in ok}) < 2:
        return None
    candidates: dict = {}
    for m in ok:
        own = (m.get("math") or "ieee") in EMULATION
        series = BACKEND_LABEL.get(m["backend"], m["backend"]) + (f" ({m['math']})" if own else "")
        candidates.setdefault((shape_label(m["shape"]), m.get("precision") or m["dtype"], series), []).append(m)
    # a paired record (the series' best timed again against the reference) stands before any unpaired one
    return first, {key: max(ms, key=lambda m: (bool(m.get("paired")), m["x_ref"])) for key, ms in candidates.items()}


PAIR_FLAGS = ("clocks", "power-mix", "re-settled")  # what a best-rung cell repeats of its record's flags: the ratio's own


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
            cells.append(f"v{m['rung_index']} ({m['autotune']}) {num(metrics.headline(m), ',.0f')} · "
                         f"{ratio_cell(m)}" + "".join(f" ⚑{f}" for f in flags(m) if f in PAIR_FLAGS) if m else "—")
        reference = f"{num(metrics.headline(ref), ',.0f')} ({ref.get('baseline')})" if ref else "—"
        rows.append([shape, precision, reference, *cells])
    return tabulate(rows, ["shape", "precision", f"reference {unit}", *series], tablefmt="github", disable_numparse=True)



CLOCK_SPREAD = 0.05  # median SM clocks further apart than this: the equal-clock table is shown


def clock_table(ms: list[dict], tune: str) -> str | None:
    """One (op, shape, precision) at one autotune setting, compared at an equal SM clock: each ok
    measurement of a compute-bound op (first timing mode) with its median clock, its headline per
    GHz (metrics.per_ghz) and that figure against the reference's. None unless the median clocks
    differ by more than CLOCK_SPREAD — there the plain × ref mixes kernel and clock."""
    modes = modes_of(ms)
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
        rows.append([f"`{m['implementation']}`", num(metrics.headline(m), ",.0f"),
                     f"{clocks['sm_mhz_median']:.0f} ({clocks['sm_mhz_min']:.0f}–{clocks['sm_mhz_max']:.0f})",
                     num(metrics.per_ghz(m), ",.0f"),
                     num(metrics.per_ghz(m) / metrics.per_ghz(ref), ".2f", "×") if ref else "—"])
    return tabulate(rows, ["implementation", unit, "SM MHz median (min–max)", f"{unit} per GHz", "× ref per GHz"],
                    tablefmt="github", disable_numparse=True)



def summary_table(doc: dict) -> str:
    """One line per measurement, for the terminal at the end of a run."""
    rows = [[m["implementation"], shape_label(m["shape"]), m.get("precision"), m.get("mode"),
             m["autotune"], m["status"],
             "" if metrics.headline(m) is None else f"{metrics.headline(m):,.0f} {metrics.unit(m['work']['bound'])}",
             "" if m["pct_peak"] is None else f"{m['pct_peak']:.1f}",
             "" if m["x_ref"] is None else f"{m['x_ref']:.2f}"] for m in doc["measurements"]]
    return tabulate(rows, ["implementation", "shape", "precision", "mode", "autotune", "status", "median",
                           "% peak", "× ref"], tablefmt="simple")


def _order_cell(record: dict) -> str:
    """A paired record's order effect (study.metrics.pair_gaps) as a signed percentage."""
    effect = metrics.pair_gaps(record)["order_effect"]
    return "" if effect is None else f"{100 * (effect - 1):+.1f} %"


def paired_table(ms: list[dict]) -> str | None:
    """Every paired record of an op: its ratio to the reference as the median of its ABBA units (an
    A-first round with the B-first one after it), the 95 % interval and rounds, what going first cost
    (the B-first rounds' median ratio over the A-first rounds', study.stats.order_effect: the units cancel
    it, the column shows its size), the figure, and each side's median SM clock and power while the
    rounds ran (both sides at the same power state). None without paired records."""
    rows = []
    for m in ms:
        pairing = m.get("paired")
        if not pairing:
            continue
        mine, theirs = m.get("clocks") or {}, pairing.get("reference_clocks") or {}
        rows.append([f"`{m['implementation']}`", shape_label(m["shape"]), m.get("precision"), m.get("mode"),
                     m["autotune"], headline_cell(m), ratio_cell(m) if m["status"] == "ok" else f"**{m['status']}**",
                     str(pairing["rounds"]), _order_cell(m), f"{num(mine.get('sm_mhz_median'), '.0f')} / "
                     f"{num(theirs.get('sm_mhz_median'), '.0f')}",
                     f"{num(mine.get('power_w_median'), '.0f')} / {num(theirs.get('power_w_median'), '.0f')}",
                     f"`{pairing['reference']}`"])
    if not rows:
        return None
    unit = unit_of(ms)
    return tabulate(rows, ["implementation", "shape", "precision", "mode", "autotune", unit, "× ref [95 %]", "rounds",
                           "order", "SM MHz (it / ref)", "W (it / ref)", "reference"], tablefmt="github",
                    disable_numparse=True)

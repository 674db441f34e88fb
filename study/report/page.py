"""A comparison report's page: the device block, then per op its figures, the best-rung table, the
sections the op declares, a ladder table per (shape, precision, autotune), what to check and what
was not measured, the details, and how the numbers were measured. From a results document and what the caller hands
over (each op's sections, the sanitizer's marks), never from disk; figures go to ``figures/``
beside the page."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Callable

from study import metrics, results
from study.report import suite
from study.report.figures import best_figure, figure, roofline
from study.report.labels import (EMULATION, EMULATION_PEAK, flags, modes_of, primary, reason_line, shape_label, tunes_of,
                                 unit_of)
from study.report.tables import (CLOCK_SPREAD, best_table, clock_table, detail_table, device_block, ladder_table,
                                 paired_table)

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
    modes = "; ".join(MODE_TEXT[mode].format(flush=t["flush_factor"], how=how) for mode in modes_of(ms))
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
    items = [
        "**Gate.** Every implementation first passes a correctness gate against a float64 reference on a "
        "NaN-poisoned output (outside tolerance: `wrong`, never timed)"
        + (f", {t['gate_trials']} times on fresh random inputs and, for ops that have them, once more on small "
           "random integers whose exact answer leaves a misplaced element nowhere to hide" if t.get("gate_trials")
           else "") + ".",
        f"**Warm-up**: at least {t['min_warmup']} launches and {t['warmup_ms']:g} ms (compilation and autotuning "
        "happen before).",
        f"**Modes**: {modes}.",
        f"**Sampling** {stop}.",
        f"**Clocks.** {throttle}",
        "**Headline**: the **median**; min and quartiles are in the details.",
        *[f"{u}." for u in units],
    ]
    if measured:
        items.append(f"**% ceiling** is of the *measured* ceiling of the same kind on this GPU (`python -m study "
                     f"ceilings`): {', '.join(measured)}.")
    if ceilings.get(metrics.COPY_CURVE) and any((m.get("work") or {}).get("bound") == "memory" for m in ms):
        items.append("A GB/s figure's ceiling is the device copy of as many bytes as the case moves, cold, its "
                     "launch and ramp included (the copy-by-size curve of `ceilings --copy-sizes`, interpolated in "
                     "log bytes): " + ", ".join(f"{b / 2**20:,.0f} MiB {g:,.0f} GB/s"
                                               for b, g in sorted(ceilings[metrics.COPY_CURVE])) + ".")
    if overhead:
        items.append(f"⚑launch-bound: a median within 2× of an empty kernel's, {overhead * 1e3:.2f} µs this run: an "
                     "event pair also spans a fixed cost around each launch that Nsight Compute's kernel duration "
                     "leaves out (`python -m study validate` measures it), a large part of such a number; `--mode "
                     "graph` spreads it over many launches.")
    if any("host_bound_batches" in (m.get("timing") or {}) for m in ms):
        items.append("⚑host-bound: before each batch of samples a GPU delay kernel runs as long as the host took to "
                     "queue the previous batch (at most 20 ms), so that no sample waits for the host; a batch whose "
                     "queueing still took longer is counted and flagged.")
    elif any(m.get("timing") for m in ms):
        items.append("Before each batch of samples a 200 µs GPU delay kernel covers the host's queueing of the first "
                     "samples; back-to-back samples of kernels shorter than the host's launch time (hot mode) can "
                     "still include the host's launch latency (this run predates the lead sized to the batch).")
    if any("staged" in flags(m) for m in ms):
        items.append("⚑staged: a TMA rung at rows TMA cannot read in place (K or N no multiple of 16 bytes' worth "
                     "of elements, a padded or offset view): its launch copied those operands into rows it can read "
                     "(and C back out), inside the timed launch; the config's `staged` names them.")
    if any(m.get("sanitizer") for m in ms):
        items.append("⚑sanitizer: `python -m study sanitize` (sanitize.json beside this report) found hazards in the "
                     "very kernel source this measurement ran.")
    if any("steady" in m for m in ms):
        items += [
            f"**Settling and the second check.** Before its samples each kernel ran back to back until its SM clock "
            f"and power draw settled (at most {t.get('settle_max_s', 0):g} s), so that it is timed at the clock it "
            "holds in a loop; after them its output was poisoned and checked once more (work that stops once the "
            "gate has passed: `wrong`), and a figure above the theoretical peak (or, cold, the memory's bandwidth) "
            "is `impossible`, never ranked.",
            "⚑power-cap: the median power draw while the samples ran was 97 % of the limit or more, or the driver "
            "reported its power cap (two kernels at the cap hold different clocks).",
            f"⚑clocks: a paired measurement whose two sides ran at median SM clocks more than "
            f"{100 * metrics.PAIR_CLOCK_GAP:g} % apart.",
            f"⚑power-mix: a side of a pair ran more than {100 * metrics.PAIR_CLOCK_GAP:g} % above the clock it "
            "settled at alone (kernels of unlike "
            "power lend each other headroom under the cap: the ratio holds at clocks neither keeps in a loop of its "
            "own); ⚑re-settled: such a pair, timed again with each kernel settled alone before each of its "
            "batches, whose ratio is the one shown."]
    items += [
        "**× ref** = the reference baseline's median / this median on the same shape, precision and mode (> 1: "
        "faster than the reference); baseline rows give their own figures in the first column group. Library GEMM "
        "baselines run with TF32 off (on only for the `tf32` precision) and reduced-precision reductions off; the "
        "cuBLAS switches are in each record's config.",
        "**Autotune** `off` uses each rung's declared config (the Triton twin mirrors its CUDA rung); `on` searches "
        "the rung's space (CUDA: every `-D` point timed by this runner; Triton: `triton.autotune`); the config used "
        "is in the details."]
    return "\n".join(f"- {item}" for item in items)


def _groups(measurements):
    """op -> (shape json, precision, padding) -> measurements, in first-seen order."""
    ops: dict = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        ops[m["op"]][(json.dumps(m["shape"]), m.get("precision") or m["dtype"], m.get("pad") or 0)].append(m)
    return ops


def with_sanitizer_marks(ms: list[dict], marks: dict) -> list[dict]:
    """CUDA records whose very source (same hash) ``study sanitize`` found unclean, marked. ``marks``:
    (source, source hash) -> what was found (:func:`study.sanitize.unclean_sources`); results of another
    source are stale and match nothing."""
    if not marks:
        return ms
    return [{**m, "sanitizer": marks[(m.get("source"), m.get("source_hash"))]}
            if (m.get("source"), m.get("source_hash")) in marks else m for m in ms]


@dataclasses.dataclass(frozen=True)
class Section:
    """A part of the report an op adds after its figures and best-rung table (``Problem.report_sections``):
    ``write(measurements, figure path or None, the report's folder)`` returns Markdown lines; ``name``
    names its figure, ``figures/<report>-<op>-<name>.png``."""

    name: str
    write: Callable[[list, Path | None, Path], list]


def render(doc: dict, md_path: Path, draw: bool = True, sections: dict | None = None,
           marks: dict | None = None) -> str:
    """The Markdown report of a results document; figures go beside it. ``sections``: op -> the
    :class:`Section` s it declares; ``marks``: the sanitizer's findings (:func:`with_sanitizer_marks`)."""
    env = doc["environment"]
    md_path = Path(md_path)
    ms = with_sanitizer_marks(doc["measurements"], marks or {})
    incomplete = doc.get("complete") is False
    maths = sorted({m.get("math") or "ieee" for m in ms if (m.get("work") or {}).get("bound", "compute") == "compute"})
    suites = env.get("suites") or []
    ops = ", ".join(dict.fromkeys(m["op"] for m in ms)) or "nothing"
    source = results.record_of(md_path).name
    out = [f"# {md_path.stem}: {ops} on {env['gpu']['name']}" + (f", suite {', '.join(suites)}" if suites else ""),
           "",
           *(["> **Incomplete run**: re-run the same command to resume it.", ""] if incomplete else []),
           f"Generated from `{source}` beside it; `python -m study report {source}` "
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
    shown = primary(ms)  # a paired record stands in a ladder table only where its case has no unpaired one
    for op, groups in _groups(shown).items():
        op_ms = [m for m in ms if m["op"] == op]
        out += [f"## {op}", "", f"Headline unit: **{unit_of(op_ms)}**.", ""]
        if draw:
            figures = md_path.parent / "figures"
            for kind, fig in (("ladder", figure(shown, op, figures / f"{md_path.stem}-{op}.png")),
                              ("best against the reference", best_figure(ms, op, figures / f"{md_path.stem}-{op}-best.png")),
                              ("roofline", roofline(shown, op, env, figures / f"{md_path.stem}-{op}-roofline.png"))):
                if fig is not None:
                    out += [f"![{op} {kind}]({fig.relative_to(md_path.parent).as_posix()})", ""]
        best = best_table(ms, op)
        if best:
            out += [f"Best handwritten rung against the reference, by shape (the best figure's numbers; each "
                    f"cell: rung (autotune), {unit_of(op_ms)} · × reference):", "", best, ""]
        if suites:
            out += suite.lines(ms, op, md_path.parent / "figures" / f"{md_path.stem}-{op}-suite.png" if draw else None,
                               md_path.parent)
        pairs = paired_table(op_ms)
        if pairs:
            out += ["Paired against the reference: timed in rounds alternating with the reference (ABBA), both in "
                    "the same power state; × ref is the median ratio of its ABBA units (an A-first round with the "
                    "B-first one after it: what going first costs a kernel cancels; *order* shows its size, the "
                    "B-first rounds' median ratio over the A-first rounds'), with its 95 % bootstrap "
                    "interval (`same within noise` where it holds 1):", "", pairs, ""]
        for section in (sections or {}).get(op, ()):
            out += section.write(ms, md_path.parent / "figures" / f"{md_path.stem}-{op}-{section.name}.png"
                                 if draw else None, md_path.parent)
        for (shape_json, precision, pad), group in groups.items():
            shape = json.loads(shape_json)
            dtype = group[0]["dtype"]
            math = next((m.get("math") or "ieee" for m in group if (m.get("math") or "ieee") not in EMULATION),
                        group[0].get("math"))  # the precision's own: a 3xTF32 row first must not relabel the table
            padded = f", rows padded by {pad}" if pad else ""
            for tune in tunes_of(group):
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
            out += ["**Check these numbers** (the ⚑ flags are explained under *How these numbers were measured*):", ""]
            out += [f"- `{m['implementation']}` {shape_label(m['shape'])} {m.get('precision')} {m.get('mode')} "
                    f"autotune {m['autotune']}: {', '.join(flags(m))} (noise "
                    f"{100 * ((m['timing'] or {}).get('noise') or 0):.2f} %, stop `{(m['timing'] or {}).get('stop')}`, "
                    f"SM clock {(m['clocks'] or {}).get('sm_mhz_min')}–{(m['clocks'] or {}).get('sm_mhz_max')} MHz, "
                    f"reasons {', '.join((m['clocks'] or {}).get('throttle_reasons') or []) or 'none'})"
                    for m in flagged]
            out.append("")
        wild = [m for m in op_ms if m["status"] == "impossible"]
        if wild:
            out += ["**Impossible figures** (above the physical peak: work left out of the timed launch; shown, never "
                    "ranked):", ""]
            out += [f"- `{m['implementation']}` {shape_label(m['shape'])} {m.get('precision')} {m.get('mode')} "
                    f"autotune {m['autotune']}: {reason_line(m['reason'])}" for m in wild]
            out.append("")
        problems = [m for m in op_ms if m["status"] not in ("ok", "impossible")]
        if problems:
            out += ["**Not measured** (never ranked):", ""]
            out += [f"- `{m['implementation']}` {shape_label(m['shape'])} {m.get('precision') or m['dtype']} "
                    f"{m.get('mode')} autotune {m['autotune']}: **{m['status']}** — {reason_line(m['reason'])}"
                    for m in problems]
            out.append("")
        out += ["<details><summary>All measurements</summary>", "", detail_table(op_ms), "", "</details>", ""]
    out += ["## How these numbers were measured", "", legend(env, ms), ""]
    return "\n".join(out)


def write_report(doc: dict, md_path: Path, sections: dict | None = None, marks: dict | None = None) -> Path:
    md_path = Path(md_path)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(render(doc, md_path, sections=sections, marks=marks))
    return md_path

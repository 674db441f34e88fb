"""``python -m study validate``, the pairs: the study's paired ratio of an implementation to its op's
reference against two other instruments' ratios, and the absolute figures with the L2 flush's cost
measured rather than assumed.

For each pair (a tensor-core GEMM at the power cap, a memory-bound softmax and GEMV, the 3xTF32 GEMM
against cuBLAS FP32), measured by the study's own session (study.session.Session: the gate, settling,
the paired rounds), so that what is validated is what ``compare`` runs:
- the study's ratio: the paired case (rounds alternating the two kernels, study.timer.Timer.paired),
  the median of its ABBA units' ratios (study.stats.abba_units) and its 95 % interval; and the same
  rounds with do_bench's flush (writing the buffer, not reading it), each kernel settled before its batches where the study's pair was;
- a do_bench-interleaved ratio: ``triton.testing.do_bench`` (median, its own write flush) on each
  kernel in turn, ROUNDS times, alternating which goes first; the median of its ABBA units' ratios;
- an ncu ratio: ``gpu__time_duration`` medians of NCU_LAUNCHES launches of each (``--clock-control
  none``: each at the clock it reaches, launched one at a time);
- absolute: each kernel's median as the study measures it alone (read flush, settled), by the study's
  timer with a write flush (what do_bench and nvbench do) on the session's own gated launch, by
  do_bench and by ncu: the flush's cost is the difference of the first two.

Goal: the paired ratio within 2 % of the do_bench-interleaved one (TARGET), judged with the same flush:
which flush a GEMM follows moves it by a few % (hgemm v8 at 8192³ BF16: +4 % after a write flush,
cuBLAS +0.3 %), a difference of what is measured, not of how well; both are shown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import sys

from study import catalog, metrics, stats
from study.plan import plan
from study.problem import one_line

PAIRS = (
    ("hgemm/v8_warp_specialized/cuda", "hgemm/torch_matmul/cublas", "8192x8192x8192", "bf16"),
    ("softmax/v4_on_chip/cuda", "softmax/torch_softmax/torch", "16384x4096", "fp32"),
    ("sgemv/v2_vector_loads/cuda", "sgemv/torch_mv/cublas", "16384x16384", "fp16"),
    ("sgemm/v11_3xtf32_wgmma/cuda", "sgemm/torch_matmul/cublas", "8192x8192x8192", "fp32"),
)
ROUNDS = 10         # do_bench rounds of each kernel, alternating which goes first
TARGET = 0.02       # the paired ratio within 2 % of the do_bench-interleaved one


def _do_bench(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def pair_cases(name: str, reference: str, shape_text: str, precision: str) -> tuple:
    """(the implementation's case, the reference's case), cold, autotune off, as compare plans them."""
    impl = catalog.implementation(name)
    lad = catalog.ladder(impl.op)
    if impl.rung is None:
        raise ValueError(f"{name} is no rung: a pair is a rung and its op's reference")
    if getattr(catalog.reference(impl.op), "name", None) != reference:
        raise ValueError(f"{reference} is not the reference of {impl.op}: the study pairs a rung with its op's "
                         "reference")
    shape = lad.problem.parse_shape(shape_text)
    planned = {c.impl.name: c for c in plan([impl.op], {impl.op: [shape]}, {impl.op: [precision]}, rungs=[impl.rung],
                                            modes=["cold"])}
    missing = [n for n in (name, reference) if n not in planned]
    if missing:
        raise ValueError(f"{', '.join(missing)}: not a case compare plans at {shape_text} {precision}")
    return planned[name], planned[reference]


def measure(name: str, reference: str, shape_text: str, precision: str, session, write_timer, ncu_time) -> dict:
    """One pair measured every way (``ncu_time(name, shape, precision)`` or None without ncu)."""
    row = {"implementation": name, "reference": reference, "shape": shape_text, "precision": precision}
    cases = pair_cases(name, reference, shape_text, precision)
    paired = session.measure(dataclasses.replace(cases[0], paired=True))
    alone = [session.measure(case) for case in cases]
    for record in (paired, *alone):
        if record["status"] != "ok":
            return {**row, "status": record["status"], "reason": f"{record['implementation']}: {record['reason']}"}
    launches = [session.ready(case) for case in cases]
    absolute, rounds = {}, []
    with contextlib.ExitStack() as stack:
        for launch in launches:
            stack.enter_context(launch.context())
        # Each settled first, as the session settles before its samples: the write flush's cost is then
        # the difference of the two medians, not of two power states.
        for side, launch, record in zip(("implementation", "reference"), launches, alone):
            write_timer.settle(launch.fn, record["median_ms"], True)
            write = stats.summarize(write_timer.time(launch.fn)["samples"]).median
            absolute[side] = {"study_read_flush_ms": record["median_ms"], "study_write_flush_ms": write}
        settle_each = bool(paired["paired"].get("settle_each"))
        if not settle_each:  # re-settled rounds settle each side before each of its batches themselves
            for launch, record in zip(launches, alone):
                write_timer.settle(launch.fn, record["median_ms"], True)
        written = write_timer.paired(tuple(launch.fn for launch in launches), tuple(r["median_ms"] for r in alone),
                                     True, settle_each=settle_each)
        for r in range(ROUNDS):
            times = [0.0, 0.0]
            for side in ((0, 1) if r % 2 == 0 else (1, 0)):
                times[side] = _do_bench(launches[side].fn)
            rounds.append(times)
    do_bench_ratios = [b / a for a, b in rounds]
    for i, side in enumerate(("implementation", "reference")):
        absolute[side]["do_bench_ms"] = statistics.median(t[i] for t in rounds)
    pairing = paired["paired"]
    row.update(status="ok", steady=[paired["steady"], pairing["reference_steady"]],
               paired={**{k: pairing[k] for k in ("ratio", "ci", "rounds", "stop", "ratios")},
                       **metrics.pair_gaps(paired), "settle_each": bool(pairing.get("settle_each")),
                       "interleaved": pairing.get("interleaved")},
               paired_write_flush={k: written[k] for k in ("ratio", "ci", "rounds", "stop", "ratios")},
               clocks={"implementation": paired["clocks"], "reference": pairing["reference_clocks"]},
               do_bench={"ratio": statistics.median(stats.abba_units(do_bench_ratios)), "ratios": do_bench_ratios,
                         "min": min(do_bench_ratios), "max": max(do_bench_ratios)}, absolute=absolute)
    if ncu_time is not None:
        try:
            times = [ncu_time(n, shape_text, precision)["median_ms"] for n in (name, reference)]
            row["ncu"] = {"ratio": times[1] / times[0], "implementation_ms": times[0], "reference_ms": times[1]}
            absolute["implementation"]["ncu_ms"], absolute["reference"]["ncu_ms"] = times
        except Exception as exc:
            row["ncu"] = {"error": one_line(exc)}
    row["within_target"] = abs(row["paired_write_flush"]["ratio"] / row["do_bench"]["ratio"] - 1) <= TARGET
    return row


def markdown(rows: list[dict]) -> list[str]:
    """The pairs' section of validate.md."""
    from tabulate import tabulate

    if not rows:
        return []
    ratio_rows, absolute_rows = [], []
    for r in rows:
        if r.get("status") != "ok":
            ratio_rows.append([f"`{r['implementation']}`", f"`{r['reference']}`", r["shape"], r["precision"],
                               f"**{r.get('status')}**: {r.get('reason', '')}", "", "", "", "", "", ""])
            continue
        p, w, d, n = r["paired"], r.get("paired_write_flush"), r["do_bench"], r.get("ncu") or {}
        mixed = p.get("interleaved") or {}
        ratio_rows.append([f"`{r['implementation']}`", f"`{r['reference']}`", r["shape"], r["precision"],
                           f"{p['ratio']:.3f} [{p['ci'][0]:.3f}, {p['ci'][1]:.3f}] ({p['rounds']} rounds)"
                           + (f" ⚑power-mix {100 * p['borrowed']:.0f} %"
                              if (p.get("borrowed") or 0) > metrics.PAIR_CLOCK_GAP else "")
                           + (f" ⚑re-settled (interleaved {mixed['ratio']:.3f}"
                              + (f", a side {100 * p['interleaved_borrowed']:.0f} % above its own clock"
                                 if p.get("interleaved_borrowed") else "") + ")" if mixed else ""),
                           f"{w['ratio']:.3f} [{w['ci'][0]:.3f}, {w['ci'][1]:.3f}]" if w else "—",
                           f"{d['ratio']:.3f} ({d['min']:.3f}–{d['max']:.3f})",
                           f"{n['ratio']:.3f}" if "ratio" in n else "—",
                           f"{100 * (p['ratio'] / d['ratio'] - 1):+.2f} %",
                           (f"{100 * (w['ratio'] / d['ratio'] - 1):+.2f} % " + ("✓" if r["within_target"] else "✗"))
                           if w else "—",
                           f"{r['clocks']['implementation'].get('sm_mhz_median')} / "
                           f"{r['clocks']['reference'].get('sm_mhz_median')}"])
        for side in ("implementation", "reference"):
            a = r["absolute"][side]
            absolute_rows.append([f"`{r[side]}`", r["shape"], r["precision"], f"{a['study_read_flush_ms']:.4f}",
                                  f"{a['study_write_flush_ms']:.4f}",
                                  f"{100 * (a['study_write_flush_ms'] / a['study_read_flush_ms'] - 1):+.2f} %",
                                  f"{a['do_bench_ms']:.4f}", f"{a['ncu_ms']:.4f}" if "ncu_ms" in a else "—"])
    return ["## Pairs: the study's ratio against do_bench's and ncu's", "",
            "× ref of each implementation to its op's reference (> 1: faster). *study*: rounds alternating the two "
            "(ABBA), each settled first, the median ratio of its ABBA units (an A-first round with the B-first "
            "one after it, so that what going first costs cancels) with its 95 % bootstrap interval, as "
            "`compare` records it (read flush; ⚑re-settled: interleaved, a side ran more than "
            f"{100 * metrics.PAIR_CLOCK_GAP:.0f} % above its own clock, so each was settled again before each "
            "batch); *study, write flush*: the same rounds after do_bench's flush (writing the buffer); "
            f"*do_bench*: `triton.testing.do_bench` (median, write flush) on each in turn, {ROUNDS} rounds "
            "alternating which goes first, the median ratio of its ABBA units (the rounds' min–max); "
            "*ncu*: the ratio of the "
            "`gpu__time_duration` medians. Goal: the study within "
            f"{100 * TARGET:.0f} % of do_bench with the same flush (✓/✗).", "",
            tabulate(ratio_rows, ["implementation", "reference", "shape", "precision", "study", "study, write flush",
                                  "do_bench", "ncu", "study / do_bench", "study, write flush / do_bench",
                                  "SM MHz (it / ref)"], tablefmt="github", disable_numparse=True),
            "", "Absolute medians (ms): the study's, each kernel measured alone as compare measures it (read flush, "
            "settled), the study's timer with a write flush (what do_bench does), the difference (the flush's cost "
            "to the kernel), do_bench and ncu:", "",
            tabulate(absolute_rows, ["kernel", "shape", "precision", "study (read flush)", "study (write flush)",
                                     "write − read", "do_bench", "ncu"], tablefmt="github", disable_numparse=True), ""]


def run(pairs, session, write_timer, ncu_time, doc: dict, save) -> None:
    """Every pair, the document saved after each (an interruption loses nothing)."""
    doc.setdefault("pairs", [])
    for name, reference, shape, precision in pairs:
        print(f"validating {name} against {reference} {shape} {precision} ...", file=sys.stderr, flush=True)
        try:
            doc["pairs"].append(measure(name, reference, shape, precision, session, write_timer, ncu_time))
        except Exception as exc:
            doc["pairs"].append({"implementation": name, "reference": reference, "shape": shape,
                                 "precision": precision, "status": "crashed", "reason": one_line(exc)})
        save()

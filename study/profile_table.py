"""The Markdown tables of saved Nsight Compute output, from the files alone (no GPU): one row per
saved raw CSV (``python -m study profile --table``), and a saved source page's stall samples summed by
SASS opcode (``profile --source``: where a kernel's issue slots go, e.g. HMMA waiting on fixed latency
against integer address math). Each column's metrics are named in :data:`COLUMNS`."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

from study.ncu import config_text, ghz, ms, nbytes, number, parse_raw_csv, parse_source_csv
from study.paths import REPORTS_DIR, display
from study.report.labels import num, size
from study.profile import (CYCLES_PER_ISSUE, DRAM, DRAM_READ, DRAM_WRITE, DURATION, FFMA_COUNT, FMA_PIPE,
                           GMMA_PIPE, HMMA_PIPE, ISSUE_ACTIVE, L2_HIT, NOT_A_STALL, OCCUPANCY_ACHIEVED,
                           OCCUPANCY_THEORETICAL, REGISTERS, SM_CLOCK, SMEM_LD_CONFLICTS, SMEM_LD_WAVEFRONTS,
                           SMEM_ST_CONFLICTS, SMEM_ST_WAVEFRONTS, STALL_REASONS, label_from_stem, stall_metric)

# The columns of the table, each with the metrics it is computed from (its footnote).
COLUMNS = (
    ("ms", (DURATION,)),
    ("SM GHz", (SM_CLOCK,)),
    ("FMA pipe %", (FMA_PIPE,)),
    ("FFMA TFLOP/s", (FFMA_COUNT, DURATION)),
    ("tensor pipe %", (HMMA_PIPE, GMMA_PIPE)),
    ("issue active %", (ISSUE_ACTIVE,)),
    ("top stall (cycles/issue)", (stall_metric("<reason>"),)),
    ("2nd stall", (stall_metric("<reason>"),)),
    ("smem bank conflicts ld / st (per wavefront)",
     (SMEM_LD_CONFLICTS, SMEM_LD_WAVEFRONTS, SMEM_ST_CONFLICTS, SMEM_ST_WAVEFRONTS)),
    ("regs/thread", (REGISTERS,)),
    ("occupancy % theor. / achieved", (OCCUPANCY_THEORETICAL, OCCUPANCY_ACHIEVED)),
    ("DRAM %", (DRAM,)),
    ("DRAM read / written", (DRAM_READ, DRAM_WRITE)),
)


# -- Summary and table ---------------------------------------------------------------------
def short_name(kernel: str) -> str:
    """A kernel's name without its return type and argument list (C++ signatures are long)."""
    name = kernel.split("(", 1)[0].strip()
    return name.removeprefix("void ").strip() or kernel


def _mean(rows: list[dict], metric: str):
    values = [r[metric] for r in rows if isinstance(r.get(metric), float)]
    return statistics.fmean(values) if values else None


def _ratio(a, b):
    return None if a is None or not b else a / b


def _converted(row: dict, metric: str, convert, default_unit: str):
    """A row's metric through ``convert`` (ncu.ms, ncu.nbytes) from the unit ncu gave it; None where ncu gave no
    number."""
    value = row.get(metric)
    return convert(value if isinstance(value, float) else None, row.get("_units", {}).get(metric, default_unit))


def summarise(rows: list[dict], launches: int | None = None) -> dict:
    """The figures of the table for the main kernel: the longest one (total duration) when a
    launch ran several (split-K's reduction, a library's helper kernels); the others are
    listed. A metric ncu did not give is None. ``launches``: the implementation's launches profiled
    (the sidecar's); without it, the fewest calls of any one kernel."""
    if not rows:
        raise ValueError("no kernel rows to summarise")
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row.get("Kernel Name", "?"), []).append(row)

    def ms_of(row):
        return _converted(row, DURATION, ms, "ns")

    def total(name):
        return sum(ms_of(r) or 0.0 for r in groups[name])

    main = max(groups, key=total)
    # the implementation's launches: the sidecar's, else each kernel taken to run in every one
    impl_launches = launches or min(len(v) for v in groups.values())

    def launch_bytes(metric):  # one launch's bytes over all its kernels; None unless every row has them
        counts = [_converted(r, metric, nbytes, "byte") for r in rows]  # the command asks base units
        return None if None in counts else sum(counts) / impl_launches

    mine = groups[main]
    avg = lambda metric: _mean(mine, metric)  # noqa: E731: over the main kernel's launches
    unit = mine[0].get("_units", {})
    duration = ms(avg(DURATION), unit.get(DURATION, "ns"))
    stalls = [(r, avg(stall_metric(r))) for r in STALL_REASONS if r not in NOT_A_STALL]
    stalls = sorted([s for s in stalls if s[1] is not None], key=lambda s: -s[1])
    hmma, gmma = avg(HMMA_PIPE), avg(GMMA_PIPE)
    tensor = max([t for t in ((hmma, "hmma"), (gmma, "gmma")) if t[0] is not None], default=(None, None))
    ffma = avg(FFMA_COUNT)
    return {
        "kernel": short_name(main), "kernel_full": main, "launches": len(mine), "kernels": len(groups),
        "sequence": [{"kernel": short_name(r.get("Kernel Name", "?")), "ms": ms_of(r)} for r in rows],  # in launch order
        # per launch of the implementation: a kernel called twice in a launch (the staging of A's rows and of B's)
        # is the two calls' time, not their mean
        "other_kernels": [{"kernel": short_name(k), "calls": len(v) / impl_launches, "ms": total(k) / impl_launches}
                          for k, v in groups.items() if k != main],
        "calls": len(rows) / impl_launches,
        "duration_ms": duration, "sm_ghz": ghz(avg(SM_CLOCK), unit.get(SM_CLOCK, "")),
        "fma_pipe_pct": avg(FMA_PIPE),
        "ffma_tflops": None if ffma is None or not duration else 2 * ffma / (duration * 1e-3) / 1e12,
        "hmma_pipe_pct": hmma, "gmma_pipe_pct": gmma, "tensor_pipe_pct": tensor[0], "tensor_pipe": tensor[1],
        "issue_active_pct": avg(ISSUE_ACTIVE), "cycles_per_issue": avg(CYCLES_PER_ISSUE),
        "top_stall": stalls[0][0] if stalls else None, "top_stall_cycles": stalls[0][1] if stalls else None,
        "second_stall": stalls[1][0] if len(stalls) > 1 else None,
        "second_stall_cycles": stalls[1][1] if len(stalls) > 1 else None,
        "smem_ld_conflicts": avg(SMEM_LD_CONFLICTS), "smem_ld_wavefronts": avg(SMEM_LD_WAVEFRONTS),
        "smem_ld_conflicts_per_wavefront": _ratio(avg(SMEM_LD_CONFLICTS), avg(SMEM_LD_WAVEFRONTS)),
        "smem_st_conflicts": avg(SMEM_ST_CONFLICTS), "smem_st_wavefronts": avg(SMEM_ST_WAVEFRONTS),
        "smem_st_conflicts_per_wavefront": _ratio(avg(SMEM_ST_CONFLICTS), avg(SMEM_ST_WAVEFRONTS)),
        "registers": avg(REGISTERS), "occupancy_theoretical_pct": avg(OCCUPANCY_THEORETICAL),
        "occupancy_achieved_pct": avg(OCCUPANCY_ACHIEVED), "dram_pct": avg(DRAM), "l2_hit_pct": avg(L2_HIT),
        "dram_read_bytes": nbytes(avg(DRAM_READ), unit.get(DRAM_READ, "byte")),
        "dram_write_bytes": nbytes(avg(DRAM_WRITE), unit.get(DRAM_WRITE, "byte")),
        "launch_dram_read_bytes": launch_bytes(DRAM_READ), "launch_dram_write_bytes": launch_bytes(DRAM_WRITE),
    }


def _conflicts(count, per_wavefront) -> str:
    return "—" if count is None else f"{count:,.0f} ({num(per_wavefront, '.2f')})"


def _stall(reason, cycles) -> str:
    return "—" if reason is None else f"{reason} {cycles:.2f}"


def load_rows(path: Path) -> tuple[dict, list[dict]]:
    """(what was profiled: the sidecar, or what the file name says; its kernel rows) of a saved CSV."""
    path = Path(path)
    sidecar = path.with_suffix(".json")
    meta = json.loads(sidecar.read_text()) if sidecar.is_file() else label_from_stem(path.stem)
    rows = parse_raw_csv(path.read_text())
    if not rows:
        raise ValueError(f"{display(path)}: no kernel rows in this file (not ncu --page raw --csv output?)")
    return meta, rows


def load(path: Path) -> tuple[dict, dict]:
    """(what was profiled; the summary) of a saved CSV."""
    meta, rows = load_rows(path)
    return meta, summarise(rows, meta.get("launches"))


def _named(meta: dict) -> str:
    """The implementation as a row and its notes name it: with the config it overrides, if any."""
    return f"`{meta.get('implementation', '?')}`" + (f" ({config_text(meta['config'])})" if meta.get("config") else "")


def table_row(meta: dict, s: dict) -> list[str]:
    shape = meta.get("shape", "") + (f" {meta['precision']}" if meta.get("precision") else "")
    tensor = "—" if s["tensor_pipe_pct"] is None else f"{s['tensor_pipe_pct']:.1f} ({s['tensor_pipe']})"
    occupancy = f"{num(s['occupancy_theoretical_pct'], '.1f')} / {num(s['occupancy_achieved_pct'], '.1f')}"
    conflicts = (f"{_conflicts(s['smem_ld_conflicts'], s['smem_ld_conflicts_per_wavefront'])} / "
                 f"{_conflicts(s['smem_st_conflicts'], s['smem_st_conflicts_per_wavefront'])}")
    return [_named(meta), shape, f"`{s['kernel']}`", num(s["duration_ms"], ".4f"),
            num(s["sm_ghz"], ".2f"), num(s["fma_pipe_pct"], ".1f"), num(s["ffma_tflops"], ".2f"), tensor,
            num(s["issue_active_pct"], ".1f"), _stall(s["top_stall"], s["top_stall_cycles"]),
            _stall(s["second_stall"], s["second_stall_cycles"]), conflicts, num(s["registers"], ".0f"),
            occupancy, num(s["dram_pct"], ".1f"), f"{size(s['dram_read_bytes'])} / {size(s['dram_write_bytes'])}"]


def render_table(paths) -> str:
    """A Markdown table, one row per saved CSV, with footnotes naming each column's metrics,
    the files, and what ran them; rendered from the files alone."""
    from tabulate import tabulate

    rows, notes, sources, runs = [], [], [], set()
    for path in paths:
        meta, s = load(path)
        rows.append(table_row(meta, s))
        sources.append(f"`{display(path)}`")
        if meta.get("gpu") or meta.get("ncu_version"):
            runs.add(f"{meta.get('gpu', '?')}, {meta.get('ncu_version') or 'ncu'}")
        if s["kernels"] > 1:
            others = ", ".join(f"`{o['kernel']}` {o['ms']:.4f} ms"
                               + (f" in {o['calls']:g} calls" if o["calls"] != 1 else "") for o in s["other_kernels"])
            notes.append(f"- {_named(meta)} {meta.get('shape', '')}: {s['calls']:g} kernels per "
                         f"launch; the row is the longest, `{s['kernel']}` (also {others}).")
        if meta.get("metrics_left_out"):
            notes.append(f"- {_named(meta)} {meta.get('shape', '')}: not collected there: "
                         + ", ".join(f"`{m}`" for m in meta["metrics_left_out"]) + ".")
    headers = ["implementation", "shape", "kernel", *(c for c, _ in COLUMNS)]
    columns = "; ".join(f"{name}: " + (", ".join(f"`{m}`" for m in metrics) if metrics != COLUMNS[i - 1][1]
                                       else "the same") for i, (name, metrics) in enumerate(COLUMNS))
    return "\n".join([
        tabulate(rows, headers, tablefmt="github", disable_numparse=True), "",
        f"Rendered by `python -m study profile --table` from saved Nsight Compute output (`--page raw --csv`, "
        f"`--clock-control none`), not typed: {', '.join(sources)}"
        + (f" ({'; '.join(sorted(runs))})" if runs else "") + ".", "",
        f"Columns: {columns}. Stalls are warp cycles per issued instruction, `selected` (the issuing cycle) "
        f"left out; ms is one launch, the mean where several were profiled; FFMA TFLOP/s is 2 × FFMAs / ms; tensor "
        f"pipe is the busier of HMMA (`mma.sync`) and GMMA (`wgmma`), named (where ncu does not list the GMMA counter, as 2025.3 on the H200 does not, a `wgmma` kernel shows only its HMMA-pipe figure); a bank-conflict ratio is conflicts "
        f"per shared-memory wavefront; — where ncu gave no value.",
        *([""] + notes if notes else []), ""])


def saved_files(targets) -> list[Path]:
    """The CSVs named, those in the folders named, or every ``reports/*/profiles/ncu-*.csv``."""
    if not targets:
        return sorted(REPORTS_DIR.glob("*/profiles/ncu-*.csv"))
    files = []
    for target in map(Path, targets):
        files.extend(sorted(target.glob("ncu-*.csv")) if target.is_dir() else [target])
    return files


# -- Source-level stall sampling ---------------------------------------------------------------
# ncu's source page (``ncu --import R.ncu-rep --page source --csv --print-source sass``, from a
# report taken with ``--set full --import-source yes``): one row per SASS instruction with its
# warp-stall samples by reason. :func:`render_source_table` sums them by opcode, which is what says
# where a kernel's issue slots go (e.g. HMMA waiting on fixed latency vs integer address math).

SOURCE_TOP_REASONS = 3


def _opcode(sass: str) -> str:
    """The mnemonic of one SASS line, without predicate and modifiers: ``@!P0 HMMA.16816.F32 …`` → HMMA."""
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def summarise_source(rows: list[dict]) -> tuple[float, list[dict]]:
    """(all stall samples, one entry per opcode: executed warp instructions, samples, samples by reason),
    opcodes by samples, most first. The issuing cycle (``stall_selected``) counts as a reason here:
    it is where a sample found the warp issuing."""
    reasons = [c for c in (rows[0] if rows else {}) if c.startswith("stall_") and "Not Issued" not in c]
    by_op: dict[str, dict] = {}
    for row in rows:
        entry = by_op.setdefault(_opcode(row.get("Source", "")), {"executed": 0.0, "samples": 0.0, "reasons": {}})
        entry["executed"] += number(row.get("Instructions Executed", "")) or 0
        entry["samples"] += number(row.get("Warp Stall Sampling (All Samples)", "")) or 0
        for reason in reasons:
            name = reason.removeprefix("stall_")
            entry["reasons"][name] = entry["reasons"].get(name, 0) + (number(row[reason]) or 0)
    total = sum(e["samples"] for e in by_op.values())
    ordered = [{"opcode": op, **e} for op, e in sorted(by_op.items(), key=lambda kv: -kv[1]["samples"])]
    return total, ordered


def render_source_table(path: Path, limit: int = 12) -> str:
    """Markdown: stall samples and executed instructions by opcode from one saved source page."""
    from tabulate import tabulate

    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":  # gzip's magic: a source page runs to a megabyte of CSV, a twentieth gzipped
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{display(path)}: not a whole gzip file ({exc})") from None
    kernel, rows = parse_source_csv(raw.decode())
    total, ops = summarise_source(rows)
    if not total:
        raise ValueError(f"{display(path)}: no warp-stall samples (was the report taken with --set full?)")
    executed = sum(o["executed"] for o in ops) or 1
    all_reasons: dict[str, float] = {}
    for o in ops:
        for reason, v in o["reasons"].items():
            all_reasons[reason] = all_reasons.get(reason, 0) + v
    table = []
    for o in ops[:limit]:
        top = sorted(o["reasons"].items(), key=lambda kv: -kv[1])[:SOURCE_TOP_REASONS]
        table.append([o["opcode"], f"{o['executed']:,.0f}", f"{100 * o['executed'] / executed:.1f} %",
                      f"{100 * o['samples'] / total:.1f} %",
                      ", ".join(f"{r} {100 * v / total:.1f} %" for r, v in top if v)])
    overall = ", ".join(f"{r} {100 * v / total:.1f} %" for r, v in sorted(all_reasons.items(), key=lambda kv: -kv[1])[:6])
    return "\n".join([
        tabulate(table, ["opcode", "warp instructions executed", "of all executed", "stall samples",
                         f"top {SOURCE_TOP_REASONS} reasons (share of all samples)"],
                 tablefmt="github", disable_numparse=True), "",
        f"`{kernel}`: {total:,.0f} warp-state samples in all ({overall}; `selected` is the issuing cycle). "
        f"Rendered by `python -m study profile --source` from `{display(Path(path))}` (ncu's source page, SASS "
        f"view), not typed" + (f"; the {len(ops) - limit} other opcodes hold "
                               f"{100 * sum(o['samples'] for o in ops[limit:]) / total:.1f} % of the samples"
                               if len(ops) > limit else "") + ".", ""])

"""``python -m study profile``: Nsight Compute on one implementation at one shape, saved.

One implementation, one shape, one precision: ``ncu`` profiles exactly ``launches`` launches
of it (``validate --ncu-target``: warm-up outside the profiler range, the output checked after)
and collects :data:`METRICS`, the counters that say which bottleneck a rung removed: pipe
utilisation, issue activity, warp stall reasons, shared-memory bank conflicts, registers and
occupancy. ncu's raw page (``--page raw --csv``: one column per metric, one row per kernel)
is saved as it came, ``reports/<gpu>/profiles/ncu-<op>-<rung>-<backend>-<shape>[-<precision>].csv``,
with a JSON sidecar saying what was run, where and how.

The Markdown table for the ladder docs is rendered from those saved files alone
(:func:`render_table`, ``python -m study profile --table``): no number in it is typed.

``--clock-control none``: the card runs at its own clocks, as in every other measurement of
the study; the SM clock ncu saw is a column of the table.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from study.paths import REPORTS_DIR, ROOT, display, report_dir
from study.validate import MS_PER_UNIT

TIMEOUT_S = 1800  # a Triton twin compiles inside the profiled process; ncu replays each kernel per pass

# -- What is collected ---------------------------------------------------------------------
# Each name was checked against NVIDIA's own Nsight Compute sections and rules (the .section
# and rule files ncu ships) or ncu output from a Hopper GPU; docs/method.md lists the sources.
DURATION = "gpu__time_duration.sum"
SM_CLOCK = "smsp__cycles_elapsed.avg.per_second"  # the SpeedOfLight section's "SM Frequency"
FMA_PIPE = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"
FFMA_COUNT = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"  # thread FFMAs: 2 FLOP each
HMMA_PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"  # mma.sync (TF32, FP16, BF16)
GMMA_PIPE = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"  # wgmma (sm_90)
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
CYCLES_PER_ISSUE = "smsp__average_warp_latency_per_inst_issued.ratio"  # the sum of the stall ratios
SMEM_LD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SMEM_ST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
SMEM_LD_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SMEM_ST_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
REGISTERS = "launch__registers_per_thread"
OCCUPANCY_THEORETICAL = "sm__maximum_warps_per_active_cycle_pct"
OCCUPANCY_ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
L2_HIT = "lts__t_sector_hit_rate.pct"

# Warp states, as cycles per issued instruction (they add up to CYCLES_PER_ISSUE). "selected"
# is the cycle a warp spends issuing, not a stall: collected, never ranked as the top stall.
STALL_REASONS = ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "math_pipe_throttle",
                 "not_selected", "wait", "dispatch_stall", "lg_throttle", "selected", "no_instruction",
                 "branch_resolving", "membar", "sleeping", "tex_throttle", "drain", "imc_miss", "misc", "gmma")
NOT_A_STALL = ("selected",)


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


METRICS = [DURATION, SM_CLOCK, FMA_PIPE, FFMA_COUNT, HMMA_PIPE, GMMA_PIPE, ISSUE_ACTIVE, CYCLES_PER_ISSUE,
           *(stall_metric(r) for r in STALL_REASONS),
           SMEM_LD_CONFLICTS, SMEM_ST_CONFLICTS, SMEM_LD_WAVEFRONTS, SMEM_ST_WAVEFRONTS,
           REGISTERS, OCCUPANCY_THEORETICAL, OCCUPANCY_ACHIEVED, DRAM, L2_HIT]
# An unknown name makes ncu refuse the whole run ("Failed to find metric"). These exist on some
# chips or versions only (wgmma is sm_90's), so they are asked for only where `ncu --query-metrics`
# lists them; a table column whose metric is missing shows "—".
OPTIONAL = (GMMA_PIPE, stall_metric("gmma"), CYCLES_PER_ISSUE)

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
)


class ProfileError(RuntimeError):
    """A profile that could not be made; ``code`` is the CLI's exit status (2: ncu or the case
    is not usable here, 1: the run failed)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# -- Running ncu ---------------------------------------------------------------------------
_FALLBACK_DIRS = ("/usr/local/cuda/bin",)


def find_ncu() -> str:
    """ncu on PATH, else under $CUDA_HOME, $CUDA_PATH or /usr/local/cuda."""
    found = shutil.which("ncu")
    if found:
        return found
    roots = [Path(r) / "bin" for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if r]
    for folder in [*roots, *map(Path, _FALLBACK_DIRS)]:
        candidate = folder / "ncu"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise ProfileError("Nsight Compute (ncu) is not on PATH nor in $CUDA_HOME/bin, $CUDA_PATH/bin or "
                       "/usr/local/cuda/bin; profile on the GPU machine, or put ncu on PATH", code=2)


def ncu_command(impl: str, shape: str, precision: str | None, launches: int, metrics, ncu: str = "ncu",
                config: dict | None = None) -> list[str]:
    """ncu around ``validate --ncu-target``: only the profiler range (the ``launches`` launches)
    is profiled, one row per kernel with one column per metric. ``config``: parameters that replace
    the declared config's (a point of the autotune space, say)."""
    target = [sys.executable, "-m", "study", "validate", "--ncu-target", impl, shape, str(launches)]
    if precision:
        target += ["--ncu-precision", precision]
    if config:
        target += ["--ncu-config", config_text(config)]
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "raw",
            "--print-units", "base",  # fixed units: a column's scale does not depend on its values
            "--metrics", ",".join(metrics), *target]


def _base(metric: str) -> str:
    """The name ncu --query-metrics lists: the metric without its rollup and suffix."""
    return metric.split(".", 1)[0]


def available_metrics(ncu: str) -> set[str] | None:
    """Base names of the metrics ncu offers on this machine's GPU; None when it cannot say."""
    try:
        proc = subprocess.run([ncu, "--query-metrics", "--csv"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        return None
    names = set(re.findall(r'^"?([a-z][a-z0-9]*__[a-z0-9_]+)"?[,\s]', proc.stdout, re.M))
    return names if proc.returncode == 0 and names else None


def chosen_metrics(available: set[str] | None) -> tuple[list[str], list[str]]:
    """(metrics to ask for, optional ones left out): an optional metric only where ncu lists it."""
    keep = [m for m in METRICS if m not in OPTIONAL or (available is not None and _base(m) in available)]
    return keep, [m for m in METRICS if m not in keep]


def _safe(part: str) -> str:
    """A path component: letters, digits, '_' and '.'; '-' is the separator of the parts."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", part).strip("._") or "_"


def config_text(config: dict) -> str:
    """``K=V,K=V`` in key order: how a config override travels on a command line."""
    return ",".join(f"{k}={v}" for k, v in sorted(config.items()))


def parse_config(texts, params: dict) -> dict:
    """Overrides of a kernel's declared config from ``K=V`` texts (several per text, comma-separated):
    integers, keys the config has; anything else is a usage error (code 2)."""
    out = {}
    for item in (part for text in texts for part in text.split(",") if part):
        key, sep, value = item.partition("=")
        if not sep or key not in params:
            raise ProfileError(f"--config {item}: give KEY=VALUE with a key of the declared config "
                               f"({', '.join(sorted(params))})", code=2)
        try:
            out[key] = int(value)
        except ValueError:
            raise ProfileError(f"--config {item}: the value must be an integer", code=2) from None
    return out


def profile_stem(impl: str, shape: str, precision: str | None = None, config: dict | None = None) -> str:
    """``ncu-<op>-<rung>-<backend>-<shape>[-<precision>][-cfg_<K>_<V>…]``, safe as a file name (no
    '/', no leading '.'), and read back by :func:`label_from_stem`."""
    parts = ["ncu", *impl.split("/"), shape, *([precision] if precision else []),
             *(["cfg_" + "_".join(f"{k}_{v}" for k, v in sorted(config.items()))] if config else [])]
    return "-".join(_safe(p) for p in parts)[:200]


def label_from_stem(stem: str) -> dict:
    """Implementation, shape and precision from a file name, for a CSV without its sidecar (a
    config override's part is left out: the sidecar has it)."""
    parts = [p for p in stem.split("-") if not p.startswith("cfg_")]
    if parts[0] != "ncu" or len(parts) not in (5, 6):
        return {"implementation": stem, "shape": "", "precision": None}
    return {"implementation": "/".join(parts[1:4]), "shape": parts[4],
            "precision": parts[5] if len(parts) == 6 else None}


def resolve(impl_name: str, shape_text: str, precision: str | None):
    """(implementation, precision name to pass on or None for the op's default): a usage error
    (code 2) for an unknown implementation, a bad shape or a precision it does not run."""
    from study.backends import backend
    from study.registry import implementation, ladder

    try:
        impl = implementation(impl_name)
    except KeyError:
        raise ProfileError(f"unknown implementation {impl_name}; see python -m study list --json", code=2) from None
    problem = ladder(impl.op).problem
    try:
        shape = problem.parse_shape(shape_text)
        chosen = problem.precision(precision) if precision else problem.precisions[0]
    except (KeyError, ValueError) as exc:
        raise ProfileError(f"{impl_name} {shape_text}: {exc.args[0] if exc.args else exc}", code=2) from None
    reason = problem.check(shape, chosen) or backend(impl.backend).check(impl, problem, shape, chosen)
    if reason:
        raise ProfileError(f"{impl_name} {shape_text} {chosen.name}: {reason}", code=2)
    # The op's first precision is what --ncu-target runs by default: the file name omits it.
    return impl, (None if chosen == problem.precisions[0] else chosen.name)


def _failure(returncode: int, output: str) -> str:
    """Why ncu or its target failed (exit status not 0, or no kernel profiled), from what they printed."""
    errors = [line for line in output.splitlines() if line.startswith("==ERROR==")]
    if any("Failed to find metric" in e for e in errors):
        return ("ncu does not know a metric on this GPU or ncu version: " + "; ".join(errors[:3])
                + " (drop it from study.profile.METRICS or add it to OPTIONAL)")
    if errors:
        return "ncu failed: " + "; ".join(errors[:3])
    if "Traceback (most recent call last)" in output:
        return "the profiled program raised: " + output.strip().splitlines()[-1]
    if returncode == 1:
        # validate --ncu-target exits 1, silently, when the profiled launches' output is wrong.
        return "the output of the profiled launches failed the correctness check (ncu_target exited 1)"
    if returncode == 0:
        notes = [line for line in output.splitlines() if line.startswith("==")]
        return "ncu profiled no kernel (no rows in its CSV): " + ("; ".join(notes[-5:]) or output[-800:])
    return f"ncu exited {returncode}: {output[-800:]}"


def run_profile(impl_name: str, shape_text: str, precision: str | None = None, launches: int = 1,
                out_dir: Path | None = None, say=lambda text: None, config: dict | None = None) -> Path:
    """Profile one implementation at one shape under ncu and save its raw CSV and a sidecar;
    returns the CSV's path. A failure raises :class:`ProfileError` and writes nothing."""
    ncu = find_ncu()
    if launches < 1:
        raise ProfileError(f"--launches must be at least 1; got {launches}", code=2)
    impl, precision = resolve(impl_name, shape_text, precision)
    from study import hardware, results

    device = hardware.current_device()
    out_dir = Path(out_dir) if out_dir else results_dir(device.slug)
    available = available_metrics(ncu)
    metrics, left_out = chosen_metrics(available)
    if left_out:
        say(f"not collected (ncu {'does not list them here' if available is not None else '--query-metrics failed'}):"
            f" {', '.join(left_out)}")
    cmd = ncu_command(impl.name, shape_text, precision, launches, metrics, ncu=ncu, config=config)
    say(f"profiling {impl.name} {shape_text}{' ' + precision if precision else ''}, {launches} launch"
        f"{'es' if launches > 1 else ''}, {len(metrics)} metrics ...")
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ProfileError(f"ncu ran longer than {TIMEOUT_S} s; nothing written") from None
    except OSError as exc:
        raise ProfileError(f"could not start ncu ({ncu}): {exc}", code=2) from None
    output = proc.stdout + proc.stderr
    in_stdout = '"ID"' in proc.stdout  # ncu prints its report to stdout, its ==PROF== lines maybe not
    table, log = split_output(proc.stdout if in_stdout else output)
    log += proc.stderr.splitlines() if in_stdout else []
    if proc.returncode != 0 or not parse_raw_csv(table):
        raise ProfileError(_failure(proc.returncode, output))
    stem = profile_stem(impl.name, shape_text, precision, config)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{stem}.csv"
    csv_path.write_text(table)
    sidecar = {"schema": 1, "implementation": impl.name, "shape": shape_text, "precision": precision,
               "config": config or None,
               "launches": launches, "command": shlex.join(["ncu", *cmd[1:]]), "gpu": device.name,
               "ncu_version": ncu_version(ncu), "utc": datetime.datetime.now(datetime.timezone.utc)
               .isoformat(timespec="seconds"), "git": results.git_state(), "metrics": metrics,
               "metrics_left_out": left_out, "ncu_log": log[-20:]}
    csv_path.with_suffix(".json").write_text(json.dumps(sidecar, indent=1) + "\n")
    return csv_path


def results_dir(slug: str) -> Path:
    """Where a GPU's profiles go: ``reports/<gpu>/profiles/``."""
    return report_dir(slug) / "profiles"


def ncu_version(ncu: str) -> str:
    try:
        lines = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return lines.splitlines()[-1] if lines else ""


# -- Reading what ncu printed --------------------------------------------------------------
def split_output(text: str) -> tuple[str, list[str]]:
    """(the CSV table ncu printed, every other line): program output and ==PROF== lines go
    before the table, and a warning may follow it; CSV lines are the ones ncu quotes."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return "", lines
    table = [line for line in lines[start:] if line.startswith('"')]
    rest = lines[:start] + [line for line in lines[start:] if not line.startswith('"')]
    return "\n".join(table) + "\n", rest


def number(text: str):
    """A float for what ncu prints as a number ("1,234.5" too), else None."""
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def parse_raw_csv(text: str) -> list[dict]:
    """One dict per profiled kernel from ncu's ``--page raw --csv`` output (anything before the
    header row is skipped): column -> value, a float where the value is a number; ``_units``
    maps each metric to the unit ncu printed in its units row."""
    table, _ = split_output(text)
    rows = list(csv.reader(io.StringIO(table)))
    if len(rows) < 2:
        return []
    header, units = rows[0], rows[1]
    if units and units[0].strip():  # ncu always prints a units row; a file without one has none
        units, body = [""] * len(header), rows[1:]
    else:
        body = rows[2:]
    out = []
    for row in body:
        if len(row) != len(header):
            continue
        record = {k: (v if number(v) is None or k in _TEXT_COLUMNS else number(v)) for k, v in zip(header, row)}
        record["_units"] = {k: u for k, u in zip(header, units) if u}
        out.append(record)
    return out


# Launch columns that look numeric but are labels.
_TEXT_COLUMNS = {"ID", "Process ID", "Host Name", "Context", "Stream", "Device", "CC"}

_MS_PER = MS_PER_UNIT  # ncu's time units (study/validate.py)
_HZ_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


def _ms(value, unit: str):
    return None if value is None or unit not in _MS_PER else value * _MS_PER[unit]


def _ghz(value, unit: str):
    """A frequency in GHz: ncu prints "hz" / "Ghz" or cycles per a time unit."""
    if value is None:
        return None
    unit = unit.lower()
    match = re.fullmatch(r"([kmg]?)hz", unit)
    if match:
        return value * _HZ_PREFIX[match.group(1)] / 1e9
    cycles, _, per = unit.partition("/")
    if cycles == "cycle" and per in _MS_PER:
        return value / (_MS_PER[per] * 1e-3) / 1e9
    return None


# -- Summary and table ---------------------------------------------------------------------
def _short(kernel: str) -> str:
    """A kernel's name without its return type and argument list (C++ signatures are long)."""
    name = kernel.split("(", 1)[0].strip()
    return name.removeprefix("void ").strip() or kernel


def _mean(rows: list[dict], metric: str):
    values = [r[metric] for r in rows if isinstance(r.get(metric), float)]
    return statistics.fmean(values) if values else None


def _ratio(a, b):
    return None if a is None or not b else a / b


def summarise(rows: list[dict]) -> dict:
    """The figures of the table for the main kernel: the longest one (total duration) when a
    launch ran several (split-K's reduction, a library's helper kernels); the others are
    listed. A metric ncu did not give is None."""
    if not rows:
        raise ValueError("no kernel rows to summarise")
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row.get("Kernel Name", "?"), []).append(row)

    def ms_of(row):
        return _ms(row.get(DURATION) if isinstance(row.get(DURATION), float) else None,
                   row.get("_units", {}).get(DURATION, "ns"))

    def total(name):
        return sum(ms_of(r) or 0.0 for r in groups[name])

    main = max(groups, key=total)
    mine = groups[main]
    avg = lambda metric: _mean(mine, metric)  # noqa: E731: over the main kernel's launches
    unit = mine[0].get("_units", {})
    duration = _ms(avg(DURATION), unit.get(DURATION, "ns"))
    stalls = [(r, avg(stall_metric(r))) for r in STALL_REASONS if r not in NOT_A_STALL]
    stalls = sorted([s for s in stalls if s[1] is not None], key=lambda s: -s[1])
    hmma, gmma = avg(HMMA_PIPE), avg(GMMA_PIPE)
    tensor = max([t for t in ((hmma, "hmma"), (gmma, "gmma")) if t[0] is not None], default=(None, None))
    ffma = avg(FFMA_COUNT)
    return {
        "kernel": _short(main), "kernel_full": main, "launches": len(mine), "kernels": len(groups),
        "other_kernels": [{"kernel": _short(k), "launches": len(v), "ms": total(k) / len(v)}
                          for k, v in groups.items() if k != main],
        "duration_ms": duration, "sm_ghz": _ghz(avg(SM_CLOCK), unit.get(SM_CLOCK, "")),
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
    }


def _f(value, spec: str = ".1f") -> str:
    return "—" if value is None else format(value, spec)


def _conflicts(count, per_wavefront) -> str:
    return "—" if count is None else f"{count:,.0f} ({_f(per_wavefront, '.2f')})"


def _stall(reason, cycles) -> str:
    return "—" if reason is None else f"{reason} {cycles:.2f}"


def load(path: Path) -> tuple[dict, dict]:
    """(what was profiled: the sidecar, or what the file name says; the summary) of a saved CSV."""
    path = Path(path)
    sidecar = path.with_suffix(".json")
    meta = json.loads(sidecar.read_text()) if sidecar.is_file() else label_from_stem(path.stem)
    rows = parse_raw_csv(path.read_text())
    if not rows:
        raise ValueError(f"{display(path)}: no kernel rows in this file (not ncu --page raw --csv output?)")
    return meta, summarise(rows)


def _named(meta: dict) -> str:
    """The implementation as a row and its notes name it: with the config it overrides, if any."""
    return f"`{meta.get('implementation', '?')}`" + (f" ({config_text(meta['config'])})" if meta.get("config") else "")


def table_row(meta: dict, s: dict) -> list[str]:
    shape = meta.get("shape", "") + (f" {meta['precision']}" if meta.get("precision") else "")
    tensor = "—" if s["tensor_pipe_pct"] is None else f"{s['tensor_pipe_pct']:.1f} ({s['tensor_pipe']})"
    occupancy = f"{_f(s['occupancy_theoretical_pct'])} / {_f(s['occupancy_achieved_pct'])}"
    conflicts = (f"{_conflicts(s['smem_ld_conflicts'], s['smem_ld_conflicts_per_wavefront'])} / "
                 f"{_conflicts(s['smem_st_conflicts'], s['smem_st_conflicts_per_wavefront'])}")
    return [_named(meta), shape, f"`{s['kernel']}`", _f(s["duration_ms"], ".4f"),
            _f(s["sm_ghz"], ".2f"), _f(s["fma_pipe_pct"]), _f(s["ffma_tflops"], ".2f"), tensor,
            _f(s["issue_active_pct"]), _stall(s["top_stall"], s["top_stall_cycles"]),
            _stall(s["second_stall"], s["second_stall_cycles"]), conflicts, _f(s["registers"], ".0f"),
            occupancy, _f(s["dram_pct"])]


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
            others = ", ".join(f"`{o['kernel']}` {o['ms']:.4f} ms" for o in s["other_kernels"])
            notes.append(f"- {_named(meta)} {meta.get('shape', '')}: {s['kernels']} kernels per "
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


def parse_source_csv(text: str) -> tuple[str, list[dict]]:
    """(kernel name, rows) of ncu's source page; rows keep ncu's column names."""
    lines = list(csv.reader(io.StringIO(text)))
    if len(lines) < 2 or not lines[0] or lines[0][0] != "Kernel Name" or "Source" not in lines[1]:
        raise ValueError("not ncu's source page (--page source --csv --print-source sass): "
                         "its first line names the kernel, its second the columns")
    header = lines[1]
    return lines[0][1], [dict(zip(header, line)) for line in lines[2:] if len(line) == len(header)]


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

    kernel, rows = parse_source_csv(Path(path).read_text())
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

"""``python -m study profile``: Nsight Compute on one implementation at one shape, saved.

One implementation, one shape, one precision: ``ncu`` profiles exactly ``launches`` launches
of it (``python -m study.child ncu``: warm-up outside the profiler range, the output checked after)
and collects :data:`METRICS`, the counters that say which bottleneck a rung removed: pipe
utilisation, issue activity, warp stall reasons, shared-memory bank conflicts, registers and
occupancy. ncu's raw page (``--page raw --csv``: one column per metric, one row per kernel)
is saved as it came, ``reports/<gpu>/profiles/ncu-<op>-<rung>-<backend>-<shape>[-<precision>].csv``,
with a JSON sidecar saying what was run, where and how.

The Markdown table for the ladder docs is rendered from those saved files alone
(:mod:`study.profile_table`, ``python -m study profile --table``): no number in it is typed.

``--clock-control none``: the card runs at its own clocks, as in every other measurement of
the study; the SM clock ncu saw is a column of the table.
"""

from __future__ import annotations

import datetime
import json
import re
import shlex
import subprocess
from pathlib import Path

from study import hardware, results
from study import ncu as tools
from study.backends import backend
from study.ncu import parse_raw_csv, split_output
from study.paths import ROOT, report_dir
from study.select import UsageError, named

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
# Bytes the kernel moved to and from device memory (ncu flushes the caches before each profiled pass, so cold):
# against the op's minimum traffic they say whether a memory-bound kernel reads its input more than once.
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
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
           REGISTERS, OCCUPANCY_THEORETICAL, OCCUPANCY_ACHIEVED, DRAM, DRAM_READ, DRAM_WRITE, L2_HIT]
# An unknown name makes ncu refuse the whole run ("Failed to find metric"). These exist on some
# chips or versions only (wgmma is sm_90's), so they are asked for only where `ncu --query-metrics`
# lists them; a table column whose metric is missing shows "—".
OPTIONAL = (GMMA_PIPE, stall_metric("gmma"), CYCLES_PER_ISSUE)

class ProfileError(RuntimeError):
    """A profile that could not be made; ``code`` is the CLI's exit status (2: ncu or the case
    is not usable here, 1: the run failed)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# -- Running ncu ---------------------------------------------------------------------------
def find_ncu() -> str:
    """ncu on PATH, else under $CUDA_HOME, $CUDA_PATH or /usr/local/cuda."""
    found = tools.find_tool("ncu")
    if found is None:
        raise ProfileError(f"Nsight Compute (ncu) is not {tools.WHERE}; profile on the GPU machine, or put ncu "
                           "on PATH", code=2)
    return found


def ncu_command(impl: str, shape: str, precision: str | None, launches: int, metrics, ncu: str = "ncu",
                config: dict | None = None) -> list[str]:
    """ncu around ``python -m study.child ncu``: only the profiler range (the ``launches`` launches)
    is profiled, one row per kernel with one column per metric. ``config``: parameters that replace
    the declared config's (a point of the autotune space, say)."""
    return tools.command(ncu, tools.ncu_target(impl, shape, launches, precision, config), metrics, raw=True)


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
    for fit in ("FIT", "FIT_BN"):  # a declared config that fits itself to the shape (softmax v4, hgemm v6/v10):
        if out and params.get(fit) and fit not in out:
            out[fit] = 0  # the point named runs as written
    return out


def unfitted(texts, config: dict) -> list[str]:
    """The fit switches :func:`parse_config` turned off without being asked (``FIT=0`` added to ``config``),
    for the command to say so: a c86 profile meant for v6's fitted 64 × 64 tile ran its 128 × 128 one."""
    given = {part.partition("=")[0] for text in texts for part in text.split(",") if part}
    return [f"{fit}=0" for fit in ("FIT", "FIT_BN") if config.get(fit) == 0 and fit not in given]


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
    try:
        impl, problem, shape, chosen = named(impl_name, shape_text, precision)
    except UsageError as exc:
        raise ProfileError(str(exc), code=2) from None
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
        return "the output of the profiled launches failed the correctness check (the ncu child exited 1)"
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
               "ncu_version": tools.version(ncu), "utc": datetime.datetime.now(datetime.timezone.utc)
               .isoformat(timespec="seconds"), "git": results.git_state(), "metrics": metrics,
               "metrics_left_out": left_out, "ncu_log": log[-20:]}
    csv_path.with_suffix(".json").write_text(json.dumps(sidecar, indent=1) + "\n")
    return csv_path


def results_dir(slug: str) -> Path:
    """Where a GPU's profiles go: ``reports/<gpu>/profiles/``."""
    return report_dir(slug) / "profiles"

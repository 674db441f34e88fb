"""NVIDIA's command-line tools, in one place: where to find them (ncu, compute-sanitizer), how a
child process is started under them (``python -m study.child``), how a config override travels on
that command line, and how ncu's CSV output reads — raw pages, source pages, the per-launch
durations and their units.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

FALLBACK_DIRS = ("/usr/local/cuda/bin",)


def find_tool(name: str) -> str | None:
    """``name`` on PATH, else under $CUDA_HOME/bin, $CUDA_PATH/bin or /usr/local/cuda/bin; None when
    none of them has it. The caller says what to do then."""
    found = shutil.which(name)
    if found:
        return found
    roots = [Path(r) / "bin" for r in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if r]
    for folder in [*roots, *map(Path, FALLBACK_DIRS)]:
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


WHERE = "on PATH nor in $CUDA_HOME/bin, $CUDA_PATH/bin or /usr/local/cuda/bin"  # where find_tool looked


def find_cuobjdump() -> str | None:
    """cuobjdump where :func:`find_tool` finds it, else the copy Triton's wheel carries (a CPU machine with nvcc
    and Triton but not the whole toolkit: CI's); None when neither has it."""
    found = find_tool("cuobjdump")
    if found:
        return found
    try:
        import triton
    except ImportError:
        return None
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return str(bundled) if bundled.is_file() else None


def config_text(config: dict) -> str:
    """``K=V,K=V`` in key order: how a config override travels on a command line."""
    return ",".join(f"{k}={v}" for k, v in sorted(config.items()))


def child_command(what: str, *args: str) -> list[str]:
    """The command of a child process that runs one implementation under a tool (study/child.py)."""
    return [sys.executable, "-m", "study.child", what, *args]


def ncu_target(impl: str, shape: str, launches: int, precision: str | None = None,
               config: dict | None = None) -> list[str]:
    """The child that launches ``impl`` exactly ``launches`` times inside ncu's profiler range."""
    return child_command("ncu", impl, shape, str(launches), *(["--precision", precision] if precision else []),
                         *(["--config", config_text(config)] if config else []))


def command(tool: str, target: list[str], metrics, raw: bool = False) -> list[str]:
    """ncu around a child (:func:`ncu_target`): the card's own clocks, only the child's profiler range,
    CSV, ``metrics``; ``raw``: the raw page (a row per kernel, a column per metric) in base units, so
    that a column's scale does not depend on its values."""
    return [tool, "--clock-control", "none", "--profile-from-start", "off", "--csv",
            *(["--page", "raw", "--print-units", "base"] if raw else []), "--metrics", ",".join(metrics), *target]


def version(tool: str) -> str:
    """The last line a tool prints for ``--version`` (its version), or an empty string."""
    try:
        lines = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
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
        record = {k: (v if number(v) is None or k in TEXT_COLUMNS else number(v)) for k, v in zip(header, row)}
        record["_units"] = {k: u for k, u in zip(header, units) if u}
        out.append(record)
    return out


# Launch columns that look numeric but are labels.
TEXT_COLUMNS = {"ID", "Process ID", "Host Name", "Context", "Stream", "Device", "CC"}

# ncu spells units "nsecond" in some versions and "ns" in others (2025.3 on the H200: "ns").
MS_PER_UNIT = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3,
                "ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def ms(value, unit: str):
    """A duration in ms from a value in one of ncu's time units (None where the unit is unknown)."""
    return None if value is None or unit not in MS_PER_UNIT else value * MS_PER_UNIT[unit]


# ncu's byte units are decimal ("Kbyte" is 1,000 bytes); --print-units base prints "byte".
_BYTE_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def nbytes(value, unit: str):
    """A count of bytes from a value in one of ncu's byte units (None where the unit is unknown)."""
    match = re.fullmatch(r"([kmgt]?)byte", unit.lower())
    return None if value is None or match is None else value * _BYTE_PREFIX[match.group(1)]


_HZ_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


def ghz(value, unit: str):
    """A frequency in GHz: ncu prints "hz" / "Ghz" or cycles per a time unit."""
    if value is None:
        return None
    unit = unit.lower()
    match = re.fullmatch(r"([kmg]?)hz", unit)
    if match:
        return value * _HZ_PREFIX[match.group(1)] / 1e9
    cycles, _, per = unit.partition("/")
    if cycles == "cycle" and per in MS_PER_UNIT:
        return value / (MS_PER_UNIT[per] * 1e-3) / 1e9
    return None


def parse_ncu_csv(text: str, launches: int) -> tuple[list[float], int]:
    """Per-launch durations (ms) from ncu's CSV, summing the kernels of each launch."""
    table, _ = split_output(text)
    if not table:
        raise ValueError("no CSV table in ncu's output")
    rows = [r for r in csv.DictReader(io.StringIO(table)) if r.get("Metric Name") == "gpu__time_duration.sum"]
    durations = [ms(float(r["Metric Value"].replace(",", "")), r["Metric Unit"]) for r in rows]
    if None in durations:
        raise ValueError(f"ncu printed a duration in a unit not in {sorted(MS_PER_UNIT)}")
    if not durations or len(durations) % launches:
        raise ValueError(f"ncu reported {len(durations)} kernels for {launches} launches")
    per = len(durations) // launches
    return [sum(durations[i * per:(i + 1) * per]) for i in range(launches)], per


def parse_source_csv(text: str) -> tuple[str, list[dict]]:
    """(kernel name, rows) of ncu's source page; rows keep ncu's column names."""
    lines = list(csv.reader(io.StringIO(text)))
    if len(lines) < 2 or not lines[0] or lines[0][0] != "Kernel Name" or "Source" not in lines[1]:
        raise ValueError("not ncu's source page (--page source --csv --print-source sass): "
                         "its first line names the kernel, its second the columns")
    header = lines[1]
    return lines[0][1], [dict(zip(header, line)) for line in lines[2:] if len(line) == len(header)]

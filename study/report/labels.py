"""Labels and formatters every page shares: backend names, shapes as reports show them, numbers
with a dash for "none", the informative line of a reason, the flags that ask for a second look.
A leaf: pure functions of records, no framework import but :mod:`study.metrics`, :mod:`study.keys` and
:mod:`study.timing`."""

from __future__ import annotations

from study import metrics
from study.keys import CaseKey
from study.timing import MODES

BACKEND_LABEL = {"cuda": "CUDA", "triton": "Triton", "cublas": "cuBLAS", "cublaslt": "cuBLASLt", "torch": "PyTorch",
                 "inductor": "Inductor"}
RUNG_BACKENDS = ("cuda", "triton")


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


def num(value, fmt: str, suffix: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{suffix}"


def size(count) -> str:
    """Bytes in decimal units to a tenth: MB, or kB and B for the few a tiny product moves ("—" for None)."""
    if count is None:
        return "—"
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:,.0f} B"


def unit_of(ms: list[dict]) -> str:
    return metrics.unit((ms[0].get("work") or {}).get("bound", "compute")) if ms else "GFLOPS"


def flags(m: dict) -> list[str]:
    """Why a number deserves a second look: noise above target, throttling, launch-bound,
    above the memory peak (served from L2), run at the power cap, a pair at clocks apart, a pair
    whose kernels ran at clocks they do not hold alone (study.metrics.pair_gaps), such a pair timed
    again with each side settled before its batches (study.session.Session._paired), a TMA rung
    whose launch copied operands TMA cannot read (study/ops/tma_staging.py)."""
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
    if clocks.get("at_power_cap"):
        out.append("power-cap")
    gaps = metrics.pair_gaps(m)
    if (gaps.get("clock_spread") or 0) > metrics.PAIR_CLOCK_GAP:
        out.append("clocks")
    if (gaps.get("borrowed") or 0) > metrics.PAIR_CLOCK_GAP:
        out.append("power-mix")
    if (m.get("paired") or {}).get("interleaved"):
        out.append("re-settled")
    config = m.get("config") or {}
    if config.get("staged") or config.get("gemm_staged"):
        out.append("staged")
    return out


def primary(ms: list[dict]) -> list[dict]:
    """The records a ladder table and figure show: a paired record (timed again against the reference
    for the best-rung table) stands in only where its case has no unpaired record."""
    plain = {CaseKey.of_record(m) for m in ms if not m.get("paired")}
    return [m for m in ms if not m.get("paired") or CaseKey.of_record(m)._replace(paired=False) not in plain]


def ratio_cell(m: dict) -> str:
    """× reference, with the interval of a paired record (``same within noise`` when it holds 1)."""
    text = num(m.get("x_ref"), ".2f", "×")
    ci = m.get("x_ref_ci")
    if ci:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]" + (" same within noise" if ci[0] <= 1 <= ci[1] else "")
    return text


def modes_of(ms) -> list[str]:
    present = {m.get("mode") or "cold" for m in ms}
    return [mode for mode in MODES if mode in present]


def tunes_of(ms) -> list[str]:
    return sorted({m["autotune"] for m in ms if m["autotune"] != "n/a"}) or ["off"]


def headline_cell(m: dict | None) -> str:
    if m is None:
        return "—"
    if m["status"] == "impossible":  # shown with its figure, never ranked
        return f"**impossible** {num(metrics.headline(m), ',.0f')}"
    if m["status"] != "ok":
        return f"**{m['status']}**"
    return num(metrics.headline(m), ",.0f") + "".join(f" ⚑{f}" for f in flags(m))


# Math modes that emulate a precision on other units: their rows say so, so that a tensor-core
# rung in an FP32 table is never read as FFMA (its % peak is of the emulation's own peak).
EMULATION = {"3xtf32": "3xTF32: FP32-accurate tensor-core emulation"}
# The mark of a suite's verdict series: its own math, or an emulation where its gate error is at most the reference's.
VERDICT_MARK = "where error ≤ ref"
EMULATION_PEAK = {"3xtf32": "a **3xTF32** row (FP32 problem, FP32 gate, three TF32 tensor-core products per product) "
                            "counts the FP32 problem's FLOPs; its % peak is of a third of the TF32 peak"}


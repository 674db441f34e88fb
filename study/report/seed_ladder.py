"""The hgemm report's section that sets the seed's ladder beside this GPU's (docs/seeds.md §2).

The seed walks an FP16 GEMM of 4096³ on an A100 from a naive loop to cuBLAS in seven steps and
says what each step reaches there; the study's hgemm rungs v0–v6 are those steps. The section
puts, rung by rung, the seed's figure beside the best measured FP16 rung of each backend at the
seed's shape (TFLOPS and % of the tensor-core peak as the record derived it), and below them the
Nsight Compute table saved beside the report (``profiles/hgemm.md``, written by
``python -m study profile --table``), so the ladder, its bottlenecks and the seed's claims read
together. The seed's figures are quoted, not measured; every H200 figure comes from the records.
"""

from __future__ import annotations

from pathlib import Path

from study import metrics
from study.report.page import Section

OP = "hgemm"
SHAPE = {"M": 4096, "N": 4096, "K": 4096}
PRECISION = "fp16"
# The seed's table for an A100 (docs/seeds.md §2): step -> (TFLOPS, % of its 312 TFLOPS FP16 peak).
SEED_A100 = {0: ("~0.5", "< 0.5 %"), 1: ("~3", "1 %"), 2: ("~30", "10 %"), 3: ("~100", "30 %"),
             4: ("~150", "45 %"), 5: ("~190", "60 %"), 6: ("~250", "80 %")}
SEED_LIBRARY = ("~310", "95 %+")  # its step 7, CUTLASS / cuBLAS
# A file holding fewer of the seed's steps at its shape (a bare GEMM beside a fusion run, one rung's
# experiment) is no ladder: the section stays out of its report.
MIN_STEPS = 4


def _cell(record: dict | None) -> str:
    if record is None:
        return "—"
    tuned = " tuned" if record.get("autotune") == "on" else ""
    pct = record["pct_peak"]
    return f"{metrics.headline(record) / 1e3:,.1f} · {pct:.{1 if pct >= 1 else 2}f} %{tuned}"


def section(measurements: list[dict], figure_path: Path | None, folder: Path) -> list[str]:
    """The seed-beside-H200 table and the saved ncu table; nothing unless the file holds at least
    MIN_STEPS of the seed's steps at its shape and precision. ``figure_path`` is unused (no figure)."""
    at_seed = [m for m in measurements if m["op"] == OP and m.get("precision") == PRECISION and m["shape"] == SHAPE]
    steps = {m["rung_index"] for m in at_seed if m.get("rung") and m["status"] == "ok" and m["rung_index"] in SEED_A100}
    if len(steps) < MIN_STEPS:
        return []
    from tabulate import tabulate

    rows = []
    for index in sorted({m["rung_index"] for m in at_seed if m.get("rung")}):
        rung = [m for m in at_seed if m.get("rung_index") == index and m.get("rung")]
        seed = SEED_A100.get(index)
        rows.append([f"v{index}", f"`{rung[0]['rung']}`", f"{seed[0]} · {seed[1]}" if seed else "— (past the seed)",
                     _cell(metrics.best([m for m in rung if m["backend"] == "cuda"])),
                     _cell(metrics.best([m for m in rung if m["backend"] == "triton"]))])
    library = metrics.best([m for m in at_seed if m.get("reference")])
    rows.append(["", "library", f"{SEED_LIBRARY[0]} · {SEED_LIBRARY[1]} (CUTLASS / cuBLAS)",
                 _cell(library) + (f" ({library['implementation'].split('/')[1]})" if library else ""), ""])
    peak = next((m.get("peak") for m in at_seed if m.get("peak")), "the tensor-core peak")
    out = ["### The seed's ladder beside this GPU's", "",
           "The seed (docs/seeds.md §2) gives each step of an FP16 GEMM of 4096³ on an A100 as TFLOPS · % of its "
           f"312 TFLOPS FP16 peak; beside it, the fastest ok FP16 measurement of each rung at that shape in this "
           f"file, per backend, as TFLOPS · % of the {peak} peak (`tuned`: autotune on). Note that the seed's "
           "steps 2–5 reach 10–60 % of the peak only on the tensor cores, which this study's CUDA rungs v2–v5 do not use "
           "(FP32 FFMA, docs/ladders/hgemm.md); their Triton twins do.", "",
           tabulate(rows, ["#", "rung", "seed: A100 FP16", "CUDA", "Triton"], tablefmt="github",
                    disable_numparse=True), ""]
    profiles = Path(folder) / "profiles" / f"{OP}.md"
    if profiles.is_file():
        out += ["### Nsight Compute", "",
                f"From [`profiles/{OP}.md`](profiles/{OP}.md) beside this report, as "
                "`python -m study profile --table` rendered it from the saved ncu output:", "",
                profiles.read_text().strip(), ""]
    return out


SECTION = Section("seed", section)  # hgemm's (Problem.report_sections)

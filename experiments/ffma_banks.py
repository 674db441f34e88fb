"""How many of an FFMA rung's FFMAs read two fresh source registers of one register bank? (issue: past
cuBLAS, the FFMA item) — on the CPU: nvcc compiles each autotune point, cuobjdump prints its SASS.

The model (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018, for
Volta; assumed here for Hopper, not verified): the register file has two banks, chosen by the
register's index parity; an FFMA reads its three sources in one cycle unless two distinct registers
it does not take from the operand reuse cache (the `.reuse` flag on an earlier instruction's same
slot) sit in one bank. The accumulator is a source and the destination, so in `FFMA Rc, Ra, Rb.reuse,
Rc` the A fragment's Ra and the accumulator Rc must differ in parity. What a conflict costs on the
H200, if anything, is ncu's to say (dispatch stalls); this script only counts them, per point, with
the registers and spills ptxas reports.

    python experiments/ffma_banks.py sgemm v7_multistage [fp32]     (repository root; nvcc on PATH)

cuobjdump: on PATH or in the CUDA toolkit, else the copy Triton's wheel carries (study.ncu.find_cuobjdump).
docs/ladders/sgemm.md quotes one run.
"""

import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from study.backends.cuda import nvcc_command  # noqa: E402
from study.catalog import implementation, ladder  # noqa: E402
from study.ncu import find_cuobjdump  # noqa: E402

SOURCE = re.compile(r"-?\|?R(\d+)\|?(\.reuse)?")


def cuobjdump() -> str:
    return find_cuobjdump() or sys.exit("cuobjdump is neither on PATH, in the CUDA toolkit, nor in Triton's wheel")


def ffma_sources(sass: str):
    """(source registers, which are reused) of every FFMA: RZ and constants are not registers."""
    for line in sass.splitlines():
        if not re.search(r"\bFFMA\b", line):
            continue
        operands = [o.strip() for o in line.split("*/", 1)[1].split(";")[0].split("FFMA", 1)[1].split(",")]
        regs = [(int(m.group(1)), bool(m.group(2))) for o in operands[1:] for m in [SOURCE.fullmatch(o)] if m]
        yield regs


def count(sass: str) -> dict:
    out = collections.Counter()
    for regs in ffma_sources(sass):
        fresh = {r for r, reused in regs if not reused}
        out["ffma"] += 1
        out["reuse"] += any(reused for _, reused in regs)
        out["same_bank"] += any(n >= 2 for n in collections.Counter(r % 2 for r in fresh).values())
    return out


def main(op: str, rung: str, precision_name: str = "fp32") -> None:
    impl = implementation(f"{op}/{rung}/cuda")
    precision = ladder(op).problem.precision(precision_name)
    tool = cuobjdump()
    print(f"{impl.name} {precision_name}, nvcc sm_90a: FFMAs, with a reused source, with two fresh sources in one bank")
    for point in impl.space or (impl.params,):
        defines = {**point, **precision.cuda_defines, "ALIGNED": 1}
        with tempfile.TemporaryDirectory() as folder:
            cubin = Path(folder) / "k.cubin"
            built = subprocess.run([*nvcc_command(Path(impl.target.path), defines, "sm_90a", cubin), "-Xptxas", "-v"],
                                   capture_output=True, text=True, check=True)
            sass = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
        regs = re.findall(r"Used (\d+) registers", built.stderr)
        spills = re.findall(r"(\d+) bytes spill stores", built.stderr)
        c = count(sass)
        share = c["same_bank"] / c["ffma"] if c["ffma"] else 0.0
        label = " ".join(f"{k}={v}" for k, v in point.items())
        print(f"{label}: {c['ffma']} FFMA, {c['reuse']} with reuse, {c['same_bank']} same-bank ({share:.0%}); "
              f"registers {'/'.join(regs)}, spill stores {'/'.join(spills)} B")


if __name__ == "__main__":
    main(*sys.argv[1:])

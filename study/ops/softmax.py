"""Softmax over the last axis: Y[i, j] = exp(X[i, j] − max_j X[i]) / Σ_j exp(X[i, j] − max_j X[i]);
X and Y M×N row-major, FP32, FP16 or BF16 storage, FP32 arithmetic.

A softmax reads each element once and writes it once at least, with a handful of operations in
between, so it is memory-bound and judged in GB/s of that minimum traffic (2·M·N elements)
against the memory bandwidth. The ladder (docs/ladders/softmax.md) counts the passes over HBM:
v0 three passes, one thread per row (uncoalesced) → v1 one block per row, shared-memory tree
reductions (coalesced, still three passes) → v2 warp-shuffle reductions and 16-byte loads →
v3 online softmax (the running maximum and the rescaled sum in one pass, then the normalising
pass: two reads) → v4 the row kept in registers, read once (rows that fit; longer rows take
v3's two passes, recorded) → v5 a warp per row for short rows (shuffles only, several rows a
block) → v6 a long row over a thread-block cluster, its maximum and sum exchanged through
distributed shared memory (the row on chip across up to 8 blocks; v4's body for rows one block
holds; recorded) → v7 rows streamed by TMA bulk copies into a ring of shared-memory stages in a
persistent grid, the next rows loading while a row is reduced and written (a cluster of 2–8 blocks a row where
one block's ring cannot hold two) → v8 that ring cut into pieces a loader warp refills as the write pass leaves
them → v9 v8 with a row's statistics crossing the cluster while the next row's first pass runs → v10 v9 with a
row over a team of the grid's blocks of any size, exchanging through L2 (study/ops/softmax_rings.py plans the
four). Reported cold: every default shape's X and Y exceed the L2.

Correctness gate. The inputs are drawn in the storage type, so the float64 softmax of those very
values is the reference. Every output element carries the same few relative errors — its
exponential, the row's sum, one division — plus the rounding of Y to the storage type, so the
metric is relative: max |Y − ref| / (ref + η), with η the storage type's smallest normal number
(below it, rounding is absolute). Tolerances: 2e-4 for FP32, 1.5e-3 for FP16 (its rounding alone
is up to 2^-11 = 4.9e-4), 1e-2 for BF16 (2^-8 = 3.9e-3). Each fails the next-lower precision: an
FP32 result rounded to FP16, an FP16 one rounded to BF16, a BF16 one whose sum was accumulated
in BF16 (tests/test_softmax.py). The structured inputs add 1000 to every row but the first, so
a kernel that exponentiates without subtracting the maximum overflows and fails.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from study import draws, kernel_header
from study.backends import cuda
from study.ops.softmax_rings import V9, piece_ring_launcher, team_ring_launcher, tma_ring_launcher
from study.ops.softmax_twins import (normalize_after_tuned_stats, ring_twin_check, ring_twin_launch, rows_twin_launch,
                                    split_rows_twin_launch, twin_launch, warp_rows_twin_launch, whole_twin_launch)
from study.paths import CUDA_DIR
from study.precision import BF16_STORAGE, FP16_STORAGE, FP32
from study.problem import DTYPES, CudaLaunch, CudaLauncher, Problem, cdiv, offsets_reason, rows_vector_aligned
from study.registry import Baseline, Rung, register, twin
from triton_kernels import softmax as tk

TOLERANCE = {"fp32": 2e-4, "fp16": 1.5e-3, "bf16": 1e-2}
SMALLEST_NORMAL = {"fp32": 2.0**-126, "fp16": 2.0**-14, "bf16": 2.0**-126}
INPUT_RANGE = 8.0  # uniform in [−8, 8): a row's exponentials span e^-16 ≈ 1.1e-7 … 1 of its largest


class Softmax(Problem):
    name = "softmax"
    axes = ("M", "N")
    bound = "memory"
    precisions = (FP32, FP16_STORAGE, BF16_STORAGE)
    default_precisions = ("fp32", "fp16", "bf16")
    # Square, tall, long rows (32768: exactly what v4 keeps in registers in FP32 at its default
    # config), many short rows, and a row length that is no power of two (nor a multiple of the
    # 16-byte vector: rows start at every offset from 16 bytes, the PEEL paths).
    headline_shapes = ({"M": 16384, "N": 4096},)
    headline_precisions = ("fp32", "bf16")  # FP32 and BF16 logits; FP16 moves the bytes BF16 does
    default_shapes = ({"M": 4096, "N": 4096}, {"M": 16384, "N": 4096}, {"M": 4096, "N": 32768},
                      {"M": 65536, "N": 1024}, {"M": 8192, "N": 3001})
    # Cold only: X and Y of every default shape hold 64 MB or more (FP16 4096²: 32 + 32), beyond the
    # H200's 60 MB of L2, so a hot run would time the same HBM traffic (--mode hot measures it).
    default_modes = ("cold",)
    # A row no vector divides (PEEL paths: heads and tails; block tails), and aligned rows longer than v4 holds
    # (40000: FP32 only; 70000: every type).
    sanitize_shapes = ({"M": 5, "N": 1031}, {"M": 3, "N": 40000}, {"M": 2, "N": 70000})
    tolerance = TOLERANCE
    error_metric = "max |out − ref| / (ref + η), η the storage type's smallest normal number"

    def flops(self, shape) -> int:
        # Maximum, subtraction, exponential, sum and scaling: five operations an element, counted
        # for the roofline's arithmetic intensity only (the headline is GB/s).
        return 5 * shape["M"] * shape["N"]

    def bytes(self, shape, precision) -> int:
        return 2 * precision.element_bytes * shape["M"] * shape["N"]

    def bytes_needed(self, shape, precision) -> int:
        # X and Y in storage, the FP32 draw, float64 X, exponentials, reference and scale.
        return (2 * precision.element_bytes + 4 + 4 * 8) * shape["M"] * shape["N"]

    def check(self, shape, precision) -> str | None:
        return super().check(shape, precision) or offsets_reason("X", shape["M"] * shape["N"])

    # ---- data -----------------------------------------------------------------
    def make_inputs(self, shape, precision, seed, device):
        x, = draws.uniform(seed, [(shape["M"], shape["N"])])  # kept for the other precisions
        return {"X": (x * INPUT_RANGE).to(DTYPES[precision.dtype]).to(device)}

    def structured_inputs(self, shape, precision, device):
        """Integers in [−8, 8] (a fixed seed), every row but the first shifted by 1000: exp(1000)
        overflows FP32, so a kernel that skips the maximum gives inf or NaN; a misplaced row or
        column changes the answer."""
        gen = torch.Generator().manual_seed(2**31 - 1)
        x = torch.randint(-8, 9, (shape["M"], shape["N"]), generator=gen).float()
        x[1:] += 1000.0
        return {"X": x.to(DTYPES[precision.dtype]).to(device)}

    def make_output(self, shape, precision, device):
        # Poisoned: an element the kernel never writes stays NaN and fails the gate.
        return torch.full((shape["M"], shape["N"]), float("nan"), dtype=DTYPES[precision.dtype], device=device)

    def reference(self, tensors, precision):
        ref = torch.softmax(tensors["X"].to(torch.float64), dim=-1)
        return ref, ref + SMALLEST_NORMAL[precision.name]

    # ---- CUDA glue ------------------------------------------------------------
    def cuda_defines(self, config, tensors, out, shape, precision):
        """The config, the storage macro, ALIGNED: 1 when N is a multiple of the 16-byte vector
        and X and Y start on 16 bytes (every row then does), and PEEL: 1 when they do not but X
        and Y lie at the same offset from 16 bytes, so that each row's part between its first
        and last 16-byte boundary moves in vectors (row.cuh). Neither: the scalar paths."""
        x = tensors["X"]
        aligned = rows_vector_aligned(shape["N"], precision.element_bytes, (x, out))
        peel = not aligned and (x.data_ptr() - out.data_ptr()) % 16 == 0
        return {**super().cuda_defines(config, tensors, out, shape, precision),
                "ALIGNED": int(aligned), "PEEL": int(peel)}


SOFTMAX = Softmax()


# ---- launchers ---------------------------------------------------------------------------------------

def thread_rows_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v0: THREADS rows per block, one a thread."""
    threads = defines["THREADS"]
    args = (cuda.as_cupy(tensors["X"]), cuda.as_cupy(out), np.int32(shape["M"]), np.int32(shape["N"]))
    return CudaLaunch(grid=(cdiv(shape["M"], threads), 1, 1), block=(threads, 1, 1), args=args)


@functools.cache
def _block_points(path) -> tuple:
    """(CLUSTER, THREADS, ON_CHIP) of each point of a rung's space, from its header (the one list);
    CLUSTER 1 for a rung without clusters (v4)."""
    return tuple(dict.fromkeys((p.get("CLUSTER", 1), p["THREADS"], p["ON_CHIP"])
                               for p in kernel_header.read(path).space))


V4_PATH = CUDA_DIR / "softmax" / "04_on_chip.cu"
V6_PATH = CUDA_DIR / "softmax" / "06_cluster_rows.cu"


def row_slot(defines, out) -> int:
    """Elements a register slot of v4–v6 holds: a 16-byte vector on the ALIGNED and PEEL paths, else
    four single elements (row.cuh, ON_CHIP_SLOT)."""
    return 16 // out.element_size() if defines["ALIGNED"] or defines.get("PEEL") else 4


# A row that no single block holds (FIT=1): the point that c25's tuning (3e65580, docs/ladders/softmax.md)
# put within 15 % of the best point at every such shape it measured (1,024 rows of 50257-262144 and 32 rows of
# 131072-262144, FP32 and BF16): 32 registers a thread (ON_CHIP=4), so that two (1024 threads) or four (512)
# blocks share an SM and one block's reductions and stores overlap the others' loads; v6 spreads the row over
# a cluster of 8 (a few long rows still fill the SMs), on chip where it holds the row, else two passes whose
# second read L2 serves in part. The rule it replaces (the fewest blocks that hold the row at 1024 × 8: 56
# registers, one block an SM) was up to 48 % slower than the best point (1024×151936 BF16).
# v6's point also loads 4 vectors a thread before using any in its two streaming passes (row.cuh
# STREAM_UNROLL; a row on chip does not stream, so it is the same kernel there). c29's tuning (fa8e8f8,
# experiments/softmax-stream-unroll-fa8e8f8) timed (8, 512, 4) with 4 against 1 at every shape of c25's set:
# less time at 32×262144 and 1,024 rows of 151936 and 262144 (BF16 1.9, 8.5 and 7.1 %; FP32 10.5, 2.0 and
# 0.2 %), within 0.6 % at 1024×50257 (on chip there at FP32). Each is (part of) a point of its rung's space.
LONG_ROW_POINT = {V4_PATH: {"THREADS": 1024, "ON_CHIP": 4},
                  V6_PATH: {"CLUSTER": 8, "THREADS": 512, "ON_CHIP": 4, "STREAM_UNROLL": 4}}


def fitted_block(config, tensors, out, shape, precision, path=V4_PATH):
    """v4's defines. A config with FIT=1 (its declared one) takes THREADS and ON_CHIP from the row: of the
    space's one-block points, the fewest register slots (THREADS·ON_CHIP) that hold it, ties to more threads (a
    short row spread over a large block waits on a block-wide reduction for little data); a row none holds
    takes :data:`LONG_ROW_POINT` (v3's two passes at two blocks an SM). The header gives the measurements
    behind it. v6 (``path``, a space with CLUSTER): the same for rows one block holds (CLUSTER=1, v4's body);
    a longer row takes its :data:`LONG_ROW_POINT`, a cluster of 8 blocks."""
    defines = SOFTMAX.cuda_defines(config, tensors, out, shape, precision)
    if not config.get("FIT"):
        return defines
    slot = row_slot(defines, out)
    points = sorted((p for p in _block_points(path) if p[0] == 1), key=lambda p: (p[1] * p[2], -p[1]))
    fits = [p for p in points if fits_on_chip(shape["N"], p[1], p[2], slot)]
    if not fits:
        return {**defines, **LONG_ROW_POINT[path]}
    cluster, threads, on_chip = fits[0]
    return {**defines, **({"CLUSTER": cluster} if "CLUSTER" in config else {}), "THREADS": threads, "ON_CHIP": on_chip}


def fitted_cluster(config, tensors, out, shape, precision):
    """v6's defines: :func:`fitted_block` over v6's space: CLUSTER=1 (v4's body, one block) for a row one block
    holds, else 8 blocks of 512 threads × 4 vectors, on chip where they hold the row, else two passes."""
    return fitted_block(config, tensors, out, shape, precision, path=V6_PATH)


def team_rows(warp_per_row: bool, on_chip: bool) -> CudaLauncher:
    """A team of threads per row: the block (v1–v4) or a warp, THREADS/32 rows a block (v5). Blocks run
    along grid.x; grid.y takes what 65535 cannot. ``on_chip`` (v4, v5): whether the row fits in the
    registers of its team (ON_CHIP slots a thread) or took the two-pass fallback is recorded."""
    def team(defines) -> int:
        return 32 if warp_per_row else defines["THREADS"]

    def launch(defines, tensors, out, shape, precision):
        m, n = shape["M"], shape["N"]
        threads = defines["THREADS"]
        args = (cuda.as_cupy(tensors["X"]), cuda.as_cupy(out), np.int32(m), np.int32(n))
        blocks = cdiv(m, threads // team(defines))
        facts = {}
        if on_chip:
            facts = {"on_chip": int(fits_on_chip(n, team(defines), defines["ON_CHIP"], row_slot(defines, out)))}
        return CudaLaunch(grid=(min(blocks, 65535), cdiv(blocks, 65535), 1), block=(threads, 1, 1), args=args,
                          facts=facts)

    def check(params, shape, precision):
        if cdiv(cdiv(shape["M"], params["THREADS"] // team(params)), 65535) > 65535:
            return f"M={shape['M']} rows need more than 65535 × 65535 blocks"
        return None

    return CudaLauncher(launch=launch, check=check)


def cluster_rows_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v6: a row per CLUSTER consecutive blocks of grid.x (the kernel's __cluster_dims__ needs grid.x a
    multiple of CLUSTER), grid.y beyond 65535 blocks. Recorded with the config (CLUSTER, THREADS, ON_CHIP):
    on_chip, whether the row fits in the registers of its CLUSTER blocks (0: the two-pass fallback)."""
    m, n = shape["M"], shape["N"]
    cluster, threads = defines["CLUSTER"], defines["THREADS"]
    rows = min(m, 65535 // cluster)  # rows along grid.x
    args = (cuda.as_cupy(tensors["X"]), cuda.as_cupy(out), np.int32(m), np.int32(n))
    facts = {"on_chip": int(fits_on_chip(n, cluster * threads, defines["ON_CHIP"], row_slot(defines, out)))}
    return CudaLaunch(grid=(rows * cluster, cdiv(m, rows), 1), block=(threads, 1, 1), args=args, facts=facts)


def cluster_rows_check(params, shape, precision):
    if cdiv(shape["M"], 65535 // params["CLUSTER"]) > 65535:
        return f"M={shape['M']} rows of {params['CLUSTER']} blocks need more than 65535 × 65535 blocks"
    return None


# ---- v7: rows in a ring of shared-memory stages ----------------------------------------------------

THREAD_ROWS = CudaLauncher(launch=thread_rows_launch)
BLOCK_ROWS = team_rows(warp_per_row=False, on_chip=False)   # v1–v3
ON_CHIP_ROWS = dataclasses.replace(team_rows(warp_per_row=False, on_chip=True), defines=fitted_block)  # v4
WARP_ROWS = team_rows(warp_per_row=True, on_chip=True)      # v5
CLUSTER_ROWS = CudaLauncher(launch=cluster_rows_launch, check=cluster_rows_check, defines=fitted_cluster)  # v6
TMA_RING = tma_ring_launcher(SOFTMAX.cuda_defines)  # v7
PIECE_RING = piece_ring_launcher(SOFTMAX.cuda_defines)  # v8
OVERLAP_RING = piece_ring_launcher(SOFTMAX.cuda_defines, V9)  # v9
TEAM_RING = team_ring_launcher(SOFTMAX.cuda_defines)  # v10


def fits_on_chip(n: int, threads: int, slots: int, per_slot: int) -> bool:
    """Whether v4 holds a row of ``n`` elements in its registers: ``slots`` register slots a
    thread (ON_CHIP), ``per_slot`` elements each (a 16-byte vector, or 4 on the scalar path)."""
    return n <= threads * slots * per_slot


def torch_softmax(tensors, out, precision):
    x = tensors["X"]
    # aten's out= variant: torch.softmax's own kernel (FP32 math for half inputs), no extra copy.
    return lambda: torch.ops.aten._softmax.out(x, -1, False, out=out)


register(
    SOFTMAX,
    rungs=[
        Rung("v0_thread_per_row", "one thread per row, three passes (max, sum, normalise)",
             "— (the baseline: a warp's loads are a row apart, uncoalesced)",
             cuda="00_thread_per_row.cu", launch=THREAD_ROWS,
             triton=twin(tk.softmax_rows, tk.V0_THREAD_PER_ROW, tk.ROWS_SPACE, launch=rows_twin_launch)),
        Rung("v1_block_per_row", "one block per row, shared-memory tree reductions, three passes",
             "uncoalesced loads", cuda="01_block_per_row.cu", launch=BLOCK_ROWS,
             triton=twin(tk.softmax_passes, tk.V1_BLOCK_PER_ROW, tk.BLOCK_SPACE, launch=twin_launch)),
        Rung("v2_shuffle_vector", "warp-shuffle reductions and 16-byte loads, three passes",
             "barrier-bound tree reductions and narrow loads", cuda="02_shuffle_vector.cu", launch=BLOCK_ROWS,
             triton=twin(tk.softmax_passes, tk.V2_SHUFFLE_VECTOR, tk.BLOCK_SPACE, launch=twin_launch)),
        Rung("v3_online", "online softmax: running maximum and rescaled sum in one pass, then normalise",
             "a third pass over HBM", cuda="03_online.cu", launch=BLOCK_ROWS,
             triton=twin(tk.softmax_online, tk.V3_ONLINE, tk.BLOCK_SPACE, launch=twin_launch)),
        Rung("v4_on_chip", "the row held in registers: one read, one write (rows that fit; else v3)",
             "the second read of the row", cuda="04_on_chip.cu", launch=ON_CHIP_ROWS,
             triton=twin(tk.softmax_whole, tk.V4_ON_CHIP, tk.WHOLE_SPACE, launch=whole_twin_launch)),
        Rung("v5_warp_per_row", "a warp per row, the row in its registers, shuffles only; THREADS/32 rows a block "
             "(rows that fit; else v3 on the warp)", "v4's idle threads and block barriers on short rows",
             cuda="05_warp_per_row.cu", launch=WARP_ROWS,
             triton=twin(tk.softmax_warp_rows, tk.V5_WARP_PER_ROW, tk.WARP_ROWS_SPACE, launch=warp_rows_twin_launch)),
        Rung("v6_cluster_rows", "a long row in the registers of a cluster of up to 8 blocks, its maximum and sum "
             "exchanged through distributed shared memory (rows one block holds: v4)",
             "v4's second read of rows one block cannot hold, and its one SM a row",
             cuda="06_cluster_rows.cu", launch=CLUSTER_ROWS,
             triton=twin(tk.softmax_split_stats, tk.V6_CLUSTER_ROWS, tk.SPLIT_ROWS_SPACE, launch=split_rows_twin_launch,
                         post_hook=normalize_after_tuned_stats)),
        Rung("v7_tma_ring", "rows streamed by TMA bulk copies into a ring of shared-memory stages, a persistent grid "
             "walking the rows (a cluster of 2–8 blocks a row the ring of one cannot hold twice)",
             "v6's idle HBM while a row is reduced and written, and registers bounding the bytes in flight",
             cuda="07_tma_ring.cu", launch=TMA_RING,
             triton=twin(tk.softmax_ring, tk.V7_TMA_RING, tk.RING_SPACE, launch=ring_twin_launch, check=ring_twin_check)),
        Rung("v8_piece_ring", "v7's ring cut into pieces that a loader warp refills as the write pass leaves them; a row's "
             "statistics taken as its pieces land",
             "v7's whole-stage hand-back (a row's stores alone on the bus, its loads awaited whole) and its two-stage "
             "floor on a share",
             cuda="08_piece_ring.cu", launch=PIECE_RING,
             # Triton says neither pieces nor a loader warp: the twin is v7's, rows whole in registers
             triton=twin(tk.softmax_ring, tk.V7_TMA_RING, tk.RING_SPACE, launch=ring_twin_launch, check=ring_twin_check)),
        Rung("v9_overlap_ring", "v8 with a row's statistics crossing the cluster while the next row's first pass runs "
             "(where the ring holds two rows' shares)",
             "v8's chain of a row: the cluster exchange's round trip between its two passes",
             cuda="09_overlap_ring.cu", launch=OVERLAP_RING,
             # Triton has no cluster exchange to overlap: the twin is v7's
             triton=twin(tk.softmax_ring, tk.V7_TMA_RING, tk.RING_SPACE, launch=ring_twin_launch, check=ring_twin_check)),
        Rung("v10_team_ring", "v9 with a row over a team of the grid's blocks of any size, its statistics exchanged "
             "through L2 (no cluster)", "the GPC's bound on a row's blocks: a few long rows' unbalanced rounds and "
             "shares that leave the ring no room for the next rows",
             cuda="10_team_ring.cu", launch=TEAM_RING,
             # the twin that exchanges a row's statistics through L2 is v6's: slices of a row over programs
             triton=twin(tk.softmax_split_stats, tk.V6_CLUSTER_ROWS, tk.SPLIT_ROWS_SPACE, launch=split_rows_twin_launch,
                         post_hook=normalize_after_tuned_stats)),
    ],
    baselines=[Baseline("torch_softmax", "torch.softmax", "PyTorch (ATen)", "torch", torch_softmax,
                        "torch.ops.aten._softmax.out", reference=True)],
    headline=("v4_on_chip", "v5_warp_per_row"),
)

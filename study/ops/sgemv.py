"""SGEMV: y = A·x, A row-major M×N, x of length N, y of length M; FP32, FP16 or BF16
storage (inputs and output), FP32 arithmetic.

A GEMV reads every element of A once and does one multiply-add with it: 2 FLOP per 4 bytes
in FP32 (0.5 FLOP/byte, 1 in FP16) against the H200's ~14 FLOP/byte FP32 ridge point, so it
is memory-bound and judged in GB/s of its minimum traffic (A, x and y once each) against
the memory bandwidth. The ladder (docs/ladders/sgemv.md): v0 one thread per row → v1 one
warp per row with a shuffle reduction (coalesced) → v2 16-byte loads, several rows per warp
→ v3 more loads in flight per lane and a split of the columns when rows are too few to fill
the GPU → v4 tiles of whole short rows staged in shared memory (tall-skinny A). A rung is one
line below.

Reported cold (L2 flushed before each launch: HBM) and hot (back to back) side by side: the
H200's 60 MiB L2 holds a 4096² FP16 or BF16 matrix (32 MiB) whole and most of an FP32 one
(64 MiB), so hot figures above the memory bandwidth come from L2, not HBM.

Correctness gate. The inputs are drawn in the storage type, so the float64 reference of
those very values is exact, and a correct kernel errs only by its FP32 accumulation and by
rounding y once to the storage type. Each element must satisfy
    |out − ref| ≤ τ·(|A|·|x|) + u·|ref|,     τ = 2e-6,  u = 2^-24 (FP32), 2^-11 (FP16), 2^-8 (BF16)
which is checked as max |out − ref| / ((|A|·|x|) + |ref|·u/τ) ≤ τ. The first term is the FP32
accumulation budget (as SGEMM's, see study/ops/sgemm.py); the second is the output's own
rounding, exact for round-to-nearest. A kernel that accumulates in the storage type (FP16
or BF16) or rounds FP32 operands to 10 mantissa bits exceeds it by an order of magnitude on
rows of 64 elements or more (tests/test_problem.py shows each).
"""

from __future__ import annotations

import numpy as np
import torch

import math

from study import draws
from study.backends import cuda
from study.precision import BF16_STORAGE, FP16_STORAGE, FP32
from study.problem import DTYPES, CudaLaunch, CudaLauncher, Problem, cdiv, offsets_reason, rows_vector_aligned, sm_count
from study.registry import Baseline, Rung, register, twin
from triton_kernels import sgemv as tk

TAU = 2e-6
OUTPUT_ROUNDING = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}
# v3 splits the columns until rows × slices reaches this many per SM: 64 warps (a full SM) at one
# row per warp. ncu on the H200 at 1024×65536 FP32 with a target of 32: 5 slices, 320 blocks, 29 %
# achieved occupancy, 3.6 TB/s (75 % of DRAM peak).
ROW_SLICES_PER_SM = 64
# ... but no slice narrower than this many 16-byte loads a lane: at one row of 2^20 FP32 the target
# alone gave 8192 slices of one load each (v3 at 56 GB/s, cuBLAS 652 on the H200, c19), every
# block's launch, partial and count for 512 bytes.
MIN_SLICE_LOADS = 4


def split_plan(m: int, n: int, element_bytes: int, sms: int) -> tuple[int, int]:
    """(slices, columns per slice) for v3: enough row slices for ROW_SLICES_PER_SM per SM, each
    slice a whole number of warp-wide 16-byte loads (so every slice starts aligned), at least
    MIN_SLICE_LOADS of them."""
    chunk = 32 * (16 // element_bytes)
    want = max(1, cdiv(sms * ROW_SLICES_PER_SM, m))
    splits = max(1, min(want, n // (chunk * MIN_SLICE_LOADS), 65535))
    split_n = cdiv(cdiv(n, splits), chunk) * chunk
    return cdiv(n, split_n), split_n


class SGEMV(Problem):
    name = "sgemv"
    axes = ("M", "N")
    bound = "memory"
    precisions = (FP32, FP16_STORAGE, BF16_STORAGE)
    default_precisions = ("fp32", "fp16", "bf16")
    headline_shapes = ({"M": 16384, "N": 16384},)  # docs/seeds.md §3: 1 GiB of A in FP32, far past the L2
    # The headline: FP32 as the seed's benchmark, BF16 as a model's weights (FP16 moves the same bytes).
    headline_precisions = ("fp32", "bf16")
    default_shapes = ({"M": 1024, "N": 1024}, {"M": 4096, "N": 4096}, {"M": 16384, "N": 16384},
                      {"M": 8192, "N": 1024}, {"M": 1024, "N": 65536})
    default_modes = ("cold", "hot")
    # N not a multiple of 4 (the scalar paths; v4's tiles of 4 rows and a partial last tile), aligned rows
    # split into many slices (v3's reduction), FP32 rows past a v4 tile (its rows path), and FP32 rows of 16
    # whole vectors (v4's vectors path, a partial last tile)
    sanitize_shapes = ({"M": 67, "N": 1031}, {"M": 129, "N": 4096}, {"M": 5, "N": 4099}, {"M": 300, "N": 64})
    tolerance = {"fp32": TAU, "fp16": TAU, "bf16": TAU}
    error_metric = "max |out − ref| / (|A|·|x| + |ref|·u/τ), u the output's unit roundoff"

    def flops(self, shape) -> int:
        return 2 * shape["M"] * shape["N"]

    def bytes(self, shape, precision) -> int:
        m, n = shape["M"], shape["N"]
        return precision.element_bytes * (m * n + n + m)

    def bytes_needed(self, shape, precision) -> int:
        m, n = shape["M"], shape["N"]
        # storage A and its FP32 draw, float64 A and |A| for the reference; v3's partials are
        # at most (64 row slices per SM + M) floats.
        return (precision.element_bytes + 4 + 16) * m * n + 64 * (m + n)

    def check(self, shape, precision) -> str | None:
        return super().check(shape, precision) or offsets_reason("A", shape["M"] * shape["N"])

    # ---- data -----------------------------------------------------------------
    def make_inputs(self, shape, precision, seed, device):
        dtype = DTYPES[precision.dtype]
        a, x = draws.uniform(seed, [(shape["M"], shape["N"]), (shape["N"],)])  # kept for the other precisions
        return {"A": a.to(dtype, copy=True).to(device), "x": x.to(dtype, copy=True).to(device)}

    def structured_inputs(self, shape, precision, device):
        """Small random integers in [−2, 2] (a fixed seed), exact in every storage type: the FP32 sums
        are exact while 4N < 2^24, so only the output's own rounding remains, and a misplaced row or
        column changes the answer."""
        gen = torch.Generator().manual_seed(2**31 - 1)
        dtype = DTYPES[precision.dtype]
        a = torch.randint(-2, 3, (shape["M"], shape["N"]), generator=gen, dtype=torch.int8).to(dtype)
        x = torch.randint(-2, 3, (shape["N"],), generator=gen, dtype=torch.int8).to(dtype)
        return {"A": a.to(device), "x": x.to(device)}

    def make_output(self, shape, precision, device):
        # Poisoned: an element the kernel never writes stays NaN and fails the gate.
        return torch.full((shape["M"],), float("nan"), dtype=DTYPES[precision.dtype], device=device)

    def reference(self, tensors, precision):
        a = tensors["A"].to(torch.float64)
        x = tensors["x"].to(torch.float64)
        ref = a @ x
        return ref, a.abs() @ x.abs() + ref.abs() * (OUTPUT_ROUNDING[precision.name] / TAU)

    # ---- CUDA glue ------------------------------------------------------------
    def cuda_defines(self, config, tensors, out, shape, precision):
        """The config, the storage macro and ALIGNED: 1 when N is a multiple of the 16-byte
        vector and A and x start on 16 bytes (every row then does), else the scalar paths."""
        aligned = rows_vector_aligned(shape["N"], precision.element_bytes, (tensors["A"], tensors["x"]))
        return {**super().cuda_defines(config, tensors, out, shape, precision), "ALIGNED": int(aligned)}


# ---- launchers ---------------------------------------------------------------------------------------

def row_blocks(defines) -> int:
    """Rows a block takes: LANES threads share a row, each warp takes WARP_ROWS rows (default 1)."""
    return defines["THREADS"] // defines["LANES"] * defines.get("WARP_ROWS", 1)


def rows_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v0–v2: a block per ``row_blocks`` rows."""
    m, n = shape["M"], shape["N"]
    args = (cuda.as_cupy(tensors["A"]), cuda.as_cupy(tensors["x"]), cuda.as_cupy(out), np.int32(m), np.int32(n))
    return CudaLaunch(grid=(cdiv(m, row_blocks(defines)), 1, 1), block=(defines["THREADS"], 1, 1), args=args)


def split_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v3: the columns split over gridDim.y (split_plan), with the partials and counters the kernel
    reduces with."""
    m, n = shape["M"], shape["N"]
    rows = row_blocks(defines)
    splits, split_n = split_plan(m, n, out.element_size(), sm_count(out))
    partial = torch.empty(splits * m if splits > 1 else 1, dtype=torch.float32, device=out.device)
    counter = torch.zeros(cdiv(m, rows), dtype=torch.int32, device=out.device)
    args = (cuda.as_cupy(tensors["A"]), cuda.as_cupy(tensors["x"]), cuda.as_cupy(out), np.int32(m), np.int32(n),
            np.int32(split_n), cuda.as_cupy(partial), cuda.as_cupy(counter))
    return CudaLaunch(grid=(cdiv(m, rows), splits, 1), block=(defines["THREADS"], 1, 1), args=args,
                      facts={"splits": splits, "split_n": split_n})


def tile_elements(defines, element_bytes: int) -> int:
    """Elements of A a v4 tile holds: THREADS·TILE_VECS 16-byte vectors (the kernel's TILE)."""
    return defines["THREADS"] * defines["TILE_VECS"] * (16 // element_bytes)


def tile_rows(n: int, element_bytes: int, tile: int, base_aligned: bool) -> int:
    """v4's rows a tile: as many whole rows as the tile holds, a multiple of 16 / gcd(N·size, 16) so
    that every tile's run of A starts on 16 bytes; 0 (the kernel's rows path) when not one such group
    fits or A itself does not start on 16 bytes."""
    group = 16 // math.gcd(n * element_bytes, 16)
    rows = tile // n // group * group if base_aligned else 0
    return rows


def fitted_lanes(config, tensors, out, shape, precision):
    """v4's defines. FIT=1 (its declared config) takes LANES from the row: the largest power of two up
    to 32 that leaves each lane at least 4 of the row's elements (1 for rows under 8)."""
    defines = SGEMV_OP.cuda_defines(config, tensors, out, shape, precision)
    if not config.get("FIT"):
        return defines
    per_lane = max(1, shape["N"] // 4)
    return {**defines, "LANES": min(32, 1 << (per_lane.bit_length() - 1))}


def row_vectors(n: int, element_bytes: int, aligned: bool) -> int:
    """v4's vectors path: the 16-byte vectors a row holds when that is a power of two up to 32 (so
    that a row's vectors sit on consecutive, aligned lanes) and A and x start on 16 bytes; else 0."""
    vecs = n * element_bytes // 16 if aligned and n * element_bytes % 16 == 0 else 0
    return vecs if 0 < vecs <= 32 and vecs & (vecs - 1) == 0 else 0


def row_tiles_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v4: a block per tile of whole rows (:func:`tile_rows`); rows of a few whole vectors
    (:func:`row_vectors`) are summed in registers, others staged in shared memory with x; rows longer
    than a tile take the kernel's rows path, LANES lanes a row (the record says which: ``path``)."""
    a = tensors["A"]
    m, n = shape["M"], shape["N"]
    size = out.element_size()
    tile = tile_elements(defines, size)
    rows = tile_rows(n, size, tile, a.is_contiguous() and a.data_ptr() % 16 == 0)
    vecs = row_vectors(n, size, bool(defines["ALIGNED"])) if rows else 0
    args = (cuda.as_cupy(a), cuda.as_cupy(tensors["x"]), cuda.as_cupy(out), np.int32(m), np.int32(n), np.int32(rows),
            np.int32(vecs))
    if vecs:
        return CudaLaunch(grid=(cdiv(m, rows), 1, 1), block=(defines["THREADS"], 1, 1), args=args,
                          facts={"path": "vectors", "tile_rows": rows})
    if rows:
        return CudaLaunch(grid=(cdiv(m, rows), 1, 1), block=(defines["THREADS"], 1, 1), args=args,
                          smem=(tile + n) * size, facts={"path": "tiles", "tile_rows": rows})
    groups = defines["THREADS"] // defines["LANES"]
    blocks = min(cdiv(m, groups), 32 * sm_count(out))  # the rows path walks the rest grid-stride
    return CudaLaunch(grid=(blocks, 1, 1), block=(defines["THREADS"], 1, 1), args=args, facts={"path": "rows"})


ROWS = CudaLauncher(launch=rows_launch)
SPLIT = CudaLauncher(launch=split_launch)
ROW_TILES = CudaLauncher(launch=row_tiles_launch, defines=fitted_lanes)


# ---- the Triton twins' launches -------------------------------------------------------------------

def twin_launch(kernel, tensors, out, shape, config, precision, rows: str = "ROWS", vector: bool = False,
                split: bool = False):
    """A program per ``config[rows]`` rows; ``vector`` (v2, v3): VEC elements in 16 bytes; ``split`` (v3):
    the columns split as the CUDA rung splits them (split_plan), partials and counters beside."""
    a, x = tensors["A"], tensors["x"]
    m, n = shape["M"], shape["N"]
    meta = dict(config)
    if vector:
        meta["VEC"] = 16 // precision.element_bytes
    extra = ()
    if split:
        splits, split_n = split_plan(m, n, precision.element_bytes, sm_count(out))
        partial = torch.empty(splits * m if splits > 1 else 1, dtype=torch.float32, device=out.device)
        counter = torch.zeros(m, dtype=torch.int32, device=out.device)  # ≥ one per program of any ROWS
        meta["SPLITS"] = splits
        extra = (split_n, partial, counter)

    def grid(cfg):
        return (cdiv(m, cfg[rows]), meta.get("SPLITS", 1))

    def fn():
        kernel[grid](a, x, out, m, n, a.stride(0), *extra, **meta)

    return fn


def thread_twin_launch(kernel, tensors, out, shape, config, precision):
    return twin_launch(kernel, tensors, out, shape, config, precision, rows="BM")


def vector_twin_launch(kernel, tensors, out, shape, config, precision):
    return twin_launch(kernel, tensors, out, shape, config, precision, vector=True)


def split_twin_launch(kernel, tensors, out, shape, config, precision):
    return twin_launch(kernel, tensors, out, shape, config, precision, vector=True, split=True)


def tile_twin_launch(kernel, tensors, out, shape, config, precision):
    """v4's twin: a program per TILE // BLOCK_N rows, BLOCK_N the row rounded up to a power of two
    (at most MAX_BLOCK_N columns a step)."""
    a, x = tensors["A"], tensors["x"]
    m, n = shape["M"], shape["N"]
    block_n = min(tk.MAX_BLOCK_N, 1 << max(0, (n - 1).bit_length()))

    def grid(cfg):
        return (cdiv(m, cfg["TILE"] // block_n),)

    def fn():
        kernel[grid](a, x, out, m, n, a.stride(0), BLOCK_N=block_n, **config)

    return fn


def torch_mv(tensors, out, precision):
    a, x = tensors["A"], tensors["x"]
    return lambda: torch.mv(a, x, out=out)


SGEMV_OP = SGEMV()

register(
    SGEMV_OP,
    rungs=[
        Rung("v0_thread_per_row", "one thread per row, FP32 accumulator",
             "— (the baseline: a warp's loads are a row apart, uncoalesced)",
             cuda="00_thread_per_row.cu", launch=ROWS,
             triton=twin(tk.sgemv_rows, tk.V0_THREAD_PER_ROW, tk.ROWS_SPACE, launch=thread_twin_launch)),
        Rung("v1_warp_per_row", "one warp per row: lanes read consecutive elements, shuffle reduction",
             "uncoalesced loads", cuda="01_warp_per_row.cu", launch=ROWS,
             triton=twin(tk.sgemv_warp, tk.V1_WARP_PER_ROW, tk.WARP_SPACE, launch=twin_launch)),
        Rung("v2_vector_loads", "16-byte loads per lane, 2 rows per warp sharing each load of x",
             "narrow loads (4 or 2 bytes per lane per instruction)", cuda="02_vector_loads.cu", launch=ROWS,
             triton=twin(tk.sgemv_vector, tk.V2_VECTOR_LOADS, tk.VECTOR_SPACE, launch=vector_twin_launch)),
        Rung("v3_split_n", "more loads in flight per lane; columns split over blocks when rows are few, "
             "ordered last-block reduction", "too few bytes in flight (latency-bound), idle SMs on short-wide A",
             cuda="03_split_n.cu", launch=SPLIT,
             triton=twin(tk.sgemv_split_n, tk.V3_SPLIT_N, tk.SPLIT_SPACE, launch=split_twin_launch)),
        Rung("v4_row_tiles", "tiles of whole rows read as one contiguous run with 16-byte loads; rows of a few "
             "whole vectors summed in registers, others staged in shared memory, LANES lanes a row fitted to its "
             "length",
             "idle lanes and narrow loads on short rows (tall-skinny A)", cuda="04_row_tiles.cu", launch=ROW_TILES,
             triton=twin(tk.sgemv_row_tiles, tk.V4_ROW_TILES, tk.TILE_SPACE, launch=tile_twin_launch)),
    ],
    baselines=[Baseline("torch_mv", "torch.mv", "cuBLAS", "cublas", torch_mv, "torch.mv", reference=True)],
    headline=("v2_vector_loads", "v3_split_n"),
)

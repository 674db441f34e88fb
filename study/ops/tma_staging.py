"""The TMA rungs at any shape: operands whose rows TMA cannot read are staged inside the timed launch.

TMA reads (and, for C, writes) rows whose starts lie on 16 bytes and are 16 bytes apart by a
multiple (study/backends/tma.py). A GEMM of K or N no multiple of 8 halves or 4 floats, a padded
leading dimension or an offset view breaks that, and cuBLAS runs such shapes; so the TMA rungs
(hgemm v7–v9, sgemm v11/v12, bgemm v1, gemm_bias_relu v0/v2/v3) and their twins do too. What TMA cannot
read is copied at every launch (but an operand a rung reads in place by residue maps: hgemm v10's B,
sgemm v11/v12's A) into rows that keep the rule — the leading dimension rounded up to 16 bytes, the
tensor map still sized to the true matrix so that the tails read as zeros — and a C
that TMA (or v7's paired stores) cannot write is written to such rows and copied out after. The gate
poisons those rows with C (``CudaLaunch.poison``, study.problem.check_output), so that an element the
rung fails to write still reaches C as NaN, and the timed launch carries no fill. The copies run inside
the timed closure
(``CudaLaunch.before``/``after``, or the twin's ``fn``): the fallback's cost is the rung's, and the
launch records which operands it staged (``staged``; a twin's too). Where the rows are fine nothing
changes: the launch is the one the rung always made.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from study.backends import cuda
from study.backends.launch import Unsupported
from study.backends.tma import alignment_reason
from study.paths import CUDA_DIR
from study.problem import CudaLaunch, CudaLauncher, KernelCall, cdiv

STAGE_ROWS = CUDA_DIR / "stage_rows.cu"
STAGE_THREADS = 256
GRID_YZ = 65535  # CUDA's limit on gridDim.y and .z: entries past it are strided over
GRID_X = 2**31 - 1  # and on gridDim.x: row slots past it, too


def tma_rows(tensor, vector: int | None = None):
    """An uninitialised tensor of ``tensor``'s shape, dtype and device whose rows TMA can read and
    write: the caching allocator's base (512-byte aligned), the leading dimension rounded up to 16
    bytes (or to ``vector`` elements), a batch's entries packed one after another."""
    vector = vector or 16 // tensor.element_size()
    cols = tensor.shape[-1]
    storage = torch.empty((*tensor.shape[:-1], cdiv(cols, vector) * vector), dtype=tensor.dtype,
                          device=tensor.device)
    return storage[..., :cols]


def _layout(tensor) -> tuple[int, int, int]:
    """(entries, entry stride, row stride) in elements of a matrix or a batch of them."""
    return (tensor.shape[0], tensor.stride(0), tensor.stride(-2)) if tensor.dim() == 3 else (1, 0, tensor.stride(-2))


def _rows_launch(tensor, args: tuple) -> CudaLaunch:
    """A launch over ``tensor``'s rows (stage_rows.cu's grid: x over rows × the most 16-byte destination
    words a row can touch — its bytes' words plus one, which a row starting off a word may reach — so that
    short rows share a block; entries on z)."""
    entries, rows, cols = _layout(tensor)[0], tensor.shape[-2], tensor.shape[-1]
    if max(entries, rows, cols) >= 2**31:
        raise Unsupported(f"staging indexes entries, rows and columns in 32 bits; got {entries} × {rows} × {cols}")
    slots = rows * (cdiv(cols * tensor.element_size(), 16) + 1)
    grid = (min(cdiv(slots, STAGE_THREADS), GRID_X), 1, min(entries, GRID_YZ))
    return CudaLaunch(grid=grid, block=(STAGE_THREADS, 1, 1), args=args, keep=(tensor,))


def stage_call(src, dst) -> KernelCall:
    """The copy of ``src`` into ``dst`` (same shape; columns contiguous on both sides) as a kernel call of
    cuda_kernels/stage_rows.cu."""
    if src.shape != dst.shape or src.dtype != dst.dtype:
        raise ValueError(f"staging copies like to like: {tuple(src.shape)} {src.dtype} into {tuple(dst.shape)} "
                         f"{dst.dtype}")
    if src.stride(-1) != 1 or dst.stride(-1) != 1:
        raise Unsupported(f"a staged copy reads and writes rows of contiguous elements; got column strides "
                          f"{src.stride(-1)} and {dst.stride(-1)}")
    entries, src_entry, src_row = _layout(src)
    _, dst_entry, dst_row = _layout(dst)
    args = (_pointer(src), _pointer(dst), np.int32(entries), np.int32(src.shape[-2]), np.int32(src.shape[-1]),
            np.int64(src_entry), np.int64(src_row), np.int64(dst_entry), np.int64(dst_row))
    launch = dataclasses.replace(_rows_launch(src, args), keep=(src, dst))
    return KernelCall(STAGE_ROWS, "stage_rows", {"ELEM_BYTES": src.element_size()}, launch)


def _pointer(tensor):
    """The kernel argument of a matrix (or batch) of any row and entry strides: CuPy's zero-copy view of
    the storage it spans, passed as its base pointer (the strides travel as arguments)."""
    return cuda.as_cupy(torch.as_strided(tensor, (_extent(tensor),), (1,)))


def _extent(tensor) -> int:
    """Elements from the first element of ``tensor`` to one past its last (strides non-negative)."""
    if tensor.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))


def to_stage(tensors: dict, names) -> dict:
    """name -> (the operand, the rows TMA can read it from) of each of ``names`` TMA cannot read in place."""
    return {n: (tensors[n], tma_rows(tensors[n])) for n in names if alignment_reason(n, tensors[n])}


def staged_launcher(launcher: CudaLauncher, names=("A", "B"), out: bool = True, check=None) -> CudaLauncher:
    """``launcher`` with the operands ``names`` (and C, if ``out``) staged where TMA cannot take their
    rows, but those its defines read in place (``<name>_IN_PLACE`` set: residue maps, study/backends/tma.py,
    the launch's own choice); ``check``: the launcher's check without TMA's refusal (None: none left)."""
    def launch(defines, tensors, target, shape, precision):
        inputs = to_stage(tensors, [n for n in names if not defines.get(f"{n}_IN_PLACE")])
        outputs = to_stage({"C": target}, ("C",) if out else ())
        base = launcher.launch(defines, {**tensors, **{n: rows for n, (_, rows) in inputs.items()}},
                               outputs["C"][1] if outputs else target, shape, precision)
        if not inputs and not outputs:
            return base
        written = tuple(rows for _, rows in outputs.values())
        return dataclasses.replace(
            base, before=(*(stage_call(src, rows) for src, rows in inputs.values()), *base.before),
            after=(*base.after, *(stage_call(rows, dst) for dst, rows in outputs.values())),
            facts={**base.facts, "staged": "+".join([*inputs, *outputs])},
            keep=(*base.keep, *(rows for _, rows in inputs.values()), *written), poison=(*base.poison, *written))

    return CudaLauncher(launch=launch, check=check, defines=launcher.defines)


# A Triton twin that reads A and B by pointer loads 16 bytes a lane only where it can prove the rows start on 16
# bytes: Triton marks an integer argument divisible by 16 and a pointer on 16 bytes, nothing finer (its backends'
# get_int_specialization and get_tensor_specialization: ``tt.divisibility`` 16 or none), so a leading dimension of
# 1,464 floats (K = 1,463 rounded to TMA's 16 bytes) tells it nothing of where a row starts.
POINTER_ROWS = 16


def pointer_staged_operands(a, b, names=("A", "B")):
    """(A, B, copy): A and B as a pointer twin loads them 16 bytes a lane — themselves where their leading
    dimension is a multiple of POINTER_ROWS elements and their base on 16 bytes, else rows that are, which
    ``copy`` (to call first in the timed ``fn``; its ``facts`` the names it stages) fills at each launch; only
    those among ``names`` are staged (the others are read as they are, a lane's element at a time)."""
    staged = {name: (t, tma_rows(t, POINTER_ROWS)) for name, t in (("A", a), ("B", b))
              if name in names and (t.stride(-1) != 1 or t.stride(-2) % POINTER_ROWS or t.data_ptr() % 16)}
    return _read_from(a, b, staged)


def staged_operands(a, b, names=("A", "B")):
    """(A, B, copy): A and B as a TMA twin's descriptors can read them — themselves, or staged rows — and
    the closure that copies the staged ones at each launch (to call first in the timed ``fn``; its ``facts``
    the names it stages); only those among ``names`` are staged (v10's twin reads a B in place)."""
    return _read_from(a, b, to_stage({"A": a, "B": b}, names))


def _read_from(a, b, staged: dict):
    """(A, B, copy): each operand's staged rows where ``staged`` (name -> (operand, rows)) has them, else the
    operand, and the closure that fills the staged rows from their operands, its ``facts`` what a twin's
    launch records (``staged``: the names)."""
    def copy():
        for src, rows in staged.values():
            rows.copy_(src)

    copy.facts = {"staged": "+".join(staged)} if staged else {}
    return (staged["A"][1] if "A" in staged else a), (staged["B"][1] if "B" in staged else b), copy

"""The TMA rungs at any shape: operands whose rows TMA cannot read are staged inside the timed launch.

TMA reads (and, for C, writes) rows whose starts lie on 16 bytes and are 16 bytes apart by a
multiple (study/backends/tma.py). A GEMM of K or N no multiple of 8 halves or 4 floats, a padded
leading dimension or an offset view breaks that, and cuBLAS runs such shapes; so the TMA rungs
(hgemm v7/v8, sgemm v11, bgemm v1, gemm_bias_relu v0/v2) and their twins do too. What TMA cannot
read is copied, at every launch, into rows that keep the rule — the leading dimension rounded up to
16 bytes, the tensor map still sized to the true matrix so that the tails read as zeros — and a C
that TMA (or v7's paired stores) cannot write is written to such rows and copied out after. Those
rows are poisoned (NaN) first at every launch, so that an element the rung fails to write still
fails the gate, as the NaN the gate puts in C would. The copies run inside the timed closure
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
GRID_YZ = 65535  # CUDA's limit on gridDim.y and .z: rows and entries past it are strided over
NAN_BITS = {torch.float16: 0x7E00, torch.bfloat16: 0x7FC0, torch.float32: 0x7FC00000}  # quiet NaNs


def tma_rows(tensor):
    """An uninitialised tensor of ``tensor``'s shape, dtype and device whose rows TMA can read and
    write: the caching allocator's base (512-byte aligned), the leading dimension rounded up to 16
    bytes, a batch's entries packed one after another."""
    vector = 16 // tensor.element_size()
    cols = tensor.shape[-1]
    storage = torch.empty((*tensor.shape[:-1], cdiv(cols, vector) * vector), dtype=tensor.dtype,
                          device=tensor.device)
    return storage[..., :cols]


def _layout(tensor) -> tuple[int, int, int]:
    """(entries, entry stride, row stride) in elements of a matrix or a batch of them."""
    return (tensor.shape[0], tensor.stride(0), tensor.stride(-2)) if tensor.dim() == 3 else (1, 0, tensor.stride(-2))


def _rows_launch(tensor, args: tuple) -> CudaLaunch:
    """A launch over ``tensor``'s rows (stage_rows.cu's grid: columns on x, rows on y, entries on z)."""
    entries, rows, cols = _layout(tensor)[0], tensor.shape[-2], tensor.shape[-1]
    if max(entries, rows, cols) >= 2**31:
        raise Unsupported(f"staging indexes entries, rows and columns in 32 bits; got {entries} × {rows} × {cols}")
    grid = (cdiv(cols, STAGE_THREADS), min(rows, GRID_YZ), min(entries, GRID_YZ))
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


def poison_call(dst) -> KernelCall:
    """NaN into every element of ``dst`` (the staged C) as a kernel call of cuda_kernels/stage_rows.cu."""
    entries, dst_entry, dst_row = _layout(dst)
    value = (np.uint16 if dst.element_size() == 2 else np.uint32)(NAN_BITS[dst.dtype])
    args = (_pointer(dst), np.int32(entries), np.int32(dst.shape[-2]), np.int32(dst.shape[-1]), np.int64(dst_entry),
            np.int64(dst_row), value)
    return KernelCall(STAGE_ROWS, "fill_rows", {"ELEM_BYTES": dst.element_size()}, _rows_launch(dst, args))


def _pointer(tensor):
    """The kernel argument of a matrix (or batch) of any row and entry strides: CuPy's zero-copy view of
    the storage it spans, passed as its base pointer (the strides travel as arguments)."""
    return cuda.as_cupy(torch.as_strided(tensor, (_extent(tensor),), (1,)))


def _extent(tensor) -> int:
    """Elements from the first element of ``tensor`` to one past its last (strides non-negative)."""
    if tensor.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))


def staged_launcher(launcher: CudaLauncher, names=("A", "B"), out: bool = True, check=None) -> CudaLauncher:
    """``launcher`` with the operands ``names`` (and C, if ``out``) staged where TMA cannot take their
    rows; ``check``: the launcher's check without TMA's refusal (None: none left)."""
    def launch(defines, tensors, target, shape, precision):
        staged, before, after = dict(tensors), [], []
        for name in names:
            if alignment_reason(name, tensors[name]):
                staged[name] = tma_rows(tensors[name])
                before.append(stage_call(tensors[name], staged[name]))
        written = target
        if out and alignment_reason("C", target):
            written = tma_rows(target)
            before.append(poison_call(written))
            after.append(stage_call(written, target))
        base = launcher.launch(defines, staged, written, shape, precision)
        which = [n for n in names if staged[n] is not tensors[n]] + (["C"] if written is not target else [])
        if not which:
            return base
        return dataclasses.replace(base, before=(*before, *base.before), after=(*base.after, *after),
                                   facts={**base.facts, "staged": "+".join(which)},
                                   keep=(*base.keep, *(staged[n] for n in which if n != "C"), written))

    return CudaLauncher(launch=launch, check=check, defines=launcher.defines)


def staged_operands(a, b):
    """(A, B, copy): A and B as a TMA twin's descriptors can read them — themselves, or staged rows — and
    the closure that copies the staged ones at each launch (to call first in the timed ``fn``), with the
    names it stages."""
    pairs = [(name, t, tma_rows(t)) for name, t in (("A", a), ("B", b)) if alignment_reason(name, t)]
    by_name = {name: rows for name, _, rows in pairs}

    def copy():
        for _, src, rows in pairs:
            rows.copy_(src)

    return by_name.get("A", a), by_name.get("B", b), copy, [name for name, _, _ in pairs]

"""Tensor maps for TMA (``cp.async.bulk.tensor``): the 128-byte descriptor of a 2-D tile copy (or a
3-D one over a batch of matrices, bgemm's),
encoded on the host with the driver's ``cuTensorMapEncodeTiled`` (cuda.bindings) and passed to a
kernel by value (docs/toolchain.md 6.3).

TMA reads rows whose starts are 16-byte aligned and 16 bytes apart by a multiple: a matrix that
breaks that is refused here with the reason (:class:`study.backends.Unsupported`). The rungs copy
such a matrix into rows TMA can read inside their timed launch, and record that they did
(study/ops/tma_staging.py); nothing here copies behind their back."""

from __future__ import annotations

import numpy as np

from study.backends.launch import Unsupported

SWIZZLE_BYTES = 128  # the widest swizzle: a box row of at most 128 bytes, 1024-byte atoms in shared memory
RESIDUES = 8  # residue_maps: rows k ≡ j (mod 8) of 2- or 4-byte elements lie a multiple of 16 bytes apart
SMEM_LIMIT = 232448  # sm_90's dynamic shared memory a block (227 KiB; cuda_kernels/hopper.cuh)


def stages_that_fit(stages: int, stage_bytes: int) -> int:
    """Of a ring of ``stages`` stages of ``stage_bytes`` each, as many as fit in SMEM_LIMIT beside the 1024 bytes
    that round its base up to the swizzle atom (cuda_kernels/hopper.cuh's stages_that_fit: the kernels' RING)."""
    return min(stages, (SMEM_LIMIT - 1024) // stage_bytes)


def alignment_reason(name: str, tensor) -> str | None:
    """Why TMA cannot read this row-major matrix, or batch of them (rows may be padded), or None."""
    row_bytes = tensor.stride(-2) * tensor.element_size()
    if tensor.stride(-1) != 1:
        return f"{name} has column stride {tensor.stride(-1)}; TMA reads rows of contiguous elements"
    if tensor.data_ptr() % 16:
        return f"{name} starts {tensor.data_ptr() % 16} bytes past a 16-byte boundary; TMA needs 16-byte aligned rows"
    if row_bytes % 16:
        return (f"{name}'s rows are {row_bytes} bytes apart (leading dimension {tensor.stride(-2)}); TMA needs a "
                f"multiple of 16 bytes")
    if tensor.dim() == 3 and tensor.stride(0) * tensor.element_size() % 16:
        return (f"{name}'s batch entries are {tensor.stride(0) * tensor.element_size()} bytes apart; TMA needs a "
                f"multiple of 16 bytes")
    return None


def reads_in_place(name: str, tensor) -> bool:
    """Whether a matrix one map cannot describe is one :func:`residue_maps` can: rows of contiguous elements,
    each starting past the one before (no overlapping or repeated rows, which a view may have: stride 0).
    Otherwise, and where one map does, False: the rungs stage it (study/ops/tma_staging.py)."""
    return (tensor.dim() == 2 and tensor.stride(-1) == 1 and tensor.stride(0) >= max(tensor.shape[1], 1)
            and alignment_reason(name, tensor) is not None)


def tensor_map(name: str, tensor, box_cols: int, box_rows: int) -> np.ndarray:
    """The CUtensorMap of a 2-D row-major CUDA tensor of 16-bit or FP32 elements, boxes of ``box_rows`` ×
    ``box_cols`` elements written to shared memory in the 128-byte swizzle, elements past the matrix
    read as zeros: a NumPy array of one 128-byte void, which CuPy passes by value. A 3-D tensor is a
    batch of such matrices: its map has the entry as third dimension and boxes of one entry, so a box
    never reaches into the next entry (what lies past an entry's edges reads as zeros)."""
    reason = alignment_reason(name, tensor)
    if reason:
        raise Unsupported(reason)
    if tensor.dim() not in (2, 3):
        raise ValueError(f"{name} has {tensor.dim()} dimensions; a tensor map here is of a matrix or a batch of them")
    rows, cols = tensor.shape[-2], tensor.shape[-1]
    sizes, strides, box = [cols, rows], [tensor.stride(-2)], [box_cols, box_rows]  # innermost first
    if tensor.dim() == 3:
        sizes, strides, box = sizes + [tensor.shape[0]], strides + [tensor.stride(0)], box + [1]
    return encode(name, tensor.dtype, tensor.data_ptr(), sizes, [v * tensor.element_size() for v in strides], box)


def encode(name: str, dtype, address: int, sizes, strides, box, swizzle: bool = True) -> np.ndarray:
    """``cuTensorMapEncodeTiled`` of elements of ``dtype`` from ``address`` (16-byte aligned): ``sizes`` and
    ``box`` in elements, innermost first, ``strides`` in bytes of the outer dimensions (multiples of 16),
    the 128-byte swizzle (or, ``swizzle=False``, rows as they are: a box row may then be wider than 128
    bytes), elements past the sizes read as zeros; a NumPy array of one 128-byte void. A box's first
    column must lie on 16 bytes of its row: TMA stops with an illegal instruction otherwise.
    :func:`tensor_map` is this for a tensor; :func:`residue_maps` for each residue of k mod 8 of a matrix
    one map cannot describe."""
    import torch
    from cuda.bindings import driver as cu

    types = {torch.float16: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
             torch.bfloat16: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
             torch.float32: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32}  # sgemm v11
    if dtype not in types:
        raise Unsupported(f"{name} is {dtype}; these tensor maps are written for float16, bfloat16 and float32")
    if swizzle and box[0] * dtype.itemsize > SWIZZLE_BYTES:
        raise ValueError(f"a box row of {box[0]} elements is wider than the {SWIZZLE_BYTES}-byte swizzle")
    if address % 16 or any(v % 16 for v in strides):
        raise ValueError(f"{name}: TMA needs a 16-byte aligned start ({address % 16} past) and strides of 16-byte "
                         f"multiples ({list(strides)})")
    rank = len(sizes)
    err, tmap = cu.cuTensorMapEncodeTiled(
        types[dtype], rank, address,
        [cu.cuuint64_t(v) for v in sizes],
        [cu.cuuint64_t(v) for v in strides],
        [cu.cuuint32_t(v) for v in box],
        [cu.cuuint32_t(1)] * rank,
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B if swizzle else
        cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)  # NONE: out-of-bounds elements are zeros
    if err != cu.CUresult.CUDA_SUCCESS:
        raise ValueError(f"cuTensorMapEncodeTiled refused {name} (sizes {list(sizes)}, strides {list(strides)}, box "
                         f"{list(box)}): {err}")
    raw = np.array([int(v) for v in tmap.opaque], dtype=np.uint64)
    return np.frombuffer(raw.tobytes(), dtype=np.dtype((np.void, 128)))


def residue_maps(name: str, tensor, box_cols: int, box_rows: int = 8):
    """Tensor maps of a row-major matrix whose rows one map cannot describe (no multiple of 16 bytes apart,
    or off a 16-byte start), as hgemm v10 reads its weights in place (hgemm/skinny_m.cuh) and sgemm v11/v12
    their A (sgemm/wgmma_3xtf32.cuh): rows k and k + 8 lie 8 · ld elements apart, a multiple of 16 bytes for
    any ld, so map j holds the rows k ≡ j (mod 8). It starts at row j's first byte rounded down to 16 bytes,
    that rounding (in elements) is offsets[j], its columns run to N + offsets[j] (past them, zeros); boxes of
    ``box_rows`` rows × ``box_cols``, unswizzled, since a box must start on 16 bytes of its row and the
    kernel shifts the rows on chip. A residue with no row (K ≤ j) gets a map of zeros, which reads zeros like
    rows past K. Returns the maps, the offsets and what must stay alive (the zeros)."""
    import torch

    k, n = tensor.shape
    size, ld = tensor.element_size(), tensor.stride(0)
    zeros = torch.zeros(16 // size, dtype=tensor.dtype, device=tensor.device)  # 16 bytes: allocations are aligned
    maps, offsets = [], [0] * RESIDUES
    for j in range(RESIDUES):
        part = f"{name} (rows ≡ {j} mod {RESIDUES})"
        rows = -(-(k - j) // RESIDUES)
        if rows <= 0:
            maps.append(encode(part, tensor.dtype, zeros.data_ptr(), [16 // size, 1], [16], [box_cols, box_rows],
                               swizzle=False))
            continue
        start = tensor.data_ptr() + j * ld * size
        offsets[j] = start % 16 // size
        maps.append(encode(part, tensor.dtype, start - start % 16, [n + offsets[j], rows], [RESIDUES * ld * size],
                           [box_cols, box_rows], swizzle=False))
    return maps, offsets, (zeros,)


# sizeof(ResidueMaps) (hopper.cuh): a 128-byte map and an int offset per residue, the struct aligned to 64 bytes
RESIDUE_MAPS_BYTES = -(-(128 + 4) * RESIDUES // 64) * 64


def packed_maps(name: str, tensor, box: tuple[int, int], raw_box: tuple[int, int], in_place: bool):
    """A kernel's ResidueMaps parameter (hopper.cuh) for a matrix and what the launch must keep alive: one
    map of boxes of ``box`` (columns, rows) in the 128-byte swizzle, or, ``in_place``, :func:`residue_maps`
    with unswizzled boxes of ``raw_box``."""
    if not in_place:
        return pack_residue_maps([tensor_map(name, tensor, *box)], [0] * RESIDUES), ()
    maps, offsets, keep = residue_maps(name, tensor, *raw_box)
    return pack_residue_maps(maps, offsets), keep


def pack_residue_maps(maps, offsets) -> np.ndarray:
    """A kernel's ResidueMaps parameter (hopper.cuh) as a NumPy array of one void CuPy passes by value: the
    maps (one, where one map describes the matrix; else :func:`residue_maps`'), zeros for the unused ones,
    the offsets, padding."""
    raw = b"".join(m.tobytes() for m in maps).ljust(128 * RESIDUES, b"\0") + np.array(offsets, np.int32).tobytes()
    return np.frombuffer(raw.ljust(RESIDUE_MAPS_BYTES, b"\0"), dtype=np.dtype((np.void, RESIDUE_MAPS_BYTES)))

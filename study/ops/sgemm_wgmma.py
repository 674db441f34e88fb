"""sgemm v11 and v12: the launch of the 3xTF32 wgmma kernel (cuda_kernels/sgemm/wgmma_3xtf32.cuh,
docs/ladders/sgemm.md v11 and v12) — its tensor maps (A's one map, or eight residue maps where one cannot
take A's rows and a copy would cost more: A_IN_PLACE; staged otherwise), its shared memory, v12's tile height
fitted to M and its split-K units; B staged where TMA cannot read its rows (study/ops/tma_staging.py). Its
Triton twins' launches are sgemm.py's."""

from __future__ import annotations

import dataclasses

import numpy as np

from study import kernel_header
from study.backends import cuda, tma
from study.backends.launch import Unsupported
from study.ops.gemm_common import FLOATS, aligned_defines, split_launch, split_plan
from study.ops.tma_staging import staged_launcher
from study.paths import CUDA_DIR
from study.problem import CudaLaunch, CudaLauncher, cdiv, sm_count

TMA_BOX = 32     # floats in one 128-byte swizzled box row (cuda_kernels/sgemm/11_3xtf32_wgmma.cu)
RAW_COLS = TMA_BOX + 4  # v11/v12 with A in place: a raw box row, 32 floats from up to 3 before them


def wgmma_stage_bytes(defines) -> int:
    """A stage of v11's ring: A's BM × 32 box, its lo plane and BN/32 boxes of BK × 32 of B (4 bytes each),
    three 8-byte mbarriers; with A_IN_PLACE a raw part (eight residue boxes of BM/8 rows of RAW_COLS floats,
    each on 128 bytes)."""
    bm, bn, bk = defines["BM"], defines["BN"], defines["BK"]
    raw = defines.get("A_IN_PLACE", 0) * tma.RESIDUES * cdiv(bm // 8 * RAW_COLS * 4, 128) * 128
    return (2 * bm * TMA_BOX + bk * bn) * 4 + raw + 24


def wgmma_stages(defines) -> int:
    """The stages v11's ring has: STAGES, or with A_IN_PLACE as many of them as fit (the kernel's RING)."""
    return tma.stages_that_fit(defines["STAGES"], wgmma_stage_bytes(defines))


def wgmma_shared_bytes(defines) -> int:
    """v11's dynamic shared memory: its stages and 1024 bytes to align the base to the swizzle atom (the
    kernel's SMEM_BYTES)."""
    return wgmma_stages(defines) * wgmma_stage_bytes(defines) + 1024


def wgmma_units(defines, tensors, out, shape, units: int) -> CudaLaunch:
    """v11's kernel over ``units`` (its tiles; v12's tiles × splits): A's ResidueMaps (one map of boxes of BM
    rows × 32 floats or, with A_IN_PLACE, eight of BM/8 rows × RAW_COLS: tma.packed_maps), B's tensor map (BK
    rows × 32), C by pointer (stored element by element), one block per SM walking the units (fewer if fewer
    units)."""
    if shape.get("batch", 1) != 1:
        raise Unsupported("sgemm v11 and v12 compute one product; their tensor maps are 2-D")
    a, b = tensors["A"], tensors["B"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    bm, in_place = defines["BM"], bool(defines.get("A_IN_PLACE"))
    maps_a, keep_a = tma.packed_maps("A", a, (TMA_BOX, bm), (RAW_COLS, bm // 8), in_place)
    blocks = min(units, sm_count(out))
    in_place_facts = {"in_place": "A", "stages": wgmma_stages(defines)} if in_place else {}  # the stages that fit
    args = (maps_a, tma.tensor_map("B", b, TMA_BOX, defines["BK"]), cuda.as_cupy(out, padded_rows=True),
            np.int32(m), np.int32(n), np.int32(k), np.int32(out.stride(-2)))
    return CudaLaunch(grid=(blocks, 1, 1), block=(defines["THREADS"], 1, 1), args=args,
                      smem=wgmma_shared_bytes(defines), facts={"blocks": blocks, **in_place_facts},
                      keep=(a, b, out, *keep_a))


def wgmma_launch(defines, tensors, out, shape, precision):
    """v11: :func:`wgmma_units` over C's tiles."""
    return wgmma_units(defines, tensors, out, shape, tile_units(defines, shape, sm_count(out))[0])


# v12: the declared config (FIT=1) takes the tile height (BM; A's rows are wgmma's N, any multiple of 8:
# cuda_kernels/sgemm/12_3xtf32_split_k.cu) of the space whose split plan a model says finishes first: a unit's
# slices each cost its BM rows plus a fixed part as long as SLICE_FIXED_ROWS rows (what a 16-row tile still pays a
# slice: the barrier waits, B's fragments loaded and split, twelve wgmma issued and awaited), times the rounds of
# units over the SMs; the taller height on a tie. Fitted to the autotune trials of c86 (H200, 779d1c0;
# reports/h200/experiments/odd-misses-779d1c0/sgemm-odd-misses.md): it orders the four heights as they ran
# at 166×419×98 (16 first), 222×2002×204 (32 first, 14.7 µs against 21.3 at 128), 1045×20×3741 and
# 4517×62×2411 (128 first); it keeps 128 rows at 4096³ and 8192³ (the fixed part outweighs a round saved) and
# the smallest height that covers M ≤ 64 at decode-sized M (the rule it replaced). The space's points (FIT=0)
# keep theirs. Measured with it (c89, the sgemm odd suite at 3786933): the seven shapes whose height it changed
# all faster (222×2002×204 21.4 → 15.1 µs, 4496×55×59 24.1 → 18.5), the nine it left alone within 6 % (their
# code unchanged: run-to-run spread).
SLICE_FIXED_ROWS = 64
V12_PATH = CUDA_DIR / "sgemm" / "12_3xtf32_split_k.cu"


def loop_rows(bm: int, units: int, slices: int, sms: int) -> int:
    """The cost of v11's kernel over ``units`` of ``slices`` slices each, ``bm`` rows a tile, in rows: the rounds of
    units over the SMs × slices × (BM + SLICE_FIXED_ROWS). What v12's height fit minimises and, scaled, the main
    loop the in-place choice weighs (:func:`main_loop_us`)."""
    return cdiv(units, sms) * slices * (bm + SLICE_FIXED_ROWS)


def split_units(defines, shape, sms) -> tuple[int, int]:
    """v12's units and slices a unit: C's tiles × the splits of K its plan takes (hgemm v9's :func:`split_plan`),
    a split's slices."""
    m, n, k = shape["M"], shape["N"], shape["K"]
    splits, per = split_plan(m, n, k, defines["BM"], defines["BN"], defines["BK"], defines["MIN_SLICES"], sms)
    return cdiv(m, defines["BM"]) * cdiv(n, defines["BN"]) * splits, per


def tile_units(defines, shape, sms) -> tuple[int, int]:
    """v11's units and slices a unit: C's tiles, each over all of K."""
    return cdiv(shape["M"], defines["BM"]) * cdiv(shape["N"], defines["BN"]), cdiv(shape["K"], defines["BK"])


def fitted_height(shape: dict, heights, config: dict, sms: int) -> int:
    """The tile height of a FIT config: of ``heights`` and the config's own, the one whose split plan has the
    fewest :func:`loop_rows`."""
    def finish(bm: int) -> int:
        return loop_rows(bm, *split_units({**config, "BM": bm}, shape, sms), sms)

    return min(sorted(set(heights) | {config["BM"]}, reverse=True), key=finish)


# Where one map cannot take A's rows, the launch either reads A in place (eight residue maps) or stages it; it
# weighs one against the other. Reading in place costs every read of a tile of A — the splitters shift each row
# out of its residue box and the raw part leaves the ring a stage short — so the main loop runs about
# IN_PLACE_SLOWDOWN longer wherever it is the splitters' pace that sets it (+29 % at 1199×1726×1463, +34 % at
# 1689×2805×11411, v11 on the H200). Staging costs one copy of A, a float read and written at the copy rate
# (COPY_US_PER_MFLOAT: 8 bytes at about 3 TB/s) plus a launch. The main loop is estimated as v12's tile-height
# fit counts it (rounds of units over the SMs × slices a unit × a slice's time at that height, SLICE_US at 128
# rows: v11 at 4096³ on the H200, 1.11 ms for 8 rounds of 128 slices). A/B against staging (cold medians, one
# run each; H200 at bfd9471, reports/h200/experiments/a-in-place-bfd9471/; H100 at f152ce8,
# reports/h100-80gb-hbm3/experiments/a-in-place-f152ce8/): the model takes the faster path at all 14 pairs of v11
# and v12 measured — in place where few column tiles and rounds read a large A (v12 4517×62×2411 75.1 → 49.8 µs,
# 1045×20×3741 35.2 → 24.4 µs on the H200; v11 4517×250×2411 122.0 → 116.8 µs on the H100), staged where one tile
# walks a long K alone (v11 1045×20×3741 133.6 against 138.7 in place; v11 1689×250×11411 414.5 against 490.1 on
# the H100) or many column tiles share the copy (1199×1726×1463, 1689×2805×11411).
IN_PLACE_SLOWDOWN = 0.3
COPY_US_PER_MFLOAT = 2.7
COPY_LAUNCH_US = 5.0
SLICE_US = 1.1


def main_loop_us(bm: int, units: int, slices: int, sms: int) -> float:
    """The estimated main loop of v11's kernel over ``units`` of ``slices`` slices each: :func:`loop_rows` at
    SLICE_US a slice of 128 rows."""
    return SLICE_US * loop_rows(bm, units, slices, sms) / (128 + SLICE_FIXED_ROWS)


def a_in_place(a, shape: dict, bm: int, units: int, slices: int, sms: int) -> bool:
    """Whether v11 and v12 read A in place by eight tensor maps, one per residue of its rows mod 8
    (sgemm/wgmma_3xtf32.cuh, A_IN_PLACE), rather than by one: rows of contiguous floats that one map cannot
    describe (K no multiple of 4, a padded leading dimension, an offset view) whose copy would cost more than
    reading them in place slows the main loop (:func:`main_loop_us`, the launch's ``units`` of ``slices``);
    otherwise such an A is staged (a copy in the timed launch)."""
    copy_us = COPY_US_PER_MFLOAT * shape["M"] * shape["K"] / 1e6 + COPY_LAUNCH_US
    return (tma.reads_in_place("A", a)
            and copy_us > IN_PLACE_SLOWDOWN * main_loop_us(bm, units, slices, sms))


def in_place_defines(defines_of, units_of):
    """``defines_of``'s defines with A_IN_PLACE, the launch's choice (:func:`a_in_place` over the units
    ``units_of`` plans), which the staging launcher follows (study/ops/tma_staging.py)."""
    def defines(config, tensors, out, shape, precision):
        own, sms = defines_of(config, tensors, out, shape, precision), sm_count(out)
        units, slices = units_of(own, shape, sms)
        return {**own, "A_IN_PLACE": int(a_in_place(tensors["A"], shape, own["BM"], units, slices, sms))}

    return defines


V11_DEFINES = in_place_defines(aligned_defines(FLOATS), tile_units)  # ALIGNED, which a TMA kernel never names


def fitted_rows(config, tensors, out, shape, precision):
    """v12's defines before A_IN_PLACE: v11's (:func:`aligned_defines`), BM fitted where the config says FIT=1
    (:func:`fitted_height` over the heights of the rung's space)."""
    defines = aligned_defines(FLOATS)(config, tensors, out, shape, precision)
    if not config.get("FIT"):
        return defines
    heights = {p["BM"] for p in kernel_header.read(V12_PATH).space}
    return {**defines, "BM": fitted_height(shape, heights, config, sm_count(out))}


V12_DEFINES = in_place_defines(fitted_rows, split_units)  # A_IN_PLACE weighed at the fitted height and v12's plan


def split_wgmma_launch(defines, tensors, out, shape, precision):
    """v12: hgemm v9's split launch (its plan, workspace, reduction; :func:`study.ops.gemm_common.split_launch`)
    over v11's kernel (:func:`wgmma_units`), the tile height it ran with recorded."""
    launch = split_launch(defines, tensors, out, shape, precision, reduce="sgemm_v12_reduce_splits",
                          first=wgmma_units)
    return dataclasses.replace(launch, facts={**launch.facts, "BM": defines["BM"]})


# v11: a 1-D grid; A read in place where one tensor map cannot describe its rows and a copy costs more (A_IN_PLACE;
# staged otherwise), B staged where TMA cannot take its rows (study/ops/tma_staging.py), C stored by pointer,
# element by element, at any leading dimension.
WGMMA = staged_launcher(CudaLauncher(launch=wgmma_launch, defines=V11_DEFINES), out=False)
# v12: v11's launch over split-K units (A in place and B staged as v11's), BM fitted to M.
SPLIT_WGMMA = staged_launcher(CudaLauncher(launch=split_wgmma_launch, defines=V12_DEFINES), out=False)

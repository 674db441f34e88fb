"""The hgemm op without a GPU: its gate passes an FP32-accumulating kernel whose only extra error is
the rounding of C to FP16/BF16 and fails one that accumulates in the storage type or drops a K
slice (a CPU simulation, the numbers behind study/ops/hgemm.py's tolerances); work, shapes, the
ALIGNED rule, refusals and the precisions it accepts."""


import pytest
import torch

from study.ops.hgemm import SMALLEST_NORMAL, TOLERANCE, UNIT_ROUNDOFF
from study.precision import BF16_TENSOR, FP16_TENSOR, FP32
from study.problem import is_out_of_scope, pad_rows
from study.catalog import implementation, ladder

TMA_RUNGS = [r.key for r in ladder("hgemm").rungs if r.multiples]  # the rungs whose operands arrive by TMA

HGEMM = ladder("hgemm").problem
PRECISIONS = [FP16_TENSOR, BF16_TENSOR]
DTYPE = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _case(m, n, k, precision, seed=0):
    t = HGEMM.make_inputs({"M": m, "N": n, "K": k}, precision, seed, "cpu")
    ref, scale = HGEMM.reference(t, precision)
    return t["A"], t["B"], ref, scale


def _fp32_then_round(a, b):
    """A correct kernel: FP32 accumulation, C rounded once to the storage type."""
    return (a.float() @ b.float()).to(a.dtype)


def _accumulate_in_storage(a, b):
    """A kernel whose accumulator is the storage type: every fused multiply-add rounded to it once
    (the exact sum in float64, then one rounding, as an FP16/BF16 FMA does), k by k."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype)
    a64, b64 = a.double(), b.double()
    for k in range(a.shape[1]):
        acc = (acc.double() + a64[:, k:k + 1] * b64[k:k + 1, :]).to(a.dtype)
    return acc


def _accumulate_per_mma(a, b, width=16):
    """An accumulator in the storage type rounded once per ``width`` k (an ``mma`` with an FP16
    accumulator): exact products summed within the chunk, one rounding per chunk."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype)
    for k0 in range(0, a.shape[1], width):
        acc = (acc.double() + a[:, k0:k0 + width].double() @ b[k0:k0 + width].double()).to(a.dtype)
    return acc


def _err(out, ref, scale, precision):
    return HGEMM.verify(out, ref, scale, precision)


@pytest.mark.parametrize("precision", PRECISIONS, ids=lambda p: p.name)
@pytest.mark.parametrize("shape", [(1, 1, 1), (256, 256, 1), (64, 64, 2), (64, 64, 64), (96, 80, 1000),
                                   (64, 64, 4096), (16, 16, 8192)])
def test_fp32_accumulation_rounded_once_passes(precision, shape):
    for seed in (0, 1):
        a, b, ref, scale = _case(*shape, precision, seed)
        v = _err(_fp32_then_round(a, b), ref, scale, precision)
        assert v.ok, v.message
        # the final rounding's bound, 2^-11 (FP16) or 2^-8 (BF16) of the scale, plus FP32's ~1e-7
        assert v.err <= UNIT_ROUNDOFF[precision.name] + 1e-6


@pytest.mark.parametrize("precision", PRECISIONS, ids=lambda p: p.name)
@pytest.mark.parametrize("shape", [(64, 64, 2), (64, 64, 8), (64, 64, 64), (128, 96, 256), (64, 64, 4096)])
def test_accumulating_in_the_storage_type_fails(precision, shape):
    a, b, ref, scale = _case(*shape, precision)
    v = _err(_accumulate_in_storage(a, b), ref, scale, precision)
    assert not v.ok and f"exceeds the {precision.name} tolerance" in v.message
    if shape[2] >= 8:  # the margin the docstring states: at least 1.4x the tolerance from K = 8 on
        assert v.err > 1.4 * TOLERANCE[precision.name], v.err


def test_the_tolerances_sit_between_one_rounding_and_accumulation_in_half():
    for name in ("fp16", "bf16"):
        assert 1.3 * UNIT_ROUNDOFF[name] < TOLERANCE[name] < 1.5 * UNIT_ROUNDOFF[name]
    assert TOLERANCE["fp16"] < TOLERANCE["bf16"]


@pytest.mark.parametrize("precision", PRECISIONS, ids=lambda p: p.name)
def test_what_the_gate_cannot_see_an_accumulator_rounded_once_per_16_k(precision):
    # The documented limit (study/ops/hgemm.py, docs/ladders/hgemm.md): K/16 roundings of the sum
    # stay inside the final rounding's own bound, which the tolerance must admit at K = 1.
    a, b, ref, scale = _case(64, 64, 4096, precision)
    v = _err(_accumulate_per_mma(a, b), ref, scale, precision)
    assert v.ok and v.err < UNIT_ROUNDOFF[precision.name]


@pytest.mark.parametrize("precision", PRECISIONS, ids=lambda p: p.name)
@pytest.mark.parametrize("shape,k0,width", [((64, 64, 64), 32, 16), ((128, 128, 1024), 512, 32),
                                            ((64, 64, 4096), 4064, 32)])
def test_a_kernel_that_drops_one_k_slice_fails(precision, shape, k0, width):
    a, b, ref, scale = _case(*shape, precision)
    dropped = a.clone()
    dropped[:, k0:k0 + width] = 0  # the slice never loaded (a loop bound one slice short, say)
    v = _err(_fp32_then_round(dropped, b), ref, scale, precision)
    assert not v.ok and "exceeds" in v.message


@pytest.mark.parametrize("precision", PRECISIONS, ids=lambda p: p.name)
def test_a_product_below_the_smallest_normal_is_judged_with_eta(precision):
    # K = 1, two small factors: in FP16 the product is subnormal, rounded with an absolute error of
    # up to 2^-25, which against |a|·|b| alone (~1e-6) would be 3 % and fail a correct kernel.
    a = torch.tensor([[2.0**-10 * 1.375]], dtype=DTYPE[precision.name])
    b = torch.tensor([[2.0**-10 * 1.1875]], dtype=DTYPE[precision.name])
    ref, scale = HGEMM.reference({"A": a, "B": b}, precision)
    assert float(scale) == pytest.approx(float(a.double() * b.double()) + SMALLEST_NORMAL[precision.name])
    out = _fp32_then_round(a, b)
    assert HGEMM.verify(out, ref, scale, precision).ok
    if precision.name == "fp16":
        assert float(out.double()) != float(ref)  # the rounding was real: the subnormal lost bits


def test_unwritten_and_misplaced_outputs_fail():
    a, b, ref, scale = _case(16, 24, 40, FP16_TENSOR)
    out = _fp32_then_round(a, b)
    out[3, 4] = float("nan")
    v = _err(out, ref, scale, FP16_TENSOR)
    assert not v.ok and v.unwritten == 1 and "never written" in v.message
    t = HGEMM.structured_inputs({"M": 16, "N": 24, "K": 40}, FP16_TENSOR, "cpu")
    ref, scale = HGEMM.reference(t, FP16_TENSOR)
    good = _fp32_then_round(t["A"], t["B"])
    assert _err(good, ref, scale, FP16_TENSOR).err == 0  # small integers: exact
    swapped = good.clone()
    swapped[[0, 1]] = good[[1, 0]]  # two rows exchanged
    assert not _err(swapped, ref, scale, FP16_TENSOR).ok


@pytest.mark.parametrize("precision", PRECISIONS, ids=lambda p: p.name)
def test_inputs_are_uniform_halves_seeded_and_the_output_is_poisoned(precision):
    shape = {"M": 33, "N": 17, "K": 65}
    t = HGEMM.make_inputs(shape, precision, 5, "cpu")
    assert t["A"].dtype == t["B"].dtype == DTYPE[precision.name]
    assert t["A"].shape == (33, 65) and t["B"].shape == (65, 17)
    assert float(t["A"].abs().max()) <= 1 and float(t["A"].min()) < -0.9 and float(t["A"].max()) > 0.9
    again = HGEMM.make_inputs(shape, precision, 5, "cpu")
    assert torch.equal(t["A"], again["A"]) and not torch.equal(t["A"], HGEMM.make_inputs(shape, precision, 6,
                                                                                          "cpu")["A"])
    s = HGEMM.structured_inputs(shape, precision, "cpu")
    assert s["A"].dtype == DTYPE[precision.name] and set(s["A"].unique().tolist()) <= {-2, -1, 0, 1, 2}
    out = HGEMM.make_output(shape, precision, "cpu")
    assert out.dtype == DTYPE[precision.name] and out.shape == (33, 17) and torch.isnan(out).all()


def test_work_shapes_and_bound():
    assert HGEMM.work({"M": 2, "N": 3, "K": 4}, FP16_TENSOR) == {"flops": 48, "bytes": 2 * (8 + 12 + 6),
                                                                 "bound": "compute"}
    assert HGEMM.flops({"M": 4096, "N": 4096, "K": 4096}) == 2 * 4096**3
    assert HGEMM.bytes({"M": 4096, "N": 4096, "K": 4096}, BF16_TENSOR) == 2 * 3 * 4096**2
    shapes = [tuple(s.values()) for s in HGEMM.default_shapes]
    assert shapes == [(4096, 4096, 4096), (8192, 8192, 8192), (4000, 4100, 4200)]
    for s in HGEMM.sanitize_shapes:  # small, and past a 32- or 128-wide tile somewhere
        assert s["M"] * s["N"] * s["K"] < 10**6
    assert any(s["N"] % 8 for s in HGEMM.sanitize_shapes) and any(s["M"] % 128 and s["N"] % 128 == 8 and
                                                                     s["K"] % 32 for s in HGEMM.sanitize_shapes)
    assert HGEMM.check_memory({"M": 8192, "N": 8192, "K": 8192}, FP16_TENSOR, free_bytes=139 * 2**30) is None


def test_the_op_accepts_fp16_and_bf16_only_and_refuses_fp32_clearly(capsys):
    from study.__main__ import main

    assert [(p.name, p.dtype, p.math) for p in HGEMM.precisions] == [("fp16", "float16", "fp16"),
                                                                     ("bf16", "bfloat16", "bf16")]
    assert HGEMM.tolerance == TOLERANCE and set(TOLERANCE) == {"fp16", "bf16"}
    assert "hgemm accepts fp16, bf16; not fp32" in HGEMM.check({"M": 8, "N": 8, "K": 8}, FP32)
    assert main(["compare", "--op", "hgemm", "--dtype", "fp32"]) == 2
    assert "hgemm does not accept 'fp32'; hgemm accepts: fp16, bf16" in capsys.readouterr().err
    for impl in (i for i in ladder("hgemm").rungs):
        assert implementation(f"hgemm/{impl.key}/cuda").precisions == ("fp16", "bf16")


def test_oversized_shapes_and_grids_are_refused_with_reasons():
    assert "32-bit" in HGEMM.check({"M": 70000, "N": 70000, "K": 8}, FP16_TENSOR)
    assert "32-bit" in HGEMM.check({"M": 8, "N": 70000, "K": 70000}, BF16_TENSOR)
    assert HGEMM.check({"M": 40000, "N": 40000, "K": 40000}, FP16_TENSOR) is None
    v1 = implementation("hgemm/v1_coalesced/cuda")  # BM = 8 rows per block
    reason = v1.launcher.check(v1.params, {"M": 8 * 65535 + 1, "N": 8, "K": 8}, FP16_TENSOR)
    assert reason and "grid.y" in reason
    assert v1.launcher.check(v1.params, {"M": 8 * 65535, "N": 8, "K": 8}, FP16_TENSOR) is None


def test_tma_rungs_take_any_k_and_n_and_fit_their_stages_in_shared_memory():
    from study.backends.tma import alignment_reason
    from study.ops.gemm_common import persistent_smem
    from study.ops.hgemm import SKINNY_TOKENS, skinny_smem, wgmma_tma_smem

    assert TMA_RUNGS == ["v7_wgmma_tma", "v8_warp_specialized", "v9_split_k", "v10_skinny_m", "v11_cluster_multicast"]
    for rung in TMA_RUNGS:
        for backend in ("cuda", "triton"):
            impl = implementation(f"hgemm/{rung}/{backend}")
            own = impl.launcher.check if backend == "cuda" else impl.target.check
            check = (lambda s: own and (own(impl.params, s, FP16_TENSOR) if backend == "cuda" else own(s, FP16_TENSOR))
                     or None)
            # K or N no multiple of 8: the launch stages the rows (tests/test_tma_staging.py); M is free
            for shape in ({"M": 64, "N": 4100, "K": 64}, {"M": 64, "N": 64, "K": 60}, {"M": 3, "N": 8, "K": 8}):
                assert check(shape) is None, (rung, backend, shape)
        for point in implementation(f"hgemm/{rung}/cuda").space:
            if rung == "v10_skinny_m":  # its tile rows are TOKENS, the launch's pick: every width must fit
                for tokens in SKINNY_TOKENS:  # in place (raw rows beside the boxes): at least two stages fit
                    assert skinny_smem({**point, "TOKENS": tokens}) <= 227 * 1024, (point, tokens)
                    in_place = {**point, "TOKENS": tokens, "B_IN_PLACE": 1}
                    assert skinny_smem({**in_place, "STAGES": 2}) <= skinny_smem(in_place) <= 227 * 1024, in_place
                continue
            # the H100/H200 opt-in limit per block (227 KiB), every stage 1024-byte aligned
            smem = wgmma_tma_smem if rung == "v7_wgmma_tma" else persistent_smem  # v9, v11 run v8's kernel body
            assert smem(point) <= 227 * 1024
            assert (point["BM"] * 64 + point["BN"] * point["BK"]) * 2 % 1024 == 0, point
    v6 = implementation("hgemm/v6_mma_sync/cuda")
    assert v6.launcher.check(v6.params, {"M": 64, "N": 4100, "K": 60}, FP16_TENSOR) is None  # cp.async: scalar paths
    # what TMA reads in place is what the edge-shape sweep rounds up to
    assert all(implementation(f"hgemm/{rung}/cuda").multiples == {"N": 8, "K": 8} for rung in TMA_RUNGS)
    assert v6.multiples == {}
    a = torch.empty(64, 72, dtype=torch.float16)
    assert alignment_reason("A", a) is None and alignment_reason("A", a[:, :64]) is None
    assert "multiple of 16 bytes" in alignment_reason("A", torch.empty(64, 67, dtype=torch.float16)[:, :64])
    assert "16-byte" in alignment_reason("A", torch.empty(64 * 64 + 1, dtype=torch.float16)[1:].view(64, 64))
    assert "column stride" in alignment_reason("A", a.t())


def test_aligned_needs_16_byte_rows_of_a_b_and_c():
    def aligned(m, n, k, pad=0, offset=False):
        shape = {"M": m, "N": n, "K": k}
        t = HGEMM.make_inputs(shape, FP16_TENSOR, 0, "cpu")
        t = {name: pad_rows(x, pad) for name, x in t.items()}
        if offset:  # A one half past a 16-byte boundary
            storage = torch.empty(m * k + 1, dtype=torch.float16)
            t["A"] = storage[1:].view(m, k).copy_(t["A"])
        out = pad_rows(HGEMM.make_output(shape, FP16_TENSOR, "cpu"), pad)
        defines = HGEMM.cuda_defines({"BM": 128}, t, out, shape, FP16_TENSOR)
        assert defines["STORAGE_FP16"] == 1
        return defines["ALIGNED"]

    assert aligned(64, 128, 64) == 1 and aligned(3, 8, 8) == 1
    assert aligned(64, 4100, 64) == 0 and aligned(64, 128, 60) == 0  # N, K not multiples of 8
    assert aligned(64, 128, 64, pad=8) == 1 and aligned(64, 128, 64, pad=3) == 0  # leading dimensions
    assert aligned(64, 128, 64, offset=True) == 0


def test_the_mma_sync_rung_copies_each_operand_as_wide_as_its_rows_allow():
    from study.ops.hgemm_mma_sync import copy_widths

    def widths(m, n, k, pad=0, offset=False):
        shape = {"M": m, "N": n, "K": k}
        t = {name: pad_rows(x, pad) for name, x in HGEMM.make_inputs(shape, BF16_TENSOR, 0, "cpu").items()}
        if offset:  # B one half past a 16-byte boundary
            t["B"] = torch.empty(k * n + 1, dtype=torch.bfloat16)[1:].view(k, n).copy_(t["B"])
        defines = copy_widths({"BM": 128}, t, HGEMM.make_output(shape, BF16_TENSOR, "cpu"), shape, BF16_TENSOR)
        return defines["A_VEC"], defines["B_VEC"], defines["ALIGNED"]

    assert widths(64, 128, 64) == (8, 8, 1)
    assert widths(222, 2002, 204) == (4, 2, 0) and widths(228, 4, 522) == (2, 4, 0)  # K, N by 4 and 2
    assert widths(166, 419, 98) == (2, 1, 0) and widths(45, 37, 59) == (1, 1, 0)     # odd rows: pairs
    assert widths(64, 128, 64, pad=2) == (2, 2, 0) and widths(64, 128, 64, pad=1) == (1, 1, 0)  # leading dims
    assert widths(64, 128, 64, offset=True) == (8, 1, 0)  # a base on 2 bytes only


def test_the_mma_sync_rung_fits_its_tile_to_fill_the_sms():
    from study.ops.hgemm_mma_sync import copy_widths, fitted_tile

    # Of 128/64 × 128/64, the fewest tiles that reach the SMs, then the least padding; else the most tiles, then
    # the least padding; 32 × 32 where that one makes fewer blocks than three quarters of the SMs (its tiles times
    # the K ranges planned for them), or where one wave of 32 × 32 tiles covers at most three quarters of its area.
    assert fitted_tile(4096, 4096, 128, 128, 132) == (128, 128) and fitted_tile(1199, 1726, 128, 128, 132) == (128, 128)
    assert fitted_tile(1100, 1024, 128, 128, 132) == (128, 64)  # 72 tiles at 128 × 128, 144 at either half
    assert fitted_tile(1024, 1000, 128, 128, 132) == (64, 64)   # 128 at either half: short of the SMs
    assert fitted_tile(222, 2002, 128, 128, 132) == (64, 64)    # 32 blocks for 132 SMs; cuBLAS's BF16 tile there
    assert fitted_tile(4496, 55, 128, 128, 132) == (32, 32)     # 71 tiles at most of 64 rows: under 99
    assert fitted_tile(36, 93, 128, 128, 132) == (32, 32) and fitted_tile(166, 419, 128, 128, 132) == (32, 32)
    assert fitted_tile(64 * 98, 64, 128, 128, 132) == (32, 32) and fitted_tile(64 * 99, 64, 128, 128, 132) == (64, 64)
    assert fitted_tile(222, 2002, 128, 128, 16) == (128, 128)   # a GPU of 16 SMs is filled already
    assert fitted_tile(32, 32, 128, 128, 1) == (32, 32)         # one tile whatever its size: the least padded
    assert fitted_tile(40, 4096, 128, 128, 5) == (64, 128)      # 32 tiles either height: 64 rows pad less
    assert fitted_tile(1, 4096, 128, 128, 5) == (64, 128)       # 32 × 32 would pad half as much, in 128 tiles for 5 SMs
    assert fitted_tile(65, 16384, 128, 128, 132) == (128, 64)   # likewise: 1,536 tiles of 32 × 32, not 256 of 128 × 64
    # K ranges count as blocks: 71 tiles of 64 × 64 in 5 ranges fill the SMs, and 284 of 32 × 32 cover as much
    assert fitted_tile(4517, 62, 128, 128, 132, lambda tile: 5) == (64, 64)
    assert fitted_tile(1045, 20, 128, 128, 132, lambda tile: 20) == (32, 32)  # 20 columns: 33 tiles, half the area
    for m, n in ((1, 1), (3, 131), (166, 419), (1024, 1000), (8013, 2474)):
        tile = fitted_tile(m, n, 128, 128, 132)
        assert tile == (32, 32) or (tile[0] in (64, 128) and tile[1] in (64, 128))

    shape = {"M": 222, "N": 2002, "K": 204}
    t = HGEMM.make_inputs(shape, BF16_TENSOR, 0, "cpu")
    out = HGEMM.make_output(shape, BF16_TENSOR, "cpu")
    declared = {"BM": 128, "BN": 128, "WM": 64, "WN": 64, "THREADS": 128}
    fit = copy_widths({**declared, "FIT": 1}, t, out, shape, BF16_TENSOR)
    assert (fit["BM"], fit["BN"], fit["WM"], fit["WN"], fit["THREADS"]) == (64, 64, 32, 32, 128)
    plain = copy_widths({**declared, "FIT": 0}, t, out, shape, BF16_TENSOR)
    assert (plain["BM"], plain["BN"], plain["WM"], plain["WN"]) == (128, 128, 64, 64)
    assert copy_widths({**declared, "FIT": 1, "DEFER": 1}, t, out, shape, BF16_TENSOR)["DEFER"] == 1  # 64 × 64
    big = {"M": 1199, "N": 1727, "K": 64}  # 128 × 128 tiles, B in pairs: DEFER off (spills)
    wide = copy_widths({**declared, "FIT": 1, "DEFER": 1}, HGEMM.make_inputs(big, BF16_TENSOR, 0, "cpu"),
                       HGEMM.make_output(big, BF16_TENSOR, "cpu"), big, BF16_TENSOR)
    assert (wide["BM"], wide["BN"], wide["B_VEC"], wide["DEFER"]) == (128, 128, 1, 0)
    with pytest.raises(ValueError, match="2 × 2 warps"):
        copy_widths({**declared, "WN": 32, "THREADS": 256, "FIT": 1}, t, out, shape, BF16_TENSOR)


def test_the_split_mma_sync_rung_plans_equal_ranges_its_twin_recomputes(fake_cuda):
    from study.ops.hgemm_mma_sync import split_mma_plan

    # two blocks an SM over the fitted tiles, at most K's slices over MIN_SLICES, none empty
    assert split_mma_plan(1045, 20, 3741, 64, 64, 32, 4, 132) == (15, 256)  # 17 tiles, 117 slices
    assert split_mma_plan(4517, 62, 2411, 64, 64, 32, 4, 132) == (3, 832)   # 71 tiles
    assert split_mma_plan(222, 2002, 204, 64, 64, 32, 4, 132) == (1, 224)   # 128 tiles, 7 slices: no split
    assert split_mma_plan(4096, 4096, 4096, 128, 128, 32, 4, 132) == (1, 4096)
    # BLOCKS_PER_SM=3: one block more an SM, as many more ranges
    assert split_mma_plan(4517, 62, 2411, 64, 64, 32, 4, 132, per_sm=3) == (5, 512)  # 355 blocks of 396
    assert split_mma_plan(1045, 20, 3741, 64, 64, 32, 4, 132, per_sm=3) == (20, 192)
    for k in range(1, 3000, 7):
        for tiles_m, least, per_sm in ((1, 2, 2), (3, 4, 3), (40, 8, 4)):
            splits, split_k = split_mma_plan(64 * tiles_m, 64, k, 64, 64, 32, least, 132, per_sm=per_sm)
            assert split_k % 32 == 0 and splits * tiles_m <= per_sm * 132
            assert (splits - 1) * split_k < k <= splits * split_k  # every range holds a slice
            assert -(-(-(-k // splits)) // 32) * 32 == split_k  # the twin's range from its grid: the same
    impl = implementation("hgemm/v12_split_k_mma_sync/cuda")
    # (shape, tile, splits): FIT's tile weighed by its K ranges (4517×62×2411: 71 tiles of 64 × 64 in ranges fill
    # the SMs, and 32 × 32 tiles would cover as much), then the plan at the blocks an SM the build holds
    for shape, tile, splits in (({"M": 1045, "N": 20, "K": 3741}, (32, 32), 8),
                                ({"M": 4517, "N": 62, "K": 2411}, (64, 64), 3),
                                ({"M": 4096, "N": 4096, "K": 4096}, (128, 128), 1)):
        tensors, launch = fake_cuda.run(impl, HGEMM, shape, FP16_TENSOR)
        [(symbol, grid, block, args, smem)] = fake_cuda  # the sum is the last block's: one kernel
        bm, bn = launch.config["BM"], launch.config["BN"]
        assert (bm, bn) == tile and symbol == "hgemm_v12_split_k_mma_sync" and launch.config["splits"] == splits
        assert grid == (-(-shape["N"] // bn), -(-shape["M"] // bm), splits) and block == (128, 1, 1)
        assert int(args[9]) == launch.config["split_k"] and int(args[11]) == -(-shape["N"] // 4) * 4
        assert args[12].numel() == grid[0] * grid[1] and not args[12].any()  # a zeroed counter a tile
        assert args[10].numel() == (splits * shape["M"] * int(args[11]) if splits > 1 else 1)


def test_the_split_mma_sync_rung_plans_no_more_blocks_an_sm_than_its_build_holds(fake_cuda, monkeypatch):
    import study.backends.cuda as cuda
    from study.backends.launch import Unsupported

    asked = []

    def resident_blocks(path, symbol, defines, threads, smem):  # the driver's count for the build that runs
        asked.append((path.name, symbol, defines["BM"], smem))
        return 1

    monkeypatch.setattr(cuda, "resident_blocks", resident_blocks)
    impl = implementation("hgemm/v12_split_k_mma_sync/cuda")
    shape = {"M": 1045, "N": 20, "K": 3741}  # 33 tiles of 32 × 32 (17 of 64 × 64: under 3/4 of the SMs), 117 slices
    for per_sm in (2, 3):  # capped at the one block an SM the driver counts: 132 // 33 = 4 ranges, not 8 or 12
        _, launch = fake_cuda.run(impl, HGEMM, shape, FP16_TENSOR, config={**impl.params, "BLOCKS_PER_SM": per_sm})
        assert (launch.config["splits"], launch.config["blocks_per_sm"]) == (4, 1), launch.config
    assert asked[0] == ("12_split_k_mma_sync.cu", "hgemm_v12_split_k_mma_sync", 32, 4 * (32 * 40 + 32 * 40) * 2)
    monkeypatch.setattr(cuda, "resident_blocks", lambda *_: 0)
    with pytest.raises(Unsupported, match="fits no block"):  # recorded as a skip with its reason
        fake_cuda.run(impl, HGEMM, shape, FP16_TENSOR)


def test_the_split_mma_sync_twin_sums_its_ranges_in_order():
    from study.backends import backend
    from study.problem import check_output

    impl = implementation("hgemm/v12_split_k_mma_sync/triton")
    shape = {"M": 17, "N": 33, "K": 600}  # two 32 × 32 tiles, 19 slices of 32: 4 ranges at MIN_SLICES=4, 7 at 2
    tensors = HGEMM.make_inputs(shape, FP16_TENSOR, 1, "cpu")
    ref, scale = HGEMM.reference(tensors, FP16_TENSOR)
    for min_slices, splits in ((4, 4), (2, 7), (32, 1)):
        config = {**impl.params, "MIN_SLICES": min_slices}
        launch = backend("triton").prepare(impl, HGEMM, tensors, shape, FP16_TENSOR, config=config)
        assert launch.config["splits"] == splits and (launch.config["BM"], launch.config["BN"]) == (32, 32)
        verdict = check_output(launch.fn, launch.out, HGEMM, ref, scale, FP16_TENSOR)
        assert verdict.ok, (min_slices, verdict.message)


SIMULATED = [(1, 1, 1), (3, 5, 1), (64, 64, 1), (256, 256, 1), (64, 64, 2), (64, 64, 8), (64, 64, 64), (256, 256, 64),
             (64, 64, 256), (64, 64, 1024), (64, 64, 4096), (32, 32, 8192)]


def simulate(shapes=SIMULATED, seeds=(0, 1, 2)):
    """The simulation behind the tolerances (study/ops/hgemm.py, docs/ladders/hgemm.md): per precision
    and shape, the gate's error of an FP32-accumulating kernel, of one accumulating in the storage
    type and (K ≥ 64) of one rounding its storage-type accumulator once per 16 k, (min, max) over
    the seeds; ``python tests/test_hgemm.py`` prints it."""
    rows = []
    for precision in PRECISIONS:
        for shape in shapes:
            right, half, per_mma = [], [], []
            for seed in seeds:
                a, b, ref, scale = _case(*shape, precision, seed)
                right.append(_err(_fp32_then_round(a, b), ref, scale, precision).err)
                if shape[2] > 1:  # at K = 1 there is nothing to accumulate: the kernels agree
                    half.append(_err(_accumulate_in_storage(a, b), ref, scale, precision).err)
                if shape[2] >= 64:
                    per_mma.append(_err(_accumulate_per_mma(a, b), ref, scale, precision).err)
            rows.append((precision.name, shape, *[(min(e), max(e)) if e else None for e in (right, half, per_mma)]))
    return rows


if __name__ == "__main__":
    for name, shape, right, half, per_mma in simulate():
        print(f"{name} {'x'.join(map(str, shape)):>12}  fp32 accumulation {right[0]:.2e} … {right[1]:.2e}"
              + (f"   in the storage type {half[0]:.2e} … {half[1]:.2e}" if half else "")
              + (f"   once per 16 k {per_mma[0]:.2e} … {per_mma[1]:.2e}" if per_mma else ""))


def test_split_k_splits_products_of_few_tiles_into_equal_ranges_and_sums_them_after(fake_cuda):
    from study.ops.hgemm import split_plan

    # the SMs over the tiles, at most K's slices over MIN_SLICES, none empty
    assert split_plan(16, 4096, 4096, 128, 256, 64, 4, 132) == (8, 8)   # 16 tiles
    assert split_plan(4096, 4096, 4096, 128, 256, 64, 4, 132) == (1, 64)  # 512 tiles: v8 as it is
    assert split_plan(64, 64, 65536, 128, 256, 64, 4, 132) == (128, 8)  # 1 tile: 132 would leave ranges empty
    assert split_plan(16, 4096, 300, 128, 256, 64, 4, 132) == (1, 5)  # 5 slices: too few to split
    for m, n, k in ((1, 1, 1), (17, 33, 65), (16, 4096, 11008), (3, 5, 100000)):
        splits, per = split_plan(m, n, k, 128, 128, 64, 2, 132)
        slices = -(-k // 64)
        assert splits * per >= slices > (splits - 1) * per  # every range holds a slice
    impl = implementation("hgemm/v9_split_k/cuda")
    for shape, splits in (({"M": 16, "N": 4096, "K": 4096}, 8), ({"M": 1024, "N": 4096, "K": 4096}, 1)):
        tensors, launch = fake_cuda.run(impl, HGEMM, shape, FP16_TENSOR)
        assert launch.config["splits"] == splits and "staged" not in launch.config
        symbols = [c[0] for c in fake_cuda]
        assert symbols == ["hgemm_v9_split_k"] + ["hgemm_v9_reduce_splits"] * (splits > 1)
        _, grid, block, args, _ = fake_cuda[0]
        tiles = -(-shape["M"] // 128) * -(-shape["N"] // 256)
        assert grid == (min(tiles * splits, 132), 1, 1) and block == (384, 1, 1)
        assert [int(a) for a in args[3:8]] == [shape["M"], shape["N"], shape["K"], splits,
                                                launch.config["slices_per_split"]]
        assert int(args[9]) == 4096  # the planes' rows: N rounded up to 4 floats
        if splits > 1:
            _, rgrid, rblock, rargs, _ = fake_cuda[1]
            assert rargs[0] is args[8] and rargs[1].data_ptr() == launch.out.data_ptr()
            assert args[8].numel() == splits * shape["M"] * 4096 and [int(a) for a in rargs[2:]] == \
                [shape["M"], shape["N"], 4096, launch.out.stride(0), splits]


def test_the_cluster_rung_launches_whole_pairs_of_blocks_over_pairs_of_tiles(fake_cuda):
    impl = implementation("hgemm/v11_cluster_multicast/cuda")
    # (shape, pairs of 128 × 256 tiles): 32 block rows make 16 pair rows; 3 make 2 (the second pair's
    # lower tile lies past M); one block row, one pair
    for shape, pairs in (({"M": 4096, "N": 4096, "K": 4096}, 16 * 16), ({"M": 300, "N": 1000, "K": 64}, 2 * 4),
                         ({"M": 64, "N": 256, "K": 64}, 1)):
        tensors, launch = fake_cuda.run(impl, HGEMM, shape, FP16_TENSOR)
        [(symbol, grid, block, args, smem)] = fake_cuda
        assert symbol == "hgemm_v11_cluster_multicast" and block == (384, 1, 1)
        assert grid == (2 * min(pairs, 66), 1, 1)  # whole clusters, one block per SM
        assert [int(a) for a in args[3:6]] == [shape["M"], shape["N"], shape["K"]]
        assert launch.config["blocks"] == grid[0]


def test_the_split_k_twin_sums_its_ranges_in_order():
    from study.backends import backend
    from study.problem import check_output

    impl = implementation("hgemm/v9_split_k/triton")
    shape = {"M": 17, "N": 33, "K": 600}  # 10 slices of 64: two ranges of 5 at MIN_SLICES=4, five of 2 at 2
    tensors = HGEMM.make_inputs(shape, FP16_TENSOR, 1, "cpu")
    ref, scale = HGEMM.reference(tensors, FP16_TENSOR)
    for min_slices in (4, 2):
        config = {**impl.params, "MIN_SLICES": min_slices}
        launch = backend("triton").prepare(impl, HGEMM, tensors, shape, FP16_TENSOR, config=config)
        verdict = check_output(launch.fn, launch.out, HGEMM, ref, scale, FP16_TENSOR)
        assert verdict.ok, (min_slices, verdict.message)


def test_the_split_k_twins_tuning_sums_each_configs_partials_in_its_timed_call():
    from study.ops.hgemm import reduce_after_tuned_partials, split_plan

    impl = implementation("hgemm/v9_split_k/triton")
    assert impl.target.post_hook is reduce_after_tuned_partials  # triton.autotune times partials and sum
    m, n, k, ldp = 17, 33, 600, 36
    cfg = dict(BM=128, BN=256, BK=64, MIN_SLICES=2)
    splits, _ = split_plan(m, n, k, *cfg.values(), 132)
    assert splits == 5
    planes = torch.randn(splits, m, ldp)
    out = torch.full((m, n), float("nan"), dtype=torch.float16)
    nargs = dict(M=m, N=n, K=k, NUM_SMS=132, part_ptr=planes.reshape(-1), c_ptr=out, ldp=ldp, stride_cm=n, **cfg)
    reduce_after_tuned_partials(nargs)
    expected = planes[0, :, :n].clone()
    for s in range(1, splits):
        expected += planes[s, :, :n]  # in plane order, as the CUDA rung's reduction adds them
    assert torch.equal(out, expected.to(torch.float16))
    untouched = torch.full((m, n), float("nan"), dtype=torch.float16)
    reduce_after_tuned_partials({**nargs, "K": 64, "c_ptr": untouched})  # one split: C was the kernel's to write
    assert torch.isnan(untouched).all()


def test_skinny_m_picks_its_token_width_plans_as_v9_and_refuses_larger_m(fake_cuda, monkeypatch):
    from study.backends import backend, tma
    from study.ops.hgemm import skinny_check, skinny_smem, skinny_tokens, skinny_twin_tokens, split_plan

    # TOKENS, wgmma's N: the smallest of 8, 16, 32, 64 that holds M (the twin: at least 16, tl.dot's smallest)
    assert [skinny_tokens(m) for m in (1, 8, 9, 16, 17, 32, 33, 64)] == [8, 8, 16, 16, 32, 32, 64, 64]
    assert [skinny_twin_tokens(m) for m in (1, 16, 17, 64)] == [16, 16, 32, 64]
    impl = implementation("hgemm/v10_skinny_m/cuda")
    twin = implementation("hgemm/v10_skinny_m/triton")
    for check in (lambda s: impl.launcher.check(impl.params, s, FP16_TENSOR), lambda s: twin.target.check(s, FP16_TENSOR)):
        assert check({"M": 64, "N": 4100, "K": 60}) is None  # rows TMA cannot read are staged
        reason = check({"M": 65, "N": 4096, "K": 4096})
        assert is_out_of_scope(reason) and "v10 is for M ≤ 64" in reason and "M=65" in reason
        assert "v8/v9 take larger M" in reason
    assert skinny_check(None, {"M": 4096, "N": 8, "K": 8}, FP16_TENSOR)
    boxes = []
    monkeypatch.setattr(tma, "tensor_map", lambda name, tensor, cols, rows: boxes.append((name, cols, rows)) or name)
    # (shape, TOKENS, BN, splits): N / BN tiles (FIT_BN: the narrowest width whose tiles do not pass the 132 SMs),
    # v9's plan with BM = TOKENS (one row of tiles)
    for shape, tokens, bn, splits in (({"M": 1, "N": 4096, "K": 4096}, 8, 64, 2),
                                      ({"M": 16, "N": 4096, "K": 11008}, 16, 64, 2),
                                      ({"M": 16, "N": 11008, "K": 4096}, 16, 128, 1),
                                      ({"M": 1, "N": 32000, "K": 4096}, 8, 256, 1), ({"M": 33, "N": 72, "K": 520}, 64, 64, 2)):
        m, n, k = shape["M"], shape["N"], shape["K"]
        boxes.clear()
        tensors, launch = fake_cuda.run(impl, HGEMM, shape, FP16_TENSOR)
        per = split_plan(m, n, k, tokens, bn, 64, 4, 132)[1]
        assert split_plan(m, n, k, tokens, bn, 64, 4, 132)[0] == splits
        assert launch.config["TOKENS"] == tokens and launch.config["splits"] == splits, launch.config
        assert launch.config["BN"] == bn and launch.config["THREADS"] == 32 + 2 * bn
        assert launch.config["slices_per_split"] == per and "staged" not in launch.config
        assert boxes == [("A", 64, tokens), ("B", 64, 64)]  # TOKENS rows of 64 k; 64 k rows of 64 n
        assert [c[0] for c in fake_cuda] == ["hgemm_v10_skinny_m"]  # the splits summed in the same launch
        _, grid, block, args, smem = fake_cuda[0]
        assert grid == (min(-(-n // bn) * splits, 132), 1, 1) and block == (32 + 2 * bn, 1, 1)
        stages = launch.config["STAGES"]
        assert stages == (5 if bn == 256 else 8)  # the space's point of that width
        assert smem == skinny_smem(launch.config) == stages * ((tokens * 64 + bn * 64) * 2 + 16) + 1024
        assert args[2].data_ptr() == launch.out.data_ptr()  # C by pointer: never staged
        assert args[1] == ("residue maps", ("B",), (0,) * 8)  # B's one map, the first of the kernel's WeightMaps
        assert [int(a) for a in args[3:9]] == [m, n, k, launch.out.stride(0), splits, per]
        ldp = -(-n // 4) * 4
        assert int(args[10]) == ldp and args[9].numel() == (splits * m * ldp if splits > 1 else 1)
        # a count of finished units per tile, zero: the kernel's last unit of a tile sums it and resets it
        tile_done = args[11]
        assert tile_done.dtype == torch.int32 and tile_done.numel() == (-(-n // bn) if splits > 1 else 1)
        assert not tile_done.any()
    # C with rows TMA could not write is written in place (plain stores); A's are staged
    shape = {"M": 5, "N": 72, "K": 40}
    tensors = HGEMM.make_inputs(shape, FP16_TENSOR, 0, "cpu")
    tensors["A"] = pad_rows(tensors["A"], 3)
    launch = backend("cuda").prepare(impl, HGEMM, tensors, shape, FP16_TENSOR)
    assert launch.config["staged"] == "A"


@pytest.mark.parametrize("name", ["hgemm/v10_skinny_m/cuda", "gemm_bias_relu/v4_skinny_m/cuda"])
def test_the_skinny_rung_reads_weights_tma_cannot_take_in_place_not_staged(fake_cuda, monkeypatch, name):
    # N = 50257 (GPT-2's vocabulary): rows of B 100514 bytes apart, which TMA cannot read; staging them copied
    # the whole weight matrix twice more at every launch. They are read where they lie (B_IN_PLACE).
    from study.backends import backend, tma

    impl = implementation(name)
    problem = ladder(impl.op).problem
    boxes = []
    monkeypatch.setattr(tma, "tensor_map", lambda name, tensor, cols, rows: boxes.append(name) or ("map", name))
    shape = {"M": 1, "N": 50257, "K": 64}
    tensors, launch = fake_cuda.run(impl, problem, shape, FP16_TENSOR)
    assert launch.config["B_IN_PLACE"] == 1 and launch.config["in_place"] == "B" and "staged" not in launch.config
    assert boxes == ["A"] and [c[0] for c in fake_cuda][0] == impl.target.symbol  # no stage_rows, no one map of B
    _, _, block, args, _ = fake_cuda[0]
    assert block == (impl.params["THREADS"] + 128, 1, 1)  # the shifter warps
    assert launch.config["BN"] == impl.params["BN"]  # 50257 columns make more tiles than SMs at every width
    # one map per residue of k mod 8: rows 16 · ldb bytes apart, each from its row's first byte rounded down to
    # 16 bytes, the rounding (in elements) its column offset; 50257 is odd, so each residue has its own
    kind, maps, offsets = args[1]
    b, size = tensors["B"], 2
    assert kind == "residue maps" and len(maps) == 8 and len(set(offsets)) == 8
    for j, (tag, address, sizes, strides, box, swizzle) in enumerate(maps):
        start = b.data_ptr() + j * 50257 * size
        assert tag == "encode" and address == start - start % 16 and offsets[j] == start % 16 // size
        assert sizes == (50257 + offsets[j], 8) and strides == (8 * 50257 * size,)  # K = 64: 8 rows a residue
        assert box == (72, 8) and not swizzle  # from the aligned column before the tile's first: shifted on chip
    # K = 5: residues 5, 6 and 7 have no row; their maps read zeros (a map of 8 zeros), like rows past K
    tensors, launch = fake_cuda.run(impl, problem, {"M": 1, "N": 50257, "K": 5}, FP16_TENSOR)
    _, maps, offsets = fake_cuda[-1][3][1]  # after the copy of A's rows (10 bytes apart)
    assert [m[2] for m in maps] == [(50257 + offsets[j], 1) for j in range(5)] + [(8, 1)] * 3
    assert all(m[3] == (16,) for m in maps[5:])
    # aligned rows: TMA, as before; a misaligned A is still staged (M rows: small), B still in place
    tensors, launch = fake_cuda.run(impl, problem, {"M": 1, "N": 4096, "K": 64}, FP16_TENSOR)
    assert launch.config["B_IN_PLACE"] == 0 and "in_place" not in launch.config
    assert launch.config["BN"] == 64 and fake_cuda[0][2] == (160, 1, 1)  # 64 tiles of 64 columns: FIT_BN's
    assert fake_cuda[0][3][1] == ("residue maps", (("map", "B"),), (0,) * 8)
    tensors = problem.make_inputs({"M": 3, "N": 70, "K": 41}, FP16_TENSOR, 0, "cpu")
    launch = backend("cuda").prepare(impl, problem, tensors, {"M": 3, "N": 70, "K": 41}, FP16_TENSOR)
    assert launch.config["staged"] == "A" and launch.config["in_place"] == "B"


def test_the_skinny_twin_computes_c_transposed_split_or_not():
    from study.backends import backend
    from study.problem import check_output

    impl = implementation("hgemm/v10_skinny_m/triton")
    for shape, min_slices, splits in (({"M": 1, "N": 72, "K": 600}, 4, 2), ({"M": 17, "N": 136, "K": 600}, 2, 5),
                                      ({"M": 64, "N": 200, "K": 72}, 4, 1)):
        tensors = HGEMM.make_inputs(shape, FP16_TENSOR, 1, "cpu")
        ref, scale = HGEMM.reference(tensors, FP16_TENSOR)
        config = {**impl.params, "MIN_SLICES": min_slices}
        launch = backend("triton").prepare(impl, HGEMM, tensors, shape, FP16_TENSOR, config=config)
        assert launch.config["splits"] == splits, launch.config
        verdict = check_output(launch.fn, launch.out, HGEMM, ref, scale, FP16_TENSOR)
        assert verdict.ok, (shape, verdict.message)

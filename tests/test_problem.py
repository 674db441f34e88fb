"""Problems without a GPU: tolerances that pass each precision and fail the next-lower one,
layouts, shapes per op, skip reasons, the plan and the timer's settings."""

import pytest
import torch

from study.precision import BF16_STORAGE, FP16_STORAGE, FP32, TF32, select
from study.catalog import ladder
from study.plan import plan
from study.timing import TimerSettings

SGEMM = ladder("sgemm").problem
SGEMV = ladder("sgemv").problem


def _gemm(m, n, k, seed=1):
    t = SGEMM.make_inputs({"M": m, "N": n, "K": k}, FP32, seed, "cpu")
    ref, scale = SGEMM.reference(t, FP32)
    return t, ref, scale


def _round_mantissa(x, bits):
    """float32 rounded to ``bits`` mantissa bits (10: TF32 and FP16; 7: BF16), to nearest."""
    drop = 23 - bits
    b = x.view(torch.int32)
    return ((b + (1 << (drop - 1))) & ~((1 << drop) - 1)).view(torch.float32)


def test_fp32_product_passes_and_records_errors():
    t, ref, scale = _gemm(64, 48, 300)
    v = SGEMM.verify(t["A"] @ t["B"], ref, scale, FP32)
    assert v.ok, v.message
    assert 0 < v.err < v.tolerance and v.max_abs > 0 and v.unwritten == 0


def test_tf32_operands_fail_the_fp32_gate():
    t, ref, scale = _gemm(64, 48, 300)
    out = _round_mantissa(t["A"], 10) @ _round_mantissa(t["B"], 10)
    v = SGEMM.verify(out, ref, scale, FP32)
    assert not v.ok and "exceeds the fp32 tolerance" in v.message


def _truncate_mantissa(x, bits):
    drop = 23 - bits
    return (x.view(torch.int32) & ~((1 << drop) - 1)).view(torch.float32)


@pytest.mark.parametrize("shape", [(64, 64, 1), (17, 33, 65), (256, 256, 256), (64, 48, 3000)])
def test_the_tf32_gate_passes_either_tf32_conversion_and_fails_bf16_operands(shape):
    from study.precision import TF32

    t = SGEMM.make_inputs(dict(zip(("M", "N", "K"), shape)), TF32, 1, "cpu")
    ref, scale = SGEMM.reference(t, TF32)
    for convert in (lambda x: _round_mantissa(x, 10), lambda x: _truncate_mantissa(x, 10)):
        v = SGEMM.verify((convert(t["A"]).double() @ convert(t["B"]).double()), ref, scale, TF32)
        assert v.ok, v.message
    bf16 = _round_mantissa(t["A"], 7).double() @ _round_mantissa(t["B"], 7).double()
    v = SGEMM.verify(bf16, ref, scale, TF32)
    assert not v.ok and "exceeds the tf32 tolerance" in v.message
    assert SGEMM.metric(TF32).endswith("root-sum-square") and SGEMM.metric(FP32).endswith("(|A|·|B|)")


def test_unwritten_and_wrong_outputs_fail():
    t, ref, scale = _gemm(16, 16, 16)
    out = t["A"] @ t["B"]
    out[3, 4] = float("nan")
    v = SGEMM.verify(out, ref, scale, FP32)
    assert not v.ok and v.unwritten == 1 and "never written" in v.message
    out = t["A"] @ t["B"]
    out[0, 0] += 1e-3
    assert not SGEMM.verify(out, ref, scale, FP32).ok


def _gemv(m, n, precision, seed=3):
    t = SGEMV.make_inputs({"M": m, "N": n}, precision, seed, "cpu")
    ref, scale = SGEMV.reference(t, precision)
    return t, ref, scale


def _accumulate_in(a, x, dtype):
    """y = A·x summed left to right in ``dtype`` (every product and partial sum rounded to it)."""
    acc = torch.zeros(a.shape[0], dtype=dtype)
    for j in range(a.shape[1]):
        acc = (acc + a[:, j].to(dtype) * x[j].to(dtype)).to(dtype)
    return acc


@pytest.mark.parametrize("precision", [FP32, FP16_STORAGE, BF16_STORAGE], ids=lambda p: p.name)
@pytest.mark.parametrize("n", [1, 3, 64, 1024])
def test_gemv_fp32_accumulation_rounded_once_passes_every_precision(precision, n):
    t, ref, scale = _gemv(40, n, precision)
    out = (t["A"].float() @ t["x"].float()).to(t["A"].dtype)
    v = SGEMV.verify(out, ref, scale, precision)
    assert v.ok, v.message


@pytest.mark.parametrize("n", [64, 1024])
def test_gemv_gates_fail_the_next_lower_precision(n):
    # FP32 storage: operands rounded to 10 mantissa bits (a TF32 or FP16 path) fail the fp32 gate.
    t, ref, scale = _gemv(40, n, FP32)
    tf32 = _round_mantissa(t["A"], 10).double() @ _round_mantissa(t["x"], 10).double()
    assert not SGEMV.verify(tf32.float(), ref, scale, FP32).ok
    # FP16 storage: accumulating in FP16 (a half2 FMA loop) fails the fp16 gate.
    t, ref, scale = _gemv(40, n, FP16_STORAGE)
    assert not SGEMV.verify(_accumulate_in(t["A"], t["x"], torch.float16), ref, scale, FP16_STORAGE).ok
    # BF16 storage: accumulating in BF16 fails the bf16 gate.
    t, ref, scale = _gemv(40, n, BF16_STORAGE)
    assert not SGEMV.verify(_accumulate_in(t["A"], t["x"], torch.bfloat16), ref, scale, BF16_STORAGE).ok
    # ... and an FP16 output is not an FP32 one: the fp32 gate fails a result rounded to half.
    t, ref, scale = _gemv(40, n, FP32)
    assert not SGEMV.verify((t["A"] @ t["x"]).half().float(), ref, scale, FP32).ok


def test_column_major_layout_keeps_values_and_changes_strides():
    t, _, _ = _gemm(5, 7, 3)
    b = SGEMM.with_layout(t, {"B": "col"})["B"]
    assert b.shape == (3, 7) and b.stride() == (1, 3)
    assert torch.equal(b, t["B"])


@pytest.mark.parametrize("m,n,k", [(5, 7, 3), (2, 129, 1), (4, 1, 3), (3, 1, 1)])
def test_the_cuda_kernels_see_a_column_major_b_as_its_storage_whatever_k(m, n, k):
    # v0 indexes column c of B at c * ldb: its storage must reach it with ldb = K, also when
    # K = 1, where torch calls a column-major 1×N B contiguous (found wrong on the GPU).
    from study.ops.gemm_common import b_as_stored

    t, _, _ = _gemm(m, n, k)
    col = b_as_stored(SGEMM.with_layout(t, {"B": "col"})["B"])
    assert col.shape == (n, k) and (n == 1 or col.stride(-2) == k) and col.stride(-1) == 1
    assert torch.equal(col, t["B"].t())
    row = b_as_stored(t["B"])
    assert row is t["B"] or k == 1 == n  # row-major B goes as it is


@pytest.mark.parametrize("problem,text,message", [
    (SGEMM, "4096x4096", "of the form MxNxK"), (SGEMM, "0x4x4", "at least 1"), (SGEMM, "-3x4x4", "at least 1"),
    (SGEMM, "axbxc", "of the form MxNxK"), (SGEMV, "4096x4096x4096", "of the form MxN"),
    (SGEMV, "64", "of the form MxN"), (SGEMV, "8x0", "at least 1"),
])
def test_bad_shapes_are_refused_with_the_ops_form(problem, text, message):
    with pytest.raises(ValueError, match=message):
        problem.parse_shape(text)


def test_shapes_parse_into_the_ops_named_axes():
    assert SGEMV.parse_shape("8192x1024") == {"M": 8192, "N": 1024}
    assert SGEMM.parse_shape("1×2×3") == {"M": 1, "N": 2, "K": 3}


def test_precisions_are_chosen_by_name_and_refused_with_the_valid_ones():
    assert select(SGEMV.precisions, ["bf16", "fp32"], "sgemv") == [BF16_STORAGE, FP32]
    with pytest.raises(ValueError, match="sgemm does not accept 'fp16'; sgemm accepts: fp32"):
        select(SGEMM.precisions, ["fp16"], "sgemm")
    with pytest.raises(ValueError, match="unknown dtype 'fp8'; sgemv accepts: fp32, fp16, bf16"):
        select(SGEMV.precisions, ["fp8"], "sgemv")


def test_a_precision_picks_storage_math_triton_cublas_and_cuda_defines():
    assert (FP32.dtype, FP32.math, FP32.triton_input_precision, FP32.cublas_fp32_precision) == (
        "float32", "ieee", "ieee", "ieee")
    assert (TF32.triton_input_precision, TF32.cublas_fp32_precision) == ("tf32", "tf32")
    assert FP16_STORAGE.cuda_defines == {"STORAGE_FP16": 1} and BF16_STORAGE.cuda_defines == {"STORAGE_BF16": 1}
    assert FP16_STORAGE.triton_input_precision is None and FP16_STORAGE.element_bytes == 2


def test_unsupported_precision_huge_and_oversized_shapes_are_skipped_with_reasons():
    assert "accepts fp32, tf32; not fp16" in SGEMM.check({"M": 8, "N": 8, "K": 8}, FP16_STORAGE)
    assert "32-bit" in SGEMM.check({"M": 70000, "N": 70000, "K": 8}, FP32)
    assert "32-bit" in SGEMV.check({"M": 70000, "N": 70000}, FP32)
    reason = SGEMM.check_memory({"M": 65536, "N": 65536, "K": 4096}, FP32, free_bytes=10 * 2**30)
    assert reason and "GiB" in reason
    assert SGEMM.check_memory({"M": 64, "N": 64, "K": 64}, FP32, free_bytes=10 * 2**30) is None


def test_work_is_declared_by_the_problem():
    assert SGEMM.work({"M": 2, "N": 3, "K": 4}, FP32) == {"flops": 48, "bytes": 4 * (8 + 12 + 6), "bound": "compute"}
    assert SGEMV.work({"M": 8, "N": 16}, FP16_STORAGE) == {"flops": 256, "bytes": 2 * (128 + 16 + 8),
                                                           "bound": "memory"}


def test_v3_split_plan_fills_the_gpu_and_keeps_slices_aligned():
    from study.ops.sgemv import split_plan

    splits, width = split_plan(1024, 65536, 4, 132)
    assert splits > 1 and width % 128 == 0 and (splits - 1) * width < 65536 <= splits * width
    assert split_plan(16384, 16384, 2, 132) == (1, 16384)
    assert split_plan(3, 100, 4, 132) == (1, 128)  # narrower than one warp-wide load: no split


def test_plan_counts_cases_per_op_precision_and_mode():
    cases = plan(["sgemm"], autotune="both")
    # rungs × backends × autotune modes + torch.matmul once + cuBLASLt per autotune mode (its own search)
    per_shape = len(ladder("sgemm").rungs) * 2 * 2 + 1 + 2
    assert len(cases) == per_shape * len(SGEMM.default_shapes)
    gemv = plan(["sgemv"])
    per = (len(ladder("sgemv").rungs) * 2 + 1) * len(SGEMV.default_precisions) * len(SGEMV.default_modes)
    assert len(gemv) == per * len(SGEMV.default_shapes)
    assert {c.mode for c in gemv} == {"cold", "hot"} and {c.precision.name for c in gemv} == {"fp32", "fp16", "bf16"}
    only = plan(["sgemm"], backends=["cuda"], rungs=["v3"], shapes={"sgemm": [{"M": 8, "N": 8, "K": 8}]})
    assert [(c.impl.backend, c.impl.rung, c.autotune) for c in only] == [
        ("cuda", "v3_register_tile", "off"), ("cublas", None, "n/a")]
    with pytest.raises(KeyError, match="unknown rung"):
        plan(["sgemm"], rungs=["v9_magic"])
    with pytest.raises(ValueError, match="sgemm does not accept 'bf16'"):
        plan(["sgemm"], precisions={"sgemm": ["bf16"]})


@pytest.mark.parametrize("kwargs,message", [
    (dict(reps=0), "at least 20"), (dict(reps=5), "at least 20"), (dict(noise=-0.01), "noise target"),
    (dict(noise=0), "noise target"), (dict(min_samples=3), "at least 10 samples"),
    (dict(timeout_s=0), "timeout > 0"), (dict(timeout_s=0.05, min_time_s=0.1), "shorter than the minimum GPU time"),
    (dict(mode="lukewarm"), "mode must be"), (dict(min_warmup=0), "warm-up"), (dict(warmup_ms=-1), "warm-up"),
    (dict(throttle_threshold=1.5), "throttle threshold"), (dict(graph_launches=0), "at least one launch"),
])
def test_impossible_timer_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TimerSettings(**kwargs)


def test_stop_rule_by_noise_time_count_and_timeout():
    from study.timing import stop_rule

    st = TimerSettings(min_samples=10, min_time_s=0.001, timeout_s=5, noise=0.01, max_samples=30)
    steady = [1.0] * 9
    assert stop_rule(st, steady, 0.1) is None  # too few samples
    assert stop_rule(st, steady + [1.0], 0.1) == "noise"
    noisy = [1.0, 2.0] * 5
    assert stop_rule(st, noisy, 0.1) is None  # 33 % relative stdev: keep sampling
    assert stop_rule(st, noisy, 6.0) == "timeout"
    assert stop_rule(st, noisy * 3, 0.1) == "max_samples"
    short = TimerSettings(min_samples=10, min_time_s=1.0, timeout_s=5)
    assert stop_rule(short, [1.0] * 10, 0.1) is None  # 10 ms of GPU time < 1 s
    fixed = TimerSettings(reps=20, timeout_s=5)
    assert stop_rule(fixed, noisy * 2, 0.1) == "reps" and stop_rule(fixed, noisy, 0.1) is None


def test_gemv_cuda_launch_reads_its_grid_from_the_declared_parameters_not_the_rung_name(monkeypatch):
    import study.backends.cuda as cuda
    from study.ops.sgemv import ROWS, SPLIT

    monkeypatch.setattr(cuda, "as_cupy", lambda t: t)  # no GPU: the launch's tensors as they are
    shape = {"M": 1000, "N": 4096}
    t = SGEMV.make_inputs(shape, FP32, 0, "cpu")
    out = SGEMV.make_output(shape, FP32, "cpu")
    for defines, grid in (({"THREADS": 256, "LANES": 1}, (4, 1, 1)), ({"THREADS": 256, "LANES": 32}, (125, 1, 1)),
                          ({"THREADS": 128, "LANES": 32, "WARP_ROWS": 4}, (63, 1, 1))):
        launch = ROWS.launch(defines, t, out, shape, FP32)
        assert launch.grid == grid and launch.block == (defines["THREADS"], 1, 1) and len(launch.args) == 5
    split = SPLIT.launch({"THREADS": 256, "LANES": 32, "WARP_ROWS": 2, "SPLIT": 1}, t, out, shape, FP32)
    from study.ops.sgemv import split_plan

    slices, width = split_plan(1000, 4096, 4, 132)
    assert split.grid == (63, slices, 1) and slices > 1 and int(split.args[5]) == width
    partial, counter = split.args[6], split.args[7]
    assert partial.numel() == slices * 1000 and counter.numel() == 63 and int(counter.abs().sum()) == 0


def test_v4_tiles_start_on_16_bytes_hold_whole_rows_in_registers_or_shared_memory_or_take_the_rows_path(monkeypatch):
    import study.backends.cuda as cuda
    from study.ops.sgemv import ROW_TILES, fitted_lanes, row_vectors, tile_rows

    for n, size in ((16, 2), (13, 2), (7, 4), (3, 4), (1, 2), (1000, 4), (4096, 4), (4097, 4), (2049, 2)):
        rows = tile_rows(n, size, 8192, True)
        assert rows * n <= 8192 and rows * n * size % 16 == 0, (n, size)
        assert rows == 0 or (rows + 16) * n > 8192, (n, size)  # no further group of rows would fit
    assert tile_rows(16, 2, 16384, True) == 1024 and tile_rows(4097, 4, 8192, True) == 0
    assert tile_rows(16, 2, 16384, False) == 0  # A off 16 bytes: the rows path
    # rows of 1, 2, 4 … 32 whole 16-byte vectors: summed in registers; others staged; past a tile: rows
    assert [row_vectors(n, 4, True) for n in (4, 8, 12, 16, 64, 128, 256, 13)] == [1, 2, 0, 4, 16, 32, 0, 0]
    assert [row_vectors(n, 2, True) for n in (8, 16, 24, 64, 256, 512)] == [1, 2, 0, 8, 32, 0]
    assert row_vectors(64, 2, False) == 0  # A or x off 16 bytes
    monkeypatch.setattr(cuda, "as_cupy", lambda t: t)
    for n, lanes, path in ((1, 1, "tiles"), (7, 1, "tiles"), (8, 2, "vectors"), (16, 4, "vectors"), (127, 16, "tiles"),
                           (128, 32, "vectors"), (256, 32, "tiles"), (65536, 32, "rows")):
        shape = {"M": 40, "N": n}
        t = SGEMV.make_inputs(shape, FP32, 0, "cpu")
        out = SGEMV.make_output(shape, FP32, "cpu")
        defines = fitted_lanes({"THREADS": 256, "TILE_VECS": 8, "LANES": 32, "FIT": 1}, t, out, shape, FP32)
        assert defines["LANES"] == lanes and defines["THREADS"] == 256
        launch = ROW_TILES.launch(defines, t, out, shape, FP32)
        rows, vecs = int(launch.args[5]), int(launch.args[6])
        assert launch.facts["path"] == path, (n, launch.facts)
        if path == "vectors":  # a tile is exactly THREADS·TILE_VECS vectors of whole rows, no shared memory
            assert rows * vecs == 256 * 8 and vecs == n // 4 and launch.smem == 0
            assert launch.facts == {"path": "vectors", "tile_rows": rows} and launch.grid == (-(-40 // rows), 1, 1)
        elif path == "tiles":
            assert launch.facts == {"path": "tiles", "tile_rows": rows} and rows >= 1 and vecs == 0
            assert launch.grid == (-(-40 // rows), 1, 1) and launch.smem == (8192 + n) * 4
        else:
            assert launch.facts == {"path": "rows"} and rows == 0 and vecs == 0 and launch.smem == 0
    fixed = fitted_lanes({"THREADS": 256, "TILE_VECS": 8, "LANES": 4, "FIT": 0}, t, out, shape, FP32)
    assert fixed["LANES"] == 4  # a space point keeps its own


@pytest.mark.parametrize("m,n,k", [(64, 64, 65536), (64, 8192, 8192), (512, 4096, 4096), (4096, 4096, 4096),
                                   (5, 7, 300), (5, 7, 63), (1, 1, 1), (1000, 1500, 1700), (3, 3, 10**6)])
def test_the_split_k_plan_covers_k_in_whole_slices_and_splits_only_idle_shapes(m, n, k):
    from study.ops.sgemm import MIN_SLICES_PER_SPLIT, SPLIT_BLOCKS_PER_SM, split_k_plan

    bm = bn = 128
    bk, sms = 16, 132
    splits, split_k = split_k_plan(m, n, k, bm, bn, bk, sms)
    tiles = -(-m // bm) * -(-n // bn)
    assert split_k % bk == 0 and (splits - 1) * split_k < k <= splits * split_k  # no empty range, none missing
    assert split_k == -(-(-(-k // splits)) // bk) * bk  # what the Triton twin recomputes from its grid
    if tiles >= sms * SPLIT_BLOCKS_PER_SM or k < 2 * bk * MIN_SLICES_PER_SPLIT:
        assert splits == 1
    else:
        assert splits > 1 and split_k >= bk * MIN_SLICES_PER_SPLIT
        assert tiles * (splits - 1) < sms * SPLIT_BLOCKS_PER_SM  # no more ranges than the SMs ask for
    assert splits <= 65535


@pytest.mark.parametrize("m,n,k,per_sm,want", [(1, 50257, 1600, 4, 4), (16, 50257, 1600, 2, 4), (1, 22016, 4096, 4, 3),
                                               (16, 4096, 4096, 2, 8), (1, 4096, 4096, 4, 16), (16, 4800, 1600, 2, 6),
                                               (1, 1600, 1600, 4, 25), (3, 9, 341, 4, 6), (36, 93, 217, 1, 4),
                                               (64, 5, 100000, 1, 391), (1, 1, 1, 4, 1), (7, 3, 5, 2, 1)])
def test_the_skinny_plan_covers_k_in_ranges_a_block_stages_in_whole_waves(m, n, k, per_sm, want):
    from study.ops.sgemm_skinny_m import SKINNY_MIN_RANGE, skinny_plan, skinny_rows

    rows, cols, a_floats, sms = skinny_rows(m), 128, 8192, 132
    splits, split_k = skinny_plan(m, n, k, rows, cols, a_floats, per_sm, sms)
    assert split_k % 4 == 0 and (splits - 1) * split_k < k <= splits * split_k  # no empty range, none missing
    assert split_k == -(-(-(-k // splits)) // 4) * 4  # what the Triton twin recomputes from its grid
    assert rows * split_k <= a_floats  # A's slice fits the block's shared memory
    assert splits <= max(-(-k // (a_floats // rows)), -(-k // SKINNY_MIN_RANGE))
    # The count the model picks: 1×4096×4096 one wave of 16 × 32 blocks in 528 places (17, the first plan's,
    # made a second wave of 16); 16 rows at the 2 blocks an SM that fit: 16×4096×4096 one wave of 8 × 32 in
    # 264, 16×4800×1600 6 × 38; past a wave, whole waves (16×50257×1600: 4 × 393 = 1572, 5.95 waves of 264).
    assert splits == want


def test_the_skinny_rung_fits_its_rows_launches_columns_ranges_row_groups_and_refuses_large_m(fake_cuda):
    from study.catalog import implementation
    from study.ops.sgemm_skinny_m import skinny_plan, skinny_rows
    from study.problem import is_out_of_scope

    # ROWS: the smallest of 1–32 that holds M; 33–64 rows in groups of 32
    assert [skinny_rows(m) for m in (1, 2, 3, 5, 9, 16, 17, 33, 64)] == [1, 2, 4, 8, 16, 16, 32, 32, 32]
    impl = implementation("sgemm/v13_skinny_m/cuda")
    twin = implementation("sgemm/v13_skinny_m/triton")
    for check in (lambda s: impl.launcher.check(impl.params, s, FP32), lambda s: twin.target.check(s, FP32)):
        assert check({"M": 64, "N": 7, "K": 9}) is None
        reason = check({"M": 65, "N": 4096, "K": 4096})
        assert is_out_of_scope(reason) and "v13 is for M ≤ 64" in reason and "M=65" in reason
    for shape, rows in (({"M": 1, "N": 4096, "K": 4096}, 1), ({"M": 16, "N": 50257, "K": 1600}, 16),
                        ({"M": 40, "N": 300, "K": 7}, 32)):
        m, n, k = shape["M"], shape["N"], shape["K"]
        tensors, launch = fake_cuda.run(impl, SGEMM, shape, FP32)
        splits, split_k = skinny_plan(m, n, k, rows, 128, 8192, 2, 132)  # the fake driver's 2 blocks an SM (< 4)
        assert (launch.config["ROWS"], launch.config["rows"], launch.config["splits"]) == (rows, rows, splits)
        assert launch.config["blocks_per_sm"] == 2
        assert [c[0] for c in fake_cuda] == ["sgemm_v13_skinny_m"]  # the ranges summed in the same launch
        _, grid, block, args, smem = fake_cuda[0]
        assert grid == (-(-n // 128), splits, -(-m // rows)) and block == (256, 1, 1)
        assert smem == 4 * max(rows * split_k, 8 * 128)  # A's slice, or the eight warps' sums of a row
        assert [int(a) for a in args[3:10]] == [m, n, k, k, n, n, split_k]
        partial, column_done = args[10], args[11]
        assert partial.numel() == (splits * m * n if splits > 1 else 1)
        assert column_done.dtype == torch.int32 and not column_done.any()  # zero: the last block resets it
        assert column_done.numel() == (grid[0] * grid[2] if splits > 1 else 1)


@pytest.mark.parametrize("shape,kernels", [({"M": 5, "N": 7, "K": 300}, ["sgemm_v10_split_k_two_pass", "sgemm_v10_reduce_ranges"]),
                                           ({"M": 1024, "N": 1024, "K": 64}, ["sgemm_v10_split_k_two_pass"])])
def test_the_two_pass_split_k_runs_its_reduction_after_its_gemm_only_when_k_is_split(fake_cuda, shape, kernels):
    from study.backends import backend
    from study.catalog import implementation, ladder

    impl = implementation("sgemm/v10_split_k_two_pass/cuda")
    problem = ladder("sgemm").problem
    tensors = problem.make_inputs(shape, FP32, 0, "cpu")
    launch = backend("cuda").prepare(impl, problem, tensors, shape, FP32)
    launch.fn()
    assert [symbol for symbol, *_ in fake_cuda] == kernels
    gemm = fake_cuda[0]
    assert gemm[1][2] == launch.config["splits"] and len(gemm[3]) == 11  # (A, B, C, M, N, K, lda, ldb, ldc, split_k, partial)
    if len(kernels) == 2:  # (partial, C, M, N, ldc, splits): REDUCE_THREADS / REDUCE_GROUPS elements of C a block
        _, grid, block, args, _ = fake_cuda[1]
        assert args[0] is gemm[3][10] and args[1] is launch.out and int(args[5]) == launch.config["splits"] == 4
        cols = impl.params["REDUCE_THREADS"] // impl.params["REDUCE_GROUPS"]
        assert grid == (-(-5 * 7 // cols), 1, 1) and block == (impl.params["REDUCE_THREADS"], 1, 1)


def test_the_loader_compiles_a_file_once_for_all_its_kernels(monkeypatch, tmp_path):
    """sgemm v10 takes two kernels (partials, reduction) from one file and config: one compile."""
    import sys
    import types

    import study.backends.cuda as cuda

    built = []

    class Module:
        def __init__(self, code, options):
            built.append(options)

        def get_function(self, symbol):
            return types.SimpleNamespace(symbol=symbol, max_dynamic_shared_size_bytes=0)

    fake = types.ModuleType("cupy")
    fake.RawModule = Module
    fake.cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(id=0, compute_capability="90"))
    compiler = types.ModuleType("cupy.cuda.compiler")
    compiler.CompileException = RuntimeError
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setitem(sys.modules, "cupy.cuda", fake.cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.compiler", compiler)
    monkeypatch.setattr(cuda, "_MODULES", {})
    monkeypatch.setattr(cuda, "_FUNCTIONS", {})
    path = tmp_path / "two.cu"
    path.write_text('extern "C" __global__ void a() {}\nextern "C" __global__ void b() {}\n')
    fa, fb = (cuda.load_function(path, s, {"THREADS": 32}) for s in ("a", "b"))
    assert (fa.symbol, fb.symbol) == ("a", "b") and len(built) == 1
    assert cuda.load_function(path, "a", {"THREADS": 32}) is fa and len(built) == 1  # cached
    cuda.load_function(path, "a", {"THREADS": 64})  # another config is another module
    assert len(built) == 2


def test_the_wgmma_3xtf32_rung_reads_tma_rows_and_fits_its_shared_memory(fake_cuda):
    """sgemm v11: A and B by TMA (in place where K and N are multiples of 4 floats, which is what the
    edge-shape sweep rounds up to; staged otherwise, tests/test_tma_staging.py), every point's stages
    within the opt-in limit and 1024-byte aligned, a persistent grid of at most one block per SM, and
    its tensor maps."""
    from study.backends import backend
    from study.catalog import implementation
    from study.ops.sgemm_wgmma import TMA_BOX, wgmma_shared_bytes
    from study.problem import sm_count

    impl = implementation("sgemm/v11_3xtf32_wgmma/cuda")
    assert impl.multiples == {"N": 4, "K": 4} and implementation("sgemm/v8_3xtf32/cuda").multiples == {}
    assert impl.launcher.check is None  # no shape refused: what TMA cannot read is staged
    for point in impl.space:
        stage = 2 * point["BM"] * TMA_BOX * 4 + point["BK"] * point["BN"] * 4
        assert stage % 1024 == 0 and wgmma_shared_bytes(point) <= 227 * 1024, point
    shape = {"M": 1000, "N": 1500, "K": 1700}
    tensors = SGEMM.make_inputs(shape, FP32, 0, "cpu")
    launch = backend("cuda").prepare(impl, SGEMM, tensors, shape, FP32)
    launch.fn()
    (symbol, grid, block, args, smem), = fake_cuda
    tiles = -(-1000 // impl.params["BM"]) * -(-1500 // impl.params["BN"])
    assert symbol == "sgemm_v11_3xtf32_wgmma" and grid == (min(tiles, sm_count(launch.out)), 1, 1)
    assert block == (impl.params["THREADS"], 1, 1) and smem == wgmma_shared_bytes(impl.params)
    # A's ResidueMaps with its one map (rows of 1,700 floats: TMA reads them), B's map
    assert args[0] == ("residue maps", (("map", "A", tensors["A"].data_ptr()),), (0,) * 8)
    assert args[1][:2] == ("map", "B") and args[2] is launch.out and "in_place" not in launch.config
    assert [int(a) for a in args[3:]] == [1000, 1500, 1700, 1500]


def test_the_split_wgmma_3xtf32_rung_fits_its_tile_height_to_m_and_splits_few_tiles(fake_cuda):
    """sgemm v12: the declared config (FIT=1) takes the BM of the space whose plan fitted_height's model
    finishes first (the smallest that covers M ≤ 64: A's rows are wgmma's N), a space point keeps its own;
    hgemm v9's plan from the fitted tile count; v11's kernel over tiles × splits units, then hgemm's plane
    sum (sgemm_v12_reduce_splits) when split; the plan and BM recorded."""
    from study.catalog import implementation
    from study.ops.hgemm import split_plan
    from study.ops.sgemm_wgmma import TMA_BOX, fitted_height, wgmma_shared_bytes
    from study.problem import sm_count

    impl = implementation("sgemm/v12_3xtf32_split_k/cuda")

    def height(m, n=4096, k=4096):
        return fitted_height({"M": m, "N": n, "K": k}, {16, 32, 64, 128}, impl.params, 132)

    # At decode-sized M the smallest height that covers M; 128 rows where tiles are many.
    assert [height(m) for m in (1, 16, 17, 32, 33, 64, 65, 4096)] == [16, 16, 32, 32, 64, 64, 128, 128]
    assert height(8192, 8192, 8192) == 128
    # The c86 trials' order: 32 tiles of 128 rows over a K of 7 slices take 32 rows (112 tiles); near a
    # round of units at 128 rows, 128; 8 tiles of 4 slices, 16 rows.
    assert [height(*s) for s in ((222, 2002, 204), (1045, 20, 3741), (4517, 62, 2411), (166, 419, 98))] == \
        [32, 128, 128, 16]
    assert impl.multiples == {"N": 4, "K": 4} and impl.params["FIT"] == 1
    assert {p["BM"] for p in impl.space} == {16, 32, 64, 128} and len(impl.space) <= 10
    assert all(p["FIT"] == 0 for p in impl.space if p != impl.params)
    for point in impl.space:
        stage = 2 * point["BM"] * TMA_BOX * 4 + point["BK"] * point["BN"] * 4
        assert stage % 1024 == 0 and wgmma_shared_bytes(point) <= 227 * 1024, point
        # A in place: eight residue boxes of BM/8 rows of 36 floats a stage, each on 128 bytes; the stages that fit
        raw = 8 * -(-point["BM"] // 8 * 144 // 128) * 128
        ring, rest = divmod(wgmma_shared_bytes({**point, "A_IN_PLACE": 1}) - 1024, stage + raw + 24)
        assert rest == 0 and 2 <= ring <= point["STAGES"] and (stage + raw) % 1024 == 0, point
        assert (ring + 1) * (stage + raw + 24) + 1024 > 227 * 1024 or ring == point["STAGES"], point
    # (shape, config overrides, BM it runs, splits): a decode row, 16 rows, one tile of a long K, a
    # product of enough tiles (v11's path: one split, no second kernel), a space point that keeps 128 rows
    cases = (({"M": 1, "N": 4096, "K": 4096}, {}, 16, 4), ({"M": 16, "N": 4096, "K": 11008}, {}, 16, 4),
             ({"M": 64, "N": 64, "K": 65536}, {}, 64, 128), ({"M": 4096, "N": 4096, "K": 4096}, {}, 128, 1),
             ({"M": 1, "N": 4096, "K": 4096}, {"FIT": 0, "MIN_SLICES": 8}, 128, 4))
    for shape, override, bm, splits in cases:
        config = {**impl.params, **override}
        tensors, launch = fake_cuda.run(impl, SGEMM, shape, FP32, config=config)
        m, n, k = shape["M"], shape["N"], shape["K"]
        plan = split_plan(m, n, k, bm, 128, 32, config["MIN_SLICES"], sm_count(launch.out))
        assert plan[0] == splits and launch.config["splits"] == splits and launch.config["BM"] == bm, shape
        assert launch.config["slices_per_split"] == plan[1] and "staged" not in launch.config
        assert [c[0] for c in fake_cuda] == ["sgemm_v12_3xtf32_split_k"] + ["sgemm_v12_reduce_splits"] * (splits > 1)
        _, grid, block, args, smem = fake_cuda[0]
        units = -(-m // bm) * -(-n // 128) * splits
        assert grid == (min(units, sm_count(launch.out)), 1, 1) and block == (384, 1, 1)
        assert smem == wgmma_shared_bytes({**config, "BM": bm})
        assert args[0] == ("residue maps", (("map", "A", tensors["A"].data_ptr()),), (0,) * 8)
        assert args[1][:2] == ("map", "B") and args[2] is launch.out
        assert [int(a) for a in args[3:9]] == [m, n, k, launch.out.stride(0), splits, plan[1]]
        assert int(args[10]) == n  # the planes' rows: N rounded up to 4 floats
        if splits > 1:
            _, rgrid, rblock, rargs, _ = fake_cuda[1]
            assert args[9].numel() == splits * m * n and rargs[0] is args[9] and rargs[1] is launch.out
            assert [int(a) for a in rargs[2:]] == [m, n, n, launch.out.stride(0), splits]

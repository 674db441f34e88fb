"""The bgemm op without a GPU at its half precisions: HGEMM's gate entry by entry (data, η, tolerance),
the tensor-core rung's launch (3-D tensor maps, a persistent grid over the whole batch), TMA's
refusals, and the precisions each rung takes."""

import pytest
import torch


from study.catalog import implementation, ladder
from study.ops import hgemm
from study.ops.gemm_common import persistent_smem
from study.precision import BF16_TENSOR, FP16_TENSOR, FP32

BGEMM = ladder("bgemm").problem
HALF = [FP16_TENSOR, BF16_TENSOR]
SHAPE = {"batch": 3, "M": 72, "N": 136, "K": 40}
TENSOR_RUNG = "v1_batched_wgmma"  # hgemm v8's tile over the batch: TMA, so K and N multiples of 8


@pytest.mark.parametrize("precision", HALF, ids=lambda p: p.name)
def test_half_inputs_are_sgemm_draws_rounded_and_the_output_is_poisoned(precision):
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[precision.name]
    t = BGEMM.make_inputs(SHAPE, precision, 5, "cpu")
    full = BGEMM.make_inputs(SHAPE, FP32, 5, "cpu")
    assert t["A"].dtype == t["B"].dtype == dtype and t["A"].shape == (3, 72, 40) and t["B"].shape == (3, 40, 136)
    assert torch.equal(t["A"], full["A"].to(dtype)) and torch.equal(t["B"], full["B"].to(dtype))
    out = BGEMM.make_output(SHAPE, precision, "cpu")
    assert out.dtype == dtype and out.shape == (3, 72, 136) and out.isnan().all()
    s = BGEMM.structured_inputs(SHAPE, precision, "cpu")
    assert s["A"].dtype == dtype and set(s["A"].unique().tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0}


@pytest.mark.parametrize("precision", HALF, ids=lambda p: p.name)
def test_the_half_gate_is_hgemms_entry_by_entry(precision):
    assert BGEMM.tolerance[precision.name] == hgemm.TOLERANCE[precision.name]
    assert BGEMM.tolerance["fp32"] == 2e-6 and "η" in BGEMM.metric(precision) and "η" not in BGEMM.metric(FP32)
    t = BGEMM.make_inputs(SHAPE, precision, 1, "cpu")
    ref, scale = BGEMM.reference(t, precision)
    exact = t["A"].double() @ t["B"].double()
    assert torch.equal(ref, exact)
    assert torch.allclose(scale, t["A"].double().abs() @ t["B"].double().abs() + hgemm.SMALLEST_NORMAL[precision.name])
    good = (t["A"].float() @ t["B"].float()).to(t["A"].dtype)  # FP32 accumulation, one rounding
    assert BGEMM.verify(good, ref, scale, precision).ok
    swapped = good.clone()
    swapped[[0, 1]] = good[[1, 0]]  # two entries' products exchanged
    assert not BGEMM.verify(swapped, ref, scale, precision).ok
    short = (t["A"][..., :32].float() @ t["B"][:, :32].float()).to(t["A"].dtype)  # the K tail (8 of 40) dropped
    assert not BGEMM.verify(short, ref, scale, precision).ok


def test_each_rung_takes_the_precisions_of_its_unit():
    assert implementation("bgemm/v0_batched_tiles/cuda").precisions == ("fp32",)
    assert implementation("bgemm/v0_batched_tiles/triton").precisions == ("fp32", "tf32")
    for backend in ("cuda", "triton"):
        assert implementation(f"bgemm/{TENSOR_RUNG}/{backend}").precisions == ("fp16", "bf16")
    assert {p.name for p in BGEMM.precisions} == {"fp32", "tf32", "fp16", "bf16"}


def test_the_tensor_core_rung_takes_any_k_and_n_and_knows_the_entries_tma_cannot_read():
    from study.backends.tma import alignment_reason

    impl = implementation(f"bgemm/{TENSOR_RUNG}/cuda")
    twin = implementation(f"bgemm/{TENSOR_RUNG}/triton").target
    assert impl.launcher.check is None and twin.check is None  # K or N no multiple of 8: staged (test_tma_staging)
    v0 = implementation("bgemm/v0_batched_tiles/cuda")
    assert impl.multiples == {"N": 8, "K": 8} and v0.multiples == {}
    # v0 keeps its grid.y check; the persistent rung has none
    tall = {"batch": 1, "M": 128 * 65536, "N": 8, "K": 8}
    assert "grid.y" in v0.launcher.check({"BM": 128}, tall, FP32)
    assert alignment_reason("A", torch.empty(3, 8, 8, dtype=torch.float16)) is None
    odd = torch.empty(3, 8 * 8 + 4, dtype=torch.float16)[:, :64].view(3, 8, 8)  # entries 136 bytes apart
    assert "batch entries are 136 bytes apart" in alignment_reason("A", odd)


def test_the_tensor_core_rung_walks_the_batch_on_one_block_per_sm(fake_cuda):
    impl = implementation(f"bgemm/{TENSOR_RUNG}/cuda")
    # FIT_N: entries of at most 64 columns take the space's 128 × 64 point with 6 stages; entries of one or two K slices
    # and N ≥ 256, with a 256-wide tile for every SM, the 128 × 256 point with 4 stages; others the declared tile
    for shape, tiles, bn in ((SHAPE, 3 * 1 * 2, 128), ({"batch": 200, "M": 40, "N": 64, "K": 16}, 200, 64),
                             ({"batch": 25, "M": 1024, "N": 64, "K": 1024}, 25 * 8, 64),
                             ({"batch": 25, "M": 1024, "N": 72, "K": 1024}, 25 * 8, 128),
                             ({"batch": 132, "M": 100, "N": 256, "K": 128}, 132, 256),
                             ({"batch": 132, "M": 100, "N": 256, "K": 136}, 132 * 2, 128),  # three slices
                             ({"batch": 131, "M": 100, "N": 256, "K": 64}, 131 * 2, 128)):  # an SM without a wide tile
        tensors, launch = fake_cuda.run(impl, BGEMM, shape, FP16_TENSOR)
        [(symbol, grid, block, args, smem)] = fake_cuda
        assert symbol == "bgemm_v1_batched_wgmma" and block == (384, 1, 1)
        assert args[:3] == (("map", "A", tensors["A"].data_ptr()), ("map", "B", tensors["B"].data_ptr()),
                            ("map", "C", launch.out.data_ptr()))
        assert [int(a) for a in args[3:]] == [shape["batch"], shape["M"], shape["N"], shape["K"]]
        assert grid == (min(tiles, 132), 1, 1) and launch.config["blocks"] == grid[0]
        assert launch.config["BN"] == bn and launch.config["STAGES"] == (6 if bn == 64 else 4)
        assert smem == persistent_smem({**impl.params, "BN": bn, "STAGES": launch.config["STAGES"]}) > 0
        assert {(64, 6), (256, 4)} <= {(p["BN"], p["STAGES"]) for p in impl.space}  # FIT_N's points are tuned and tested
    twin = implementation(f"bgemm/{TENSOR_RUNG}/triton")
    assert twin.params["FIT_N"] == 1 and impl.params["FIT_N"] == 1
    for point in impl.space:  # the H100/H200 opt-in limit per block
        assert persistent_smem(point) <= 227 * 1024, point


def test_the_split_rung_runs_hgemm_v12_on_each_entry_planned_over_the_batch(fake_cuda):
    from study.ops.hgemm_mma_sync import split_mma_plan

    impl = implementation("bgemm/v2_batched_split_k/cuda")
    # (shape, tile, splits): decode attention's few rows against a long context split K, on 32 × 32 tiles (half the
    # area of 64 rows, as many tiles as an entry's share of the SMs); a batch of enough tiles does not split, and
    # keeps the halved tile (32 × 32 would take more than a wave)
    for shape, tile, splits in (({"batch": 32, "M": 16, "N": 128, "K": 4096}, (32, 32), 2),
                                ({"batch": 25, "M": 1, "N": 64, "K": 1024}, (32, 32), 5),
                                ({"batch": 32, "M": 1, "N": 4096, "K": 128}, (64, 128), 1),
                                ({"batch": 32, "M": 64, "N": 4096, "K": 128}, (64, 128), 1)):
        tensors, launch = fake_cuda.run(impl, BGEMM, shape, FP16_TENSOR)
        [(symbol, grid, block, args, smem)] = fake_cuda  # the ranges' sum is the last block's: one kernel
        batch, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
        assert symbol == "bgemm_v2_batched_split_k" and block == (128, 1, 1)
        assert (launch.config["BM"], launch.config["BN"]) == tile and launch.config["splits"] == splits
        assert splits == split_mma_plan(m, n, k, *tile, 32, 4, 132, batch)[0]
        assert grid == (-(-n // tile[1]), -(-m // tile[0]), batch * splits)
        assert [int(a) for a in args[3:11]] == [m, n, k, k, n, n, splits, launch.config["split_k"]]
        ldp = int(args[12])
        assert ldp == -(-n // 4) * 4 and args[11].numel() == (batch * splits * m * ldp if splits > 1 else 1)
        assert args[13].numel() == batch * grid[0] * grid[1] and not args[13].any()


def test_the_split_twin_sums_each_entrys_ranges_in_order():
    from study.backends import backend
    from study.problem import check_output

    impl = implementation("bgemm/v2_batched_split_k/triton")
    shape = {"batch": 3, "M": 70, "N": 70, "K": 600}  # nine 32 × 32 tiles an entry (FIT's quarter), 19 slices of 32
    tensors = BGEMM.make_inputs(shape, FP16_TENSOR, 2, "cpu")
    ref, scale = BGEMM.reference(tensors, FP16_TENSOR)
    for min_slices, splits in ((4, 4), (32, 1)):
        launch = backend("triton").prepare(impl, BGEMM, tensors, shape, FP16_TENSOR,
                                           config={**impl.params, "MIN_SLICES": min_slices})
        assert (launch.config["BM"], launch.config["splits"]) == (32, splits), launch.config
        verdict = check_output(launch.fn, launch.out, BGEMM, ref, scale, FP16_TENSOR)
        assert verdict.ok, (min_slices, verdict.message)


def test_the_skinny_rung_runs_hgemm_v10_over_the_batch_planned_per_entry(fake_cuda):
    from study.ops.gemm_common import split_plan

    impl = implementation("bgemm/v3_batched_skinny_m/cuda")
    # (shape, tokens, BN, splits): the attention suites' decode steps — 16 and 1 tokens split K over the SMs an
    # entry's share (132 // 32 = 4, 132 // 25 = 5); FIT_BN takes the 64-wide tile where an entry's tiles of 64 fit
    # that share (two of 128 columns, one of 64); 32 entries of 4096 columns keep the declared 128 and do not split
    for shape, tokens, bn, splits in (({"batch": 32, "M": 16, "N": 128, "K": 4096}, 16, 64, 2),
                                      ({"batch": 25, "M": 1, "N": 64, "K": 1024}, 8, 64, 4),
                                      ({"batch": 32, "M": 1, "N": 4096, "K": 128}, 8, 128, 1)):
        tensors, launch = fake_cuda.run(impl, BGEMM, shape, FP16_TENSOR)
        [(symbol, grid, block, args, smem)] = fake_cuda  # the tiles' planes are summed by their last unit: one kernel
        batch, m, n, k = shape["batch"], shape["M"], shape["N"], shape["K"]
        assert symbol == "bgemm_v3_batched_skinny_m" and block == (32 + 2 * bn, 1, 1) and smem > 0
        assert launch.config["tokens"] == tokens and launch.config["splits"] == splits and launch.config["BN"] == bn
        assert (splits, launch.config["slices_per_split"]) == split_plan(m, n, k, tokens, bn, 64, 4, 132 // batch)
        tiles = -(-n // bn)
        assert grid == (min(batch * tiles * splits, 132), 1, 1)
        assert args[:2] == (("map", "A", tensors["A"].data_ptr()), ("residue maps", (("map", "B",
                                                                                      tensors["B"].data_ptr()),), (0,) * 8))
        assert [int(a) for a in args[3:11]] == [batch, m, n, k, n, m * n, splits, launch.config["slices_per_split"]]
        ldp = int(args[12])
        assert ldp == -(-n // 4) * 4 and args[11].numel() == (batch * splits * m * ldp if splits > 1 else 1)
        assert args[13].numel() == (batch * tiles if splits > 1 else 1) and not args[13].any()
    assert "v3 is for M ≤ 64" in impl.launcher.check(impl.params, {"batch": 2, "M": 65, "N": 64, "K": 64}, FP16_TENSOR)
    assert impl.launcher.check(impl.params, {"batch": 2, "M": 64, "N": 64, "K": 64}, FP16_TENSOR) is None


def test_the_tensor_core_twin_takes_the_fitted_tile_where_its_rung_does_and_records_it():
    from study.ops.bgemm import persistent_twin_launch

    seen = []

    class Kernel:  # records the meta-parameters of each launch
        def __getitem__(self, grid):
            return lambda *args, **meta: seen.append(meta)

    twin = implementation(f"bgemm/{TENSOR_RUNG}/triton")
    for batch, n, k, bn, stages in ((2, 64, 16, 64, 6), (2, 72, 16, 128, 4), (132, 256, 16, 256, 4),
                                    (132, 256, 136, 128, 4)):
        shape = {"batch": batch, "M": 40, "N": n, "K": k}
        tensors = BGEMM.make_inputs(shape, FP16_TENSOR, 0, "cpu")
        out = torch.empty(batch, 40, n, dtype=torch.float16)
        fn = persistent_twin_launch(Kernel(), tensors, out, shape, dict(twin.params), FP16_TENSOR)
        fn()
        assert (seen[-1]["BN"], seen[-1]["num_stages"]) == (bn, stages)
        assert fn.facts.get("BN", twin.params["BN"]) == bn  # recorded over the declared config

"""Every Triton twin, with the config that mirrors its CUDA rung, against the float64
reference on small awkward shapes at every precision it can run here. On CPU this runs in
Triton's interpreter (which skips BF16, with the reason)."""

import os

import pytest

from op_shapes import shapes_of
from study.backends import backend
from study.catalog import implementations, ladder
from study.problem import check_output, is_out_of_scope

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
# sgemm's 5×7×300: v5 splits K in four ranges.
SHAPES = {"sgemm": [(1, 1, 1), (17, 33, 65), (33, 17, 20), (5, 7, 300)], "sgemv": [(1, 1), (3, 4097), (17, 300), (33, 8), (700, 13)],
          # bgemm: 16-byte rows for the TMA twin (v1): tails in M, N and K inside each entry, three K slices;
          # 3×5×72×704: v3's skinny M over a batch with K in two ranges (each entry's planes and counts).
          "bgemm": [(1, 1, 1, 1), (3, 17, 33, 20), (2, 33, 17, 65), (3, 72, 136, 40), (2, 40, 264, 136),
                    (3, 5, 72, 704)],
          "softmax": [(1, 1), (3, 3), (5, 1031), (2, 4096)],
          # hgemm: tails past every tile; 72×136×40 and 40×264×136 have 16-byte rows (the CUDA rungs' vector
          # paths, and what the TMA twins read in place; the others they stage), the latter three 64-wide K slices.
          # 1×72×520, 16×136×200 and 5×264×72: skinny M (v10's 8-, 16- and 8-token widths; the first splits K).
          "hgemm": [(1, 1, 1), (17, 33, 65), (33, 17, 20), (72, 136, 40), (40, 264, 136), (1, 72, 520), (16, 136, 200),
                    (5, 264, 72)],
          # gemm_bias_relu: the same tails; 72×136×40 with 16-byte rows runs the TMA twins (v2, v0's FP16 GEMM);
          # 1×72×520 and 16×136×200 v4's skinny M (the first splits K: the bias in the reduction).
          "gemm_bias_relu": [(1, 1, 1), (33, 17, 20), (72, 136, 40), (1, 72, 520), (16, 136, 200)]}
TWINS = [i for i in implementations() if i.backend == "triton"]
TMA_RUNGS = [r.key for r in ladder("hgemm").rungs if r.multiples]  # hgemm's rungs whose operands arrive by TMA
CASES = [(impl, shape, p) for impl in TWINS for shape in shapes_of(SHAPES, impl.op)
         for p in ladder(impl.op).problem.precisions if p.name in impl.precisions]


@pytest.mark.parametrize("impl,shape,precision", CASES,
                         ids=lambda v: getattr(v, "name", None) if not isinstance(v, tuple) else "x".join(map(str, v)))
def test_twin_matches_reference(impl, shape, precision):
    problem = ladder(impl.op).problem
    shape = dict(zip(problem.axes, shape))
    reason = backend("triton").check(impl, problem, shape, precision)
    if is_out_of_scope(reason):  # hgemm v10 at M > 64: v8/v9 take it
        pytest.skip(reason)
    if reason:  # only the interpreter refuses anything here (BF16); the TMA twins stage what TMA cannot read
        assert DEVICE == "cpu" and "interpreter" in reason, reason
        pytest.skip(reason)
    tensors = problem.make_inputs(shape, precision, seed=sum(shape.values()), device=DEVICE)
    ref, scale = problem.reference(tensors, precision)
    launch = backend("triton").prepare(impl, problem, tensors, shape, precision)
    verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("impl", TWINS, ids=lambda i: i.name)
def test_twin_space_holds_its_fixed_config_and_launch_keys(impl):
    assert dict(impl.params) in [dict(c) for c in impl.space]
    assert len({tuple(sorted(c.items())) for c in impl.space}) == len(impl.space)
    for point in impl.space:
        assert {"num_warps", "num_stages"} <= set(point)
        assert set(point) == set(impl.params)


def _mirror(op, cuda, tw):
    """Mismatches between a CUDA rung's config and its twin's: threads = warps × 32, the same
    block tile, the same rows per block and loads in flight, a second stage where CUDA double-buffers."""
    out = []
    if tw["num_warps"] * 32 != cuda["THREADS"]:
        out.append(f"warps {tw['num_warps']} vs THREADS {cuda['THREADS']}")
    for key in ("BM", "BN", "BK", "UNROLL", "GROUP"):
        if key in cuda and key in tw and cuda[key] != tw[key]:
            out.append(f"{key} {tw[key]} vs {cuda[key]}")
    if cuda.get("GROUP", 1) > 1 and "GROUP" not in tw:
        out.append(f"GROUP {cuda['GROUP']} has no twin")
    if op == "sgemv" and "TILE_VECS" in cuda:  # v4: a tile of TILE_VECS 16-byte vectors a thread (FP32 elements)
        if tw["TILE"] != cuda["THREADS"] * cuda["TILE_VECS"] * 4:
            out.append(f"TILE {tw['TILE']} vs {cuda['THREADS'] * cuda['TILE_VECS'] * 4}")
    elif op == "sgemv":
        rows = cuda["THREADS"] // cuda["LANES"] * cuda.get("WARP_ROWS", 1)  # rows per block, as the launch reads it
        if tw.get("ROWS", tw.get("BM")) != rows:
            out.append(f"{tw.get('ROWS', tw.get('BM'))} vs {rows} rows per block")
    return out


# What a twin does not mirror, and why (a stated exception, not a silent one).
UNMIRRORED = {"sgemm/v9_split_k_multistage": ["GROUP 8 has no twin"],  # v5's split twin keeps the launch order
              "sgemm/v10_split_k_two_pass": ["GROUP 8 has no twin"],  # likewise
              # Triton 3.6 has no warp specialisation on Hopper: the twin's 8 warps are the two consumer
              # warpgroups, and the producer warpgroup has no counterpart.
              "hgemm/v8_warp_specialized": ["warps 8 vs THREADS 384"],
              "hgemm/v9_split_k": ["warps 8 vs THREADS 384"],  # v8's twin over split-K units
              "hgemm/v11_cluster_multicast": ["warps 8 vs THREADS 384"],  # v8's twin over pairs of tiles
              # v10: the twin's 8 warps are the two consumer warpgroups; the producer warp has no counterpart
              "hgemm/v10_skinny_m": ["warps 8 vs THREADS 288"],
              "gemm_bias_relu/v2_fused_wgmma": ["warps 8 vs THREADS 384"],  # v8's twin with an epilogue
              "gemm_bias_relu/v3_split_k": ["warps 8 vs THREADS 384"],  # v9's twin with an epilogue
              "gemm_bias_relu/v4_skinny_m": ["warps 8 vs THREADS 288"],  # v10's twin with an epilogue
              "gemm_bias_relu/v5_cluster_multicast": ["warps 8 vs THREADS 384"],  # v11's twin with an epilogue
              "bgemm/v1_batched_wgmma": ["warps 8 vs THREADS 384"],  # v8's twin over a batch
              "bgemm/v3_batched_skinny_m": ["warps 8 vs THREADS 288"],  # v10's twin over a batch
              # v11: a producer warpgroup (TMA and the split of A) and two consumers, as v8's
              "sgemm/v11_3xtf32_wgmma": ["warps 8 vs THREADS 384"],
              "sgemm/v12_3xtf32_split_k": ["warps 8 vs THREADS 384"],  # v11's twin over split-K units
              # v10's twin is v6's, config and all: where its slices exchange, its plan sets the warps (8 or 16)
              "softmax/v10_team_ring": ["warps 32 vs THREADS 512"]}
HGEMM_STAGES = {"v0_naive": 1, "v1_coalesced": 1, "v2_smem_tiling": 1, "v3_register_tile": 1, "v4_bank_conflicts": 1,
                "v5_double_buffer": 2}


def test_twins_mirror_their_cuda_rungs():
    impls = implementations()
    for cuda in (i for i in impls if i.backend == "cuda"):
        tw = next(i for i in impls if i.backend == "triton" and i.op == cuda.op and i.rung == cuda.rung)
        assert _mirror(cuda.op, cuda.params, tw.params) == UNMIRRORED.get(f"{cuda.op}/{cuda.rung}", []), cuda.name
        if cuda.op == "sgemm":  # v5 runs v4's double-buffered tile over each K range; v6 fixes two stages
            double = ("v4_double_buffer", "v5_split_k", "v6_warp_tile")
            assert tw.params["num_stages"] == cuda.params.get("STAGES", 2 if cuda.rung in double else 1), cuda.name
        if cuda.op == "hgemm":  # one shared buffer up to v4, two in v5, the rung's STAGES from v6
            assert tw.params["num_stages"] == cuda.params.get("STAGES", HGEMM_STAGES.get(cuda.rung)), cuda.name


def test_the_mirror_check_can_fail():
    assert _mirror("sgemv", {"THREADS": 256, "LANES": 32, "WARP_ROWS": 2}, {"ROWS": 8, "num_warps": 8})
    assert _mirror("sgemv", {"THREADS": 256, "LANES": 1}, {"BM": 8, "num_warps": 8})
    assert _mirror("sgemv", {"THREADS": 256, "LANES": 32, "TILE_VECS": 8}, {"TILE": 4096, "num_warps": 8})
    assert _mirror("sgemm", {"THREADS": 256, "BM": 64}, {"BM": 128, "num_warps": 8})
    assert _mirror("sgemm", {"THREADS": 256, "GROUP": 8}, {"num_warps": 8})


@pytest.mark.parametrize("rung", ["v5_split_k", "v10_split_k_two_pass"])
def test_the_split_k_twins_split_reduce_in_order_and_run_again(rung):
    # 5×7×300 on one tile: four K ranges of 80, partials, then v5's last program's ordered sum (the
    # counter it resets lets a second launch, and a third, give the same bits) or v10's second kernel.
    from study.ops.sgemm import split_k_plan
    from study.catalog import implementation

    impl = implementation(f"sgemm/{rung}/triton")
    problem = ladder("sgemm").problem
    assert split_k_plan(5, 7, 300, impl.params["BM"], impl.params["BN"], 16, 132) == (4, 80)
    _correct_and_the_same_again(impl, problem, {"M": 5, "N": 7, "K": 300}, problem.precisions[0], seed=3)


@pytest.mark.parametrize("name", ["hgemm/v11_cluster_multicast", "gemm_bias_relu/v5_cluster_multicast"])
@pytest.mark.parametrize("m", [300, 256])
def test_the_pair_twins_compute_both_tiles_of_each_pair(name, m):
    # hgemm v11's twin and the fused op's on it: 3 block rows of 128 (the second pair's lower tile past M) or 2,
    # two block columns of 256 (264 wide): programs 2c and 2c + 1 split each pair; the SHAPES above are one
    # block row each.
    from study.catalog import implementation

    impl = implementation(f"{name}/triton")
    problem = ladder(name.split("/")[0]).problem
    precision = problem.precision("fp16")
    _correct_and_the_same_again(impl, problem, {"M": m, "N": 264, "K": 72}, precision, seed=m)


def _correct_and_the_same_again(impl, problem, shape, precision, seed):
    """One launch of a twin passes the gate; two more, each over a poisoned output, give the same bits."""
    import torch

    tensors = problem.make_inputs(shape, precision, seed=seed, device=DEVICE)
    ref, scale = problem.reference(tensors, precision)
    launch = backend("triton").prepare(impl, problem, tensors, shape, precision)
    launch.fn()
    first = launch.out.clone()
    verdict = problem.verify(first, ref, scale, precision)
    assert verdict.ok, verdict.message
    for _ in range(2):
        launch.out.fill_(float("nan"))
        launch.fn()
        assert torch.equal(launch.out, first)


def test_the_split_n_twin_reduces_many_slices_in_groups_and_runs_again():
    # 2×12000 FP32: 19 slices of 5 loads a lane (at least MIN_SLICE_LOADS), more than one group of 16 and no
    # multiple of it; the last program's grouped sum gives the same bits on every launch.
    from study.catalog import implementation
    from study.ops.sgemv import split_plan

    impl = implementation("sgemv/v3_split_n/triton")
    problem = ladder("sgemv").problem
    assert split_plan(2, 12000, 4, 132) == (19, 640) and split_plan(1, 2**20, 4, 132) == (2048, 512)
    _correct_and_the_same_again(impl, problem, {"M": 2, "N": 12000}, problem.precision("fp32"), seed=5)


def test_the_split_wgmma_3xtf32_twin_fits_its_height_splits_and_sums_in_order():
    # sgemm v12's twin: 17×33×600 fits BM 16 (FIT=1: two tiles of 16 rows, each over four ranges of 5 of its
    # 19 slices of 32, finish before one of 32 rows; hgemm v9's plan), then hgemm's ordered sum; a space point
    # keeps its BM (32 rows, MIN_SLICES 2: seven ranges of 3); a second launch gives the same bits; under
    # autotune, each config's partials are summed in its timed call (hgemm's post_hook).
    import torch

    from study.catalog import implementation
    from study.ops import hgemm
    from study.problem import sm_count

    impl = implementation("sgemm/v12_3xtf32_split_k/triton")
    assert impl.target.post_hook is hgemm.reduce_after_tuned_partials
    problem = ladder("sgemm").problem
    shape = {"M": 17, "N": 33, "K": 600}
    precision = problem.precisions[0]
    tensors = problem.make_inputs(shape, precision, seed=5, device=DEVICE)
    ref, scale = problem.reference(tensors, precision)
    point = next(p for p in impl.space if p["BM"] == 32 and p["MIN_SLICES"] == 2)
    for config, bm, splits in ((impl.params, 16, 4), (point, 32, 7)):
        launch = backend("triton").prepare(impl, problem, tensors, shape, precision, config=dict(config))
        assert hgemm.split_plan(17, 33, 600, bm, 128, 32, config["MIN_SLICES"], sm_count(launch.out))[0] == splits
        assert (launch.config["BM"], launch.config["splits"]) == (bm, splits)
        launch.fn()
        first = launch.out.clone()
        assert problem.verify(first, ref, scale, precision).ok, config
        launch.out.fill_(float("nan"))
        launch.fn()
        assert torch.equal(launch.out, first)


def test_descriptor_twins_autotune_with_the_pre_hook_that_sets_their_boxes():
    from study.backends.triton_launch import _autotuned
    from study.catalog import implementation
    from triton_kernels import hgemm as tk

    for rung in TMA_RUNGS:
        impl = implementation(f"hgemm/{rung}/triton")
        tuner = _autotuned(impl.target, ladder("hgemm").problem)
        assert len(tuner.configs) == len(impl.space)
        hook = tk.skinny_blocks if rung == "v10_skinny_m" else tk.descriptor_blocks  # v10: TOKENS rows of A
        assert all(c.pre_hook is hook for c in tuner.configs), rung

    class Descriptor:
        block_shape = None

        def __init__(self, rank):
            self.shape = [8] * rank

    nargs = {"a_desc": Descriptor(2), "b_desc": Descriptor(2), "BM": 128, "BN": 256, "BK": 64}
    tk.descriptor_blocks(nargs)
    assert nargs["a_desc"].block_shape == [128, 64] and nargs["b_desc"].block_shape == [64, 256]
    batched = {"a_desc": Descriptor(3), "b_desc": Descriptor(3), "BM": 128, "BN": 64, "BK": 64}  # bgemm's: one entry
    tk.descriptor_blocks(batched)
    assert batched["a_desc"].block_shape == [1, 128, 64] and batched["b_desc"].block_shape == [1, 64, 64]
    skinny = {"a_desc": Descriptor(2), "b_desc": Descriptor(2), "TOKENS": 16, "BN": 128, "BK": 64}
    tk.skinny_blocks(skinny)
    assert skinny["a_desc"].block_shape == [16, 64] and skinny["b_desc"].block_shape == [64, 128]


def test_the_two_pass_twin_is_tuned_with_its_reduction_inside_each_timed_call():
    # triton.autotune times the partials kernel; its post_hook adds the partials into C, as the rung's
    # closure does after the tuned config, so configs are ranked by the whole two-pass run.
    import torch

    from study.backends.triton_launch import _autotuned
    from study.ops import sgemm
    from study.catalog import implementation

    impl = implementation("sgemm/v10_split_k_two_pass/triton")
    assert impl.target.post_hook is sgemm.reduce_after_tuned_partials
    assert _autotuned(impl.target, ladder("sgemm").problem).post_hook is sgemm.reduce_after_tuned_partials
    m, n, k, tile = 5, 7, 300, impl.params
    splits, _ = sgemm.split_k_plan(m, n, k, tile["BM"], tile["BN"], tile["BK"], 132)
    assert splits == 4
    partial = torch.arange(splits * m * n, dtype=torch.float32, device=DEVICE)
    out = torch.full((m, n), float("nan"), device=DEVICE)
    sgemm.reduce_after_tuned_partials({"M": m, "N": n, "K": k, "part_ptr": partial, "c_ptr": out, "stride_cm": n,
                                       **tile})
    assert torch.equal(out, partial.view(splits, m, n).sum(0))
    out.fill_(float("nan"))
    sgemm.reduce_after_tuned_partials({"M": m, "N": n, "K": k, "part_ptr": partial, "c_ptr": out, "stride_cm": n,
                                       **tile}, exception=RuntimeError("config failed"))
    assert torch.isnan(out).all()  # a failed config's partials are not summed


def test_the_skinny_ffma_twin_launches_under_autotune_with_the_points_planning_their_own_ranges():
    # sgemm v13's twin: under triton.autotune the launch gets no config (the tuner holds the points): it plans
    # every point's ranges for the workspace and counts and records the rows it fitted (c53 crashed here on a
    # KeyError); with a config it records that config's plan too.
    import torch

    from study.backends.triton_launch import _autotuned
    from study.catalog import implementation
    from study.ops.sgemm_skinny_m import skinny_plan, skinny_twin_launch

    impl = implementation("sgemm/v13_skinny_m/triton")
    problem = ladder("sgemm").problem
    shape = {"M": 16, "N": 300, "K": 2000}
    precision = problem.precisions[0]
    tensors = problem.make_inputs(shape, precision, seed=5, device=DEVICE)
    out = torch.empty(16, 300, device=DEVICE)
    tuned = skinny_twin_launch(_autotuned(impl.target, problem), tensors, out, shape, {}, precision)
    assert tuned.facts == {"rows": 16}
    fixed = skinny_twin_launch(impl.target.kernel, tensors, out, shape, dict(impl.params), precision)
    splits, split_k = skinny_plan(16, 300, 2000, 16, impl.params["COLS"], impl.params["A_FLOATS"],
                                  impl.params["BLOCKS_PER_SM"], 132)
    assert fixed.facts == {"rows": 16, "splits": splits, "split_k": split_k} and splits > 1


def test_the_split_row_twin_is_tuned_with_its_second_launch_inside_each_timed_call():
    # softmax v6's twin: triton.autotune times the statistics launch; its post_hook runs the normalising
    # launch with the same config, as the closure does after the tuned one; a row in one slice has none.
    import torch

    from study.backends.triton_launch import _autotuned
    from study.catalog import implementation
    from study.ops import softmax_twins as softmax
    from triton_kernels import softmax as tk

    impl = implementation("softmax/v6_cluster_rows/triton")
    problem = ladder("softmax").problem
    assert impl.target.post_hook is softmax.normalize_after_tuned_stats
    assert _autotuned(impl.target, problem).post_hook is softmax.normalize_after_tuned_stats
    m, n = 3, 1031
    x = torch.randn(m, n, device=DEVICE)
    slices, size = softmax.split_rows_plan(n, 4, slice_bytes=256)
    assert (slices, size) == (8, 144)
    stats = torch.empty(m * slices * 2, device=DEVICE)
    sync = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    out = torch.full((m, n), float("nan"), device=DEVICE)
    config = dict(impl.params)
    flags = dict(WHOLE=1, ONE=False, FITS=False, EXCHANGE=False, PAIRS=8)
    nargs = {"x_ptr": x, "y_ptr": out, "stats_ptr": stats, "M": m, "N": n, "SLICE": size, "SLICES": slices,
             **flags, **config}
    tk.softmax_split_stats[(m, slices)](x, out, stats, sync, m, n, size, slices, **flags, **config)
    assert torch.isnan(out).all()  # the first launch writes statistics only
    softmax.normalize_after_tuned_stats(nargs, exception=RuntimeError("config failed"))
    assert torch.isnan(out).all()  # a failed config's statistics are not used
    softmax.normalize_after_tuned_stats(nargs)
    assert torch.allclose(out, torch.softmax(x.double(), -1).float(), rtol=2e-4, atol=0)
    out.fill_(float("nan"))
    softmax.normalize_after_tuned_stats({**nargs, "ONE": True})
    assert torch.isnan(out).all()  # a row in one program was written by the first launch alone
    softmax.normalize_after_tuned_stats({**nargs, "EXCHANGE": True})
    assert torch.isnan(out).all()  # nor is a row whose programs exchanged its statistics


@pytest.mark.parametrize("name", ["hgemm/v10_skinny_m/triton", "gemm_bias_relu/v4_skinny_m/triton"])
def test_the_skinny_twins_read_weights_no_descriptor_can_describe_in_place(name):
    # B's rows no multiple of 16 bytes apart (N = 203), padded (rows of 206), or starting one element past an
    # aligned word: the twin loads B by pointer where it lies (B_IN_PLACE), as the CUDA rung does, and
    # stages at most A (recorded: in_place=B, B never among the staged).
    impl = next(i for i in TWINS if i.name == name)
    problem = ladder(impl.op).problem
    fp16 = problem.precision("fp16")
    shape = dict(zip(problem.axes, (3, 203, 70)))
    for pad, offset in ((0, 0), (3, 0), (0, 1)):
        tensors = problem.make_inputs(shape, fp16, seed=7 + pad + offset, device=DEVICE)
        if pad or offset:
            rows = shape["N"] + pad
            store = tensors["B"].new_empty(offset + shape["K"] * rows)
            tensors["B"] = store[offset:].view(shape["K"], rows)[:, :shape["N"]].copy_(tensors["B"])
        ref, scale = problem.reference(tensors, fp16)
        launch = backend("triton").prepare(impl, problem, tensors, shape, fp16)
        assert launch.config.get("in_place") == "B" and "B" not in launch.config.get("staged", ""), launch.config
        verdict = check_output(launch.fn, launch.out, problem, ref, scale, fp16)
        assert verdict.ok, (pad, offset, verdict.message)

"""The fused GEMM + bias + ReLU op on the CPU: its gate passes a correct result at every precision,
rounded once or twice (the unfused path), and fails one that skips the bias or the ReLU; a bias of
the wrong length is a usage error; the eager and compiled torch baselines pass the gate; the
unfused rung names the GEMM it runs; each CUDA rung launches its kernels in order with the bias
where the kernel takes it; the report's fusion table."""

import pytest
import torch

from study.backends import backend
from study.ops.gemm_bias_relu import BARE, bias_reason
from study.catalog import implementation, ladder
from study.problem import check_output

PROBLEM = ladder("gemm_bias_relu").problem
# Short and long K: the bias is drawn at √K so that skipping it shows at every K.
SHAPES = [{"M": 1, "N": 1, "K": 1}, {"M": 17, "N": 33, "K": 65}, {"M": 8, "N": 16, "K": 4096},
          {"M": 4, "N": 8, "K": 16384}]


def _product(tensors, precision, bias=True, relu=True):
    a, b, c = tensors["A"].double(), tensors["B"].double(), tensors["bias"].double()
    out = a @ b
    out = out + c if bias else out
    out = torch.relu(out) if relu else out
    return out.to(tensors["A"].dtype)


@pytest.mark.parametrize("precision", PROBLEM.precisions, ids=lambda p: p.name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s.values())))
def test_the_gate_passes_the_answer_and_fails_a_skipped_bias_or_relu(shape, precision):
    tensors = PROBLEM.make_inputs(shape, precision, seed=3, device="cpu")
    ref, scale = PROBLEM.reference(tensors, precision)
    assert PROBLEM.verify(_product(tensors, precision), ref, scale, precision).ok
    assert not PROBLEM.verify(_product(tensors, precision, bias=False), ref, scale, precision).ok
    if bool((ref == 0).any()):  # some pre-activation was negative (not so for a lone positive element)
        assert not PROBLEM.verify(_product(tensors, precision, relu=False), ref, scale, precision).ok


@pytest.mark.parametrize("precision", PROBLEM.precisions, ids=lambda p: p.name)
def test_the_gate_passes_two_roundings_the_unfused_path_makes(precision):
    """A·B rounded to the storage type, then relu(C + bias) rounded again: at K = 1–8 this is where
    the H200 edge test found 7.1e-4 (FP16) and 5.8e-3 (BF16), past one rounding's tolerance."""
    for k in (1, 2, 3, 8):
        for seed in range(3):
            shape = {"M": 63, "N": 65, "K": k}
            tensors = PROBLEM.make_inputs(shape, precision, seed=seed, device="cpu")
            ref, scale = PROBLEM.reference(tensors, precision)
            gemm = (tensors["A"].double() @ tensors["B"].double()).to(tensors["A"].dtype)
            twice = torch.relu(gemm.double() + tensors["bias"].double()).to(tensors["A"].dtype)
            verdict = PROBLEM.verify(twice, ref, scale, precision)
            assert verdict.ok, (k, seed, verdict.message)


def test_structured_inputs_are_exact_and_a_misplaced_bias_shows():
    precision = PROBLEM.precision("bf16")
    shape = {"M": 9, "N": 24, "K": 40}
    tensors = PROBLEM.structured_inputs(shape, precision, "cpu")
    ref, scale = PROBLEM.reference(tensors, precision)
    assert PROBLEM.verify(_product(tensors, precision), ref, scale, precision).err == 0.0
    rolled = dict(tensors, bias=tensors["bias"].roll(1))
    assert not PROBLEM.verify(_product(rolled, precision), ref, scale, precision).ok


def test_a_bias_of_the_wrong_length_is_a_usage_error():
    precision = PROBLEM.precision("fp32")
    shape = {"M": 4, "N": 6, "K": 8}
    tensors = PROBLEM.make_inputs(shape, precision, seed=0, device="cpu")
    assert bias_reason(tensors, shape) is None
    short = dict(tensors, bias=tensors["bias"][:5])
    assert bias_reason(short, shape) == "the bias must be a vector of N = 6 elements (one per column of C); got shape (5,)"
    assert "storage type" in bias_reason(dict(tensors, bias=tensors["bias"].double()), shape)
    assert "contiguous" in bias_reason(dict(tensors, bias=torch.zeros(12)[::2]), shape)
    impl = implementation("gemm_bias_relu/v1_fused_simt/triton")
    with pytest.raises(ValueError, match="N = 6 elements"):
        impl.target.launch(impl.target.kernel, short, PROBLEM.make_output(shape, precision, "cpu"), shape,
                           dict(impl.params), precision)


@pytest.mark.parametrize("name", ["eager_relu_matmul_bias/cublas", "eager_addmm_relu/cublas"])
@pytest.mark.parametrize("precision", PROBLEM.precisions, ids=lambda p: p.name)
def test_the_eager_baselines_pass_the_gate(name, precision):
    impl = implementation(f"gemm_bias_relu/{name}")
    shape = {"M": 33, "N": 17, "K": 20}
    tensors = PROBLEM.make_inputs(shape, precision, seed=1, device="cpu")
    ref, scale = PROBLEM.reference(tensors, precision)
    launch = backend(impl.backend).prepare(impl, PROBLEM, tensors, shape, precision)
    with launch.context():
        verdict = check_output(launch.fn, launch.out, PROBLEM, ref, scale, precision)
    assert verdict.ok, verdict.message


def test_torch_compile_writes_into_c_and_records_its_mode():
    impl = implementation("gemm_bias_relu/compiled_relu_matmul_bias/inductor")
    precision = PROBLEM.precision("fp32")
    shape = {"M": 9, "N": 12, "K": 7}
    tensors = PROBLEM.make_inputs(shape, precision, seed=2, device="cpu")
    ref, scale = PROBLEM.reference(tensors, precision)
    launch = backend(impl.backend).prepare(impl, PROBLEM, tensors, shape, precision)
    assert launch.config["inductor_mode"] == "default" and launch.config["fullgraph"] is True
    with launch.context():
        verdict = check_output(launch.fn, launch.out, PROBLEM, ref, scale, precision)
    assert verdict.ok, verdict.message
    tuned = backend(impl.backend).prepare(impl, PROBLEM, tensors, shape, precision, tune=True)
    assert tuned.config["inductor_mode"] == "max-autotune-no-cudagraphs"  # compiled at its first call, not here


def test_the_unfused_rung_runs_the_fastest_gemm_rung_of_each_precision():
    from study.report import fusion

    assert fusion.BARE == BARE  # the report finds the bare GEMM the rung ran
    for precision, (op, rung) in BARE.items():
        gemm = implementation(f"{op}/{rung}/cuda")
        assert precision in gemm.precisions and implementation(f"{op}/{rung}/triton")
    fp16, v0 = PROBLEM.precision("fp16"), implementation("gemm_bias_relu/v0_unfused/cuda")
    # N = 12: rows TMA cannot read in place, staged by the GEMM's launch (tests/test_tma_staging.py)
    assert v0.launcher.check(v0.params, {"M": 8, "N": 12, "K": 8}, fp16) is None
    v2 = implementation("gemm_bias_relu/v2_fused_wgmma/cuda")
    assert v2.launcher.check is None  # hgemm v8's launcher: nothing it refuses
    v1 = implementation("gemm_bias_relu/v1_fused_simt/cuda")  # sgemm's grid.y limit, through sgemm's check
    assert "grid.y" in v1.launcher.check(v1.params, {"M": 65536 * v1.params["BM"], "N": 8, "K": 8},
                                         PROBLEM.precision("fp32"))


def test_on_a_gpu_without_sm_90a_the_half_unfused_rung_is_refused_with_its_gemms_reason(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (8, 0))
    impl = implementation("gemm_bias_relu/v0_unfused/cuda")
    shape = {"M": 8, "N": 16, "K": 8}
    reason = backend("cuda").check(impl, PROBLEM, shape, PROBLEM.precision("bf16"))
    assert reason.startswith("its GEMM (hgemm v8_warp_specialized): ") and "sm_90a" in reason
    assert backend("cuda").check(impl, PROBLEM, shape, PROBLEM.precision("fp32")) is None  # sgemm v7: sm_80


def test_the_fused_rungs_declare_the_config_and_space_of_the_gemm_they_extend():
    for rung, gemm in (("v1_fused_simt", "sgemm/v7_multistage"), ("v2_fused_wgmma", "hgemm/v8_warp_specialized"),
                       ("v3_split_k", "hgemm/v9_split_k"), ("v4_skinny_m", "hgemm/v10_skinny_m"),
                       ("v5_cluster_multicast", "hgemm/v11_cluster_multicast")):
        for backend_name in ("cuda", "triton"):
            fused, bare = implementation(f"gemm_bias_relu/{rung}/{backend_name}"), implementation(f"{gemm}/{backend_name}")
            assert dict(fused.params) == dict(bare.params) and [dict(p) for p in fused.space] == [dict(p) for p in bare.space]


def test_the_fused_twin_rounds_once_where_the_unfused_pair_rounds_twice():
    """At K = 8 one rounding of relu(acc + bias) errs by at most u of the scale (plus FP32's ~1e-3 u),
    two roundings by up to 1.6 u: the fused twin must stay under 1.01 u (the GPU test holds the CUDA
    rungs to the same), the unfused pair is shown to exceed it, so the check can fail."""
    fp16 = PROBLEM.precision("fp16")
    shape = {"M": 72, "N": 136, "K": 8}
    for rung, once in (("v2_fused_wgmma", True), ("v0_unfused", False)):
        impl = implementation(f"gemm_bias_relu/{rung}/triton")
        tensors = PROBLEM.make_inputs(shape, fp16, seed=0, device="cpu")
        ref, scale = PROBLEM.reference(tensors, fp16)
        launch = backend("triton").prepare(impl, PROBLEM, tensors, shape, fp16)
        launch.fn()
        assert (PROBLEM.verify(launch.out, ref, scale, fp16).err <= 1.01 * 2.0**-11) == once, rung


def test_the_unfused_twins_in_place_pass_is_restored_between_autotuning_runs():
    """triton.autotune times the pass several times on the same C; restore_value puts C back after each
    run, so the first (tuning) call's result is right — without it the bias is added once per timed run.
    (Triton's interpreter cannot autotune: the GPU runs it; here, that the tuner is built so.)"""
    from study.backends.triton_launch import _autotuned

    impl = implementation("gemm_bias_relu/v0_unfused/triton")
    assert impl.target.restore == ("c_ptr",) and "c_ptr" in impl.target.kernel.arg_names
    assert _autotuned(impl.target, PROBLEM).restore_value == ["c_ptr"]
    assert _autotuned(implementation("gemm_bias_relu/v2_fused_wgmma/triton").target, PROBLEM).restore_value == []


def _record(op, rung, backend, ms, baseline=None, autotune="off", precision="bf16"):
    return {"op": op, "rung": rung, "baseline": baseline, "backend": backend, "autotune": autotune, "status": "ok",
            "shape": {"M": 1024, "N": 2048, "K": 512}, "precision": precision, "dtype": "bfloat16", "mode": "cold",
            "median_ms": ms}


def test_the_fusion_table_sets_unfused_fused_and_bare_side_by_side(tmp_path):
    from study.report import fusion

    ms = [_record("gemm_bias_relu", "v0_unfused", "cuda", 0.30), _record("gemm_bias_relu", "v2_fused_wgmma", "cuda", 0.22),
          _record("hgemm", "v8_warp_specialized", "cuda", 0.20), _record("hgemm", "v7_wgmma_tma", "cuda", 0.10),
          _record("gemm_bias_relu", None, "cublas", 0.33, baseline="eager_relu_matmul_bias", autotune="n/a"),
          _record("gemm_bias_relu", None, "cublaslt", 0.20, baseline="nvmath_relu_bias"),
          _record("gemm_bias_relu", "v2_fused_wgmma", "triton", 0.25),  # no unfused twin: a row all the same
          dict(_record("gemm_bias_relu", "v0_unfused", "triton", 0.1), status="wrong")]  # never counted
    rows = fusion.rows(ms)
    assert [(r["backend"], r["unfused"] and r["unfused"]["median_ms"]) for r in rows] == [("cuda", 0.30), ("triton", None)]
    cuda = rows[0]
    assert cuda["bare"]["rung"] == "v8_warp_specialized"  # the rung v0 runs, not a faster other one
    e = 2
    assert cuda["bytes"]["unfused"] - cuda["bytes"]["fused"] == 2 * e * 1024 * 2048
    line = next(l for l in fusion.table(rows).splitlines() if "| CUDA" in l)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[0] == "1024×2048×512"  # M×N×K, as the op names its axes
    assert cells[4:9] == ["0.3000", "0.2200 (v2)", "0.2000", "1.36×", "+10.0 %"]
    assert cells[11:] == ["4", "1.50×", "—", "0.91×"]  # C is 1024·2048·2 bytes; no addmm measured
    triton = next(l for l in fusion.table(rows).splitlines() if "| Triton" in l)
    assert "| —" in triton  # no bare twin measured: a dash, not a guess
    text = fusion.section(ms, tmp_path / "figures" / "f.png", tmp_path)
    assert text[0] == "### What fusion bought" and "![gemm_bias_relu fusion](figures/f.png)" in text
    assert (tmp_path / "figures" / "f.png").is_file()
    assert fusion.section([m for m in ms if m["op"] == "hgemm"], None, tmp_path) == []


@pytest.mark.parametrize("rung,precision,kernels", [
    ("v0_unfused", "fp32", ["sgemm_v7_multistage", "gemm_bias_relu_v0_unfused"]),
    ("v0_unfused", "bf16", ["hgemm_v8_warp_specialized", "gemm_bias_relu_v0_unfused"]),
    ("v1_fused_simt", "fp32", ["gemm_bias_relu_v1_fused_simt"]),
    ("v2_fused_wgmma", "fp16", ["gemm_bias_relu_v2_fused_wgmma"]),
    ("v3_split_k", "fp16", ["gemm_bias_relu_v3_split_k"]),  # 72×136×40: one tile, one slice, v2's path
    ("v5_cluster_multicast", "bf16", ["gemm_bias_relu_v5_cluster_multicast"])])
def test_each_cuda_rung_launches_its_kernels_in_order_with_the_bias_where_the_kernel_takes_it(
        fake_cuda, rung, precision, kernels):
    impl = implementation(f"gemm_bias_relu/{rung}/cuda")
    p = PROBLEM.precision(precision)
    shape = {"M": 72, "N": 136, "K": 40}
    tensors = PROBLEM.make_inputs(shape, p, 0, "cpu")
    launch = backend("cuda").prepare(impl, PROBLEM, tensors, shape, p)
    launch.fn()
    assert [symbol for symbol, *_ in fake_cuda] == kernels
    symbol, grid, block, args, smem = fake_cuda[-1]
    bias_at = [i for i, a in enumerate(args) if a is tensors["bias"]]
    out_at = [i for i, a in enumerate(args) if a is launch.out]
    c_map = ("map", "C", launch.out.data_ptr())
    if rung == "v0_unfused":  # the pass: (C, bias, M, N, ldc) over BLOCKS_PER_SM blocks an SM
        assert bias_at == [1] and out_at == [0] and grid == (132 * impl.params["BLOCKS_PER_SM"], 1, 1)
        assert [int(a) for a in args[2:]] == [72, 136, 136]
        gemm = fake_cuda[0]
        name = "sgemm/v7_multistage" if precision == "fp32" else "hgemm/v8_warp_specialized"
        assert launch.config["gemm"] == f"{name}/cuda"
        assert launch.config["gemm_config"] == " ".join(f"{k}={v}" for k, v in implementation(f"{name}/cuda").params.items())
        if precision == "fp32":  # sgemm's (A, B, C, ...): the GEMM writes the case's output
            assert gemm[3][:3] == (tensors["A"], tensors["B"], launch.out)
        else:
            assert gemm[3][:3] == (("map", "A", tensors["A"].data_ptr()), ("map", "B", tensors["B"].data_ptr()), c_map)
    elif rung == "v1_fused_simt":  # sgemm's (A, B, bias, C, M, N, K, lda, ldb, ldc)
        assert bias_at == [2] and out_at == [3] and len(args) == 10 and smem == launch.config["smem_bytes"] > 0
    elif rung == "v2_fused_wgmma":  # hgemm v8's (map A, map B, map C, bias, M, N, K) on a persistent grid
        assert bias_at == [3] and args[2] == c_map and len(args) == 7 and launch.config["blocks"] == 1
    elif rung == "v5_cluster_multicast":  # v2's arguments on hgemm v11's grid: one whole 2-block cluster, one pair
        assert bias_at == [3] and args[2] == c_map and len(args) == 7 and grid == (2, 1, 1)
        assert launch.config["blocks"] == 2
    else:  # hgemm v9's (maps, bias, M, N, K, splits, slices a split, workspace, ldp): one split here
        assert bias_at == [3] and args[2] == c_map and len(args) == 11 and launch.config["splits"] == 1


@pytest.mark.parametrize("rung,precision,storage", [("v1_fused_simt", "fp32", "STORAGE_FP32"),
                                                    ("v2_fused_wgmma", "bf16", "STORAGE_BF16"),
                                                    ("v2_fused_wgmma", "fp16", "STORAGE_FP16"),
                                                    ("v3_split_k", "bf16", "STORAGE_BF16"),
                                                    ("v5_cluster_multicast", "fp16", "STORAGE_FP16")])
def test_a_fused_rung_takes_the_defines_of_the_gemm_op_of_its_precision(rung, precision, storage):
    impl, prec = implementation(f"gemm_bias_relu/{rung}/cuda"), PROBLEM.precision(precision)
    shape = {"M": 72, "N": 136, "K": 40}
    tensors = PROBLEM.make_inputs(shape, prec, seed=0, device="cpu")
    defines = PROBLEM.cuda_defines(dict(impl.params), tensors, PROBLEM.make_output(shape, prec, "cpu"), shape, prec)
    assert {k: v for k, v in defines.items() if k in impl.params} == dict(impl.params)
    assert [k for k in defines if k.startswith("STORAGE_")] == [storage]
    assert defines["ALIGNED"] == 1  # 136 and 40: whole 16-byte rows in either storage


def test_the_split_k_rung_plans_as_hgemm_v9_and_ends_with_the_reduction_that_applies_the_epilogue(fake_cuda):
    from study.ops.hgemm import split_plan

    impl = implementation("gemm_bias_relu/v3_split_k/cuda")
    bf16 = PROBLEM.precision("bf16")
    for shape, splits in (({"M": 16, "N": 4096, "K": 4096}, 8), ({"M": 1024, "N": 4096, "K": 4096}, 1)):
        assert split_plan(shape["M"], shape["N"], shape["K"], 128, 256, 64, 4, 132)[0] == splits  # hgemm v9's plan
        tensors, launch = fake_cuda.run(impl, PROBLEM, shape, bf16)
        assert launch.config["splits"] == splits and "staged" not in launch.config
        # one split: v2's path alone (the epilogue on the accumulators); more: the reduction adds it
        assert [c[0] for c in fake_cuda] == ["gemm_bias_relu_v3_split_k"] + ["gemm_bias_relu_v3_reduce_splits"] * (
            splits > 1)
        _, grid, block, args, _ = fake_cuda[0]
        tiles = -(-shape["M"] // 128) * -(-shape["N"] // 256)
        assert grid == (min(tiles * splits, 132), 1, 1) and block == (384, 1, 1)
        assert args[3] is tensors["bias"] and args[2] == ("map", "C", launch.out.data_ptr())
        assert [int(a) for a in args[4:9]] == [shape["M"], shape["N"], shape["K"], splits,
                                               launch.config["slices_per_split"]]
        assert int(args[10]) == 4096  # the planes' rows: N rounded up to 4 floats
        if splits > 1:
            _, _, rblock, rargs, _ = fake_cuda[1]
            assert rargs[0] is args[9] and rargs[1].data_ptr() == launch.out.data_ptr() and rargs[2] is tensors["bias"]
            assert args[9].numel() == splits * shape["M"] * 4096 and rblock == (256, 1, 1)
            assert [int(a) for a in rargs[3:]] == [shape["M"], shape["N"], 4096, launch.out.stride(0), splits]


def test_the_split_k_rungs_reduction_writes_the_staged_c_before_it_is_copied_out(fake_cuda):
    # N = 70: B and C staged (rows of 70 halves are not 16 bytes apart); one tile of 9 K slices, two splits
    impl = implementation("gemm_bias_relu/v3_split_k/cuda")
    fp16 = PROBLEM.precision("fp16")
    shape = {"M": 17, "N": 70, "K": 520}
    tensors, launch = fake_cuda.run(impl, PROBLEM, shape, fp16)
    assert launch.config["staged"] == "B+C" and launch.config["splits"] == 2
    assert [c[0] for c in fake_cuda] == ["stage_rows", "gemm_bias_relu_v3_split_k", "gemm_bias_relu_v3_reduce_splits",
                                         "stage_rows"]
    [written] = launch.poison
    reduce_args, copy_args = fake_cuda[2][3], fake_cuda[3][3]
    assert reduce_args[1] is written and copy_args[0].data_ptr() == written.data_ptr()
    assert int(reduce_args[6]) == written.stride(0) and copy_args[1].data_ptr() == launch.out.data_ptr()


def test_the_split_k_twin_applies_the_epilogue_to_the_sum_of_its_ranges():
    """The twin in the interpreter at 10 K slices: two ranges at MIN_SLICES = 4, five at 2, and the one
    split of v2's path at MIN_SLICES = 8 (10 // 8 = 1): each passes the gate, and the split results
    are the reduction's (relu of the ordered sum plus the bias)."""
    from study.ops.hgemm import split_plan

    impl = implementation("gemm_bias_relu/v3_split_k/triton")
    fp16 = PROBLEM.precision("fp16")
    shape = {"M": 17, "N": 33, "K": 600}
    tensors = PROBLEM.make_inputs(shape, fp16, seed=1, device="cpu")
    ref, scale = PROBLEM.reference(tensors, fp16)
    for min_slices, splits in ((4, 2), (2, 5), (8, 1)):
        config = {**impl.params, "MIN_SLICES": min_slices}
        assert split_plan(17, 33, 600, config["BM"], config["BN"], config["BK"], min_slices, 132)[0] == splits
        launch = backend("triton").prepare(impl, PROBLEM, tensors, shape, fp16, config=config)
        assert launch.config["splits"] == splits
        verdict = check_output(launch.fn, launch.out, PROBLEM, ref, scale, fp16)
        assert verdict.ok, (min_slices, verdict.message)


def test_the_split_k_twins_tuning_reduces_each_configs_partials_through_the_epilogue():
    from study.ops.gemm_bias_relu import reduce_after_tuned_partials
    from study.ops.hgemm import split_plan

    impl = implementation("gemm_bias_relu/v3_split_k/triton")
    assert impl.target.post_hook is reduce_after_tuned_partials  # triton.autotune times partials and reduction
    m, n, k, ldp = 17, 33, 600, 36
    cfg = dict(BM=128, BN=256, BK=64, MIN_SLICES=2)
    splits, _ = split_plan(m, n, k, *cfg.values(), 132)
    assert splits == 5
    planes = torch.randn(splits, m, ldp)
    bias = torch.randn(n).to(torch.float16)
    out = torch.full((m, n), float("nan"), dtype=torch.float16)
    nargs = dict(M=m, N=n, K=k, NUM_SMS=132, part_ptr=planes.reshape(-1), c_ptr=out, bias_ptr=bias, ldp=ldp,
                 stride_cm=n, **cfg)
    reduce_after_tuned_partials(nargs)
    total = planes[0, :, :n].clone()
    for s in range(1, splits):
        total += planes[s, :, :n]  # in plane order, as the CUDA rung's reduction adds them
    assert torch.equal(out, torch.relu(total + bias.float()).to(torch.float16))
    untouched = torch.full((m, n), float("nan"), dtype=torch.float16)
    reduce_after_tuned_partials({**nargs, "K": 64, "c_ptr": untouched})  # one split: C was the kernel's to write
    assert torch.isnan(untouched).all()


def test_the_skinny_rung_runs_hgemm_v10s_launch_with_the_bias_after_c_and_in_its_sum_of_the_splits(fake_cuda):
    from study.ops.hgemm import split_plan

    impl = implementation("gemm_bias_relu/v4_skinny_m/cuda")
    fp16 = PROBLEM.precision("fp16")
    # FIT_BN: 16 tokens × 4096 weight columns of 4096: 64 tiles of 64 columns, two splits; 1 × 22016: 86 tiles of
    # 256 (172 of 128 and 344 of 64 pass the 132 SMs), one
    for shape, bn, splits in (({"M": 16, "N": 4096, "K": 4096}, 64, 2), ({"M": 1, "N": 22016, "K": 4096}, 256, 1)):
        assert split_plan(shape["M"], shape["N"], shape["K"], 16, bn, 64, 4, 132)[0] == splits  # hgemm v10's plan
        tensors, launch = fake_cuda.run(impl, PROBLEM, shape, fp16)
        assert launch.config["splits"] == splits and launch.config["tokens"] in (8, 16) and launch.config["BN"] == bn
        # one split: the bias and ReLU in the C store; more: in the sum of the splits, in the same launch
        assert [c[0] for c in fake_cuda] == ["gemm_bias_relu_v4_skinny_m"]
        _, grid, block, args, _ = fake_cuda[0]
        assert grid == (min(-(-shape["N"] // bn) * splits, 132), 1, 1) and block == (32 + 2 * bn, 1, 1)
        assert args[3] is tensors["bias"] and args[2].data_ptr() == launch.out.data_ptr()  # C by pointer, then the bias
        assert [int(a) for a in args[4:10]] == [shape["M"], shape["N"], shape["K"], launch.out.stride(0), splits,
                                                launch.config["slices_per_split"]]
        assert args[12].numel() == (-(-shape["N"] // bn) if splits > 1 else 1)  # the count of units done per tile
    # more than 64 tokens: outside its scope, said where the check is made (v2/v3 take it)
    from study.problem import is_out_of_scope

    reason = impl.launcher.check(dict(impl.params), {"M": 65, "N": 128, "K": 64}, fp16)
    assert is_out_of_scope(reason) and "v2/v3 take larger M" in reason

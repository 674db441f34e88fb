"""GPU tests (`pytest -m gpu`): every implementation correct on awkward shapes at every
precision it implements, every CUDA autotune point correct, bad inputs handled, and a
tiny-budget run of the whole pipeline."""

import re

import pytest
import torch

from op_shapes import shapes_of
from study.backends import Unsupported, backend
from study.catalog import implementations, ladder
from study.ops.sgemm_skinny_m import skinny_plan
from study.problem import is_out_of_scope

pytestmark = pytest.mark.gpu
AWKWARD = {
    # ... and skinny products with a long K, which v5 splits (scalar and 16-byte paths). 1000×2500×1696:
    # 160 of v11's 128×128 tiles, more than its 132 persistent blocks, and 53 K slices, which no stage
    # count of its space divides, so stages and their phases carry over from tile to tile. Decode-sized and
    # skinny products (1×4096×4096, 16×4096×11008, 64×64×65536): v12's fitted 16- and 64-row tiles over
    # 4 and 128 K ranges, and every other rung at the shapes v12 is for.
    "sgemm": [(1, 1, 1), (17, 33, 65), (1000, 1500, 1700), (4097, 4095, 257), (5, 7, 1000), (64, 64, 4096),
              (1000, 2500, 1696), (1, 4096, 4096), (16, 4096, 11008), (64, 64, 65536)],
    # M or N = 1, 3, 4097; N not a multiple of 4 (the scalar paths); a short-wide split; tall-skinny (v4's tiles,
    # the last one partial, tiles of rows no multiple of 16 bytes).
    "sgemv": [(1, 1), (1, 4097), (4097, 1), (3, 3), (3, 4097), (4097, 3), (4097, 4097), (17, 1023), (64, 65536),
              (20011, 13)],
    # batch 1; tile tails in M, N and K; K and N not multiples of 4 (scalar paths); many tiny entries.
    # With 16-byte rows (what the TMA rung v1 takes): batch 1; tails in M, N and K inside each entry
    # and several K slices; 300 entries of one tile each, more than the 132 blocks of v1's persistent
    # grid, so blocks walk tiles of several entries; M = 4097 and M = 1.
    "bgemm": [(1, 1, 1, 1), (1, 17, 33, 65), (3, 129, 67, 131), (5, 200, 130, 1), (4097, 3, 5, 7), (1, 72, 136, 40),
              (3, 257, 264, 520), (300, 65, 72, 64), (2, 4097, 8, 24), (5, 1, 64, 8)],
    # rows of 1 and 3; no vector divides N (PEEL paths: rows at every offset from 16 bytes); v4 on chip
    # and past it (fallback); many rows. Long rows for v6's clusters: 50257 (PEEL, 2 blocks in FP32, one
    # in FP16/BF16), 65536 (2 blocks FP32), 262144 (8 blocks FP32, 4 FP16/BF16: as much as a cluster holds).
    "softmax": [(1, 1), (3, 3), (7, 1031), (5, 4096), (3, 40000), (70000, 3), (2, 65536), (3, 50257), (4, 65536),
                (32, 262144)],
    # one element; tails past 32- and 128-wide tiles with N odd (scalar paths); 16-byte rows with tails
    # in M, N and K (vector and cp.async paths); K = 1; one tile with a long K.
    # 72×136×40, 64×64×4096, 257×264×520 and 2049×2056×136 are what the TMA rungs read in place (K, N
    # multiples of 8; the others they stage, study/ops/tma_staging.py): tails in M, N and K; the last has 153 tiles of v8's 128×256, more than the 132 SMs its
    # persistent grid holds, so blocks walk several tiles (stages and C boxes reused across tiles).
    # Decode steps (v10's skinny M, and every other rung at them): one token and 16 at 4096² (v10 splits K
    # four ways at 128-column tiles), 13 tokens (16 wide) over 8 tiles of 128 with a tail, 64 tokens over 17 tiles.
    "hgemm": [(1, 1, 1), (17, 33, 65), (257, 129, 200), (72, 136, 40), (3, 5, 1), (64, 64, 4096), (257, 264, 520),
              (2049, 2056, 136), (1, 4096, 4096), (16, 4096, 4096), (13, 1000, 520), (64, 2056, 136)],
    # hgemm's tails (the TMA rungs at N, K multiples of 8; several tiles per persistent block in the
    # last), N odd and K = 1 for the scalar paths of v0's pass and v1; one tile of 9 K slices and a
    # decode step's 16×4096×4096 (16 tiles), which v3 splits (2 and 8 ranges at its declared config).
    "gemm_bias_relu": [(1, 1, 1), (17, 33, 65), (72, 136, 40), (257, 264, 520), (2049, 2056, 136), (17, 72, 520),
                       (16, 4096, 4096)],
}
IMPLS = implementations()
TMA_RUNGS = [r.key for r in ladder("hgemm").rungs if r.multiples]  # hgemm's rungs whose operands arrive by TMA
CASES = [(impl, shape, p) for impl in IMPLS for shape in shapes_of(AWKWARD, impl.op) for p in ladder(impl.op).problem.precisions
         if p.name in impl.precisions]


def _data(op, shape, precision, seed=7):
    problem = ladder(op).problem
    shape = dict(zip(problem.axes, shape))
    tensors = problem.make_inputs(shape, precision, seed, "cuda")
    ref, scale = problem.reference(tensors, precision)
    return problem, shape, tensors, ref, scale


def _arch_reason(impl):
    """Why this GPU cannot run the implementation's CUDA kernel (its declared architecture), or None."""
    if impl.backend != "cuda":
        return None
    return impl.target.arch_reason(torch.cuda.get_device_capability())


def _run(impl, problem, shape, tensors, ref, scale, precision, **kw):
    from study.problem import check_output

    launch = backend(impl.backend).prepare(impl, problem, tensors, shape, precision, **kw)
    with launch.context():
        launch.fn()  # compile, tune
        verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision, launch.poison)
    return verdict, launch


def _small_integers_pass_and_repeat_exactly(impl, problem, shape, precision, label):
    """The gate on small integers (exact in every storage type: an element put in another row or column
    shows, no rounding hides it), then three more launches with C poisoned between them: the same bits."""
    exact = problem.structured_inputs(shape, precision, "cuda")
    ref, scale = problem.reference(exact, precision)
    verdict, launch = _run(impl, problem, shape, exact, ref, scale, precision)
    assert verdict.ok, (label, "small integers", verdict.message)
    first = launch.out.clone()
    for _ in range(3):
        launch.out.fill_(float("nan"))
        launch.fn()
        torch.cuda.synchronize()
        assert torch.equal(launch.out, first), label


@pytest.mark.parametrize("impl,shape,precision", CASES, ids=lambda v: getattr(v, "name", None) if not isinstance(
    v, tuple) else "x".join(map(str, v)))
def test_every_implementation_is_correct_on_awkward_shapes(impl, shape, precision):
    from study.backends.library import missing_requirement

    if missing_requirement(impl):
        pytest.skip(missing_requirement(impl))
    problem, shape, tensors, ref, scale = _data(impl.op, shape, precision, seed=sum(shape))
    reason = backend(impl.backend).check(impl, problem, shape, precision)
    if reason and _arch_reason(impl):
        pytest.skip(reason)  # an sm_90a rung on another GPU
    if is_out_of_scope(reason):
        pytest.skip(reason)  # hgemm v10 at M > 64 (v8/v9 take it), recorded as a skip with this reason
    assert not reason, reason  # nothing else refuses these shapes (the TMA rungs stage rows TMA cannot read)
    verdict, _ = _run(impl, problem, shape, tensors, ref, scale, precision)
    assert verdict.ok, verdict.message


# sgemm: 1×4096×4096, 16×4096×11008, 64×64×65536 and 5×7×1000 split at every point of v12 (its heights 16–128).
AUTOTUNE_SHAPES = {"sgemm": [(17, 33, 65), (1000, 1500, 1700), (64, 96, 2048), (1, 4096, 4096), (16, 4096, 11008),
                             (64, 64, 65536), (5, 7, 1000)],
                   # sgemv: 20011×64, rows of whole vectors (v4's vectors path at every point)
                   "sgemv": [(17, 1023), (1000, 4096), (96, 20000), (20011, 24), (20011, 64)],
                   "bgemm": [(3, 17, 33, 65), (7, 130, 129, 67), (3, 257, 264, 520), (300, 65, 72, 64)],
                   # softmax: every point of v6 on rows its cluster holds and on rows it does not (two passes)
                   "softmax": [(7, 1031), (9, 4096), (2, 40000), (3, 50257), (32, 262144)],
                   "hgemm": [(17, 33, 65), (72, 136, 40), (257, 264, 520),
                             (2049, 2056, 136), (1, 4096, 4096), (13, 1000, 520), (64, 2056, 136)],
                   # 17×72×520 and 16×4096×4096: v3 splits at every point but MIN_SLICES=8 on the first
                   "gemm_bias_relu": [(17, 33, 65), (72, 136, 40), (257, 264, 520), (17, 72, 520), (16, 4096, 4096)]}


@pytest.mark.parametrize("impl", [i for i in IMPLS if i.backend == "cuda"], ids=lambda i: i.name)
def test_every_cuda_autotune_point_is_correct(impl):
    problem = ladder(impl.op).problem
    for shape in shapes_of(AUTOTUNE_SHAPES, impl.op):
        for precision in (p for p in problem.precisions if p.name in impl.precisions):
            reason = backend("cuda").check(impl, problem, dict(zip(problem.axes, shape)), precision)
            if reason and _arch_reason(impl):
                pytest.skip(reason)
            if is_out_of_scope(reason):
                continue  # hgemm v10 at M > 64
            assert not reason, reason  # the TMA rungs stage what TMA cannot read
            problem, sh, tensors, ref, scale = _data(impl.op, shape, precision)
            for point in impl.space:
                if is_out_of_scope(impl.launcher.check and impl.launcher.check(point, sh, precision)):
                    continue  # softmax v7: a point whose ring cannot hold two of these rows
                verdict, launch = _run(impl, problem, sh, tensors, ref, scale, precision, config=point)
                assert verdict.ok, f"{shape} {precision.name} {launch.config}: {verdict.message}"


def test_the_persistent_wgmma_rung_carries_its_stages_across_tiles_at_every_point():
    """sgemm v11 walks several tiles per block; at 1000×2500×1696 every point of its space (128- and
    64-row tiles, 3, 4 and 6 stages) has more tiles than blocks and a slice count its stages do not
    divide, so a tile starts on a stage and phase left by the one before."""
    impl = next(i for i in IMPLS if i.name == "sgemm/v11_3xtf32_wgmma/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    fp32 = ladder("sgemm").problem.precisions[0]
    problem, shape, tensors, ref, scale = _data("sgemm", (1000, 2500, 1696), fp32)
    for point in impl.space:
        assert -(-1000 // point["BM"]) * -(-2500 // point["BN"]) > 132 and 53 % point["STAGES"], point
        verdict, launch = _run(impl, problem, shape, tensors, ref, scale, fp32, config=point)
        assert verdict.ok, f"{launch.config}: {verdict.message}"


@pytest.mark.parametrize("rung", ["v11_3xtf32_wgmma", "v12_3xtf32_split_k"])
def test_the_3xtf32_rungs_read_a_in_place_at_every_height_offset_and_leading_dimension(rung):
    """sgemm v11/v12 with A's rows no multiple of 16 bytes apart (K = 411, 203, 517, 65, 301), off a 16-byte
    start (a view 4 bytes into its storage) or padded to a leading dimension two floats longer, at shapes where
    a copy of A costs more than reading it in place (sgemm_wgmma.a_in_place): read where they lie by eight
    residue maps (A_IN_PLACE, sgemm/wgmma_3xtf32.cuh), never staged, correct within the FP32 gate; v12 at each
    height its fit takes (16, 32, 64, 128 rows: each a residue box of 2–16 rows), rows past M in the last tile,
    K's last slice short."""
    impl = next(i for i in IMPLS if i.name == f"sgemm/{rung}/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    fp32 = ladder("sgemm").problem.precisions[0]
    heights = set()
    for shape in ((3, 200, 411), (222, 2002, 203), (800, 200, 517), (300, 130, 65), (1000, 520, 301)):
        problem, sh, tensors, ref, scale = _data("sgemm", shape, fp32)
        m, k = shape[0], shape[2]
        offset = torch.empty(m * k + 1, device="cuda")[1:].view(m, k)
        padded = torch.empty(m, k + 2, device="cuda")[:, :k]  # K odd: rows k + 2 floats apart, never 16 bytes
        for a in (tensors["A"], offset, padded):
            if a is not tensors["A"]:
                a.copy_(tensors["A"])
            verdict, launch = _run(impl, problem, sh, {"A": a, "B": tensors["B"]}, ref, scale, fp32)
            assert verdict.ok, (shape, a.stride(), verdict.message)
            config = launch.config
            assert config["in_place"] == "A" and "A" not in config.get("staged", "").split("+"), (shape, config)
            heights.add(config.get("BM", impl.params["BM"]))
    assert heights == ({16, 32, 64, 128} if rung == "v12_3xtf32_split_k" else {128}), heights


@pytest.mark.parametrize("rung", ["v4_double_buffer", "v7_multistage", "v8_3xtf32"])
def test_misaligned_rows_take_the_scalar_path_and_stay_correct(rung):
    impl = next(i for i in IMPLS if i.name == f"sgemm/{rung}/cuda")
    fp32 = ladder("sgemm").problem.precisions[0]
    problem, shape, tensors, ref, scale = _data("sgemm", (64, 64, 64), fp32)
    storage = torch.empty(64 * 64 + 1, device="cuda")
    a = storage[1:].view(64, 64)  # 4-byte offset: float4 would fault
    a.copy_(tensors["A"])
    verdict, launch = _run(impl, problem, shape, {"A": a, "B": tensors["B"]}, ref, scale, fp32)
    assert launch.config["ALIGNED"] == 0 and verdict.ok, verdict.message


@pytest.mark.parametrize("rung", ["v3_register_tile", "v4_bank_conflicts", "v5_double_buffer", "v6_mma_sync"])
def test_hgemm_offset_or_padded_rows_pick_their_path_and_stay_correct(rung):
    impl = next(i for i in IMPLS if i.name == f"hgemm/{rung}/cuda")
    fp16 = ladder("hgemm").problem.precision("fp16")
    problem, shape, tensors, ref, scale = _data("hgemm", (72, 136, 40), fp16)
    storage = torch.empty(72 * 40 + 1, device="cuda", dtype=torch.float16)
    a = storage[1:].view(72, 40)  # 2-byte offset: a 16-byte load or cp.async would fault
    a.copy_(tensors["A"])
    verdict, launch = _run(impl, problem, shape, {"A": a, "B": tensors["B"]}, ref, scale, fp16)
    assert launch.config["ALIGNED"] == 0 and verdict.ok, verdict.message
    for pad in (3, 8):  # a leading dimension of 43 halves takes the scalar path, 48 the 16-byte one
        padded = torch.empty(72, 40 + pad, device="cuda", dtype=torch.float16)[:, :40]
        padded.copy_(tensors["A"])
        verdict, launch = _run(impl, problem, shape, {"A": padded, "B": tensors["B"]}, ref, scale, fp16)
        assert verdict.ok, verdict.message
        assert launch.config["ALIGNED"] == (pad % 8 == 0)


@pytest.mark.parametrize("backend_name", ["cuda", "triton"])
@pytest.mark.parametrize("rung", TMA_RUNGS)
def test_tma_rungs_stage_rows_tma_cannot_read_and_read_padded_ones_in_place(rung, backend_name):
    impl = next(i for i in IMPLS if i.name == f"hgemm/{rung}/{backend_name}")
    if _arch_reason(impl) or torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA and wgmma need an sm_90 GPU")
    fp16 = ladder("hgemm").problem.precision("fp16")
    wide = {"M": 72, "N": 136, "K": 40}
    m = 40 if is_out_of_scope(backend(backend_name).check(impl, ladder("hgemm").problem, wide, fp16)) else 72  # v10
    problem, shape, tensors, ref, scale = _data("hgemm", (m, 136, 40), fp16)
    storage = torch.empty(m * 40 + 8, device="cuda", dtype=torch.float16)
    a = storage[1:m * 40 + 1].view(m, 40)  # 2-byte offset: staged
    a.copy_(tensors["A"])
    verdict, launch = _run(impl, problem, shape, {"A": a, "B": tensors["B"]}, ref, scale, fp16)
    assert verdict.ok and launch.config.get("staged") == "A", (verdict.message, launch.config)
    for pad, staged in ((3, "A"), (8, None)):  # rows 86 bytes apart are staged; 96 bytes apart are read in place
        padded = torch.empty(m, 40 + pad, device="cuda", dtype=torch.float16)[:, :40]
        padded.copy_(tensors["A"])
        verdict, launch = _run(impl, problem, shape, {"A": padded, "B": tensors["B"]}, ref, scale, fp16)
        assert verdict.ok and launch.config.get("staged") == staged, (pad, verdict.message, launch.config)


@pytest.mark.parametrize("autotune", ["off", "on"])  # on: the tuner must pass the refusal up, not crash
def test_an_unsupported_launch_is_recorded_as_skipped_with_its_reason(autotune, tmp_path, monkeypatch):
    from study import hardware
    from study.backends import tma
    from study.plan import Case
    from study.session import Session
    from study.timing import TimerSettings

    impl = next(i for i in IMPLS if i.name == "hgemm/v7_wgmma_tma/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    monkeypatch.setenv("STUDY_CACHE_DIR", str(tmp_path))

    def refused(name, tensor, cols, rows):  # planted: nothing the study launches is refused at launch any more
        raise Unsupported(f"{name}: no tensor map for this one (planted)")

    monkeypatch.setattr(tma, "tensor_map", refused)
    fp16 = ladder("hgemm").problem.precision("fp16")
    case = Case(impl=impl, shape={"M": 64, "N": 64, "K": 64}, precision=fp16, autotune=autotune, mode="cold", pad=3)
    record = Session(TimerSettings(reps=20), hardware.current_device()).measure(case)
    assert record["status"] == "skipped" and "no tensor map for this one (planted)" in record["reason"], record


@pytest.mark.parametrize("rung", ["v2_vector_loads", "v3_split_n", "v4_row_tiles"])
def test_gemv_with_a_misaligned_vector_takes_the_scalar_path(rung):
    # v4 at 64 columns: its vectors path would load x 16 bytes at a time; a misaligned x stages the rows
    impl = next(i for i in IMPLS if i.name == f"sgemv/{rung}/cuda")
    fp16 = ladder("sgemv").problem.precision("fp16")
    n = 64 if rung == "v4_row_tiles" else 1024
    problem, shape, tensors, ref, scale = _data("sgemv", (256, n), fp16)
    x = torch.empty(n + 1, device="cuda", dtype=torch.float16)[1:]  # 2-byte offset
    x.copy_(tensors["x"])
    verdict, launch = _run(impl, problem, shape, {"A": tensors["A"], "x": x}, ref, scale, fp16)
    assert launch.config["ALIGNED"] == 0 and verdict.ok, verdict.message
    assert rung != "v4_row_tiles" or launch.config["path"] == "tiles", launch.config


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_v4_reads_tall_skinny_rows_in_tiles_or_registers_and_wide_or_misaligned_ones_row_by_row(dtype):
    impl = next(i for i in IMPLS if i.name == "sgemv/v4_row_tiles/cuda")
    precision = ladder("sgemv").problem.precision(dtype)
    # 48 columns: 12 FP32 or 6 FP16 vectors a row, no power of two, staged; 8, 16, 64 and `widest` (32 vectors,
    # a whole warp's shuffles): summed in registers
    widest = 128 if dtype == "fp32" else 256
    for (m, n), path in (((100003, 13), "tiles"), ((777, 48), "tiles"), ((100003, 8), "vectors"),
                         ((5000, 16), "vectors"), ((3001, 64), "vectors"), ((1001, widest), "vectors"),
                         ((300, 20000), "rows")):
        problem, shape, tensors, ref, scale = _data("sgemv", (m, n), precision)
        verdict, launch = _run(impl, problem, shape, tensors, ref, scale, precision)
        assert verdict.ok and launch.config["path"] == path, (m, n, verdict.message, launch.config)
    problem, shape, tensors, ref, scale = _data("sgemv", (3001, 16), precision)
    a = torch.empty(3001 * 16 + 1, device="cuda", dtype=tensors["A"].dtype)[1:].view(3001, 16)  # off 16 bytes
    a.copy_(tensors["A"])
    verdict, launch = _run(impl, problem, shape, {"A": a, "x": tensors["x"]}, ref, scale, precision)
    assert verdict.ok and launch.config["path"] == "rows", (verdict.message, launch.config)


@pytest.mark.parametrize("m, n, least", [(1024, 65536, 2), (1, 2**20, 1024)])  # 1×2^20: 2048 slices, the block reduces
def test_v3_split_reduction_is_deterministic_and_its_counters_reset(m, n, least):
    impl = next(i for i in IMPLS if i.name == "sgemv/v3_split_n/cuda")
    fp32 = ladder("sgemv").problem.precision("fp32")
    problem, shape, tensors, ref, scale = _data("sgemv", (m, n), fp32)
    verdict, launch = _run(impl, problem, shape, tensors, ref, scale, fp32)
    assert verdict.ok and launch.keep.grid[1] >= least, (verdict.message, launch.keep.grid)
    first = launch.out.clone()
    for _ in range(20):
        launch.fn()
    torch.cuda.synchronize()
    assert torch.equal(first, launch.out)
    assert int(launch.keep.args[-1].sum()) == 0  # every row group's counter back at zero


@pytest.mark.parametrize("rung", ["v1_naive", "v3_register_tile", "v4_double_buffer", "v6_warp_tile", "v7_multistage",
                                  "v8_3xtf32", "v9_split_k_multistage", "v13_skinny_m"])
def test_padded_rows_are_read_through_the_leading_dimension_and_columns_are_refused(rung):
    impl = next(i for i in IMPLS if i.name == f"sgemm/{rung}/cuda")
    fp32 = ladder("sgemm").problem.precisions[0]
    problem, shape, tensors, ref, scale = _data("sgemm", (33, 36, 40), fp32)
    for pad in (1, 4):  # an odd leading dimension takes the scalar path, a multiple of 4 the vector one
        padded = torch.empty(33, 40 + pad, device="cuda")[:, :40]
        padded.copy_(tensors["A"])
        verdict, launch = _run(impl, problem, shape, {"A": padded, "B": tensors["B"]}, ref, scale, fp32)
        assert verdict.ok, verdict.message
        assert launch.config["ALIGNED"] == (pad % 4 == 0)
    columns = tensors["A"].t().contiguous().t()  # column-major A: rows are not contiguous
    with pytest.raises(ValueError, match="contiguous"):
        _run(impl, problem, shape, {"A": columns, "B": tensors["B"]}, ref, scale, fp32)


def test_the_mma_sync_rung_copies_each_operand_as_wide_as_its_rows_allow():
    """hgemm v6 reads every shape in place: each operand by the widest cp.async its rows allow (16, 8 or 4
    bytes: A_VEC, B_VEC halves), in pairs of halves through registers where its rows are an odd number of
    halves apart (1). The odd suite's shapes with each pair of widths, and A padded to a leading dimension
    (K + 2) that halves the width K alone allows; random inputs, then small integers (an element copied to
    the wrong row or column shows) repeated exactly; where an operand goes in pairs, DEFER=1 too."""
    impl = next(i for i in IMPLS if i.name == "hgemm/v6_mma_sync/cuda")
    bf16 = ladder("hgemm").problem.precision("bf16")
    for shape, widths in (((222, 2002, 204), (4, 2)), ((228, 4, 522), (2, 4)), ((166, 419, 98), (2, 1)),
                          ((45, 37, 59), (1, 1)), ((130, 136, 72), (8, 8))):
        problem, sh, tensors, ref, scale = _data("hgemm", shape, bf16)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, bf16)
        assert verdict.ok, (shape, verdict.message)
        assert (launch.config["A_VEC"], launch.config["B_VEC"]) == widths, (shape, launch.config)
        _small_integers_pass_and_repeat_exactly(impl, problem, sh, bf16, shape)
        if 1 in widths:  # DEFER=1: the pairs held in registers across a slice, stored after its products
            verdict, launch = _run(impl, problem, sh, tensors, ref, scale, bf16, config={**impl.params, "DEFER": 1})
            assert verdict.ok and launch.config["DEFER"] == 1, (shape, "DEFER=1", verdict.message)
    problem, sh, tensors, ref, scale = _data("hgemm", (222, 2002, 204), bf16)
    padded = torch.empty(222, 206, dtype=tensors["A"].dtype, device="cuda")[:, :204]
    padded.copy_(tensors["A"])
    verdict, launch = _run(impl, problem, sh, {"A": padded, "B": tensors["B"]}, ref, scale, bf16)
    assert verdict.ok, verdict.message
    assert launch.config["A_VEC"] == 2, launch.config


def test_the_mma_sync_rung_fits_each_tile_it_may_pick():
    """hgemm v6 at FIT=1 (declared) halves BM and/or BN where 128 × 128 tiles are fewer than the SMs, and quarters
    both where the halves still leave a quarter of them idle or one wave of 32 × 32 tiles covers at most three
    quarters of their area (study/ops/hgemm_mma_sync.py, fitted_tile): each tile on 16-byte rows and on pairs,
    random inputs, then small integers repeated exactly; the tile that ran is the one the plan names."""
    from study.ops.hgemm_mma_sync import fitted_tile

    impl = next(i for i in IMPLS if i.name == "hgemm/v6_mma_sync/cuda")
    bf16 = ladder("hgemm").problem.precision("bf16")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tiles = set()
    for shape in ((1199, 1726, 72), (1100, 1024, 64), (1030, 1000, 40), (222, 2002, 204), (166, 419, 98),
                  (1101, 1023, 65)):
        problem, sh, tensors, ref, scale = _data("hgemm", shape, bf16)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, bf16)
        assert verdict.ok, (shape, verdict.message)
        tile = (launch.config["BM"], launch.config["BN"])
        assert tile == fitted_tile(shape[0], shape[1], 128, 128, sms), (shape, launch.config)
        tiles.add(tile)
        _small_integers_pass_and_repeat_exactly(impl, problem, sh, bf16, shape)
    assert len(tiles) == 5, tiles  # on the H200's 132 SMs every tile of the five runs


@pytest.mark.parametrize("backend_name", ["cuda", "triton"])
def test_the_split_mma_sync_rung_splits_long_k_in_place_and_repeats_exactly(backend_name):
    """hgemm v12 (v6's tile over K ranges, summed in range order by each tile's last block) at the odd suite's
    long-K skinny shapes, each operand at its own copy width (pairs of halves where K or N is odd), at 16-byte rows
    with HOIST=1, and where one range is planned (v6's path): random inputs, then small integers repeated
    exactly with C poisoned between launches (the counters set back by each tile's last block); the tile that ran
    is the one FIT weighs by its K ranges (64 × 64 at 4517×62×2411, 222×2002×204 and 166×419×998, else 32 × 32), the
    plan the one split_mma_plan names for it, also at three blocks an SM (BLOCKS_PER_SM=3)."""
    from study.ops.hgemm_mma_sync import fitted_tile, split_mma_plan, split_ranges

    impl = next(i for i in IMPLS if i.name == f"hgemm/v12_split_k_mma_sync/{backend_name}")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for precision_name in ("bf16", "fp16"):
        precision = ladder("hgemm").problem.precision(precision_name)
        for shape, hoist, per_sm, tile in (((1045, 20, 3741), 0, 2, 32), ((4517, 62, 2411), 0, 2, 64),
                                           ((4517, 62, 2411), 0, 3, 64), ((228, 4, 522), 0, 2, 32),
                                           ((64, 64, 4096), 1, 2, 32), ((222, 2002, 204), 0, 2, 64),
                                           ((166, 419, 998), 0, 2, 64)):
            config = {**impl.params, "BLOCKS_PER_SM": per_sm, **({"HOIST": hoist} if backend_name == "cuda" else {})}
            problem, sh, tensors, ref, scale = _data("hgemm", shape, precision)
            verdict, launch = _run(impl, problem, sh, tensors, ref, scale, precision, config=config)
            assert verdict.ok, (shape, precision_name, verdict.message)
            bm, bn = fitted_tile(shape[0], shape[1], 128, 128, sms, split_ranges(sh, config, sms))
            assert (launch.config["BM"], launch.config["BN"]) == (bm, bn) == (tile, tile), (shape, launch.config)
            # the CUDA rung caps the blocks an SM by what the driver says its build holds; the twin does not
            held = launch.config.get("blocks_per_sm", per_sm)
            assert 1 <= held <= per_sm, (shape, launch.config)
            splits, _ = split_mma_plan(*shape, bm, bn, impl.params["BK"], impl.params["MIN_SLICES"], sms, per_sm=held)
            assert launch.config["splits"] == splits, (shape, launch.config)
            _small_integers_pass_and_repeat_exactly(impl, problem, sh, precision, (shape, precision_name))


def test_library_baseline_sets_its_switches_and_restores_them():
    impl = next(i for i in IMPLS if i.name == "sgemm/torch_matmul/cublas")
    fp32 = ladder("sgemm").problem.precisions[0]
    problem, shape, tensors, ref, scale = _data("sgemm", (256, 256, 1024), fp32)
    matmul = torch.backends.cuda.matmul
    before = (matmul.fp32_precision, matmul.allow_fp16_reduced_precision_reduction)
    matmul.fp32_precision = "tf32"
    matmul.allow_fp16_reduced_precision_reduction = True
    try:
        verdict, launch = _run(impl, problem, shape, tensors, ref, scale, fp32)
        assert verdict.ok, verdict.message  # TF32 would exceed the FP32 tolerance
        assert launch.config["tf32"] is False and launch.config["reduced_precision_reduction"] is False
        assert matmul.fp32_precision == "tf32" and matmul.allow_fp16_reduced_precision_reduction is True
    finally:
        matmul.fp32_precision, matmul.allow_fp16_reduced_precision_reduction = before


def test_tiny_budget_run_of_the_whole_pipeline(tmp_path, monkeypatch):
    from study import hardware, report, results
    from study.plan import plan
    from study.session import Session, run
    from study.timing import TimerSettings

    monkeypatch.setenv("STUDY_CACHE_DIR", str(tmp_path / "cache"))
    shapes = {"sgemm": [{"M": 256, "N": 192, "K": 132}], "sgemv": [{"M": 1000, "N": 3000}],
              "bgemm": [{"batch": 3, "M": 96, "N": 80, "K": 64}], "softmax": [{"M": 64, "N": 1000}],
              "hgemm": [{"M": 256, "N": 192, "K": 136}], "gemm_bias_relu": [{"M": 256, "N": 192, "K": 136}]}
    for op in sorted({i.op for i in IMPLS} - set(shapes)):  # a new op (or a plugin's) joins at a shape it declares
        problem = ladder(op).problem
        shapes[op] = [dict(s) for s in (problem.sanitize_shapes or problem.default_shapes)[:1]]
    # torch.compile's autotune-on mode (max-autotune) tunes Triton GEMM templates for minutes a case: the
    # pipeline is what this test checks, so "on" compiles in the default mode here (the mode is recorded).
    from study.ops import gemm_bias_relu

    monkeypatch.setitem(gemm_bias_relu.INDUCTOR_MODE, True, "default")
    cases = plan(list(shapes), shapes=shapes, autotune="both")
    device = hardware.current_device()
    settings = TimerSettings(reps=20, warmup_ms=1, min_warmup=1)
    records = run(cases, Session(settings, device, seed=3))
    doc = results.document(results.environment(device, settings, ["pytest"]), records)
    assert {m["implementation"] for m in doc["measurements"]} == {i.name for i in IMPLS}
    from study.backends.library import missing_requirement

    optional = {i.name for i in IMPLS if missing_requirement(i)}  # e.g. cuBLASLt without nvmath-python
    # a rung planned at a precision it does not implement is skipped with that reason; anything else must run
    # so is a rung at a shape outside its scope (hgemm v10 at M > 64, study.problem.out_of_scope)
    unfit = [m for m in doc["measurements"] if m["status"] == "skipped"
             and (re.match(r"this (rung|twin) implements .* only, not ", m["reason"])
                  or is_out_of_scope(m["reason"]))]
    failed = [(m["implementation"], m["precision"], m["autotune"], m["status"], m["reason"])
              for m in doc["measurements"] if m["implementation"] not in optional and m["status"] != "ok"
              and m not in unfit]
    assert not failed, failed
    for m in doc["measurements"]:
        if m["implementation"] in optional:
            assert m["status"] == "skipped" and "not installed" in m["reason"]
            continue
        if m in unfit:
            continue
        assert len(m["samples_ms"]) == 20 and m["median_ms"] > 0 and m["x_ref"] > 0
        assert (m["gbps"] if m["work"]["bound"] == "memory" else m["gflops"]) > 0
        if m["mode"] == "cold":
            assert 0 < m["pct_peak"] < 100
    tuned = [m for m in doc["measurements"] if m["backend"] == "cuda" and m["autotune"] == "on" and m["status"] == "ok"]
    assert all(m["autotune_log"]["trials"] for m in tuned)
    path = tmp_path / "r.json"
    results.write(path, doc)
    md = report.write_report(results.load(path), tmp_path / "r.md").read_text()
    assert "GB/s cold" in md and "GB/s hot" in md and "GFLOPS" in md
    for name in ("r-sgemm.png", "r-sgemv.png", "r-sgemv-roofline.png"):
        assert (tmp_path / "figures" / name).is_file()


@pytest.mark.parametrize("rung", ["v2_batched_split_k", "v3_batched_skinny_m"])
@pytest.mark.parametrize("backend_name", ["cuda", "triton"])
def test_the_batched_split_rung_splits_decode_attention_per_entry_and_repeats_exactly(rung, backend_name):
    """bgemm v2 (hgemm v12 on each entry) and v3 (hgemm v10 over the batch) at the attention suites' decode
    shapes, which split K, and odd ones (pairs of halves where K or N is odd; v3 stages them): random inputs, then
    small integers repeated exactly with C poisoned between launches; an entry's planes and counters apart from
    the next's (a mix-up shows as another entry's sums)."""
    impl = next(i for i in IMPLS if i.name == f"bgemm/{rung}/{backend_name}")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    for precision_name in ("fp16", "bf16"):
        precision = ladder("bgemm").problem.precision(precision_name)
        for shape in ((32, 16, 128, 4096), (25, 1, 64, 1024), (32, 1, 4096, 128), (3, 17, 33, 599), (5, 45, 37, 1001)):
            problem, sh, tensors, ref, scale = _data("bgemm", shape, precision)
            verdict, launch = _run(impl, problem, sh, tensors, ref, scale, precision)
            assert verdict.ok, (shape, precision_name, verdict.message)
            assert (launch.config["splits"] > 1) == (shape[3] >= 599), (shape, launch.config)
            _small_integers_pass_and_repeat_exactly(impl, problem, sh, precision, (shape, precision_name))


@pytest.mark.parametrize("name", ["sgemm/v5_split_k", "sgemm/v9_split_k_multistage", "sgemm/v10_split_k_two_pass",
                                  "hgemm/v9_split_k", "sgemm/v12_3xtf32_split_k", "gemm_bias_relu/v3_split_k",
                                  "hgemm/v12_split_k_mma_sync"])
def test_split_k_splits_skinny_products_only_and_repeats_exactly(name):
    # sgemm v5, v9, v10, v12, hgemm v9 and v12 and gemm_bias_relu v3 record the K ranges their launch planned: several
    # for 64×64×4096 (one tile for 132 SMs), one for 4096³ (256 tiles or more); the ordered reduction (a
    # fixed-order second kernel) gives the same bits on every launch.
    impl = next(i for i in IMPLS if i.name == f"{name}/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    op = impl.op
    precision = ladder(op).problem.precisions[0] if op == "sgemm" else ladder(op).problem.precision("bf16")
    for shape, several in (((64, 64, 4096), True), ((4096, 4096, 4096), False)):
        problem, sh, tensors, ref, scale = _data(op, shape, precision)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, precision)
        assert verdict.ok, verdict.message
        assert (launch.config["splits"] > 1) == several, launch.config
        first = launch.out.clone()
        for _ in range(3):
            launch.out.fill_(float("nan"))
            launch.fn()
            torch.cuda.synchronize()
            assert torch.equal(launch.out, first), shape


@pytest.mark.parametrize("name", ["hgemm/v10_skinny_m", "gemm_bias_relu/v4_skinny_m"])
def test_skinny_m_computes_c_transposed_at_every_token_width_and_repeats_exactly(name):
    # hgemm v10 (and gemm_bias_relu v4, its kernel with the bias and ReLU in the store or the reduction) at
    # each TOKENS width (1, 13, 32 and 64 tokens: 8, 16, 32, 64), split two ways (4096 × 4096: FIT_BN's 64 tiles
    # of 64 columns) and not split (11008 columns: 86 tiles of 128); the small integers show any element put at (n, m)
    # instead of (m, n), or a bias at the wrong column; the splits summed in order by each tile's last unit
    # give the same bits at every launch, C poisoned between them (a count per tile left unreset would leave
    # C unwritten at the next launch).
    impl = next(i for i in IMPLS if i.name == f"{name}/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    op = impl.op
    bf16 = ladder(op).problem.precision("bf16")
    for shape, tokens, several in (((1, 4096, 4096), 8, True), ((13, 4096, 4096), 16, True),
                                   ((32, 11008, 4096), 32, False), ((64, 4096, 4096), 64, True)):
        problem, sh, tensors, ref, scale = _data(op, shape, bf16)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, bf16)
        assert verdict.ok, (shape, verdict.message)
        assert launch.config["TOKENS"] == tokens and (launch.config["splits"] > 1) == several, launch.config
        assert launch.config["BN"] == (64 if several else 128), launch.config
        _small_integers_pass_and_repeat_exactly(impl, problem, sh, bf16, shape)


@pytest.mark.parametrize("name", ["hgemm/v10_skinny_m", "gemm_bias_relu/v4_skinny_m"])
def test_skinny_m_reads_weights_tma_cannot_take_in_place_at_every_point(name):
    # B's rows no multiple of 16 bytes apart: read where they lie by eight tensor maps, one per residue of
    # k mod 8, each from its first row rounded down to 16 bytes, each row shifted by its residue's offset
    # on chip into the swizzled box (hgemm/skinny_m.cuh). GPT-2's LM head (50257 columns), an odd K with a
    # tail tile, a padded leading dimension, a B that starts one element past an aligned word (every
    # map's start rounded down), K = 5 (residues 5–7 without a row: zeros); small integers show a row
    # shifted by the wrong offset or stored at the wrong k; a second launch gives the same bits.
    impl = next(i for i in IMPLS if i.name == f"{name}/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    op = impl.op
    for shape, pad, offset, precision in (((1, 50257, 1600), 0, 0, "bf16"), ((13, 4099, 1601), 0, 0, "fp16"),
                                          ((64, 2051, 136), 0, 0, "bf16"), ((5, 1000, 520), 3, 0, "fp16"),
                                          ((7, 3000, 700), 0, 1, "bf16"), ((3, 1001, 5), 0, 0, "fp16")):
        prec = ladder(op).problem.precision(precision)
        problem, sh, tensors, ref, scale = _data(op, shape, prec)
        exact = problem.structured_inputs(sh, prec, "cuda")
        if pad or offset:  # rows of N + pad halves from `offset` halves past an aligned start
            for inputs in (tensors, exact):
                rows = sh["N"] + pad
                store = torch.empty(offset + sh["K"] * rows, device="cuda", dtype=inputs["B"].dtype)
                inputs["B"] = store[offset:].view(sh["K"], rows)[:, :sh["N"]].copy_(inputs["B"])
        exact_ref, exact_scale = problem.reference(exact, prec)
        for point in impl.space:
            for inputs, r, s in ((tensors, ref, scale), (exact, exact_ref, exact_scale)):
                verdict, launch = _run(impl, problem, sh, inputs, r, s, prec, config=point)
                assert verdict.ok, (shape, pad, offset, launch.config, verdict.message)
                assert launch.config["in_place"] == "B" and "B" not in launch.config.get("staged", ""), launch.config
            first = launch.out.clone()
            launch.fn()
            torch.cuda.synchronize()
            assert torch.equal(launch.out, first)


def test_the_split_wgmma_rung_fits_its_tile_height_to_a_few_rows():
    # sgemm v12's declared config: the height of its space whose plan finishes first by fitted_height's model
    # (at M ≤ 64 the smallest that covers M: A's rows are wgmma's N; 32 rows at 222×2002×204, whose K is too
    # short to split 32 tiles of 128), the K ranges planned from the fitted tile count; correct within the
    # FP32 gate.
    impl = next(i for i in IMPLS if i.name == "sgemm/v12_3xtf32_split_k/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    fp32 = ladder("sgemm").problem.precisions[0]
    for shape, bm, splits in (((1, 4096, 4096), 16, 4), ((16, 4096, 11008), 16, 4), ((33, 4096, 4096), 64, 4),
                              ((64, 64, 65536), 64, 128), ((5, 7, 1000), 16, 8), ((222, 2002, 204), 32, 1)):
        problem, sh, tensors, ref, scale = _data("sgemm", shape, fp32)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, fp32)
        assert verdict.ok, (shape, verdict.message)
        assert (launch.config["BM"], launch.config["splits"]) == (bm, splits), (shape, launch.config)


def test_the_skinny_m_ffma_rung_fits_its_rows_to_m_and_repeats_exactly():
    # sgemm v13: ROWS the smallest of 1–32 that holds M (33–64: two row groups of 32), K cut into ranges that
    # each column block's last block sums in order (a count left unreset would leave C unwritten at the next
    # launch); B's rows 16 bytes apart by a multiple (16-byte loads) or not (N = 50257: 4-byte loads, ALIGNED
    # = 0); small integers show an element put in another row or column; the same bits at every launch, C
    # poisoned between them. The ranges are the wave plan's for the blocks the driver fits an SM: at
    # 3×50257×1600 one range (393 column blocks fill the SMs already; c58 ran it so), several elsewhere.
    impl = next(i for i in IMPLS if i.name == "sgemm/v13_skinny_m/cuda")
    fp32 = ladder("sgemm").problem.precisions[0]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    splits = []
    for shape, rows, aligned in (((1, 4096, 4096), 1, 1), ((3, 50257, 1600), 4, 0), ((16, 4096, 11008), 16, 1),
                                 ((33, 1000, 520), 32, 1), ((64, 4095, 300), 32, 0)):
        problem, sh, tensors, ref, scale = _data("sgemm", shape, fp32)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, fp32)
        assert verdict.ok, (shape, verdict.message)
        config = launch.config
        assert (config["rows"], config["ALIGNED"]) == (rows, aligned), (shape, config)
        plan = skinny_plan(*shape, config["ROWS"], config["COLS"], config["A_FLOATS"], config["blocks_per_sm"], sms)
        assert (config["splits"], config["split_k"]) == plan, (shape, config)
        splits.append(config["splits"])
        _small_integers_pass_and_repeat_exactly(impl, problem, sh, fp32, shape)
    assert sum(s > 1 for s in splits) >= 3, splits  # the ordered sum of ranges runs at most of these shapes


def test_softmax_v4_keeps_rows_that_fit_on_chip_and_records_the_fallback():
    impl = next(i for i in IMPLS if i.name == "softmax/v4_on_chip/cuda")
    fp32 = ladder("softmax").problem.precisions[0]
    for shape, on_chip in (((4, 4096), 1), ((4, 40000), 0)):
        problem, sh, tensors, ref, scale = _data("softmax", shape, fp32)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, fp32)
        assert verdict.ok and launch.config["on_chip"] == on_chip, (verdict.message, launch.config)


def test_softmax_v6_records_its_path_and_repeats_exactly():
    # CLUSTER=1 (v4's body) for rows one block holds, 8 blocks of 512 × 4 vectors for longer ones (on chip up
    # to 16384 vectors, two passes beyond); every block of a row reads the same merged maximum and sum, so
    # launches repeat bit for bit.
    impl = next(i for i in IMPLS if i.name == "softmax/v6_cluster_rows/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    expected = {("fp32", (4, 4096)): (1, 1), ("fp32", (3, 50257)): (8, 1), ("fp32", (4, 65536)): (8, 1),
                ("fp32", (32, 262144)): (8, 0), ("fp32", (2, 300000)): (8, 0), ("fp16", (4, 65536)): (1, 1),
                ("bf16", (3, 131072)): (8, 1), ("bf16", (32, 262144)): (8, 0), ("bf16", (2, 600000)): (8, 0)}
    for (name, shape), (cluster, on_chip) in expected.items():
        precision = ladder("softmax").problem.precision(name)
        problem, sh, tensors, ref, scale = _data("softmax", shape, precision)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, precision)
        assert verdict.ok, (name, shape, verdict.message)
        assert (launch.config["CLUSTER"], launch.config["on_chip"]) == (cluster, on_chip), (name, shape, launch.config)
        first = launch.out.clone()
        for _ in range(3):
            launch.fn()
        torch.cuda.synchronize()
        assert torch.equal(launch.out, first), (name, shape)


def _one_hot_and_nan_rows(impl, n, hot_at, nan_at, atol):
    """Three rows of length n through ``impl``: −inf everywhere but ``hot_at`` (exactly one-hot), a NaN at
    ``nan_at`` (the whole row NaN, as torch gives), and random values (torch.softmax's)."""
    problem = ladder("softmax").problem
    x = torch.full((3, n), float("-inf"), device="cuda")
    x[0, hot_at] = 5.0
    x[1] = torch.randn(n, device="cuda")
    x[1, nan_at] = float("nan")
    x[2] = torch.randn(n, device="cuda")
    launch = backend(impl.backend).prepare(impl, problem, {"X": x}, {"M": 3, "N": n}, problem.precisions[0])
    with launch.context():
        launch.fn()
    torch.cuda.synchronize()
    out = launch.out
    hot = torch.zeros(n, device="cuda")
    hot[hot_at] = 1.0
    assert torch.equal(out[0], hot), (n, out[0])
    assert torch.isnan(out[1]).all(), n
    assert torch.allclose(out[2], torch.softmax(x[2], -1), rtol=2e-4, atol=atol), n


@pytest.mark.parametrize("backend_name", ["cuda", "triton"])
def test_softmax_v6_carries_minus_infinity_and_nan_across_the_blocks_of_a_row(backend_name):
    # one live entry in the last block's part of the row, the rest −inf (blocks that see only −inf); a NaN in
    # one block's part: the whole row NaN in every block; on chip (262144) and in the fallback (300000)
    impl = next(i for i in IMPLS if i.name == f"softmax/v6_cluster_rows/{backend_name}")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    for n in (262144, 300000):
        _one_hot_and_nan_rows(impl, n, hot_at=n - 5, nan_at=7, atol=1e-9)


def test_softmax_v6_twin_exchanges_a_rows_statistics_through_l2_and_runs_again():
    # The programs of a row wait on each other (tickets; pairs tagged with their launch, counted from the tickets,
    # which no launch resets): the same bits launch after launch, then X negated in place, so that a pair left by
    # the last launch would show; one row (Triton's constant M) or a thousand, a power of two or not (rows off 16
    # elements: slices on X's 16-element grid, the row's two part blocks apart), 64 slices over 4,096 programs (rows whose programs wait on ones not yet
    # started). −inf and NaN across slices: the v6 carries test, whose Triton runs exchange.
    from study.ops.softmax_twins import split_rows_twin_launch
    from study.problem import check_output
    from triton_kernels import softmax as tk

    def negated(problem, tensors, precision, launch):
        tensors["X"].neg_()
        ref, scale = problem.reference(tensors, precision)
        verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision, launch.poison)
        assert verdict.ok, ("X negated", verdict.message)

    impl = next(i for i in IMPLS if i.name == "softmax/v6_cluster_rows/triton")
    _ring_rung_plans_and_repeats(impl, [(name, shape, None, {"exchange": 1, "on_chip": 1, "slices": slices,
                                                             "num_warps": warps})
                                        for name, shape, slices, warps in (
                                            ("fp32", (1, 50257), 13, 4), ("bf16", (1024, 50257), 13, 4),
                                            ("fp32", (64, 262144), 64, 4), ("bf16", (3, 300000), 19, 8),
                                            ("fp32", (64, 2**20), 64, 16), ("bf16", (5, 40001), 10, 4),
                                            ("bf16", (64, 262144), 16, 8))],
                                 then=negated)
    # each point of each width at a row off 16 elements, whichever the plan takes there
    for name, points in (("fp32", tk.EXCHANGE_POINTS), ("bf16", tk.EXCHANGE_POINTS_16BIT)):
        precision = ladder("softmax").problem.precision(name)
        for point in points:
            problem, sh, tensors, ref, scale = _data("softmax", (9, 50257), precision)
            out = problem.make_output(sh, precision, "cuda")
            fn = split_rows_twin_launch(impl.target.kernel, tensors, out, sh, dict(impl.params), precision,
                                        exchange_points=(point,))
            verdict = check_output(fn, out, problem, ref, scale, precision)
            assert fn.facts["exchange"] == 1 and verdict.ok, (name, point, verdict.message)
    # X 4 (FP32) or 2 (BF16) bytes off 16 (Y is not): the slices' 16-element grid is X's, no longer 16-byte aligned,
    # and Triton, which sees the pointer so, does not vectorise; right either way
    for name in ("fp32", "bf16"):  # 4 and 2 bytes off
        precision = ladder("softmax").problem.precision(name)
        problem, sh, tensors, ref, scale = _data("softmax", (5, 50257), precision)
        x = torch.empty(5 * 50257 + 1, device="cuda", dtype=tensors["X"].dtype)[1:].view(5, 50257)
        x.copy_(tensors["X"])
        verdict, launch = _run(impl, problem, sh, {"X": x}, ref, scale, precision)
        assert launch.config["exchange"] == 1 and verdict.ok, (name, verdict.message)


@pytest.mark.parametrize("rung", ["v2_shuffle_vector", "v3_online", "v4_on_chip", "v5_warp_per_row",
                                  "v6_cluster_rows"])
def test_softmax_rows_off_16_bytes_peel_when_x_and_y_share_the_offset_else_go_scalar(rung):
    impl = next(i for i in IMPLS if i.name == f"softmax/{rung}/cuda")
    fp16 = ladder("softmax").problem.precision("fp16")
    for n in (1031, 3001, 13):  # rows at every offset from 16 bytes; 13: at most one body vector a row
        problem, sh, tensors, ref, scale = _data("softmax", (9, n), fp16)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, fp16)
        assert (launch.config["ALIGNED"], launch.config["PEEL"]) == (0, 1) and verdict.ok, (n, verdict.message)
    problem, sh, tensors, ref, scale = _data("softmax", (9, 4096), fp16)
    x = torch.empty(9 * 4096 + 1, device="cuda", dtype=torch.float16)[1:].view(9, 4096)  # 2 bytes off, Y is not
    x.copy_(tensors["X"])
    verdict, launch = _run(impl, problem, sh, {"X": x}, ref, scale, fp16)
    assert (launch.config["ALIGNED"], launch.config["PEEL"]) == (0, 0) and verdict.ok, verdict.message


def _ring_rung_plans_and_repeats(impl, cases, then=None):
    """Each (precision, shape, config — None: the declared one —, what the launch records) through a ring rung
    (or v6's exchanging twin): correct, recorded as planned, and the same bits launch after launch (the output
    poisoned between them); ``then(problem, tensors, precision, launch)`` after them, where given."""
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    for name, shape, config, planned in cases:
        precision = ladder("softmax").problem.precision(name)
        problem, sh, tensors, ref, scale = _data("softmax", shape, precision)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, precision, config=config)
        assert verdict.ok, (name, shape, verdict.message)
        assert {k: launch.config[k] for k in planned} == planned, (name, shape, launch.config)
        first = launch.out.clone()
        for _ in range(3):
            launch.out.fill_(float("nan"))
            launch.fn()
            torch.cuda.synchronize()
            assert torch.equal(launch.out, first), (name, shape)
        if then is not None:
            then(problem, tensors, precision, launch)


def test_softmax_v7_plans_its_ring_walks_rows_past_its_stages_and_repeats_exactly():
    # One block a row while two stages hold it, else a cluster of 2 (FP32 40000 and 50257, BF16 65536); more rows
    # than the persistent grid has clusters × stages, so every stage is refilled and its mbarrier phase flips;
    # rows off 16 bytes (50257: PEEL, heads and tails by block 0). Clusters of 8 (BF16 131072 and 300001, FP32
    # 100000; 256 threads, then 512 past 96 values a thread) and a point of 4: the grid from the driver's count of
    # clusters that run at once.
    def planned(cluster, threads=None):
        return {"CLUSTER": cluster, "clusters_from": "SMs" if cluster <= 2 else "driver",
                **({"THREADS": threads} if threads else {})}

    four = {"CLUSTER": 4, "THREADS": 512, "STAGES": 2, "FIT": 0}
    _ring_rung_plans_and_repeats(next(i for i in IMPLS if i.name == "softmax/v7_tma_ring/cuda"), [
        ("fp32", (1000, 4096), None, planned(1)), ("fp32", (700, 40000), None, planned(2)),
        ("fp32", (300, 50257), None, planned(2)), ("bf16", (600, 50257), None, planned(1)),
        ("bf16", (300, 65536), None, planned(2)), ("fp16", (2000, 1031), None, planned(1)),
        ("fp32", (5, 3), None, planned(1)), ("bf16", (200, 131072), None, planned(8, 256)),
        ("fp32", (100, 100000), None, planned(8, 256)), ("bf16", (60, 300001), None, planned(8, 512)),
        ("bf16", (200, 131072), four, planned(4))])


def test_softmax_v7_carries_minus_infinity_and_nan_across_its_cluster_and_refuses_rows_at_other_offsets():
    impl = next(i for i in IMPLS if i.name == "softmax/v7_tma_ring/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    for n in (40000, 50257, 200000):  # FP32: clusters of 2 and 8, the live entry and the NaN in different blocks
        _one_hot_and_nan_rows(impl, n, hot_at=n - 5, nan_at=7, atol=1e-9)
    fp16 = ladder("softmax").problem.precision("fp16")
    problem, sh, tensors, ref, scale = _data("softmax", (9, 4096), fp16)
    x = torch.empty(9 * 4096 + 1, device="cuda", dtype=torch.float16)[1:].view(9, 4096)  # 2 bytes off, Y is not
    x.copy_(tensors["X"])
    with pytest.raises(Unsupported, match="same offset from 16 bytes"):
        _run(impl, problem, sh, {"X": x}, ref, scale, fp16)


def test_softmax_v8_walks_its_pieces_around_the_ring_and_repeats_exactly():
    # One block a row, a pair and 8 blocks; shares of one piece (short rows, many rows in flight), of 5–8 pieces
    # (the ring of 14 wraps mid-row) and of 13 (FP32 400000: one piece of look-ahead); rows off 16 bytes (50257,
    # 300001: PEEL); more rows than the grid has clusters; 8 blocks on a row of 10 vectors (ranks 5–7 hold none);
    # clusters of 3, 5, 6 and 7 (points of the space outside the FIT's base sizes).
    def planned(cluster, per_row):
        return {"CLUSTER": cluster, "per_row": per_row}

    def point(cluster):
        return {"CLUSTER": cluster, "THREADS": 512, "PIECE": 1024, "FIT": 0}

    _ring_rung_plans_and_repeats(next(i for i in IMPLS if i.name == "softmax/v8_piece_ring/cuda"), [
        ("fp32", (1000, 4096), None, planned(1, 1)), ("fp32", (700, 40000), None, planned(2, 5)),
        ("fp32", (300, 50257), None, planned(2, 7)), ("bf16", (600, 50257), None, planned(1, 7)),
        ("fp16", (2000, 1031), None, planned(1, 1)), ("fp32", (300, 262144), None, planned(8, 8)),
        ("bf16", (600, 300001), None, planned(8, 5)), ("fp32", (200, 400000), None, planned(8, 13)),
        ("fp32", (50, 40), {"CLUSTER": 8, "THREADS": 256, "PIECE": 1024, "FIT": 0}, planned(8, 1)),  # empty shares
        ("fp32", (70, 262144), point(5), planned(5, 13)), ("bf16", (70, 262144), point(3), planned(3, 11)),
        ("fp32", (40, 262144), point(6), planned(6, 11)), ("fp32", (40, 151936), point(7), planned(7, 6))])


def test_softmax_v8_balances_a_few_rows_over_its_cluster_sizes():
    # A grid that walks the rows in a few rounds takes the cluster size with the fewest rounds, no worse balanced
    # than the base's, by the driver's count of the clusters that run at once; its output is correct.
    from study.ops.softmax_rings import piece_ring_plan, piece_ring_resident, rounds_and_balance

    impl = next(i for i in IMPLS if i.name == "softmax/v8_piece_ring/cuda")
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for name, shape in (("fp32", (64, 262144)), ("bf16", (64, 151936)), ("fp32", (5, 3)), ("bf16", (8, 131072))):
        precision = ladder("softmax").problem.precision(name)
        problem, sh, tensors, ref, scale = _data("softmax", shape, precision)
        verdict, launch = _run(impl, problem, sh, tensors, ref, scale, precision)
        assert verdict.ok, (name, shape, verdict.message)
        base = piece_ring_plan(sh["N"], precision.element_bytes, impl.params)
        defines = impl.launcher.defines(impl.params, tensors, launch.out, sh, precision)  # the launch's, again
        resident = piece_ring_resident(defines, piece_ring_plan(sh["N"], precision.element_bytes,
                                                                {**defines, "FIT": 0}), sms)[0]
        defines = {**defines, **impl.params, "CLUSTER": base.cluster}
        rounds, balance = rounds_and_balance(sh["M"], piece_ring_resident(defines, base, sms)[0])
        got = rounds_and_balance(sh["M"], resident)
        assert got[0] <= rounds and got[1] >= balance, (name, shape, launch.config, (rounds, balance), got)
        assert launch.config["rounds"] == got[0]


@pytest.mark.parametrize("name", ["softmax/v8_piece_ring/cuda", "softmax/v9_overlap_ring/cuda",
                                  "softmax/v10_team_ring/cuda"])
def test_softmax_piece_rings_carry_minus_infinity_and_nan_across_their_clusters(name):
    impl = next(i for i in IMPLS if i.name == name)
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    for n in (40000, 50257, 262144, 400000):  # FP32: clusters of 2 and 8, the live entry and the NaN in different blocks
        _one_hot_and_nan_rows(impl, n, hot_at=n - 5, nan_at=7, atol=1e-9)


def test_softmax_v9_overlaps_rows_where_two_shares_fit_its_ring_and_repeats_exactly():
    # Shares of at most half the ring (the next row's first pass and publish before this row's gather) over one
    # block, a pair (v8's plans), 4, 8, and 3 blocks (points); shares of more (FP32 262144 over 8, FP32 151936
    # over 5: the rows take turns as in v8); many rows a cluster, so each of the four rows' exchange slots is
    # reused; rows off 16 bytes (50257, 300001: PEEL); 8 blocks on a row of 10 vectors (ranks 5–7 hold none).
    def planned(cluster, per_row, pieces=14):
        return {"CLUSTER": cluster, "per_row": per_row, "overlap": int(2 * per_row <= pieces)}

    def point(cluster, threads=512):
        return {"CLUSTER": cluster, "THREADS": threads, "PIECE": 1024, "FIT": 0}

    _ring_rung_plans_and_repeats(next(i for i in IMPLS if i.name == "softmax/v9_overlap_ring/cuda"), [
        ("fp32", (2000, 4096), None, planned(1, 1)), ("fp32", (700, 50257), None, planned(2, 7)),
        ("bf16", (1200, 50257), None, planned(1, 7)), ("bf16", (500, 128256), point(4), planned(4, 4)),
        ("bf16", (300, 262144), point(8), planned(8, 4)), ("fp32", (300, 262144), None, planned(8, 8)),
        ("bf16", (200, 300001), None, planned(8, 5)), ("fp32", (70, 151936), point(5), planned(5, 8)),
        ("bf16", (90, 151936), point(3), planned(3, 7)), ("fp32", (50, 40), point(8, 256), planned(8, 1, 32))])


def test_softmax_v10_spreads_rows_over_teams_of_the_grid_and_repeats_exactly_launch_after_launch():
    # Teams of 8 and 4 blocks over several rounds (the fit at 64 rows of 262144), pairs in one round, 44 blocks on a
    # row off 16 bytes (300001: PEEL), one block a row (no exchange), 33-block teams walking 50 rows each (every one
    # of the four rows' slots reused a dozen times, the tags running on), 16 blocks on a row of 10 vectors (ranks
    # 10–15 hold none), one row over every SM. Each case runs four launches on the same words: a tag from an earlier
    # launch taken for this one's would show as a difference (or NaN) in a later launch. The planned teams are those
    # of 132 SMs (H100 SXM, H200); on another GPU the cases run and repeat unchecked against them.
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def planned(team, teams, rounds):
        return {"TEAM": team, "teams": teams, "rounds": rounds} if sms == 132 else {}

    def point(team):
        return {"TEAM": team, "THREADS": 512, "PIECE": 1024, "FIT": 0}

    _ring_rung_plans_and_repeats(next(i for i in IMPLS if i.name == "softmax/v10_team_ring/cuda"), [
        ("fp32", (64, 262144), None, planned(8, 16, 4)), ("bf16", (64, 262144), None, planned(4, 33, 2)),
        ("bf16", (64, 151936), None, planned(2, 64, 1)), ("fp32", (3, 300001), None, planned(44, 3, 1)),
        ("fp32", (500, 4096), None, planned(1, 132, 4)), ("fp32", (200, 50257), point(33), planned(33, 4, 50)),
        ("bf16", (7, 80), point(16), planned(16, 7, 1)), ("bf16", (1, 262144), None, planned(132, 1, 1))])


@pytest.mark.parametrize("impl", [i for i in IMPLS if i.op == "softmax"], ids=lambda i: i.name)
def test_softmax_rows_of_huge_magnitudes(impl):
    # A masked row of finfo.min everywhere (1/N each, as torch gives), one entry of 3e38 among ordinary values and
    # ±3e38 together (one-hot): a maximum past FLT_MAX / log2 e overflows m · log2 e, which the ring rungs' FFMA
    # exponent takes (their huge-row path); FP32 and BF16 (FP16 holds no such values), over one block, a pair and
    # a cluster of 8 where the rung splits rows.
    if _arch_reason(impl):
        pytest.skip(_arch_reason(impl))
    problem = ladder("softmax").problem
    ran = 0
    for name in ("fp32", "bf16"):
        precision = problem.precision(name)
        if name not in impl.precisions:
            continue
        dtype = getattr(torch, precision.dtype)
        for n in (1031, 4096, 50257, 200000):
            shape = {"M": 4, "N": n}
            if backend(impl.backend).check(impl, problem, shape, precision):
                continue
            x = torch.randn(4, n, device="cuda")
            x[0] = torch.finfo(dtype).min
            x[1, n // 3] = 3e38
            x[2, n - 2], x[2, 5] = 3e38, -3e38
            x = x.to(dtype)
            launch = backend(impl.backend).prepare(impl, problem, {"X": x}, shape, precision)
            with launch.context():
                launch.fn()
            torch.cuda.synchronize()
            got, want = launch.out.double(), torch.softmax(x.double(), -1)
            assert torch.isfinite(got).all(), (name, n, got[~torch.isfinite(got).all(-1)])
            assert torch.allclose(got, want, rtol=problem.tolerance[name], atol=1e-6), (name, n, (got - want).abs().max())
            ran += 1
    if not ran:
        pytest.skip("no case in this implementation's scope")


@pytest.mark.parametrize("impl", [i for i in IMPLS if i.op == "softmax"], ids=lambda i: i.name)
def test_softmax_rows_of_minus_infinity_but_one_and_rows_with_a_nan(impl):
    # −inf everywhere but one entry: exactly one-hot; a NaN anywhere: the whole row NaN, as torch gives.
    for n in (3, 1031, 4096):
        _one_hot_and_nan_rows(impl, n, hot_at=n // 2, nan_at=n - 1, atol=1e-7)


def test_a_kernel_given_too_little_dynamic_shared_memory_stops_instead_of_reading_past_it():
    # v7 indexes STAGES stages of shared memory sized in the kernel; the launch sizes them in
    # Python (gemm_common.ffma_warp_tile_smem). Launched with less, it must trap (an error), never compute.
    import subprocess
    import sys

    code = ("import torch, dataclasses\n"
            "from study.backends import backend\nfrom study.catalog import implementation, ladder\n"
            "import study.backends.cuda_launch as cl\n"
            "impl = implementation('sgemm/v7_multistage/cuda'); p = ladder('sgemm').problem\n"
            "shape = {'M': 256, 'N': 256, 'K': 256}; prec = p.precisions[0]\n"
            "t = p.make_inputs(shape, prec, 1, 'cuda')\n"
            "orig = impl.launcher.launch\n"
            "short = dataclasses.replace(impl.launcher, launch=lambda *a: dataclasses.replace(orig(*a), smem=1024))\n"
            "object.__setattr__(impl, 'launcher', short)\n"
            "launch = backend('cuda').prepare(impl, p, t, shape, prec)\n"
            "launch.fn(); torch.cuda.synchronize()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, proc.stderr[-2000:]
    assert "illegal instruction" in proc.stderr.lower() or "trap" in proc.stderr.lower() \
        or "unspecified launch failure" in proc.stderr.lower(), proc.stderr[-2000:]


@pytest.mark.parametrize("impl", [i for i in IMPLS if i.op == "gemm_bias_relu" and i.rung in ("v2_fused_wgmma",
                                                                                            "v3_split_k",
                                                                                            "v5_cluster_multicast")],
                         ids=lambda i: i.name)
def test_the_fused_wgmma_rung_rounds_once(impl):
    # The op's gate admits two roundings (the unfused path's); a fused rung adds the bias to its FP32
    # accumulator and rounds once, so at K = 8 it errs by at most u of the scale (plus FP32's ~1e-3 u),
    # where a second rounding reaches 1.2–1.6 u (tests/test_gemm_bias_relu.py shows the unfused twin so).
    # v3 at K = 8 has one slice, so one split: v2's path (its reduction rounds once too, but splits only
    # at K of hundreds, where outputs are far below the scale and a second rounding would not show). v5 at
    # 257 rows: two pairs, the second's lower tile past M.
    problem = ladder("gemm_bias_relu").problem
    for precision in problem.precisions:
        if precision.name not in impl.precisions:
            continue
        unit = {"fp16": 2.0**-11, "bf16": 2.0**-8}[precision.name]
        for shape in ((72, 136, 8), (257, 264, 8)):
            problem, sh, tensors, ref, scale = _data("gemm_bias_relu", shape, precision)
            verdict, _ = _run(impl, problem, sh, tensors, ref, scale, precision)
            assert verdict.ok and verdict.err <= 1.01 * unit, (shape, precision.name, verdict.err / unit)

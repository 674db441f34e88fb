"""The softmax op without a GPU: its gate separates the precisions and catches a kernel that
skips the maximum; the Triton twins (interpreter) on −inf, huge and long rows; v4's capacity."""

import os

import pytest
import torch
import triton
import triton.language as tl

from study.backends import backend
from study.backends.launch import Unsupported
from study.ops.softmax import SMALLEST_NORMAL, fits_on_chip
from study.precision import BF16_STORAGE, FP16_STORAGE, FP32
from study.catalog import implementation, ladder
from study.problem import check_output
from triton_kernels import softmax as tk

PROBLEM = ladder("softmax").problem
DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"


def _case(m, n, precision, seed=0, structured=False):
    shape = {"M": m, "N": n}
    tensors = (PROBLEM.structured_inputs(shape, precision, "cpu") if structured
               else PROBLEM.make_inputs(shape, precision, seed, "cpu"))
    ref, scale = PROBLEM.reference(tensors, precision)
    return tensors["X"], ref, scale


def _ok(out, ref, scale, precision):
    return PROBLEM.verify(out, ref, scale, precision).ok


def test_each_precisions_tolerance_passes_it_and_fails_the_next_lower():
    # FP32: FP32 math passes; the same result rounded to FP16 does not.
    x, ref, scale = _case(64, 1000, FP32)
    y = torch.softmax(x, -1)
    assert _ok(y, ref, scale, FP32) and not _ok(y.half().float(), ref, scale, FP32)
    # FP16 storage: an FP32-math result rounded to FP16 passes; rounded to BF16 it does not.
    x, ref, scale = _case(64, 1000, FP16_STORAGE)
    y = torch.softmax(x.float(), -1)
    assert _ok(y.half(), ref, scale, FP16_STORAGE) and not _ok(y.bfloat16().half(), ref, scale, FP16_STORAGE)
    # BF16 storage: FP32 math rounded to BF16 passes; a sum accumulated in BF16 does not.
    x, ref, scale = _case(64, 1000, BF16_STORAGE)
    e = torch.exp(x.float() - x.float().amax(-1, keepdim=True))
    assert _ok((e / e.sum(-1, keepdim=True)).bfloat16(), ref, scale, BF16_STORAGE)
    total = torch.zeros(64, 1, dtype=torch.bfloat16)
    for j in range(e.shape[1]):
        total = total + e[:, j:j + 1].bfloat16()
    assert not _ok((e / total.float()).bfloat16(), ref, scale, BF16_STORAGE)


def test_the_metric_is_relative_down_to_the_storage_types_smallest_normal():
    x, ref, scale = _case(4, 300, FP16_STORAGE)
    assert torch.equal(scale, ref + SMALLEST_NORMAL["fp16"])
    y = (ref * (1 + 1e-3)).half()  # 0.1 % off everywhere, tiny values included: within FP16's 1.5e-3
    assert _ok(y, ref, scale, FP16_STORAGE)
    assert not _ok((ref * (1 + 3e-3)).half(), ref, scale, FP16_STORAGE)


def test_a_kernel_that_skips_the_maximum_overflows_on_the_structured_inputs():
    x, ref, scale = _case(4, 64, FP32, structured=True)
    naive = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)  # exp(1000) = inf: NaN rows
    assert torch.isfinite(ref).all() and not _ok(naive, ref, scale, FP32)
    assert _ok(torch.softmax(x, -1), ref, scale, FP32)


def test_v4_holds_rows_up_to_its_registers():
    assert fits_on_chip(32768, 1024, 8, 4) and not fits_on_chip(32769, 1024, 8, 4)
    assert fits_on_chip(65536, 1024, 8, 8)  # FP16/BF16: 8 elements a vector
    assert not fits_on_chip(40000, 1024, 8, 4)  # the scalar path holds 4 a slot whatever the type


TWINS = [i.name for i in (implementation(f"softmax/{r.key}/triton") for r in ladder("softmax").rungs)]


@pytest.mark.parametrize("name", TWINS)
def test_twins_keep_rows_of_minus_infinity_but_one_and_huge_values_finite(name):
    impl = implementation(name)
    shape = {"M": 3, "N": 37}
    x = torch.full((3, 37), float("-inf"))
    x[0, 5] = 2.0           # one live entry: probability 1 there, 0 elsewhere
    x[1] = torch.linspace(-3e4, 3e4, 37)  # huge magnitudes: a naive exp overflows
    x[2, :] = 7.0           # all equal: 1/37 each
    x[2, 36] = float("-inf")
    tensors = {"X": x.to(DEVICE)}
    ref, scale = PROBLEM.reference(tensors, FP32)
    launch = backend("triton").prepare(impl, PROBLEM, tensors, shape, FP32)
    verdict = check_output(launch.fn, launch.out, PROBLEM, ref, scale, FP32)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("name", TWINS)
def test_twins_take_rows_of_huge_magnitude(name):
    # a masked row of finfo.min (1/N each), one entry of 3e38, and ±3e38 together (one-hot): where the CUDA ring
    # rungs' m·log2 e overflows (their GPU test is test_gpu.py's test_softmax_rows_of_huge_magnitudes)
    impl = implementation(name)
    shape = {"M": 3, "N": 37}
    x = torch.randn(3, 37, generator=torch.Generator().manual_seed(3))
    x[0] = torch.finfo(torch.float32).min
    x[1, 11] = 3e38
    x[2, 30], x[2, 3] = 3e38, -3e38
    launch = backend("triton").prepare(impl, PROBLEM, {"X": x.to(DEVICE)}, shape, FP32)
    launch.fn()
    assert torch.allclose(launch.out.cpu().double(), torch.softmax(x.double(), -1), rtol=2e-4, atol=1e-6)


def test_the_whole_row_twin_falls_back_to_two_passes_on_rows_beyond_its_registers():
    impl = implementation("softmax/v4_on_chip/triton")
    shape = {"M": 2, "N": 40000}  # WHOLE would be 65536 > 32768: the online path
    tensors = {"X": PROBLEM.make_inputs(shape, FP32, 5, "cpu")["X"].to(DEVICE)}
    ref, scale = PROBLEM.reference(tensors, FP32)
    launch = backend("triton").prepare(impl, PROBLEM, tensors, shape, FP32)
    verdict = check_output(launch.fn, launch.out, PROBLEM, ref, scale, FP32)
    assert verdict.ok, verdict.message


def test_the_thread_per_row_twin_compensates_its_serial_sum():
    # A plain serial FP32 sum of 8192 exponentials drifts ~7e-6 (N·2^-30: past the 2e-4 gate at
    # N = 2^18, found on the H200); the compensated one stays near 1e-7.
    impl = implementation("softmax/v0_thread_per_row/triton")
    shape = {"M": 2, "N": 8192}
    tensors = {"X": PROBLEM.make_inputs(shape, FP32, 3, "cpu")["X"].to(DEVICE)}
    ref, scale = PROBLEM.reference(tensors, FP32)
    launch = backend("triton").prepare(impl, PROBLEM, tensors, shape, FP32)
    verdict = check_output(launch.fn, launch.out, PROBLEM, ref, scale, FP32)
    assert verdict.ok and verdict.err < 1e-6, verdict


@pytest.mark.parametrize("name", ["softmax/v3_online/triton", "softmax/v4_on_chip/triton"])
def test_a_nan_in_a_row_makes_the_whole_row_nan_as_torch_does(name):
    # the online pair must carry a NaN through lanes that saw only −inf (found in review)
    impl = implementation(name)
    shape = {"M": 2, "N": 600}
    x = torch.randn(2, 600)
    x[0, 3] = float("nan")
    x[1, :300] = float("-inf")
    launch = backend("triton").prepare(impl, PROBLEM, {"X": x.to(DEVICE)}, shape, FP32)
    launch.fn()
    out = launch.out.cpu()
    assert torch.isnan(out[0]).all() and torch.isfinite(out[1]).all()
    assert torch.allclose(out[1], torch.softmax(x[1].double(), -1).float(), rtol=2e-4, atol=0)


def test_the_launch_picks_the_16_byte_path_the_peeled_one_or_single_elements():
    # ALIGNED: every row of X and Y on 16 bytes; PEEL: rows off 16 bytes, X and Y at the same offset
    # (each row's head and tail move singly, its body in vectors); neither: X and Y at different offsets.
    impl = implementation("softmax/v4_on_chip/cuda")
    fp16 = PROBLEM.precision("fp16")

    def paths(x, n):
        out = torch.empty(x.shape, dtype=x.dtype)
        d = PROBLEM.cuda_defines(impl.params, {"X": x}, out, {"M": x.shape[0], "N": n}, fp16)
        return d["ALIGNED"], d["PEEL"]

    assert paths(torch.zeros(4, 4096, dtype=torch.float16), 4096) == (1, 0)
    assert paths(torch.zeros(4, 3001, dtype=torch.float16), 3001) == (0, 1)
    offset = torch.zeros(4 * 4096 + 1, dtype=torch.float16)[1:].view(4, 4096)
    assert offset.data_ptr() % 16 == 2 and paths(offset, 4096) == (0, 0)


def test_v4_sizes_its_declared_block_to_the_row_and_tunes_its_points_as_written(fake_cuda):
    from study.backends import backend
    from study.ops.softmax import fitted_block
    from study.problem import DTYPES

    impl = implementation("softmax/v4_on_chip/cuda")
    assert impl.params["FIT"] == 1 and all(p["FIT"] == 0 for p in impl.space if p != dict(impl.params))

    def block(n, name, config=None):
        x = torch.zeros(2, n, dtype=DTYPES[PROBLEM.precision(name).dtype])
        d = fitted_block(dict(config or impl.params), {"X": x}, torch.empty_like(x), {"M": 2, "N": n},
                         PROBLEM.precision(name))
        return d["THREADS"], d["ON_CHIP"]

    # the fewest slots that hold the row (16-byte vectors; 4 floats a slot on the PEEL path), ties to more threads
    assert block(4096, "fp32") == (128, 8) and block(4096, "fp16") == (128, 4) and block(1024, "bf16") == (128, 4)
    assert block(32768, "fp32") == (1024, 8) and block(32768, "fp16") == (1024, 4) and block(3001, "fp32") == (128, 8)
    assert block(40000, "fp32") == (1024, 4)  # held by none: v3's two passes at 32 registers, two blocks an SM
    point = {"THREADS": 512, "ON_CHIP": 16, "FIT": 0}
    assert block(4096, "fp32", point) == (512, 16)  # a tuning point launches as written
    shape = {"M": 3, "N": 4096}
    tensors = PROBLEM.make_inputs(shape, PROBLEM.precision("fp32"), 0, "cpu")
    launch = backend("cuda").prepare(impl, PROBLEM, tensors, shape, PROBLEM.precision("fp32"))
    launch.fn()
    (symbol, grid, block_dims, _, _), = fake_cuda
    assert block_dims == (128, 1, 1) and launch.config["THREADS"] == 128 and launch.config["FIT"] == 1
    assert launch.config["on_chip"] == 1


def test_v6_takes_v4s_block_for_a_row_one_holds_and_8_blocks_of_512_by_4_beyond(fake_cuda):
    from study import kernel_header
    from study.ops.softmax import LONG_ROW_POINT, fitted_block, fitted_cluster
    from study.problem import DTYPES

    impl = implementation("softmax/v6_cluster_rows/cuda")
    assert impl.params["FIT"] == 1 and all(p["FIT"] == 0 for p in impl.space if p != dict(impl.params))

    def x_of(n, name, offset=0):
        flat = torch.zeros(2 * n + offset, dtype=DTYPES[PROBLEM.precision(name).dtype])
        return flat[offset:].view(2, n)

    def fit(n, name, offset=0, config=None):
        x = x_of(n, name, offset)
        d = fitted_cluster(dict(config or impl.params), {"X": x}, torch.empty_like(x), {"M": 2, "N": n},
                           PROBLEM.precision(name))
        return d["CLUSTER"], d["THREADS"], d["ON_CHIP"], d["STREAM_UNROLL"]

    # a row one block holds: CLUSTER=1 and v4's own pick (the same kernel code)
    for n, name in ((1, "fp32"), (1031, "fp16"), (4096, "fp32"), (4096, "bf16"), (32768, "fp32"), (65536, "fp16")):
        x = x_of(n, name)
        v4 = fitted_block({"THREADS": 1024, "ON_CHIP": 8, "FIT": 1}, {"X": x}, torch.empty_like(x), {"M": 2, "N": n},
                          PROBLEM.precision(name))
        assert fit(n, name) == (1, v4["THREADS"], v4["ON_CHIP"], impl.params["STREAM_UNROLL"]), (n, name)
    # longer: 8 blocks of 512 threads × 4 vectors (32 registers, four blocks an SM), on chip where they hold the
    # row (16384 16-byte vectors), else two passes over the cluster; 4 vectors loaded before use in them
    for n, name in ((32769, "fp32"), (50257, "fp32"), (65536, "fp32"), (131072, "fp32"), (262144, "bf16"),
                    (300000, "fp32"), (524288, "fp16")):
        assert fit(n, name) == (8, 512, 4, 4), (n, name)
    assert impl.params["STREAM_UNROLL"] == 1  # so the check above sees the fit's choice, not the config's
    assert fit(65536, "fp16", offset=1) == (8, 512, 4, 4)  # the scalar path: 4 elements a slot
    for path, point in LONG_ROW_POINT.items():  # the long-row points are points of the rungs' spaces
        assert any(point.items() <= p.items() for p in kernel_header.read(path).space), path
    point = {"CLUSTER": 4, "THREADS": 512, "ON_CHIP": 8, "FIT": 0, "STREAM_UNROLL": 1}
    assert fit(4096, "fp32", config=point) == (4, 512, 8, 1)  # a tuning point launches as written

    for (m, n), (grid, block, on_chip) in (((3, 4096), ((3, 1, 1), 128, 1)), ((3, 65536), ((24, 1, 1), 512, 1)),
                                           ((3, 262144), ((24, 1, 1), 512, 0)), ((2, 300000), ((16, 1, 1), 512, 0))):
        fake_cuda.clear()
        shape = {"M": m, "N": n}
        tensors = {"X": torch.zeros(m, n)}
        launch = backend("cuda").prepare(impl, PROBLEM, tensors, shape, FP32)
        launch.fn()
        (symbol, launched_grid, block_dims, _, _), = fake_cuda
        assert symbol == "softmax_v6_cluster_rows" and launched_grid == grid and block_dims == (block, 1, 1), n
        assert launch.config["on_chip"] == on_chip and launch.config["CLUSTER"] == grid[0] // m, launch.config


def test_v6_puts_a_row_on_cluster_consecutive_blocks_and_overflows_into_grid_y(fake_cuda):
    from study.ops.softmax import cluster_rows_check, cluster_rows_launch

    x = torch.zeros(1, 16)
    defines = {"CLUSTER": 8, "THREADS": 1024, "ON_CHIP": 8, "ALIGNED": 1, "PEEL": 0}
    launch = cluster_rows_launch(defines, {"X": x}, torch.empty_like(x), {"M": 20000, "N": 300000}, FP32)
    assert launch.grid == (8191 * 8, 3, 1) and launch.grid[0] % 8 == 0 and launch.grid[0] <= 65535
    assert launch.facts == {"on_chip": 0}
    assert cluster_rows_check(defines, {"M": 8191 * 65535, "N": 8}, FP32) is None
    assert "65535 × 65535" in cluster_rows_check(defines, {"M": 8191 * 65535 + 1, "N": 8}, FP32)


def _split_twin(shape, x, precision=FP32, slice_bytes=None):
    from study.ops.softmax_twins import split_rows_twin_launch

    impl = implementation("softmax/v6_cluster_rows/triton")
    out = PROBLEM.make_output(shape, precision, DEVICE)
    # most_slices=0: the launches without an exchange, on the GPU too (under the interpreter it has none)
    kw = {"most_slices": 0} if slice_bytes is None else {"slice_bytes": slice_bytes, "most_slices": 0}
    fn = split_rows_twin_launch(impl.target.kernel, {"X": x.to(DEVICE)}, out, shape, dict(impl.params), precision, **kw)
    return fn, out


@pytest.mark.parametrize("m,n,name,slice_bytes,slices,on_chip",
                         [(3, 40000, "fp32", None, 2, 0), (2, 70000, "fp16", None, 2, 0), (5, 1031, "fp32", 256, 8, 0),
                          (5, 1031, "fp16", 512, 5, 0), (4, 17, "fp32", 16, 2, 0), (3, 3, "fp32", None, 1, 1),
                          (2, 40000, "fp16", None, 1, 0), (2, 32768, "fp16", None, 1, 1)])
def test_the_split_row_twin_merges_its_slices_statistics(m, n, name, slice_bytes, slices, on_chip):
    # v6's twin: (maximum, sum) of each slice to a workspace, then a second launch merges and normalises;
    # a small slice budget splits short rows (the interpreter's speed), the last slice shorter. A row of one
    # slice is whole in the program's registers up to MAX_WHOLE_VALUES (32768 FP16), else two passes in it.
    precision = PROBLEM.precision(name)
    shape = {"M": m, "N": n}
    tensors = PROBLEM.make_inputs(shape, precision, n, "cpu")
    ref, scale = PROBLEM.reference(tensors, precision)
    fn, out = _split_twin(shape, tensors["X"], precision, slice_bytes)
    assert fn.facts == {"slices": slices, "on_chip": on_chip, "exchange": 0}
    verdict = check_output(fn, out, PROBLEM, ref, scale, precision)
    assert verdict.ok, verdict.message


@pytest.mark.parametrize("n,on_chip", [(32768, 1), (40000, 0)])
def test_the_whole_row_twin_holds_a_row_up_to_its_values_and_takes_two_passes_beyond(n, on_chip):
    # v4's twin: an FP16 row of 40000 is within its 128 KiB but past MAX_WHOLE_VALUES (32768: a 32-warp program's
    # registers; 65536 spill), so it takes v3's two passes; 32768 stays whole. Both correct, the path recorded.
    # (FP16 for BF16, the same bytes: the interpreter's BF16 rounding is not the GPU's, tests/test_triton_twins.py.)
    from study.ops.softmax_twins import whole_twin_launch

    precision = PROBLEM.precision("fp16")
    shape = {"M": 2, "N": n}
    tensors = PROBLEM.make_inputs(shape, precision, n, "cpu")
    ref, scale = PROBLEM.reference(tensors, precision)
    impl = implementation("softmax/v4_on_chip/triton")
    out = PROBLEM.make_output(shape, precision, DEVICE)
    fn = whole_twin_launch(impl.target.kernel, {"X": tensors["X"].to(DEVICE)}, out, shape, dict(impl.params), precision)
    assert fn.facts == {"on_chip": on_chip}
    verdict = check_output(fn, out, PROBLEM, ref, scale, precision)
    assert verdict.ok, verdict.message


def test_the_split_row_twin_carries_minus_infinity_and_nan_across_slices():
    # slices of −inf alone beside the one live entry: exactly one-hot; a NaN in one slice: the whole row NaN
    n = 1031
    x = torch.randn(4, n)
    x[0] = float("-inf")
    x[0, 900] = 3.0
    x[1, 10] = float("nan")
    x[2, :600] = float("-inf")
    x[3, 500:] = 1e4  # a maximum far above the first slices': their sums rescale to zero
    fn, out = _split_twin({"M": 4, "N": n}, x, slice_bytes=256)
    assert fn.facts == {"slices": 8, "on_chip": 0, "exchange": 0}
    fn()
    out = out.cpu()
    hot = torch.zeros(n)
    hot[900] = 1.0
    assert torch.equal(out[0], hot) and torch.isnan(out[1]).all()
    assert torch.allclose(out[2], torch.softmax(x[2].double(), -1).float(), rtol=2e-4, atol=0)
    assert torch.allclose(out[3], torch.softmax(x[3].double(), -1).float(), rtol=2e-4, atol=0)


def test_v7_rings_one_block_a_row_while_two_stages_hold_it_then_a_pair_then_eight():
    from study.ops.softmax_rings import RING_BYTES, tma_ring_plan

    fit = {"FIT": 1}
    plan = tma_ring_plan(50257, 2, fit)  # BF16 vocabulary row: 6,282 vectors, 100.5 KB: two stages in one block
    assert (plan.cluster, plan.stages, plan.chunk) == (1, 2, 50257 * 2 // 16)
    assert tma_ring_plan(32000, 2, fit).stages == 3  # 64 KB a row
    assert tma_ring_plan(4096, 4, fit).stages == 4   # short rows: as many stages as the kernel takes
    plan = tma_ring_plan(50257, 4, fit)  # FP32: 201 KB, one stage in a block; halves over a cluster of 2
    assert (plan.cluster, plan.stages, plan.chunk) == (2, 2, -(-(50257 * 4 // 16) // 2))
    assert plan.ring_bytes <= RING_BYTES
    plan = tma_ring_plan(128256, 2, fit)  # 256 KB: halves are one stage each; eighths, two stages of 256 threads
    assert (plan.cluster, plan.stages, plan.chunk, plan.threads) == (8, 2, 128256 * 2 // 16 // 8, 256)
    assert tma_ring_plan(151936, 4, fit).threads == 256  # 74 values a thread
    plan = tma_ring_plan(262144, 2, fit)  # 512 KB: eighths of 128 values a thread at 256: the config's threads
    assert (plan.cluster, plan.stages, plan.threads) == (8, 3, None)
    assert "v6 takes it" in tma_ring_plan(262144, 4, fit)  # 1 MB: an eighth is one stage of 128 KB
    assert tma_ring_plan(3, 4, fit).chunk == 1  # a row shorter than a vector: all head and tail, a 16-byte stage
    # a point of the space (FIT=0) runs only where its stages fit
    assert "exceed" in tma_ring_plan(40000, 4, {"FIT": 0, "CLUSTER": 1, "STAGES": 2})
    assert tma_ring_plan(40000, 4, {"FIT": 0, "CLUSTER": 2, "STAGES": 2}).chunk == 5000


def test_v7_twin_holds_a_row_whole_or_leaves_it_to_v6s_twin():
    from study.ops.softmax_twins import ring_twin_check

    assert ring_twin_check({"M": 8, "N": 32000}, BF16_STORAGE) is None
    assert "v6's twin" in ring_twin_check({"M": 8, "N": 50257}, BF16_STORAGE)  # 65536 values: more than it holds


def test_v7_twin_walks_more_rows_than_programs():
    impl = implementation("softmax/v7_tma_ring/triton")
    shape = {"M": 300, "N": 777}  # 300 rows over 132 programs: two or three rows each
    tensors = {"X": PROBLEM.make_inputs(shape, FP32, 4, "cpu")["X"].to(DEVICE)}
    ref, scale = PROBLEM.reference(tensors, FP32)
    launch = backend("triton").prepare(impl, PROBLEM, tensors, shape, FP32)
    assert launch.config["programs"] == 132
    verdict = check_output(launch.fn, launch.out, PROBLEM, ref, scale, FP32)
    assert verdict.ok, verdict.message


def test_v7_grids_as_many_clusters_as_run_at_once(monkeypatch):
    from study.backends import cuda
    from study.ops.softmax_rings import V7_PATH, resident_clusters

    monkeypatch.setattr(cuda, "active_clusters", lambda *a, **k: None)  # no GPU: the driver's count is missing
    big = 2 * 100 * 1024  # two 100 KB stages: one block an SM

    def count(cluster, smem, threads=512):
        return resident_clusters(V7_PATH, "softmax_v7_tma_ring", {}, cluster, threads, smem, 132)

    assert count(1, big) == (132, "SMs")
    assert count(2, big) == (66, "SMs")  # a pair fits a TPC
    assert count(1, 4 * 64 * 16) == (132 * 4, "SMs")  # short rows: 4 blocks an SM (threads decide)
    assert count(1, 4 * 64 * 16, threads=544) == (132 * 3, "SMs")  # v8: a loader warp besides 512
    assert count(8, big) == (16, "estimate")  # 8 GPCs of 16 SMs
    monkeypatch.setattr(cuda, "active_clusters", lambda *a, **k: 15)
    assert count(8, big) == (15, "driver")


def test_v7_autotune_times_the_points_whose_rings_hold_the_row_and_skips_the_rest(fake_cuda, tmp_path, monkeypatch):
    # c101: one point's ring too small for 128256 BF16 values (one block, two stages) refused the whole case
    from types import SimpleNamespace

    from study.backends import cuda, cuda_tune
    from study.backends.launch import Unsupported

    monkeypatch.setenv("STUDY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cuda, "active_clusters", lambda *a, **k: None)
    monkeypatch.setattr(cuda_tune, "check_output", lambda *a: SimpleNamespace(ok=True))
    timer = SimpleNamespace(device=SimpleNamespace(name="GPU", capability=(9, 0)), warm_up=lambda fn, flush: None,
                            samples=lambda fn, reps, flush: ([1.0] * reps, None), settings=SimpleNamespace(tune_reps=3))
    tuning = SimpleNamespace(timer=timer, mode="cold", ref=None, scale=None)
    impl, problem = implementation("softmax/v7_tma_ring/cuda"), ladder("softmax").problem
    shape = {"M": 4, "N": 128256}
    tensors = problem.make_inputs(shape, BF16_STORAGE, 0, "cpu")
    launch = backend("cuda").prepare(impl, problem, tensors, shape, BF16_STORAGE, tune=tuning)
    trials = launch.log["trials"]
    skipped = [t for t in trials if t["status"] == "skipped"]
    assert skipped and all("exceed" in t["reason"] for t in skipped)
    assert {t["config"]["CLUSTER"] for t in skipped} == {1, 2}  # 2 × 128 KB or 2 × 256 KB stages
    assert {t["config"]["CLUSTER"] for t in trials if t["status"] == "ok"} >= {4, 8}
    shape = {"M": 4, "N": 1 << 20}  # longer than any point's ring: the case, not a point, is refused
    tensors = problem.make_inputs(shape, BF16_STORAGE, 0, "cpu")
    with pytest.raises(Unsupported, match="no point of the autotune space takes this case"):
        backend("cuda").prepare(impl, problem, tensors, shape, BF16_STORAGE, tune=tuning)


def test_v8_plans_the_fewest_blocks_whose_share_fits_its_ring_one_and_a_half_times():
    from study.ops.softmax_rings import PIECE_RING_BYTES, piece_ring_plan

    fit = {"FIT": 1, "PIECE": 1024}
    plan = piece_ring_plan(50257, 2, fit)  # BF16: 6,282 vectors, 7 pieces of 16 KB in a ring of 14
    assert (plan.cluster, plan.per_row, plan.pieces) == (1, 7, 14) and plan.ring_bytes <= PIECE_RING_BYTES
    assert piece_ring_plan(50257, 4, fit).cluster == 2  # FP32: 13 pieces in one block leave 1 of look-ahead
    assert piece_ring_plan(128256, 2, fit).cluster == 2  # where v7 needs 8 blocks of two stages
    plan = piece_ring_plan(262144, 4, fit)  # FP32 1 MB: v7 has no two stages of it; 8 pieces of 8 blocks' shares
    assert (plan.cluster, plan.per_row) == (8, 8)
    plan = piece_ring_plan(400000, 4, fit)  # 13 pieces: past one and a half times, still a piece of look-ahead
    assert (plan.cluster, plan.per_row, plan.pieces) == (8, 13, 14)
    assert piece_ring_plan(458752, 4, fit).per_row == 14  # the whole ring: the next row loads behind the stores
    assert "v6 takes it" in piece_ring_plan(500000, 4, fit)  # 16 pieces: the ring would wait on its own
    plan = piece_ring_plan(1031, 2, fit)  # a share shorter than a piece: the piece is the share, 32 rows in flight
    assert (plan.piece, plan.pieces, plan.per_row) == (128, 32, 1)
    assert "takes more than" in piece_ring_plan(262144, 4, {"FIT": 0, "CLUSTER": 1, "PIECE": 1024})  # a point's scope


def test_v8_balances_a_few_rows_over_the_cluster_sizes_whose_rounds_are_fewest(monkeypatch):
    from study.ops import softmax_rings as rings

    counts = {1: 132, 2: 66, 3: 39, 4: 30, 5: 22, 6: 17, 7: 15, 8: 15}  # the driver's counts on an H100 (c106)
    monkeypatch.setattr(rings, "piece_ring_resident",
                        lambda defines, plan, sms, kernel=None: (counts[plan.cluster], "driver"))
    point = {"THREADS": 512, "PIECE": 1024}

    def fitted(m, n, element_bytes):
        base = rings.piece_ring_plan(n, element_bytes, {**point, "FIT": 1})
        return base.cluster, rings.balanced_plan({**point, "CLUSTER": base.cluster}, m, n, element_bytes, 132).cluster

    assert fitted(64, 262144, 4) == (8, 5)  # 5 rounds of 15 clusters (balance 0.85) → 3 of 22 (0.97)
    assert fitted(32, 262144, 4) == (8, 6)  # 2 rounds either way over 5 or 6 blocks: 0.94 balanced over 6
    assert fitted(64, 151936, 2) == (4, 2)  # one round of 64 pairs where 4 blocks take 3
    assert fitted(8, 131072, 4) == (4, 8)  # one round each: the rows over the most blocks
    assert fitted(128, 262144, 2) == (4, 4)  # 3 blocks: 4 rounds, but balanced 0.82 against the base's 0.85
    assert fitted(1024, 262144, 4) == (8, 8) and fitted(1024, 50257, 4) == (2, 2)  # many rounds: the base
    assert rings.rounds_and_balance(64, 15) == (5, 64 / 75) and rings.rounds_and_balance(3, 15) == (1, 0.2)


def test_v9_plans_as_v8_and_overlaps_where_that_plans_share_fits_its_ring_twice(fake_cuda, monkeypatch):
    # v9 forced to the fewest blocks whose share fits twice lost to v8's plan where that took more blocks (c110,
    # H100: 1024×262144 BF16 over 8 blocks 2,356 GB/s, v8 over 4 2,838): it plans as v8 and overlaps where it can.
    from study.backends import cuda

    monkeypatch.setattr(cuda, "active_clusters", lambda *a, **k: 15)  # 130 rows: 9 rounds, past FEW_ROUNDS
    for n, storage, cluster, per_row in ((50257, BF16_STORAGE, 1, 7), (50257, FP32, 2, 7), (128256, BF16_STORAGE, 2, 8),
                                         (151936, BF16_STORAGE, 4, 5), (262144, BF16_STORAGE, 4, 8),
                                         (262144, FP32, 8, 8)):
        launches = {}
        for name in ("v8_piece_ring", "v9_overlap_ring"):
            _, launches[name] = fake_cuda.run(implementation(f"softmax/{name}/cuda"), PROBLEM, {"M": 130, "N": n},
                                              storage)
        v8, v9 = (launches[k].config for k in ("v8_piece_ring", "v9_overlap_ring"))
        assert (v9["CLUSTER"], v9["per_row"]) == (v8["CLUSTER"], v8["per_row"]) == (cluster, per_row), n
        assert v9["overlap"] == int(2 * per_row <= v9["PIECES"]) and "overlap" not in v8


def test_v9_launches_as_v8_with_its_own_kernel(fake_cuda, monkeypatch):
    from study.backends import cuda

    monkeypatch.setattr(cuda, "active_clusters", lambda *a, **k: 15)
    impl = implementation("softmax/v9_overlap_ring/cuda")
    _, launch = fake_cuda.run(impl, PROBLEM, {"M": 300, "N": 151936}, BF16_STORAGE)
    (symbol, grid, block, args, smem), = fake_cuda
    assert symbol == "softmax_v9_overlap_ring" and block == (512 + 32, 1, 1)
    assert launch.config["CLUSTER"] == 4 and grid == (15 * 4, 1, 1) and launch.config["per_row"] == 5
    assert launch.config["rounds"] == 20 and int(args[-1]) == launch.config["chunk"]
    assert launch.config["overlap"] == 1  # 5 pieces a row in a ring of 14: the next row's first pass overlaps


def test_v8_launches_its_loader_warp_and_ring_over_a_grid_of_whole_clusters(fake_cuda, monkeypatch):
    from study.backends import cuda

    monkeypatch.setattr(cuda, "active_clusters", lambda *a, **k: 15)
    impl = implementation("softmax/v8_piece_ring/cuda")
    for shape, precision, cluster, clusters in (({"M": 300, "N": 50257}, BF16_STORAGE, 1, 132 * 2),
                                                 ({"M": 64, "N": 262144}, FP32, 8, 15), ({"M": 3, "N": 262144}, FP32, 8, 3)):
        _, launch = fake_cuda.run(impl, PROBLEM, shape, precision)
        (symbol, grid, block, args, smem), = fake_cuda
        assert symbol == "softmax_v8_piece_ring" and block == (512 + 32, 1, 1)
        assert launch.config["CLUSTER"] == cluster and grid == (clusters * cluster, 1, 1)  # none more than the rows
        assert smem == launch.config["PIECES"] * launch.config["PIECE"] * 16 == launch.config["pieces"] * 1024 * 16
        assert int(args[-1]) == launch.config["chunk"]


def test_v10_plans_teams_of_any_size_whose_share_leaves_the_ring_room_and_balances_their_rounds():
    from study.ops.softmax_rings import ROW_COST, team_plan

    fit = {"FIT": 1, "PIECE": 1024, "THREADS": 512}

    def planned(m, n, element_bytes, blocks=132):
        plan = team_plan(m, n, element_bytes, blocks, fit)
        return plan.team, plan.teams, plan.rounds(m), plan.ring.per_row

    # 64 rows of 1 MB: 16 teams of 8 blocks, 4 rounds of 128 KB shares (8 pieces in a ring of 14), where v8's
    # clusters, bound to a GPC, ran 22 of 5 blocks in 3 unbalanced rounds of 210 KB shares (13 pieces)
    assert planned(64, 262144, 4) == (8, 16, 4, 8) and planned(32, 262144, 4) == (8, 16, 2, 8)
    assert planned(64, 262144, 2) == (4, 33, 2, 8)  # 33 teams: two rounds, 64 of 66 team-rounds busy
    assert planned(64, 151936, 4) == (6, 22, 3, 7)
    assert planned(64, 151936, 2) == (2, 64, 1, 10)  # one round: a share need fit the ring only once
    assert planned(8, 131072, 4) == (16, 8, 1, 2)  # one round: more blocks would add a row's cost to smaller shares
    assert planned(1, 262144, 4) == (132, 1, 1, 1)  # one row over the whole GPU
    assert planned(64, 262144, 4, blocks=114) == (14, 8, 8, 5)  # the GPU's own SMs (an H100 PCIe's 114)
    for m, n, element_bytes in ((64, 262144, 4), (64, 151936, 2), (1024, 50257, 2), (3, 40000, 4)):
        plan = team_plan(m, n, element_bytes, 132, fit)
        assert plan.leaves_room(m) and plan.teams * plan.team <= 132
        for team in range(1, 133):  # no other team that leaves the ring room costs less
            other = team_plan(m, n, element_bytes, 132, {**fit, "FIT": 0, "TEAM": team})
            if isinstance(other, str) or not other.leaves_room(m):
                continue
            assert (plan.rounds(m) * (plan.ring.chunk + ROW_COST) <= other.rounds(m) * (other.ring.chunk + ROW_COST))
    assert "v6 takes it" in team_plan(64, 262144, 4, 132, {**fit, "FIT": 0, "TEAM": 2})  # a point's share too long
    assert "grid of 132" in team_plan(64, 262144, 4, 132, {**fit, "FIT": 0, "TEAM": 133})
    assert "no team" in team_plan(1, 1 << 26, 4, 132, fit)  # 256 MB: no team of 132 holds its share


def test_v10_launches_teams_of_consecutive_blocks_with_their_own_words_and_tickets(fake_cuda):
    from study.ops.softmax_rings import team_words

    impl = implementation("softmax/v10_team_ring/cuda")
    _, launch = fake_cuda.run(impl, PROBLEM, {"M": 64, "N": 262144}, FP32)
    (symbol, grid, block, args, smem), = fake_cuda
    config = launch.config
    assert symbol == "softmax_v10_team_ring" and block == (512 + 32, 1, 1)
    assert (config["TEAM"], config["teams"], config["rounds"], config["overlap"]) == (8, 16, 4, 0)
    assert grid == (8 * 16, 1, 1) and smem == config["PIECES"] * config["PIECE"] * 16
    x, y, m, n, chunk, words, tickets = args
    assert (int(m), int(n), int(chunk)) == (64, 262144, config["chunk"]) and config["chunk"] * 16 == 131072
    # the teams' words and the ticket counter: the launch's own, zeroed (the tags carry each launch's epoch)
    assert words.dtype == tickets.dtype == torch.int64 and not words.any() and not tickets.any()
    assert words.numel() == 16 * team_words(8) and tickets.numel() == 1
    shape = {"M": 4, "N": 1000}
    x = torch.empty(4 * 1000 + 1)[1:].view(4, 1000)  # 4 bytes off 16, Y is not
    x.copy_(PROBLEM.make_inputs(shape, FP32, 0, "cpu")["X"])
    with pytest.raises(Unsupported, match="same offset from 16 bytes"):
        backend("cuda").prepare(impl, PROBLEM, {"X": x}, shape, FP32)


def test_the_split_row_twin_exchanges_only_where_a_rows_programs_can_all_be_resident(monkeypatch):
    # slices of at most a point's values, multiples of 16; none past EXCHANGE_SLICES or the SMs, and none under the
    # interpreter, which runs one program after another (a waiting one would wait forever). FP32: 4096 values at 4
    # warps, 16384 at 16 where 4096 would take more than 64 slices (rows past 262144); FP16 and BF16: 16384 at 8,
    # unless 4096 at 4 fill their programs 10 % better (50257: 0.94 against 0.77; 151936: 0.98 against 0.93, not
    # enough).
    from study.ops.softmax_twins import exchange_plan, exchange_slices
    from triton_kernels import softmax as tk

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert tk.EXCHANGE_POINTS == ((4096, 4), (16384, 16)) and tk.EXCHANGE_SLICES == 64
    assert tk.EXCHANGE_POINTS_16BIT == ((16384, 8), (4096, 4))
    half = tk.EXCHANGE_POINTS_16BIT
    assert exchange_plan(50257, 132) == exchange_plan(50257, 132, half) == (13, 3872, 4)
    assert exchange_plan(40001, 132) == exchange_plan(40001, 132, half) == (10, 4016, 4)
    assert exchange_plan(262144, 132) == (64, 4096, 4) and exchange_plan(262144, 132, half) == (16, 16384, 8)
    assert exchange_plan(151936, 132) == (38, 4000, 4) and exchange_plan(151936, 132, half) == (10, 15200, 8)
    assert exchange_plan(300000, 132) == (19, 15792, 16) and exchange_plan(300000, 132, half) == (19, 15792, 8)
    assert exchange_plan(2**20, 132) == (64, 16384, 16) and exchange_plan(2**20 + 1, 132) is None
    assert exchange_plan(2**20, 132, half) == (64, 16384, 8) and exchange_plan(2**20 + 1, 132, half) is None
    assert exchange_plan(300000, 16) is None  # 19 slices (or 74), 16 SMs
    assert exchange_plan(50257, 132, most=0) is None
    assert exchange_plan(50257, 132, points=((16384, 32),)) == (4, 12576, 32)
    for n in (40000, 50257, 131073, 300001):  # a row off 16 columns may start 15 into its first slice
        for values in (16384, 8192, 4096):
            slices, size = exchange_slices(n, values)
            span = n if n % 16 == 0 else n + 15
            assert size % 16 == 0 and size <= values and (slices - 1) * size < span <= slices * size
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert exchange_plan(50257, 132) is None


@triton.jit
def _copy_by_aligned_slices(x_ptr, y_ptr, hits_ptr, whole_ptr, N, SLICE, SLICES, WHOLE: tl.constexpr):
    """Y = X through the three parts of each (row, slice) of v6's exchanging twin, counting each element's
    copies (``hits``) and the body's (``whole``)."""
    row = tl.program_id(0)
    s = tl.program_id(1)
    base, body, head, on_head, tail, on_tail = tk._aligned_slice(row, s, N, SLICE, WHOLE)
    at = base + tl.arange(0, WHOLE)
    tl.store(y_ptr + at, tl.load(x_ptr + at, mask=body), mask=body)
    tl.atomic_add(hits_ptr + at, 1, mask=body)
    tl.atomic_add(whole_ptr + at, 1, mask=body)
    tl.store(y_ptr + head, tl.load(x_ptr + head, mask=on_head), mask=on_head)
    tl.atomic_add(hits_ptr + head, 1, mask=on_head)
    tl.store(y_ptr + tail, tl.load(x_ptr + tail, mask=on_tail), mask=on_tail)
    tl.atomic_add(hits_ptr + tail, 1, mask=on_tail)


def test_the_exchanging_twins_slices_cover_each_row_once_in_whole_blocks_and_two_part_blocks():
    # _aligned_slice lays a row's slices on 16-element boundaries so that their loads are 16-byte vectors at any N
    # (the exchange itself cannot run in the interpreter): copying X through its three parts, every element of
    # every row lands once, the body only in whole 16-element blocks of the row, the parts only at its two ends.
    from study.ops.softmax_twins import exchange_slices, triton_next_pow2

    for m, n, values in ((5, 50257, 16384), (3, 1031, 256), (4, 17, 16), (7, 15, 16), (3, 4096, 1024),
                         (6, 33, 32), (2, 1000, 64), (4, 18, 32)):  # 18 in 32s: row 0's second slice is empty
        slices, size = exchange_slices(n, values)
        assert size % 16 == 0 and size <= max(values, 16)
        x = torch.arange(1, m * n + 1, dtype=torch.float32, device=DEVICE)
        y = torch.zeros_like(x)
        hits = torch.zeros(m * n, dtype=torch.int32, device=DEVICE)
        whole = torch.zeros_like(hits)
        _copy_by_aligned_slices[(m, slices)](x, y, hits, whole, n, size, slices, WHOLE=triton_next_pow2(size))
        assert torch.equal(y, x), (m, n, values)
        assert torch.equal(hits, torch.ones_like(hits)), (m, n, values)
        # the body's blocks: whole 16-element blocks inside one row; every other element is one of its two ends
        at = torch.arange(m * n, device=DEVICE)
        block_start = at - at % 16
        inside = (block_start >= at // n * n) & (block_start + 16 <= at // n * n + n)
        assert torch.equal(whole.bool(), inside), (m, n, values)


def _slice_stats(x, m, n, size, slices):
    """Each (row, slice)'s (maximum, sum of exp(x − maximum)) over the columns _aligned_slice gives it: slice s of a
    row starting at element a covers [a − a % 16 + s·size, … + size) ∩ the row."""
    stats = torch.zeros(m, slices, 2, dtype=torch.float64)
    for row in range(m):
        start = row * n
        first = start - start % 16
        for s in range(slices):
            part = x[max(start, first + s * size):min(start + n, first + (s + 1) * size)].double()
            top = part.max() if part.numel() else torch.tensor(float("-inf"), dtype=torch.float64)
            shift = top if top > float("-inf") else 0.0  # a slice of −inf alone (or none): sum 0
            stats[row, s] = torch.stack([top, (part - shift).exp().sum()])
    return stats


@pytest.mark.skipif(DEVICE != "cpu", reason="the interpreter's test of the words; test_gpu.py runs the exchange")
def test_the_exchanging_twins_tickets_number_each_launch_and_its_words_carry_that_launchs_tag(monkeypatch):
    # The exchange cannot run in the interpreter (a program waits for peers it runs later), but its words can: each
    # launch here finds its rows' words already holding this launch's tag and pairs equal in value to the slices'
    # but not in bits ((m + 1, d / e): the same d·e^m), so no program waits and the softmax comes out the same; then
    # every word must hold what its own program wrote, under that tag, and the ticket counter have counted
    # M × SLICES a launch — the epoch each launch's tag is taken from, with nothing reset. At most 2 polls, not
    # 2^24: a tag that went wrong fails here instead of polling for hours.
    from study.ops.softmax_twins import exchange_slices, triton_next_pow2

    monkeypatch.setattr(tk, "EXCHANGE_POLLS", tl.constexpr(2))
    m, n = 3, 50
    slices, size = exchange_slices(n, 16)
    stats = torch.zeros(m * slices * 2, dtype=torch.int64, device=DEVICE)
    sync = torch.zeros(1, dtype=torch.int64, device=DEVICE)
    values = torch.randn(m * n, dtype=torch.float32, device=DEVICE) * 4

    def launch_twin(x, y):
        tk.softmax_split_stats[(m, slices)](x, y, stats, sync, m, n, size, slices, BLOCK=16,
                                            WHOLE=triton_next_pow2(size), ONE=False, FITS=False, EXCHANGE=True,
                                            PAIRS=triton_next_pow2(slices))

    for launch, sign in enumerate((1, -1, 1)):  # −X: a word left from the last launch would show
        x = values * sign
        x[7] = float("-inf")
        x[50:64] = float("-inf")  # row 1's first slice (its columns 0–13): −inf alone
        expected = _slice_stats(x.cpu(), m, n, size, slices)
        finite = expected[..., 0] > float("-inf")
        seeded = expected.clone()
        seeded[..., 0] += finite
        seeded[..., 1] /= torch.where(finite, torch.e, 1.0)
        stats.copy_((((launch + 1) << 32) | seeded.float().view(torch.int32).to(torch.int64) & 0xFFFFFFFF).flatten())
        y = torch.full_like(x, float("nan"))
        launch_twin(x, y)
        assert sync.item() == (launch + 1) * m * slices
        written = stats.view(m, slices, 2).cpu()
        assert torch.equal(written >> 32, torch.full_like(written, launch + 1)), launch
        pairs = (written & 0xFFFFFFFF).to(torch.int32).view(torch.float32)
        assert torch.equal(pairs[..., 0], expected[..., 0].float()) and not finite[1, 0], launch
        assert torch.allclose(pairs[..., 1], expected[..., 1].float(), rtol=1e-5), launch
        assert torch.allclose(y.view(m, n), torch.softmax(x.view(m, n), -1), rtol=1e-5, atol=1e-7), launch
    # a fourth launch finds its peers' words still under the third's tag (as where they never come): each program
    # polls at most EXCHANGE_POLLS times and writes NaN, which the gate reports, where a GPU would hang
    launch_twin(x, y)
    assert sync.item() == 4 * m * slices and torch.isnan(y.view(m, n)).any(dim=1).all()


_COMPILE_EXCHANGE = """
import sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton_kernels import softmax as tk

dtype, rows, warps, whole, pairs = sys.argv[1], *(int(a) for a in sys.argv[2:])
signature = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "stats_ptr": "*i64", "sync_ptr": "*i64",
             "M": "constexpr" if rows == 1 else "i32", "N": "i32", "SLICE": "i32", "SLICES": "i32",
             **dict.fromkeys(("BLOCK", "WHOLE", "ONE", "FITS", "EXCHANGE", "PAIRS", "FAST"), "constexpr")}
constants = {"BLOCK": 4096, "WHOLE": whole, "ONE": False, "FITS": False, "EXCHANGE": True, "PAIRS": pairs, "FAST": True}
if rows == 1:
    constants["M"] = 1
# as a launch specialises them: the tensors' pointers 16-byte aligned, SLICE a multiple of 16 (N of 50257 is not)
names = list(signature)
attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in ("x_ptr", "y_ptr", "stats_ptr", "sync_ptr", "SLICE")}
source = ASTSource(fn=tk.softmax_split_stats, signature=signature, constexprs=constants, attrs=attrs)
kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": warps, "maxnreg": tk.EXCHANGE_REGISTERS})
print(kernel.asm["ptx"])
"""


@pytest.mark.parametrize("dtype, rows, warps, whole, spill", [("fp32", 1, 4, 4096, 0), ("bf16", 1024, 8, 16384, 128),
                                                            ("bf16", 1024, 4, 4096, 0)])
def test_the_exchanging_twin_compiles_for_sm90_at_one_row_and_polls_inside_its_loop(dtype, rows, warps, whole, spill,
                                                                                    tmp_path):
    # Triton passes an integer argument of 1 as a constant (M = 1: one row of a vocabulary, the suites' first),
    # which has no .to; compiled for sm_90 without a GPU, out of the interpreter (a process of its own), at one row
    # and at many, at the plan's points (16 pairs: rows of 50257 in 13 slices): the pair's two words by relaxed
    # exchange, the ticket a relaxed 64-bit add, the poll's loads both before the loop and in it (volatile: not
    # hoisted), the slice read in 16-byte vectors, and ptxas within the launch's registers: no spill at 32 values a
    # thread; at BF16's 64 (its slice kept in BF16 across the exchange) at most ``spill`` bytes around the sum — 80
    # with Triton 3.9's ptxas (88 before the fast exponent), where the slice converted to FP32 before the exchange
    # spilled 344
    import re

    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _COMPILE_EXCHANGE, dtype, str(rows), str(warps), str(whole), "16"],
                          capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr[-2000:]
    ptx = done.stdout
    assert ptx.count("atom.global.gpu.relaxed.exch.b64") == 2 and "atom.global.gpu.relaxed.add.u64" in ptx
    after = ptx[ptx.index("atom.global.gpu.relaxed.exch.b64"):]
    assert after.count("ld.volatile.global.b64") == 4, (dtype, rows)
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx, (dtype, rows)
    ptx_file = tmp_path / "exchange.ptx"
    ptx_file.write_text(ptx)
    tools = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    # the ptxas Triton compiles sm_90 with: "ptxas-blackwell" where the wheel has it (3.9 does), the newer of two
    ptxas = next(p for p in (os.path.join(tools, n) for n in ("ptxas-blackwell", "ptxas")) if os.path.exists(p))
    report = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(ptx_file), "-o", str(tmp_path / "x.cubin")],
                            capture_output=True, text=True).stderr
    used = re.search(r"Used (\d+) registers", report)
    spilled = re.search(r"(\d+) bytes spill stores", report)
    assert used and int(used.group(1)) <= tk.EXCHANGE_REGISTERS and spilled and int(spilled.group(1)) <= spill, report

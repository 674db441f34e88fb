"""Every registered .cu compiles with nvcc the way NVRTC compiles it (same -D defines,
common.cuh from the same folder), for each architecture its header declares (plus sm_90a, the
H200, where the declaration admits it), at every precision it implements, with and without
the aligned fast path; every autotune point too (sm_90a)."""

import functools
import itertools
import os
import re
import shutil
import subprocess

import pytest

from study.backends.cuda import kernel_source, nvcc_command
from study.paths import MICROBENCH_DIR
from study.catalog import implementations, ladder

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: the CUDA sources cannot be compiled here")
CUDA = [i for i in implementations() if i.backend == "cuda"]


def _defines(impl, config, precision_name, aligned, peel=0):
    return {**config, **ladder(impl.op).problem.precision(precision_name).cuda_defines, "ALIGNED": aligned,
            **({"PEEL": peel} if peel else {})}


def _paths(impl) -> tuple:
    """(ALIGNED, PEEL) pairs to compile: the scalar and 16-byte paths, and the peeled one where the
    kernel's source, its headers inlined as the loader inlines them, reads PEEL (softmax's row.cuh)."""
    text = kernel_source(impl.target.path)
    return ((0, 0), (1, 0)) + (((0, 1),) if re.search(r"#if PEEL|VECTOR_PATH", text) else ())


def _fitted_widths(impl, ends=False, in_place=False) -> tuple:
    """The defines a launch fits to M, to compile each value it may pick (``ends``: the narrowest and the
    widest only): TOKENS where the kernel reads it (hgemm v10's wgmma N; ``in_place`` adds the widest with B
    read in place, B_IN_PLACE=1: residue maps, shifter warps, the fewest stages that fit), ROWS (sgemm v13's
    rows of A a block); else none. And the operands a launch reads in place: ``in_place`` adds A_IN_PLACE=1
    where the kernel reads it (sgemm v11 and v12: A's residue maps, the splitters' shift, the stages that fit)."""
    from study.ops.hgemm import SKINNY_TOKENS
    from study.ops.sgemm_skinny_m import SKINNY_ROWS

    text = kernel_source(impl.target.path)
    if "#ifndef A_IN_PLACE" in text:
        return ({},) + (({"A_IN_PLACE": 1},) if in_place else ())
    if "#ifndef ROWS" in text:
        return tuple({"ROWS": r} for r in ((SKINNY_ROWS[0], SKINNY_ROWS[-1]) if ends else SKINNY_ROWS))
    if "#ifndef TOKENS" not in text:
        return ({},)
    return (tuple({"TOKENS": t} for t in ((SKINNY_TOKENS[0], SKINNY_TOKENS[-1]) if ends else SKINNY_TOKENS))
            + (({"TOKENS": SKINNY_TOKENS[-1], "B_IN_PLACE": 1},) if in_place else ()))


def _compile(impl, defines, arch, tmp_path, name=None, flags=()) -> str:
    """nvcc's messages (``flags`` added to its command) of a compile that must succeed."""
    out = tmp_path / f"{name or impl.target.symbol}.cubin"
    cmd = nvcc_command(impl.target.path, defines, arch, out) + list(flags)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    assert out.stat().st_size > 0
    return proc.stderr


@functools.lru_cache(maxsize=None)
def _names(path) -> frozenset:
    """The identifiers of a kernel's code: its headers inlined, comments dropped."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", kernel_source(path), flags=re.S)
    return frozenset(re.findall(r"\b[A-Za-z_]\w*\b", code))


def _code_key(impl, defines, arch) -> tuple:
    """What a compile depends on: the arch and the defines the kernel's code names. A define the code never
    names — a launch parameter such as MIN_SLICES or FIT, ALIGNED in a TMA kernel — cannot change the cubin,
    so two jobs that differ only there are one compile."""
    names = _names(impl.target.path)
    return arch, tuple(sorted((k, v) for k, v in defines.items() if k in names))


def _default_jobs(impl) -> list:
    """The declared config's compiles: each declared architecture, precision, path and fitted width."""
    return [({**_defines(impl, impl.params, precision, aligned, peel), **tokens}, arch)
            for arch in impl.target.test_targets() for precision in impl.precisions
            for aligned, peel in _paths(impl) for tokens in _fitted_widths(impl, in_place=True)]


def _compile_all(impl, jobs, tmp_path, done=()):
    """Compile (defines, arch) jobs, one nvcc process each, as many at once as the machine has cores
    (CI's two halve the wait), once per :func:`_code_key` and none whose key is in ``done`` (compiled by
    another test); the first failure is raised with its command and nvcc's message."""
    from concurrent.futures import ThreadPoolExecutor

    seen = {_code_key(impl, defines, arch) for defines, arch in done}
    unique = []
    for defines, arch in jobs:
        key = _code_key(impl, defines, arch)
        if key not in seen:
            seen.add(key)
            unique.append((defines, arch))
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        futures = [pool.submit(_compile, impl, defines, arch, tmp_path, f"job{n}") for n, (defines, arch) in
                   enumerate(unique)]
        for future in futures:
            future.result()


@pytest.mark.parametrize("impl", CUDA, ids=lambda i: i.name)
def test_default_config_compiles_for_its_declared_archs(impl, tmp_path):
    _compile_all(impl, _default_jobs(impl), tmp_path)


@pytest.mark.parametrize("impl", CUDA, ids=lambda i: i.name)
def test_every_autotune_point_compiles(impl, tmp_path):
    # The 16-byte path everywhere; the peeled one where the kernel has it; and the scalar path of the
    # points that change how addresses are formed (HOIST=1: hgemm v6, sgemm v7 and v8, gemm_bias_relu v1),
    # which the declared config does not.
    def paths(point):
        return [(1, 0)] + [p for p in _paths(impl) if p == (0, 1)] + ([(0, 0)] if point.get("HOIST") else [])

    # TOKENS (hgemm v10), ROWS (sgemm v13): at every point the narrowest and the widest, whose shared memory
    # or registers bound the point; the config compiles every width above. What the test above compiles is
    # not compiled again, nor a job that differs from another only in defines the code never names
    # (MIN_SLICES, FIT; ALIGNED in the TMA kernels): the two tests ask 1,353 compiles and run 1,080.
    assert "sm_90a" in impl.target.test_targets(), impl.name
    _compile_all(impl, [({**_defines(impl, point, precision, aligned, peel), **tokens}, "sm_90a")
                        for point in impl.space for precision in impl.precisions
                        for aligned, peel in paths(point) for tokens in _fitted_widths(impl, ends=True)], tmp_path,
                 done=_default_jobs(impl))


def test_the_mma_sync_rung_compiles_every_copy_width(tmp_path):
    # hgemm v6's narrower copies (study/ops/hgemm_mma_sync.py, copy_widths) at its declared config: 8- and 4-byte
    # cp.async (A_VEC=4, B_VEC=2), 16-byte copies beside pairs of halves (8, 1); ALIGNED=0 above compiles
    # pairs for both operands (the default widths 1), ALIGNED=1 16 bytes for both.
    # HOIST=1 hoists an operand in pairs (mma_sync_tile.cuh, HoistedPairs) beside the other's cp.async, as at the
    # odd suite's 166×419×98 (A 4-byte copies, B pairs) and 1045×20×3741 (A pairs, B 8-byte copies), and with
    # DEFER=1 (the pairs held across a slice) where both are pairs.
    impl = next(i for i in CUDA if i.name == "hgemm/v6_mma_sync/cuda")
    _compile_all(impl, [({**_defines(impl, impl.params, "bf16", 0), "A_VEC": a, "B_VEC": b, "HOIST": hoist,
                          "DEFER": defer}, "sm_90a")
                        for a, b, hoist, defer in ((4, 2, 0, 0), (8, 1, 0, 0), (2, 1, 1, 0), (1, 4, 1, 0),
                                                   (1, 1, 1, 1))], tmp_path)


@pytest.mark.parametrize("rung", ["v6_mma_sync", "v12_split_k_mma_sync"])
def test_the_mma_sync_rungs_compile_every_fitted_tile(rung, tmp_path):
    # hgemm v6 at FIT=1 (its declared config) halves or quarters BM, BN to the shape (study/ops/hgemm_mma_sync.py,
    # fitted_tile): the 128 × 64, 64 × 128, 64 × 64 and 32 × 32 tiles of 2 × 2 warps, with 16-byte copies and with
    # pairs of halves. v12 runs v6's tile: its split path, whose range sum v6 lacks, at the tiles it splits (64 × 64
    # and 32 × 32).
    impl = next(i for i in CUDA if i.name == f"hgemm/{rung}/cuda")
    tiles = [(bm, bn) for bm in (128, 64) for bn in (128, 64)
             if (bm, bn) != (128, 128) and (rung == "v6_mma_sync" or (bm, bn) == (64, 64))] + [(32, 32)]
    _compile_all(impl, [({**_defines(impl, impl.params, "bf16", aligned), "BM": bm, "BN": bn, "WM": bm // 2,
                          "WN": bn // 2}, "sm_90a") for bm, bn in tiles for aligned in (0, 1)], tmp_path)
    if rung == "v6_mma_sync":  # the space's other fitted points (BK = 64; HOIST=1, whose pairs of halves are hoisted),
        # at the 64 × 64 tile tiny products fit, with both operands in pairs (ALIGNED=0) and in 16 bytes
        points = [p for p in impl.space if p["FIT"] and (p["BK"] == 64 or p["HOIST"])]
        assert {(p["BK"], p["HOIST"]) for p in points} == {(64, 0), (32, 1), (64, 1)}
        _compile_all(impl, [({**_defines(impl, point, "bf16", aligned), "BM": 64, "BN": 64, "WM": 32, "WN": 32},
                             "sm_90a") for point in points for aligned in (0, 1)], tmp_path)


def test_a_broken_config_fails_loudly(tmp_path):
    impl = next(i for i in CUDA if i.name == "sgemm/v3_register_tile/cuda")
    bad = _defines(impl, {**impl.params, "THREADS": 64}, "fp32", 1)  # violates THREADS == (BM/TM)*(BN/TN)
    proc = subprocess.run(nvcc_command(impl.target.path, bad, "sm_90a", tmp_path / "x.cubin"),
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "THREADS must be" in proc.stderr


def test_a_kernel_declared_for_hopper_only_is_not_compiled_for_ampere(tmp_path):
    from study import kernel_header

    path = tmp_path / "00_wgmma_only.cu"
    path.write_text("// arch: sm_90a\n// config: THREADS=128\n")
    assert kernel_header.read(path, "x").test_targets() == ("sm_90a",)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,config", [("ffma_loop", {"ITERS": 16384, "CHAINS": 8, "THREADS": 256}),
                                         ("mma_sync_loop", {"ITERS": 4096, "CHAINS": 8, "THREADS": 256, "STORAGE_FP16": 1}),
                                         ("mma_sync_loop", {"ITERS": 4096, "CHAINS": 8, "THREADS": 256, "STORAGE_BF16": 1}),
                                         ("empty", {"THREADS": 32}), ("delay", {"THREADS": 32})])
def test_ceiling_kernels_compile(name, config, arch, tmp_path):
    from study.ceilings import FFMA, MMA_SYNC

    launched = {"ffma_loop": FFMA, "mma_sync_loop": MMA_SYNC}
    if name in launched:  # the test compiles what `study ceilings` launches (at either storage type)
        assert {k: v for k, v in config.items() if not k.startswith("STORAGE_")} == launched[name]
    cmd = nvcc_command(MICROBENCH_DIR / f"{name}.cu", config, arch, tmp_path / "x.cubin")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("elem_bytes", [2, 4])
def test_the_tma_staging_kernels_compile(elem_bytes, tmp_path):
    # not a rung: the copies and the poison the TMA rungs' launches run around them (study/ops/tma_staging.py)
    from study.ops.tma_staging import STAGE_ROWS

    cmd = nvcc_command(STAGE_ROWS, {"ELEM_BYTES": elem_bytes}, "sm_90a", tmp_path / "x.cubin")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


SYSTEM_SHARED = 1024  # shared memory the driver reserves for each resident block (sm_80 on) ...
SHARED_UNIT = 128     # ... and the unit a block's shared memory is allocated in (CUDA's occupancy calculator)


def _static_shared_bytes(impl, defines, tmp_path) -> int:
    """A kernel's static shared memory at ``defines`` on sm_90a, as ptxas counts it (-Xptxas -v)."""
    messages = _compile(impl, defines, "sm_90a", tmp_path, "static", flags=("-Xptxas", "-v"))
    found = re.findall(r"(\d+) bytes smem", messages)
    assert len(found) == 1, messages
    return int(found[0])


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_v7s_statics_cost_no_block_at_any_suite_plan(precision, tmp_path):
    # v7's FIT sizes a block's ring to its share of the row, so that three BF16 blocks of a 128256- or 151936-element
    # row share an SM (75,968 bytes of ring each at 151936). Its static shared memory (barriers, the exchange's
    # slots, the reduction's scratch) sits beside every ring: at 9187409 ring.cuh made it 896 bytes at 8 blocks ×
    # 256 threads, which left 1024 × 151936 BF16 two blocks an SM — the driver's count 30 clusters of 8 where it
    # was 45, and the H200's vocab suite at ecdd5f2 0.844× its figure of f84c808 there (the kernel's header). No
    # launch error says so: only the count of blocks an SM moves. So at every plan of the vocabulary and attention
    # suites the statics must leave an SM the blocks that the rings and threads alone allow (registers aside: three
    # blocks of 256 threads leave 85 a thread).
    from study.ops.softmax_rings import SM_SHARED, tma_ring_plan
    from study.suites import shapes_of

    impl = next(i for i in CUDA if i.name == "softmax/v7_tma_ring/cuda")
    element_bytes = ladder("softmax").problem.precision(precision).element_bytes
    plans = {tma_ring_plan(n, element_bytes, impl.params) for n in
             sorted({s["N"] for s in shapes_of("softmax", ["vocab", "attention"])})}
    plans = sorted((p for p in plans if not isinstance(p, str)), key=lambda p: p.ring_bytes)
    statics = {}
    for plan in plans:
        key = (plan.cluster, plan.stages, plan.threads or impl.params["THREADS"])
        if key not in statics:
            statics[key] = _static_shared_bytes(impl, {**_defines(impl, impl.params, precision, 1), "CLUSTER": key[0],
                                                       "STAGES": key[1], "THREADS": key[2]}, tmp_path)
        blocks = [min(2048 // key[2], SM_SHARED // (-(-(plan.ring_bytes + SYSTEM_SHARED + s) // SHARED_UNIT)
                                                     * SHARED_UNIT)) for s in (0, statics[key])]
        assert blocks[0] == blocks[1], (f"{plan}: {statics[key]} bytes of statics leave {blocks[1]} blocks an SM, its "
                                        f"ring alone {blocks[0]}")
    if precision == "bf16":  # the plans where shared memory, not threads, sets the blocks an SM above one
        assert any(1 < SM_SHARED // (p.ring_bytes + SYSTEM_SHARED) < 2048 // (p.threads or impl.params["THREADS"])
                   for p in plans)


@pytest.mark.parametrize("rung,wide", [("v8_piece_ring", "CLUSTER"), ("v9_overlap_ring", "CLUSTER"),
                                       ("v10_team_ring", "TEAM")])
def test_the_piece_rings_statics_fit_beside_the_ring_budget(rung, wide, tmp_path):
    # v8 to v10 fill a block's shared memory with pieces up to PIECE_RING_BYTES, leaving the rest of its 227 KiB to
    # the statics, which grow with the blocks a row (v9's exchange slots; v10's exchange is in global memory, its
    # statics the same at any TEAM); past it the launch fails at the widest shares. Checked at 8 blocks a row, the
    # most the FIT plans take.
    from study.ops.softmax_rings import PIECE_RING_BYTES

    impl = next(i for i in CUDA if i.name == f"softmax/{rung}/cuda")
    for precision in ("fp32", "bf16"):
        static = _static_shared_bytes(impl, {**_defines(impl, impl.params, precision, 1), wide: 8}, tmp_path)
        assert static <= 227 * 1024 - PIECE_RING_BYTES, f"{rung} {precision}: {static} bytes of statics"


@pytest.mark.parametrize("rung,heights", [("v11_3xtf32_wgmma", (None,)), ("v12_3xtf32_split_k", (128, 64, 32, 16))])
def test_the_3xtf32_consumers_keep_their_wgmma_descriptors_uniform(rung, heights, tmp_path):
    # The consumers' wgmma descriptors depend only on the stage, so ptxas computes them on the uniform datapath.
    # When a branch it cannot prove uniform guards the loop (the idle-consumer test on threadIdx), it computes
    # them per thread and moves each into a uniform register between the wgmmas (R2UR): v11 ran 2 % slower at
    # 1199×1726×1463 on an H100 (docs/ladders/sgemm.md, v12, idle consumers). No R2UR between the first and the
    # last wgmma of a slice. With A read in place (A_IN_PLACE=1) too, at each height v12's fit takes (the only
    # in-place builds of 64 and 32 rows: the autotune-point test compiles the aligned path): only the producer
    # warpgroup's code differs.
    from study.ncu import find_cuobjdump

    tool = find_cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump on PATH or in Triton's wheel: the SASS cannot be read here")
    impl = next(i for i in CUDA if i.name == f"sgemm/{rung}/cuda")
    for bm, in_place in itertools.product(heights, (0, 1)):
        defines = {**_defines(impl, impl.params, "fp32", 1), **({"BM": bm} if bm else {}), "A_IN_PLACE": in_place}
        _compile(impl, defines, "sm_90a", tmp_path, name=f"bm{bm}-{in_place}")
        sass = subprocess.run([tool, "-sass", str(tmp_path / f"bm{bm}-{in_place}.cubin")], capture_output=True,
                              text=True, check=True).stdout.splitlines()
        at = [n for n, line in enumerate(sass) if "HGMMA" in line]
        slices = []  # a slice's twelve wgmmas lie within a few dozen instructions of each other
        for n in at:
            if slices and n - slices[-1][-1] < 40:
                slices[-1].append(n)
            else:
                slices.append([n])
        where = f"{rung} BM={bm} A_IN_PLACE={in_place}"
        assert all(len(s) == 12 for s in slices), f"{where}: wgmma groups {[len(s) for s in slices]}"
        moves = [sum("R2UR" in line for line in sass[s[0]:s[-1]]) for s in slices]
        assert moves == [0] * len(slices), f"{where}: R2UR between a slice's wgmmas: {moves}"

"""The TMA rungs at shapes TMA cannot read in place, on the CPU (the fake CUDA launch path): which
operands their launch stages, in which order the copies run around the rung's kernel, that the copies'
arguments copy exactly the matrix (replayed here as cuda_kernels/stage_rows.cu indexes them), and that
aligned shapes launch exactly as before. The GPU tests run the same rungs at these shapes for real."""

import pytest
import torch

from study.backends import backend
from study.catalog import implementation, ladder


def _prepare(name, shape, precision_name, fake_cuda):
    impl = implementation(name)
    problem = ladder(impl.op).problem
    precision = problem.precision(precision_name)
    tensors, launch = fake_cuda.run(impl, problem, shape, precision)
    return tensors, launch, list(fake_cuda)


def _replay(args):
    """What stage_rows does with these arguments: the destination tensor after the copy."""
    src, dst, entries, rows, cols, src_entry, src_row, dst_entry, dst_row = args
    for e in range(int(entries)):
        for r in range(int(rows)):
            s, d = e * int(src_entry) + r * int(src_row), e * int(dst_entry) + r * int(dst_row)
            dst[d:d + int(cols)] = src[s:s + int(cols)]
    return dst


def _emulate(args, grid, block, values=None):
    """stage_rows.cu thread by thread on the tensors' bytes (their real addresses, so the rows' misalignment
    is the kernel's): each slot's row and word, a whole word read as the window of two aligned source words
    or a row end element by element, idle slots past a row's words; every source read inside its row. It
    mirrors the kernel's indexing line by line and changes with it; the GPU tests run the kernel itself."""
    src, dst, entries, rows, cols, src_entry, src_row, dst_entry, dst_row = (
        a if isinstance(a, torch.Tensor) else int(a) for a in args)
    size = src.element_size()
    # the real tensors' addresses; the source's bytes from ``values`` where given, the writes to a zeroed copy
    memory_in, out = (src if values is None else values).view(torch.uint8), torch.zeros_like(dst).view(torch.uint8)
    s0, d0, nbytes = src.data_ptr(), dst.data_ptr(), cols * size
    per_row = -(-nbytes // 16) + 1
    threads = grid[0] * block[0]

    def read(address, count, row):  # the kernel reads only inside the row it copies
        assert row <= address and address + count <= row + nbytes, (address, count, row)
        return bytes(memory_in[address - s0:address - s0 + count].tolist())

    slots = [t for thread in range(threads) for t in range(thread, rows * per_row, threads)]  # the grid-stride loop
    assert sorted(slots) == list(range(rows * per_row))  # every slot once
    for e in range(entries):
        for t in slots:
            r, j = divmod(t, per_row)
            s, d = s0 + size * (e * src_entry + r * src_row), d0 + size * (e * dst_entry + r * dst_row)
            first, end = d & ~15, d + nbytes
            if j >= (end - first + 15) // 16:
                continue
            shift, w = (s - d) & 15, first + 16 * j
            lo = (s + (w - d)) & ~15
            past = lo + 32 if shift else lo + 16
            if w >= d and w + 16 <= end and lo >= s and past <= s + nbytes:
                word = read(lo, 32, s)[shift:shift + 16] if shift else read(lo, 16, s)
                out[w - d0:w - d0 + 16] = torch.tensor(list(word), dtype=torch.uint8)
            else:
                for b in range(max(w, d), min(w + 16, end), size):
                    out[b - d0:b - d0 + size] = torch.tensor(list(read(s + (b - d), size, s)), dtype=torch.uint8)
    return out.view(dst.dtype)


def _staged_copies(calls):
    return [c for c in calls if c[0] == "stage_rows"]


@pytest.mark.parametrize("name,shape,precision,staged", [
    ("hgemm/v8_warp_specialized/cuda", {"M": 64, "N": 4100, "K": 60}, "fp16", "A+B+C"),
    ("hgemm/v8_warp_specialized/cuda", {"M": 17, "N": 33, "K": 64}, "bf16", "B+C"),
    ("hgemm/v8_warp_specialized/cuda", {"M": 9, "N": 13, "K": 16}, "fp16", "B+C"),  # C rows of 26 bytes: some touch 3 words
    ("hgemm/v7_wgmma_tma/cuda", {"M": 17, "N": 64, "K": 65}, "fp16", "A"),
    # v11 reads A in place (below); B's rows of 28 bytes are staged; C by pointer: never staged
    ("sgemm/v11_3xtf32_wgmma/cuda", {"M": 5, "N": 7, "K": 1}, "fp32", "B"),
    ("bgemm/v1_batched_wgmma/cuda", {"batch": 3, "M": 17, "N": 33, "K": 65}, "fp16", "A+B+C"),
    ("gemm_bias_relu/v2_fused_wgmma/cuda", {"M": 17, "N": 12, "K": 8}, "fp16", "B+C"),
])
def test_what_tma_cannot_read_is_staged_around_the_rungs_kernel(fake_cuda, name, shape, precision, staged):
    tensors, launch, calls = _prepare(name, shape, precision, fake_cuda)
    assert launch.config["staged"] == staged
    inputs = [n for n in staged.split("+") if n != "C"]
    symbols = [c[0] for c in calls]
    own = implementation(name).target.symbol
    c_staged = "C" in staged  # written to staged rows, copied out after; the gate poisons those rows with C
    assert symbols == ["stage_rows"] * len(inputs) + [own] + ["stage_rows"] * c_staged
    copies = _staged_copies(calls)
    for operand, (_, grid, block, args, _) in zip(inputs, copies):
        source = tensors[operand]
        assert args[0].data_ptr() == source.data_ptr() and int(args[4]) == source.shape[-1]
        assert int(args[8]) % (16 // source.element_size()) == 0  # the staged rows: 16 bytes apart by a multiple
        assert args[1].data_ptr() % 16 == 0 and block == (256, 1, 1) and grid[0] >= 1
        staged_flat = _replay((args[0].clone(), args[1].clone().fill_(0), *args[2:]))
        rows = torch.as_strided(staged_flat, source.shape,
                                ((int(args[7]),) if source.dim() == 3 else ()) + (int(args[8]), 1))
        assert torch.equal(rows, source), operand
        for g, b in ((grid, block), ((1, 1, grid[2]), (32, 1, 1))):  # the launch's grid, and one that strides
            emulated = _emulate(args, g, b)  # the kernel's own indexing
            assert torch.equal(emulated.view(torch.uint8), staged_flat.view(torch.uint8)), (operand, g)
        assert grid[0] == -(-int(args[3]) * (-(-int(args[4]) * source.element_size() // 16) + 1) // 256)
    if c_staged:
        _, _, _, args, _ = copies[-1]
        assert args[1].data_ptr() == launch.out.data_ptr()  # written rows copied out into C
        assert int(args[4]) == shape["N"] and int(args[8]) == launch.out.stride(-2)
        [written] = launch.poison  # the rows the copy out reads, poisoned by the gate with C
        assert written.data_ptr() == args[0].data_ptr() and written.shape == launch.out.shape
        _, grid, block, _, _ = copies[-1]  # C's rows start off a 16-byte word: a row touches one word more
        pattern = torch.arange(args[0].numel()).to(args[0].dtype)
        expected = _replay((pattern, torch.zeros_like(args[1]), *args[2:]))
        emulated = _emulate(args, grid, block, values=pattern)
        assert torch.equal(emulated.view(torch.uint8), expected.view(torch.uint8))
    else:
        assert launch.poison == ()


@pytest.mark.parametrize("name,shape,precision", [
    ("hgemm/v8_warp_specialized/cuda", {"M": 72, "N": 136, "K": 40}, "fp16"),
    ("hgemm/v7_wgmma_tma/cuda", {"M": 17, "N": 64, "K": 64}, "bf16"),
    ("sgemm/v11_3xtf32_wgmma/cuda", {"M": 256, "N": 192, "K": 132}, "fp32"),
    ("bgemm/v1_batched_wgmma/cuda", {"batch": 3, "M": 17, "N": 64, "K": 72}, "fp16"),
])
def test_rows_tma_reads_in_place_launch_as_before(fake_cuda, name, shape, precision):
    tensors, launch, calls = _prepare(name, shape, precision, fake_cuda)
    assert "staged" not in launch.config and [c[0] for c in calls] == [implementation(name).target.symbol]
    args = [m for a in calls[0][3] if isinstance(a, tuple) and a for m in (a[1] if a[0] == "residue maps" else (a,))]
    maps = [a for a in args if a[0] == "map"]  # sgemm v11's A: the one map of its ResidueMaps
    assert [m[2] for m in maps[:2]] == [tensors["A"].data_ptr(), tensors["B"].data_ptr()]


def _tma_box(memory, base: int, address: int, sizes, stride: int, box, x: int, y: int):
    """What an unswizzled TMA box of 4-byte elements holds (rows of box[0] elements, packed): ``memory`` the
    floats from byte ``base``, the map at byte ``address`` with ``sizes`` (elements, rows) and its rows
    ``stride`` bytes apart; elements past the sizes read as zeros."""
    out = torch.zeros(box[1], box[0])
    for i in range(box[1]):
        for e in range(box[0]):
            if x + e < sizes[0] and y + i < sizes[1]:
                out[i, e] = memory[(address - base + (y + i) * stride + (x + e) * 4) // 4]
    return out



def test_a_view_residue_maps_cannot_read_is_staged_not_refused(fake_cuda):
    # A's rows overlapping (129 floats apart for 130 columns) and off 16 bytes: neither one map nor the residue maps
    # describe it (tma.reads_in_place), so the launch copies it as before — the staging launcher and the kernel's
    # defines ask the same rule, and the launch neither reads it in place nor refuses it.
    impl = implementation("sgemm/v11_3xtf32_wgmma/cuda")
    problem = ladder("sgemm").problem
    shape = {"M": 20, "N": 64, "K": 130}
    a = torch.as_strided(torch.randn(20 * 129 + 1), (20, 130), (129, 1))
    launch = backend("cuda").prepare(impl, problem, {"A": a, "B": torch.randn(130, 64)}, shape,
                                     problem.precision("fp32"))
    launch.fn()
    assert launch.config["A_IN_PLACE"] == 0 and "in_place" not in launch.config and launch.config["staged"] == "A"
    assert [c[0] for c in fake_cuda] == ["stage_rows", impl.target.symbol]


A_IN_PLACE_RECORDS = ("reports/h200/experiments/a-in-place-bfd9471",
                      "reports/h100-80gb-hbm3/experiments/a-in-place-f152ce8")


def test_the_in_place_model_picks_the_faster_path_at_every_measured_pair():
    # The A/B records of sgemm v11/v12 (A read in place against A staged, same shapes, one GPU call each): at each
    # pair the launch's model (sgemm_wgmma.a_in_place over the rung's own plan) picks the one that ran faster.
    import gzip
    import json

    from study.ops.sgemm_wgmma import a_in_place, split_units, tile_units
    from study.paths import ROOT

    pairs = {}
    for folder in A_IN_PLACE_RECORDS:
        for path in sorted((ROOT / folder).glob("*.json.gz")):
            for rec in json.loads(gzip.open(path).read())["measurements"]:
                if "3xtf32" in rec["implementation"] and rec["status"] == "ok":
                    key = (folder, rec["implementation"], rec["case"].split("|")[1])
                    pairs.setdefault(key, {})[rec["config"].get("in_place") == "A"] = (rec["median_ms"], rec["config"])
    pairs = {key: p for key, p in pairs.items() if len(p) == 2}
    assert len(pairs) >= 14, sorted(pairs)
    for (folder, name, case), p in pairs.items():
        m, n, k = map(int, case.split("x"))
        shape, config = {"M": m, "N": n, "K": k}, p[True][1]
        units_of = split_units if "split_k" in name else tile_units
        a = torch.empty(m * k + 1)[1:].view(m, k)  # off 16 bytes, as the records' K (no multiple of 4) made them
        picked = a_in_place(a, shape, config["BM"], *units_of(config, shape, 132), 132)  # both cards' SM count
        assert picked == (p[True][0] < p[False][0]), (folder, name, case, p[True][0], p[False][0])


@pytest.mark.parametrize("name,in_place", [("sgemm/v11_3xtf32_wgmma/cuda", False),
                                           ("sgemm/v12_3xtf32_split_k/cuda", True)])
def test_a_long_k_walked_by_few_tiles_is_staged_by_v11_and_read_in_place_by_v12(fake_cuda, name, in_place):
    # 1045×20×3741: v11's nine tiles each walk all 117 slices of K, where reading in place slows every slice more
    # than a copy of A costs; v12 splits K over the SMs, so its loop is short and the copy the larger cost.
    impl = implementation(name)
    problem = ladder("sgemm").problem
    m, n, k = 1045, 20, 3741
    launch = backend("cuda").prepare(impl, problem, {"A": torch.randn(m, k), "B": torch.randn(k, n)},
                                     {"M": m, "N": n, "K": k}, problem.precision("fp32"))
    launch.fn()
    assert launch.config["A_IN_PLACE"] == int(in_place)
    assert launch.config.get("in_place") == ("A" if in_place else None)
    assert launch.config.get("staged") == (None if in_place else "A")  # B's rows (80 bytes) TMA reads as they lie
    assert [c[0] for c in fake_cuda].count("stage_rows") == (0 if in_place else 1)


@pytest.mark.parametrize("name,shape,bm", [("sgemm/v11_3xtf32_wgmma/cuda", {"M": 100, "N": 192, "K": 130}, 128),
                                           ("sgemm/v12_3xtf32_split_k/cuda", {"M": 19, "N": 62, "K": 517}, 16)])
def test_the_3xtf32_rungs_read_a_in_place_where_one_map_cannot(fake_cuda, name, shape, bm):
    """sgemm v11/v12 with A's rows no multiple of 16 bytes apart, off a 16-byte start too: eight residue maps
    (rows ≡ j mod 8) in the kernel's ResidueMaps, no copy of A. Replayed here: each residue's box for a tile and
    a slice as TMA fills it (unswizzled, from the aligned column before the slice), then the splitters' read of
    it (sgemm/wgmma_3xtf32.cuh, split_a_in_place: row p of the tile from residue p % 8's box row p / 8, its
    16-byte chunk q shifted by the residue's offset) gives the tile's rows of A, zeros past M and K."""
    import re

    from study.backends.tma import SMEM_LIMIT
    from study.ops.sgemm_wgmma import RAW_COLS, wgmma_shared_bytes, wgmma_stage_bytes, wgmma_stages
    from study.paths import CUDA_DIR

    impl = implementation(name)
    problem = ladder("sgemm").problem
    m, n, k = shape["M"], shape["N"], shape["K"]
    storage = torch.randn(m * k + 1)
    a = storage[1:].view(m, k)  # 4 bytes past the storage's start: row 0 off 16 bytes too
    b = torch.randn(k, n)
    launch = backend("cuda").prepare(impl, problem, {"A": a, "B": b}, shape, problem.precision("fp32"))
    launch.fn()
    assert launch.config["A_IN_PLACE"] == 1 and launch.config["in_place"] == "A" and launch.config["BM"] == bm
    assert launch.config.get("staged") == ("B" if n % 4 else None)  # A never; B where its rows need it
    assert [c[0] for c in fake_cuda].count("stage_rows") == (n % 4 != 0)
    _, _, _, args, smem = next(c for c in fake_cuda if c[0] == impl.target.symbol)
    defines = {**launch.config, "BM": bm}
    assert smem == wgmma_shared_bytes(defines) < wgmma_shared_bytes({**defines, "A_IN_PLACE": 0}) + 8 * 2304
    assert launch.config["stages"] == wgmma_stages(defines) == (3 if bm == 128 else defines["STAGES"])
    kind, maps, offsets = args[0]
    assert kind == "residue maps" and len(maps) == 8
    header = (CUDA_DIR / "sgemm" / "wgmma_3xtf32.cuh").read_text()
    raw_row = int(re.search(r"constexpr int RAW_ROW = (\d+);", header).group(1))
    assert raw_row == RAW_COLS * 4  # the kernel's raw row is the host's box row, its shared memory the host's
    limit = re.search(r"constexpr int SMEM_LIMIT = (\d+);", (CUDA_DIR / "hopper.cuh").read_text())
    assert int(limit.group(1)) == SMEM_LIMIT
    # the kernel's residue box (its RAW_BOX, evaluated at this height) holds the box and is what the host sizes
    raw_box = eval(re.search(r"constexpr int RAW_BOX = ([^;]+);", header).group(1).replace("/", "//"),
                   {"BM": bm, "RAW_ROW": raw_row})
    assert bm // 8 * raw_row <= raw_box and raw_box % 128 == 0
    assert 8 * raw_box == wgmma_stage_bytes(defines) - wgmma_stage_bytes({**defines, "A_IN_PLACE": 0})
    for j, (tag, address, sizes, strides, box, swizzle) in enumerate(maps):
        start = a.data_ptr() + j * k * 4
        assert tag == "encode" and address == start - start % 16 and offsets[j] == start % 16 // 4
        assert sizes == ((k + offsets[j], -(-(m - j) // 8)) if j < m else (4, 1)) and box == (RAW_COLS, bm // 8)
        assert strides == ((8 * k * 4,) if j < m else (16,)) and not swizzle
    base = storage.data_ptr()
    for tile in range(-(-m // bm)):
        for s in range(-(-k // 32)):
            raw = [_tma_box(storage, base, *maps[j][1:3], maps[j][3][0], maps[j][4], 32 * s, tile * (bm // 8))
                   if j < m else torch.zeros(bm // 8, RAW_COLS) for j in range(8)]
            got = torch.zeros(bm, 32)
            for p in range(bm):
                j = p % 8
                for q in range(8):  # the 16-byte window offset[j] floats into the raw row's chunks q, q + 1
                    row = raw[j][p // 8]
                    got[p, 4 * q:4 * q + 4] = row[4 * q + offsets[j]:4 * q + offsets[j] + 4]
            want = torch.zeros(bm, 32)
            rows, cols = a[tile * bm:(tile + 1) * bm, 32 * s:32 * (s + 1)].shape
            want[:rows, :cols] = a[tile * bm:(tile + 1) * bm, 32 * s:32 * (s + 1)]
            assert torch.equal(got, want), (tile, s)


def test_the_unfused_rung_stages_around_its_gemm_and_then_runs_its_pass(fake_cuda):
    tensors, launch, calls = _prepare("gemm_bias_relu/v0_unfused/cuda", {"M": 17, "N": 12, "K": 8}, "fp16",
                                      fake_cuda)
    # the GEMM's own copies around it (the backend runs a call's before and after), then the pass
    assert [c[0] for c in calls] == ["stage_rows", "hgemm_v8_warp_specialized", "stage_rows",
                                     "gemm_bias_relu_v0_unfused"]
    assert launch.config["gemm_staged"] == "B+C" and len(launch.poison) == 1


def test_the_gate_poisons_the_rows_c_passes_through():
    from study.problem import check_output

    problem = ladder("hgemm").problem
    fp16 = problem.precision("fp16")
    shape = {"M": 4, "N": 5, "K": 3}
    tensors = problem.make_inputs(shape, fp16, 0, "cpu")
    ref, scale = problem.reference(tensors, fp16)
    out = problem.make_output(shape, fp16, "cpu")
    staged = ref.to(torch.float16).clone()  # rows a first launch left right

    def lazy():  # a rung that writes nothing, then the copy out of its staged rows
        out.copy_(staged)

    assert check_output(lazy, out, problem, ref, scale, fp16).ok  # the stale rows would pass
    assert not check_output(lazy, out, problem, ref, scale, fp16, poison=(staged,)).ok


def test_a_twin_records_what_it_staged():
    impl = implementation("hgemm/v8_warp_specialized/triton")
    problem = ladder("hgemm").problem
    fp16 = problem.precision("fp16")
    for shape, staged in (({"M": 17, "N": 33, "K": 65}, "A+B"), ({"M": 17, "N": 64, "K": 64}, None)):
        tensors = problem.make_inputs(shape, fp16, 0, "cpu")
        launch = backend("triton").prepare(impl, problem, tensors, shape, fp16)
        assert launch.config.get("staged") == staged
        assert set(launch.config) - {"staged"} == set(impl.params)


def test_a_twins_descriptors_read_staged_rows_that_its_launch_copies_first():
    from study.ops.tma_staging import staged_operands

    a = torch.arange(17 * 65, dtype=torch.float16).view(17, 65)
    b = torch.arange(65 * 64, dtype=torch.float16).view(65, 64)
    sa, sb, copy = staged_operands(a, b)
    assert copy.facts == {"staged": "A"} and sb is b and sa.shape == a.shape and sa.stride() == (72, 1)
    copy()
    assert torch.equal(sa, a)
    a.add_(1)  # the inputs may change between launches: each launch copies again
    copy()
    assert torch.equal(sa, a)


def test_a_staged_record_is_flagged_so():
    from study.report.labels import flags

    assert "staged" in flags({"config": {"staged": "A+B+C"}})
    assert "staged" in flags({"config": {"gemm_staged": "B"}})  # the unfused rung's GEMM
    assert "staged" not in flags({"config": {"BM": 128}})


def test_a_pointer_twin_reads_rows_16_floats_apart_staged_where_they_are_not():
    # sgemm v11's and v12's twins: Triton loads 16 bytes a lane only from rows it can prove so (an integer argument
    # divisible by 16, a pointer on 16 bytes), so rows of 341 and 9 floats are staged 352 and 16 floats apart
    from study.ops.tma_staging import pointer_staged_operands

    a = torch.arange(3 * 341, dtype=torch.float32).view(3, 341)
    b = torch.arange(341 * 9, dtype=torch.float32).view(341, 9)
    sa, sb, copy = pointer_staged_operands(a, b)
    assert copy.facts == {"staged": "A+B"} and (sa.stride(), sb.stride()) == ((352, 1), (16, 1))
    copy()
    assert torch.equal(sa, a) and torch.equal(sb, b)
    a.add_(1)  # each launch copies again
    copy()
    assert torch.equal(sa, a)
    a, b = torch.zeros(4, 64), torch.zeros(64, 32)  # rows 16 floats apart by a multiple: read in place
    sa, sb, copy = pointer_staged_operands(a, b)
    assert sa is a and sb is b and copy.facts == {}
    offset = torch.zeros(64 * 32 + 1)[1:].view(64, 32)  # a base on 4 bytes
    assert pointer_staged_operands(a, offset)[2].facts == {"staged": "B"}
    assert pointer_staged_operands(torch.zeros(2, 1464), b)[2].facts == {"staged": "A"}  # TMA's 16 bytes are not enough
    assert pointer_staged_operands(torch.zeros(3, 341), torch.zeros(341, 9), ("A",))[2].facts == {"staged": "A"}


def test_the_3xtf32_twins_stage_b_only_where_more_than_one_row_tile_reads_it():
    # A copy of B read once costs more than it saves (11×2473×16329: 161 MB, 0.117 → 0.227 ms); A is staged even
    # when read once (study/ops/sgemm.py, pointer_twin_staging)
    from study.ops.sgemm import pointer_twin_staging

    assert pointer_twin_staging({"M": 11, "N": 2473, "K": 16329}, 16) == ("A",)
    assert pointer_twin_staging({"M": 17, "N": 2473, "K": 16329}, 16) == ("A", "B")
    assert pointer_twin_staging({"M": 17, "N": 2473, "K": 16329}, 128) == ("A",)


@pytest.mark.parametrize("name", ["sgemm/v11_3xtf32_wgmma/triton", "sgemm/v12_3xtf32_split_k/triton"])
def test_the_3xtf32_twins_record_what_they_staged_and_stay_correct(name):
    from study.problem import check_output

    impl = implementation(name)
    problem = ladder("sgemm").problem
    fp32 = problem.precision("fp32")
    # B is staged only where more than one row tile reads it (pointer_twin_staging): at M = 5, one tile of any height
    for shape, staged in (({"M": 130, "N": 33, "K": 65}, "A+B"), ({"M": 5, "N": 33, "K": 65}, "A"),
                          ({"M": 17, "N": 64, "K": 64}, None)):
        tensors = problem.make_inputs(shape, fp32, 0, "cpu")
        ref, scale = problem.reference(tensors, fp32)
        launch = backend("triton").prepare(impl, problem, tensors, shape, fp32)
        assert launch.config.get("staged") == staged, launch.config
        assert check_output(launch.fn, launch.out, problem, ref, scale, fp32).ok, shape

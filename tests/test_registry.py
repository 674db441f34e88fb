import json

import pytest

from study.backends.cuda import read_kernel_header
from study.registry import CUDA_DIR, Ladder, Rung, check_integrity, implementations, ladder


def test_the_registry_is_sound():
    assert check_integrity() == []


def test_names_are_unique_and_every_op_has_all_three_backends():
    impls = implementations()
    names = [i.name for i in impls]
    assert len(names) == len(set(names))
    for op in {i.op for i in impls}:
        assert {i.backend for i in impls if i.op == op} == {"cuda", "triton", "cublas"}


def test_every_cuda_rung_has_a_triton_twin_with_the_same_rung_index():
    impls = implementations()
    cuda = {(i.op, i.rung, i.rung_index) for i in impls if i.backend == "cuda"}
    triton = {(i.op, i.rung, i.rung_index) for i in impls if i.backend == "triton"}
    assert cuda == triton and cuda


def _ladder(rungs, baseline=True, op="sgemm"):
    real = ladder(op)
    return {op: Ladder(real.problem, tuple(rungs), real.baseline if baseline else None)}


def test_integrity_names_a_cuda_rung_without_twin():
    real = ladder("sgemm").rungs[1]
    broken = Rung(real.key, real.idea, real.removes, cuda=real.cuda, triton=None)
    problems = check_integrity(_ladder([*ladder("sgemm").rungs[:1], broken, *ladder("sgemm").rungs[2:]]))
    assert any("has no Triton twin" in p and real.key in p for p in problems)


def test_integrity_names_a_missing_baseline_and_duplicated_rungs():
    rungs = ladder("sgemm").rungs
    problems = check_integrity(_ladder([*rungs, rungs[0]], baseline=False))
    assert any("no cuBLAS baseline" in p for p in problems)
    assert any("appears more than once" in p for p in problems)
    assert any("share the name" in p for p in problems)


def test_integrity_names_an_unregistered_cu_file(tmp_path):
    (tmp_path / "sgemm").mkdir()
    for rung in ladder("sgemm").rungs:
        (tmp_path / "sgemm" / rung.cuda).write_text((CUDA_DIR / "sgemm" / rung.cuda).read_text())
    (tmp_path / "sgemm" / "05_stray.cu").write_text("// config: BM=1\n")
    problems = check_integrity(_ladder(ladder("sgemm").rungs), cuda_dir=tmp_path)
    assert problems == ["cuda_kernels/sgemm/05_stray.cu is not registered by any rung".replace(
        "cuda_kernels", tmp_path.name)]


def test_kernel_headers_declare_config_and_space():
    for rung in ladder("sgemm").rungs:
        header = read_kernel_header(CUDA_DIR / "sgemm" / rung.cuda)
        assert header.symbol == f"sgemm_{rung.key}"
        assert header.params in [dict(p) for p in header.space]
        assert {"BM", "BN", "THREADS"} <= set(header.params)


@pytest.mark.parametrize("text,message", [
    ("// no header here\n", "no '// config:"),
    ("// config: BM=1\n// config: BM=2\n", "more than one"),
    ("// config: BM=1 BN=2\n// space: BM=1\n", "exactly the config's"),
    ("// config: BM=x\n", "NAME=integer"),
])
def test_malformed_headers_are_refused(tmp_path, text, message):
    path = tmp_path / "00_bad.cu"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_kernel_header(path)


def test_list_json_has_the_promised_fields(capsys):
    from study.__main__ import main

    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"op", "rung", "rung_index", "backend", "title", "params"} <= set(rows[0])
    assert [r["rung_index"] for r in rows if r["backend"] == "cuda"] == [0, 1, 2, 3, 4]
    assert [r["rung_index"] for r in rows if r["backend"] == "cublas"] == [None]
    assert {r["backend"] for r in rows} == {"cuda", "triton", "cublas"}


def test_list_prints_the_ladder_table(capsys):
    from study.__main__ import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for key in ("v0_naive_colmajor_b", "v4_double_buffer", "bottleneck removed", "cuBLAS"):
        assert key in out

"""The registry: sound as registered, and its integrity check names each way it can break."""

import json
from pathlib import Path

import pytest

from study import kernel_header
from study.paths import CUDA_DIR
from study import catalog
from study.catalog import implementations, ladder, ladders
from study.registry import Ladder, Rung, check_integrity

OPS = sorted(ladders())


def test_the_registry_is_sound():
    assert catalog.check_integrity() == []


@pytest.mark.parametrize("op", OPS)
def test_every_op_has_both_backends_per_rung_and_exactly_one_reference(op):
    impls = [i for i in implementations() if i.op == op]
    names = [i.name for i in impls]
    assert len(names) == len(set(names))
    rungs = {i.rung for i in impls if i.rung}
    for rung in rungs:
        assert {i.backend for i in impls if i.rung == rung} == {"cuda", "triton"}, rung
    assert [i.baseline for i in impls if i.reference] == [ladder(op).reference.key]


@pytest.mark.parametrize("impl", [i for i in implementations() if i.backend == "cuda"], ids=lambda i: i.name)
def test_the_file_number_is_the_rung_index(impl):
    """rung_index comes from the ladder's order, the number from the file name: two sources."""
    assert int(Path(impl.source).name.split("_", 1)[0]) == impl.rung_index


def _ladder(rungs, baselines=None, op="sgemm"):
    real = ladder(op)
    return {op: Ladder(real.problem, tuple(rungs), tuple(real.baselines if baselines is None else baselines),
                       real.kernel_dir)}


def test_integrity_names_a_cuda_rung_without_twin():
    real = ladder("sgemm").rungs[1]
    broken = Rung(real.key, real.idea, real.removes, cuda=real.cuda, triton=None)
    problems = check_integrity(_ladder([*ladder("sgemm").rungs[:1], broken, *ladder("sgemm").rungs[2:]]))
    assert any("has no Triton twin" in p and real.key in p for p in problems)


def test_integrity_names_missing_or_doubled_references_and_duplicated_rungs():
    rungs = ladder("sgemm").rungs
    problems = check_integrity(_ladder([*rungs, rungs[0]], baselines=[]))
    assert any("has no baseline" in p for p in problems)
    assert any("appears more than once" in p for p in problems)
    assert any("share the name" in p for p in problems)
    import dataclasses

    ref = ladder("sgemm").baselines[0]
    two = [ref, dataclasses.replace(ref, key="torch_matmul_again")]
    assert any("exactly one reference baseline; has 2" in p for p in check_integrity(_ladder(rungs, baselines=two)))
    none = [dataclasses.replace(ref, reference=False)]
    assert any("exactly one reference baseline; has 0" in p for p in check_integrity(_ladder(rungs, baselines=none)))


def test_integrity_names_an_unregistered_cu_file_and_a_wrong_symbol(tmp_path):
    folder = tmp_path / "sgemm"
    folder.mkdir()
    for rung in ladder("sgemm").rungs:
        (folder / rung.cuda).write_text((CUDA_DIR / "sgemm" / rung.cuda).read_text())
    (folder / "05_stray.cu").write_text("// config: BM=1\n")
    (folder / "01_naive.cu").write_text((folder / "01_naive.cu").read_text().replace("sgemm_v1_naive(", "gemm_v1("))
    real = ladder("sgemm")
    lad = {"sgemm": Ladder(real.problem, real.rungs, real.baselines, folder)}
    problems = check_integrity(lad, cuda_dir=tmp_path)
    assert any(p.endswith("05_stray.cu is not registered by any rung") for p in problems)
    assert any("must define the kernel sgemm_v1_naive" in p for p in problems)


def test_integrity_names_a_precision_the_op_does_not_accept(tmp_path):
    folder = tmp_path / "sgemm"
    folder.mkdir()
    for rung in ladder("sgemm").rungs:
        text = (CUDA_DIR / "sgemm" / rung.cuda).read_text()
        (folder / rung.cuda).write_text(text.replace("// arch:", "// precisions: fp32 fp8\n// arch:", 1))
    real = ladder("sgemm")
    problems = check_integrity({"sgemm": Ladder(real.problem, real.rungs, real.baselines, folder)}, cuda_dir=tmp_path)
    assert any("precisions fp8 that op 'sgemm' does not accept" in p for p in problems)


@pytest.mark.parametrize("impl", [i for i in implementations() if i.backend == "cuda"], ids=lambda i: i.name)
def test_declared_space_points_are_distinct_and_set_the_config_parameters(impl):
    declared = [kernel_header._parse_assignments(line.split(":", 1)[1], Path(impl.source))
                for line in Path(impl.target.path).read_text().splitlines() if line.startswith("// space:")]
    assert declared, "a rung declares at least one alternative point for autotune on"
    as_text = [json.dumps(p, sort_keys=True) for p in declared]
    assert len(as_text) == len(set(as_text))
    assert all(set(p) == set(impl.params) for p in declared)


def test_header_reader_puts_an_undeclared_config_first_and_reads_arch_and_precisions(tmp_path):
    path = tmp_path / "03_thing.cu"
    path.write_text("// arch: sm_90a\n// precisions: fp32 fp16\n// config: BM=8\n// space: BM=4\n")
    header = kernel_header.read(path, "op")
    assert header.symbol == "op_v3_thing" and header.space == ({"BM": 8}, {"BM": 4})
    assert [a.name for a in header.arch] == ["sm_90a"] and header.precisions == ("fp32", "fp16")
    assert header.arch_reason((9, 0)) is None and "sm_80" in header.arch_reason((8, 0))
    assert header.test_targets() == ("sm_90a",)


def test_plain_arch_means_that_capability_or_later():
    arch = kernel_header.Arch.parse("sm_80")
    assert arch.admits((8, 0)) and arch.admits((9, 0)) and not arch.admits((7, 5))
    specific = kernel_header.Arch.parse("sm_90a")
    assert specific.admits((9, 0)) and not specific.admits((10, 0))
    with pytest.raises(ValueError, match="sm_XY"):
        kernel_header.Arch.parse("hopper")
    blackwell = kernel_header.Arch.parse("sm_100a")
    assert (blackwell.major, blackwell.minor, blackwell.name) == (10, 0, "sm_100a")
    assert not blackwell.admits((9, 0)) and kernel_header.Arch.parse("sm_120").admits((12, 0))
    assert not kernel_header.Arch.parse("sm_120").admits((8, 0))


@pytest.mark.parametrize("text,message", [
    ("// no header here\n", "no '// config:"),
    ("// config: BM=1\n// config: BM=2\n", "more than one"),
    ("// config: BM=1 BN=2\n// space: BM=1\n", "exactly the config's"),
    ("// config: BM=x\n", "NAME=integer"),
    ("// config: BM=1\n// arch: sm_80\n// arch: sm_90a\n", "more than one '// arch:'"),
    ("// config: BM=1\n// arch: volta\n", "cannot read architecture"),
])
def test_malformed_headers_are_refused(tmp_path, text, message):
    path = tmp_path / "00_bad.cu"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        kernel_header.read(path)


def test_list_json_has_the_promised_fields(capsys):
    from study.__main__ import main

    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"op", "rung", "rung_index", "baseline", "backend", "title", "params", "precisions", "reference",
            "library"} <= set(rows[0])
    assert {r["name"] for r in rows} == {i.name for i in implementations()}
    assert all(r["reference"] == (r["baseline"] == ladder(r["op"]).reference.key) for r in rows)


def test_list_prints_each_ladder_with_its_unit_and_precisions(capsys):
    from study.__main__ import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for op in OPS:
        lad = ladder(op)
        assert f"{op}  ({lad.problem.bound}-bound" in out
        for rung in lad.rungs:
            assert rung.key in out
    assert "GB/s" in out and "GFLOPS" in out and "torch_mv (reference)" in out


def test_an_emulating_rung_records_its_own_math_at_the_fp32_precision():
    from study.precision import FP32
    from study.catalog import implementation

    for backend in ("cuda", "triton"):
        v8 = implementation(f"sgemm/v8_3xtf32/{backend}")
        assert v8.math_of(FP32) == "3xtf32" and v8.precisions == ("fp32",)
        assert v8.to_json()["math"] == {"fp32": "3xtf32"}
        assert implementation(f"sgemm/v7_multistage/{backend}").math_of(FP32) == "ieee"

"""python -m study compare with nothing selected plans the headline: each op's headline rungs at its
defining shapes and precisions against every baseline, in its first timing mode; --all (or any
selection) the rest."""

from study.select import cases


def test_compare_without_a_selection_plans_the_headline_and_all_the_whole_study():
    from study import catalog
    from study.select import headline

    planned = headline()
    for op, lad in catalog.ladders().items():
        mine = [c for c in planned if c.impl.op == op]
        shapes = [dict(s) for s in (lad.problem.headline_shapes or lad.problem.default_shapes[:1])]
        assert mine and {json_shape(c.shape) for c in mine} == {json_shape(s) for s in shapes}, op
        assert {c.precision.name for c in mine} == set(lad.problem.headline_dtypes), op
        assert {c.impl.rung for c in mine if c.impl.rung} == {  # each headline rung at a precision it implements
            r for r in lad.headline_rungs if any(f"{op}/{r}/" in c.impl.name for c in mine)}, op
        assert all(c.precision.name in c.impl.precisions for c in mine), op  # never a planned skip
        assert any(c.impl.reference for c in mine) and {c.mode for c in mine} == {lad.problem.default_modes[0]}
    assert len(planned) < len(cases()) / 5  # the headline is a fifth of the whole study or less
    assert {c.precision.name for c in headline(dtypes=["tf32"])} == {"tf32"}  # given options still apply
    assert {c.precision.name for c in headline(dtypes=["fp16"]) if c.impl.op == "softmax"} == {"fp16"}
    by_op = {op: sorted({c.precision.name for c in planned if c.impl.op == op}) for op in catalog.ladders()}
    assert by_op["gemm_bias_relu"] == ["bf16"] and by_op["hgemm"] == ["bf16", "fp16"]  # declared; the default
    assert by_op["softmax"] == by_op["sgemv"] == ["bf16", "fp32"] and by_op["sgemm"] == ["fp32"]
    fused = {c.impl.rung for c in planned if c.impl.op == "gemm_bias_relu" and c.impl.rung}
    fp32 = {c.impl.rung for c in headline(dtypes=["fp32"]) if c.impl.op == "gemm_bias_relu" and c.impl.rung}
    assert fused == {"v0_unfused", "v2_fused_wgmma", "v5_cluster_multicast"} and fp32 == {"v0_unfused", "v1_fused_simt"}


def test_a_headline_precision_an_op_does_not_accept_is_a_registry_problem(monkeypatch):
    from study import catalog, registry

    lad = catalog.ladders()["softmax"]
    monkeypatch.setattr(type(lad.problem), "headline_precisions", ("fp32", "tf32"))
    assert any("headline precision 'tf32'" in p for p in registry.check_integrity(catalog.ladders()))


def test_an_op_that_inherits_headline_precisions_it_does_not_accept_runs_those_it_does():
    from study.ops.sgemv import SGEMV
    from study.precision import FP32

    class FP32Only(SGEMV):  # as a plugin might: SGEMV's FP32 and BF16 headline, FP32 alone accepted
        precisions = (FP32,)
        default_precisions = ("fp32",)

    assert SGEMV.headline_precisions == ("fp32", "bf16") and FP32Only().headline_dtypes == ["fp32"]


def json_shape(shape):
    return tuple(sorted(shape.items()))

"""GPU: every implementation of every op, at every precision it implements, on the edge-shape
matrix (study/edge_shapes.py: 64 covering shapes per op plus 6 primes) — each case correct or
skipped with a reason, never wrong, never crashed."""

import pytest
import torch

from study.backends import backend
from study.edge_shapes import edge_shapes
from study.problem import cdiv
from study.catalog import implementations, ladder
from study.problem import check_output
from study.report.labels import shape_label

pytestmark = pytest.mark.gpu
INDUCTOR_SHAPES = 8  # the first edge shapes a torch.compile baseline runs (each one a compilation)


@pytest.mark.parametrize("impl", implementations(), ids=lambda i: i.name)
def test_every_edge_shape_is_correct_or_skipped_with_a_reason(impl):
    from study.backends.library import missing_requirement

    if missing_requirement(impl):
        pytest.skip(missing_requirement(impl))
    problem = ladder(impl.op).problem
    if impl.backend == "cuda":
        arch = impl.target.arch_reason(torch.cuda.get_device_capability())
        if arch:
            pytest.skip(arch)  # an sm_90a rung on another GPU
    failures, skipped, ran = [], 0, 0
    shapes = edge_shapes(problem.axes)
    if impl.backend == "inductor":  # torch.compile(dynamic=False) compiles every shape afresh: seconds each
        shapes = shapes[:INDUCTOR_SHAPES]
    for precision in (p for p in problem.precisions if p.name in impl.precisions):
        for shape in shapes:
            for axis, m in impl.multiples.items():  # e.g. TMA's rows; tails kept
                shape = {**shape, axis: cdiv(shape[axis], m) * m}
            reason = problem.check(shape, precision) or backend(impl.backend).check(impl, problem, shape, precision)
            if reason:
                skipped += 1
                continue
            tensors = problem.make_inputs(shape, precision, sum(shape.values()), "cuda")
            ref, scale = problem.reference(tensors, precision)
            try:
                launch = backend(impl.backend).prepare(impl, problem, tensors, shape, precision)
                with launch.context():
                    verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision, launch.poison)
            except Exception as exc:  # a crash is a failure here, with what it said
                failures.append(f"{shape_label(shape)} {precision.name}: crashed: {exc}")
                continue
            ran += 1
            if not verdict.ok:
                failures.append(f"{shape_label(shape)} {precision.name}: {verdict.message}")
    print(f"{impl.name}: {ran} edge cases correct, {skipped} skipped with a reason")
    assert not failures, failures[:10]
    assert ran > 0

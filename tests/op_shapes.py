"""Shapes a test runs an op at: its own table's where the test keeps one, else the small awkward
shapes the op declares for the sanitizer (``Problem.sanitize_shapes``), so that a plugin op
(STUDY_PLUGINS) is tested like a built-in one and never breaks collection."""

from study.catalog import ladder


def shapes_of(table: dict, op: str) -> list[tuple]:
    if op in table:
        return table[op]
    problem = ladder(op).problem
    return [tuple(shape[axis] for axis in problem.axes) for shape in problem.sanitize_shapes]


# Rungs that refuse part of their op's shapes by design, with the words of that refusal: the study
# records those cases as skips with the reason, and the tests do the same instead of calling them
# failures. hgemm v10 computes Cᵀ with the tokens as wgmma's N: it is for M ≤ 64, and v8/v9 take the rest.
BY_DESIGN = {("hgemm", "v10_skinny_m"): (lambda shape: shape["M"] > 64, "v10 is for M ≤ 64")}


def refused_by_design(impl, shape: dict, reason) -> bool:
    """Whether ``reason`` (a check's answer for ``impl`` at ``shape``) is its rung's declared refusal
    there; raises if the rung runs a shape it is meant to refuse. Another refusal that comes first (the
    interpreter's of BF16) is left to the caller."""
    rule = BY_DESIGN.get((impl.op, impl.rung))
    if rule is None:
        return False
    narrow, words = rule
    if narrow(shape):
        assert reason, (impl.name, shape, "runs a shape it is meant to refuse")
        return words in reason
    return False

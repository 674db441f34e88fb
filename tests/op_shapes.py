"""Shapes a test runs an op at: its own table's where the test keeps one, else the small awkward
shapes the op declares for the sanitizer (``Problem.sanitize_shapes``), so that a plugin op
(STUDY_PLUGINS) is tested like a built-in one and never breaks collection."""

from study.catalog import ladder


def shapes_of(table: dict, op: str) -> list[tuple]:
    if op in table:
        return table[op]
    problem = ladder(op).problem
    return [tuple(shape[axis] for axis in problem.axes) for shape in problem.sanitize_shapes]


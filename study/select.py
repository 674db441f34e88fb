"""The one selection of what a run measures: ops, shapes (``--shape``, in each op's form or
``op:shape``), precisions (``--dtype``), rungs, backends, autotune settings and timing modes, turned
into the plan's cases (:func:`study.plan.plan`). What cannot be selected is a :class:`UsageError`
with the sentence that says why: the CLI prints it and exits 2, and the flows that select for
themselves (study/cublas_study.py) get the same sentence.
"""

from __future__ import annotations

from typing import Callable

from study import catalog
from study.plan import Case, plan
from study.precision import NAMES
from study.suites import shapes_of as suite_shapes


class UsageError(ValueError):
    """Bad usage: an op, shape, precision, rung or option that cannot be run as asked."""


def ops_named(names: list[str] | None) -> tuple[dict, list[str]]:
    """(every ladder, the ops named, in order; all of them when none is)."""
    all_ops = catalog.ladders()
    for op in names or ():
        if op not in all_ops:
            raise UsageError(f"unknown op {op!r}; known: {', '.join(all_ops)}")
    return all_ops, list(names or all_ops)


def one_op(name: str):
    """(every ladder, the problem of op ``name``); a usage error naming the known ops otherwise."""
    all_ops, _ = ops_named([name])
    return all_ops, all_ops[name].problem


def parse_shapes(texts: list[str], ops: list[str], all_ops) -> dict:
    """op -> shapes from ``--shape`` values: ``op:shape`` goes to that op; a bare shape to every
    op of the run whose form it fits. A shape that fits none names each op's form."""
    shapes: dict = {op: [] for op in ops}
    for text in texts:
        op, sep, body = text.partition(":")
        if sep:
            if op not in ops:
                raise UsageError(f"--shape {text}: {op!r} is not an op of this run ({', '.join(ops)})")
            try:
                shapes[op].append(all_ops[op].problem.parse_shape(body))
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            continue
        fitted, errors = 0, []
        for op in ops:
            try:
                shapes[op].append(all_ops[op].problem.parse_shape(text))
                fitted += 1
            except ValueError as exc:
                errors.append(str(exc))
        if not fitted:
            raise UsageError("; ".join(errors) if len(ops) == 1 else
                             f"--shape {text} fits none of the ops of this run: " + "; ".join(errors))
    return shapes


def named(impl_name: str, shape_text: str, precision: str | None = None) -> tuple:
    """(implementation, its problem, the shape, the precision or the op's first) of a command naming one
    implementation at one shape (validate --kernel and --pair, profile): a UsageError for an unknown
    implementation, a shape not of its op's form, or a precision the op does not accept."""
    try:
        impl = catalog.implementation(impl_name)
    except KeyError:
        raise UsageError(f"unknown implementation {impl_name}; see python -m study list --json") from None
    problem = catalog.ladder(impl.op).problem
    try:
        return (impl, problem, problem.parse_shape(shape_text),
                problem.precision(precision) if precision else problem.precisions[0])
    except (KeyError, ValueError) as exc:
        raise UsageError(f"{impl_name} {shape_text}: {exc.args[0] if exc.args else exc}") from None


def parse_dtypes(names: list[str], ops: list[str], all_ops) -> dict:
    """op -> the --dtype names it accepts. Each name must be known and accepted by some op of
    the run; an op that accepts none of them is left out by the caller."""
    for name in names:
        if name not in NAMES:
            raise UsageError(f"unknown dtype {name!r}; known: {', '.join(NAMES)}")
    accepted = {op: [p.name for p in all_ops[op].problem.precisions] for op in ops}
    for name in names:
        if not any(name in accepted[op] for op in ops):
            raise UsageError("; ".join(f"{op} does not accept {name!r}; {op} accepts: {', '.join(accepted[op])}"
                                       for op in ops))
    return {op: [n for n in names if n in accepted[op]] for op in ops if any(n in accepted[op] for n in names)}


def planned(ops, shapes=None, precisions=None, backends=None, rungs=None, autotune: str = "off",
            modes=None, paired: bool = False) -> list[Case]:
    """:func:`study.plan.plan`, its errors usage errors."""
    try:
        return plan(ops, shapes=shapes, precisions=precisions, backends=backends, rungs=rungs, autotune=autotune,
                    modes=modes, paired=paired)
    except (KeyError, ValueError) as exc:
        raise UsageError(exc.args[0] if exc.args else str(exc)) from None


def cases(ops: list[str] | None = None, shapes: list[str] | None = None, dtypes: list[str] | None = None,
          backends=None, rungs=None, autotune: str = "off", modes=None,
          say: Callable[[str], None] = lambda text: None, paired: bool = False,
          suites: list[str] | None = None) -> list[Case]:
    """The cases of a selection as ``compare`` takes it: ops (default all), shape texts and suites
    (study.suites: each op's shapes in them), --dtype names, backends, rungs, autotune and modes. An op
    left with no shape or precision of the selection is dropped, and ``say`` tells why."""
    all_ops, ops = ops_named(ops)
    per_op_shapes = None
    if shapes or suites:
        per_op_shapes = parse_shapes(shapes or [], ops, all_ops)
        for op in ops:
            try:
                listed = suite_shapes(op, suites or [])
            except KeyError as exc:
                raise UsageError(exc.args[0]) from None
            per_op_shapes[op] += [s for s in listed if s not in per_op_shapes[op]]
        for op in [op for op in ops if not per_op_shapes[op]]:
            say(f"{op}: no --shape of its form {all_ops[op].problem.shape_form} was given"
                + (" and no suite named has its shapes" if suites else "") + "; not run")
        ops = [op for op in ops if per_op_shapes[op]]
    precisions = None
    if dtypes:
        precisions = parse_dtypes(dtypes, ops, all_ops)
        for op in [op for op in ops if op not in precisions]:
            say(f"{op}: accepts none of --dtype {', '.join(dtypes)}; not run")
        ops = [op for op in ops if op in precisions]
    return planned(ops, per_op_shapes, precisions, backends, rungs, autotune, modes, paired)


def headline(dtypes: list[str] | None = None, backends=None, autotune: str = "off", modes=None,
             paired: bool = False) -> list[Case]:
    """``python -m study compare`` with nothing selected: every op at its defining shapes
    (``Problem.headline_shapes``) and precisions (``Problem.headline_precisions``), its headline rungs
    (``register(headline=...)``: the seed ladders' end points and each backend's best) at the precisions
    each implements, against every baseline, in its first timing mode; the precisions, backends,
    autotune and modes given still apply. ``--all`` plans the whole study."""
    all_ops, ops = ops_named(None)
    accepted = parse_dtypes(dtypes, ops, all_ops) if dtypes else None
    out: list[Case] = []
    for op in ops:
        lad = all_ops[op]
        if accepted is not None and op not in accepted:
            continue
        precisions = {op: accepted[op] if accepted else lad.problem.headline_dtypes}
        cases_of_op = planned([op], {op: lad.problem.headline}, precisions, backends, list(lad.headline_rungs),
                              autotune, modes or list(lad.problem.default_modes[:1]), paired)
        # a headline rung at a precision it does not implement would only be a skipped line (--all keeps them)
        out += [c for c in cases_of_op if c.precision.name in c.impl.precisions]
    return out

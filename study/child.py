"""The processes the study starts under NVIDIA's tools, one implementation each (``python -m study.child``):

- ``sanitize IMPL SHAPE PRECISION``: one correct-checked launch inside compute-sanitizer
  (:mod:`study.sanitize`); exit 1 when the output is wrong;
- ``ncu IMPL SHAPE LAUNCHES [--precision P] [--config K=V,...]``: exactly LAUNCHES launches inside
  ncu's profiler range, warm-up outside it (:mod:`study.profile`, :mod:`study.validate`), or of the
  empty kernel (IMPL ``microbench/empty``), the output checked after; exit 1 when it is wrong.

The command lines are built by :mod:`study.ncu` (``ncu_target``, ``child_command``). By hand:
``ncu --profile-from-start off python -m study.child ncu sgemm/v4_double_buffer/cuda 4096x4096x4096 1``.
"""

from __future__ import annotations

import argparse
import sys

from study import catalog
from study.backends import backend
from study.ceilings import empty_launch
from study.problem import check_output
from study.profile import ProfileError, parse_config

EMPTY = "microbench/empty"  # not a rung: the empty kernel that measures the events-vs-ncu offset


def ready_launch(name: str, shape_text: str, precision_name: str | None = None, config=None):
    """A ready launch of one implementation (autotune off), at the op's first precision (FP32 for the
    GEMM/GEMV ops) unless another is named, at its declared config with ``config``'s parameters in
    place of the declared ones: (implementation, problem, shape, launch, reference, scale, precision)."""
    impl = catalog.implementation(name)
    problem = catalog.ladder(impl.op).problem
    shape = problem.parse_shape(shape_text)
    precision = problem.precision(precision_name) if precision_name else problem.precisions[0]
    tensors = problem.make_inputs(shape, precision, 0, "cuda")
    ref, scale = problem.reference(tensors, precision)
    launch = backend(impl.backend).prepare(impl, problem, tensors, shape, precision,
                                           config={**impl.params, **config} if config else None)
    return impl, problem, shape, launch, ref, scale, precision


def sanitize(name: str, shape_text: str, precision_name: str) -> int:
    """Inside the sanitizer: one correct-checked launch of one implementation."""
    _, problem, _, launch, ref, scale, precision = ready_launch(name, shape_text, precision_name=precision_name)
    with launch.context():
        verdict = check_output(launch.fn, launch.out, problem, ref, scale, precision, launch.poison)
    print(f"{name} {shape_text} {precision_name}: {'ok' if verdict.ok else verdict.message}")
    return 0 if verdict.ok else 1


def _profiled(fn, launches: int) -> None:
    """Warm up, then exactly ``launches`` launches inside the profiler range, one at a time."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(launches):
        fn()
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def ncu(name: str, shape_text: str, launches: int, precision: str | None = None, config_text: str | None = None) -> int:
    """Inside ncu: exactly ``launches`` launches of one implementation, or of the empty kernel (no flush
    kernels: ncu flushes caches itself); the output of the profiled launches checked after."""
    if name == EMPTY:
        _profiled(empty_launch(), launches)
        return 0
    try:
        config = parse_config([config_text], catalog.implementation(name).params) if config_text else None
    except ProfileError as exc:
        print(f"study.child ncu --config: {exc}", file=sys.stderr)
        return exc.code
    _, problem, _, launch, ref, scale, chosen = ready_launch(name, shape_text, precision_name=precision, config=config)
    with launch.context():
        _profiled(launch.fn, launches)
    verdict = problem.verify(launch.out, ref, scale, chosen)  # the output of the profiled launches
    return 0 if verdict.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m study.child", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    san = sub.add_parser("sanitize")
    san.add_argument("impl")
    san.add_argument("shape")
    san.add_argument("precision")
    prof = sub.add_parser("ncu")
    prof.add_argument("impl")
    prof.add_argument("shape")
    prof.add_argument("launches", type=int)
    prof.add_argument("--precision", default=None)
    prof.add_argument("--config", default=None)
    args = parser.parse_args(argv)
    if args.what == "sanitize":
        return sanitize(args.impl, args.shape, args.precision)
    return ncu(args.impl, args.shape, args.launches, args.precision, args.config)


if __name__ == "__main__":
    sys.exit(main())

"""Prepare a CUDA rung for the runner: compile its config, build views, bind the launch."""

from __future__ import annotations

from study.backends import Launch
from study.backends.cuda import StreamCache, load_function


def check(impl, problem, shape, dtype) -> str | None:
    return problem.cuda_check(impl.params, shape)


def prepare(impl, problem, tensors, shape, dtype, config=None, autotune=False) -> Launch:
    """``config`` is a point of the kernel's space (the runner's CUDA tuner picks it when
    autotune is on); ``None`` means the header's defaults."""
    config = dict(impl.params if config is None else config)
    tensors = problem.with_layout(tensors, impl.layout)
    out = problem.make_output(shape, dtype, tensors[next(iter(tensors))].device)
    defines = problem.cuda_defines(config, tensors, out, shape)
    function = load_function(impl.target.path, impl.target.symbol, defines)
    grid, block, args = problem.cuda_launch(defines, tensors, out, shape)
    launch_on = StreamCache()

    def fn():
        function(grid, block, args, stream=launch_on.current())

    return Launch(fn=fn, out=out, config=defines)

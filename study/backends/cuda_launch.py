"""Prepare a CUDA rung for the runner: compile its config, build views, bind the launch."""

from __future__ import annotations

from study.backends import Launch, rung_argument
from study.backends.cuda import StreamCache, load_function
from study.problem import pad_rows


def check(impl, problem, shape, precision) -> str | None:
    """Why this rung cannot run the case: a precision it does not implement, an architecture
    it was not written for, or a constraint of its parameters; None when it can."""
    import torch

    header = impl.target
    if precision.name not in header.precisions:
        return f"this rung implements {', '.join(header.precisions)} only, not {precision.name}"
    if torch.cuda.is_available():
        reason = header.arch_reason(torch.cuda.get_device_capability())
        if reason:
            return reason
    return problem.cuda_check(impl.params, shape, precision, **rung_argument(problem.cuda_check, impl))


def prepare(impl, problem, tensors, shape, precision, config=None, autotune=False, pad=0) -> Launch:
    """``config`` is a point of the kernel's space (the runner's CUDA tuner picks it when
    autotune is on); ``None`` means the header's defaults."""
    config = dict(impl.params if config is None else config)
    tensors = problem.with_layout(tensors, impl.layout)
    out = pad_rows(problem.make_output(shape, precision, tensors[next(iter(tensors))].device), pad)
    defines = problem.cuda_defines(config, tensors, out, shape, precision)
    launch = problem.cuda_launch(impl.rung, defines, tensors, out, shape)
    function = load_function(impl.target.path, impl.target.symbol, defines, smem=launch.smem)
    # Kernels the launch runs first (an unfused rung's GEMM), the rung's own, then the ones after it (a
    # second pass): one closure, one stream.
    def loaded(call):
        if call.launch.before or call.launch.after:
            raise ValueError(f"{call.symbol}: a kernel launched around a rung's own has no before/after of its own")
        path = call.path or impl.target.path
        return load_function(path, call.symbol, call.defines, smem=call.launch.smem), call.launch

    calls = [*map(loaded, launch.before), (function, launch), *map(loaded, launch.after)]
    launch_on = StreamCache()

    def fn():
        stream = launch_on.current()
        for kernel, step in calls:
            kernel(step.grid, step.block, step.args, shared_mem=step.smem, stream=stream)

    smem = {"smem_bytes": launch.smem} if launch.smem else {}
    return Launch(fn=fn, out=out, config={**defines, **launch.facts, **smem}, keep=launch)

"""Prepare a CUDA rung for the session: compile its config, build views, bind the launch its
launcher builds (``Rung(launch=...)``, :class:`study.problem.CudaLauncher`)."""

from __future__ import annotations

from study.backends import cuda_tune
from study.backends.cuda import StreamCache, load_function
from study.backends.launch import Launch
from study.problem import pad_rows


def check(impl, problem, shape, precision) -> str | None:
    """Why this rung cannot run the case: a precision it does not implement, an architecture
    it was not written for, or a constraint its launcher checks; None when it can."""
    import torch

    header = impl.target
    if precision.name not in header.precisions:
        return f"this rung implements {', '.join(header.precisions)} only, not {precision.name}"
    if torch.cuda.is_available():
        reason = header.arch_reason(torch.cuda.get_device_capability())
        if reason:
            return reason
    launcher = impl.launcher
    return launcher.check(impl.params, shape, precision) if launcher.check else None


def prepare(impl, problem, tensors, shape, precision, config=None, tune=None, pad=0) -> Launch:
    """``config`` is a point of the kernel's space; without it, ``tune`` (study.backends.Tuning) times
    every point and takes the fastest correct one (:mod:`study.backends.cuda_tune`), and neither means
    the header's declared config."""
    log = None
    if config is None and tune is not None:
        config, log = cuda_tune.tune(impl, problem, tensors, shape, precision, tune, pad, prepare)
    config = dict(impl.params if config is None else config)
    launcher = impl.launcher
    tensors = problem.with_layout(tensors, impl.layout)
    out = pad_rows(problem.make_output(shape, precision, tensors[next(iter(tensors))].device), pad)
    defines = (launcher.defines or problem.cuda_defines)(config, tensors, out, shape, precision)
    launch = launcher.launch(defines, tensors, out, shape, precision)
    function = load_function(impl.target.path, impl.target.symbol, defines, smem=launch.smem)
    # Kernels the launch runs first (an unfused rung's GEMM, staging copies), the rung's own, then the ones
    # after it (a second pass, a copy out): one closure, one stream. A call's own before and after (the
    # unfused rung's GEMM, staged) run around it; its path None is the file of the call that holds it.
    def expanded(call, path) -> list:
        here = call.path or path
        return [*(c for b in call.launch.before for c in expanded(b, here)), (here, call),
                *(c for a in call.launch.after for c in expanded(a, here))]

    def loaded(path, call):
        return load_function(path, call.symbol, call.defines, smem=call.launch.smem), call.launch

    own = impl.target.path
    around = ([c for b in launch.before for c in expanded(b, own)], [c for a in launch.after for c in expanded(a, own)])
    calls = [*(loaded(*c) for c in around[0]), (function, launch), *(loaded(*c) for c in around[1])]
    poison = (*launch.poison, *(b for _, call in (*around[0], *around[1]) for b in call.launch.poison))
    launch_on = StreamCache()

    def fn():
        stream = launch_on.current()
        for kernel, step in calls:
            kernel(step.grid, step.block, step.args, shared_mem=step.smem, stream=stream)

    smem = {"smem_bytes": launch.smem} if launch.smem else {}
    return Launch(fn=fn, out=out, config={**defines, **launch.facts, **smem}, keep=launch, log=log, point=config,
                  poison=poison)

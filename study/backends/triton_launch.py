"""Prepare a Triton twin: its fixed config (autotune off) or ``triton.autotune`` over its space (on),
launched by the twin's own launch (``twin(..., launch=...)``)."""

from __future__ import annotations

import os

from study.backends.launch import Launch
from study.problem import pad_rows


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET=1): on the CPU, one program after another."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def check(impl, problem, shape, precision) -> str | None:
    if precision.name not in impl.precisions:
        return f"this twin implements {', '.join(impl.precisions)} only, not {precision.name}"
    if precision.dtype == "bfloat16" and interpreting():
        return ("Triton's interpreter does not handle bfloat16 faithfully (its float32 → bfloat16 "
                "conversion does not round to nearest; triton-lang/triton#5424, #11584): BF16 twins run "
                "on the GPU only")
    twin = impl.target
    return twin.check(shape, precision) if twin.check else None


_TUNERS: dict = {}


def _autotuned(twin, problem):
    """One ``triton.autotune`` wrapper per twin, so its per-shape cache lives for the process;
    keyed on the op's shape axes (and, as Triton always does, the dtypes of the tensors)."""
    if id(twin) in _TUNERS:
        return _TUNERS[id(twin)]
    import triton
    import triton.testing

    configs = [triton.Config({k: v for k, v in c.items() if k not in ("num_warps", "num_stages")},
                             num_warps=c["num_warps"], num_stages=c["num_stages"], pre_hook=twin.pre_hook)
               for c in twin.space]

    def bench(fn, quantiles):
        # Short but flushed: tuning picks by median, the runner measures the pick afterwards.
        return triton.testing.do_bench(fn, warmup=10, rep=40, quantiles=quantiles)

    # Tuned again whenever a size, a stride (padded rows, layouts) or the dot's input precision
    # changes; an axis is its kernel argument as named or in capitals (bgemm's batch: BATCH, on which the
    # split twin's plan depends); one that is no kernel argument cannot be a key.
    names = twin.kernel.arg_names
    axes = [a if a in names else a.upper() for a in problem.axes]
    key = [n for n in (*axes, *(a for a in names if a.startswith("stride_")), "INPUT_PRECISION") if n in names]
    if twin.restore and twin.post_hook:  # triton.autotune restores through its post_hook: one or the other
        raise ValueError(f"{twin.source}: a twin restores its arguments or has a post_hook, not both")
    hooks = {"restore_value": list(twin.restore)} if twin.restore else {"post_hook": twin.post_hook} if twin.post_hook else {}
    tuner = triton.autotune(configs=configs, key=key, do_bench=bench, **hooks)(twin.kernel)
    _TUNERS[id(twin)] = tuner
    return tuner


def config_of(best) -> dict:
    return {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}


def prepare(impl, problem, tensors, shape, precision, config=None, tune=None, pad=0) -> Launch:
    """``config``: a point of the twin's space; without it, ``tune`` runs ``triton.autotune`` over the
    space (its pick is known after the first launch), and neither means the mirrored config."""
    twin = impl.target
    tensors = problem.with_layout(tensors, impl.layout)
    out = pad_rows(problem.make_output(shape, precision, tensors[next(iter(tensors))].device), pad)
    if config is None and tune is not None:
        tuned = _autotuned(twin, problem)
        launch = twin.launch(tuned, tensors, out, shape, {}, precision)
        facts = getattr(launch, "facts", {})  # what the launch decided from the shape (e.g. staged rows)
        return Launch(fn=launch, out=out, config={"autotune": "triton.autotune", "space": len(twin.space), **facts},
                      chosen=lambda: {**config_of(tuned.best_config), **facts})
    config = dict(impl.params if config is None else config)
    launch = twin.launch(twin.kernel, tensors, out, shape, config, precision)
    return Launch(fn=launch, out=out, config={**config, **getattr(launch, "facts", {})})

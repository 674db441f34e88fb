"""Prepare a Triton twin: its fixed config (autotune off) or ``triton.autotune`` over its space (on)."""

from __future__ import annotations

from study.backends import Launch


def check(impl, problem, shape, dtype) -> str | None:
    return problem.triton_check(shape)


_TUNERS: dict = {}


def _autotuned(twin):
    """One ``triton.autotune`` wrapper per twin, so its per-shape cache lives for the process."""
    if id(twin) in _TUNERS:
        return _TUNERS[id(twin)]
    import triton
    import triton.testing

    configs = [triton.Config({k: v for k, v in c.items() if k not in ("num_warps", "num_stages")},
                             num_warps=c["num_warps"], num_stages=c["num_stages"]) for c in twin.space]

    def bench(fn, quantiles):
        # Short but flushed: tuning picks by median, the runner measures the pick afterwards.
        return triton.testing.do_bench(fn, warmup=10, rep=40, quantiles=quantiles)

    _TUNERS[id(twin)] = triton.autotune(configs=configs, key=["M", "N", "K"], do_bench=bench)(twin.kernel)
    return _TUNERS[id(twin)]


def config_of(best) -> dict:
    return {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}


def prepare(impl, problem, tensors, shape, dtype, config=None, autotune=False) -> Launch:
    twin = impl.target
    tensors = problem.with_layout(tensors, impl.layout)
    out = problem.make_output(shape, dtype, tensors[next(iter(tensors))].device)
    if autotune:
        tuned = _autotuned(twin)
        launch = problem.triton_launch(tuned, tensors, out, shape, {})
        return Launch(fn=launch, out=out, config={"autotune": "triton.autotune",
                                                  "space": len(twin.space)},
                      chosen=lambda: config_of(tuned.best_config))
    config = dict(impl.params if config is None else config)
    return Launch(fn=problem.triton_launch(twin.kernel, tensors, out, shape, config), out=out, config=config)

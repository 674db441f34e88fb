"""What a Triton twin's launch may run and what it changed: the twins of the split-K and fitted rungs size their
workspaces and counters for every config a launch can run (its own, or each point ``triton.autotune`` may pick),
and record the meta-parameters a launch fitted to the shape over the declared config (hgemm v10's FIT_BN,
bgemm v1's FIT_N; study/backends/triton_launch.py records a launch's config, then its facts over it)."""

from __future__ import annotations


def launch_configs(kernel, meta: dict, key: str) -> list[dict]:
    """The configs a twin's launch may run: ``meta`` (its config, where not autotuned) and the autotuner's points,
    those that name ``key`` (an autotuned launch's meta names none of the tile's keys)."""
    return [c for c in [meta, *(c.kwargs for c in getattr(kernel, "configs", []))] if key in c]


def launched_facts(config: dict, meta: dict) -> dict:
    """The meta-parameters the launch fitted to the shape: those of ``meta`` that differ from ``config``."""
    return {k: v for k, v in meta.items() if config.get(k) != v}

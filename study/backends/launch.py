"""What every backend's ``prepare`` returns and may raise, and what a search of its own is given
(the interface: :mod:`study.backends`)."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, ContextManager


class Unsupported(ValueError):
    """Raised by ``prepare`` when a rung cannot run these particular tensors (found only once the
    tensors exist: a padded view whose rows break an alignment the rung needs, say). The session
    records the case as skipped with this reason; it is never a crash and never a number."""


class PointUnsupported(Unsupported):
    """Unsupported for one point of a rung's autotune space, not for every point alike (softmax v7: a point's
    cluster and stages whose ring cannot hold the row, where the fitted point's can). Autotune skips the point
    with this reason and times the others; with a single config the case is skipped, as for Unsupported."""


@dataclasses.dataclass(frozen=True)
class Tuning:
    """What a backend's own search needs from the session: the ``timer`` that times every sample
    (a CUDA point gets ``timer.settings.tune_reps`` of them, L2 flushed before each in cold mode), the
    timing ``mode`` and the timer's device that key the cache of picks, and the reference (``ref``,
    ``scale``) that gates every point."""

    timer: Any
    mode: str
    ref: Any
    scale: Any


@dataclasses.dataclass
class Launch:
    fn: Callable[[], Any]
    out: Any
    config: dict
    context: Callable[[], ContextManager] = contextlib.nullcontext
    chosen: Callable[[], dict] | None = None  # a tuner's pick, known only after the first launch
    keep: Any = None  # what the launch needs alive (workspaces) that fn does not hold itself
    log: dict | None = None  # the CUDA search's trials (every point, its time or why it failed)
    point: dict | None = None  # the point of the space a CUDA launch runs: launched again, it needs no search
    poison: tuple = ()  # buffers on C's way out (a staged C, study/ops/tma_staging.py) the gate poisons with C

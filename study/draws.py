"""Seeded uniform draws: the random inputs of every op, kept for the next group that draws the same.

Each op draws its random inputs in FP32 from a seeded CPU generator, so that a seed gives the same
values on any machine, and rounds them to its storage type; the precisions of one shape therefore
draw the same values (and a run's gate trials the same seeds) once per group each. At the shapes a
comparison uses the draw is the slow part of a group's start: ``torch.rand`` from a CPU generator
runs on one thread (16384² FP32, the GEMV headline shape: seconds a set, and a group draws three
sets). A process keeps the last draws, up to :data:`LIMIT_BYTES`, so the second and third precision
of a shape find them. The values are the ones ``torch.rand(..., generator=g) * 2 - 1`` gives for the
generator ``torch.Generator().manual_seed(seed)`` drawing the shapes in order, bit for bit.
"""

from __future__ import annotations

from collections import OrderedDict

import torch

LIMIT_BYTES = 4 << 30  # a 16384² FP32 GEMV's three sets (A and x) fit, a 16384² BF16 one's too

_KEPT: OrderedDict = OrderedDict()  # (seed, shapes) -> tuple of FP32 tensors, least recently used first


def uniform(seed: int, shapes) -> tuple[torch.Tensor, ...]:
    """FP32 CPU tensors of ``shapes`` (a sequence of size tuples), uniform in [−1, 1), drawn in order
    from one generator seeded with ``seed``. Shared with later callers: round or copy them (``.to(dtype,
    copy=True)``), never write into them."""
    key = (int(seed), tuple(tuple(int(n) for n in shape) for shape in shapes))
    if key in _KEPT:
        _KEPT.move_to_end(key)
        return _KEPT[key]
    gen = torch.Generator().manual_seed(int(seed))
    drawn = tuple(torch.rand(*shape, generator=gen, dtype=torch.float32) * 2 - 1 for shape in key[1])
    size = sum(t.numel() * t.element_size() for t in drawn)
    if size <= LIMIT_BYTES:
        _KEPT[key] = drawn
        while sum(t.numel() * t.element_size() for ts in _KEPT.values() for t in ts) > LIMIT_BYTES:
            _KEPT.popitem(last=False)
    return drawn


def forget() -> None:
    """Drop every kept draw (tests; a process that needs the memory back)."""
    _KEPT.clear()

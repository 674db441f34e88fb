"""Edge shapes for correctness sweeps: every tile tail, crossed sparsely.

Each dimension takes a value from EDGE — 1, 2, 3 (degenerate), 17 (one past a small tile),
63/65 and 127/129 (one short of and one past 64 and 128) — and the shapes of an op are a
*covering design of strength 2*: every value of every axis meets every value of every other
axis in at least one shape. For two axes that is the full product (64 shapes); for three it is
an orthogonal array, (a, b, a + b mod 8) over the value indices, 64 shapes where the full product
would be 512. Primes near the default tiles (PRIMES, every axis the same prime) are added.
"""

from __future__ import annotations

import itertools

EDGE = (1, 2, 3, 17, 63, 65, 127, 129)
PRIMES = (31, 61, 67, 127, 131, 257)


def covering(axes: int, values=EDGE) -> list[tuple[int, ...]]:
    """Shapes in which every pair of axes takes every pair of values at least once."""
    n = len(values)
    if axes == 1:
        return [(v,) for v in values]
    if axes == 2:
        return list(itertools.product(values, repeat=2))
    if axes == 3:
        return [(values[a], values[b], values[(a + b) % n]) for a in range(n) for b in range(n)]
    rows, missing = [], {(i, j, a, b) for i, j in itertools.combinations(range(axes), 2)
                         for a in range(n) for b in range(n)}
    while missing:  # greedy: the candidate row that covers most uncovered pairs
        best = max(itertools.product(range(n), repeat=axes),
                   key=lambda r: sum((i, j, r[i], r[j]) in missing for i, j in itertools.combinations(range(axes), 2)))
        missing -= {(i, j, best[i], best[j]) for i, j in itertools.combinations(range(axes), 2)}
        rows.append(tuple(values[k] for k in best))
    return rows


def edge_shapes(axes: tuple[str, ...]) -> list[dict]:
    """The covering design over an op's axes, then the prime shapes."""
    rows = covering(len(axes)) + [(p,) * len(axes) for p in PRIMES]
    return [dict(zip(axes, row)) for row in rows]

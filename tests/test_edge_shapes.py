import itertools

import pytest

from study.edge_shapes import EDGE, PRIMES, covering, edge_shapes


@pytest.mark.parametrize("axes,count", [(1, 8), (2, 64), (3, 64), (4, None)])
def test_every_pair_of_values_meets_on_every_pair_of_axes(axes, count):
    rows = covering(axes)
    if count is not None:
        assert len(rows) == count
    assert len(rows) < len(EDGE) ** axes or axes <= 2
    for i, j in itertools.combinations(range(axes), 2):
        assert {(r[i], r[j]) for r in rows} == set(itertools.product(EDGE, EDGE))


def test_an_ops_edge_shapes_name_its_axes_and_end_with_the_primes():
    shapes = edge_shapes(("M", "N", "K"))
    assert len(shapes) == 64 + len(PRIMES) and shapes[-1] == {"M": 257, "N": 257, "K": 257}

import math

import pytest

from study.stats import summarize


def test_odd_count_median_quartiles_and_spread():
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert s.n == 5 and s.median == 3.0 and s.min == 1.0 and s.max == 5.0
    assert (s.q1, s.q3) == (2.0, 4.0)
    assert s.mean == 3.0
    assert math.isclose(s.stdev, math.sqrt(2.5))
    assert math.isclose(s.rel_stdev, math.sqrt(2.5) / 3.0)
    assert s.outliers == 0


def test_even_count_interpolates_and_counts_tukey_outliers():
    s = summarize([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0])
    assert s.median == 1.0
    assert s.outliers == 1  # 10 is far beyond q3 + 1.5 IQR
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert s.median == 2.5 and s.q1 == 1.75 and s.q3 == 3.25


def test_single_sample_has_zero_spread():
    s = summarize([0.25])
    assert s.median == s.min == s.max == 0.25 and s.stdev == 0.0 and s.rel_stdev == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [-1.0, 2.0]])
def test_refuses_meaningless_samples(bad):
    with pytest.raises(ValueError):
        summarize(bad)

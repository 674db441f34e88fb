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


def test_noise_is_the_spread_of_the_inliers_so_rare_far_outliers_cannot_hold_it_up():
    steady = [1.0 + 0.001 * (i % 5) for i in range(100)]
    with_spikes = steady[:96] + [2.0, 2.0, 2.0, 2.0]  # 4 % far outliers, like the batch-start samples
    s = summarize(with_spikes)
    assert s.outliers == 4
    assert s.rel_stdev > 0.15  # the plain figure is ruled by the spikes ...
    assert s.noise < 0.002  # ... the inlier spread is what the median sees
    assert s.median == summarize(steady[:96]).median

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


def test_the_median_interval_narrows_with_samples_while_the_spread_does_not():
    import random

    rng = random.Random(1)
    few = [1.0 + rng.gauss(0, 0.02) for _ in range(50)]
    many = few + [1.0 + rng.gauss(0, 0.02) for _ in range(5000)]
    a, b = summarize(few), summarize(many)
    assert a.noise > 0.01 and b.noise > 0.01          # a 2 % jitter stays 2 %
    assert b.median_ci < 0.001 < a.median_ci          # the median is pinned down by more samples
    assert summarize([1.0, 2.0, 3.0]).median_ci == math.inf  # too few for a 95 % interval


def test_resolution_is_the_smallest_step_between_distinct_samples():
    ticks = [0.000032 * k for k in (100, 100, 101, 103, 101, 100, 104, 105, 106, 107, 109, 110)]
    assert summarize(ticks).resolution == pytest.approx(0.000032)
    assert summarize([1.0, 1.0]).resolution == 0.0
    assert summarize([1.0, 2.0] * 10).resolution == 0.0  # two clusters: no tick to read


def test_a_quantised_median_known_to_one_tick_stops_by_ci():
    from study.timing import TimerSettings, stop_rule

    st = TimerSettings(min_samples=10, min_time_s=0.0, timeout_s=5)
    # a 3 µs kernel timed in 32 ns ticks, half its samples one tick above the other half: the
    # interval is one tick (0.5 %), never 0.1 %, and no number of samples changes that
    tick = 0.000032
    body = [94 * tick, 95 * tick] * 400
    tail = [k * tick for k in range(96, 120)] * 5
    assert stop_rule(st, body + tail, 0.1) == "ci"
    wide = [k * tick for k in range(50, 150)] * 4  # the median's interval spans about ten ticks
    assert stop_rule(st, wide, 0.1) is None


def test_the_interval_of_a_median_holds_it_and_narrows_with_more_rounds():
    from study.stats import median_interval

    few = [1.02, 0.99, 1.01, 1.0, 1.03, 0.98, 1.0, 1.01, 0.99, 1.02]
    median, low, high = median_interval(few)
    assert median == 1.005 and low <= median <= high and high - low < 0.04
    many = few * 10
    _, low_many, high_many = median_interval(many)
    assert high_many - low_many < high - low  # ten times the rounds: a narrower interval
    assert median_interval(few) == (median, low, high)  # seeded: the same values, the same interval


def test_pairing_stops_when_the_median_ratio_is_known_or_at_a_bound():
    from study.timing import TimerSettings, pair_stop

    st = TimerSettings(pair_ci=0.004, min_rounds=10, max_rounds=40, timeout_s=5)
    steady = [1.01] * 15
    assert pair_stop(st, steady[:9], 0.1) is None  # fewer rounds than the minimum
    assert pair_stop(st, steady[:14], 0.1) is None  # seven ABBA units: the median's interval reaches past them
    assert pair_stop(st, steady + [1.01], 0.1) == "ci"
    noisy = [1.0, 1.0, 1.1, 1.1] * 4  # units of 1.0 and 1.1
    assert pair_stop(st, noisy, 0.1) is None and pair_stop(st, noisy, 6.0) == "timeout"
    assert pair_stop(st, noisy + noisy + noisy[:8], 0.1) == "max_rounds"
    assert pair_stop(st, steady * 2 + [1.01], 0.1) is None  # 31 rounds: one more A-first than B-first
    assert pair_stop(st, steady[:3], 6.0) == "timeout"  # the timeout holds however few rounds were kept
    # going first costs 8 %: two clusters of single rounds, one ratio per ABBA unit
    ordered = [1.0 / 1.04, 1.04] * 8
    assert pair_stop(st, ordered, 0.1) == "ci"
    with pytest.raises(ValueError):
        TimerSettings(min_rounds=2)


def test_abba_units_cancel_what_going_first_costs_and_the_effect_is_kept():
    from study.stats import abba_units, median_interval, order_effect

    # A runs 1.43× faster than B; whichever goes first in a round pays 4 % (the H200's cold
    # softmax rounds at ~10 µs): single rounds fall at 1.375 and 1.487, their median in the gap
    rounds = [1.43 / 1.04, 1.43 * 1.04] * 10
    units = abba_units(rounds)
    assert len(units) == 10 and units == pytest.approx([1.43] * 10)
    ratio, low, high = median_interval(units)
    assert ratio == pytest.approx(1.43) and high - low < 1e-9
    _, low_rounds, high_rounds = median_interval(rounds)
    assert high_rounds - low_rounds > 0.1  # the rounds alone: an interval as wide as the gap
    assert order_effect(rounds) == pytest.approx(1.04**2)
    assert abba_units(rounds[:3]) == pytest.approx([1.43]) and order_effect(rounds[:1]) is None

"""Statistics of timing samples, in one pure function.

The headline number of a measurement is the **median** of all its samples: it ignores
the rare slow repetition (a clock dip, an interrupt) that would drag a mean, and it
is what ``triton.testing.do_bench`` is asked for here and what nvbench reports.
Minimum and quartiles are kept beside it; outliers are counted by Tukey's rule
(beyond 1.5 × IQR from the quartiles) and never removed from the samples.

``noise`` — what the stopping rule compares with its target — is the relative standard
deviation of the samples inside Tukey's fences. The plain relative standard deviation
(``rel_stdev``, also kept) is ruled by a few far outliers: on the H200, 4 % of slow
samples held it at 2–15 % over 30 000 samples while the median was stable to 0.1 %, so a
rule on it never stopped. The inlier spread measures the scatter the median sees.

``median_ci`` is how well the median itself is known: the relative half-width of its 95 %
confidence interval from order statistics (the samples of rank n/2 ± 1.96·√n/2), which
assumes nothing about the distribution. A spread is a property of the kernel and does not
shrink with more samples; this interval does. On the H200, GEMV launches of 50–250 µs had
an inlier spread of 0.6–1.9 % (about 1 µs of jitter) that no number of samples lowers,
while their medians agreed to 0.1 % across tenths of 50 000 samples.

``resolution`` is the smallest step between two distinct samples, taken as the timer's tick
when the samples take at least 8 distinct values (0 otherwise: two or three clusters say
nothing about the tick): CUDA events tick every 32 ns on the H200, so a 3 µs kernel cannot be
pinned down to 0.1 % (3 ns); an interval as narrow as one tick is as narrow as the instrument
allows.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence


@dataclasses.dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    min: float
    max: float
    q1: float
    q3: float
    stdev: float
    rel_stdev: float
    outliers: int
    noise: float
    median_ci: float
    resolution: float


def _quantile(xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on sorted input."""
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(samples: Sequence[float]) -> Summary:
    """Median, quartiles, min, max, mean, (relative) sample standard deviation, outliers."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("no samples to summarize")
    if any(math.isnan(x) or x < 0 for x in xs):
        raise ValueError("timing samples must be non-negative numbers")
    n = len(xs)
    mean, stdev = _mean_stdev(xs)
    q1, q3 = _quantile(xs, 0.25), _quantile(xs, 0.75)
    iqr = q3 - q1
    inliers = [x for x in xs if q1 - 1.5 * iqr <= x <= q3 + 1.5 * iqr]
    median = _quantile(xs, 0.5)
    return Summary(n=n, median=median, mean=mean, min=xs[0], max=xs[-1], q1=q1, q3=q3,
                   stdev=stdev, rel_stdev=_relative(mean, stdev), outliers=n - len(inliers),
                   noise=_relative(*_mean_stdev(inliers)), median_ci=_median_ci(xs, median),
                   resolution=_resolution(xs))


def _resolution(xs: Sequence[float]) -> float:
    """The smallest step between distinct sorted samples, when there are enough of them to show it."""
    steps = [b - a for a, b in zip(xs, xs[1:]) if b > a]
    return min(steps) if len(steps) >= 7 else 0.0


def _median_ci(xs: Sequence[float], median: float) -> float:
    """Relative half-width of the median's distribution-free 95 % confidence interval (sorted
    input); infinite below 8 samples, where the interval reaches past the extremes."""
    n = len(xs)
    half = 1.96 * math.sqrt(n) / 2
    lo, hi = math.floor(n / 2 - half), math.ceil(n / 2 + half)
    if lo < 0 or hi > n - 1 or median <= 0:
        return math.inf
    return (xs[hi] - xs[lo]) / 2 / median


def _mean_stdev(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single sample)."""
    n = len(xs)
    mean = sum(xs) / n
    return mean, (math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0)


def _relative(mean: float, stdev: float) -> float:
    return stdev / mean if mean > 0 else 0.0


BOOTSTRAP_RESAMPLES = 1000  # resamples of a bootstrap interval (study.diff, a pair's round ratios)


def bootstrap_medians(xs: Sequence[float], rng, resamples: int = BOOTSTRAP_RESAMPLES):
    """The medians of ``resamples`` resamples of ``xs`` (with replacement, drawn by the numpy
    generator ``rng``): a bootstrap of the median, assuming nothing of the distribution."""
    import numpy as np

    xs = np.asarray(xs, dtype=float)
    return np.median(xs[rng.integers(0, len(xs), (resamples, len(xs)))], axis=1)


def abba_units(ratios: Sequence[float]) -> list[float]:
    """The geometric mean of each A-first round's ratio and the B-first round kept after it (a paired
    measurement's rounds alternate, A first at even indices): whatever a kernel pays or gains for going
    first in a round multiplies one ratio and divides the other, and cancels in their product. On the
    H200 the B-first rounds' median ratio differed from the A-first rounds' by 6–8 % (either sign, by
    pair) for cold softmax launches of ~10 µs and 1–2 % for GEMMs, so the ratios of single rounds fell
    in two clusters whose gap, not the kernels, set their median and its interval (docs/method.md §8).
    A last unpaired round is left out."""
    return [math.sqrt(a * b) for a, b in zip(ratios[0::2], ratios[1::2])]


def order_effect(ratios: Sequence[float]) -> float | None:
    """The B-first rounds' median ratio over the A-first rounds': 1 when going first costs neither side
    anything; above 1 when the side that goes first runs slower (None below a round of each)."""
    firsts, seconds = ratios[0::2], ratios[1::2]
    if not firsts or not seconds:
        return None
    return summarize(seconds).median / summarize(firsts).median


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, 2.5th and 97.5th percentiles of the bootstrapped median): the 95 % interval of a
    median of few values (a paired measurement's round ratios). Seeded: the same values give the
    same interval."""
    import numpy as np

    if not len(values):
        raise ValueError("no values")
    low, high = np.percentile(bootstrap_medians(values, np.random.default_rng(0)), [2.5, 97.5])
    return float(np.median(values)), float(low), float(high)


def geomean(values) -> float | None:
    """The geometric mean of the positive values (a suite's × reference over its shapes); None without any."""
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None

"""``python -m study diff A.json B.json``: two runs, case by case, with noise-aware verdicts.

Measurements pair on what they measured — op, implementation (rung and backend), shape,
precision, autotune and timing mode. For each pair the ratio of medians B / A (> 1: B is
slower) gets a 95 % bootstrap interval from the stored samples: both sample sets are
resampled with replacement, the ratio of the resampled medians is taken each time, and the
2.5th and 97.5th percentiles bound it. The verdict:

- ``same within noise``: the interval holds 1, or the shift ``|ratio − 1|`` is no larger than the
  noisier run's spread (the relative standard deviation of its samples inside Tukey's fences,
  the statistic the stop rule reads) and than the threshold. The interval alone knows only the noise inside each run:
  with 20,000 samples it is ±0.05 % wide, while two runs of one kernel (another process, another
  GPU of the model, another allocation) differ by a few tenths of a percent; nvbench's compare
  uses the same spread criterion;
- ``slower`` / ``faster``: otherwise, as the interval lies above / below 1;
- ``status changed`` (ok in one, not ok in the other), ``only in A``, ``only in B``.

``--floor`` adds a run-to-run spread the user declares: a shift within it is the same too (never
one beyond the threshold). Two processes on one GPU, and two GPUs of one model, differ by more
than one run's samples do (docs/method.md §6); the default floor is 0.

A pair is *slower beyond the threshold* when the interval's lower end exceeds 1 + threshold:
then the command exits 1, for CI use. Differences of environment (GPU, driver, CUDA, packages,
commit, timer settings, clocks seen) are listed first: they explain a difference, they do
not excuse it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from tabulate import tabulate

from study import results, stats
from study.keys import CaseKey
from study.report.labels import num

MAX_RESAMPLED = 1000    # a side with more samples is first thinned to this many, evenly spaced in rank:
                        # the interval widens a little (conservative) and a diff of 500 pairs takes seconds
DEFAULT_THRESHOLD = 0.05


def bootstrap_ratio(a: list[float], b: list[float], seed: int = 0,
                    resamples: int = stats.BOOTSTRAP_RESAMPLES) -> tuple[float, float, float]:
    """(median(b) / median(a), 2.5th and 97.5th percentiles of that ratio over resamples)."""
    rng = np.random.default_rng(seed)

    def thin(xs):
        xs = np.asarray(xs, dtype=float)
        return xs[np.linspace(0, len(xs) - 1, MAX_RESAMPLED).astype(int)] if len(xs) > MAX_RESAMPLED else xs

    xa, xb = thin(a), thin(b)
    ma = stats.bootstrap_medians(xa, rng, resamples)  # a first, then b: the generator's draws as before
    ratios = stats.bootstrap_medians(xb, rng, resamples) / ma
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(np.median(b) / np.median(a)), float(lo), float(hi)


@dataclasses.dataclass(frozen=True)
class Pair:
    key: CaseKey
    a: dict | None
    b: dict | None
    ratio: float | None = None
    lo: float | None = None
    hi: float | None = None
    verdict: str = ""


def compare_pair(key, a: dict | None, b: dict | None, threshold: float = DEFAULT_THRESHOLD,
                 floor: float = 0.0) -> Pair:
    if a is None:
        return Pair(key, a, b, verdict="only in B")
    if b is None:
        return Pair(key, a, b, verdict="only in A")
    if a["status"] != "ok" or b["status"] != "ok":
        verdict = "status changed" if a["status"] != b["status"] else f"both {a['status']}"
        return Pair(key, a, b, verdict=verdict)
    ratio, lo, hi = bootstrap_ratio(a["samples_ms"], b["samples_ms"])
    spread = max(stats.summarize(a["samples_ms"]).noise, stats.summarize(b["samples_ms"]).noise)
    # The spread excuses a shift only below the threshold: a slowdown the interval puts beyond
    # it stays a regression however noisy the runs. ``floor``: a run-to-run spread the user
    # declares (two GPUs, two processes differ by more than one run's samples do; method §6).
    if lo <= 1 <= hi or abs(ratio - 1) <= min(max(spread, floor), threshold):
        verdict = "same within noise"
    else:
        verdict = "slower" if lo > 1 else "faster"
    return Pair(key, a, b, ratio, lo, hi, verdict)


def pair_runs(doc_a: dict, doc_b: dict, threshold: float = DEFAULT_THRESHOLD, floor: float = 0.0) -> list[Pair]:
    """Every case of either run, paired where both measured it, in A's order then B's."""
    a = {CaseKey.of_record(m): m for m in doc_a["measurements"]}
    b = {CaseKey.of_record(m): m for m in doc_b["measurements"]}
    keys = list(a) + [k for k in b if k not in a]
    return [compare_pair(k, a.get(k), b.get(k), threshold, floor) for k in keys]


def clocks_seen(doc: dict) -> str:
    lows = [m["clocks"]["sm_mhz_min"] for m in doc["measurements"] if (m.get("clocks") or {}).get("sm_mhz_min")]
    highs = [m["clocks"]["sm_mhz_max"] for m in doc["measurements"] if (m.get("clocks") or {}).get("sm_mhz_max")]
    return f"{min(lows):.0f}–{max(highs):.0f} MHz" if lows and highs else "unknown"


def environment_differences(doc_a: dict, doc_b: dict) -> list[tuple[str, object, object]]:
    found = results.differences(doc_a["environment"], doc_b["environment"])
    ca, cb = clocks_seen(doc_a), clocks_seen(doc_b)
    return found + ([("SM clocks seen", ca, cb)] if ca != cb else [])


def regressions(pairs: list[Pair], threshold: float) -> list[Pair]:
    return [p for p in pairs if p.verdict == "slower" and p.lo > 1 + threshold]


def _row(p: Pair) -> list[str]:
    k = p.key
    shape = k.shape + (f" pad={k.pad}" if k.pad else "")  # "4096x4096x4096 pad=3" for a padded case

    def median(m):
        return num(None if m is None else m.get("median_ms"), ".4f")

    ratio = "—" if p.ratio is None else f"{p.ratio:.3f} [{p.lo:.3f}, {p.hi:.3f}]"
    return [f"`{k.implementation}`", shape, k.precision, k.autotune, k.mode, median(p.a), median(p.b), ratio, p.verdict]


HEADER = ["implementation", "shape", "precision", "autotune", "mode", "A median ms", "B median ms",
          "B/A [95 % CI]", "verdict"]


def summary_counts(pairs: list[Pair]) -> dict:
    counts: dict = {}
    for p in pairs:
        counts[p.verdict] = counts.get(p.verdict, 0) + 1
    return counts


def _gpu(m: dict) -> str:
    gpu = m.get("gpu") or {}
    return gpu.get("uuid") or (f"index {gpu['index']}" if "index" in gpu else "unknown")


def by_gpu(pairs: list[Pair]) -> list[list[str]]:
    """Per (A's GPU, B's GPU) of the timed pairs: how many, how many the same within noise, and
    the median and 10th–90th percentiles of B/A. Two GPUs of one model differ by their own
    constant (a few tenths of a percent to 2 %) that no run's samples know of: this is where a
    reader sees it, apart from the cases' own noise."""
    groups: dict = {}
    for p in pairs:
        if p.ratio is not None:
            groups.setdefault((_gpu(p.a), _gpu(p.b)), []).append(p)
    rows = []
    for (ga, gb), group in groups.items():
        ratios = np.array([p.ratio for p in group])
        same = sum(p.verdict == "same within noise" for p in group)
        p10, p50, p90 = np.percentile(ratios, [10, 50, 90])
        rows.append([ga, gb, str(len(group)), f"{same} ({100 * same / len(group):.0f} %)", f"{p50:.4f}",
                     f"{p10:.4f} – {p90:.4f}"])
    return rows


GPU_HEADER = ["A's GPU", "B's GPU", "pairs", "same within noise", "median B/A", "B/A 10th – 90th pct"]


def markdown(path_a, path_b, doc_a: dict, doc_b: dict, pairs: list[Pair], threshold: float,
             floor: float = 0.0) -> str:
    env = environment_differences(doc_a, doc_b)
    counts = summary_counts(pairs)
    slow = regressions(pairs, threshold)
    out = [f"# `study diff`: {path_a} → {path_b}", "",
           "B/A is the ratio of medians (> 1: B is slower) with a 95 % bootstrap interval from the stored samples; "
           "`same within noise` means the interval holds 1 or the shift is within the noisier run's spread "
           "(relative standard deviation of its samples inside Tukey's fences)"
           + (f" or within the declared run-to-run floor of {100 * floor:g} % (`--floor`)" if floor else "") + ".", "",
           "## Environment differences", ""]
    out += ([f"- {what}: `{a}` → `{b}`" for what, a, b in env] or ["- none"]) + [""]
    out += ["## Summary", "", ", ".join(f"{n} {v}" for v, n in counts.items()) + ".", "",
            (f"**{len(slow)} slower by more than {100 * threshold:g} %** (exit 1)." if slow else
             f"Nothing slower by more than {100 * threshold:g} %."), "",
            "## By GPU", "", "The timed pairs grouped by the GPUs (UUID) their two measurements ran on: a "
            "shift shared by a whole group is the GPUs' difference, not the cases'.", "",
            tabulate(by_gpu(pairs), GPU_HEADER, tablefmt="github", disable_numparse=True), "",
            "## Pairs", "", tabulate([_row(p) for p in pairs], HEADER, tablefmt="github", disable_numparse=True), ""]
    return "\n".join(out)


def terminal(doc_a: dict, doc_b: dict, pairs: list[Pair], threshold: float) -> str:
    env = environment_differences(doc_a, doc_b)
    lines = ["environment differences: " + ("; ".join(f"{w}: {a} → {b}" for w, a, b in env) or "none")]
    lines.append(tabulate([[c.strip("`") for c in _row(p)] for p in pairs], HEADER, tablefmt="simple",
                          disable_numparse=True))
    counts = summary_counts(pairs)
    lines.append(tabulate(by_gpu(pairs), GPU_HEADER, tablefmt="simple", disable_numparse=True))
    lines.append(", ".join(f"{n} {v}" for v, n in counts.items()))
    slow = regressions(pairs, threshold)
    if slow:
        lines.append(f"{len(slow)} slower by more than {100 * threshold:g} %")
    return "\n".join(lines)

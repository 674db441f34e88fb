"""``python -m study repeats FILE|FOLDER ...``: one paired ratio measured in separate runs, on one GPU or
several — each run's ratio with its interval, the spread over runs, and whether they reproduce.

A paired ratio's interval speaks for the rounds of one run: at the 700 W cap a second run draws another
power state, and the GPU (each record names its uuid) another silicon (docs/method.md §8, *Repeated
runs*). A claim that holds only on one run is not yet a claim. The goal a pair is judged against (issue
"Ratios you can defend", goal 5): at least RUNS_PER_GPU runs on each of at least GPUS GPUs, every run's
ratio within SPREAD of every other (the largest over the smallest), every interval at most WIDTH of its
ratio wide. Nothing here measures: it reads the ``paired`` of saved records (``compare --paired``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from tabulate import tabulate

from study import results
from study.keys import shape_text
from study.timing import TimerSettings, shared_cap

RUNS_PER_GPU = 3
GPUS = 2
SPREAD = 0.015  # the largest run's ratio over the smallest, less 1
WIDTH = 0.02    # an interval's high − low over its ratio
# The timer settings that make a protocol: TimerSettings' fields (not the descriptions results add beside them), less
# the autotuner's repetitions, which no paired record's rounds use.
PROTOCOL = frozenset(f.name for f in dataclasses.fields(TimerSettings)) - {"tune_reps"}


@dataclasses.dataclass(frozen=True)
class Run:
    """One paired record: which pair, where (GPU uuid, commit, file) and what its rounds said."""
    pair: tuple  # implementation, reference, shape text, precision, mode
    gpu: str
    commit: str
    path: Path
    ratio: float
    ci: tuple[float, float]
    rounds: int
    stop: str
    interleaved: float | None  # the interleaved rounds' ratio where the pair was timed again re-settled
    settled: bool  # the headline's rounds settled each side before each batch (re-settled), not interleaved
    superseded: bool = False  # interleaved at the power cap: a headline the study now re-settles (not judged)
    timer: tuple = ()  # the run's timer settings (environment.timer), sorted (key, value) pairs
    utc: str = ""
    mhz: float | None = None      # the implementation's median SM clock over the headline's batches (NVML)
    ref_mhz: float | None = None  # the reference's

    @property
    def width(self) -> float:
        return (self.ci[1] - self.ci[0]) / self.ratio


def gpu_label(uuid: str) -> str:
    """A GPU uuid's first eight hex digits (``GPU-27ec2969-…`` → ``27ec2969``), as folder names take it."""
    return uuid[4:12] if uuid.startswith("GPU-") else uuid


def paths_of(targets) -> list[Path]:
    """The files named, and the results files under the folders named (sorted), in the order given: a file under
    a folder with no 'schema' and 'measurements' (a profile's sidecar, say) is passed over; one named is read
    whatever it is."""
    out = []
    for target in map(Path, targets):
        out.extend([path for path, raw in results.documents(target) if "schema" in raw and "measurements" in raw]
                   if target.is_dir() else [target])
    return out


def runs(paths) -> list[Run]:
    """Every ok paired record of the files (a ValueError naming a file that is no results file, or whose paired
    record lacks a field: study.results.load checks them)."""
    found = []
    for path in paths:
        doc = results.load(path)
        env = doc["environment"]
        for m in doc["measurements"]:
            paired = m.get("paired")
            if m.get("status") != "ok" or not paired or not paired.get("ci"):
                continue
            gpu = (m.get("gpu") or {}).get("uuid") or env.get("gpu", {}).get("uuid") or "unknown"
            interleaved = paired.get("interleaved")
            found.append(Run(pair=(m["implementation"], paired["reference"], shape_text(m["shape"]), m["precision"],
                                   m["mode"]),
                             gpu=gpu, commit=str(env.get("git", {}).get("commit", "?"))[:7], path=Path(path),
                             ratio=paired["ratio"], ci=tuple(paired["ci"]), rounds=paired["rounds"],
                             stop=paired.get("stop") or "?", interleaved=interleaved["ratio"] if interleaved else None,
                             settled=bool(paired.get("settle_each")),
                             superseded=not paired.get("settle_each")
                             and shared_cap((m.get("clocks"), paired.get("reference_clocks"))),
                             timer=tuple(sorted((k, repr(v)) for k, v in (env.get("timer") or {}).items())),
                             utc=str(env.get("utc", "")), mhz=median_mhz(m.get("clocks")),
                             ref_mhz=median_mhz(paired.get("reference_clocks"))))
    return found


def median_mhz(clocks) -> float | None:
    """A record's median SM clock, where NVML gave one."""
    return (clocks or {}).get("sm_mhz_median") if (clocks or {}).get("available") else None


def clock_note(group: list[Run]) -> str:
    """Each side's median clocks over the judged runs, their range. At the 700 W cap each GPU holds its own clock for
    the same kernel (docs/method.md §8): where the ratios of two GPUs differ as one side's clocks do, the spread is
    the silicon's, which no number of runs on one GPU narrows."""
    timed = [r for r in group if r.mhz and r.ref_mhz]
    if len(timed) < 2:
        return ""
    mine, theirs = [r.mhz for r in timed], [r.ref_mhz for r in timed]
    return (f" Median clocks over these runs: the implementation {min(mine):,.0f}–{max(mine):,.0f} MHz "
            f"({100 * (max(mine) / min(mine) - 1):.1f} % apart), the reference {min(theirs):,.0f}–{max(theirs):,.0f} MHz "
            f"({100 * (max(theirs) / min(theirs) - 1):.1f} % apart).")


def by_pair(found: list[Run]) -> dict[tuple, list[Run]]:
    out: dict[tuple, list[Run]] = {}
    for run in found:
        out.setdefault(run.pair, []).append(run)
    return out


def spread(group: list[Run]) -> float:
    ratios = [r.ratio for r in group]
    return max(ratios) / min(ratios) - 1


def commits(group: list[Run]) -> str:
    """Where a pair's runs come from more than one commit, say so: the code may differ between them."""
    named = sorted({r.commit for r in group})
    return f" from {len(named)} commits ({', '.join(named)})" if len(named) > 1 else ""


def protocol(group: list[Run]) -> tuple:
    """The timer settings of the newest run whose headline the study still gives (superseded runs aside, unless
    every run is): the protocol a pair is judged under."""
    current = [r for r in group if not r.superseded] or group
    return max(current, key=lambda r: r.utc).timer


def differences(timer: tuple, settings: tuple) -> list[str]:
    """The protocol's settings (:data:`PROTOCOL`) in which two runs' timers differ, among those both record (a
    setting added to the study later is not a difference from runs made before it)."""
    mine, theirs = dict(timer), dict(settings)
    return sorted(k for k in PROTOCOL & mine.keys() & theirs.keys() if mine[k] != theirs[k])


def judged(group: list[Run]) -> list[Run]:
    """The runs the goal is judged on: those timed under the newest run's protocol (a reproduction is claimed for
    one protocol; runs under other settings — a shorter timeout, say — are shown, not pooled), less those whose
    headline the study no longer gives (interleaved rounds at the power cap, re-settled since the cap rule:
    study.timing.shared_cap)."""
    settings = protocol(group)
    return [r for r in group if not r.superseded and not differences(r.timer, settings)]


def other_settings(run: Run, settings: tuple) -> str:
    """How a run's timer settings differ from the judged ones, e.g. ``timeout_s 15.0 against the judged 45.0``."""
    mine, theirs = dict(run.timer), dict(settings)
    return ", ".join(f"{k} {mine[k]} against the judged {theirs[k]}" for k in differences(run.timer, settings))


def verdict(group: list[Run]) -> tuple[bool, list[str]]:
    """Whether a pair's runs meet the goal, and each part it misses, in words, over :func:`judged`'s runs (superseded
    runs and runs under other timer settings set aside)."""
    group = judged(group)
    if not group:
        return False, ["no run timed as the study now times this pair, under the newest run's settings"]
    per_gpu: dict[str, int] = {}
    for run in group:
        per_gpu[run.gpu] = per_gpu.get(run.gpu, 0) + 1
    enough = sorted(g for g, n in per_gpu.items() if n >= RUNS_PER_GPU)
    misses = []
    if len(enough) < GPUS:
        misses.append(f"{len(enough)} of {GPUS} GPUs with {RUNS_PER_GPU} runs or more "
                      f"({', '.join(f'{gpu_label(g)}: {n}' for g, n in sorted(per_gpu.items()))})")
    if spread(group) > SPREAD:
        misses.append(f"runs {100 * spread(group):.2f} % apart (goal ≤ {100 * SPREAD:g} %)")
    wide = [r for r in group if r.width > WIDTH]
    if wide:
        misses.append(f"{len(wide)} of {len(group)} intervals wider than {100 * WIDTH:g} % "
                      f"(widest {100 * max(r.width for r in wide):.1f} %)")
    return not misses, misses


def mixed(group: list[Run]) -> str:
    """Where some runs' headlines are re-settled and others interleaved, say so: at the power cap the two
    estimate different things (the ratio at each kernel's own clock, at one shared clock; docs/method.md §8);
    and name the runs set aside as superseded."""
    interleaved = sum(1 for r in group if not r.settled)
    note = ""
    if interleaved and interleaved != len(group):
        note = (f" {interleaved} of {len(group)} headlines interleaved, the rest re-settled: at the cap these "
                "estimate different ratios (docs/method.md §8).")
    superseded = [r for r in group if r.superseded]
    if superseded:
        names = ", ".join(f"{gpu_label(r.gpu)}/{results.stem(r.path)}" for r in superseded)
        note += f" Not judged: {names}, interleaved at the power cap, which the study now times re-settled."
    settings, kept = protocol(group), judged(group)
    other: dict[str, list[str]] = {}
    for r in group:
        if not r.superseded and r not in kept:  # timed under other settings
            other.setdefault(other_settings(r, settings), []).append(f"{gpu_label(r.gpu)}/{results.stem(r.path)}")
    for differs, names in other.items():
        note += (f" Not judged: {', '.join(names)}, timed under other settings ({differs}): a reproduction is "
                 "judged within one protocol, the newest judged run's.")
    return note


def link(path: Path, relative_to: Path | None) -> str:
    """A run's page (its results file where it has none), relative to the folder the Markdown is written to."""
    page = results.beside(path, ".md")
    target = page if page.is_file() else path
    return os.path.relpath(target.resolve(), relative_to) if relative_to else str(target)


def markdown(found: list[Run], relative_to: Path | None = None) -> str:
    """A section per pair: its runs (GPU, commit, ratio [95 %], width, rounds, stop, how the headline's rounds
    were timed, the interleaved ratio where it was re-settled), the spread, and the goal's verdict."""
    lines = ["# Repeated paired runs", "",
             "Generated by `python -m study repeats` from saved `compare --paired` records: each row one run "
             "(a process of its own), the ratio the median of its ABBA units with its 95 % bootstrap interval "
             "(docs/method.md §8). *re-settled*: each side settled before each batch, the interleaved ratio "
             "beside it; ⚑: interleaved at the power cap, a headline the study now re-settles, shown and not "
             "judged; *other settings*: timed under timer settings other than those of the newest unflagged "
             "run, shown and not judged (one protocol a verdict). Goal: at least "
             f"{RUNS_PER_GPU} runs on each of {GPUS} GPUs, all within {100 * SPREAD:g} % of each other, every "
             f"interval at most {100 * WIDTH:g} % of its ratio wide.", ""]
    if not found:
        return "\n".join(lines + ["No paired record in these files.", ""])
    for pair, group in by_pair(found).items():
        impl, reference, shape, precision, mode = pair
        met, misses = verdict(group)
        kept = judged(group)
        rows = [[gpu_label(r.gpu), f"`{r.commit}`",
                 f"[{results.stem(r.path)}]({link(r.path, relative_to)})",
                 f"{r.ratio:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}]", f"{100 * r.width:.1f} %", r.rounds, r.stop,
                 ("re-settled" if r.settled else "interleaved at the cap ⚑" if r.superseded else "interleaved")
                 + ("" if r.superseded or r in kept else " · other settings"),
                 "—" if r.interleaved is None else f"{r.interleaved:.3f}",
                 f"{r.mhz:,.0f} / {r.ref_mhz:,.0f}" if r.mhz and r.ref_mhz else "—"] for r in group]
        shown = kept or group
        lines += [f"## `{impl}` ÷ `{reference}`, {shape} {precision} {mode}", "",
                  tabulate(rows, headers=["GPU", "commit", "run", "× ref [95 %]", "width", "rounds", "stop",
                                          "rounds timed", "interleaved", "MHz (impl / ref)"], tablefmt="github"), "",
                  f"{len(shown)} runs on {len({r.gpu for r in shown})} GPU(s){commits(shown)}, ratios "
                  f"{min(r.ratio for r in shown):.3f}–{max(r.ratio for r in shown):.3f} "
                  f"({100 * spread(shown):.2f} % apart). Goal: "
                  + ("met." if met else "missed — " + "; ".join(misses) + ".") + clock_note(shown) + mixed(group), ""]
    return "\n".join(lines)

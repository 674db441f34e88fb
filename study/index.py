"""``python -m study index FOLDER``: the generated README of a reports folder — every results file
under it with its page, the command that made it, its commit and date, and its headline — so that
what is committed can be found, and how old each figure is can be seen. A function of the files
alone (no GPU); ncu profiles (``profiles/``, their own table) are left out."""

from __future__ import annotations

import shlex
from pathlib import Path

from tabulate import tabulate

from study import align, results, sanitize, sweep
from study.paths import ROOT, display
from study.problem import one_line
from study.report.labels import ratio_cell, shape_label

SKIP = ("profiles",)  # ncu's CSVs and their JSON: `python -m study profile --table` renders them


def _page(path: Path, folder: Path) -> str:
    md = results.beside(path, ".md")
    return f"[{md.relative_to(folder).as_posix()}]({md.relative_to(folder).as_posix()})" if md.is_file() \
        else f"`{path.relative_to(folder).as_posix()}` (no page)"


def _size(m: dict) -> float:
    work = m.get("work") or {}
    return work.get("flops" if work.get("bound", "compute") == "compute" else "bytes") or 0


def compare_headline(doc: dict) -> str:
    """Per op, at its largest shape in the file (the most work), the best handwritten rung against the
    reference (× ref, the case; a paired record first), and the count of measurements."""
    parts = []
    ms = doc["measurements"]
    for op in dict.fromkeys(m["op"] for m in ms):
        ranked = [m for m in ms if m["op"] == op and m["status"] == "ok" and m.get("rung") and m.get("x_ref")]
        if not ranked:
            parts.append(f"{op}: no ranked rung")
            continue
        largest = max(map(_size, ranked))
        best = max((m for m in ranked if _size(m) == largest), key=lambda m: (bool(m.get("paired")), m["x_ref"]))
        parts.append(f"{op}: v{best['rung_index']} {best['backend']} {ratio_cell(best)} ref"
                     f" ({shape_label(best['shape'])} {best.get('precision') or best['dtype']})")
    bad = sum(m["status"] in ("wrong", "crashed", "impossible") for m in ms)
    return "; ".join(parts) + f" — {len(ms)} measurements" + (f", {bad} wrong/crashed/impossible" if bad else "")


def suite_headline(doc: dict) -> str:
    """A suite run's verdict (study.report.suite): per op, precision and series, the geometric mean of
    the best rung per shape ÷ the reference, the worst shape's ratio and the shapes skipped."""
    from study.report import suite

    ms = doc["measurements"]
    parts, without = [], []
    for op in dict.fromkeys(m["op"] for m in ms):
        found = suite.summary(ms, op)
        if not found:  # a verdict needs two shapes (study.report.tables.best_by_shape)
            without.append(op)
        for (precision, series), entry in sorted(found.items()):
            (mean, (_, worst)), skipped = suite.verdict(entry), len(entry["skipped"])
            parts.append(f"{op} {precision} {series} {mean:.2f}× (worst {worst:.2f}×"
                         + (f", {skipped} skipped)" if skipped else ")"))
    if not parts:
        return compare_headline(doc)
    none = f"; no verdict for {', '.join(without)} (one shape)" if without else ""
    return "geometric mean × ref over the suite: " + "; ".join(parts) + none + f" — {len(ms)} measurements"


def _headline(raw: dict, path: Path) -> tuple[str, str, str, str, str]:
    """(kind, command, commit, date, headline) of one results file; kind "" for a file that is none."""
    env = raw.get("environment") or {}
    command = env.get("command") or " ".join(env.get("argv") or [])
    commit = ((env.get("git") or {}).get("commit") or "")[:7]
    date = (env.get("utc") or raw.get("utc") or "")[:10]
    if "measurements" in raw:
        doc = results.load(path)
        headline = suite_headline(doc) if env.get("suites") else compare_headline(doc)  # as the page decides
        kind = "sweep" if sweep.is_sweep(raw) else "align" if align.is_align(raw) else "compare"
    elif "pairs" in raw or "kernels" in raw:
        kind = "validate"
        pairs = [p for p in raw.get("pairs") or [] if p.get("status") == "ok"]
        headline = (f"{len(raw.get('kernels') or [])} kernels; {len(pairs)} pairs, "
                    f"{sum(bool(p.get('within_target')) for p in pairs)} within the target of do_bench")
    elif sanitize.is_sanitize(raw):
        kind = "sanitize"
        rows = raw["results"]
        count = {s: sum(r["status"] == s for r in rows) for s in ("clean", "hazards", "failed", "skipped")}
        headline = (", ".join(f"{n} {s}" for s, n in count.items() if n) + f" of {len(rows)} runs"
                    + ("" if raw.get("complete", True) else "; the run stopped before its end"))
    elif "copy" in raw and "launch_overhead" in raw:
        kind = "ceilings"
        headline = (f"copy {raw['copy']['gbps']:,.0f} GB/s, FFMA {raw['ffma']['gflops']:,.0f} GFLOPS, launch "
                    f"{1e3 * raw['launch_overhead']['median_ms']:.1f} µs")
        command = command or "python -m study ceilings"
    else:
        return "", "", "", "", ""
    return kind, f"`{command}`" if command else "—", commit or "—", date or "—", headline


def rows(folder: Path) -> list[list[str]]:
    out = []
    for path, raw in results.documents(folder, SKIP):
        try:
            found = _headline(raw, path)
        except (KeyError, TypeError, ValueError) as exc:
            found = ("unreadable", "—", "—", "—", one_line(exc))
        if found[0]:
            out.append([_page(path, folder), *found])
    return out


FOLDER_OUT = ("ceilings", "validate", "sanitize")  # --out names their folder; the file names are fixed
PLACE_OPTIONS = ("--out", "--name", "--shard")      # where a run writes (and a shard's part): set anew


def in_place(kind: str, command: str, path: Path) -> str:
    """``command`` as it would write ``path`` itself: ``--out`` the file's folder (relative to the
    repository), ``--name`` its stem where the command takes one; no ``--shard``."""
    words, skip = [], False
    for word in shlex.split(command):
        if skip:
            skip = False
        elif word in PLACE_OPTIONS:
            skip = True
        elif not word.startswith(tuple(f"{o}=" for o in PLACE_OPTIONS)):
            words.append(word)
    words += ["--out", display(path.parent)] + ([] if kind in FOLDER_OUT else ["--name", results.stem(path)])
    return shlex.join(words)


def gpu_minutes(kind: str, raw: dict, command: str) -> float | None:
    """The GPU minutes a results file took: its measurements' wall times; a sanitize run's tool runs over
    its --jobs (default 4) at once; None where the file does not say (ceilings, validate)."""
    if raw.get("measurements"):
        return sum(m.get("wall_s") or 0 for m in raw["measurements"]) / 60
    if kind == "sanitize":
        words = shlex.split(command.strip("`"))
        jobs = int(words[words.index("--jobs") + 1]) if "--jobs" in words[:-1] else 4
        return sum(r.get("seconds") or 0 for r in raw.get("results") or []) / max(jobs, 1) / 60
    return None


def commands(folder: Path, minutes: float | None = None) -> str:
    """A shell script that measures every results file under ``folder`` again where it lives: each
    file's recorded command rewritten by :func:`in_place`, the GPU minutes it took (:func:`gpu_minutes`),
    the oldest first. A merged file (shards, several runs) is merged again from its parts where they are
    committed too (after them), and otherwise named in a comment: the commands of parts that were not
    kept are not known; so is a gzipped file (a finished record). ``minutes``: only the oldest files whose
    GPU minutes add up to at most that (the first always), a merge only with all its parts: what a GPU
    session of that length can measure again.
    Measured again, they are the newest, and the next call names the next ones; files that cannot run as
    recorded or whose cost is unknown are left to a run of their own and counted in the last line."""
    entries = []
    for path, raw in results.documents(folder, SKIP):
        try:
            kind, command, commit, date, _ = _headline(raw, path)
        except (KeyError, TypeError, ValueError):
            continue
        if not kind or command == "—":
            continue
        env = raw.get("environment") or {}
        cost = gpu_minutes(kind, raw, command)
        note = f"# {display(path)}: {kind}, commit {commit}, {date}" + (f", {cost:.1f} GPU min" if cost else "")
        parts = env.get("merged_from") or []
        if path.name.endswith(".gz"):  # the command would write NAME.json beside it, two files for one page
            line = f"# a finished record, gzipped: gunzip {display(path)} to measure it again where it lives"
        elif parts and all((ROOT / p).is_file() for p in parts):
            line = shlex.join(["python", "-m", "study", "merge", *parts, "--out", display(path)])
            cost = 0.0  # its parts are the runs
        elif parts:
            line = (f"# merged from {', '.join(parts)}, not all committed: run each part, then python -m study "
                    f"merge PARTS --out {display(path)}")
        else:
            line = in_place(kind, command.strip("`"), path)
        entries.append((date, bool(parts), display(path), parts, note, line, cost))
    ordered = sorted(entries, key=lambda e: e[:2])  # a merge after the runs of its day
    where = display(Path(folder))
    header = (f"The oldest results files under {where} that {minutes:g} GPU minutes measure again"
              if minutes is not None else f"Every results file under {where} measured again")
    lines = ["#!/usr/bin/env bash", f"# {header} where each lives (python -m study index --commands), the oldest "
             "first.", "set -e"]
    spent, taken, later, apart = 0.0, set(), 0, []
    for _, _, shown, parts, note, line, cost in ordered:
        if minutes is not None:
            if line.startswith("#") or cost is None:
                apart.append(shown)
                continue
            if (spent + cost > minutes and taken) or not all(p in taken for p in parts):
                later += 1
                continue
            spent += cost
            taken.add(shown)
        lines += [note, line]
    if minutes is not None:
        lines.append(f"# {spent:.1f} GPU minutes; {later} files left for later calls"
                     + (f"; run apart (cost unknown or not runnable as recorded): {', '.join(apart)}" if apart else ""))
    return "\n".join(lines) + "\n"


def write(folder: Path) -> Path:
    folder = Path(folder)
    table = rows(folder)
    shown = display(folder)  # relative to the repository: the same page whichever way the folder was named
    text = "\n".join([
        f"# Reports in `{shown}`", "",
        f"Generated by `python -m study index {shown}` from the results files below; do not edit "
        "by hand. Each page is regenerated from its JSON without a GPU (`python -m study report FILE.json`); "
        "its command (run from the repository root at its commit) measures it again. The headline of a "
        "comparison is each op's best handwritten rung against the reference (a paired ratio, with its 95 % "
        "interval, where there is one) at the op's largest shape in the file; of a suite run, its verdict (the "
        "geometric mean over the suite of each series' best rung per shape ÷ the reference, and the worst "
        "shape's); ncu profiles are in `profiles/` "
        "(`python -m study profile --table`).", "",
        tabulate(table, ["page", "kind", "command", "commit", "date", "headline"], tablefmt="github",
                 disable_numparse=True) if table else "No results files.", ""])
    out = folder / "README.md"
    out.write_text(text)
    return out

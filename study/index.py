"""``python -m study index FOLDER``: the generated README of a reports folder — every results file
under it with its page, the command that made it, its commit and date, and its headline — so that
what is committed can be found, and how old each figure is can be seen. A function of the files
alone (no GPU); ncu profiles (``profiles/``, their own table) are left out."""

from __future__ import annotations

import json
from pathlib import Path

from tabulate import tabulate

from study import results
from study.paths import display
from study.report.labels import shape_label

SKIP = ("profiles",)  # ncu's CSVs and their JSON: `python -m study profile --table` renders them


def _page(path: Path, folder: Path) -> str:
    md = path.with_suffix(".md")
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
        ci = best.get("x_ref_ci")
        parts.append(f"{op}: {best['rung'].split('_')[0]} {best['backend']} {best['x_ref']:.2f}× ref"
                     + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
                     + f" ({shape_label(best['shape'])} {best.get('precision') or best['dtype']})")
    bad = sum(m["status"] in ("wrong", "crashed", "impossible") for m in ms)
    return "; ".join(parts) + f" — {len(ms)} measurements" + (f", {bad} wrong/crashed/impossible" if bad else "")


def _headline(raw: dict, path: Path) -> tuple[str, str, str, str, str]:
    """(kind, command, commit, date, headline) of one results file; kind "" for a file that is none."""
    env = raw.get("environment") or {}
    command = env.get("command") or " ".join(env.get("argv") or [])
    commit = ((env.get("git") or {}).get("commit") or "")[:7]
    date = (env.get("utc") or raw.get("utc") or "")[:10]
    if "measurements" in raw:
        headline = compare_headline(results.load(path))
        kind = "sweep" if "sweep" in command.split()[:4] else "align" if " align " in f" {command} " else "compare"
    elif "pairs" in raw or "kernels" in raw:
        kind = "validate"
        pairs = [p for p in raw.get("pairs") or [] if p.get("status") == "ok"]
        headline = (f"{len(raw.get('kernels') or [])} kernels; {len(pairs)} pairs, "
                    f"{sum(bool(p.get('within_target')) for p in pairs)} within the target of do_bench")
    elif "results" in raw and "tool_version" in raw:
        kind = "sanitize"
        rows = raw["results"]
        count = {s: sum(r["status"] == s for r in rows) for s in ("clean", "hazards", "failed", "skipped")}
        headline = ", ".join(f"{n} {s}" for s, n in count.items() if n) + f" of {len(rows)} runs"
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
    for path in sorted(Path(folder).rglob("*.json")):
        if any(part in SKIP for part in path.relative_to(folder).parts):
            continue
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # not a results file (a cache, a half-written file): the index lists results only
        if not isinstance(raw, dict):
            continue
        try:
            found = _headline(raw, path)
        except (KeyError, TypeError, ValueError) as exc:
            found = ("unreadable", "—", "—", "—", f"{type(exc).__name__}: {exc}")
        if found[0]:
            out.append([_page(path, folder), *found])
    return out


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
        "interval, where there is one) at the op's largest shape in the file; ncu profiles are in `profiles/` "
        "(`python -m study profile --table`).", "",
        tabulate(table, ["page", "kind", "command", "commit", "date", "headline"], tablefmt="github",
                 disable_numparse=True) if table else "No results files.", ""])
    out = folder / "README.md"
    out.write_text(text)
    return out

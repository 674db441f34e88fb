"""``python -m study sanitize``: every CUDA rung under NVIDIA's compute-sanitizer.

A kernel that passes the output gate may still race, read out of bounds without faulting, or
read shared memory nothing wrote: the output happened to come out right this time. Each
selected implementation is launched once, at each of its op's small awkward shapes
(``Problem.sanitize_shapes``: a tile tail in every dimension), in a process of its own under
each tool (memcheck, racecheck, synccheck, initcheck). The verdict per implementation × tool ×
shape is ``clean``, ``hazards`` (the count and the first reports, with file and line: kernels are
compiled with ``-lineinfo``), ``skipped`` (the reason the case cannot run) or ``failed`` (the
tool or the launch failed; its output's end is kept).

memcheck runs with ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` and ``--padding 4096``: PyTorch's caching
allocator carves tensors out of larger blocks, so a read just past a tensor's end lands in
memory the process owns and memcheck says nothing (docs/toolchain.md §8).

Results go to ``reports/<gpu>/sanitize.{json,md}``; each row keeps the hash of the kernel source
it checked (common.cuh inlined), so that compare's report can mark a rung whose current source
was found unclean, and ignore results of an older source.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from study import catalog, keys, ncu, results
from study.backends import backend
from study.paths import ROOT
from study.backends.cuda import source_hash_of
from study.timing import TimerSettings

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
TIMEOUT_S = 600
_SUMMARY = re.compile(r"=+\s+(?:ERROR|RACECHECK|SYNCCHECK|INITCHECK)?\s*SUMMARY:\s+(\d+)\s+(?:errors?|hazards?)",
                      re.I)
_REPORT = re.compile(r"=+\s+(Invalid|Race reported|Error:|Barrier error|Uninitialized|Out-of-range|Warning:|"
                     r"Program hit)", re.I)
_WHERE = re.compile(r"\bat\b.*(\.cu|\.cuh|\.py):\d+|\+0x[0-9a-f]+ in ", re.I)


class SanitizerMissing(RuntimeError):
    """compute-sanitizer is neither on PATH nor under the CUDA toolkit."""


def find_tool() -> str:
    found = ncu.find_tool("compute-sanitizer")
    if found is None:
        raise SanitizerMissing(f"compute-sanitizer is not {ncu.WHERE}; install the CUDA toolkit's sanitizer or put "
                               "it on PATH")
    return found


def kernel_symbol(impl) -> str:
    """What the tools match kernel names against (a substring): for a CUDA rung ``<op>_vN_``, the
    prefix every kernel of its file carries (its own, and a second pass such as sgemm v10's
    reduction; another op's kernel a rung launches first, gemm_bias_relu v0's GEMM, is that op's to
    sanitize); for a twin, the Triton kernel's function name."""
    if impl.backend == "cuda":
        return impl.target.symbol[:len(f"{impl.op}_v{impl.rung_index}_")]
    return getattr(impl.target.kernel, "fn", impl.target.kernel).__name__


def _reports(output: str) -> list[tuple[str, list[str]]]:
    """Each report the tool printed: (its first line, the lines that locate it), a location read
    from the report's own lines only (at most four, up to the next report)."""
    lines = output.splitlines()
    starts = [n for n, line in enumerate(lines) if _REPORT.search(line)]
    out = []
    for i, n in enumerate(starts):
        end = min(n + 5, starts[i + 1] if i + 1 < len(starts) else len(lines))
        where = list(dict.fromkeys(l.strip("= ").strip() for l in lines[n + 1:end] if _WHERE.search(l)))
        out.append((lines[n].strip("= ").strip(), where))
    return out


def _first(reports) -> list[str]:
    return list(dict.fromkeys(" | ".join([head, *where[:2]]) for head, where in reports))[:3]


def parse(output: str) -> tuple[int | None, list[str]]:
    """(hazards or errors the tool counted, or None when it printed no summary; the first reports,
    each with the lines that locate it)."""
    counts = [int(m.group(1)) for m in _SUMMARY.finditer(output)]
    return (sum(counts) if counts else None), _first(_reports(output))


def parse_in_kernel(output: str, symbol: str) -> tuple[int | None, list[str], int]:
    """Like :func:`parse`, counting only the reports located in kernel ``symbol``: (their count, or
    None when the tool printed no summary or fewer reports than it counted, so that the rung's may
    be among those left out; the first of them; how many reports were elsewhere)."""
    count, _ = parse(output)
    if count is None:
        return None, [], 0
    reports = _reports(output)
    here = re.compile(rf"\bat {re.escape(symbol)}\w*\+0x")
    inside = [r for r in reports if any(here.search(line) for line in r[1])]
    outside = len(reports) - len(inside)
    if not inside and len(reports) < count:
        return None, [], outside  # some reports were not printed: the rung's may be among them
    return len(inside), _first(inside), outside


def command(tool_path: str, tool: str, impl, shape_text: str, precision: str) -> list[str]:
    """Only the rung's own kernel is checked: torch's fills and the float64 reference run in the
    same process and are not the rung's to answer for. memcheck, racecheck and synccheck are told
    so (``--kernel-name``); initcheck is not, because a kernel filter also stops it from tracking
    what the other kernels write, so that inputs torch had filled looked uninitialized to it (every
    read of them was reported on the H200): it watches every kernel and :func:`run_one` keeps the
    reports located in the rung's. CUDA API errors that libraries make on purpose are not
    reported."""
    extra = ["--padding", "4096", "--report-api-errors", "no"] if tool == "memcheck" else []
    only = [] if tool == "initcheck" else ["--kernel-name", f"kns={kernel_symbol(impl)}"]
    return [tool_path, "--tool", tool, *extra, *only, *ncu.child_command("sanitize", impl.name, shape_text, precision)]


def run_one(tool_path: str, tool: str, impl, shape_text: str, precision: str) -> dict:
    """One implementation, one tool, one shape, in its own process."""
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    started = time.perf_counter()
    try:
        proc = subprocess.run(command(tool_path, tool, impl, shape_text, precision), cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        output, code = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output, code = f"{exc.stdout or ''}{exc.stderr or ''}\n(timed out after {TIMEOUT_S} s)", None
    outside = 0
    if tool == "initcheck":
        count, first, outside = parse_in_kernel(output, kernel_symbol(impl))
    else:
        count, first = parse(output)
    if count is None or code is None or (code != 0 and count == 0):
        status = "failed"
    else:
        status = "clean" if count == 0 else "hazards"
    return {"implementation": impl.name, "source": impl.source, "source_hash": source_hash_of(impl), "tool": tool,
            "shape": shape_text, "precision": precision, "status": status, "count": count, "first": first,
            "exit_code": code, "outside_kernel": outside, "seconds": time.perf_counter() - started,
            "output_tail": output[-2000:] if status == "failed" else ""}


def plan(impls, tools, precision_names=None, shapes=None) -> list[tuple]:
    """(implementation, tool, shape text, precision name, skip reason or None) for every run:
    each implementation at its op's sanitize shapes (or ``shapes[op]``), at the first of the op's
    precisions that the implementation implements (or those named that the op accepts): a rung
    written for FP16 alone is checked at FP16, not skipped at the op's FP32."""
    rows = []
    for impl in impls:
        problem = catalog.ladder(impl.op).problem
        accepted = [p.name for p in problem.precisions]
        own = [n for n in accepted if n in impl.precisions][:1] or accepted[:1]
        for name in [n for n in (precision_names or own) if n in accepted]:
            precision = problem.precision(name)
            chosen = (shapes or {}).get(impl.op) or problem.sanitize_shapes
            if not chosen:
                rows.extend((impl, tool, "—", name, f"op {impl.op!r} declares no sanitize shapes; give --shape")
                            for tool in tools)
            for shape in chosen:
                reason = problem.check(shape, precision) or backend(impl.backend).check(impl, problem, shape, precision)
                rows.extend((impl, tool, keys.shape_text(shape), name, reason) for tool in tools)
    return rows


def markdown(doc: dict) -> str:
    from tabulate import tabulate

    rows = []
    for r in doc["results"]:
        what = {"clean": "clean", "skipped": f"skipped: {r.get('reason', '')}",
                "failed": "**failed** (see the JSON's output_tail)",
                "hazards": f"**{r['count']} hazards**: " + "; ".join(r["first"][:2])}[r["status"]]
        rows.append([f"`{r['implementation']}`", r["tool"], r["shape"], r["precision"], what, f"{r['seconds']:.1f}",
                     f"`{(r.get('commit') or '?')[:7]}`"])
    bad = [r for r in doc["results"] if r["status"] in ("hazards", "failed")]
    env = doc["environment"]
    commits = {r.get("commit") for r in doc["results"]}
    return "\n".join([
        f"# `study sanitize` on {env['gpu']['name']}", "",
        f"Last run `{env['command']}` at commit `{env['git'].get('commit')}`"
        + (f" (the rows ran at {len(commits)} commits, each named in its row)" if len(commits) > 1 else "")
        + f"; compute-sanitizer "
        f"{doc.get('tool_version', '')}. Each rung once per tool, in its declared config (autotune points are "
        "not sanitized), at its op's awkward shapes, only its own kernels checked (those of its file; initcheck watches every kernel, "
        "since a kernel filter also hides what torch's kernels wrote, and counts the reports in the rung's); "
        "memcheck with PyTorch's caching allocator off and 4 KiB padding. Rows of earlier runs are kept unless "
        "re-run.", "",
        (f"**{len(bad)} runs not clean.**" if bad else "Every run is clean (or skipped with its reason)."), "",
        *([] if doc.get("complete", True) else [stopped(doc), ""]),
        tabulate(rows, ["implementation", "tool", "shape", "precision", "result", "s", "commit"], tablefmt="github",
                 disable_numparse=True), "",
        f"Runs took {sum(r['seconds'] for r in doc['results']):.0f} s together"
        + (f"; this run {doc['wall_s']:.0f} s of wall time, {doc.get('jobs', 1)} at once."
           if doc.get("wall_s") else "."),
        ""])


def finished(doc: dict) -> int:
    """The runs of the run that last wrote ``doc`` (each row names its run; older files' rows, by their commit)."""
    env = doc["environment"]
    if any("run" in r for r in doc["results"]):
        return sum(r.get("run") == env.get("utc") for r in doc["results"])
    return sum(r.get("commit") == env["git"].get("commit") for r in doc["results"])


def stopped(doc: dict) -> str:
    """What a page says of a run that stopped before its end (killed, timed out): how many of its runs finished."""
    commit = doc["environment"]["git"].get("commit")
    planned = f" of the {doc['planned']} it planned" if "planned" in doc else ""
    return (f"**This run stopped before its end:** {finished(doc)} runs{planned} finished at `{(commit or '?')[:7]}`; "
            f"the same command with `--resume` runs the others.")


def is_sanitize(doc) -> bool:
    """Whether a JSON document is a ``sanitize.json`` (``study report`` renders it as the run does)."""
    return (isinstance(doc, dict) and "tool_version" in doc and isinstance(doc.get("results"), list)
            and isinstance(doc.get("environment"), dict))


def row_key(row: dict) -> tuple:
    return (row["implementation"], row["tool"], row["shape"], row["precision"])


def merged(old: dict | None, new_rows: list[dict]) -> list[dict]:
    """The rows of an earlier sanitize.json that this run did not redo, then this run's. A kept row names
    the commit it ran at (rows written before rows carried it take their file's), since the file's own
    commit is this run's."""
    redone = {row_key(r) for r in new_rows}
    old_commit = ((old or {}).get("environment") or {}).get("git", {}).get("commit")
    return [{"commit": old_commit, **r} for r in (old or {}).get("results", []) if row_key(r) not in redone] + new_rows


def unclean_sources(doc: dict) -> dict[tuple[str, str], str]:
    """(source, source hash) -> what was found, for every kernel source with hazards."""
    found: dict = {}
    for r in doc.get("results", []):
        if r["status"] == "hazards":
            found.setdefault((r["source"], r["source_hash"]), f"{r['tool']}: {r['count']} hazards")
    return found


def marks_beside(folder: Path) -> dict[tuple[str, str], str]:
    """The unclean sources ``sanitize.json`` in ``folder`` names (none when there is no such file): what a
    report beside it marks (study.report.page.with_sanitizer_marks)."""
    path = Path(folder) / "sanitize.json"
    return unclean_sources(results.read_json(path)) if path.is_file() else {}


# What a resumed run shares with the one it resumes: what reproduces a number (results.ENV_KEYS; the timer aside,
# sanitize times nothing) and the tool's version.
RESUME_KEYS = tuple(label for label, _ in results.ENV_KEYS if label != "timer settings")


def resumable(old: dict | None, doc: dict) -> tuple[set, str]:
    """(the row keys of ``old``, the earlier sanitize.json in the folder, that a resumed run keeps rather than runs
    again, why none where it keeps none): the rows of the run that last wrote it (each row names its run), where that
    run shares :data:`RESUME_KEYS` and the tool's version with this one on a clean tree, and did not fail (a failure
    may be a call's time limit). Rows of earlier runs in the file, which may have run on another tree, are not kept."""
    if not old:
        return set(), "there is no earlier sanitize.json in the folder"
    env, before = doc["environment"], old.get("environment") or {}
    differ = [label for label, *_ in results.differences(before, env, RESUME_KEYS)]
    differ += ["compute-sanitizer"] if old.get("tool_version") != doc["tool_version"] else []
    if differ or env["git"].get("dirty") is not False:
        return set(), f"it differs in {', '.join(differ)}" if differ else "the tree is not known to be clean"
    return {row_key(r) for r in old["results"] if r.get("run") == before.get("utc") and r["status"] != "failed"}, ""


def plan_key(row_plan: tuple) -> tuple:
    """A planned run's :func:`row_key`."""
    impl, tool, shape_text, precision, _ = row_plan
    return impl.name, tool, shape_text, precision


def run(impls, tools, tool_path: str, out_dir: Path, device, argv: list[str], precisions=None, shapes=None,
        jobs: int = 4, say=print, resume: bool = False) -> tuple[dict, int]:
    """Every (implementation, tool, shape, precision) of the plan in a process of its own, ``jobs`` at
    once; ``sanitize.json`` rewritten after every run (an interruption loses nothing), rows of an earlier
    run that this one does not redo kept; then ``sanitize.md``. ``resume``: the rows :func:`resumable` keeps are
    not run again. Returns (the document, exit code: 1 when a run is not clean)."""
    rows = plan(impls, tools, precisions, shapes)
    planned = {plan_key(r) for r in rows}  # the exit code's rows, whether run now or kept by --resume
    out_dir = Path(out_dir)
    old_path = out_dir / "sanitize.json"
    old = results.read_json(old_path) if old_path.is_file() else None
    doc = {"schema": 1, "environment": results.environment(device, TimerSettings(), argv),
           "tool_version": ncu.version(tool_path), "results": [], "complete": False, "planned": len(rows)}
    run_id = doc["environment"]["utc"]  # each row names the run that made it (--resume keeps that run's only)
    if resume:
        kept, why = resumable(old, doc)
        todo = [r for r in rows if plan_key(r) not in kept]  # in plan order
        say(f"--resume: {len(rows) - len(todo)} of the {len(rows)} runs kept from {old_path}"
            + (f" (none: {why})" if why else ""))
        rows = todo
        old = old and {**old, "results": [{**r, "run": run_id} if row_key(r) in kept else r for r in old["results"]]}
    doc["results"] = merged(old, [])
    say(f"{len(rows)} sanitizer runs ({len(impls)} implementations) with {tool_path}, {jobs} at once")
    started = time.perf_counter()

    commit = doc["environment"]["git"].get("commit")

    def one(row_plan):
        impl, tool, shape_text, precision, reason = row_plan
        if reason:
            return {"implementation": impl.name, "source": impl.source, "source_hash": source_hash_of(impl),
                    "tool": tool, "shape": shape_text, "precision": precision, "status": "skipped", "reason": reason,
                    "count": None, "first": [], "seconds": 0.0, "commit": commit, "run": run_id}
        return {**run_one(tool_path, tool, impl, shape_text, precision), "commit": commit, "run": run_id}

    done: dict = {}
    fresh: list = []
    with ThreadPoolExecutor(jobs) as pool:  # each run is a process of its own; threads only wait
        futures = {pool.submit(one, r): i for i, r in enumerate(rows)}
        for n, future in enumerate(as_completed(futures), 1):  # saved as each finishes, kept in plan order
            row = future.result()
            done[futures[future]] = row
            fresh = [done[i] for i in sorted(done)]
            doc["results"] = merged(old, fresh)  # earlier rows this run does not redo are kept
            results.write(out_dir / "sanitize.json", doc)
            say(f"[{n}/{len(rows)}] {row['implementation']} {row['tool']} {row['shape']} {row['precision']}: "
                f"{row['status']}" + (f" ({row['count']})" if row["status"] == "hazards" else ""))
    doc["complete"], doc["wall_s"], doc["jobs"] = True, time.perf_counter() - started, jobs
    results.write(out_dir / "sanitize.json", doc)
    (out_dir / "sanitize.md").write_text(markdown(doc))
    say(f"wrote {out_dir / 'sanitize.json'} and sanitize.md")
    return doc, (1 if any(r["status"] in ("hazards", "failed") for r in doc["results"] if row_key(r) in planned)
                 else 0)

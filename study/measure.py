"""Measuring a plan into its results file (the compare flow's middle, study/compare.py): every case
in order or, over several GPUs, in groups handed to whichever GPU is free; nothing lost.

Nothing is lost: every measurement is appended to the results file's journal as it completes,
and the file itself is rewritten (atomically, ``complete: false``) every ``REWRITE_S`` seconds,
on every exit and when the last case is done (the journal then goes). Re-running the same
command on the same commit with the same timer settings finds that file (and its journal) and
measures only the cases it lacks; any other difference starts a fresh run (``--fresh`` forces one).
"""

from __future__ import annotations

import collections
import signal
import threading
import time
from pathlib import Path
from typing import Callable

from study import results
from study.plan import Case, group_of, ordered
from study.problem import one_line
from study.session import crashed_record


def resumable(path: Path, plan_keys: list[str], env: dict) -> tuple[dict | None, str]:
    """The unfinished results document at ``path`` that this run may continue, and why (not). Its
    plan is this run's, or this run's followed by the extension the run added once its own plan was
    measured (compare's paired cases, ``extended_at``): an extension cut short goes on too."""
    if not path.is_file():
        return None, "no earlier results"
    try:
        old = results.load(path)
    except (OSError, ValueError) as exc:
        return None, f"earlier results unreadable ({exc})"
    if old.get("complete", True):
        return None, "the earlier run was complete"
    planned = old.get("plan") or []
    if planned[:old.get("extended_at", len(planned))] != plan_keys:
        return None, "the earlier run planned other cases"
    changed = results.differences(old["environment"], env, ("GPU", "commit", "dirty tree", "timer settings"))
    if changed:
        return None, "the earlier run differs in " + ", ".join(label for label, _, _ in changed)
    journaled = results.Journal(path).records(old["environment"].get("utc")) or []
    wanted = set(planned)
    have = {m.get("case") for m in old["measurements"]}
    old["measurements"] += [m for m in journaled if m.get("case") in wanted - have]
    old["measurements"] = [m for m in old["measurements"] if m.get("case") in wanted]
    return old, f"resuming: {len(old['measurements'])} of {len(planned)} cases were already measured"


REWRITE_S = 30.0  # the whole document is rewritten at most this often while cases complete


class LaneDead(Exception):
    """A GPU lane whose worker cannot start: its unfinished group goes back to the other lanes."""


def run_compare(cases: list[Case], env: dict, json_path: Path, measure: Callable[[Case], dict] | list,
                progress: Callable[[int, int, Case, dict], None] | None = None,
                fresh: bool = False, say: Callable[[str], None] = print,
                extension: Callable[[list[dict]], list[Case]] | None = None) -> dict:
    """Measure what the results file lacks, journaling every case and rewriting the file every
    ``REWRITE_S`` and on exit; returns the document.

    ``measure`` measures one case; a list of them (one per GPU) measures (op, shape, precision)
    groups in parallel, a group to whichever GPU is free next, so that a rung and its reference
    baseline always share a GPU. The file is written after every case either way.

    ``extension`` (compare's pairing of the best rungs, study.plan.best_pairs): once every planned
    case is measured, the cases it returns for their records are added to the same plan and file
    (``extended_at`` marks where) and measured too; a run cut short there resumes there."""
    cases = ordered(cases)
    plan_keys = [c.key for c in cases]
    own = len(plan_keys)
    old, why = (None, "--fresh") if fresh else resumable(json_path, plan_keys, env)
    say(why)
    if old is not None:
        env = {**old["environment"], "resumed_utc": [*old["environment"].get("resumed_utc", []), env["utc"]]}
        plan_keys = list(old["plan"])  # with an extension cut short, its cases too: none is lost meanwhile
    done = {m["case"]: m for m in (old["measurements"] if old else []) if "case" in m}
    lock = threading.RLock()  # the exit path saves under it, possibly from a thread already inside
    stopping = threading.Event()
    journal = results.Journal(json_path)
    last_write = [0.0]

    def save(complete: bool) -> dict:
        doc = results.document(env, [done[k] for k in plan_keys if k in done])
        doc["plan"], doc["complete"] = plan_keys, complete and len(doc["measurements"]) == len(plan_keys)
        if len(plan_keys) > own:
            doc["extended_at"] = own
        results.write(json_path, doc)
        last_write[0] = time.monotonic()
        if doc["complete"]:
            journal.remove()
        return doc

    def one(measure_one, case: Case) -> None:
        started = time.perf_counter()
        try:
            record = measure_one(case)
        except LaneDead:
            raise
        except Exception as exc:  # the pool itself failed: record it, keep going
            record = crashed_record(case, one_line(exc))
        record["case"] = case.key
        record["wall_s"] = time.perf_counter() - started
        with lock:
            if stopping.is_set():  # interrupted meanwhile: what a killed worker returns is not a result
                return
            done[case.key] = record
            journal.append(record)
            if time.monotonic() - last_write[0] >= REWRITE_S:
                save(False)
            if progress:
                progress(len(done), len(cases), case, record)

    save(False)
    journal.start(env["utc"])
    try:
        _measure_all(cases, done, measure, one, lock, stopping)
        more = ordered(extension([done[k] for k in plan_keys[:own] if k in done])) if extension else []
        plan_keys[own:] = [c.key for c in more]  # the same cases as a cut extension's: they follow from the records
        if more:
            cases.extend(more)  # the progress line counts them from now on
            save(False)
            _measure_all(more, done, measure, one, lock, stopping)
        return save(True)
    except BaseException:
        stopping.set()
        with lock:
            save(False)  # what completed is in the document too, not only in the journal
        raise


def _measure_all(cases, done, measure, one, lock, stopping) -> None:
    todo = [c for c in cases if c.key not in done]
    lanes = measure if isinstance(measure, list) else [measure]
    if len(lanes) == 1:
        for case in todo:
            one(lanes[0], case)
        return
    groups: dict = {}
    for case in todo:
        groups.setdefault(group_of(case), []).append(case)
    queue = collections.deque(groups.values())
    failures: list = []
    dead: list = []

    def lane(measure_one) -> None:
        try:
            while not stopping.is_set():
                with lock:
                    if not queue:
                        return
                    group = queue.popleft()
                for n, case in enumerate(group):
                    if stopping.is_set():
                        return
                    try:
                        one(measure_one, case)
                    except LaneDead as exc:
                        with lock:
                            queue.appendleft(group[n:])
                            dead.append(str(exc))
                        return
        except BaseException as exc:  # saving failed, say: stop every lane, raise it in the main thread
            failures.append(exc)
            stopping.set()

    threads = [threading.Thread(target=lane, args=(m,), daemon=True) for m in lanes]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(0.2)  # short waits: the main thread must stay free to take Ctrl-C
    if failures:
        raise failures[0]
    for group in queue:  # every lane's worker failed to start: say so for each case left
        for case in group:
            one(lambda c: crashed_record(c, f"no GPU lane could measure it: {dead[-1]}"), case)


INTERRUPTED = 130  # the shell's code for a process ended by SIGINT


def interrupted_line(json_path: Path, total: int) -> str:
    """The one line an interrupted run prints: what was saved of how many planned, and how to resume.
    The saved plan is the count once paired cases extended it (``total`` counts the cases it began with)."""
    try:
        doc = results.load(json_path)
        saved, total = len(doc["measurements"]), len(doc.get("plan") or ()) or total
    except (OSError, ValueError):
        saved = 0
    return (f"interrupted: {saved} of {total} measurements are saved in {json_path}; "
            f"run the same command again to resume")


def run_interruptibly(work: Callable[[], dict], json_path: Path, total: int, cleanup: Callable[[], None],
                      say: Callable[[str], None]) -> tuple[dict | None, int]:
    """Run ``work`` (the compare flow) so that Ctrl-C or SIGTERM stops it with one line and exit
    code 130, never a traceback. The first signal raises KeyboardInterrupt; from then on both
    signals are ignored while ``cleanup`` (stopping the worker) runs. Returns (the results
    document or None, exit code)."""
    watched = (signal.SIGINT, signal.SIGTERM)

    def ignore_from_now_on():
        for s in watched:
            signal.signal(s, signal.SIG_IGN)

    def stop(signum, frame):
        ignore_from_now_on()
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {s: signal.signal(s, stop) for s in watched}
    try:
        return work(), 0
    except KeyboardInterrupt:
        ignore_from_now_on()
        say(interrupted_line(json_path, total))
        return None, INTERRUPTED
    finally:
        ignore_from_now_on()
        try:
            cleanup()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

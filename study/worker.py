"""Measurements in a worker process, so that one faulting kernel costs one result, not the run.

A kernel that faults (an illegal address, a trap) leaves the CUDA context of its process
unusable: every later call fails. The worker measures cases one at a time; after each it
checks that its context still works. If not, it reports the case as ``crashed`` with the
CUDA error and exits, and the pool starts a fresh worker for the next case. A worker that
dies outright (a segfault) or stops answering is recorded the same way.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os

from study.runner import Case, TimerSettings

# No answer for this long means the worker hangs (a kernel in an endless loop): it is killed.
# Generous, because autotuning and compilation happen inside a measurement.
HANG_SECONDS = 900.0
START_SECONDS = 300.0


def _context_ok() -> bool:
    import torch

    try:
        torch.cuda.synchronize()
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:
        return False


def _serve(conn, settings: dict, seed: int, launch_overhead_ms) -> None:
    """The worker's loop: receive a case, send back its record (and whether the context died).
    Ctrl-C reaches every process of the terminal's group; the worker ignores it and is stopped by
    its parent, so an interrupt prints the parent's one line and no worker traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from study import hardware, registry
    from study.runner import Session

    device = hardware.current_device()
    session = Session(TimerSettings(**settings), device, seed=seed, clocks=hardware.Clocks(),
                      launch_overhead_ms=launch_overhead_ms)
    conn.send(("ready", os.getpid()))
    while True:
        message = conn.recv()
        if message is None:
            return
        name, shape, precision, autotune, mode = message
        impl = registry.implementation(name)
        problem = registry.ladder(impl.op).problem
        record = session.measure(Case(impl, shape, problem.precision(precision), autotune, mode))
        lost = not _context_ok()
        if lost:
            if record["status"] == "ok":  # an asynchronous fault surfaced only now: never rank it
                record["status"] = "crashed"
                record["reason"] = "the CUDA context failed right after this measurement"
            record["reason"] += " [the worker's CUDA context was lost; the run continued in a fresh worker]"
        conn.send(("record", record, lost))
        if lost:
            return


class WorkerPool:
    """One live worker at a time, restarted whenever the last one died or lost its context."""

    def __init__(self, settings: TimerSettings, seed: int, launch_overhead_ms=None,
                 hang_seconds: float = HANG_SECONDS):
        self._args = (dataclasses.asdict(settings), seed, launch_overhead_ms)
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None
        self.hang_seconds = hang_seconds
        self.started = 0

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, args=(child, *self._args), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        self.started += 1
        if not parent.poll(START_SECONDS):
            self.close(kill=True)
            raise RuntimeError(f"the measurement worker did not start within {START_SECONDS:.0f} s")
        kind, _ = parent.recv()
        assert kind == "ready"

    def measure(self, case: Case, crashed) -> dict:
        """The case's record; ``crashed(reason)`` builds the record when the worker fails."""
        if self._proc is None or not self._proc.is_alive():
            try:
                self._start()
            except (EOFError, OSError, RuntimeError) as exc:
                self.close(kill=True)
                return crashed(f"the measurement worker could not start: {exc}")
        self._conn.send((case.impl.name, dict(case.shape), case.precision.name, case.autotune, case.mode))
        if not self._conn.poll(self.hang_seconds):
            self.close(kill=True)
            return crashed(f"no result within {self.hang_seconds:.0f} s: the worker was killed (hang)")
        try:
            _, record, lost = self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(5)
            code = self._proc.exitcode
            self.close(kill=True)
            return crashed(f"the measurement worker died (exit code {code}) while measuring this case")
        if lost:
            self.close()
        return record

    def close(self, kill: bool = False) -> None:
        if self._proc is None:
            return
        if not kill and self._proc.is_alive():
            try:
                self._conn.send(None)
            except (OSError, BrokenPipeError):
                pass
            self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._conn.close()
        self._proc, self._conn = None, None

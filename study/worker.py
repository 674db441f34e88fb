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
import sys

from study.plan import Case, case_of
from study.timing import TimerSettings

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


def visible_device(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES value that shows a worker only GPU ``index`` of those this
    process sees (an index into the parent's own CUDA_VISIBLE_DEVICES list, if it has one)."""
    parent = os.environ.get("CUDA_VISIBLE_DEVICES")
    if parent:
        devices = [d.strip() for d in parent.split(",") if d.strip()]
        return devices[index]
    return str(index)


def _serve(conn, settings: dict, seed: int, launch_overhead_ms, gpu_index=None) -> None:
    """The worker's loop: receive a case's key, send back its record (and whether the context died).
    Ctrl-C reaches every process of the terminal's group; the worker ignores it and is stopped by
    its parent, so an interrupt prints the parent's one line and no worker traceback.

    With ``gpu_index`` the worker sees only that GPU (CUDA_VISIBLE_DEVICES, set before torch
    loads) and measures its own launch overhead and looks up its own ceilings: each GPU of a
    ``--gpus`` run is judged by its own."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if gpu_index is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible_device(gpu_index)
    import torch

    from study import ceilings, hardware
    from study.session import Session

    device = hardware.current_device()
    clocks = hardware.Clocks()
    settings = TimerSettings(**settings)
    uuid = hardware.nvml_facts()["uuid"] or f"GPU-{torch.cuda.get_device_properties(0).uuid}"  # NVML or torch
    facts = {"index": torch.cuda.current_device() if gpu_index is None else gpu_index, "name": device.name,
             "uuid": uuid}
    if gpu_index is not None:
        cold = dataclasses.replace(settings, mode="cold")
        measured, source = ceilings.load_or_measure(device, cold, clocks, uuid=uuid)
        if launch_overhead_ms is None:  # a restarted worker reuses its first start's figure
            launch_overhead_ms = ceilings.launch_overhead_ms(device, settings, clocks)
        facts.update(launch_overhead_ms=launch_overhead_ms, ceilings={**ceilings.summary(measured), "source": source})
    session = Session(settings, device, seed=seed, clocks=clocks, launch_overhead_ms=launch_overhead_ms,
                      gpu={"index": facts["index"], "uuid": facts["uuid"]})
    conn.send(("ready", facts))
    while True:
        message = conn.recv()
        if message is None:
            _leave()
        record = session.measure(case_of(message))
        lost = not _context_ok()
        if lost:
            if record["status"] == "ok":  # an asynchronous fault surfaced only now: never rank it
                record["status"] = "crashed"
                record["reason"] = "the CUDA context failed right after this measurement"
            record["reason"] += " [the worker's CUDA context was lost; the run continued in a fresh worker]"
        conn.send(("record", record, lost))
        if lost:
            _leave()


def _leave() -> None:
    """End the worker without the interpreter's teardown: every record has been sent, and CuPy's module
    finalizers, run after a lost context (or after the driver has begun to unload), print a
    ``moduleUnload`` traceback for nothing. The driver frees the context with the process."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class WorkerPool:
    """One live worker at a time, restarted whenever the last one died or lost its context."""

    def __init__(self, settings: TimerSettings, seed: int, launch_overhead_ms=None,
                 hang_seconds: float = HANG_SECONDS, gpu_index: int | None = None):
        self._args = (dataclasses.asdict(settings), seed, launch_overhead_ms, gpu_index)
        self.gpu_index = gpu_index
        # A pinned worker measures its GPU's ceilings (up to six timed measurements) before it is ready.
        self.start_seconds = START_SECONDS + (10 * settings.timeout_s if gpu_index is not None else 0)
        self.facts: dict = {}
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None
        self.hang_seconds = hang_seconds
        self.started = 0
        self.dead = False    # could not start: a lane of a --gpus run gives its work to the others
        self.closed = False  # the run is over: never start again

    def _start(self, wait: bool = True) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, args=(child, *self._args), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        self.started += 1
        if wait:
            self.wait_ready()

    def wait_ready(self) -> dict:
        """Wait for the started worker's hello: the facts of its GPU. A restarted worker reuses
        the launch overhead its first start measured."""
        if not self._conn.poll(self.start_seconds):
            self.close(kill=True)
            raise RuntimeError(f"the measurement worker did not start within {self.start_seconds:.0f} s")
        try:
            kind, facts = self._conn.recv()
        except (EOFError, OSError) as exc:
            self._proc.join(5)
            code = self._proc.exitcode
            self.close(kill=True)
            raise RuntimeError(f"the measurement worker died while starting (exit code {code})") from exc
        if kind != "ready":
            self.close(kill=True)
            raise RuntimeError(f"the measurement worker said {kind!r} instead of ready")
        self.facts = facts
        if self.facts.get("launch_overhead_ms") is not None:
            settings, seed, _, gpu = self._args
            self._args = (settings, seed, self.facts["launch_overhead_ms"], gpu)
        return self.facts

    def measure(self, case: Case, crashed) -> dict:
        """The case's record; ``crashed(reason)`` builds the record when the worker fails."""
        if self.closed:
            return crashed("the run was stopped before this case")
        if self._proc is None or not self._proc.is_alive():
            try:
                self._start()
            except (EOFError, OSError, RuntimeError) as exc:
                self.close(kill=True)
                self.dead = True
                return crashed(f"the measurement worker could not start: {exc}")
        self._conn.send(case.key)
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

    def close(self, kill: bool = False, final: bool = False) -> None:
        self.closed = self.closed or final
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


def start_all(pools: list[WorkerPool], say) -> list[WorkerPool]:
    """Start several workers at once (one per GPU) and wait for each GPU's facts (its ceilings
    and launch overhead). A GPU whose worker cannot start is left out, with a message; the
    pools that started are returned."""
    for pool in pools:
        pool._start(wait=False)
    ready = []
    for pool in pools:
        try:
            pool.wait_ready()
            ready.append(pool)
        except RuntimeError as exc:
            pool.dead = True
            say(f"GPU {pool.gpu_index} left out: {exc}")
    return ready


def gpu_spec(text: str) -> str | list[int]:
    """``--gpus`` read without a GPU: "all", or the indices named (each once)."""
    if text.strip() == "all":
        return "all"
    try:
        gpus = [int(g) for g in text.split(",") if g.strip()]
    except ValueError:
        raise ValueError(f"--gpus {text}: a comma-separated list of GPU indices, or all") from None
    if not gpus or min(gpus) < 0 or len(set(gpus)) != len(gpus):
        raise ValueError(f"--gpus {text}: GPU indices from 0, each named once, or all")
    return gpus


def parse_gpus(text: str, count: int) -> list[int]:
    """``--gpus all`` or ``--gpus 0,1``: the GPU indices (as this process sees them) to use."""
    gpus = gpu_spec(text)
    if count < 1:
        raise ValueError("--gpus: no CUDA GPU is visible")
    if gpus == "all":
        return list(range(count))
    bad = [g for g in gpus if not 0 <= g < count]
    if bad:  # gpu_spec refused an empty list and repeats
        raise ValueError(f"--gpus {text}: this machine has {count} GPU{'s' if count > 1 else ''} "
                         f"(indices 0–{count - 1}), each named once")
    return gpus

"""Problems, ladders and implementations, as data.

A *problem* (an op such as ``sgemm``) owns its inputs, reference, FLOPs, bytes and
tolerance. Its *ladder* is an ordered list of *rungs*; each rung registers, in one
line, a CUDA kernel file and its Triton twin. Every op also has one cuBLAS
*baseline*. From these the registry derives the flat list of *implementations*
that the runner, the CLI and the report iterate; nothing else keeps a list of
variants.

Pairing is checked, not hoped for: :func:`check_integrity` names every CUDA rung
without a Triton twin, every op without a baseline, every ``.cu`` file that no
rung registers, and every duplicated name.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parent.parent
CUDA_DIR = ROOT / "cuda_kernels"
NOT_OPS = ("microbench",)  # cuda_kernels/microbench: ceiling kernels, not rungs (study/ceilings.py)
BACKENDS = ("cuda", "triton", "cublas")


@dataclasses.dataclass(frozen=True)
class TritonTwin:
    """The Triton side of a rung: a kernel, the one config that mirrors the CUDA
    rung (autotune off) and the space that ``triton.autotune`` searches (on)."""

    kernel: Any
    fixed: Mapping[str, Any]
    space: tuple[Mapping[str, Any], ...]
    source: str


@dataclasses.dataclass(frozen=True)
class Rung:
    """One step of a ladder: the idea it adds and the bottleneck it removes."""

    key: str
    idea: str
    removes: str
    cuda: str | None = None
    triton: TritonTwin | None = None
    layout: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Baseline:
    """The library reference every rung of an op is compared with."""

    title: str
    run: Any  # callable(problem, tensors, shape, dtype) -> output tensor
    source: str


@dataclasses.dataclass(frozen=True)
class Implementation:
    """(op, rung, backend) and its parameters: what one measurement measures."""

    op: str
    rung: str | None
    rung_index: int | None
    backend: str
    title: str
    params: Mapping[str, Any]
    space: tuple[Mapping[str, Any], ...]
    source: str
    layout: Mapping[str, str]
    target: Any = dataclasses.field(compare=False, repr=False)

    @property
    def name(self) -> str:
        return f"{self.op}/{self.rung or 'baseline'}/{self.backend}"

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "op": self.op,
            "rung": self.rung,
            "rung_index": self.rung_index,
            "backend": self.backend,
            "title": self.title,
            "params": dict(self.params),
            "autotune_space": len(self.space),
            "layout": dict(self.layout),
            "source": self.source,
        }


@dataclasses.dataclass(frozen=True)
class Ladder:
    problem: Any
    rungs: tuple[Rung, ...]
    baseline: Baseline

    @property
    def op(self) -> str:
        return self.problem.name


_LADDERS: dict[str, Ladder] = {}


def register(problem, rungs, baseline: Baseline) -> Ladder:
    """Register an op's ladder; a second op of the same name is an error, not an overwrite."""
    if problem.name in _LADDERS:
        raise ValueError(f"op {problem.name!r} is registered twice")
    ladder = Ladder(problem, tuple(rungs), baseline)
    _LADDERS[problem.name] = ladder
    return ladder


def ladders() -> dict[str, Ladder]:
    _load()
    return dict(_LADDERS)


def ladder(op: str) -> Ladder:
    _load()
    if op not in _LADDERS:
        raise KeyError(f"unknown op {op!r}; known: {', '.join(sorted(_LADDERS)) or 'none'}")
    return _LADDERS[op]


def _load() -> None:
    """Import the ops package (each op module makes one ``register(...)`` call), then the
    modules named in ``STUDY_PLUGINS`` (comma-separated): ops that live outside this package,
    such as the deliberately faulting op of the tests. Worker processes inherit the variable."""
    import importlib
    import os

    from study import ops  # noqa: F401

    for name in filter(None, (n.strip() for n in os.environ.get("STUDY_PLUGINS", "").split(","))):
        importlib.import_module(name)


def implementations_of(lad: Ladder) -> list[Implementation]:
    """The ladder's implementations in report order: rung by rung, CUDA then Triton, then the baseline."""
    from study.backends.cuda import read_kernel_header  # the .cu header holds its own params

    impls = []
    for index, rung in enumerate(lad.rungs):
        if rung.cuda is not None:
            path = CUDA_DIR / lad.op / rung.cuda
            header = read_kernel_header(path)
            impls.append(Implementation(
                op=lad.op, rung=rung.key, rung_index=index, backend="cuda",
                title=f"{rung.key} (CUDA)", params=MappingProxyType(header.params),
                space=header.space, source=str(path.relative_to(ROOT)),
                layout=MappingProxyType(dict(rung.layout)), target=header))
        if rung.triton is not None:
            twin = rung.triton
            impls.append(Implementation(
                op=lad.op, rung=rung.key, rung_index=index, backend="triton",
                title=f"{rung.key} (Triton)", params=MappingProxyType(dict(twin.fixed)),
                space=tuple(twin.space), source=twin.source,
                layout=MappingProxyType(dict(rung.layout)), target=twin))
    if lad.baseline is not None:
        impls.append(Implementation(
            op=lad.op, rung=None, rung_index=None, backend="cublas", title=lad.baseline.title,
            params=MappingProxyType({}), space=(), source=lad.baseline.source,
            layout=MappingProxyType({}), target=lad.baseline))
    return impls


def implementations() -> list[Implementation]:
    return [impl for lad in ladders().values() for impl in implementations_of(lad)]


def implementation(name: str) -> Implementation:
    """The implementation called ``name`` (op/rung/backend), or a KeyError that lists the known ones."""
    found = {impl.name: impl for impl in implementations()}
    if name not in found:
        raise KeyError(f"unknown implementation {name}; known: {', '.join(found)}")
    return found[name]


def check_integrity(all_ladders: Mapping[str, Ladder] | None = None,
                    cuda_dir: Path = CUDA_DIR) -> list[str]:
    """Every way the registry can be inconsistent, as sentences; empty when sound."""
    all_ladders = ladders() if all_ladders is None else all_ladders
    problems: list[str] = []
    registered: set[Path] = set()
    for op, lad in all_ladders.items():
        if lad.baseline is None:
            problems.append(f"op {op!r} has no cuBLAS baseline")
        keys = [r.key for r in lad.rungs]
        for key in {k for k in keys if keys.count(k) > 1}:
            problems.append(f"op {op!r}: rung {key!r} appears more than once")
        for rung in lad.rungs:
            if rung.cuda is not None and rung.triton is None:
                problems.append(f"op {op!r}: CUDA rung {rung.key!r} has no Triton twin")
            if rung.triton is not None and rung.cuda is None:
                problems.append(f"op {op!r}: Triton rung {rung.key!r} has no CUDA kernel")
            if rung.cuda is not None:
                path = (cuda_dir / op / rung.cuda).resolve()
                if not path.is_file():
                    problems.append(f"op {op!r}: rung {rung.key!r} names {rung.cuda}, which does not exist")
                registered.add(path)
                if path.is_file():
                    symbol = f"{op}_{rung.key}"
                    if f" {symbol}(" not in path.read_text().replace("\n", " "):
                        problems.append(f"{rung.cuda} must define the kernel {symbol}(...) "
                                        f"(the symbol is op_rungkey, and the file NN_name matches vN_name)")
                    elif not rung.key.startswith(f"v{int(path.name.split('_', 1)[0])}_"):
                        problems.append(f"rung {rung.key!r} is registered with {rung.cuda}, whose number differs")
    for path in sorted(cuda_dir.glob("*/*.cu")):
        if path.parent.name not in NOT_OPS and path.resolve() not in registered:
            problems.append(f"{path.relative_to(cuda_dir.parent)} is not registered by any rung")
    try:
        names = [impl.name for lad in all_ladders.values() for impl in implementations_of(lad)]
    except (OSError, ValueError) as exc:
        problems.append(f"implementations could not be listed: {exc}")
        names = []
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"two implementations share the name {name!r}")
    return problems

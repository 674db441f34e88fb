"""Problems, ladders and implementations, as data.

A *problem* (an op such as ``sgemm``) owns its inputs, reference, work and tolerances.
Its *ladder* is an ordered list of *rungs*; each rung registers, in one line, a CUDA
kernel file with the launcher that launches it and its Triton twin with the twin's launch.
Every op also has one or more library *baselines*, each naming the library it calls; exactly
one is the *reference* that ``x ref`` divides by. From these the registry derives the flat list
of *implementations* that the session, the CLI and the report iterate; nothing else keeps a
list of variants.

This module holds what :func:`register` was given and nothing more; it imports no op. Loading
the ops (``study.ops``, then ``STUDY_PLUGINS``) is :mod:`study.catalog`'s one job.

Pairing is checked, not hoped for: :func:`check_integrity` names every CUDA rung without
a Triton twin or a launcher, every op without exactly one reference baseline, every ``.cu``
file that no rung registers, and every duplicated name.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from study import kernel_header
from study.paths import CUDA_DIR, display
from study.problem import CudaLauncher

NOT_OPS = ("microbench",)  # cuda_kernels/microbench: ceiling kernels, not rungs (study/ceilings.py)
BACKENDS = ("cuda", "triton", "cublas", "cublaslt", "torch", "inductor")  # torch: an ATen kernel that is no BLAS call; inductor: torch.compile


@dataclasses.dataclass(frozen=True)
class TritonTwin:
    """The Triton side of a rung: a kernel, the one config that mirrors the CUDA rung
    (autotune off), the space ``triton.autotune`` searches (on), the precisions it
    implements (None: all of the op's), and how it is launched: ``launch(kernel, tensors, out,
    shape, config, precision)`` returns the closure that launches ``kernel`` (the twin's, or
    ``triton.autotune``'s wrapper of it), ``check(shape, precision)`` why it cannot run a case (None:
    it can), beyond the op's own check. ``pre_hook``: what ``triton.autotune`` runs on the
    arguments before each config (setting a tensor descriptor's block shape to the config's tile).
    ``restore``: arguments the kernel updates in place (an in-place pass over C), which
    ``triton.autotune`` restores after each timed run so that tuning leaves them as it found them.
    ``post_hook``: what ``triton.autotune`` runs after each timed call of a config, inside the timing
    (a second kernel the rung's closure launches after this one: sgemm v10's reduction)."""

    kernel: Any
    fixed: Mapping[str, Any]
    space: tuple[Mapping[str, Any], ...]
    source: str
    launch: Callable
    check: Callable | None = None
    precisions: tuple[str, ...] | None = None
    pre_hook: Any = None
    restore: tuple[str, ...] = ()
    post_hook: Any = None


def twin(kernel, fixed: Mapping[str, Any], space, *, launch: Callable, check: Callable | None = None,
         precisions=None, pre_hook=None, restore=(), post_hook=None) -> TritonTwin:
    """A TritonTwin whose source names the kernel's file and function."""
    fn = getattr(kernel, "fn", kernel)
    return TritonTwin(kernel=kernel, fixed=MappingProxyType(dict(fixed)), space=tuple(space),
                      source=f"{display(inspect.getsourcefile(fn))}::{fn.__name__}", launch=launch, check=check,
                      precisions=None if precisions is None else tuple(precisions), pre_hook=pre_hook,
                      restore=tuple(restore), post_hook=post_hook)


@dataclasses.dataclass(frozen=True)
class Rung:
    """One step of a ladder: the idea it adds and the bottleneck it removes. ``cuda`` is a
    file name in the op's kernel folder and ``launch`` how it is launched; ``multiples``: axes whose
    multiples let TMA read the rung's rows in place (16 bytes' worth of elements; at other lengths its
    launch stages the rows, study/ops/tma_staging.py, and records it); the edge-shape sweep rounds its
    shapes up to them so that it measures the direct path, keeping every tail."""

    key: str
    idea: str
    removes: str
    cuda: str | None = None
    launch: CudaLauncher | None = None
    triton: TritonTwin | None = None
    multiples: Mapping[str, int] = dataclasses.field(default_factory=dict)
    layout: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # The math mode the rung computes in, by precision name, where it is not the precision's own:
    # {"fp32": "3xtf32"} for tensor-core emulation measured under the FP32 problem and gate.
    math: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Baseline:
    """A library implementation of the op. ``run(tensors, out, precision)`` returns the
    launch closure, or (closure, what the library chose) (with ``autotune=`` when ``tunable``);
    ``backend`` is the name its records carry (``cublas`` for torch calls that reach cuBLAS,
    ``cublaslt`` for nvmath-python); exactly one baseline per op is the ``reference``."""

    key: str
    title: str
    library: str
    backend: str
    run: Callable
    source: str
    reference: bool = False
    precisions: tuple[str, ...] | None = None
    tunable: bool = False        # run(..., autotune=bool): the library's own search is the "on" case
    requires: str | None = None  # an optional Python module it needs; without it the rows are skipped


@dataclasses.dataclass(frozen=True)
class Implementation:
    """(op, rung or baseline, backend) and its parameters: what one measurement measures."""

    op: str
    rung: str | None
    rung_index: int | None
    baseline: str | None
    backend: str
    title: str
    params: Mapping[str, Any]
    space: tuple[Mapping[str, Any], ...]
    source: str
    layout: Mapping[str, str]
    precisions: tuple[str, ...]
    reference: bool
    library: str | None
    target: Any = dataclasses.field(compare=False, repr=False)
    math: Mapping[str, str] = dataclasses.field(default_factory=dict)  # the rung's (Rung.math)
    launcher: CudaLauncher | None = dataclasses.field(default=None, compare=False, repr=False)  # a CUDA rung's
    multiples: Mapping[str, int] = dataclasses.field(default_factory=dict)  # the rung's (Rung.multiples)

    def math_of(self, precision) -> str:
        """The math mode a measurement of this implementation at ``precision`` records."""
        return self.math.get(precision.name, precision.math)

    @property
    def name(self) -> str:
        return f"{self.op}/{self.rung or self.baseline}/{self.backend}"

    def to_json(self) -> dict:
        return {
            "name": self.name, "op": self.op, "rung": self.rung, "rung_index": self.rung_index,
            "baseline": self.baseline, "backend": self.backend, "title": self.title,
            "library": self.library, "reference": self.reference, "params": dict(self.params),
            "autotune_space": len(self.space), "layout": dict(self.layout),
            "precisions": list(self.precisions), "source": self.source,
            **({"math": dict(self.math)} if self.math else {}),
        }


@dataclasses.dataclass(frozen=True)
class Ladder:
    problem: Any
    rungs: tuple[Rung, ...]
    baselines: tuple[Baseline, ...]
    kernel_dir: Path
    headline: tuple[str, ...] = ()  # the rungs `compare` runs without a selection (default: the last)

    @property
    def headline_rungs(self) -> tuple[str, ...]:
        return self.headline or ((self.rungs[-1].key,) if self.rungs else ())

    @property
    def op(self) -> str:
        return self.problem.name

    @property
    def reference(self) -> Baseline | None:
        refs = [b for b in self.baselines if b.reference]
        return refs[0] if len(refs) == 1 else None


_LADDERS: dict[str, Ladder] = {}


def register(problem, rungs, baselines, kernel_dir: Path | None = None, headline=()) -> Ladder:
    """Register an op's ladder; a second op of the same name is an error, not an overwrite.
    ``kernel_dir`` holds its ``.cu`` files (default ``cuda_kernels/<op>``); ``headline``: the rung keys
    ``python -m study compare`` runs when nothing is selected (the seed ladder's end point and each
    backend's best; default: the last rung)."""
    if problem.name in _LADDERS:
        raise ValueError(f"op {problem.name!r} is registered twice")
    ladder_ = Ladder(problem, tuple(rungs), tuple(baselines),
                     Path(kernel_dir) if kernel_dir is not None else CUDA_DIR / problem.name, tuple(headline))
    _LADDERS[problem.name] = ladder_
    return ladder_


def registered() -> dict[str, Ladder]:
    """The ladders registered so far, in registration order (study.catalog loads them all first)."""
    return dict(_LADDERS)


def lookup(name: str) -> Implementation:
    """The implementation called ``name`` among the ladders registered so far, without loading
    any: for an op whose rung runs another op's kernel at launch time (gemm_bias_relu v0), when every
    op is loaded. A KeyError names the known ones."""
    found = {impl.name: impl for lad in _LADDERS.values() for impl in implementations_of(lad)}
    if name not in found:
        raise KeyError(f"unknown implementation {name}; known: {', '.join(found)}")
    return found[name]


_IMPLEMENTATIONS: dict[int, tuple] = {}  # id(ladder) -> (ladder, its implementations): headers read once


class RegistryError(ValueError):
    """A registered rung whose kernel file is missing or whose header cannot be read."""


def implementations_of(lad: Ladder) -> list[Implementation]:
    """The ladder's implementations in report order: rung by rung, CUDA then Triton, then
    the baselines (the reference first). Built once per ladder: a worker looks a case's
    implementation up for every case, and each build reads every kernel header of the op."""
    held = _IMPLEMENTATIONS.get(id(lad))
    if held is None or held[0] is not lad:
        held = _IMPLEMENTATIONS[id(lad)] = (lad, _implementations(lad))
    return list(held[1])


def _implementations(lad: Ladder) -> list[Implementation]:
    op_precisions = tuple(p.name for p in lad.problem.precisions)
    impls = []
    for index, rung in enumerate(lad.rungs):
        layout, math = MappingProxyType(dict(rung.layout)), MappingProxyType(dict(rung.math))
        multiples = MappingProxyType(dict(rung.multiples))
        if rung.cuda is not None:
            try:
                header = kernel_header.read(lad.kernel_dir / rung.cuda, lad.op)
            except FileNotFoundError:
                raise RegistryError(f"{lad.op} rung {rung.key}: its kernel {lad.kernel_dir / rung.cuda} does not "
                                    "exist (the register() call's kernel_dir and the rung's cuda= name it)") from None
            except (OSError, ValueError) as exc:
                raise RegistryError(f"{lad.op} rung {rung.key}: {exc}") from None
            impls.append(Implementation(
                op=lad.op, rung=rung.key, rung_index=index, baseline=None, backend="cuda",
                title=f"{rung.key} (CUDA)", params=MappingProxyType(header.params), space=header.space,
                source=display(header.path), layout=layout, precisions=header.precisions,
                reference=False, library=None, target=header, math=math, launcher=rung.launch,
                multiples=multiples))
        if rung.triton is not None:
            tw = rung.triton
            impls.append(Implementation(
                op=lad.op, rung=rung.key, rung_index=index, baseline=None, backend="triton",
                title=f"{rung.key} (Triton)", params=MappingProxyType(dict(tw.fixed)), space=tuple(tw.space),
                source=tw.source, layout=layout, precisions=tw.precisions or op_precisions,
                reference=False, library=None, target=tw, math=math, multiples=multiples))
    for base in sorted(lad.baselines, key=lambda b: not b.reference):
        impls.append(Implementation(
            op=lad.op, rung=None, rung_index=None, baseline=base.key, backend=base.backend,
            title=base.title, params=MappingProxyType({}), space=(), source=base.source,
            layout=MappingProxyType({}), precisions=base.precisions or op_precisions,
            reference=base.reference, library=base.library, target=base))
    return impls


def _check_rung_file(op: str, lad: Ladder, rung: Rung, path: Path) -> list[str]:
    if not path.is_file():
        return [f"op {op!r}: rung {rung.key!r} names {rung.cuda}, which does not exist in {display(lad.kernel_dir)}"]
    try:
        header = kernel_header.read(path, op)
    except ValueError as exc:
        return [f"op {op!r}: {exc}"]
    problems = []
    if f" {header.symbol}(" not in path.read_text().replace("\n", " "):
        problems.append(f"{rung.cuda} must define the kernel {header.symbol}(...) "
                        f"(the symbol is <op>_vN_name for the file NN_name.cu)")
    if not rung.key.startswith(header.symbol.removeprefix(f"{op}_").split("_", 1)[0] + "_"):
        problems.append(f"rung {rung.key!r} is registered with {rung.cuda}, whose number differs")
    unknown = set(header.precisions) - {p.name for p in lad.problem.precisions}
    if unknown:
        problems.append(f"{rung.cuda} declares precisions {', '.join(sorted(unknown))} that op {op!r} does not accept")
    return problems


def check_integrity(all_ladders: Mapping[str, Ladder], cuda_dir: Path = CUDA_DIR) -> list[str]:
    """Every way the registry can be inconsistent, as sentences; empty when sound."""
    problems: list[str] = []
    registered: set[Path] = set()
    folders = {cuda_dir.resolve() / d.name for d in cuda_dir.iterdir() if d.is_dir() and d.name not in NOT_OPS} \
        if cuda_dir.is_dir() else set()
    for op, lad in all_ladders.items():
        refs = [b.key for b in lad.baselines if b.reference]
        if not lad.baselines:
            problems.append(f"op {op!r} has no baseline")
        elif len(refs) != 1:
            problems.append(f"op {op!r} must have exactly one reference baseline; has {len(refs)}"
                            + (f" ({', '.join(refs)})" if refs else ""))
        keys = [r.key for r in lad.rungs] + [b.key for b in lad.baselines]
        for key in sorted({k for k in keys if keys.count(k) > 1}):
            problems.append(f"op {op!r}: {key!r} appears more than once")
        for key in sorted(set(lad.headline) - {r.key for r in lad.rungs}):
            problems.append(f"op {op!r}: its headline names {key!r}, which is not one of its rungs")
        accepted = {p.name for p in lad.problem.precisions}
        declared = type(lad.problem).__dict__.get("headline_precisions", ())  # inherited ones are filtered
        for name in [n for n in declared if n not in accepted]:
            problems.append(f"op {op!r}: its headline precision {name!r} is not one it accepts")
        for rung in lad.rungs:
            if rung.cuda is not None and rung.triton is None:
                problems.append(f"op {op!r}: CUDA rung {rung.key!r} has no Triton twin")
            if rung.triton is not None and rung.cuda is None:
                problems.append(f"op {op!r}: Triton rung {rung.key!r} has no CUDA kernel")
            if rung.cuda is not None and rung.launch is None:
                problems.append(f"op {op!r}: CUDA rung {rung.key!r} declares no launcher (Rung(..., launch=...))")
            if rung.cuda is not None:
                path = (lad.kernel_dir / rung.cuda).resolve()
                registered.add(path)
                problems += _check_rung_file(op, lad, rung, path)
        if lad.kernel_dir.resolve().parent != cuda_dir.resolve():
            folders.add(lad.kernel_dir.resolve())
    for folder in sorted(folders):
        for path in sorted(folder.glob("*.cu")):
            if path.resolve() not in registered:
                problems.append(f"{display(path)} is not registered by any rung")
    try:
        names = [impl.name for lad in all_ladders.values() for impl in implementations_of(lad)]
    except (OSError, ValueError) as exc:
        problems.append(f"implementations could not be listed: {exc}")
        names = []
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"two implementations share the name {name!r}")
    return problems

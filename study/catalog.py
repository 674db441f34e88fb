"""The ops a run knows, loaded in one place: the ``study.ops`` package (one module per op, each
making one :func:`study.registry.register` call), then the modules named in ``STUDY_PLUGINS``
(comma-separated), which may live anywhere on ``sys.path`` and keep their ``.cu`` files in their
own folder (``register(..., kernel_dir=...)``).

This module sits above ``study/ops`` and below every flow: the session, the CLI and the flows ask it
for ladders and implementations; an op never does (the registry's data is all an op may read).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from study import registry
from study.paths import CUDA_DIR
from study.registry import Implementation, Ladder, implementations_of

_LOADED = False


class PluginError(ImportError):
    """A module named in STUDY_PLUGINS that could not be imported."""


def load() -> None:
    """Import every op: the ``study.ops`` package, then each module in ``STUDY_PLUGINS``. A plugin
    that fails raises PluginError naming it."""
    global _LOADED
    if _LOADED:
        return
    importlib.import_module("study.ops")
    for name in filter(None, (n.strip() for n in os.environ.get("STUDY_PLUGINS", "").split(","))):
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise PluginError(f"the plugin {name!r} (STUDY_PLUGINS) failed to import: "
                              f"{type(exc).__name__}: {exc}") from exc
    _LOADED = True


def ladders() -> dict[str, Ladder]:
    load()
    return registry.registered()


def ladder(op: str) -> Ladder:
    found = ladders()
    if op not in found:
        raise KeyError(f"unknown op {op!r}; known: {', '.join(sorted(found)) or 'none'}")
    return found[op]


def implementations() -> list[Implementation]:
    return [impl for lad in ladders().values() for impl in implementations_of(lad)]


def implementation(name: str) -> Implementation:
    """The implementation called ``name`` (op/rung-or-baseline/backend), or a KeyError listing the known ones."""
    load()
    return registry.lookup(name)


def reference(op: str) -> Implementation | None:
    """The op's reference baseline as an implementation (what × ref divides by and a pair is timed
    against), or None when the op declares none."""
    return next((impl for impl in implementations_of(ladder(op)) if impl.reference), None)


def check_integrity(cuda_dir: Path = CUDA_DIR) -> list[str]:
    """Every way the loaded ops' registrations are inconsistent, as sentences; empty when sound."""
    return registry.check_integrity(ladders(), cuda_dir)


def report_sections() -> dict[str, tuple]:
    """op -> the report sections its problem declares (``Problem.report_sections``)."""
    return {op: lad.problem.report_sections for op, lad in ladders().items() if lad.problem.report_sections}

"""Where things live: the repository, its kernel folders, caches and reports.

The one module every other module may import for a path; it imports nothing of the
framework itself, so it can never take part in an import cycle.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CUDA_DIR = ROOT / "cuda_kernels"
MICROBENCH_DIR = CUDA_DIR / "microbench"  # ceiling, delay and empty kernels: not rungs
COMMON_HEADER = CUDA_DIR / "common.cuh"
REPORTS_DIR = ROOT / "reports"


def display(path: Path | str) -> str:
    """A path as reports and messages show it: relative to the repository where it lies
    inside it, absolute otherwise (an op registered from a user's own folder)."""
    path = Path(path).resolve()
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def cache_dir() -> Path:
    """Measured state that outlives a run (CUDA autotune picks, ceilings):
    ``$STUDY_CACHE_DIR``, default ``~/.cache/study``."""
    return Path(os.environ.get("STUDY_CACHE_DIR", Path.home() / ".cache" / "study"))


def report_dir(slug: str) -> Path:
    """Where a GPU's committed reports live: ``reports/<gpu slug>/``."""
    return REPORTS_DIR / slug

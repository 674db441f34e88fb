"""Result files: versioned nested JSON, full precision, raw samples; Markdown derives from them."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from study.registry import ROOT

SCHEMA = 2  # 2: timing modes, noise stopping, clocks, ceilings, plan/complete for resuming
READABLE = (1, 2)  # schema 1 lacks those fields; the report shows them as unknown


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _module_version(name: str) -> str | None:
    try:
        module = __import__(name)
        return getattr(module, "__version__", None)
    except Exception:
        return None


def git_state() -> dict:
    """Commit and dirty flag of the checkout. A copy of the tree without its history (a
    remote GPU machine) takes them from STUDY_GIT_COMMIT / STUDY_GIT_DIRTY (0 or 1), set by
    whoever made the copy; otherwise ``unknown``."""
    if os.environ.get("STUDY_GIT_COMMIT"):
        dirty = os.environ.get("STUDY_GIT_DIRTY")
        return {"commit": os.environ["STUDY_GIT_COMMIT"], "dirty": None if dirty is None else dirty == "1",
                "source": "STUDY_GIT_COMMIT"}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": None}


def environment(device, settings, argv: list[str]) -> dict:
    import torch

    return {
        "gpu": device.to_json(),
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": _module_version("triton"),
        "cupy": _module_version("cupy") or _version("cupy-cuda13x"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git": git_state(),
        "command": " ".join(shlex.quote(a) for a in argv),
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "timer": settings.to_json(),
    }


def finalize(measurements: list[dict]) -> list[dict]:
    """Fill ``vs_cublas``: the cuBLAS median over this median, same op, shape and dtype
    (> 1 means faster than cuBLAS). Pure: returns new records."""
    baseline = {}
    for m in measurements:
        if m["backend"] == "cublas" and m["status"] == "ok":
            baseline[(m["op"], json.dumps(m["shape"], sort_keys=True), m["dtype"])] = m["median_ms"]
    out = []
    for m in measurements:
        m = dict(m)
        base = baseline.get((m["op"], json.dumps(m["shape"], sort_keys=True), m["dtype"]))
        m["vs_cublas"] = base / m["median_ms"] if base and m["status"] == "ok" else None
        out.append(m)
    return out


def document(env: dict, measurements: list[dict]) -> dict:
    return {"schema": SCHEMA, "environment": env, "measurements": finalize(measurements)}


def _clean(value):
    """JSON has no inf/NaN: such figures (an error metric of a NaN output) become null."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write(path: Path, doc: dict) -> None:
    path = Path(path)
    doc = _clean(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    tmp.replace(path)


def load(path: Path) -> dict:
    doc = json.loads(Path(path).read_text())
    if not isinstance(doc, dict) or "schema" not in doc:
        raise ValueError(f"{path}: not a study results file (no 'schema')")
    if doc["schema"] not in READABLE:
        raise ValueError(f"{path}: schema {doc['schema']} is not one this version reads ({', '.join(map(str, READABLE))})")
    for key in ("environment", "measurements"):
        if key not in doc:
            raise ValueError(f"{path}: missing {key!r}")
    return {**doc, "measurements": finalize(doc["measurements"])}


def cache_dir() -> Path:
    """Where measured state that outlives a run is kept (CUDA autotune picks, ceilings)."""
    return Path(os.environ.get("STUDY_CACHE_DIR", Path.home() / ".cache" / "study"))


def report_dir(device) -> Path:
    """Where a GPU's committed reports live: ``reports/<gpu slug>/``."""
    return ROOT / "reports" / device.slug


def default_paths(out_dir: Path, name: str = "compare") -> tuple[Path, Path]:
    return out_dir / f"{name}.json", out_dir / f"{name}.md"


def python_argv() -> list[str]:
    return ["python", "-m", "study", *sys.argv[1:]]

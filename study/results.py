"""Result files: versioned nested JSON, full precision, raw samples; Markdown derives from them."""

from __future__ import annotations

import datetime
import gzip
import json
import os
import platform
import shlex
import subprocess
import sys
import threading
import zlib
from importlib import metadata
from pathlib import Path

from study import metrics
from study.paths import ROOT

# 3: precisions (precision, dtype, math), work (flops, bytes, bound), several baselines
#    (baseline, library, reference) and x_ref, timing mode per case, peaks per math mode.
# 2: timing modes, noise stopping, clocks, ceilings, plan/complete for resuming.
SCHEMA = 3
READABLE = (1, 2, 3)  # older files are upgraded on load (upgrade()); missing fields show as unknown


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
    """Commit and dirty flag of the checkout: dirty where tracked files other than those under ``reports/``
    differ from the commit (a report written by an earlier command of the same session is an output, not a
    change to what measures). A copy of the tree without its history (a remote GPU machine) takes them from
    STUDY_GIT_COMMIT / STUDY_GIT_DIRTY (0 or 1), set by whoever made the copy; otherwise ``unknown``."""
    if os.environ.get("STUDY_GIT_COMMIT"):
        dirty = os.environ.get("STUDY_GIT_DIRTY")
        return {"commit": os.environ["STUDY_GIT_COMMIT"], "dirty": None if dirty is None else dirty == "1",
                "source": "STUDY_GIT_COMMIT"}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                 ":(exclude)reports"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "unknown", "dirty": None}


def software() -> dict:
    """The versions and the checkout a number depends on."""
    import torch

    return {
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "triton": _module_version("triton"),
        "cupy": _module_version("cupy") or _version("cupy-cuda13x"),
        "nvmath": _version("nvmath-python"),
        "numpy": _module_version("numpy"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git": git_state(),
    }


def machine_environment() -> dict:
    """``python -m study env``: the GPU (name, UUID, driver, max clocks, power limit, persistence,
    ECC, MIG, peaks) where one is visible, and the software; works without a GPU."""
    import torch

    from study import hardware

    if torch.cuda.is_available():
        gpu = {**hardware.current_device().to_json(), **hardware.nvml_facts()}
    else:
        gpu = {"name": None, "visible": False, "reason": "no CUDA GPU is visible to torch"}
    return {"gpu": gpu, **software(), "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def flatten(data: dict, prefix: str = "") -> list[tuple[str, object]]:
    """("gpu.name", value) pairs of a nested dict, for a two-column listing."""
    rows = []
    for key, value in data.items():
        if isinstance(value, dict):
            rows += flatten(value, f"{prefix}{key}.")
        else:
            rows.append((f"{prefix}{key}", value))
    return rows


def environment(device, settings, argv: list[str]) -> dict:
    """What a results file records about how its numbers were made."""
    from study import hardware

    gpu = {**device.to_json(), **{k: v for k, v in hardware.nvml_facts().items() if v is not None}}
    return {
        "gpu": gpu,
        **software(),
        "command": " ".join(shlex.quote(a) for a in argv),
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "timer": settings.to_json(),
    }


# What reproduces a number, as (label, path in the environment): two runs that differ in any of
# these may not be resumed as one or merged without saying so, and a diff lists them first.
ENV_KEYS = (("GPU", ("gpu", "name")), ("driver", ("gpu", "driver")), ("CUDA", ("cuda",)), ("torch", ("torch",)),
            ("triton", ("triton",)), ("cupy", ("cupy",)), ("nvmath", ("nvmath",)), ("numpy", ("numpy",)),
            ("python", ("python",)), ("commit", ("git", "commit")), ("dirty tree", ("git", "dirty")),
            ("timer settings", ("timer",)))


def _get(env: dict, path: tuple):
    for part in path:
        env = env.get(part) if isinstance(env, dict) else None
    return env


def differences(env_a: dict, env_b: dict, labels: tuple[str, ...] | None = None) -> list[tuple[str, object, object]]:
    """(label, A's value, B's value) for each ENV_KEYS entry (or those named) that differs; of a
    settings dict, only the entries that differ (one a side lacks reads "(absent)")."""
    return [(label, *_only_changed(_get(env_a, path), _get(env_b, path))) for label, path in ENV_KEYS
            if (labels is None or label in labels) and _get(env_a, path) != _get(env_b, path)]


def _only_changed(a, b):
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return a, b
    absent = "(absent)"
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k, absent) != b.get(k, absent)]
    return {k: a.get(k, absent) for k in keys}, {k: b.get(k, absent) for k in keys}


def upgrade(doc: dict) -> dict:
    """A schema-1 or -2 document in schema 3's terms: those files are SGEMM in FP32, one cuBLAS
    baseline (the reference), one timing mode; the work of each record follows from its shape
    (2·M·N·K FLOPs, 4·(M·K + K·N + M·N) bytes), and the stored figures are derived again."""
    if doc["schema"] >= 3:
        return doc
    env = dict(doc["environment"])
    gpu = dict(env.get("gpu") or {})
    if "peaks_gflops" not in gpu and gpu.get("fp32_peak_gflops"):
        gpu["peaks_gflops"] = {"ieee": gpu["fp32_peak_gflops"]}
    env["gpu"] = gpu
    mode = (env.get("timer") or {}).get("mode", "cold")
    records = []
    for m in doc["measurements"]:
        m = {k: v for k, v in m.items() if k not in ("vs_cublas", "gflops", "pct_peak", "pct_ceiling")}
        dims = m["shape"]
        mm, nn, kk = dims["M"], dims["N"], dims["K"]
        baseline = m["backend"] == "cublas"
        if baseline:  # schema 2 called the one baseline "baseline"; it is torch.matmul's now
            m["implementation"] = m["implementation"].replace("/baseline/cublas", "/torch_matmul/cublas")
        m.update({"precision": "fp32", "math": "ieee", "mode": m.get("mode") or mode,
                  "baseline": "torch_matmul" if baseline else None, "library": "cuBLAS" if baseline else None,
                  "reference": baseline, "work": {"flops": 2 * mm * nn * kk, "bytes": 4 * (mm * kk + kk * nn + mm * nn),
                                                  "bound": "compute"}})
        records.append(m)
    return {**doc, "environment": env, "measurements": records, "upgraded_from": doc["schema"]}


def document(env: dict, measurements: list[dict]) -> dict:
    """Every derived figure comes from the stored measurements and the environment (study/metrics.py)."""
    return {"schema": SCHEMA, "environment": env, "measurements": metrics.finalize(measurements, env)}


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
    tmp = path.with_suffix(f"{path.suffix}.{os.getpid()}.{threading.get_ident()}.tmp")  # writers never share one
    try:
        tmp.write_text(dumps(doc))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def pack_samples(record: dict) -> dict:
    """A record as stored: its samples as a histogram, ``{"value": [distinct ms, ascending],
    "count": [...]}``. Samples are kept to the nanosecond and the events tick in 32 ns steps, so
    20,000 samples of a µs kernel take a few dozen values: files shrink about 25-fold, losing only
    the order in which samples were taken, which no statistic of the study uses."""
    samples = record.get("samples_ms")
    if not isinstance(samples, list):
        return record
    counts: dict = {}
    for x in samples:
        counts[x] = counts.get(x, 0) + 1
    values = sorted(counts)
    return {**record, "samples_ms": {"value": values, "count": [counts[v] for v in values]}}


def unpack_samples(record: dict) -> dict:
    """The stored histogram back to a list of samples, ascending (lists of older files pass)."""
    samples = record.get("samples_ms")
    if isinstance(samples, dict):
        record = {**record, "samples_ms": [v for v, n in zip(samples["value"], samples["count"]) for _ in range(n)]}
    return record


def dumps(doc: dict) -> str:
    """JSON with one line per measurement and samples as histograms: a record of 50,000 samples
    written one number per line made results files of hundreds of MB and their rewriting the
    slowest part of a run."""
    if not isinstance(doc.get("measurements"), list):
        return json.dumps(doc, indent=1, allow_nan=False) + "\n"
    parts = []
    for key, value in doc.items():
        if key == "measurements":
            lines = ",\n".join("  " + json.dumps(pack_samples(m), allow_nan=False) for m in value)
            text = "[\n" + lines + "\n ]" if value else "[]"
        else:
            text = json.dumps(value, indent=1, allow_nan=False).replace("\n", "\n ")
        parts.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


class Journal:
    """Append-only companion of an unfinished results file (``<file>.journal``): one line per
    measurement as it completes, so that rewriting the whole document can wait (``compare``
    rewrites it every ``REWRITE_S`` and on every exit) without a killed run losing a result.
    Its first line names the run (the document's ``environment.utc``); a journal of another run
    is ignored."""

    def __init__(self, results_path: Path):
        self.path = Path(f"{results_path}.journal")

    def start(self, run: str) -> None:
        """Begin this run's journal. Called right after the document was written with everything
        measured so far (a resumed run's journal included): never appended to a line a kill cut."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps({"journal_of": run}) + "\n")

    def append(self, record: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(pack_samples(_clean(record)), allow_nan=False) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def records(self, run: str) -> list[dict] | None:
        """The measurements journaled by ``run``; None when there is no journal of that run. A last
        line cut short by a kill is dropped."""
        try:
            lines = self.path.read_text().splitlines()
        except OSError:
            return None
        try:
            if not lines or json.loads(lines[0]).get("journal_of") != run:
                return None
        except ValueError:
            return None
        kept = []
        for line in lines[1:]:
            try:
                kept.append(unpack_samples(json.loads(line)))
            except ValueError:
                break
        return kept

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def update_entry(path: Path, key: str, value) -> None:
    """Add one entry to a JSON object file that several processes share (the GPU lanes of a
    --gpus run, a job array's tasks on one home folder): under a lock, read, add, write."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(path.suffix + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text()) if path.is_file() else {}
        data[key] = value
        write(path, data)


def documents(folder: Path, skip: tuple = ()):
    """(path, parsed JSON object) of every JSON file (``*.json``, ``*.json.gz``) under ``folder`` (none if it is no
    folder), but those under a subfolder named in ``skip``; a file that does not parse into an object (a cache, a
    half-written file) is passed over. Raw: what the index and the time-left priors read."""
    folder = Path(folder)
    found = [*folder.rglob("*.json"), *folder.rglob("*.json.gz")] if folder.is_dir() else []
    for path in sorted(found):
        if any(part in skip for part in path.relative_to(folder).parts):
            continue
        try:
            raw = json.loads(read_text(path))
        except (OSError, ValueError):
            continue
        if isinstance(raw, dict):
            yield path, raw


RECORD_FIELDS = ("op", "implementation", "backend", "shape", "status")  # what every record of a results file has


PAIRED_FIELDS = ("reference", "ratio", "ci", "rounds")  # a paired record's, which x_ref and its interval come from


def read_text(path: Path) -> str:
    """A results file's text, gunzipped where it is gzipped (by its magic bytes, whatever its name): the committed
    reports keep their largest finished files as ``NAME.json.gz`` (``gzip -9n``), a tenth of the JSON, so that the
    working tree stays small enough to travel to a GPU machine; every command reads them as it reads JSON."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{path}: not a whole gzip file ({exc})") from None
    return raw.decode()


def stem(path: Path) -> str:
    """A results file's name without ``.json`` or ``.json.gz``: what its page, CSV and figures are named after."""
    return beside(path, "").name


def beside(path: Path, suffix: str) -> Path:
    """The file beside a results file that shares its stem: its page (``.md``), CSV or figures' stem, for
    ``NAME.json`` and ``NAME.json.gz`` alike."""
    path = Path(path)
    return (path.with_suffix("") if path.name.endswith(".json.gz") else path).with_suffix(suffix)


def record_of(page: Path) -> Path:
    """The results file a page beside it is generated from: ``NAME.json``, or ``NAME.json.gz`` where only that is
    there (a finished record, gzipped)."""
    plain = Path(page).with_suffix(".json")
    gzipped = plain.with_name(plain.name + ".gz")
    return gzipped if gzipped.is_file() and not plain.is_file() else plain


def read_json(path: Path):
    """A JSON file (or JSON gzipped) as it is, any kind; a ValueError naming the file where it is not JSON."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None


def load(path: Path, doc=None) -> dict:
    """A results file (JSON, or JSON gzipped: :func:`read_text`), upgraded to this schema and its figures derived;
    a ValueError naming the file (and the record) when it cannot be one. ``doc``: the file's JSON, already read."""
    doc = read_json(path) if doc is None else doc
    if not isinstance(doc, dict) or "schema" not in doc:
        raise ValueError(f"{path}: not a study results file (no 'schema')")
    if not isinstance(doc["schema"], int) or isinstance(doc["schema"], bool):
        raise ValueError(f"{path}: 'schema' is {doc['schema']!r}, a {type(doc['schema']).__name__}; a results "
                         f"file's schema is a number ({', '.join(map(str, READABLE))})")
    if doc["schema"] not in READABLE:
        raise ValueError(f"{path}: schema {doc['schema']} is not one this version reads ({', '.join(map(str, READABLE))})")
    for key in ("environment", "measurements"):
        if key not in doc:
            raise ValueError(f"{path}: missing {key!r}")
    if not isinstance(doc["measurements"], list):
        raise ValueError(f"{path}: 'measurements' is not a list")
    for index, m in enumerate(doc["measurements"]):
        missing = [k for k in RECORD_FIELDS if not isinstance(m, dict) or k not in m]
        if not missing and m["status"] == "ok":
            missing = [k for k in ("median_ms", "samples_ms") if k not in m]
        if not missing and isinstance(m.get("paired"), dict):  # what the figures derive from a paired record
            missing = [f"paired.{k}" for k in PAIRED_FIELDS if k not in m["paired"]]
        if missing:
            name = m.get("implementation", "?") if isinstance(m, dict) else "?"
            raise ValueError(f"{path}: measurement {index} ({name}) lacks {', '.join(map(repr, missing))}")
    doc = upgrade(doc)
    measurements = [unpack_samples(m) for m in doc["measurements"]]
    return {**doc, "measurements": metrics.finalize(measurements, doc["environment"])}


def default_paths(out_dir: Path, name: str = "compare") -> tuple[Path, Path]:
    return out_dir / f"{name}.json", out_dir / f"{name}.md"


def python_argv() -> list[str]:
    return ["python", "-m", "study", *sys.argv[1:]]

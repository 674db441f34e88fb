"""Splitting a run into shards, and merging their results files into one.

``--shard i/n`` (0 ≤ i < n; Slurm's ``$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`` with
``--array=0-(n-1)``) keeps the cases of every n-th (op, shape, precision) group, counted in
sorted order: a group's rungs and its baselines — all that × ref needs — stay on one shard,
every case is on exactly one shard, and the split depends only on the plan, so every task of a
job array computes the same one. ``merge`` joins the shards' results files into one that reads
like a single run's (docs/cluster.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from study import keys, results
from study.plan import group_of


class ShardError(ValueError):
    """A shard that cannot be, or results that cannot be merged; the message says why."""


def parse_shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise ShardError(f"--shard {text!r} is not of the form i/n (e.g. 0/4)")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 0 <= i < n:
        raise ShardError(f"--shard {text}: i must be in 0 … n-1 and n at least 1 (Slurm: --array=0-{max(n, 1) - 1})")
    return i, n


def shard_cases(cases: list, index: int, count: int) -> list:
    """The cases of shard ``index`` of ``count``: every count-th group in sorted order."""
    groups = sorted({group_of(c) for c in cases})
    mine = {g for n, g in enumerate(groups) if n % count == index}
    return [c for c in cases if group_of(c) in mine]


def _order(m: dict) -> tuple:
    """A results file's own order: op, shape, precision, baselines first (as plan.ordered)."""
    return (m["op"], tuple(m["shape"].values()), m.get("precision") or m["dtype"], m["rung"] is not None)


def merge(paths: list[Path], allow_mixed: bool = False) -> dict:
    """One results document from several runs' (shards') files. Refuses runs whose environments
    differ in what reproduces a number (unless ``allow_mixed``: each run's environment is then
    kept and the report says so) and cases measured twice."""
    if len(paths) < 2:
        raise ShardError("merge needs at least two results files")
    docs = [results.load(p) for p in paths]
    first = docs[0]["environment"]
    mixed = []
    for path, doc in zip(paths[1:], docs[1:]):
        for label, a, b in results.differences(first, doc["environment"]):
            mixed.append(f"{path}: {label} {b!r} where {paths[0]} has {a!r}")
    if mixed and not allow_mixed:
        raise ShardError("these runs differ in what reproduces a number (--allow-mixed merges them anyway and says "
                         "so in the report): " + "; ".join(mixed))
    seen: dict = {}
    duplicates = []
    records = []
    for index, (path, doc) in enumerate(zip(paths, docs)):
        for m in doc["measurements"]:
            if mixed:
                m = {**m, "environment_index": index}  # its figures derive from its own run's GPU and ceilings
            key = keys.CaseKey.of_record(m).text
            if key in seen:
                duplicates.append(f"{key} (in {seen[key]} and {path})")
                continue
            seen[key] = path
            records.append(m)
    if duplicates:
        raise ShardError(f"{len(duplicates)} cases are in more than one file: " + "; ".join(duplicates[:10])
                         + (" …" if len(duplicates) > 10 else ""))
    records = [m for _, m in sorted(enumerate(records), key=lambda im: (_order(im[1]), im[0]))]
    env = {**first, "merged_from": [str(p) for p in paths], "shard": None,
           "command": re.sub(r"\s--shard[ =]\S+", "", first.get("command", ""))}
    shards = [d["environment"].get("shard") for d in docs]
    missing = []
    if all(shards):
        counts = {n for _, n in shards}
        if len(counts) != 1:
            raise ShardError(f"these files are shards of different splits ({', '.join(f'/{n}' for n in sorted(counts))})")
        missing = sorted(set(range(counts.pop())) - {i for i, _ in shards})
        env["missing_shards"] = missing
    if mixed:
        env["mixed"] = mixed
        env["environments"] = [d["environment"] for d in docs]
    doc = results.document(env, records)
    doc["plan"] = [k for d in docs for k in d.get("plan", [])]
    doc["complete"] = all(d.get("complete", True) for d in docs) and not missing
    return doc

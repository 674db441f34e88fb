"""Autotune of a CUDA rung: every point of its ``// space:`` lines compiled, gated and timed by the
session's own timer, in the case's timing mode; the fastest correct point wins. Picks are cached per
GPU, kernel source (its headers inlined: an edited helper tunes again), space, shape, precision,
mode and padding, in ``<study cache>/cuda_autotune.json``, which the GPU lanes of a ``--gpus`` run
share under a lock."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from study import keys, stats
from study.backends.cuda import kernel_source
from study.backends.launch import PointUnsupported, Unsupported
from study.paths import cache_dir
from study.problem import check_output, one_line
from study.timing import flushes
from study.results import update_entry


def cache_path() -> Path:
    return cache_dir() / "cuda_autotune.json"


def tune_key(impl, device, shape, precision, mode, pad: int = 0) -> str:
    space = json.dumps([dict(p) for p in impl.space], sort_keys=True)
    digest = hashlib.sha256((kernel_source(impl.target.path) + space).encode()).hexdigest()[:16]
    return (f"{device.name}|sm_{device.capability[0]}{device.capability[1]}|{impl.name}|{keys.shape_text(shape)}|"
            f"{precision.name}|{mode}|{digest}" + (f"|pad={pad}" if pad else ""))


def tune(impl, problem, tensors, shape, precision, tuning, pad: int, prepare) -> tuple[dict, dict]:
    """(the fastest correct point, the log of every point tried); ``prepare`` is the CUDA backend's,
    called with each point. Raises Unsupported when the tensors refuse every point alike, or every point
    refuses the case on its own (PointUnsupported)."""
    path = cache_path()
    cache = json.loads(path.read_text()) if path.is_file() else {}
    key = tune_key(impl, tuning.timer.device, shape, precision, tuning.mode, pad)
    flush = flushes(tuning.mode)
    if key in cache:
        return dict(cache[key]["config"]), {"cached": True, **cache[key]}
    timer = tuning.timer
    trials = []
    for point in impl.space:
        try:
            launch = prepare(impl, problem, tensors, shape, precision, config=point, pad=pad)
            verdict = check_output(launch.fn, launch.out, problem, tuning.ref, tuning.scale, precision, launch.poison)
            if not verdict.ok:
                trials.append({"config": dict(point), "status": "wrong", "reason": verdict.message})
                continue
            timer.warm_up(launch.fn, flush)
            median = stats.summarize(timer.samples(launch.fn, timer.settings.tune_reps, flush)[0]).median
            # what the launch fitted to the shape (FIT, FIT_BN): the point's keys it ran at other values
            ran = {k: launch.config[k] for k in point if k in launch.config and launch.config[k] != point[k]}
            trials.append({"config": dict(point), "status": "ok", "median_ms": median, **({"ran": ran} if ran else {})})
        except PointUnsupported as exc:  # this point, not the case: the others may take it
            trials.append({"config": dict(point), "status": "skipped", "reason": str(exc)})
        except Unsupported:  # these tensors, not this point: every point would refuse them
            raise
        except Exception as exc:  # a point that fails to compile or launch is dropped, with why
            trials.append({"config": dict(point), "status": "crashed", "reason": one_line(exc)})
    good = [t for t in trials if t["status"] == "ok"]
    if trials and all(t["status"] == "skipped" for t in trials):
        raise Unsupported(trials[0]["reason"] if len({t["reason"] for t in trials}) == 1 else
                          "no point of the autotune space takes this case: " + "; ".join(
                              f"{t['config']}: {t['reason']}" for t in trials))
    if not good:
        raise RuntimeError("no point of the autotune space ran correctly: "
                           + "; ".join(f"{t['config']}: {t['reason']}" for t in trials))
    best = min(good, key=lambda t: t["median_ms"])
    entry = {"config": best["config"], "trials": trials}
    update_entry(path, key, entry)  # other GPU lanes may be adding theirs
    return dict(best["config"]), {"cached": False, **entry}

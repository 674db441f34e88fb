"""Every derived figure of a measurement, in one pure function.

A record stores what was measured (the median and the samples) and the work it did
(``work``: FLOPs, minimum bytes, and whether the op is compute- or memory-bound, all
declared by its problem). From these and the run's environment (theoretical peaks of the
GPU, measured ceilings) :func:`derive` computes:

- ``gflops`` = FLOPs / median and ``gbps`` = minimum bytes / median (each input read once,
  each output written once): the op's headline is GFLOPS when it is compute-bound, GB/s
  when it is memory-bound;
- ``pct_peak``: % of the theoretical peak of the unit its precision uses (FP32 FFMA, TF32,
  FP16 or BF16 tensor cores), or of the memory bandwidth for a memory-bound op;
- ``pct_ceiling``: % of the measured ceiling of the same kind (FFMA loop, best cuBLAS GEMM of
  that precision, device copy — of as many bytes where the run carries the copy-by-size curve);
- ``intensity``: FLOP per minimum byte, the roofline's x axis.

``x_ref`` needs every record of a run (the reference baseline on the same op, shape,
precision and timing mode) and is filled by :func:`with_x_ref`. A paired record's clock spread
and power mix (:func:`pair_gaps`) come from the clocks it stores.
"""

from __future__ import annotations

import json
import math

from study import stats
from study.timing import PAIR_CLOCK_GAP, power_mix

UNITS = {"compute": "GFLOPS", "memory": "GB/s"}
PEAK_NAMES = {"ieee": "FP32 FFMA", "tf32": "TF32 tensor cores", "3xtf32": "TF32 tensor cores ÷ 3",
              "fp16": "FP16 tensor cores", "bf16": "BF16 tensor cores"}
CEILINGS = {"ieee": ("ffma_gflops", "FFMA loop"), "tf32": ("tensor_tf32_gflops", "best cuBLAS TF32 GEMM"),
            "fp16": ("tensor_fp16_gflops", "best cuBLAS FP16 GEMM"),
            "bf16": ("tensor_bf16_gflops", "best cuBLAS BF16 GEMM")}
MEMORY_CEILING = ("copy_gbps", "device copy")
# The device copy by size ([bytes moved, GB/s], ``ceilings --copy-sizes``): where a run carries it, a
# memory-bound case is judged against a copy of as many bytes, which pays the same launch and ramp
# (64 MiB reach 74 % of the H200's peak, 2 GiB 89 %), not against the 2 GiB copy alone.
COPY_CURVE = "copy_curve"
SIZED_COPY = "device copy of as many bytes"


def copy_ceiling(curve: list, nbytes: float) -> float:
    """The copy curve's GB/s at ``nbytes`` moved: linear in log2(bytes) between its points, its end
    points' figures outside them (below the smallest that overstates the ceiling: a smaller case
    gets no credit for its size)."""
    points = sorted(curve)
    if nbytes <= points[0][0]:
        return points[0][1]
    for (b0, g0), (b1, g1) in zip(points, points[1:]):
        if nbytes <= b1:
            return g0 + (g1 - g0) * math.log2(nbytes / b0) / math.log2(b1 / b0)
    return points[-1][1]


def unit(bound: str) -> str:
    return UNITS[bound]


def headline(record: dict) -> float | None:
    """The figure an op is judged by: GFLOPS (compute-bound) or GB/s (memory-bound)."""
    bound = (record.get("work") or {}).get("bound", "compute")
    return record.get("gbps") if bound == "memory" else record.get("gflops")


def best(records) -> dict | None:
    """The fastest ``ok`` record by its headline figure (a wrong, crashed or skipped one never), or None."""
    ok = [m for m in records if m["status"] == "ok" and headline(m)]
    return max(ok, key=headline, default=None)


def per_ghz(record: dict) -> float | None:
    """The headline per GHz of the measurement's median SM clock: what a compute-bound kernel does
    per clock, so that rungs measured at different clocks (a GPU at its power cap throttles some runs
    more than others) can be compared at an equal clock, to first order — its rate scales with the
    SM clock while the memory clock stays put, and NVML samples the clock coarsely. None without a
    recorded clock or for a memory-bound op (whose rate follows the memory clock)."""
    mhz = (record.get("clocks") or {}).get("sm_mhz_median")
    value = headline(record)
    if value is None or not mhz or (record.get("work") or {}).get("bound", "compute") == "memory":
        return None
    return value / (mhz / 1000)


def derive(record: dict, env: dict) -> dict:
    """The derived fields of one record (empty figures unless its status is ok)."""
    work = record.get("work") or {}
    bound = work.get("bound", "compute")
    math = record.get("math") or "ieee"
    out = {"gflops": None, "gbps": None, "intensity": None, "pct_peak": None, "peak": None,
           "pct_ceiling": None, "ceiling": None}
    flops, nbytes = work.get("flops"), work.get("bytes")
    if flops and nbytes:
        out["intensity"] = flops / nbytes
    median = record.get("median_ms")
    if record.get("status") not in ("ok", "impossible") or not median:  # an impossible figure is shown, not ranked
        return out
    seconds = median * 1e-3
    out["gflops"] = flops / seconds / 1e9 if flops else None
    out["gbps"] = nbytes / seconds / 1e9 if nbytes else None
    gpu = env.get("gpu") or {}
    ceilings = env.get("ceilings") or {}
    ran_on = (record.get("gpu") or {}).get("uuid")
    for entry in env.get("gpus") or []:  # a --gpus run: each GPU's own measured ceilings
        if ran_on and entry.get("uuid") == ran_on and entry.get("ceilings"):
            ceilings = entry["ceilings"]
    if bound == "memory":
        peak, value = gpu.get("memory_peak_gbps"), out["gbps"]
        out["peak"] = "memory bandwidth"
        key, name = MEMORY_CEILING
    else:
        peak, value = (gpu.get("peaks_gflops") or {}).get(math), out["gflops"]
        out["peak"] = PEAK_NAMES.get(math, math)
        key, name = CEILINGS.get(math, (None, None))
    if peak and value is not None:
        out["pct_peak"] = 100 * value / peak
    if bound == "memory" and ceilings.get(COPY_CURVE) and value is not None:
        out["pct_ceiling"] = 100 * value / copy_ceiling(ceilings[COPY_CURVE], nbytes)
        out["ceiling"] = SIZED_COPY
    elif key and ceilings.get(key) and value is not None:
        out["pct_ceiling"] = 100 * value / ceilings[key]
        out["ceiling"] = name
    return out


def group_key(record: dict) -> tuple:
    """What a record is compared within: op, shape, precision, timing mode, padding of the rows."""
    return (record["op"], json.dumps(record["shape"], sort_keys=True), record.get("precision"), record.get("mode"),
            record.get("pad") or 0)


def pair_gaps(record: dict) -> dict:
    """A paired record's ``clock_spread`` (its two sides' median SM clocks while the rounds ran, apart
    by this fraction of the reference's), ``power_mix`` and ``borrowed`` (study.timing.power_mix: how far
    a side ran from, and above, the clock it settled at alone), and of a re-settled pair the
    ``interleaved_borrowed`` that had it timed again, and the ``order_effect`` of its rounds
    (study.stats.order_effect: what going first cost, which the ABBA units of its ratio cancel); each None
    where unknown, {} for an unpaired record."""
    pairing = record.get("paired")
    if not pairing:
        return {}
    mine, theirs = record.get("clocks") or {}, pairing.get("reference_clocks") or {}
    mhz = (mine.get("sm_mhz_median"), theirs.get("sm_mhz_median"))
    steadies = (record.get("steady"), pairing.get("reference_steady"))
    mix = power_mix(steadies, (mine, theirs))
    interleaved = pairing.get("interleaved")  # the rounds a re-settled pair was timed again for
    borrowed = (power_mix(steadies, (interleaved.get("clocks"), interleaved.get("reference_clocks")))["borrowed"]
                if interleaved else None)
    return {"clock_spread": abs(mhz[0] - mhz[1]) / mhz[1] if all(mhz) else None, "power_mix": mix["power_mix"],
            "borrowed": mix["borrowed"], "interleaved_borrowed": borrowed,
            "order_effect": stats.order_effect(pairing.get("ratios") or [])}


def with_x_ref(records: list[dict]) -> list[dict]:
    """``x_ref`` = the reference baseline's median / this median in the same group (> 1:
    faster than the reference); None when either is not ok. A paired record's is its own pairing's
    (the median ratio of its ABBA units), with ``x_ref_ci`` and ``paired_rounds``. Pure: returns new records."""
    reference = {group_key(r): r["median_ms"] for r in records
                 if r.get("reference") and r["status"] == "ok" and r.get("median_ms") and not r.get("paired")}
    out = []
    for r in records:
        pairing = r.get("paired")
        if pairing:
            ok = r["status"] == "ok"
            out.append({**r, "x_ref": pairing["ratio"] if ok else None, "x_ref_ci": pairing["ci"] if ok else None,
                        "paired_rounds": pairing["rounds"]})
            continue
        base = reference.get(group_key(r))
        out.append({**r, "x_ref": base / r["median_ms"] if base and r["status"] == "ok" and r.get("median_ms") else None})
    return out


def finalize(records: list[dict], env: dict) -> list[dict]:
    """Every derived figure of every record, from stored measurements and the environment (in a
    file merged from runs of different environments, each record's own)."""
    envs = env.get("environments") or []
    return with_x_ref([{**r, **derive(r, envs[r["environment_index"]] if "environment_index" in r and envs else env)}
                       for r in records])

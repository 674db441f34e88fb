"""Measured ceilings: what this GPU actually reaches, next to its theoretical peaks.

- FP32: an FFMA loop (``cuda_kernels/microbench/ffma_loop.cu``), FLOPs counted exactly.
- Legacy tensor cores: a loop of warp-level ``mma.sync`` m16n8k16 FP16 products with FP32
  accumulation (``cuda_kernels/microbench/mma_sync_loop.cu``), FLOPs counted exactly: what the
  HMMA path of a pre-Hopper GEMM (hgemm v6) can issue here, below the wgmma path cuBLAS takes.
- Tensor cores: the best cuBLAS GEMM over a few large shapes, per tensor-core precision
  (FP16 and BF16 with FP32 accumulation, TF32 on FP32 operands).
- Memory: a device-to-device copy of 2 GiB, counting bytes read plus bytes written; and the same
  copy by size (``--copy-sizes``), 4 MiB to 2 GiB read: what a memory-bound kernel that moves that
  many bytes can reach cold, its launch and ramp included (a softmax of 4096² FP16 moves 64 MiB).
- Launch overhead: the event-timed duration of an empty kernel.

All are timed by the study's own timer (:mod:`study.timer`, cold mode: the copy and the GEMMs are
far larger than L2 anyway), so they are measured the way every kernel is.
Results are cached per GPU under the study cache folder (``$STUDY_CACHE_DIR``, default
``~/.cache/study``); ``python -m study ceilings --remeasure`` measures again.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from study import metrics, stats
from study.timer import for_gpu
from study.backends.cuda import StreamCache, as_cupy, load_function
from study.paths import MICROBENCH_DIR as MICROBENCH
from study.paths import cache_dir, report_dir
from study.precision import FP16_TENSOR
from study.problem import DTYPES
from study.report.labels import num
from study.results import write

TENSOR_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 8192))
COPY_BYTES = 2 * 2**30
COPY_SIZES = tuple(2**k * 2**20 for k in range(2, 12))  # bytes read: 4 MiB … 2 GiB = COPY_BYTES (as many written)
FFMA = {"ITERS": 16384, "CHAINS": 8, "THREADS": 256}
FFMA_BLOCKS_PER_SM = 8  # 2048 threads: a full SM
MMA_SYNC = {"ITERS": 4096, "CHAINS": 8, "THREADS": 256}
# 32 warps an SM, 8 a scheduler, each with CHAINS independent HMMAs: far more in flight than the
# HMMA latency needs, and at 43 registers a thread (ptxas, sm_90a) all four blocks are resident.
MMA_SYNC_BLOCKS_PER_SM = 4
# The tensor-core ceilings: (key, torch dtype name, torch fp32_precision, math mode of the peak).
TENSOR = (("tensor_fp16", "float16", "ieee", "fp16"), ("tensor_bf16", "bfloat16", "ieee", "bf16"),
          ("tensor_tf32", "float32", "tf32", "tf32"))


def cache_path(device, uuid: str | None = None) -> Path:
    """The cache of a GPU model's ceilings, or of one GPU's (by UUID) in a --gpus run."""
    return cache_dir() / (f"ceilings-{device.slug}-{uuid.removeprefix('GPU-')[:13]}.json" if uuid
                          else f"ceilings-{device.slug}.json")


def _time(timer, fn) -> dict:
    """The runner's warm-up and stopping rule around ``fn``; the figures a ceiling keeps."""
    sampling = timer.time(fn)
    summary = stats.summarize(sampling["samples"])
    return {"median_ms": summary.median, "min_ms": summary.min, "rel_stdev": summary.rel_stdev,
            "samples": summary.n, "timing": sampling["timing"], "clocks": sampling["clocks"]}


def empty_launch():
    """A launch of one block of an empty kernel on torch's current stream."""
    empty = load_function(MICROBENCH / "empty.cu", "empty_kernel", {"THREADS": 32})
    streams = StreamCache()
    return lambda: empty((1, 1, 1), (32, 1, 1), (), stream=streams.current())


def launch_overhead(timer) -> dict:
    """Event-timed duration of one empty kernel launch."""
    return _time(timer, empty_launch())


def _loop(timer, device, file: str, symbol: str, defines: dict, blocks_per_sm: int, x: float,
          flops_per_block: int) -> dict:
    """Time one of the microbenchmark loops (``cuda_kernels/microbench``): ``blocks_per_sm`` blocks
    an SM, each thread writing its result to a sink; GFLOPS from the FLOPs a block does, counted exactly."""
    import numpy as np
    import torch

    kernel = load_function(MICROBENCH / file, symbol, defines)
    blocks = device.sms * blocks_per_sm
    sink = as_cupy(torch.empty(blocks * defines["THREADS"], device="cuda"))
    streams = StreamCache()
    x = np.float32(x)
    result = _time(timer, lambda: kernel((blocks, 1, 1), (defines["THREADS"], 1, 1), (sink, x),
                                         stream=streams.current()))
    result["gflops"] = flops_per_block * blocks / (result["median_ms"] * 1e-3) / 1e9
    return result


def ffma(timer, device) -> dict:
    return _loop(timer, device, "ffma_loop.cu", "ffma_loop", FFMA, FFMA_BLOCKS_PER_SM, 0.999,
                 2 * FFMA["CHAINS"] * FFMA["ITERS"] * FFMA["THREADS"])


def mma_sync(timer, device) -> dict:
    """FP16 ``mma.sync`` m16n8k16 loop (FP32 accumulation): the legacy tensor-core ceiling. Operands
    within a factor 2 of ±0.05: the accumulators stay finite."""
    return _loop(timer, device, "mma_sync_loop.cu", "mma_sync_loop", {**MMA_SYNC, **FP16_TENSOR.cuda_defines},
                 MMA_SYNC_BLOCKS_PER_SM, 0.05,
                 2 * 16 * 8 * 16 * MMA_SYNC["CHAINS"] * MMA_SYNC["ITERS"] * (MMA_SYNC["THREADS"] // 32))


def device_copy(timer, size: int = COPY_BYTES) -> dict:
    """A device-to-device copy of ``size`` bytes; GB/s of bytes read plus bytes written."""
    import torch

    src = torch.empty(size, dtype=torch.uint8, device="cuda").fill_(7)
    dst = torch.empty_like(src)
    result = _time(timer, lambda: dst.copy_(src))
    result["gbps"] = 2 * size / (result["median_ms"] * 1e-3) / 1e9
    return result


def copy_by_size(timer, sizes=COPY_SIZES) -> list[dict]:
    """Device copies of each of ``sizes``, cold (L2 flushed before each sample, so even the copies
    that fit in L2 start from HBM): bytes moved (read + written) over the median time."""
    import torch

    curve = []
    for size in sizes:
        curve.append(curve_point(size, device_copy(timer, size)))
        torch.cuda.empty_cache()
    return curve


def curve_point(size: int, copy: dict) -> dict:
    """A point of the copy curve from one device copy of ``size`` bytes read."""
    return {"bytes_read": size, "bytes_moved": 2 * size, "median_ms": copy["median_ms"],
            "rel_stdev": copy["rel_stdev"], "gbps": copy["gbps"]}


def cold_timer(device, settings, clocks):
    """The study's timer as every ceiling uses it: cold mode, no CUDA graphs."""
    return for_gpu(dataclasses.replace(settings, mode="cold", graph_launches=None), device, clocks)


def launch_overhead_ms(device, settings, clocks) -> float:
    """The empty kernel's event-timed launch, as every run records it (:func:`cold_timer`)."""
    return launch_overhead(cold_timer(device, settings, clocks))["median_ms"]


def add_copy_by_size(ceilings: dict, device, settings, clocks) -> dict:
    """The ceilings with the copy-by-size curve measured now (the rest as they were)."""
    return {**ceilings, "copy_by_size": copy_by_size(cold_timer(device, settings, clocks))}


def tensor_core(timer, dtype: str, fp32_precision: str) -> dict:
    """The best cuBLAS GEMM of one precision over TENSOR_SHAPES (random data: zeros run faster)."""
    import torch

    best, per_shape = None, []
    gen = torch.Generator(device="cuda").manual_seed(0)
    matmul = torch.backends.cuda.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = fp32_precision
    try:
        for m, n, k in TENSOR_SHAPES:
            a = torch.randn(m, k, device="cuda", dtype=DTYPES[dtype], generator=gen)
            b = torch.randn(k, n, device="cuda", dtype=DTYPES[dtype], generator=gen)
            c = torch.empty(m, n, device="cuda", dtype=DTYPES[dtype])
            result = _time(timer, lambda: torch.matmul(a, b, out=c))
            result["shape"] = {"M": m, "N": n, "K": k}
            result["gflops"] = 2 * m * n * k / (result["median_ms"] * 1e-3) / 1e9
            per_shape.append(result)
            if best is None or result["gflops"] > best["gflops"]:
                best = result
            del a, b, c
    finally:
        matmul.fp32_precision = previous
    return {**best, "per_shape": per_shape, "dtype": dtype, "fp32_precision": fp32_precision}


def measure(device, settings, clocks) -> dict:
    """Every ceiling, with the theoretical peak it is compared with."""
    import datetime

    import torch

    timer = cold_timer(device, settings, clocks)
    fp32_peak = device.peak_flops("ieee")
    # The 2 GiB copy is the largest point of the copy curve: timed once, the "copy" ceiling is that point.
    curve = copy_by_size(timer, COPY_SIZES[:-1])
    copy = device_copy(timer)
    curve.append(curve_point(COPY_BYTES, copy))
    result = {"device": device.to_json(), "timer": timer.settings.to_json(),
              "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "launch_overhead": launch_overhead(timer), "ffma": ffma(timer, device),
              "mma_sync_fp16": mma_sync(timer, device), "copy": copy, "copy_by_size": curve}
    torch.cuda.empty_cache()
    for key, dtype, fp32_precision, math in TENSOR:
        result[key] = tensor_core(timer, dtype, fp32_precision)
        peak = device.peak_flops(math)
        result[key]["theoretical_gflops"] = None if peak is None else peak / 1e9
        torch.cuda.empty_cache()  # the large GEMM operands
    result["ffma"]["theoretical_gflops"] = None if fp32_peak is None else fp32_peak / 1e9
    fp16_peak = device.peak_flops("fp16")  # the tensor peak, which only wgmma reaches on Hopper
    result["mma_sync_fp16"]["theoretical_gflops"] = None if fp16_peak is None else fp16_peak / 1e9
    result["copy"]["theoretical_gbps"] = device.memory_peak_bytes / 1e9
    return result


def summary(ceilings: dict) -> dict:
    """The figures a run carries: measured ceilings by name, and the copy-by-size curve as
    [bytes moved, GB/s] pairs where it was measured. The mma.sync loop is not among them: no
    precision is scored against it (metrics.CEILINGS scores FP16 against the best cuBLAS GEMM); it
    stands in ceilings.md, for comparing the mma.sync rung hgemm v6 with it."""
    curve = [[point["bytes_moved"], point["gbps"]] for point in ceilings.get("copy_by_size") or []]
    return {"ffma_gflops": ceilings["ffma"]["gflops"], "copy_gbps": ceilings["copy"]["gbps"],
            **({metrics.COPY_CURVE: curve} if curve else {}),
            **{metrics.CEILINGS[math][0]: ceilings[key]["gflops"] for key, _, _, math in TENSOR if key in ceilings},
            "launch_overhead_ms": ceilings["launch_overhead"]["median_ms"]}


def committed_path(device) -> Path:
    return report_dir(device.slug) / "ceilings.json"


def complete(ceilings: dict) -> bool:
    """Whether a stored ceilings file has every ceiling this version measures."""
    return all(key in ceilings for key in ("launch_overhead", "ffma", "mma_sync_fp16", "copy",
                                           *(k for k, *_ in TENSOR)))


def load_or_measure(device, settings, clocks, remeasure: bool = False, uuid: str | None = None) -> tuple[dict, str]:
    """(ceilings, where they come from). Looked up in the cache, then in the committed
    ``reports/<gpu>/ceilings.json``; measured (and cached) when neither holds this GPU's. With
    ``uuid`` (one GPU of several) only that GPU's own cache counts: each GPU is measured."""
    path = cache_path(device, uuid)
    if not remeasure:
        for source in (path,) if uuid else (path, committed_path(device)):
            if source.is_file():
                cached = json.loads(source.read_text())
                if cached.get("device", {}).get("name") == device.name and complete(cached):
                    return cached, str(source)
    result = measure(device, settings, clocks)
    write(path, result)
    return result, "measured now"


def markdown(ceilings: dict) -> str:
    from tabulate import tabulate

    def pct(value, peak):
        return num(100 * value / peak if peak else None, ".1f", " %")

    def gflops(value):
        return num(value, ",.0f", " GFLOPS")

    f, c, lo = ceilings["ffma"], ceilings["copy"], ceilings["launch_overhead"]
    rows = [["FP32 FFMA loop", gflops(f["gflops"]), gflops(f["theoretical_gflops"]),
             pct(f["gflops"], f["theoretical_gflops"]), f"{f['median_ms']:.4f}"]]
    if "mma_sync_fp16" in ceilings:
        m = ceilings["mma_sync_fp16"]
        rows.append(["FP16 mma.sync loop (m16n8k16, FP32 accumulate; legacy warp-level MMA)", gflops(m["gflops"]),
                     gflops(m["theoretical_gflops"]), pct(m["gflops"], m["theoretical_gflops"]),
                     f"{m['median_ms']:.4f}"])
    for key, dtype, fp32_precision, math in TENSOR:
        if key in ceilings:
            t = ceilings[key]
            what = dtype if fp32_precision == "ieee" else f"{dtype}, {fp32_precision}"
            rows.append([f"{math.upper()} tensor cores (best cuBLAS GEMM, {what}, "
                         + "×".join(str(v) for v in t["shape"].values()) + ")", gflops(t["gflops"]),
                         gflops(t["theoretical_gflops"]), pct(t["gflops"], t["theoretical_gflops"]),
                         f"{t['median_ms']:.4f}"])
    rows += [["device copy (read + write, 2 GiB)", f"{c['gbps']:,.0f} GB/s", f"{c['theoretical_gbps']:,.0f} GB/s",
              pct(c["gbps"], c["theoretical_gbps"]), f"{c['median_ms']:.4f}"],
             ["empty kernel (launch overhead)", f"{lo['median_ms'] * 1e3:.2f} µs", "—", "—", f"{lo['median_ms']:.4f}"]]
    dev = ceilings["device"]
    sheet = dev.get("datasheet_tensor_clock_mhz")
    by_size = []
    if ceilings.get("copy_by_size"):
        by_size = ["## Device copy by size", "",
                   "What a memory-bound kernel moving that many bytes can reach here, cold (L2 flushed before "
                   "each sample), its launch and ramp included; bytes moved = read + written.", "",
                   tabulate([[f"{c['bytes_moved'] / 2**20:,.0f} MiB", f"{c['gbps']:,.0f} GB/s",
                              pct(c["gbps"], ceilings["copy"]["theoretical_gbps"]), f"{c['median_ms']:.4f}"]
                             for c in ceilings["copy_by_size"]],
                            ["bytes moved", "measured", "% of theoretical", "median ms"], tablefmt="github",
                            disable_numparse=True), ""]
    return "\n".join([
        f"# Measured ceilings on {dev['name']}", "",
        "Generated by `python -m study ceilings`; timed by the study's runner (cold mode, median).", "",
        tabulate(rows, ["ceiling", "measured", "theoretical", "% of theoretical", "median ms"],
                 tablefmt="github", disable_numparse=True), "",
        "Theoretical compute peaks: " + dev.get("peak_source", "") + f", at the max SM clock "
        f"({dev['max_sm_clock_mhz']:.0f} MHz)"
        + (f"; NVIDIA's datasheet quotes the tensor peaks at {sheet:.0f} MHz, 8 % lower" if sheet else "")
        + ". Theoretical memory: 2 × max memory clock × bus width / 8.", "", *by_size])

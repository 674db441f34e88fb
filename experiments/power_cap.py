"""What bounds GEMM + bias + ReLU at 8192³ BF16 on the H200: the 700 W cap? (issue: the fusion study)

At 8192³ every tensor-core kernel here draws the board to its power limit and the SM clock falls
from 1980 MHz to 1500–1750 (the clocks recorded with reports/h200/gemm-bias-relu.md), so TFLOPS
is work per joule times 700 W rather than work per cycle times the maximum clock, and a faster
kernel per cycle can come out slower per second. This runs each implementation back to back, first
WARM seconds untimed (the clock settles under the cap), then SECONDS timed by CUDA events while
NVML's power draw, SM clock and throttle reasons are sampled every 20 ms over the same window, and
prints per implementation: TFLOPS, mean power, mean SM clock, TFLOPS per kW (= GFLOP per J) and
FLOP per SM cycle (TFLOPS / (clock · SMs)). (The run quoted in the docs, at 055c134, timed the whole
4 s burst and averaged NVML over its last 3 s; this version times and samples one window.) Each result passes the op's gate first. docs/ladders/gemm_bias_relu.md
quotes one run.

    python experiments/power_cap.py [M N K] [--dtype bf16|fp16]     (repository root, on a GPU)
"""

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from study.child import ready_launch as _launch  # noqa: E402  (the implementation prepared at its declared config)

WARM, SECONDS = 1.0, 3.0
IMPLEMENTATIONS = ["gemm_bias_relu/v2_fused_wgmma/cuda", "gemm_bias_relu/v2_fused_wgmma/triton",
                   "gemm_bias_relu/nvmath_relu_bias/cublaslt", "gemm_bias_relu/eager_relu_matmul_bias/cublas",
                   "gemm_bias_relu/v0_unfused/cuda", "hgemm/v8_warp_specialized/cuda",
                   "hgemm/v8_warp_specialized/triton", "hgemm/torch_matmul/cublas"]


class Sampler(threading.Thread):
    """NVML power (W), SM clock (MHz) and whether a power-cap throttle reason was set, every 20 ms."""

    def __init__(self, handle):
        super().__init__(daemon=True)
        self.handle, self.samples, self.stop = handle, [], threading.Event()

    def run(self):
        import pynvml

        cap = pynvml.nvmlClocksThrottleReasonSwPowerCap | pynvml.nvmlClocksThrottleReasonHwPowerBrakeSlowdown
        while not self.stop.is_set():
            self.samples.append((pynvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0,
                                 pynvml.nvmlDeviceGetClockInfo(self.handle, pynvml.NVML_CLOCK_SM),
                                 bool(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(self.handle) & cap)))
            time.sleep(0.02)


def _launch_for(fn, seconds: float) -> int:
    """Launch ``fn`` back to back for about ``seconds`` of host time; returns the launches."""
    launches, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            fn()
        launches += 20
        if launches % 200 == 0:  # keep the host within a few hundred launches of the GPU
            torch.cuda.current_stream().synchronize()
    return launches


def burst(fn, flops, handle):
    """WARM s of launches untimed, then SECONDS timed by events and sampled by NVML: one window."""
    _launch_for(fn, WARM)
    torch.cuda.synchronize()
    sampler = Sampler(handle)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sampler.start()
    start.record()
    launches = _launch_for(fn, SECONDS)
    end.record()
    torch.cuda.synchronize()
    sampler.stop.set()
    sampler.join()
    steady = sampler.samples
    tflops = flops * launches / (start.elapsed_time(end) / 1e3) / 1e12
    watts = statistics.fmean(s[0] for s in steady)
    mhz = statistics.fmean(s[1] for s in steady)
    capped = sum(s[2] for s in steady) / len(steady)
    return tflops, watts, mhz, capped


def main() -> None:
    import pynvml

    parser = argparse.ArgumentParser()
    parser.add_argument("shape", nargs="*", type=int, default=[8192, 8192, 8192])
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    args = parser.parse_args()
    m, n, k = args.shape
    from study.hardware import _nvml_handle

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    handle = _nvml_handle(props)  # by UUID: NVML and CUDA may number the GPUs differently
    limit = pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0
    sms = props.multi_processor_count
    print(f"{props.name} power limit {limit:.0f} W, {sms} SMs; {m}x{n}x{k} {args.dtype}, "
          f"{WARM:.0f} s + {SECONDS:.0f} s timed of back-to-back launches each", flush=True)
    print(f"{'implementation':48s} {'TFLOPS':>7s} {'W':>5s} {'MHz':>5s} {'capped':>6s} {'TFLOPS/kW':>9s} "
          f"{'FLOP/cycle/SM':>13s}", flush=True)
    for name in IMPLEMENTATIONS:
        try:
            _, problem, shape, launch, ref, scale, precision = _launch(name, f"{m}x{n}x{k}", precision_name=args.dtype)
            with launch.context():
                launch.fn()
                torch.cuda.synchronize()
                verdict = problem.verify(launch.out, ref, scale, precision)
                if not verdict.ok:
                    print(f"{name:48s} WRONG: {verdict.message}", flush=True)
                    continue
                del ref, scale
                tflops, watts, mhz, capped = burst(launch.fn, problem.flops(shape), handle)
        except Exception as exc:  # a refusal (no nvmath, no sm_90a) is a finding, not a crash
            print(f"{name:48s} not run: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}", flush=True)
            continue
        print(f"{name:48s} {tflops:7.1f} {watts:5.0f} {mhz:5.0f} {capped:6.0%} {tflops / watts * 1e3:9.1f} "
              f"{tflops * 1e12 / (mhz * 1e6 * sms):13.0f}", flush=True)
        time.sleep(2.0)  # let the board cool a little between bursts


if __name__ == "__main__":
    main()

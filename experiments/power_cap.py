"""What bounds GEMM + bias + ReLU at 8192³ BF16 on the H200: the 700 W cap? (issue: the fusion study)

At 8192³ every tensor-core kernel here draws the board to its power limit and the SM clock falls
from 1980 MHz to 1500–1750 (the clocks recorded with reports/h200/gemm-bias-relu.md), so TFLOPS
is work per joule times 700 W rather than work per cycle times the maximum clock, and a faster
kernel per cycle can come out slower per second. This runs each implementation back to back for
SECONDS (hot: the steady state the cap settles into), sampling NVML's power draw, SM clock and
throttle reasons every 20 ms, and prints per implementation: TFLOPS from CUDA events over the
whole burst, mean power, mean SM clock, TFLOPS per kW (= GFLOP per J) and FLOP per SM cycle
(TFLOPS / (clock · SMs)). Each result passes the op's gate first. docs/ladders/gemm_bias_relu.md
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

from study.backends import backend  # noqa: E402
from study.registry import implementation, ladder  # noqa: E402

SECONDS = 4.0
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


def burst(fn, flops, handle):
    """Launch ``fn`` back to back for SECONDS; TFLOPS from events, NVML figures from the last 3/4."""
    fn()
    torch.cuda.synchronize()
    sampler = Sampler(handle)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    launches, t0 = 0, time.perf_counter()
    sampler.start()
    start.record()
    while time.perf_counter() - t0 < SECONDS:
        for _ in range(20):
            fn()
        launches += 20
        if launches % 200 == 0:  # keep the host within a few hundred launches of the GPU
            torch.cuda.current_stream().synchronize()
    end.record()
    torch.cuda.synchronize()
    sampler.stop.set()
    sampler.join()
    steady = sampler.samples[len(sampler.samples) // 4:]
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
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    limit = pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name()} power limit {limit:.0f} W, {sms} SMs; {m}x{n}x{k} {args.dtype}, "
          f"{SECONDS:.0f} s of back-to-back launches each", flush=True)
    print(f"{'implementation':48s} {'TFLOPS':>7s} {'W':>5s} {'MHz':>5s} {'capped':>6s} {'TFLOPS/kW':>9s} "
          f"{'FLOP/cycle/SM':>13s}", flush=True)
    for name in IMPLEMENTATIONS:
        impl = implementation(name)
        problem = ladder(impl.op).problem
        precision = problem.precision(args.dtype)
        shape = dict(zip(problem.axes, (m, n, k)))
        tensors = problem.make_inputs(shape, precision, 0, "cuda")
        ref, scale = problem.reference(tensors, precision)
        try:
            launch = backend(impl.backend).prepare(impl, problem, tensors, shape, precision)
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

"""Device facts and theoretical peaks.

Theoretical FP32 peak = SMs × max SM clock × FP32 FLOP per clock per SM. The clock
is NVML's maximum SM clock (1980 MHz on the H200; ``torch``'s ``clock_rate`` when
NVML is missing). FLOP/clock/SM are 2 × the FP32 lanes per SM of each architecture,
from NVIDIA's architecture whitepapers (Volta, Turing, Ampere GA100 and GA102, Ada,
Hopper, Blackwell) as collected in ../shared/TOOLCHAIN.md §5.2; e.g. H100/H200 SXM:
132 × 256 × 1.98 GHz = 66.9 TFLOPS, the datasheet's FP32 figure.

Memory peak = 2 (double data rate) × max memory clock × bus width / 8.
"""

from __future__ import annotations

import dataclasses
import warnings

# compute capability -> FP32 FLOP per clock per SM (2 × FP32 lanes).
FP32_FLOP_PER_CLK_PER_SM = {
    (7, 0): 128,   # V100: 64 FP32 lanes
    (7, 5): 128,   # Turing: 64
    (8, 0): 128,   # A100: 64
    (8, 6): 256,   # GA10x: 128
    (8, 7): 256,   # Orin: 128
    (8, 9): 256,   # Ada: 128
    (9, 0): 256,   # Hopper: 128
    (10, 0): 256,  # Blackwell B200: 128
    (12, 0): 256,  # Blackwell GeForce/RTX Pro: 128
}
PEAK_SOURCE = ("SMs × max SM clock (NVML) × FP32 FLOP/clock/SM for the compute capability "
               "(NVIDIA architecture whitepapers; 256 on sm_90)")


@dataclasses.dataclass(frozen=True)
class Device:
    name: str
    slug: str
    capability: tuple[int, int]
    sms: int
    max_sm_clock_mhz: float
    max_mem_clock_mhz: float
    bus_width_bits: int
    l2_bytes: int
    memory_bytes: int
    driver: str
    clock_source: str

    @property
    def fp32_peak_flops(self) -> float | None:
        per_clk = FP32_FLOP_PER_CLK_PER_SM.get(tuple(self.capability))
        if per_clk is None:
            return None
        return self.sms * self.max_sm_clock_mhz * 1e6 * per_clk

    @property
    def memory_peak_bytes(self) -> float:
        return 2 * self.max_mem_clock_mhz * 1e6 * self.bus_width_bits / 8

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["capability"] = list(self.capability)
        data["fp32_peak_gflops"] = None if self.fp32_peak_flops is None else self.fp32_peak_flops / 1e9
        data["memory_peak_gbps"] = self.memory_peak_bytes / 1e9
        data["peak_source"] = PEAK_SOURCE
        return data


def slug(name: str) -> str:
    """'NVIDIA H200' -> 'h200': the folder name of a GPU's reports."""
    words = name.lower().replace("nvidia", "").replace("geforce", "").split()
    return "-".join("".join(c for c in w if c.isalnum()) for w in words if w) or "gpu"


def _nvml_handle(props):
    import pynvml

    pynvml.nvmlInit()
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
        except pynvml.NVMLError:
            pass
    import torch

    return pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())


def current_device() -> Device:
    """Facts of torch's current CUDA device; NVML for clocks and driver where it works."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    sm_clock = getattr(props, "clock_rate", 0) / 1000
    mem_clock = getattr(props, "memory_clock_rate", 0) / 1000
    bus = getattr(props, "memory_bus_width", 0)
    driver, source = "unknown", "torch device properties"
    try:
        import pynvml

        handle = _nvml_handle(props)
        sm_clock = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
        mem_clock = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
        bus = pynvml.nvmlDeviceGetMemoryBusWidth(handle) or bus
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
        source = "NVML"
    except Exception as exc:  # NVML missing or refusing: fall back, and say so
        warnings.warn(f"NVML unavailable ({exc}); clocks come from torch's device properties")
    return Device(name=props.name, slug=slug(props.name), capability=(props.major, props.minor),
                  sms=props.multi_processor_count, max_sm_clock_mhz=float(sm_clock),
                  max_mem_clock_mhz=float(mem_clock), bus_width_bits=int(bus),
                  l2_bytes=int(props.L2_cache_size), memory_bytes=int(props.total_memory),
                  driver=driver, clock_source=source)


# NVML clock-event ("throttle") reason bits, from nvml.h.
THROTTLE_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
    0x100: "display_clocks",
}


IDLE = 0x1  # "the GPU is idle": not a throttle


def decode_reasons(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


class Clocks:
    """Current SM clock and clock-event reasons through NVML; ``available`` is False (and
    every reading None) where NVML does not answer, with one warning, never an error."""

    def __init__(self):
        self.available = False
        self._handle = None
        try:
            import pynvml
            import torch

            self._nvml = pynvml
            self._handle = _nvml_handle(torch.cuda.get_device_properties(torch.cuda.current_device()))
            self._reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
            self.sm_mhz()
            self.available = True
        except Exception as exc:
            warnings.warn(f"NVML cannot read clocks ({exc}): clocks are recorded as unknown")

    def sm_mhz(self) -> float | None:
        if self._handle is None:
            return None
        try:
            return float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
        except Exception:
            return None

    def reasons(self) -> int:
        if self._handle is None:
            return 0
        try:
            return int(self._reasons(self._handle))
        except Exception:
            return 0

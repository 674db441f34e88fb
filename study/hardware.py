"""Device facts and the one table of theoretical peaks.

Compute peak = SMs × max SM clock × FLOP per clock per SM for (architecture, math mode).
FLOP/clock/SM are dense rates (no sparsity) from NVIDIA's architecture whitepapers and
datasheets, derived as datasheet peak ÷ (SMs × boost clock) and collected in
docs/toolchain.md §5.2; an FMA counts 2 FLOP. E.g. H100/H200 SXM (sm_90): FP32 256,
TF32 2048, FP16/BF16 4096, so 132 × 256 × 1.98 GHz = 66.9 TFLOPS FP32.

The clock is NVML's maximum SM clock (1980 MHz on the H200; torch's ``clock_rate`` when NVML
is missing) for every unit. NVIDIA's Hopper datasheets quote the *tensor* peaks at 1830 MHz
(989.4 TFLOPS BF16 dense); at 1980 MHz the same rate gives 1070.5, 8 % more. Reports use the
max-clock figure (the harder one to reach) and name the datasheet figure beside it.

Memory peak = 2 (double data rate) × max memory clock × bus width / 8 (4.81 TB/s on the H200).
"""

from __future__ import annotations

import dataclasses
import warnings

# (compute capability) -> {math mode: dense FLOP per clock per SM}. "3xtf32" is a third of
# "tf32": three tensor-core products per FP32-accurate one.
PEAK_FLOP_PER_CLK_PER_SM = {
    (7, 0): {"ieee": 128, "fp16": 1024},                                  # V100: 80 × 1.53 GHz × 1024 = 125 TF
    (7, 5): {"ieee": 128, "fp16": 1024},                                  # Turing: T4 40 × 1.59 GHz × 1024 = 65 TF
    (8, 0): {"ieee": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048},      # A100
    (8, 6): {"ieee": 256, "tf32": 512, "fp16": 1024, "bf16": 1024},       # GA10x (pro; GeForce halves TF32/FP16-acc32)
    (8, 7): {"ieee": 256, "tf32": 512, "fp16": 1024, "bf16": 1024},       # Orin
    (8, 9): {"ieee": 256, "tf32": 512, "fp16": 1024, "bf16": 1024},       # Ada (pro)
    (9, 0): {"ieee": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096},      # H100/H200 SXM
    (10, 0): {"ieee": 256},                                               # B200 (tensor rates not verified here)
    (12, 0): {"ieee": 256},                                               # Blackwell GeForce/RTX Pro (idem)
}
# Architectures whose datasheets quote tensor peaks at a clock other than the max SM clock.
DATASHEET_TENSOR_CLOCK_MHZ = {(9, 0): 1830.0}
TENSOR_MATH = ("tf32", "3xtf32", "fp16", "bf16")
PEAK_SOURCE = ("SMs × max SM clock (NVML) × dense FLOP/clock/SM for (architecture, math mode), "
               "from NVIDIA whitepapers and datasheets (docs/toolchain.md §5.2); on sm_90: FP32 256, "
               "TF32 2048, FP16/BF16 4096")
MEMORY_PEAK_SOURCE = "2 × max memory clock × bus width / 8"


def flop_per_clk_per_sm(capability, math: str) -> float | None:
    rates = PEAK_FLOP_PER_CLK_PER_SM.get(tuple(capability), {})
    if math == "3xtf32":
        return rates["tf32"] / 3 if "tf32" in rates else None
    return rates.get(math)


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

    def peak_flops(self, math: str) -> float | None:
        """Theoretical FLOP/s of the unit that does ``math``, at the max SM clock."""
        per_clk = flop_per_clk_per_sm(self.capability, math)
        return None if per_clk is None else self.sms * self.max_sm_clock_mhz * 1e6 * per_clk

    @property
    def memory_peak_bytes(self) -> float:
        return 2 * self.max_mem_clock_mhz * 1e6 * self.bus_width_bits / 8

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["capability"] = list(self.capability)
        peaks = {m: self.peak_flops(m) for m in ("ieee", *TENSOR_MATH)}
        data["peaks_gflops"] = {m: v / 1e9 for m, v in peaks.items() if v is not None}
        data["peak_clock_mhz"] = self.max_sm_clock_mhz
        datasheet = DATASHEET_TENSOR_CLOCK_MHZ.get(tuple(self.capability))
        if datasheet:
            data["datasheet_tensor_clock_mhz"] = datasheet
            data["datasheet_peaks_gflops"] = {m: v * datasheet / self.max_sm_clock_mhz
                                              for m, v in data["peaks_gflops"].items() if m in TENSOR_MATH}
        data["fp32_peak_gflops"] = data["peaks_gflops"].get("ieee")
        data["memory_peak_gbps"] = self.memory_peak_bytes / 1e9
        data["peak_source"] = PEAK_SOURCE
        data["memory_peak_source"] = MEMORY_PEAK_SOURCE
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


def nvml_facts() -> dict:
    """What NVML says about the current GPU beyond its clocks: UUID, power limit, persistence,
    ECC and MIG modes, driver. Each fact is None where NVML cannot tell (or is missing)."""
    facts = {"uuid": None, "power_limit_w": None, "persistence_mode": None, "ecc_mode": None, "mig_mode": None,
             "driver": None}
    try:
        import pynvml
        import torch

        handle = _nvml_handle(torch.cuda.get_device_properties(torch.cuda.current_device()))
    except Exception:
        return facts
    reads = {
        "uuid": lambda: pynvml.nvmlDeviceGetUUID(handle),
        "power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000,
        "persistence_mode": lambda: bool(pynvml.nvmlDeviceGetPersistenceMode(handle)),
        "ecc_mode": lambda: bool(pynvml.nvmlDeviceGetEccMode(handle)[0]),
        "mig_mode": lambda: bool(pynvml.nvmlDeviceGetMigMode(handle)[0]),
        "driver": lambda: pynvml.nvmlSystemGetDriverVersion(),
    }
    for key, read in reads.items():
        try:
            value = read()
            facts[key] = value.decode() if isinstance(value, bytes) else value
        except Exception:  # not supported on this GPU or driver: unknown, not an error
            pass
    return facts


# NVML clock-event ("throttle") reason bits, from nvml.h.
THROTTLE_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
    0x100: "display_clocks",
}


IDLE = 0x1  # "the GPU is idle": not a throttle
SW_POWER_CAP = 0x4  # the driver holds the clock down to keep the board under its power limit


def held_by_power_cap(mask: int) -> bool:
    """Whether the driver's power cap is the only reason the clock is down: the steady state of a
    tensor-core kernel at the 700 W limit (1,380–1,545 MHz at 8192³ on the H200), not a disturbance."""
    return mask & ~IDLE == SW_POWER_CAP


def decode_reasons(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


class Clocks:
    """Current SM clock, board power and clock-event reasons through NVML, and the power limit;
    ``available`` is False (and every reading None) where NVML does not answer, with one warning,
    never an error."""

    def __init__(self):
        self.available = False
        self._handle = None
        self.power_limit_w = None
        try:
            import pynvml
            import torch

            self._nvml = pynvml
            self._handle = _nvml_handle(torch.cuda.get_device_properties(torch.cuda.current_device()))
            self._reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
            self.sm_mhz()
            self.available = True
            self.power_limit_w = pynvml.nvmlDeviceGetPowerManagementLimit(self._handle) / 1000
        except Exception as exc:
            if not self.available:
                warnings.warn(f"NVML cannot read clocks ({exc}): clocks are recorded as unknown")

    def sm_mhz(self) -> float | None:
        if self._handle is None:
            return None
        try:
            return float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
        except Exception:
            return None

    def power_w(self) -> float | None:
        """The board's power draw now (W), or None where NVML cannot tell."""
        if self._handle is None:
            return None
        try:
            return self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000
        except Exception:
            return None

    def reasons(self) -> int:
        if self._handle is None:
            return 0
        try:
            return int(self._reasons(self._handle))
        except Exception:
            return 0

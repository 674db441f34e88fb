"""CUDA backend: ``cuda_kernels/<op>/NN_name.cu`` through ``cupy.RawModule`` (NVRTC).

Each kernel file declares its parameters once, in its header::

    // config: BM=128 BN=128 BK=8 THREADS=256     the defaults (autotune off)
    // space:  BM=64 BN=64 BK=16 THREADS=256      one line per point (autotune on)

They reach NVRTC as ``-D`` defines; the kernel ``static_assert``s its own
constraints. ``common.cuh`` is inlined into the source before compiling, because
CuPy's on-disk cache hashes the source text but not the headers it includes
(TOOLCHAIN.md 1.4): an edited header must change the key.

Modules are cached in this process (by source text and options) and on disk by
CuPy (``CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``). Kernels launch on
torch's current stream, so torch's CUDA events time them, and tensors cross as
DLPack views (no copies).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from typing import Mapping

from study.registry import CUDA_DIR

_INCLUDE = re.compile(r'^\s*#\s*include\s+"common\.cuh"\s*$', re.M)
_HEADER_LINE = re.compile(r"^//\s*(config|space):(.*)$")


class CudaCompileError(RuntimeError):
    """A kernel that did not compile: names the file and carries NVRTC's log."""


@dataclasses.dataclass(frozen=True)
class KernelHeader:
    path: Path
    symbol: str
    params: dict
    space: tuple


def _parse_assignments(text: str, path: Path) -> dict:
    out = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Z][A-Z0-9_]*", key) or not re.fullmatch(r"-?\d+", value):
            raise ValueError(f"{path.name}: cannot read {item!r} in its header; expected NAME=integer")
        out[key] = int(value)
    return out


def read_kernel_header(path: Path) -> KernelHeader:
    """Parameters and autotune space declared in a ``.cu`` file's header."""
    path = Path(path)
    params, space = None, []
    for line in path.read_text().splitlines():
        m = _HEADER_LINE.match(line.strip())
        if not m:
            continue
        values = _parse_assignments(m.group(2), path)
        if m.group(1) == "config":
            if params is not None:
                raise ValueError(f"{path.name}: more than one '// config:' line")
            params = values
        else:
            space.append(values)
    if params is None:
        raise ValueError(f"{path.name}: no '// config: NAME=value ...' line in its header")
    for point in space:
        if set(point) != set(params):
            raise ValueError(f"{path.name}: space point {point} does not set exactly the config's "
                             f"parameters {sorted(params)}")
    if params not in space:
        space.insert(0, dict(params))
    op = path.parent.name
    stem = re.sub(r"^\d+_", "", path.stem)
    rung_prefix = "v" + str(int(path.stem.split("_", 1)[0]))
    return KernelHeader(path=path, symbol=f"{op}_{rung_prefix}_{stem}", params=params, space=tuple(space))


def kernel_source(path: Path) -> str:
    """The kernel's source with ``common.cuh`` inlined (see the module docstring)."""
    common = (CUDA_DIR / "common.cuh").read_text()
    return _INCLUDE.sub(lambda _: common, Path(path).read_text())


def defines(config: Mapping[str, int]) -> tuple[str, ...]:
    return tuple(f"-D{k}={int(v)}" for k, v in sorted(config.items()))


def arch_flag(major: int, minor: int) -> str:
    """``-arch=sm_XY``, with the arch-specific ``a`` suffix from Hopper on (sm_90a enables
    wgmma/setmaxnreg; NVRTC 13 accepts it beside CuPy's own ``-arch``, TOOLCHAIN.md 1.3)."""
    return f"-arch=sm_{major}{minor}{'a' if major >= 9 else ''}"


def nvcc_command(path: Path, config: Mapping[str, int], arch: str, output: Path) -> list[str]:
    """The nvcc line that compiles a kernel the way NVRTC does (used by the CI test)."""
    gencode = f"-gencode=arch=compute_{arch.removeprefix('sm_')},code={arch}"
    return ["nvcc", "-std=c++17", "-cubin", gencode, "-I", str(CUDA_DIR),
            *defines(config), "-o", str(output), str(path)]


_MODULES: dict = {}


def load_function(path: Path, symbol: str, config: Mapping[str, int]):
    """Compile (or fetch from cache) and return the CuPy kernel for one config."""
    import cupy as cp
    from cupy.cuda.compiler import CompileException

    dev = cp.cuda.Device()
    major, minor = (int(c) for c in dev.compute_capability)  # e.g. "90"
    options = ("-std=c++17", arch_flag(major, minor), "-lineinfo", *defines(config))
    source = kernel_source(path)
    key = (dev.id, source, options, symbol)
    if key not in _MODULES:
        module = cp.RawModule(code=source, options=options)
        try:
            function = module.get_function(symbol)
        except CompileException as exc:
            log = str(exc)
            raise CudaCompileError(
                f"{Path(path).relative_to(CUDA_DIR.parent)} failed to compile with "
                f"{' '.join(shlex.quote(o) for o in options)}:\n{log}") from None
        _MODULES[key] = function
    return _MODULES[key]


class StreamCache:
    """torch's current stream as a CuPy stream, looked up at launch time: under CUDA graph
    capture the current stream is the capture stream, and a kernel launched elsewhere is
    silently left out of the graph (TOOLCHAIN.md 2.5). ``Stream.from_external`` replaces
    the deprecated ExternalStream; one CuPy object is kept per torch stream."""

    def __init__(self):
        self._streams = {}

    def current(self):
        import cupy as cp
        import torch

        stream = torch.cuda.current_stream()
        found = self._streams.get(stream.cuda_stream)
        if found is None:
            found = self._streams[stream.cuda_stream] = cp.cuda.Stream.from_external(stream)
        return found


def as_cupy(tensor):
    """A zero-copy CuPy view of a CUDA tensor, refusing layouts a raw kernel would misread."""
    import cupy as cp

    if not tensor.is_cuda:
        raise ValueError("CUDA kernels take CUDA tensors; got one on " + str(tensor.device))
    if not tensor.is_contiguous():
        raise ValueError(f"CUDA kernels index raw pointers and ignore strides: a tensor of shape "
                         f"{tuple(tensor.shape)} with strides {tensor.stride()} must be made "
                         f"contiguous first")
    return cp.from_dlpack(tensor)

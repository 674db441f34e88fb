"""CUDA backend: ``.cu`` rungs through ``cupy.RawModule`` (NVRTC).

Each kernel file declares its parameters, architectures and precisions in its header
(:mod:`study.kernel_header`). Parameters and the precision's storage macro reach NVRTC as
``-D`` defines; the kernel ``static_assert``s its own constraints. Local headers (``common.cuh``,
a shared tile) are inlined into the source before compiling, because CuPy's on-disk cache hashes
the source text but not the headers it includes (docs/toolchain.md 1.4): an edited header must
change the key.

Modules are cached in this process (by source text and options) and on disk by CuPy
(``CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``). Kernels launch on torch's current
stream, so torch's CUDA events time them, and tensors cross as DLPack views (no copies).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path
from typing import Mapping

from study.paths import CUDA_DIR, display

# A quoted include, alone on its line or followed by a comment: a local header missed here would be left
# to NVRTC, which compiles the inlined text from a temporary file and would not find it.
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"[ \t]*(?://[^\n]*)?$', re.M)


class CudaCompileError(RuntimeError):
    """A kernel that did not compile: names the file and carries NVRTC's log."""


def _header(name: str, including: Path) -> Path | None:
    """Where nvcc would find ``#include "name"``: beside the including file, then in cuda_kernels/."""
    for folder in (including.parent, CUDA_DIR):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def kernel_source(path: Path, _seen: set | None = None) -> str:
    """The kernel's source with every quoted local header inlined, each once (``common.cuh``, or a
    tile a rung shares with another op's rung), between ``#line`` directives: compiler errors,
    ``-lineinfo`` and so compute-sanitizer's reports name the real file and line (NVRTC would
    say ``kern.cu``, a temporary name). See the module docstring for why headers are inlined."""
    path = Path(path)
    seen = set() if _seen is None else _seen
    text = path.read_text()

    def inline(match) -> str:
        header = _header(match.group(1), path)
        if header is None:
            return match.group(0)  # a system header: left to the compiler
        after = text.count("\n", 0, match.end()) + 2  # the source line after the #include
        resume = f'#line {after} "{display(path)}"'
        if header.resolve() in seen:
            return f"// {match.group(1)}: inlined above\n{resume}"
        seen.add(header.resolve())
        body = kernel_source(header, seen).split("\n", 1)[1]  # its own first #line is replaced below
        body = body.replace("#pragma once", "// (pragma once: inlined once)")
        return f'#line 1 "{display(header)}"\n{body}\n{resume}'

    return f'#line 1 "{display(path)}"\n' + _INCLUDE.sub(inline, text)


def source_hash(path: Path) -> str:
    """The hash of what a kernel file compiles (its local headers inlined): sanitizer results and
    compare's records name the very source they were made with."""
    return hashlib.sha256(kernel_source(path).encode()).hexdigest()[:16]


def source_hash_of(impl) -> str | None:
    """What a CUDA rung compiled (:func:`source_hash` of its kernel file), so that sanitizer results of
    that very source can be matched to its measurements; None for other backends."""
    return source_hash(impl.target.path) if impl.backend == "cuda" else None


def defines(config: Mapping[str, int]) -> tuple[str, ...]:
    return tuple(f"-D{k}={int(v)}" for k, v in sorted(config.items()))


def arch_flag(major: int, minor: int) -> str:
    """``-arch=sm_XY``, with the arch-specific ``a`` suffix from Hopper on (sm_90a enables
    wgmma/setmaxnreg; NVRTC 13 accepts it beside CuPy's own ``-arch``, docs/toolchain.md 1.3)."""
    return f"-arch=sm_{major}{minor}{'a' if major >= 9 else ''}"


def nvcc_command(path: Path, config: Mapping[str, int], arch: str, output: Path) -> list[str]:
    """The nvcc line that compiles a kernel the way NVRTC does under CuPy (used by the CI test and for
    SASS read without a GPU): the same text, :func:`kernel_source`, written beside ``output`` (``.cu``) and
    compiled from there with no include path, so a header the inlining misses fails here as it fails on the
    GPU; CuPy adds ``-ftz=true`` to every NVRTC compile (docs/toolchain.md 1.1), so FP32 arithmetic flushes
    subnormals here too."""
    number = arch.removeprefix("sm_")
    gencode = f"-gencode=arch=compute_{number},code=sm_{number}"
    source = Path(output).with_suffix(".cu")
    source.write_text(kernel_source(path))
    return ["nvcc", "-std=c++17", "-ftz=true", "-cubin", gencode, *defines(config), "-o", str(output), str(source)]


# One compiled module per (device, source, options), whatever symbols are taken from it: a file with
# two kernels (sgemm v10's partials and its reduction) compiles once; then its functions by symbol.
_MODULES: dict = {}
_FUNCTIONS: dict = {}


def load_function(path: Path, symbol: str, config: Mapping[str, int], smem: int = 0):
    """Compile (or fetch from cache) and return the CuPy kernel for one config; a kernel whose dynamic
    shared memory is above its limit gets the limit raised to ``smem``. The default limit is 48 KiB less the
    kernel's static shared memory, so 48 KiB of dynamic memory or a little less can need it too (softmax v7's
    ring of 3 × 16 KiB beside its barriers)."""
    import cupy as cp
    from cupy.cuda.compiler import CompileException

    dev = cp.cuda.Device()
    major, minor = (int(c) for c in dev.compute_capability)  # e.g. "90"
    options = ("-std=c++17", arch_flag(major, minor), "-lineinfo", *defines(config))
    source = kernel_source(path)
    key = (dev.id, source, options)
    if key + (symbol,) not in _FUNCTIONS:
        module = _MODULES.get(key)
        if module is None:
            module = cp.RawModule(code=source, options=options)
        try:
            function = module.get_function(symbol)  # the first one compiles the module
        except CompileException as exc:
            raise CudaCompileError(f"{display(path)} failed to compile with "
                                   f"{' '.join(shlex.quote(o) for o in options)}:\n{exc}") from None
        _MODULES[key] = module
        _FUNCTIONS[key + (symbol,)] = function
    function = _FUNCTIONS[key + (symbol,)]
    if smem and function.max_dynamic_shared_size_bytes < smem:
        optin = dev.attributes["MaxSharedMemoryPerBlockOptin"]
        if smem > optin:
            raise ValueError(f"{display(path)} asks for {smem} bytes of dynamic shared memory; "
                             f"this GPU allows {optin} per block")
        function.max_dynamic_shared_size_bytes = smem
    return function


def resident_blocks(path: Path, symbol: str, config: Mapping[str, int], threads: int, smem: int) -> int:
    """Blocks of ``threads`` threads and ``smem`` bytes of dynamic shared memory that one SM holds at once
    for the kernel built with ``config``, as the driver counts them from the build's registers and shared
    memory (a launch that plans its grid in waves: sgemm v13). Compiles the kernel (cached). ``load_function``
    gives a RawKernel, which has no ``ptr`` of its own; its ``kernel`` is the driver's function, whose ``ptr``
    CuPy's own attribute queries (``num_regs``) pass to the driver."""
    from cupy_backends.cuda.api import driver

    function = load_function(path, symbol, config, smem=smem)
    return driver.occupancyMaxActiveBlocksPerMultiprocessor(function.kernel.ptr, threads, smem)


def active_clusters(path: Path, symbol: str, config: Mapping[str, int], cluster: int, threads: int,
                    smem: int) -> int | None:
    """Clusters of ``cluster`` blocks (``threads`` threads, ``smem`` bytes of dynamic shared memory each) that the
    GPU runs at once for the kernel built with ``config``, as the driver counts them
    (``cuOccupancyMaxActiveClusters``: a cluster's blocks share a GPC, so on 132 SMs clusters of 8 are not
    132 / 8), for a persistent grid that must be resident to finish in one round (softmax v7); None where the
    driver binding is missing or refuses, so the caller falls back on its own estimate."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        return None
    function = load_function(path, symbol, config, smem=smem)
    launch = cu.CUlaunchConfig()
    launch.gridDimX, launch.gridDimY, launch.gridDimZ = cluster, 1, 1
    launch.blockDimX, launch.blockDimY, launch.blockDimZ = threads, 1, 1
    launch.sharedMemBytes = smem
    attribute = cu.CUlaunchAttribute()
    attribute.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = cluster, 1, 1
    launch.attrs = [attribute]
    launch.numAttrs = 1
    err, count = cu.cuOccupancyMaxActiveClusters(cu.CUfunction(function.kernel.ptr), launch)
    return int(count) if err == cu.CUresult.CUDA_SUCCESS and count > 0 else None


class StreamCache:
    """torch's current stream as a CuPy stream, looked up at launch time: under CUDA graph
    capture the current stream is the capture stream, and a kernel launched elsewhere is
    silently left out of the graph (docs/toolchain.md 2.5). ``Stream.from_external`` replaces
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


def as_cupy(tensor, padded_rows: bool = False):
    """A zero-copy CuPy view of a CUDA tensor, refusing layouts a raw kernel would misread. With
    ``padded_rows`` (a kernel that takes leading dimensions) the rows may be further apart than
    their length — a padded view — as long as each row is contiguous and the batch (if any) is."""
    import cupy as cp

    if not tensor.is_cuda:
        raise ValueError("CUDA kernels take CUDA tensors; got one on " + str(tensor.device))
    rows_ok = (padded_rows and tensor.dim() >= 2 and tensor.stride(-1) == 1
               and tensor.stride(-2) >= tensor.size(-1)
               and (tensor.dim() == 2 or tensor.stride(-3) == tensor.size(-2) * tensor.stride(-2)))
    if not (tensor.is_contiguous() or rows_ok):
        raise ValueError(f"CUDA kernels index raw pointers and ignore strides: a tensor of shape "
                         f"{tuple(tensor.shape)} with strides {tensor.stride()} must be made "
                         f"contiguous first" + (" (or at least each row contiguous)" if padded_rows else ""))
    return cp.from_dlpack(tensor)

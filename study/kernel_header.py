"""What a ``.cu`` file declares about itself, read from its header comment.

Every kernel file states its parameters once, next to the code that uses them::

    // config: BM=128 BN=128 BK=16 THREADS=256   the defaults (autotune off)
    // space:  BM=64 BN=64 BK=16 THREADS=256     one line per point (autotune on)
    // arch:   sm_80                              where it compiles and runs (see Arch)
    // precisions: fp32 fp16 bf16                 the --dtype names it implements

Parameters reach the compiler as ``-D`` defines and the kernel ``static_assert``s its own
constraints. ``arch`` defaults to ``sm_80`` and ``precisions`` to ``fp32``. This module
reads text only: no CUDA, no framework imports.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

_HEADER_LINE = re.compile(r"^//\s*(config|space|arch|precisions):(.*)$")
_ARCH = re.compile(r"sm_(\d+)(\d)(a?)")  # the last digit is the minor version: sm_90a, sm_100a, sm_120
DEFAULT_ARCH = ("sm_80",)
DEFAULT_PRECISIONS = ("fp32",)


@dataclasses.dataclass(frozen=True)
class Arch:
    """``sm_XY``: compute capability X.Y or later (portable code); ``sm_XYa``: exactly X.Y
    (arch-specific instructions such as wgmma and setmaxnreg, which run on cc 9.0 only)."""

    major: int
    minor: int
    specific: bool

    @classmethod
    def parse(cls, text: str, where: str = "") -> "Arch":
        m = _ARCH.fullmatch(text.strip())
        if not m:
            raise ValueError(f"{where}cannot read architecture {text!r}; expected sm_XY or sm_XYa (e.g. sm_80, sm_90a)")
        return cls(int(m.group(1)), int(m.group(2)), bool(m.group(3)))

    @property
    def name(self) -> str:
        return f"sm_{self.major}{self.minor}{'a' if self.specific else ''}"

    def admits(self, capability) -> bool:
        cap = tuple(capability)
        return cap == (self.major, self.minor) if self.specific else cap >= (self.major, self.minor)


@dataclasses.dataclass(frozen=True)
class KernelHeader:
    path: Path
    symbol: str
    params: dict
    space: tuple
    arch: tuple[Arch, ...]
    precisions: tuple[str, ...]

    def arch_reason(self, capability) -> str | None:
        """Why this kernel cannot run on a device of ``capability``, or None."""
        if any(a.admits(capability) for a in self.arch):
            return None
        return (f"{self.path.name} is written for {' '.join(a.name for a in self.arch)}; this GPU is "
                f"sm_{capability[0]}{capability[1]}")

    def test_targets(self) -> tuple[str, ...]:
        """The architectures a compile test builds it for: each declared one, plus sm_90a (the
        H200, where the study runs) when the declaration admits compute capability 9.0."""
        names = [a.name for a in self.arch]
        if "sm_90a" not in names and any(a.admits((9, 0)) for a in self.arch):
            names.append("sm_90a")
        return tuple(names)


def _parse_assignments(text: str, path: Path) -> dict:
    out = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Z][A-Z0-9_]*", key) or not re.fullmatch(r"-?\d+", value):
            raise ValueError(f"{path.name}: cannot read {item!r} in its header; expected NAME=integer")
        out[key] = int(value)
    return out


def symbol_of(path: Path, op: str) -> str:
    """``cuda_kernels/<op>/NN_name.cu`` defines ``<op>_vN_name``."""
    path = Path(path)
    number, _, stem = path.stem.partition("_")
    if not number.isdigit() or not stem:
        raise ValueError(f"{path.name}: a rung's file is named NN_name.cu (e.g. 02_smem_tiling.cu)")
    return f"{op}_v{int(number)}_{stem}"


def read(path: Path, op: str | None = None) -> KernelHeader:
    """The parameters, autotune space, architectures and precisions a ``.cu`` file declares.
    ``op`` names the symbol's prefix (default: the folder name)."""
    path = Path(path)
    params, space, arch, precisions = None, [], None, None
    for line in path.read_text().splitlines():
        m = _HEADER_LINE.match(line.strip())
        if not m:
            continue
        kind, text = m.groups()
        if kind in ("arch", "precisions"):
            if (arch if kind == "arch" else precisions) is not None:
                raise ValueError(f"{path.name}: more than one '// {kind}:' line")
            words = tuple(text.split())
            if not words:
                raise ValueError(f"{path.name}: '// {kind}:' names nothing")
            if kind == "arch":
                arch = tuple(Arch.parse(w, f"{path.name}: ") for w in words)
            else:
                precisions = words
            continue
        values = _parse_assignments(text, path)
        if kind == "config":
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
        space.insert(0, dict(params))  # autotune on always considers the declared config
    return KernelHeader(path=path, symbol=symbol_of(path, op or path.parent.name), params=params,
                        space=tuple(space), arch=arch or tuple(Arch.parse(a) for a in DEFAULT_ARCH),
                        precisions=precisions or DEFAULT_PRECISIONS)

"""The two codecs of the study: shape text and case keys, each written and read in one place.

Shape text (``{"M": 64, "N": 32}`` ↔ ``"64x32"``) is how a shape appears in case keys, file names and
on the command line (``×`` and ``,`` are read too); a report shows the same shape as ``64×32``
(:func:`study.report.labels.shape_label`).

A case key says what one measurement measured, independent of how it came out: implementation,
shape, precision, autotune setting, timing mode, for padded rows (align) the padding, and whether it
was timed in rounds alternating with its op's reference (``paired``)::

    sgemm/v4_double_buffer/cuda|4096x4096x4096|fp32|off|cold[|pad=3][|paired]

The compare flow plans, journals and resumes by it, a worker receives it, ``rerun`` reads a file's
plan back through it, ``diff`` pairs two runs' records and ``merge`` finds duplicates by it. Pure:
no framework import.
"""

from __future__ import annotations

import re
from typing import Mapping, NamedTuple


def shape_text(shape: Mapping[str, int]) -> str:
    """``{"M": 64, "N": 32}`` → ``"64x32"``: the one way a shape is written in keys and files."""
    return "x".join(str(v) for v in shape.values())


def parse_shape(text: str, axes: tuple[str, ...]) -> dict[str, int]:
    """``"4096x4096"`` → ``{"M": 4096, "N": 4096}`` for axes (M, N). A ValueError says which rule
    the text breaks: the form (as many whole numbers as axes) or a size below 1."""
    parts = re.split(r"[x×,]", text.strip().lower())
    if len(parts) != len(axes) or not all(re.fullmatch(r"-?\d+", p) for p in parts):
        raise ValueError(f"shape {text!r} is not of the form {'x'.join(axes)} with whole numbers")
    shape = dict(zip(axes, (int(p) for p in parts)))
    bad = [f"{k}={v}" for k, v in shape.items() if v < 1]
    if bad:
        raise ValueError(f"every size must be at least 1; got {', '.join(bad)}")
    return shape


class CaseKey(NamedTuple):
    implementation: str
    shape: str        # shape text
    precision: str
    autotune: str     # "off", "on", or "n/a" (a baseline without a search of its own)
    mode: str         # "cold", "hot", "graph"
    pad: int = 0      # rows this many elements further apart than their length (align)
    paired: bool = False  # timed in rounds alternating with its op's reference

    @property
    def text(self) -> str:
        key = f"{self.implementation}|{self.shape}|{self.precision}|{self.autotune}|{self.mode}"
        return key + (f"|pad={self.pad}" if self.pad else "") + ("|paired" if self.paired else "")

    @property
    def label(self) -> str:
        """How progress lines name the case: ``impl shape precision mode autotune=… pad=… paired``."""
        tune = "" if self.autotune == "n/a" else f" autotune={self.autotune}"
        pad = f" pad={self.pad}" if self.pad else ""
        return f"{self.implementation} {self.shape} {self.precision} {self.mode}{tune}{pad}" + \
            (" paired" if self.paired else "")

    @classmethod
    def parse(cls, text: str) -> "CaseKey":
        parts = text.split("|")
        paired = len(parts) > 5 and parts[-1] == "paired"
        extra = parts[5:len(parts) - paired]
        if len(parts) < 5 or len(extra) > 1 or (extra and not re.fullmatch(r"pad=\d+", extra[0])):
            raise ValueError(f"{text!r} is not a case key (implementation|shape|precision|autotune|mode[|pad=N]"
                             "[|paired])")
        return cls(*parts[:5], int(extra[0].removeprefix("pad=")) if extra else 0, paired)

    @classmethod
    def of_record(cls, m: dict) -> "CaseKey":
        """The key of a stored measurement (files before precisions and modes: their dtype, cold)."""
        return cls(m["implementation"], shape_text(m["shape"]), m.get("precision") or m["dtype"], m["autotune"],
                   m.get("mode") or "cold", m.get("pad") or 0, bool(m.get("paired")))

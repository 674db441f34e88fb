"""Figures as the reports commit them: a PNG of 256 colours. matplotlib writes RGBA, 8 bits a channel,
for plots of a few dozen colours (a heatmap's colour map a few thousand); a palette of 256 picked by
median cut, without dithering, draws them the same to the eye at about a third of the bytes, and the
reports hold a few hundred figures."""

from __future__ import annotations

import io
from pathlib import Path


def palette(image):
    """A PIL image as a 256-colour palette image; transparent pixels (none of the study's figures has
    any) laid on white first."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "P"):
        image = Image.alpha_composite(Image.new("RGBA", image.size, (255, 255, 255, 255)), image.convert("RGBA"))
    return image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)


def save(fig, path: Path, **savefig_kwargs) -> Path:
    """``fig.savefig(path, **savefig_kwargs)``, written as a 256-colour palette PNG."""
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", **savefig_kwargs)
    buffer.seek(0)
    path = Path(path)
    palette(Image.open(buffer)).save(path, format="PNG", optimize=True)
    return path

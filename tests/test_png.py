"""Figures are written as 256-colour palette PNGs (study/report/png.py): the same picture to the eye
as matplotlib's RGBA file, in a fraction of its bytes."""

import io

import numpy as np
from PIL import Image

from study.report import png


def test_a_figure_is_written_as_a_palette_png_that_looks_like_matplotlibs(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(6, 3))
    axes[0].plot(range(10), [x * x for x in range(10)], marker="o", label="a line")
    axes[0].legend()
    axes[1].imshow(np.linspace(0, 1, 400).reshape(20, 20), cmap="viridis")  # a colour map: many colours
    plain = io.BytesIO()
    fig.savefig(plain, format="png", dpi=80)
    path = png.save(fig, tmp_path / "f.png", dpi=80)
    plt.close(fig)
    ours, theirs = Image.open(path), Image.open(io.BytesIO(plain.getvalue()))
    assert ours.mode == "P" and ours.size == theirs.size and len(ours.getcolors(256 + 1)) <= 256
    difference = np.abs(np.asarray(ours.convert("RGB"), int) - np.asarray(theirs.convert("RGB"), int))
    assert difference.mean() < 1.0 and np.percentile(difference, 99.9) < 24  # the same to the eye
    assert path.stat().st_size < 0.7 * len(plain.getvalue())

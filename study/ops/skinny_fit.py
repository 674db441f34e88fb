"""The skinny-M rungs' weight tile fitted to the product (``FIT_BN=1``): hgemm v10, gemm_bias_relu v4, bgemm v3 and
their twins. Their persistent blocks walk N / BN tiles × K splits; no one BN suits every N. Measured (H200,
cold, one autotune trial a point; reports/h200/experiments/space-7e0cc86 and space-ab2a247): 256 columns at
1×22016×4096 (86 tiles in one round: 50.1 µs against 53.5 at 128, 172 tiles), 64 at 1×6400×1600 (100 tiles:
10.7–10.9 µs against 11.7–12.5 at 128, 12.2–13.6 at 256) and at bgemm's entries of 64 and 128 columns (8.7 →
8.1 µs at 25×16×64×1024, 15.5 → 14.1 at 32×1×128×4096), 128 where every width makes more tiles than SMs
(32×16×4096×128). The rule that picks each of those widths: the narrowest whose tiles do not pass the SMs (an
entry's share over a batch, as the split plan counts them) — the most tiles one round holds, the fewest padded
columns; the declared width where every width's tiles pass them (more than one round whatever the width). The
width only: the winners' stages (4 at K = 128) and MIN_SLICES are not fitted."""

from __future__ import annotations

from study.problem import cdiv

# The widths, each with its space point's threads (a producer warp and BN / 64 consumer warpgroups) and stages (at
# 256 columns five fit beside the widest A box), as the CUDA rung's space declares them; the twin's warps are
# BN / 16, its stages the same.
SKINNY_TILES = {64: {"THREADS": 160, "STAGES": 8}, 128: {"THREADS": 288, "STAGES": 8},
                256: {"THREADS": 544, "STAGES": 5}}


def fitted_bn(n: int, batch: int, sms: int, declared: int) -> int:
    """The weight tile's width for N columns an entry over ``batch`` entries on ``sms`` SMs: the narrowest whose
    tiles an entry are no more than its share of SMs (sms // batch); ``declared`` where every width's are."""
    share = sms // batch
    return next((bn for bn in sorted(SKINNY_TILES) if cdiv(n, bn) <= share), declared)


def fit_defines(defines: dict, shape: dict, sms: int) -> dict:
    """The CUDA rung's defines with BN, THREADS and STAGES of :func:`fitted_bn`'s width where FIT_BN is 1."""
    if not defines.get("FIT_BN"):
        return defines
    bn = fitted_bn(shape["N"], shape.get("batch", 1), sms, defines["BN"])
    return {**defines, "BN": bn, **SKINNY_TILES[bn]}


def fit_twin_meta(meta: dict, shape: dict, sms: int) -> dict:
    """The twin's meta-parameters with the same width where FIT_BN is 1 (``num_warps`` BN / 16 and the stages, as
    its space's points of that width); without, or under the autotuner (no BN here), as given."""
    meta = dict(meta)
    if not meta.get("FIT_BN") or "BN" not in meta:
        return meta
    bn = fitted_bn(shape["N"], shape.get("batch", 1), sms, meta["BN"])
    return {**meta, "BN": bn, "num_warps": bn // 16, "num_stages": SKINNY_TILES[bn]["STAGES"]}


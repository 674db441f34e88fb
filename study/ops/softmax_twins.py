"""The launches of the softmax twins (triton_kernels/softmax.py): a program per row or per ROWS rows, the row
whole in one program while it fits (v4, v5, v7), v6's slices of a row (exchanging through L2 in one launch, else
two launches), v7's persistent grid.
The CUDA rungs' launches are in study/ops/softmax.py; the twins mirror their configs there."""

from __future__ import annotations

import torch

from study.backends.triton_launch import interpreting
from study.problem import cdiv, out_of_scope, sm_count
from triton_kernels import softmax as tk


def twin_launch(kernel, tensors, out, shape, config, precision, rows: bool = False, whole_limit: int | None = None):
    """A twin's launch: a program per row, or per ROWS rows (``rows``: v0's and v5's); ``whole_limit``
    (v4's and v5's): the row whole, a power of two, when it fits in that many bytes (else the
    kernel's two-pass fallback)."""
    x = tensors["X"]
    m, n = shape["M"], shape["N"]
    meta = dict(config)
    if whole_limit is not None:
        meta["WHOLE"] = triton_next_pow2(n)
        meta["FITS"] = whole_fits(meta["WHOLE"], precision.element_bytes, whole_limit)

    def grid(cfg):
        return (cdiv(m, cfg["ROWS"]),) if rows else (m,)

    def fn():
        kernel[grid](x, out, m, n, **meta)

    if whole_limit is not None:
        fn.facts = {"on_chip": int(meta["FITS"])}
    return fn


def whole_fits(whole: int, element_bytes: int, limit: int) -> bool:
    """Whether a twin holds a row of ``whole`` elements (a power of two) in one program's registers: at most
    ``limit`` bytes and at most tk.MAX_WHOLE_VALUES values (more spill; triton_kernels/softmax.py says why)."""
    return whole * element_bytes <= limit and whole <= tk.MAX_WHOLE_VALUES


def rows_twin_launch(kernel, tensors, out, shape, config, precision):
    return twin_launch(kernel, tensors, out, shape, config, precision, rows=True)


def whole_twin_launch(kernel, tensors, out, shape, config, precision):
    return twin_launch(kernel, tensors, out, shape, config, precision, whole_limit=tk.MAX_WHOLE_BYTES)


def warp_rows_twin_launch(kernel, tensors, out, shape, config, precision):
    return twin_launch(kernel, tensors, out, shape, config, precision, rows=True, whole_limit=tk.MAX_WARP_ROW_BYTES)


def _even_slices(n: int, slices: int) -> tuple[int, int]:
    """(slices, columns per slice): ``n`` columns cut into at most ``slices`` of equal width, a multiple of 16."""
    size = cdiv(cdiv(n, slices), 16) * 16
    return cdiv(n, size), size


def split_rows_plan(n: int, element_bytes: int, slice_bytes: int = tk.MAX_WHOLE_BYTES) -> tuple[int, int]:
    """(slices, columns per slice) of v6's twin: the fewest slices of at most ``slice_bytes`` each (the CUDA
    rung's block of 1024 × 8 vectors), at most tk.MAX_SLICES (its cluster of 8), each a multiple of 16
    elements (so that every slice starts as aligned as the row)."""
    return _even_slices(n, min(tk.MAX_SLICES, cdiv(n * element_bytes, slice_bytes)))


def exchange_slices(n: int, values: int) -> tuple[int, int]:
    """(slices, columns per slice) of a row of ``n`` where v6's twin exchanges: the fewest slices of at most
    ``values`` columns, each a multiple of 16, over the row's span — its n columns, 15 more where n is no multiple
    of 16, as the slices lie on 16-element boundaries (triton_kernels/softmax.py: _aligned_slice) and a row may
    start up to 15 columns into its first."""
    span = n if n % 16 == 0 else n + 15
    return _even_slices(span, cdiv(span, values))


def exchange_plan(n: int, sms: int, points=tk.EXCHANGE_POINTS,
                  most: int = tk.EXCHANGE_SLICES) -> tuple[int, int, int] | None:
    """(slices, columns per slice, warps) of v6's twin where its programs exchange a row's statistics: of the
    (values, warps) ``points`` (tk.EXCHANGE_POINTS) whose :func:`exchange_slices` are at most ``most``
    (tk.EXCHANGE_SLICES; 0: never) and the GPU's SMs (a row's programs must all be resident at once), the first,
    unless a later one fills its programs (columns ÷ slices × the power of two a program holds) tk.EXCHANGE_FILL
    times as well; None where none is, or under Triton's interpreter, which runs programs one after another (a
    program would wait for one that never starts)."""
    if interpreting():
        return None

    def fill(plan):
        return n / (plan[0] * triton_next_pow2(plan[1]))

    plans = [(*exchange_slices(n, values), warps) for values, warps in points]
    plans = [p for p in plans if p[0] <= min(most, sms)]
    if not plans:
        return None
    best = plans[0]
    for plan in plans[1:]:
        if fill(plan) >= tk.EXCHANGE_FILL * fill(best):
            best = plan
    return best


def split_rows_twin_launch(kernel, tensors, out, shape, config, precision, slice_bytes: int = tk.MAX_WHOLE_BYTES,
                           exchange_points=None, most_slices: int = tk.EXCHANGE_SLICES):
    """v6's twin: one slice (the row whole in a program, v4's twin: one launch); or, on a GPU, slices of a row
    in the registers of programs that exchange its statistics through L2 (one launch, :func:`exchange_plan` over
    ``exchange_points``, by default tk.EXCHANGE_POINTS, or tk.EXCHANGE_POINTS_16BIT for FP16 and BF16);
    else a program per (row, slice) writing its slice's (maximum, sum) to an FP32 workspace, then a second
    launch that merges a row's pairs and normalises each slice (:func:`normalize_slices`, under
    triton.autotune also inside each timed call: :func:`normalize_after_tuned_stats`). Recorded: ``slices``,
    ``on_chip`` (the row in registers from its read to its write), ``exchange``, and, for an exchange,
    ``num_warps``: the plan's (:func:`exchange_plan`), whatever the config's (which is for a row whole in one
    program), and ``maxnreg`` (tk.EXCHANGE_REGISTERS), except under triton.autotune, whose pick decides."""
    x = tensors["X"]
    m, n = shape["M"], shape["N"]
    slices, size = split_rows_plan(n, precision.element_bytes, slice_bytes)
    one = slices == 1
    fits = one and whole_fits(triton_next_pow2(n), precision.element_bytes, slice_bytes)
    # a row one program holds whole stays there; one it cannot (past MAX_WHOLE_VALUES: FP16/BF16 rows of
    # 32769–65536 would take two passes in it) goes to exchanging programs too, where they can run
    if exchange_points is None:
        exchange_points = tk.EXCHANGE_POINTS_16BIT if precision.element_bytes == 2 else tk.EXCHANGE_POINTS
    plan = None if fits else exchange_plan(n, sm_count(out), exchange_points, most_slices)
    exchange = plan is not None
    planned = {}  # what the plan sets over the config, and the record carries
    if exchange:  # zeroed once: a ticket counter and tagged pairs that no launch resets (triton_kernels/softmax.py)
        one, (slices, size, warps) = False, plan
        stats = torch.zeros(m * slices * 2, dtype=torch.int64, device=out.device)
        sync = torch.zeros(1, dtype=torch.int64, device=out.device)
        if "num_warps" in config:  # not under triton.autotune, whose config would clash with it
            planned = {"num_warps": warps, "maxnreg": tk.EXCHANGE_REGISTERS}  # the registers that keep the plan's
            config = {**config, **planned}                                    # programs an SM
    else:
        stats = torch.empty(1 if one else m * slices * 2, dtype=torch.float32, device=out.device)
        sync = torch.zeros(1, dtype=torch.int32, device=out.device)
    whole = triton_next_pow2(n) if one else triton_next_pow2(size) if exchange else 1
    meta = {**config, "WHOLE": whole, "ONE": one, "FITS": fits, "EXCHANGE": exchange,
            "PAIRS": triton_next_pow2(slices), "FAST": exchange}  # FAST: never under the interpreter (no exchange)

    def fn():
        kernel[(m, slices)](x, out, stats, sync, m, n, size, slices, **meta)
        if not one and not exchange:  # the config the first launch just used: under triton.autotune, the tuned one
            best = getattr(kernel, "best_config", None)
            step = config if best is None else {**best.kwargs, "num_warps": best.num_warps,
                                                "num_stages": best.num_stages}
            normalize_slices(x, out, stats, m, n, size, slices, step)

    fn.facts = {"slices": slices, "on_chip": int(fits or exchange), "exchange": int(exchange), **planned}
    return fn


def normalize_slices(x, out, stats, m, n, size, slices, config):
    """v6's twin, second launch, with the first one's BLOCK and warps."""
    tk.softmax_split_normalize[(m, slices)](x, out, stats, m, n, size, slices, BLOCK=config["BLOCK"],
                                            PAIRS=triton_next_pow2(slices), num_warps=config["num_warps"],
                                            num_stages=config["num_stages"])


def normalize_after_tuned_stats(nargs, exception=None):
    """v6's twin under triton.autotune: each config's second launch inside its timed call (the post_hook),
    as the closure runs it after the tuned config, so that tuning ranks both launches, not the first."""
    if exception is None and not nargs["ONE"] and not nargs["EXCHANGE"]:
        normalize_slices(nargs["x_ptr"], nargs["y_ptr"], nargs["stats_ptr"], nargs["M"], nargs["N"], nargs["SLICE"],
                         nargs["SLICES"], nargs)


def ring_twin_check(shape, precision):
    whole = triton_next_pow2(shape["N"])
    if not whole_fits(whole, precision.element_bytes, tk.MAX_WHOLE_BYTES):
        return out_of_scope(f"v7's twin holds a row whole in one program (at most {tk.MAX_WHOLE_VALUES} values and "
                            f"{tk.MAX_WHOLE_BYTES} bytes); N={shape['N']} rounds up to {whole} (v6's twin takes it)")
    return None


def ring_twin_launch(kernel, tensors, out, shape, config, precision):
    """v7's twin: PER_SM programs an SM (none more than the rows) walking the rows, each row whole. Recorded:
    ``programs`` (of the declared or given config; under triton.autotune the pick's PER_SM decides)."""
    x = tensors["X"]
    m, n = shape["M"], shape["N"]
    sms = sm_count(out)
    meta = {**config, "WHOLE": triton_next_pow2(n)}

    def programs(cfg) -> int:
        return max(1, min(m, sms * cfg["PER_SM"]))

    def fn():
        kernel[lambda cfg: (programs(cfg),)](x, out, m, n, **meta)

    if "PER_SM" in config:
        fn.facts = {"programs": programs(config)}
    return fn


def triton_next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())

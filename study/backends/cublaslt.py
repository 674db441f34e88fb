"""cuBLASLt through nvmath-python (``nvmath.linalg.advanced.Matmul``), a GEMM baseline beside
``torch.matmul``, and the reference of the fused GEMM + bias + ReLU (its ``RELU_BIAS`` epilogue).

What is timed is ``execute`` alone: the ``Matmul`` object is built and planned once, outside the
timed closure. It writes the product into the case's output tensor (``c=out``, ``beta=0``,
``inplace=True``: nothing is allocated per call; with beta 0 cuBLASLt never reads C, so the
gate's NaN poison is only overwritten) on torch's current stream, the stream the runner's events
are recorded on.

Autotune off: the first algorithm of cuBLASLt's heuristic (``plan()`` with nvmath's defaults).
Autotune on: ``plan(limit=ALGORITHMS)`` then ``autotune(iterations=AUTOTUNE_ITERATIONS)``, which
times every planned algorithm with nvmath's own events (on the inputs as they are, flushing L2
between runs) and keeps the fastest first. The chosen algorithm (id, tile, stages, split-K, swizzling) is recorded
with the result, with how many were considered. The gate's extra trials (fresh inputs) plan and
autotune again on their own operands: they check the library on those inputs, and may do so
with another of its algorithms than the one timed.

The compute type follows the precision: ``COMPUTE_32F`` for FP32 (no TF32), FP16 and BF16 (FP32
accumulation, as every kernel here); ``COMPUTE_32F_FAST_TF32`` for TF32.

nvmath-python is optional (``pip install nvmath-python``, an extra of this package): without it
the rows of this baseline are skipped with that reason (:func:`study.backends.library.check`).
"""

from __future__ import annotations

ALGORITHMS = 16            # the heuristic's candidates that autotune times
AUTOTUNE_ITERATIONS = 10   # nvmath's timed runs per candidate
COMPUTE = {"ieee": "COMPUTE_32F", "tf32": "COMPUTE_32F_FAST_TF32", "fp16": "COMPUTE_32F", "bf16": "COMPUTE_32F"}


def _describe(algorithm) -> dict:
    """What identifies a cuBLASLt algorithm, as plain values (each read may be unsupported)."""
    out = {}
    for name in ("algorithm_id", "tile", "stages", "split_k", "reduction_scheme", "cta_swizzling", "cluster_shape"):
        try:
            value = getattr(algorithm, name)
        except Exception:  # an attribute this cuBLASLt does not report
            continue
        out[name] = value if isinstance(value, (bool, int, float, str)) or value is None else str(value)
    return out


def matmul(tensors, out, precision, autotune: bool = False):
    """(the launch closure, what was chosen) for ``out = A @ B``."""
    return _planned(tensors["A"], tensors["B"], out, precision, autotune)


def matmul_bias_relu(tensors, out, precision, autotune: bool = False):
    """(the launch closure, what was chosen) for ``out = relu(A @ B + bias)`` with cuBLASLt's
    ``RELU_BIAS`` epilogue. The epilogue's bias runs along the rows of its result (length M, one
    value per row, broadcast over the columns: a vector of M, or nvmath's ``(M, 1)``) and needs that result
    column-major; this op's bias has one value per column of a row-major C. Both hold for the
    transposed product Cᵀ = Bᵀ·Aᵀ, whose result Cᵀ (N×M, column-major) is C's own memory: views,
    no copies. The bias stays in the storage type (cuBLASLt adds it in the compute type, FP32)."""
    from nvmath.linalg.advanced import MatmulEpilog

    a, b, bias = tensors["A"], tensors["B"], tensors["bias"]
    return _planned(b.transpose(0, 1), a.transpose(0, 1), out.transpose(0, 1), precision, autotune,
                    epilog=MatmulEpilog.RELU_BIAS, epilog_inputs={"bias": bias})


def _planned(a, b, out, precision, autotune: bool, epilog=None, epilog_inputs=None):
    """A planned (and, with ``autotune``, autotuned) ``Matmul`` that writes ``a @ b`` (through
    ``epilog``) into ``out``; the closure that executes it and what was chosen."""
    import torch
    from nvmath.linalg.advanced import Matmul, MatmulComputeType, MatmulOptions, MatmulPlanPreferences

    if precision.math not in COMPUTE:
        raise ValueError(f"cuBLASLt baseline: no compute type for math mode {precision.math!r}")
    compute = getattr(MatmulComputeType, COMPUTE[precision.math])
    stream = torch.cuda.current_stream() if a.is_cuda else None
    mm = Matmul(a, b, c=out, beta=0.0, options=MatmulOptions(inplace=True, compute_type=compute), stream=stream)
    mm.plan(preferences=MatmulPlanPreferences(limit=ALGORITHMS) if autotune else None, epilog=epilog,
            epilog_inputs=epilog_inputs, stream=stream)
    considered = len(mm.algorithms) if autotune else 1  # off: the heuristic's first, whatever it listed
    if autotune:
        mm.autotune(iterations=AUTOTUNE_ITERATIONS, stream=stream)
    info = {"compute_type": COMPUTE[precision.math], "autotuned": bool(autotune),
            "algorithms_considered": considered, "algorithm": _describe(mm.algorithms[0])}
    if epilog is not None:
        info["epilog"] = epilog.name

    def fn():
        # The stream current at the call: the one the timer's events are on, or a graph's capture stream.
        mm.execute(stream=torch.cuda.current_stream() if a.is_cuda else None)

    fn.keep_alive = mm  # the plan lives as long as the closure
    return fn, info

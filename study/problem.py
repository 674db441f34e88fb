"""What every problem (op) provides, the correctness gate shared by all of them, and what a CUDA
rung's launch is made of.

Every hook the session and the backends call on an op is declared here once; an op subclasses
:class:`Problem`, sets the class attributes and implements the hooks it needs: what all its rungs
share (shapes, inputs, reference, work, tolerance, the checks of the op itself). How one rung is
launched is not the op's: the rung declares it (:class:`CudaLauncher`, and a Triton twin its own
launch, study/registry.py). Shapes are dicts keyed by the op's named ``axes``; precisions are
:class:`study.precision.Precision`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import torch

from study import keys
from study.precision import Precision

INT32_MAX = 2**31 - 1  # the largest element offset 32-bit index arithmetic (the Triton twins') reaches


# A launcher's refusal of shapes its rung is not meant for, which another rung of its ladder takes (hgemm
# v10 at M > 64), as distinct from a constraint a case fails: recorded as a skip with its reason like any
# refusal, and read by the tests as the rung's design, not as a regression.
OUT_OF_SCOPE = "outside this rung's scope: "


def out_of_scope(why: str) -> str:
    return OUT_OF_SCOPE + why


def is_out_of_scope(reason: str | None) -> bool:
    return bool(reason) and OUT_OF_SCOPE in reason


def cdiv(a: int, b: int) -> int:
    """Ceiling division: blocks of b that cover a."""
    return -(-a // b)


def offsets_reason(what: str, elements: int) -> str | None:
    """Why ``elements`` of ``what`` are beyond the 32-bit element offsets the Triton twins use, or None."""
    if elements <= INT32_MAX:
        return None
    return f"{what} of {elements} elements is beyond the 32-bit element offsets the Triton twins use (at most {INT32_MAX})"


def rows_vector_aligned(n: int, element_bytes: int, tensors) -> bool:
    """Whether every row of length ``n`` of these row-major tensors starts on 16 bytes: ``n`` a
    multiple of the 16-byte vector and each tensor's base aligned (the kernels' ALIGNED path)."""
    return n % (16 // element_bytes) == 0 and all(t.data_ptr() % 16 == 0 for t in tensors)


DEFAULT_SMS = 132  # where no GPU is visible (the interpreter, CPU tests): the H200's


def sm_count(tensor) -> int:
    """The SMs of the GPU ``tensor`` lives on (DEFAULT_SMS for a CPU tensor): what launches that
    size their grids to the GPU plan with."""
    return torch.cuda.get_device_properties(tensor.device).multi_processor_count if tensor.is_cuda else DEFAULT_SMS


DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one output with the reference.

    ``err`` is the problem's gate metric (for GEMM and GEMV the error of each element divided
    by the error bound's scale, see :meth:`Problem.reference`); ``max_abs`` and ``max_rel``
    are recorded for readers who prefer the plain figures.
    """

    ok: bool
    err: float
    tolerance: float
    max_abs: float
    max_rel: float
    unwritten: int
    message: str


@dataclasses.dataclass(frozen=True)
class CudaLaunch:
    """What a CUDA rung's launch needs: grid, block, kernel arguments, and the bytes of dynamic
    shared memory (above 48 KiB the backend raises the kernel's limit first). ``facts``: what
    the launch decided from the shape (a split count, say), recorded with the config. ``keep``:
    what the arguments point at without holding it (the tensors behind a TMA tensor map).
    ``before``, ``after``: kernels launched first and last, in order (:class:`KernelCall`). ``poison``:
    buffers C passes through on its way out (a staged C that a copy moves into C), which the gate
    fills with NaN along with C (:func:`check_output`)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple
    smem: int = 0
    facts: dict = dataclasses.field(default_factory=dict)
    keep: tuple = ()
    before: tuple["KernelCall", ...] = ()
    after: tuple["KernelCall", ...] = ()
    poison: tuple = ()


@dataclasses.dataclass(frozen=True)
class KernelCall:
    """A kernel that a rung's launch runs before or after its own, on the same stream and inside the
    same timed closure: the unfused rung of a fusion study is another rung's GEMM and then its own
    pointwise kernel (study/ops/gemm_bias_relu.py); a two-pass split-K adds its reduction after its
    GEMM (sgemm v10). ``path`` and ``symbol`` name the kernel (``path`` None: in the rung's own
    file), ``defines`` its compilation, ``launch`` its grid, block and arguments."""

    path: Any
    symbol: str
    defines: Mapping[str, int]
    launch: CudaLaunch


@dataclasses.dataclass(frozen=True)
class CudaLauncher:
    """How a CUDA rung is launched, declared with the rung (``Rung(cuda=..., launch=...)``), never
    chosen by an ``if`` on its name: ``launch(defines, tensors, out, shape, precision)`` builds the
    grid, block, arguments and shared memory (:class:`CudaLaunch`); ``check(params, shape, precision)``
    says why the rung cannot run a case (None: it can), beyond the op's own :meth:`Problem.check`;
    ``defines(config, tensors, out, shape, precision)`` makes the compilation's ``-D`` defines (None:
    the op's :meth:`Problem.cuda_defines`)."""

    launch: Callable[..., CudaLaunch]
    check: Callable[..., str | None] | None = None
    defines: Callable[..., dict] | None = None


def pad_rows(tensor, pad: int):
    """``tensor`` as a view whose rows are ``pad`` elements further apart than their length (a
    leading dimension of width + pad): new storage, the padding NaN, so that a kernel that reads
    it instead of honouring the leading dimension fails the gate. ``pad`` 0: the tensor itself."""
    if not pad:
        return tensor
    import torch

    storage = torch.full((*tensor.shape[:-1], tensor.shape[-1] + pad), float("nan"), dtype=tensor.dtype,
                         device=tensor.device)
    view = storage[..., :tensor.shape[-1]]
    view.copy_(tensor)
    return view


class Problem:
    """Base class of an op: shapes, precisions, inputs, reference, work and tolerance."""

    name: str = ""
    axes: tuple[str, ...] = ()
    bound: str = "compute"                       # or "memory": picks GFLOPS or GB/s and the peak
    precisions: tuple[Precision, ...] = ()
    default_precisions: tuple[str, ...] = ()     # --dtype default; empty: the first precision
    default_shapes: tuple[Mapping[str, int], ...] = ()
    default_modes: tuple[str, ...] = ("cold",)   # --mode default
    headline_shapes: tuple[Mapping[str, int], ...] = ()  # compare without a selection (see headline)
    headline_precisions: tuple[str, ...] = ()    # ... and its precisions; empty: the --dtype default
    sanitize_shapes: tuple[Mapping[str, int], ...] = ()  # small, with a tile tail in every dimension
    tolerance: Mapping[str, float] = {}          # precision name -> largest gate metric that passes
    paddable: bool = False                       # kernels honour leading dimensions: --pad / align run here
    error_metric: str = "max |out − ref| / scale"
    report_sections: tuple = ()                  # study.report.page.Section s its report adds (study/pages.py)

    # ---- shapes ---------------------------------------------------------------
    @property
    def headline(self) -> list[dict[str, int]]:
        """The shapes ``compare`` runs without a selection: ``headline_shapes``, or the first default shape."""
        return [dict(s) for s in (self.headline_shapes or self.default_shapes[:1])]

    @property
    def headline_dtypes(self) -> list[str]:
        """The precisions ``compare`` runs without a selection: ``headline_precisions`` that the op accepts
        (an op that subclasses another may accept fewer than it inherits), else the default ones."""
        accepted = {p.name for p in self.precisions}
        return ([n for n in self.headline_precisions if n in accepted]
                or list(self.default_precisions or [self.precisions[0].name]))

    @property
    def shape_form(self) -> str:
        return "x".join(self.axes)

    def parse_shape(self, text: str) -> dict[str, int]:
        """``"4096x4096"`` → ``{"M": 4096, "N": 4096}`` for axes (M, N); a clear ValueError otherwise."""
        try:
            return keys.parse_shape(text, self.axes)
        except ValueError as exc:
            example = keys.shape_text(self.default_shapes[0]) if self.default_shapes else ""
            form = "of the form" in str(exc) and example
            raise ValueError(f"{self.name}: {exc}" + (f" (e.g. {example})" if form else "")) from None

    def precision(self, name: str) -> Precision:
        for p in self.precisions:
            if p.name == name:
                return p
        raise KeyError(f"{self.name} accepts {', '.join(p.name for p in self.precisions)}; not {name!r}")

    def check(self, shape: Mapping[str, int], precision: Precision) -> str | None:
        """A reason this (shape, precision) cannot be run at all, or None."""
        if precision not in self.precisions:
            return f"{self.name} accepts {', '.join(p.name for p in self.precisions)}; not {precision.name}"
        if any(v < 1 for v in shape.values()):
            return f"{self.name}: sizes must be at least 1"
        return None

    def check_memory(self, shape: Mapping[str, int], precision: Precision, free_bytes: int,
                     trial_sets: int = 0) -> str | None:
        """Whether the case fits: its own tensors, plus ``trial_sets`` more input sets kept with their
        references for the gate trials (about three times the minimum traffic each)."""
        need = self.bytes_needed(shape, precision) + trial_sets * 3 * self.bytes(shape, precision)
        if need > free_bytes:
            return (f"needs about {need / 2**30:.1f} GiB of GPU memory (inputs, output, float64 "
                    f"reference) but {free_bytes / 2**30:.1f} GiB are free")
        return None

    def work(self, shape: Mapping[str, int], precision: Precision) -> dict:
        """What one launch does, stored with every record: FLOPs, minimum bytes, bound."""
        return {"flops": self.flops(shape), "bytes": self.bytes(shape, precision), "bound": self.bound}

    # ---- to implement ---------------------------------------------------------
    def flops(self, shape) -> int:
        raise NotImplementedError

    def bytes(self, shape, precision: Precision) -> int:
        """Minimum device-memory traffic: every input read once, every output written once."""
        raise NotImplementedError

    def bytes_needed(self, shape, precision: Precision) -> int:
        """GPU memory a case needs (inputs, output, reference and its temporaries)."""
        raise NotImplementedError

    def make_inputs(self, shape, precision: Precision, seed: int, device) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def make_output(self, shape, precision: Precision, device) -> torch.Tensor:
        raise NotImplementedError

    def structured_inputs(self, shape, precision: Precision, device) -> dict[str, torch.Tensor] | None:
        """Inputs whose pattern exposes indexing mistakes (small integers laid out by index, exact
        in every storage type), for one more gate trial; None when the op has none."""
        return None

    def reference(self, tensors, precision: Precision) -> tuple[torch.Tensor, torch.Tensor]:
        """(reference in float64, per-element error scale in float64): the gate checks
        max |out − ref| / scale ≤ the precision's tolerance."""
        raise NotImplementedError

    def with_layout(self, tensors, layout: Mapping[str, str]) -> dict[str, torch.Tensor]:
        return dict(tensors)

    # ---- what every CUDA rung of the op shares -----------------------------------
    def cuda_defines(self, config, tensors, out, shape, precision: Precision) -> dict:
        """The ``-D`` defines of one compilation (where the rung's launcher declares none of its own):
        the config, the precision's storage macro, and whatever the op derives from the data (alignment)."""
        return {**config, **precision.cuda_defines}

    # ---- the gate -------------------------------------------------------------
    def metric(self, precision: Precision) -> str:
        """What the gate's error is for ``precision`` (an op may scale errors differently per precision)."""
        return self.error_metric

    def verify(self, out: torch.Tensor, ref: torch.Tensor, scale: torch.Tensor, precision: Precision) -> Verdict:
        """Compare ``out`` with the float64 reference; NaN (the poison) never passes."""
        tol = self.tolerance[precision.name]
        out64 = out.to(torch.float64)
        unwritten = int(torch.isnan(out64).sum())
        diff = (out64 - ref).abs()
        finite = bool(torch.isfinite(diff).all())
        tiny = torch.finfo(torch.float64).tiny
        max_abs = float(diff.max()) if finite else float("inf")
        max_rel = float((diff / ref.abs().clamp_min(tiny)).max()) if finite else float("inf")
        err = float((diff / scale.clamp_min(tiny)).max()) if finite else float("inf")
        if unwritten:
            msg = f"{unwritten} output elements were never written (still NaN)"
        elif not finite:
            msg = "output holds inf or NaN"
        elif err > tol:
            msg = f"error {err:.3g} exceeds the {precision.name} tolerance {tol:.3g}"
        else:
            msg = ""
        return Verdict(ok=not msg, err=err, tolerance=tol, max_abs=max_abs, max_rel=max_rel,
                       unwritten=unwritten, message=msg)


def one_line(exc: BaseException) -> str:
    """An exception as a record's reason: its type and message, at most 4000 characters."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) < 4000 else text[:4000] + " …"


def error_record(verdict: Verdict, problem: Problem, precision: Precision) -> dict:
    """The gate's verdict as a record stores it."""
    return {"err": verdict.err, "tolerance": verdict.tolerance, "max_abs": verdict.max_abs, "max_rel": verdict.max_rel,
            "unwritten": verdict.unwritten, "metric": problem.metric(precision), "message": verdict.message}


def check_output(fn, out, problem: Problem, ref, scale, precision: Precision, poison=()) -> Verdict:
    """The correctness gate: poison the output (and the buffers ``poison`` it passes through on its
    way out), run once, compare with the reference. NaN left anywhere means an element was never
    written."""
    for buffer in (out, *poison):
        buffer.fill_(float("nan"))
    fn()
    if out.is_cuda:
        torch.cuda.synchronize()
    return problem.verify(out, ref, scale, precision)

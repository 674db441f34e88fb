"""GEMM + bias + ReLU, the fusion study: C = relu(A·B + bias), A (M×K), B (K×N) and C (M×N)
row-major, the bias of length N broadcast over the rows; FP16 and BF16 storage with FP32
accumulation (tensor cores), and FP32 (FFMA). The bias is added in FP32 before C's one rounding.

The rungs (docs/ladders/gemm_bias_relu.md) differ only in where the bias and the ReLU happen:
v0 unfused — the best GEMM rung (hgemm v8 for FP16/BF16, sgemm v7 for FP32, at its declared
config) writes C, then a pointwise kernel reads C back and writes it again, both in one timed
closure → v1 the epilogue fused into sgemm v7's FFMA warp tiles (FP32) → v2 the epilogue fused
into hgemm v8's warp-specialised wgmma kernel, applied as each 64 × 64 box of C is staged for its
TMA store (FP16/BF16) → v3 v2 over tiles × K ranges for products of few tiles (hgemm v9's split-K
plan), the epilogue in the reduction that sums the FP32 partials when it splits → v4 hgemm v10's
skinny-M kernel (Cᵀ = Bᵀ·Aᵀ, M ≤ 64 tokens) with the epilogue in its C store, or in its in-launch sum of
the splits.
The bare GEMM those rungs build on is measured by its own op (hgemm or sgemm) at the same shapes; the report's fusion
table sets unfused, fused (v1, v2) and bare side by side (study/report/fusion.py). Baselines: eager
torch (``relu(matmul + bias)`` and ``addmm`` + ``relu_``), ``torch.compile`` (Inductor; its mode
follows the autotune switch and is recorded), and cuBLASLt's ``RELU_BIAS`` epilogue through
nvmath-python, the reference.

Correctness gate. As HGEMM's and SGEMM's, with the bias in the scale: each element's error is
divided by ``(|A|·|B|)_ij + |bias_j| + η`` (η the storage type's smallest normal number), the
scale of the pre-activation's error bound; ReLU cannot add error (|relu(x) − relu(y)| ≤ |x − y|).
The unfused path rounds twice — A·B to the storage type, then relu(C + bias) again — and so do
eager torch and, at small K, cuBLASLt's epilogue: each rounding errs by at most u (2^-11 for FP16,
2^-8 for BF16) of the scale, so a correct result may be 2u off. Simulated with the op's inputs
(K = 1 … 4096, three seeds): two roundings reach 8.0e-4 (FP16) and 6.3e-3 (BF16) at K = 2; on the
H200 the GPU edge test saw 7.1e-4 and 5.8e-3, past the GEMM ops' 7e-4 and 5.5e-3 (one rounding).
Tolerances: 2e-6 (FP32, as SGEMM's: two FP32 roundings are 1.2e-7), 1.2e-3 (FP16) and 9.5e-3
(BF16), 1.2 × the two-rounding bound 2u. What this gate cannot see, unlike HGEMM's: an accumulator
kept in the storage type (with the bias in the scale it errs by 4e-3–5.4e-3 in BF16 at K = 8–512,
inside two roundings); the fused rungs' GEMM is hgemm v8's and sgemm v7's, whose own gates do.
The bias is drawn uniform in [−√K, √K), the order of an output's own size (A·B's entries have a
standard deviation of √K/3 here), so that both mistakes this op can make show against that scale:
a kernel that skips the bias errs by up to about √K / (K/4 + √K) (0.06 at K = 4096, 0.03 at
16384, 0.015 at 65536: above every tolerance up to K ≈ 1.5·10^5), one that skips the ReLU by the
size of the negative outputs, larger still (tests/test_gemm_bias_relu.py shows both fail at every
precision).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from study import draws, registry
from study.backends import cuda, cuda_launch, triton_launch
from study.backends.launch import Unsupported
from study.ops import hgemm
from study.ops.gemm_common import (HALVES, PERSISTENT, STRUCTURED_SEED, TMA_HALVES, Gemm, aligned_defines,
                                   ffma_warp_tile_smem, grid_rows_check, integer_operands, persistent_twin_launch,
                                   tiled, uniform_operands)
from study.ops.tma_staging import staged_launcher
from study.precision import BF16_TENSOR, FP16_TENSOR, FP32
from study.problem import DTYPES, CudaLaunch, CudaLauncher, KernelCall, cdiv, rows_vector_aligned, sm_count
from study.registry import Baseline, Rung, register, twin
from study.report.fusion import BARE, SECTION
from triton_kernels import gemm_bias_relu as tk

TOLERANCE = {"fp32": 2e-6, "fp16": 1.2e-3, "bf16": 9.5e-3}  # 1.2 × two roundings (module docstring)
SMALLEST_NORMAL = {"fp32": 2.0**-126, "fp16": 2.0**-14, "bf16": 2.0**-126}
INDUCTOR_MODE = {False: "default", True: "max-autotune-no-cudagraphs"}


def bare(precision_name: str, backend: str):
    """The implementation of the GEMM rung that v0 runs for this precision on ``backend`` (BARE): another
    op's rung, found in the registry when the case runs (every op is loaded by then)."""
    op, rung = BARE[precision_name]
    return registry.lookup(f"{op}/{rung}/{backend}")


def bias_reason(tensors, shape) -> str | None:
    """Why the bias cannot be this case's: its length or layout (a usage error), or None."""
    bias = tensors.get("bias")
    if bias is None:
        return "gemm_bias_relu needs a bias: a vector of N elements"
    if bias.dim() != 1 or bias.numel() != shape["N"]:
        return (f"the bias must be a vector of N = {shape['N']} elements (one per column of C); "
                f"got shape {tuple(bias.shape)}")
    if bias.stride(0) != 1:
        return f"the bias must be contiguous; got stride {bias.stride(0)}"
    if bias.dtype != tensors["A"].dtype:
        return f"the bias must be in the storage type {tensors['A'].dtype}; got {bias.dtype}"
    return None


def _require_bias(tensors, shape):
    reason = bias_reason(tensors, shape)
    if reason:
        raise ValueError(reason)


def _gemm_operands(tensors):
    return {"A": tensors["A"], "B": tensors["B"]}


class GemmBiasRelu(Gemm):
    name = "gemm_bias_relu"
    precisions = (BF16_TENSOR, FP16_TENSOR, FP32)
    default_precisions = ("bf16", "fp16", "fp32")
    # The GEMM ladders' 4096³ and 8192³, and two MLP layers: a short K (8192×4096×1024), where the
    # epilogue is a larger share of the work, and an LLaMA-7B-like up projection (16384 tokens,
    # 4096 → 11008).
    headline_shapes = ({"M": 8192, "N": 8192, "K": 8192},)
    headline_precisions = ("bf16",)  # cuBLASLt's RELU_BIAS epilogue in BF16: docs/ladders/gemm_bias_relu.md
    default_shapes = ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192},
                      {"M": 8192, "N": 4096, "K": 1024}, {"M": 16384, "N": 11008, "K": 4096})
    # Tails past every tile with 16-byte rows (the TMA rungs read them in place), the same on exact
    # tiles, and N odd, K = 1 (the scalar paths; the TMA rungs stage A, B and C, and v2 loads the last
    # column's bias alone); one tile of 9 K slices (17×72×520), which v3 and v4 split in two, so memcheck
    # and racecheck see their partial planes and the reductions that add the bias (v4 runs at M ≤ 64 only).
    sanitize_shapes = ({"M": 67, "N": 136, "K": 40}, {"M": 128, "N": 256, "K": 64}, {"M": 3, "N": 5, "K": 1},
                       {"M": 17, "N": 72, "K": 520})
    tolerance = TOLERANCE
    paddable = False  # v0's pass and the fused epilogues take C's leading dimension only
    error_metric = "max |out − ref| / (|A|·|B| + |bias| + η), η the storage type's smallest normal number"
    report_sections = (SECTION,)  # what fusion bought (study/report/fusion.py)

    def metric(self, precision) -> str:
        return self.error_metric  # the bias in the scale, at every precision

    def flops(self, shape) -> int:
        """The GEMM's 2·M·N·K; the epilogue's 2·M·N (an add and a max) is left out, as every GEMM
        library counts, so that fused and bare figures are comparable."""
        return 2 * shape["M"] * shape["N"] * shape["K"]

    def bytes(self, shape, precision) -> int:
        m, n, k = shape["M"], shape["N"], shape["K"]
        return precision.element_bytes * (m * k + k * n + m * n + n)

    def bytes_needed(self, shape, precision) -> int:
        m, n, k = shape["M"], shape["N"], shape["K"]
        # A, B, C, bias and eager torch's temporary product in storage; float64 A, B, |A|, |B|;
        # float64 reference, scale and the two temporaries of the comparison.
        return precision.element_bytes * (m * k + k * n + 2 * m * n + n) + 8 * 2 * (m * k + k * n) + 8 * 4 * m * n

    # ---- data -----------------------------------------------------------------
    def make_inputs(self, shape, precision, seed, device):
        """A and B as hgemm draws them, then the bias uniform in [−√K, √K) (see the module docstring)
        from the same generator, rounded to the storage type: the reference uses the values the kernels read."""
        dtype = DTYPES[precision.dtype]
        a, b, bias = draws.uniform(seed, [(shape["M"], shape["K"]), (shape["K"], shape["N"]), (shape["N"],)])
        return {"A": a.to(dtype, copy=True).to(device), "B": b.to(dtype, copy=True).to(device),
                "bias": (bias * shape["K"] ** 0.5).to(dtype).to(device)}

    def structured_inputs(self, shape, precision, device):
        """Small integers: A and B in [−2, 2] as hgemm's, the bias in [−8, 8] (a fixed seed), exact in every
        storage type, so the reference is exact and a misplaced element or bias is off by units."""
        gen, dtype = torch.Generator().manual_seed(STRUCTURED_SEED), DTYPES[precision.dtype]
        a, b = integer_operands(shape, dtype, gen)
        bias = torch.randint(-8, 9, (shape["N"],), generator=gen).to(dtype)
        return {"A": a.to(device), "B": b.to(device), "bias": bias.to(device)}

    def reference(self, tensors, precision):
        a, b, bias = (tensors[k].to(torch.float64) for k in ("A", "B", "bias"))
        return torch.relu(a @ b + bias), a.abs() @ b.abs() + bias.abs() + SMALLEST_NORMAL[precision.name]

    def cuda_defines(self, config, tensors, out, shape, precision):
        """v0's pass: the config, the storage macro and ALIGNED, 1 when every row of C and the bias start
        on 16 bytes (C may be a padded view)."""
        aligned = (rows_vector_aligned(shape["N"], precision.element_bytes, (out, tensors["bias"]))
                   and out.stride(-2) % (16 // precision.element_bytes) == 0)
        return {**super().cuda_defines(config, tensors, out, shape, precision), "ALIGNED": int(aligned)}


# ---- launchers ---------------------------------------------------------------------------------------

def unfused_check(params, shape, precision) -> str | None:
    """v0 is refused what the GEMM it runs is refused (architecture, TMA, grid)."""
    impl = bare(precision.name, "cuda")
    reason = cuda_launch.check(impl, registry.registered()[impl.op].problem, shape, precision)
    return f"its GEMM ({impl.op} {impl.rung}): {reason}" if reason else None


def unfused_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v0: the bare GEMM into C (which one: the precision's, BARE), at its declared config, then the
    pass over C: BLOCKS_PER_SM blocks an SM stride over its rows."""
    _require_bias(tensors, shape)
    impl = bare(precision.name, "cuda")
    operands = _gemm_operands(tensors)
    gemm_defines = impl.launcher.defines(dict(impl.params), operands, out, shape, precision)
    gemm = impl.launcher.launch(gemm_defines, operands, out, shape, precision)
    blocks = sm_count(out) * defines["BLOCKS_PER_SM"]
    args = (cuda.as_cupy(out, padded_rows=True), cuda.as_cupy(tensors["bias"]), np.int32(shape["M"]),
            np.int32(shape["N"]), np.int32(out.stride(-2)))
    # The GEMM runs at its declared config in both autotune settings (only the pass is tuned): recorded.
    config = " ".join(f"{k}={v}" for k, v in impl.params.items())
    return CudaLaunch(grid=(blocks, 1, 1), block=(defines["THREADS"], 1, 1), args=args,
                      facts={"gemm": impl.name, "gemm_config": config,
                             **{f"gemm_{k}": v for k, v in gemm.facts.items()},
                             **({"gemm_smem_bytes": gemm.smem} if gemm.smem else {})},
                      before=(KernelCall(impl.target.path, impl.target.symbol, gemm_defines, gemm),))


def fused(gemm: CudaLauncher, at: int, bias_bytes: int = 1) -> CudaLauncher:
    """A GEMM's launcher with the bias among its kernel's arguments, at position ``at`` (after sgemm's A
    and B pointers: 2; after hgemm v8's three tensor maps: 3); ``bias_bytes``: the alignment the kernel
    loads the bias with. Its checks and defines are the GEMM's. The GEMM's launch is handed the bias
    with A and B: hgemm v9's split launch passes it to the reduction that v3 ends with (``extra``);
    the others read A and B only."""
    def launch(defines, tensors, out, shape, precision):
        _require_bias(tensors, shape)
        bias = tensors["bias"]
        if bias.data_ptr() % bias_bytes:
            raise Unsupported(f"the fused wgmma rungs load the bias in {bias_bytes}-byte pairs: its base must be "
                              f"{bias_bytes}-byte aligned")
        base = gemm.launch(defines, {**_gemm_operands(tensors), "bias": bias}, out, shape, precision)
        args = (*base.args[:at], cuda.as_cupy(bias), *base.args[at:])
        return dataclasses.replace(base, args=args, keep=(*base.keep, bias))  # the GEMM's launch, the bias added

    return CudaLauncher(launch=launch, check=gemm.check, defines=gemm.defines)


def split_k_launch(defines, tensors, out, shape, precision) -> CudaLaunch:
    """v3: hgemm v9's launch (its plan, workspace and grid; :func:`study.ops.hgemm.split_launch`) whose
    reduction, when it splits, is this rung's, the bias after C."""
    return hgemm.split_launch(defines, tensors, out, shape, precision, reduce="gemm_bias_relu_v3_reduce_splits",
                              extra=("bias",))


UNFUSED = CudaLauncher(launch=unfused_launch, check=unfused_check)
FUSED_SIMT = fused(tiled(ffma_warp_tile_smem), at=2)        # sgemm v7's tile
FUSED_WGMMA = fused(PERSISTENT, at=3, bias_bytes=4)         # hgemm v8's kernel
FUSED_PAIRS = fused(hgemm.PAIRS, at=3, bias_bytes=4)        # hgemm v11's kernel and launch (2-block clusters)
# hgemm v9's kernel (as v2's, the bias after the tensor maps); rows TMA cannot take staged inside the launch.
FUSED_SPLIT_K = fused(staged_launcher(CudaLauncher(launch=split_k_launch, defines=aligned_defines(HALVES))), at=3,
                      bias_bytes=4)
# hgemm v10's kernel, the bias after C (its third argument); A staged where TMA cannot take its rows, B then read
# in place, C by plain stores; M ≤ 64 only.
SKINNY_SCOPE = hgemm.skinny_scope("v4", "v2/v3")
FUSED_SKINNY_M = fused(staged_launcher(CudaLauncher(launch=hgemm.skinny_launch, defines=hgemm.skinny_defines),
                                       names=("A",), out=False, check=SKINNY_SCOPE), at=3)


# ---- the Triton twins' launches -------------------------------------------------------------------

def unfused_twin_check(shape, precision) -> str | None:
    impl = bare(precision.name, "triton")
    reason = triton_launch.check(impl, registry.registered()[impl.op].problem, shape, precision)
    return f"its GEMM ({impl.op} {impl.rung} twin): {reason}" if reason else None


def unfused_twin_launch(kernel, tensors, out, shape, config, precision):
    """v0's twin: the bare GEMM twin at its mirrored config, then the pass over C (its row blocks on grid.y)."""
    _require_bias(tensors, shape)
    m, n = shape["M"], shape["N"]
    meta = dict(config)
    smallest = meta.get("BM") or min(c["BM"] for c in tk.POINTWISE_SPACE)
    reason = grid_rows_check({"BM": smallest}, shape, precision)
    if reason:
        raise Unsupported(reason)
    impl = bare(precision.name, "triton")
    gemm = impl.target.launch(impl.target.kernel, _gemm_operands(tensors), out, shape, dict(impl.params), precision)
    bias = tensors["bias"]

    def grid(cfg):
        return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]))

    def fn():
        gemm()
        kernel[grid](out, bias, m, n, out.stride(-2), **meta)

    fn.facts = {f"gemm_{k}": v for k, v in getattr(gemm, "facts", {}).items()}  # e.g. what its GEMM staged
    return fn


def simt_twin_launch(kernel, tensors, out, shape, config, precision):
    """v1's twin: sgemm v7's twin with the epilogue, the bias after A and B."""
    _require_bias(tensors, shape)
    a, b, bias = tensors["A"], tensors["B"], tensors["bias"]
    m, n, k = shape["M"], shape["N"], shape["K"]
    meta = {**config, "INPUT_PRECISION": precision.triton_input_precision}

    def grid(cfg):
        return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]))

    def fn():
        kernel[grid](a, b, bias, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                     out.stride(-2), out.stride(-1), **meta)

    return fn


def wgmma_twin_launch(kernel, tensors, out, shape, config, precision, cluster: int = 1):
    """v2's twin: hgemm v8's persistent twin with the epilogue, the bias after the descriptors; v5's with
    ``cluster`` 2: hgemm v11's (an even grid, programs 2c and 2c + 1 a pair)."""
    _require_bias(tensors, shape)
    return persistent_twin_launch(kernel, tensors, out, shape, config, precision, extra=("bias",), cluster=cluster)


def split_twin_launch(kernel, tensors, out, shape, config, precision):
    """v3's twin: hgemm v9's twin launch with the bias after the descriptors and, in its reduction
    (``reduce_splits_bias_relu``), after C."""
    _require_bias(tensors, shape)
    return hgemm.split_twin_launch(kernel, tensors, out, shape, config, precision, extra=("bias",),
                                   reduce=tk.reduce_splits_bias_relu)


def skinny_twin_check(shape, precision) -> str | None:
    return SKINNY_SCOPE(None, shape, precision)


def skinny_twin_launch(kernel, tensors, out, shape, config, precision):
    """v4's twin: hgemm v10's twin launch with the bias after the descriptors and, in its reduction
    (``reduce_splits_bias_relu``), after C."""
    _require_bias(tensors, shape)
    return hgemm.skinny_twin_launch(kernel, tensors, out, shape, config, precision, extra=("bias",),
                                    reduce=tk.reduce_splits_bias_relu)


def reduce_after_tuned_partials(nargs, exception=None, rows="BM"):
    """v3's and v4's twins under ``triton.autotune``: hgemm v9's post hook (each config's partials reduced
    inside its timed call) with this op's reduction, which takes the bias; ``rows``: the argument holding
    the tile's rows (v4's twin: TOKENS)."""
    hgemm.reduce_after_tuned_partials(nargs, exception, kernel=tk.reduce_splits_bias_relu, extra=("bias_ptr",),
                                      rows=rows)


# ---- baselines ------------------------------------------------------------------
def eager_relu_matmul_bias(tensors, out, precision):
    """``relu(A @ B + bias)`` as eager torch runs it: the product (cuBLAS) into a temporary, the add
    into C, ReLU in place — three kernels, the temporary allocated by torch's caching allocator."""
    a, b, bias = tensors["A"], tensors["B"], tensors["bias"]

    def fn():
        torch.add(torch.matmul(a, b), bias, out=out)
        out.relu_()

    return fn


def eager_addmm_relu(tensors, out, precision):
    """``addmm(bias, A, B)`` then ``relu_``: the bias goes into the GEMM call (torch may hand a 1-D
    bias to cuBLASLt's bias epilogue — its speed at short K suggests so, not verified here), the ReLU
    is a second pass over C."""
    a, b, bias = tensors["A"], tensors["B"], tensors["bias"]

    def fn():
        torch.addmm(bias, a, b, out=out)
        out.relu_()

    return fn


def _relu_matmul_bias_into(a, b, bias, out):
    out.copy_(torch.relu(a @ b + bias))


def compiled_relu_matmul_bias(tensors, out, precision, autotune=False):
    """``torch.compile`` of ``relu(A @ B + bias)`` written into C (Inductor makes the copy into the
    output part of its generated epilogue). Autotune off: mode ``default`` (cuBLAS for the product,
    a generated Triton kernel for bias + ReLU); on: ``max-autotune-no-cudagraphs`` (Inductor also
    tries its Triton GEMM templates with the epilogue fused and keeps the fastest). ``fullgraph``:
    a graph break would be an error, never a silent partial fallback. Compiled (and tuned) at the
    first call, which the runner's gate makes before any timing."""
    import warnings

    import torch._dynamo

    # Inductor suggests TF32 at its first FP32 matmul, in the middle of a run's progress lines; the study
    # chooses TF32 per precision (fp32 off, tf32 on) and records it.
    warnings.filterwarnings("ignore", message="TensorFloat32 tensor cores for float32 matrix multiplication")
    mode = INDUCTOR_MODE[bool(autotune)]
    # Every (shape, dtype, mode) compiles once; past dynamo's default limit it would fall back to eager.
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 256)
    compiled = torch.compile(_relu_matmul_bias_into, mode=mode, dynamic=False, fullgraph=True)
    a, b, bias = tensors["A"], tensors["B"], tensors["bias"]
    return (lambda: compiled(a, b, bias, out)), {"inductor_mode": mode, "dynamic": False, "fullgraph": True}


def nvmath_relu_bias(tensors, out, precision, autotune=False):
    from study.backends import cublaslt

    return cublaslt.matmul_bias_relu(tensors, out, precision, autotune=autotune)


register(
    GemmBiasRelu(),
    rungs=[
        Rung("v0_unfused", "the best GEMM rung writes C (hgemm v8 at FP16/BF16, sgemm v7 at FP32), then a pointwise "
             "kernel reads C back, adds the bias, applies ReLU and writes C again",
             "— (the baseline of fusion: C's extra round trip through HBM and a second launch)",
             cuda="00_unfused.cu", launch=UNFUSED, multiples=TMA_HALVES,  # hgemm v8's, at FP16 and BF16
             triton=twin(tk.bias_relu, tk.V0_UNFUSED, tk.POINTWISE_SPACE, launch=unfused_twin_launch,
                         check=unfused_twin_check, restore=("c_ptr",))),
        Rung("v1_fused_simt", "bias and ReLU on sgemm v7's FFMA accumulators before the store (FP32)",
             "v0's round trip of C and its second launch", cuda="01_fused_simt.cu", launch=FUSED_SIMT,
             triton=twin(tk.gemm_bias_relu_grouped, tk.V1_FUSED_SIMT, tk.SIMT_SPACE, launch=simt_twin_launch,
                         precisions=("fp32",))),
        Rung("v2_fused_wgmma", "bias and ReLU in hgemm v8's epilogue, as each 64 × 64 box of C is staged for its "
             "TMA store (FP16/BF16)", "v0's round trip of C and its second launch", cuda="02_fused_wgmma.cu",
             launch=FUSED_WGMMA, multiples=TMA_HALVES,
             triton=twin(tk.gemm_bias_relu_persistent, tk.V2_FUSED_WGMMA, tk.WGMMA_SPACE, launch=wgmma_twin_launch,
                         precisions=("fp16", "bf16"), pre_hook=tk.descriptor_blocks)),
        Rung("v3_split_k", "v2 over tiles × K ranges where the tiles are fewer than the SMs (hgemm v9's plan), FP32 "
             "partial planes summed in order by a second kernel that adds the bias and applies ReLU",
             "v2's idle SMs on products of few tiles (decode-sized M, skinny products)", cuda="03_split_k.cu",
             launch=FUSED_SPLIT_K, multiples=TMA_HALVES,
             triton=twin(tk.gemm_bias_relu_split_k, tk.V3_SPLIT_K, tk.SPLIT_K_SPACE, launch=split_twin_launch,
                         precisions=("fp16", "bf16"), pre_hook=tk.descriptor_blocks,
                         post_hook=reduce_after_tuned_partials)),
        Rung("v4_skinny_m", "hgemm v10's kernel (Cᵀ = Bᵀ·Aᵀ, the tokens wgmma's N; M ≤ 64) with the bias and ReLU in "
             "its C store, or, when it splits K, where a tile's FP32 partials are summed (by its last unit; the twin: "
             "a second kernel)",
             "v2/v3's 128-row tiles at decode-sized M (idle tensor-core rows, too few weight columns per SM)",
             cuda="04_skinny_m.cu", launch=FUSED_SKINNY_M, multiples=TMA_HALVES,
             triton=twin(tk.gemm_bias_relu_skinny_m, tk.V4_SKINNY_M, tk.SKINNY_M_SPACE, launch=skinny_twin_launch,
                         check=skinny_twin_check, precisions=("fp16", "bf16"), pre_hook=tk.skinny_blocks,
                         post_hook=functools.partial(reduce_after_tuned_partials, rows="TOKENS"))),
        Rung("v5_cluster_multicast", "v2's epilogue on hgemm v11: 2-block clusters walking pairs of tiles that share "
             "their B slices, multicast by TMA into both blocks", "a third of v2's L2 traffic to the SMs (each pair's "
             "B read twice)", cuda="05_cluster_multicast.cu", launch=FUSED_PAIRS, multiples=TMA_HALVES,
             triton=twin(tk.gemm_bias_relu_pairs, tk.V5_CLUSTER_MULTICAST, tk.PAIRS_SPACE,
                         launch=functools.partial(wgmma_twin_launch, cluster=2),
                         precisions=("fp16", "bf16"), pre_hook=tk.descriptor_blocks)),
    ],
    baselines=[
        Baseline("nvmath_relu_bias", "nvmath Matmul, RELU_BIAS epilogue (cuBLASLt)", "cuBLASLt", "cublaslt",
                 nvmath_relu_bias, "nvmath.linalg.advanced.Matmul(epilog=RELU_BIAS)", reference=True, tunable=True,
                 requires="nvmath"),
        Baseline("eager_relu_matmul_bias", "torch.relu(A @ B + bias), eager", "cuBLAS", "cublas",
                 eager_relu_matmul_bias, "torch.matmul, torch.add, Tensor.relu_"),
        Baseline("eager_addmm_relu", "torch.addmm(bias, A, B).relu_(), eager", "cuBLAS", "cublas", eager_addmm_relu,
                 "torch.addmm, Tensor.relu_"),
        Baseline("compiled_relu_matmul_bias", "torch.compile(relu(A @ B + bias))", "Inductor", "inductor",
                 compiled_relu_matmul_bias, "torch.compile", tunable=True),
    ],
    headline=("v0_unfused", "v1_fused_simt", "v2_fused_wgmma", "v5_cluster_multicast"),  # v1: with --dtype fp32
)

"""GEMM + bias + ReLU, the fusion study: C = relu(A·B + bias), A (M×K), B (K×N) and C (M×N)
row-major, the bias of length N broadcast over the rows; FP16 and BF16 storage with FP32
accumulation (tensor cores), and FP32 (FFMA). The bias is added in FP32 before C's one rounding.

The rungs (docs/ladders/gemm_bias_relu.md) differ only in where the bias and the ReLU happen:
v0 unfused — the best GEMM rung (hgemm v8 for FP16/BF16, sgemm v7 for FP32, at its declared
config) writes C, then a pointwise kernel reads C back and writes it again, both in one timed
closure → v1 the epilogue fused into sgemm v7's FFMA warp tiles (FP32) → v2 the epilogue fused
into hgemm v8's warp-specialised wgmma kernel, applied as each 64 × 64 box of C is staged for its
TMA store (FP16/BF16). The bare GEMM those rungs build on is measured by its own op (hgemm or
sgemm) at the same shapes; the report's fusion table sets the three side by side
(study/fusion.py). Baselines: eager torch (``relu(matmul + bias)`` and ``addmm`` + ``relu_``),
``torch.compile`` (Inductor; its mode follows the autotune switch and is recorded), and cuBLASLt's
``RELU_BIAS`` epilogue through nvmath-python, the reference.

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

import numpy as np
import torch

from study.backends import Unsupported
from study.fusion import BARE
from study.precision import BF16_TENSOR, FP16_TENSOR, FP32
from study.problem import DTYPES, CudaLaunch, KernelCall, Problem, cdiv, rows_vector_aligned, sm_count
from study.registry import Baseline, Rung, register, twin
from study.ops.hgemm import STRUCTURED_SEED, integer_operands, operands_reason, uniform_operands
from triton_kernels import gemm_bias_relu as tk

TOLERANCE = {"fp32": 2e-6, "fp16": 1.2e-3, "bf16": 9.5e-3}  # 1.2 × two roundings (module docstring)
SMALLEST_NORMAL = {"fp32": 2.0**-126, "fp16": 2.0**-14, "bf16": 2.0**-126}
GRID_Y = 65535  # CUDA's limit on gridDim.y: the Triton pass's row blocks (v0's twin)
PRECISION_OF = {p.dtype: p for p in (BF16_TENSOR, FP16_TENSOR, FP32)}  # C's dtype names the case's precision
# The GEMM op and rung whose launch each fused rung extends, and where the bias goes in its arguments:
# after sgemm's A and B pointers (A, B, bias, C, ...), after hgemm v8's three tensor maps.
FUSED_ON = {"v1_fused_simt": ("sgemm", "v7_multistage", 2), "v2_fused_wgmma": ("hgemm", "v8_warp_specialized", 3)}
INDUCTOR_MODE = {False: "default", True: "max-autotune-no-cudagraphs"}


def _extended(rung: str):
    """(problem, rung key) of the GEMM whose kernel and launch a fused rung extends."""
    from study.registry import ladder

    op, gemm_rung, _ = FUSED_ON[rung]
    return ladder(op).problem, gemm_rung


def bare(precision_name: str, backend: str):
    """(problem, implementation) of the GEMM rung that v0 runs for this precision on ``backend``."""
    from study.registry import implementation, ladder

    op, rung = BARE[precision_name]
    return ladder(op).problem, implementation(f"{op}/{rung}/{backend}")


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


class GemmBiasRelu(Problem):
    name = "gemm_bias_relu"
    axes = ("M", "N", "K")
    bound = "compute"
    precisions = (BF16_TENSOR, FP16_TENSOR, FP32)
    default_precisions = ("bf16", "fp16", "fp32")
    # The GEMM ladders' 4096³ and 8192³, and two MLP layers: a short K (8192×4096×1024), where the
    # epilogue is a larger share of the work, and an LLaMA-7B-like up projection (16384 tokens,
    # 4096 → 11008).
    default_shapes = ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192},
                      {"M": 8192, "N": 4096, "K": 1024}, {"M": 16384, "N": 11008, "K": 4096})
    # Tails past every tile with 16-byte rows (TMA rungs run), the same on exact tiles, and a shape
    # only the scalar paths take (N odd, K = 1: the TMA rungs skip it with the reason).
    sanitize_shapes = ({"M": 67, "N": 136, "K": 40}, {"M": 128, "N": 256, "K": 64}, {"M": 3, "N": 5, "K": 1})
    tolerance = TOLERANCE
    error_metric = "max |out − ref| / (|A|·|B| + |bias| + η), η the storage type's smallest normal number"

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

    def check(self, shape, precision) -> str | None:
        return super().check(shape, precision) or operands_reason(shape)

    # ---- data -----------------------------------------------------------------
    def make_inputs(self, shape, precision, seed, device):
        """A and B as hgemm draws them, then the bias uniform in [−√K, √K) (see the module docstring)
        from the same generator, rounded to the storage type: the reference uses the values the kernels read."""
        gen, dtype = torch.Generator().manual_seed(seed), DTYPES[precision.dtype]
        a, b = uniform_operands(shape, dtype, gen)
        bias = (torch.rand(shape["N"], generator=gen, dtype=torch.float32) * 2 - 1) * shape["K"] ** 0.5
        return {"A": a.to(device), "B": b.to(device), "bias": bias.to(dtype).to(device)}

    def structured_inputs(self, shape, precision, device):
        """Small integers: A and B in [−2, 2] as hgemm's, the bias in [−8, 8] (a fixed seed), exact in every
        storage type, so the reference is exact and a misplaced element or bias is off by units."""
        gen, dtype = torch.Generator().manual_seed(STRUCTURED_SEED), DTYPES[precision.dtype]
        a, b = integer_operands(shape, dtype, gen)
        bias = torch.randint(-8, 9, (shape["N"],), generator=gen).to(dtype)
        return {"A": a.to(device), "B": b.to(device), "bias": bias.to(device)}

    def make_output(self, shape, precision, device):
        # Poisoned: an element the kernel never writes stays NaN and fails the gate.
        return torch.full((shape["M"], shape["N"]), float("nan"), dtype=DTYPES[precision.dtype], device=device)

    def reference(self, tensors, precision):
        a, b, bias = (tensors[k].to(torch.float64) for k in ("A", "B", "bias"))
        return torch.relu(a @ b + bias), a.abs() @ b.abs() + bias.abs() + SMALLEST_NORMAL[precision.name]

    # ---- CUDA glue ------------------------------------------------------------
    def axis_multiples(self, rung: str) -> dict[str, int]:
        # The TMA GEMM's (hgemm v8's): v2's, and v0's at FP16/BF16 (the edge sweep rounds up for every precision).
        if rung not in ("v0_unfused", "v2_fused_wgmma"):
            return {}
        problem, gemm_rung = _extended("v2_fused_wgmma")
        return problem.axis_multiples(gemm_rung)

    def cuda_check(self, params, shape, precision, rung="") -> str | None:
        """Each rung is refused what the GEMM it runs or extends refuses: v0's whole check (architecture,
        TMA, grid) through its GEMM rung; v1's and v2's through sgemm's and hgemm's own with their params."""
        if rung == "v0_unfused":
            from study.backends import cuda_launch

            problem, impl = bare(precision.name, "cuda")
            reason = cuda_launch.check(impl, problem, shape, precision)
            return f"its GEMM ({impl.op} {impl.rung}): {reason}" if reason else None
        problem, gemm_rung = _extended(rung)
        return problem.cuda_check(params, shape, precision, rung=gemm_rung)

    def cuda_defines(self, config, tensors, out, shape, precision):
        """The config, the storage macro and ALIGNED as the GEMM op the rung extends decides it (v1:
        sgemm's, v2: hgemm's); v0's pass: 1 when every row of C and the bias start on 16 bytes."""
        if "BM" in config:  # v1 or v2; v0's pass has no GEMM tile
            from study.registry import ladder

            op = BARE[precision.name][0]  # FP32: sgemm's glue (v1), FP16/BF16: hgemm's (v2), as v0's GEMM
            return ladder(op).problem.cuda_defines(config, _gemm_operands(tensors), out, shape, precision)
        aligned = (rows_vector_aligned(shape["N"], precision.element_bytes, (out, tensors["bias"]))
                   and out.stride(-2) % (16 // precision.element_bytes) == 0)  # C may be a padded view
        return {**super().cuda_defines(config, tensors, out, shape, precision), "ALIGNED": int(aligned)}

    def cuda_launch(self, rung, defines, tensors, out, shape):
        from study.backends.cuda import as_cupy

        _require_bias(tensors, shape)
        bias = tensors["bias"]
        if rung in FUSED_ON:  # the GEMM op's launch, the bias among its arguments
            problem, gemm_rung = _extended(rung)
            at = FUSED_ON[rung][2]
            if rung == "v2_fused_wgmma" and bias.data_ptr() % 4:
                raise Unsupported("v2 loads the bias in 4-byte pairs: its base must be 4-byte aligned")
            gemm = problem.cuda_launch(gemm_rung, defines, _gemm_operands(tensors), out, shape)
            args = (*gemm.args[:at], as_cupy(bias), *gemm.args[at:])
            return CudaLaunch(grid=gemm.grid, block=gemm.block, args=args, smem=gemm.smem, facts=gemm.facts,
                              keep=(*gemm.keep, bias))
        # v0: the bare GEMM into C (which one: C's precision), then the pass over C.
        precision = PRECISION_OF[str(out.dtype).removeprefix("torch.")]
        problem, impl = bare(precision.name, "cuda")
        operands = _gemm_operands(tensors)
        gemm_defines = problem.cuda_defines(dict(impl.params), operands, out, shape, precision)
        gemm = problem.cuda_launch(impl.rung, gemm_defines, operands, out, shape)
        blocks = sm_count(out) * defines["BLOCKS_PER_SM"]
        args = (as_cupy(out, padded_rows=True), as_cupy(bias), np.int32(shape["M"]), np.int32(shape["N"]),
                np.int32(out.stride(-2)))
        # The GEMM runs at its declared config in both autotune settings (only the pass is tuned): recorded.
        config = " ".join(f"{k}={v}" for k, v in impl.params.items())
        return CudaLaunch(grid=(blocks, 1, 1), block=(defines["THREADS"], 1, 1), args=args,
                          facts={"gemm": impl.name, "gemm_config": config,
                                 **{f"gemm_{k}": v for k, v in gemm.facts.items()},
                                 **({"gemm_smem_bytes": gemm.smem} if gemm.smem else {})},
                          before=(KernelCall(impl.target.path, impl.target.symbol, gemm_defines, gemm),))

    # ---- Triton glue ----------------------------------------------------------
    def triton_check(self, shape, precision, rung="") -> str | None:
        if rung == "v0_unfused":
            from study.backends import triton_launch

            problem, impl = bare(precision.name, "triton")
            reason = triton_launch.check(impl, problem, shape, precision)
            return f"its GEMM ({impl.op} {impl.rung} twin): {reason}" if reason else None
        if rung == "v2_fused_wgmma":
            problem, gemm_rung = _extended(rung)
            return problem.triton_check(shape, precision, rung=gemm_rung)
        return None

    def triton_launch(self, kernel, tensors, out, shape, config, precision):
        _require_bias(tensors, shape)
        a, b, bias = tensors["A"], tensors["B"], tensors["bias"]
        m, n, k = shape["M"], shape["N"], shape["K"]
        meta = dict(config)
        names = kernel.arg_names

        def grid(cfg):
            return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]))

        if "a_desc" in names:  # v2: hgemm v8's persistent twin with the epilogue
            from study.ops.hgemm import tensor_descriptors

            a_desc, b_desc = tensor_descriptors(a, b, shape, meta)
            sms = sm_count(a)

            def fn():
                kernel[lambda cfg: (min(grid(cfg)[0] * grid(cfg)[1], sms),)](
                    a_desc, b_desc, bias, out, m, n, k, out.stride(-2), out.stride(-1), sms, **meta)

            return fn
        if "a_ptr" in names:  # v1: sgemm v7's twin with the epilogue
            meta["INPUT_PRECISION"] = precision.triton_input_precision

            def fn():
                kernel[grid](a, b, bias, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                             out.stride(-2), out.stride(-1), **meta)

            return fn
        # v0: the bare GEMM twin at its mirrored config, then the pass over C (its row blocks on grid.y).
        smallest = meta.get("BM") or min(c["BM"] for c in tk.POINTWISE_SPACE)
        if cdiv(m, smallest) > GRID_Y:
            raise Unsupported(f"M={m} needs more than {GRID_Y} row blocks of BM={smallest} (grid.y limit)")
        problem, impl = bare(precision.name, "triton")
        gemm = problem.triton_launch(impl.target.kernel, _gemm_operands(tensors), out, shape, dict(impl.params),
                                     precision)

        def fn():
            gemm()
            kernel[grid](out, bias, m, n, out.stride(-2), **meta)

        return fn


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
    import torch._dynamo

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
             cuda="00_unfused.cu", triton=twin(tk.bias_relu, tk.V0_UNFUSED, tk.POINTWISE_SPACE, restore=("c_ptr",))),
        Rung("v1_fused_simt", "bias and ReLU on sgemm v7's FFMA accumulators before the store (FP32)",
             "v0's round trip of C and its second launch", cuda="01_fused_simt.cu",
             triton=twin(tk.gemm_bias_relu_grouped, tk.V1_FUSED_SIMT, tk.SIMT_SPACE, precisions=("fp32",))),
        Rung("v2_fused_wgmma", "bias and ReLU in hgemm v8's epilogue, as each 64 × 64 box of C is staged for its "
             "TMA store (FP16/BF16)", "v0's round trip of C and its second launch", cuda="02_fused_wgmma.cu",
             triton=twin(tk.gemm_bias_relu_persistent, tk.V2_FUSED_WGMMA, tk.WGMMA_SPACE, precisions=("fp16", "bf16"),
                         pre_hook=tk.descriptor_blocks)),
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
)

"""HGEMM: C = A·B with FP16 or BF16 storage and FP32 accumulation; A (M×K), B (K×N) and C (M×N)
row-major, C in the storage type.

The ladder is the seed's FP16 GEMM (docs/seeds.md §2, docs/ladders/hgemm.md): v0 naive with a
warp's threads along M → v1 coalesced (threads along N) → v2 32×32 shared-memory tiles → v3 an
8×8 register tile per thread (A kept k-contiguous in shared memory, with the bank conflicts that
brings) → v4 the conflicts removed by padding or an XOR swizzle (both in the space) → v5 cp.async
double buffering → v6 the tensor cores: mma.sync m16n8k16 fed by ldmatrix, FP32 accumulators, a
multi-stage cp.async pipeline → v7 Hopper's wgmma, its operands read from shared memory that TMA
fills (128-byte swizzle, an mbarrier per stage; sm_90a) → v8 warp specialisation (a TMA producer
warpgroup, two wgmma consumer warpgroups) in a persistent grid, C leaving by TMA stores. v0–v5
multiply on the FFMA pipe in FP32; their Triton twins from v2 on use ``tl.dot``, i.e. the tensor
cores. A rung is one line below.

Correctness gate. As SGEMM's, each element's error is divided by ``(|A|·|B|)_ij``, the scale of the
dot-product error bound, plus η, the storage type's smallest normal number (2^-14 for FP16; 2^-126
for BF16): an output below η is rounded with an absolute error of up to η·2^-11 (FP16 subnormals),
which against a tiny |A|·|B| alone (K = 1, two small factors) would fail any correct kernel.
With that, the one rounding every kernel must do — C to the storage type — costs at most 2^-11
(FP16, 4.9e-4) or 2^-8 (BF16, 3.9e-3) of the scale, reached where |C| ≈ |A|·|B| (small K);
FP32 accumulation adds ~1e-7. A kernel that accumulates in the storage type instead rounds the
running sum at every k, and those errors do not shrink against the scale as K grows.

Simulated on the CPU (``python tests/test_hgemm.py`` prints it; inputs as ``make_inputs`` draws
them, seeds 0–2, twelve shapes from 1×1×1 to 256×256×64, 64×64×4096 and 32×32×8192): FP32 accumulation then one rounding
reaches 4.87e-4 (FP16) and 3.86e-3 (BF16) at K ≤ 2, 2.6e-4 / 2.1e-3 at K = 64, 3.1e-5 / 2.4e-4 at
K = 4096; accumulating in FP16 (each fused multiply-add rounded to FP16) gives 7.6e-4 at K = 2 and
1.05e-3 to 1.8e-3 for every K from 8 to 8192, in BF16 5.9e-3 at K = 2 and 7.5e-3 to 1.6e-2 from
K = 8 on. The tolerances, 7e-4 (FP16) and 5.5e-3 (BF16), sit about 1.4× above the final rounding's
bound and 1.4–1.5× below accumulation in the storage type (K ≥ 8). What this gate cannot see: an
accumulator kept in the storage type but rounded only once per 16 k (``mma`` with an FP16
accumulator) errs by 2.2e-4–4.9e-4 (FP16) and 2.0e-3–3.8e-3 (BF16) in the same simulation, inside
the final rounding's own bound at K = 1, so no tolerance on this scale can both pass every correct
kernel and fail it (docs/ladders/hgemm.md, Correctness).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from study.backends import Unsupported
from study.backends.tma import alignment_reason, tma_reason
from study.ops.sgemm import CUBLASLT, torch_matmul
from study.precision import BF16_TENSOR, FP16_TENSOR
from study.problem import DTYPES, CudaLaunch, Problem, cdiv, offsets_reason, sm_count
from study.registry import Baseline, Rung, register, twin
from triton_kernels import hgemm as tk

TOLERANCE = {"fp16": 7e-4, "bf16": 5.5e-3}
UNIT_ROUNDOFF = {"fp16": 2.0**-11, "bf16": 2.0**-8}      # the largest relative error of one rounding
SMALLEST_NORMAL = {"fp16": 2.0**-14, "bf16": 2.0**-126}  # η: below it a storage type rounds absolutely
GRID_Y = 65535  # CUDA's limit on gridDim.y: the row blocks of a launch
VECTOR = 8      # halves in 16 bytes: the kernels' vector loads, cp.async copies and stores


@dataclasses.dataclass(frozen=True)
class TmaRung:
    """How a rung whose operands arrive by TMA (16-byte rows: K and N multiples of 8) is launched."""

    barriers: int      # 8-byte mbarriers a stage: full (v7), full and empty (v8)
    persistent: bool   # one block (program) per SM walks the tiles
    tma_store: bool    # C leaves through shared 64 × 64 boxes and TMA stores (its own tensor map)


TMA_RUNGS = {"v7_wgmma_tma": TmaRung(barriers=1, persistent=False, tma_store=False),
             "v8_warp_specialized": TmaRung(barriers=2, persistent=True, tma_store=True)}
TMA_BOX = 64  # halves in one 128-byte swizzled box row (cuda_kernels/hopper.cuh)


def shared_bytes(rung: str, defines) -> int:
    """Dynamic shared memory of a rung (0 for the rungs with static buffers); each kernel computes
    the same SMEM_BYTES and traps when given less.
    v6: STAGES stages of A rows padded to BK + 8 halves and B rows padded to BN + 8.
    v7, v8: STAGES stages of a BM × 64 box of A and BN/64 boxes of BK × 64 of B (2 bytes each), one
    (v7: full) or two (v8: full, empty) 8-byte mbarriers per stage, and 1024 bytes to align the base
    to the swizzle atom; v8 also two 64 × 64 boxes of C per consumer warpgroup (one per 64 rows)."""
    if rung in TMA_RUNGS:
        tma = TMA_RUNGS[rung]
        bm, bn, bk, stages = defines["BM"], defines["BN"], defines["BK"], defines["STAGES"]
        boxes = bm // 64 * 2 * TMA_BOX * TMA_BOX * 2 if tma.tma_store else 0
        return stages * (bm * TMA_BOX + bn * bk) * 2 + boxes + stages * 8 * tma.barriers + 1024
    if "WM" not in defines:
        return 0
    bm, bn, bk = defines["BM"], defines["BN"], defines["BK"]
    return defines["STAGES"] * (bm * (bk + 8) + bk * (bn + 8)) * 2


STRUCTURED_SEED = 2**31 - 1  # the fixed seed of the structured inputs


def uniform_operands(shape, dtype, gen):
    """A (M×K), then B (K×N), uniform in [−1, 1), drawn in FP32 from ``gen`` and rounded to ``dtype``
    (the GEMM ops that read A and B so: hgemm, gemm_bias_relu, which draws its bias after them)."""
    a = torch.rand(shape["M"], shape["K"], generator=gen, dtype=torch.float32) * 2 - 1
    b = torch.rand(shape["K"], shape["N"], generator=gen, dtype=torch.float32) * 2 - 1
    return a.to(dtype), b.to(dtype)


def operands_reason(shape) -> str | None:
    """Why A, B or C of an M×N×K product is too large for the Triton twins' 32-bit offsets, or None."""
    return offsets_reason("a matrix", max(shape["M"] * shape["K"], shape["K"] * shape["N"], shape["M"] * shape["N"]))


def integer_operands(shape, dtype, gen):
    """A, then B, of integers in [−2, 2] from ``gen``: exact in every storage type."""
    a = torch.randint(-2, 3, (shape["M"], shape["K"]), generator=gen).to(dtype)
    b = torch.randint(-2, 3, (shape["K"], shape["N"]), generator=gen).to(dtype)
    return a, b


class HGEMM(Problem):
    name = "hgemm"
    axes = ("M", "N", "K")
    bound = "compute"
    precisions = (FP16_TENSOR, BF16_TENSOR)
    default_precisions = ("fp16", "bf16")
    # The seed's 4096³, a size where the tensor-core library is at its best (8192³), and one that no
    # tile divides and whose N is no multiple of 8 (the CUDA rungs' scalar paths).
    default_shapes = ({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192},
                      {"M": 4000, "N": 4100, "K": 4200})
    # Tails past every tile with N odd (scalar paths); 16-byte rows with M short of a 128-row tile;
    # 16-byte rows with a tail in every dimension (the vector and cp.async paths' zero fill); K = 1.
    sanitize_shapes = ({"M": 67, "N": 131, "K": 40}, {"M": 64, "N": 128, "K": 64}, {"M": 72, "N": 136, "K": 40},
                       {"M": 3, "N": 5, "K": 1})
    tolerance = TOLERANCE
    paddable = True  # the CUDA rungs take lda, ldb, ldc; Triton and the libraries take strides
    error_metric = "max |out − ref| / (|A|·|B| + η), η the storage type's smallest normal number"

    def flops(self, shape) -> int:
        return 2 * shape["M"] * shape["N"] * shape["K"]

    def bytes(self, shape, precision) -> int:
        m, n, k = shape["M"], shape["N"], shape["K"]
        return precision.element_bytes * (m * k + k * n + m * n)

    def bytes_needed(self, shape, precision) -> int:
        m, n, k = shape["M"], shape["N"], shape["K"]
        # A, B and C in storage; float64 A, B, |A|, |B|; float64 reference, scale and the two
        # temporaries of the comparison.
        return precision.element_bytes * (m * k + k * n + m * n) + 8 * 2 * (m * k + k * n) + 8 * 4 * m * n

    def check(self, shape, precision) -> str | None:
        return super().check(shape, precision) or operands_reason(shape)

    # ---- data -----------------------------------------------------------------
    def make_inputs(self, shape, precision, seed, device):
        """Uniform in [−1, 1), drawn in FP32 and rounded to the storage type: the reference is the
        exact product of the values the kernels read."""
        a, b = uniform_operands(shape, DTYPES[precision.dtype], torch.Generator().manual_seed(seed))
        return {"A": a.to(device), "B": b.to(device)}

    def structured_inputs(self, shape, precision, device):
        """Small random integers in [−2, 2] (a fixed seed), exact in FP16 and BF16; every product
        and partial sum is exact in FP32, so the reference is the exact answer and a misplaced
        element is off by whole units (rounding C to the storage type is exact while |C| ≤ 2048 in
        FP16, 256 in BF16, and within the tolerance beyond)."""
        a, b = integer_operands(shape, DTYPES[precision.dtype], torch.Generator().manual_seed(STRUCTURED_SEED))
        return {"A": a.to(device), "B": b.to(device)}

    def make_output(self, shape, precision, device):
        # Poisoned: an element the kernel never writes stays NaN and fails the gate.
        return torch.full((shape["M"], shape["N"]), float("nan"), dtype=DTYPES[precision.dtype], device=device)

    def reference(self, tensors, precision):
        a = tensors["A"].to(torch.float64)
        b = tensors["B"].to(torch.float64)
        return a @ b, a.abs() @ b.abs() + SMALLEST_NORMAL[precision.name]

    # ---- CUDA glue ------------------------------------------------------------
    def axis_multiples(self, rung: str) -> dict[str, int]:
        return {"N": VECTOR, "K": VECTOR} if rung in TMA_RUNGS else {}

    def cuda_check(self, params, shape, precision, rung="") -> str | None:
        persistent = rung in TMA_RUNGS and TMA_RUNGS[rung].persistent  # a persistent grid is 1-D
        if not persistent and cdiv(shape["M"], params["BM"]) > GRID_Y:
            return f"M={shape['M']} needs more than {GRID_Y} row blocks of BM={params['BM']} (grid.y limit)"
        return tma_reason(self, shape, rung, "TMA reads")

    def cuda_defines(self, config, tensors, out, shape, precision):
        """The config, the storage macro and ALIGNED: 1 when every row of A, B and C starts on 16
        bytes (K, N and the leading dimensions multiples of 8 halves, the base addresses aligned),
        so that 16-byte loads, cp.async copies and stores may be used; 0 selects the scalar paths."""
        a, b = tensors["A"], tensors["B"]
        leading = (a.stride(-2), b.stride(-2), out.stride(-2))
        aligned = (shape["K"] % VECTOR == 0 and shape["N"] % VECTOR == 0 and all(ld % VECTOR == 0 for ld in leading)
                   and all(t.data_ptr() % 16 == 0 for t in (a, b, out)))
        return {**super().cuda_defines(config, tensors, out, shape, precision), "ALIGNED": int(aligned)}

    def cuda_launch(self, rung, defines, tensors, out, shape):
        from study.backends.cuda import as_cupy

        a, b = tensors["A"], tensors["B"]
        m, n, k = shape["M"], shape["N"], shape["K"]
        grid = (cdiv(n, defines["BN"]), cdiv(m, defines["BM"]), 1)
        block = (defines["THREADS"], 1, 1)
        if rung in TMA_RUNGS:
            from study.backends.tma import tensor_map

            if TMA_RUNGS[rung].persistent:  # v8
                return persistent_tma_launch(defines, a, b, out, (m, n, k), tiles=grid[0] * grid[1])
            reason = alignment_reason("C", out)
            if reason:  # v7 stores C in 4-byte pairs: it needs what A and B need
                raise Unsupported(reason)
            args = (tensor_map("A", a, TMA_BOX, defines["BM"]), tensor_map("B", b, TMA_BOX, defines["BK"]),
                    as_cupy(out, padded_rows=True), np.int32(m), np.int32(n), np.int32(k), np.int32(out.stride(-2)))
            return CudaLaunch(grid=grid, block=block, args=args, smem=shared_bytes(rung, defines), keep=(a, b, out))
        args = (as_cupy(a, padded_rows=True), as_cupy(b, padded_rows=True), as_cupy(out, padded_rows=True),
                np.int32(m), np.int32(n), np.int32(k),
                # leading dimensions: rows of A, B and C are this many elements apart (a padded view)
                np.int32(a.stride(-2)), np.int32(b.stride(-2)), np.int32(out.stride(-2)))
        return CudaLaunch(grid=grid, block=block, args=args, smem=shared_bytes(rung, defines))

    # ---- Triton glue ----------------------------------------------------------
    def triton_check(self, shape, precision, rung="") -> str | None:
        return tma_reason(self, shape, rung, "Triton's tensor descriptors (TMA) read")

    def triton_launch(self, kernel, tensors, out, shape, config, precision):
        a, b = tensors["A"], tensors["B"]
        m, n, k = shape["M"], shape["N"], shape["K"]
        meta = dict(config)

        def grid(cfg):
            return (cdiv(n, cfg["BN"]), cdiv(m, cfg["BM"]))

        if "a_desc" in kernel.arg_names:  # the v7 and v8 twins: TMA descriptors, their boxes the config's tiles
            a_desc, b_desc = tensor_descriptors(a, b, shape, meta)

            if "NUM_SMS" in kernel.arg_names:  # the v8 twin: persistent, one program per SM at most
                sms = sm_count(a)

                def fn():
                    kernel[lambda cfg: (min(grid(cfg)[0] * grid(cfg)[1], sms),)](
                        a_desc, b_desc, out, m, n, k, out.stride(-2), out.stride(-1), sms, **meta)
            else:
                def fn():
                    kernel[grid](a_desc, b_desc, out, m, n, k, out.stride(-2), out.stride(-1), **meta)

            return fn

        def fn():
            kernel[grid](a, b, out, m, n, k, a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1),
                         out.stride(-2), out.stride(-1), **meta)

        return fn


def persistent_tma_launch(defines, a, b, out, sizes, tiles: int) -> CudaLaunch:
    """hgemm v8's launch, and bgemm v1's (v8's body over a batch): tensor maps of A (boxes BM rows of
    64), B (BK rows of 64) and C (64 × 64), each a matrix or a batch of them (study/backends/tma.py),
    then ``sizes`` as int32 arguments; one block per SM walks the ``tiles`` (fewer if fewer tiles).
    C leaves by TMA stores, so it needs the 16-byte rows that A and B need."""
    from study.backends.tma import tensor_map

    reason = alignment_reason("C", out)
    if reason:
        raise Unsupported(reason)
    maps = (tensor_map("A", a, TMA_BOX, defines["BM"]), tensor_map("B", b, TMA_BOX, defines["BK"]),
            tensor_map("C", out, TMA_BOX, TMA_BOX))
    blocks = min(tiles, sm_count(a))
    return CudaLaunch(grid=(blocks, 1, 1), block=(defines["THREADS"], 1, 1), args=(*maps, *map(np.int32, sizes)),
                      smem=shared_bytes("v8_warp_specialized", defines), facts={"blocks": blocks}, keep=(a, b, out))


def tensor_descriptors(a, b, shape, meta):
    """Triton's host tensor descriptors of A (boxes BM × BK) and B (BK × BN) for the TMA twins, or of
    batches of them (bgemm's: 3-D tensors, the entry first, boxes of one entry, so that what lies past
    an entry's edges loads as zeros); a view whose rows TMA cannot read is refused
    (:class:`Unsupported`). Under ``triton.autotune`` (no config in ``meta``)
    triton_kernels.hgemm.descriptor_blocks sets the boxes per config."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    reason = alignment_reason("A", a) or alignment_reason("B", b)
    if reason:
        raise Unsupported(reason)
    m, n, k = shape["M"], shape["N"], shape["K"]
    lead = list(a.shape[:-2])  # [batch] or []
    one = [1] * len(lead)

    def strides(t):
        return [*t.stride()[:-1], 1]  # rows may be padded; elements contiguous

    a_desc = TensorDescriptor(a, [*lead, m, k], strides(a), [*one, meta.get("BM", 64), meta.get("BK", 64)])
    b_desc = TensorDescriptor(b, [*lead, k, n], strides(b), [*one, meta.get("BK", 64), meta.get("BN", 64)])
    return a_desc, b_desc


# cuBLAS through torch.matmul on FP16/BF16 operands (FP32 accumulation: the backend switches
# reduced-precision reductions off, study/backends/library.py) and cuBLASLt with COMPUTE_32F
# (study/backends/cublaslt.py): SGEMM's baselines, which take the storage type as it comes.
BASELINES = [Baseline("torch_matmul", "torch.matmul", "cuBLAS", "cublas", torch_matmul, "torch.matmul",
                      reference=True), CUBLASLT]

register(
    HGEMM(),
    rungs=[
        Rung("v0_naive", "one thread per output, a warp's threads along M",
             "— (the baseline: a warp's A loads and C stores are a row apart, uncoalesced)",
             cuda="00_naive.cu", triton=twin(tk.hgemm_naive, tk.V0_NAIVE, tk.NAIVE_SPACE)),
        Rung("v1_coalesced", "a warp's threads along N: 32 consecutive halves of a B row and of a C row",
             "uncoalesced global loads and stores", cuda="01_coalesced.cu",
             triton=twin(tk.hgemm_naive, tk.V1_COALESCED, tk.NAIVE_SPACE)),
        Rung("v2_smem_tiling", "32×32×32 tiles of A and B in shared memory, one output per thread",
             "re-reading every operand from global memory", cuda="02_smem_tiling.cu",
             triton=twin(tk.hgemm_tiled, tk.V2_SMEM_TILING, tk.SINGLE_STAGE_SPACE)),
        Rung("v3_register_tile", "128×128×32 tile, 8×8 FP32 outputs per thread, 16-byte loads; A k-contiguous in "
             "shared memory (4-way bank conflicts left on purpose)", "two shared loads and conversions per FFMA",
             cuda="03_register_tile.cu", triton=twin(tk.hgemm_tiled, tk.V3_REGISTER_TILE, tk.SINGLE_STAGE_SPACE)),
        Rung("v4_bank_conflicts", "A's shared rows padded (SWIZZLE=0) or XOR-swizzled (SWIZZLE=1)",
             "bank conflicts on A's fragment reads", cuda="04_bank_conflicts.cu",
             triton=twin(tk.hgemm_tiled, tk.V4_BANK_CONFLICTS, tk.SINGLE_STAGE_SPACE)),
        Rung("v5_double_buffer", "cp.async double buffering: load slice k+1 while computing slice k",
             "waiting at the barrier for each slice's loads", cuda="05_double_buffer.cu",
             triton=twin(tk.hgemm_tiled, tk.V5_DOUBLE_BUFFER, tk.TWO_STAGE_SPACE)),
        Rung("v6_mma_sync", "tensor cores: mma.sync m16n8k16 fed by ldmatrix(.trans), 3–4 cp.async stages, "
             "grouped block order", "the FFMA pipe (FP32 arithmetic) of v0–v5", cuda="06_mma_sync.cu",
             triton=twin(tk.hgemm_grouped, tk.V6_MMA_SYNC, tk.MMA_SPACE)),
        Rung("v7_wgmma_tma", "Hopper wgmma m64nBNk16 from shared memory that TMA fills (128-byte swizzle), an mbarrier "
             "per stage, 3–6 stages", "v6's ldmatrix fragment loads and legacy HMMA issue", cuda="07_wgmma_tma.cu",
             triton=twin(tk.hgemm_descriptors, tk.V7_WGMMA_TMA, tk.WGMMA_SPACE, pre_hook=tk.descriptor_blocks)),
        Rung("v8_warp_specialized", "a producer warpgroup issues TMA, two consumer warpgroups (setmaxnreg 40/232) issue "
             "wgmma, full/empty mbarriers per stage; persistent: one block per SM walks the tiles; C through shared "
             "memory and TMA stores", "v7's block barrier every K slice, its epilogue bubble and half-sector C stores",
             cuda="08_warp_specialized.cu", triton=twin(tk.hgemm_persistent, tk.V8_WARP_SPECIALIZED, tk.PERSISTENT_SPACE,
                                                         pre_hook=tk.descriptor_blocks)),
    ],
    baselines=BASELINES,
)

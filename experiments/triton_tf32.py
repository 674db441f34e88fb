"""Why is a Triton TF32 GEMM far behind cuBLAS, and what closes the gap? (issue: the cuBLAS study)

Times the SGEMM ladder's ``tl.dot`` kernel (``triton_kernels/sgemm.py: sgemm_tiled``, the v2–v4
twins) in TF32 at 4096³ over the ladder's own configs (one or two stages, BK 16/32, as the CUDA
rungs they mirror) and over deeper pipelines and wider tiles, next to cuBLAS TF32
(``torch.matmul`` with the TF32 switch on). For each config it prints what the compiler made of
it (with B row-major as the ladder stores it, and K-major) — warpgroup MMA (``wgmma``) or ``mma.sync`` in the PTX, shared memory, spills — whether the
result passes the study's TF32 gate, and the median of 100 cold samples (L2 flushed by a 2 × L2
read, as ``study`` does). docs/ladders/sgemm.md quotes one run.

    python experiments/triton_tf32.py [M N K] [--grouped-only]     (repository root, on a GPU)
"""

import itertools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from study.backends import backend  # noqa: E402
from study.catalog import implementation, ladder  # noqa: E402

SAMPLES = 100
# (BM, BN, BK, warps, stages): the ladder's twins' points first, then what a tensor-core kernel wants.
LADDER = [(128, 128, 16, 8, 1), (128, 128, 16, 8, 2), (128, 128, 32, 8, 2), (128, 256, 16, 8, 2)]
DEEPER = [(128, 128, 32, 8, 3), (128, 128, 32, 8, 4), (128, 256, 32, 8, 3), (256, 128, 32, 8, 3),
          (128, 128, 64, 8, 3), (128, 256, 64, 8, 2), (128, 256, 32, 4, 3), (64, 256, 32, 4, 4),
          (128, 128, 32, 4, 4), (256, 128, 64, 8, 2)]


GROUPED = [(128, 256, 32, 8, 3), (128, 256, 32, 8, 4), (256, 128, 32, 8, 3), (256, 128, 32, 8, 4),
           (128, 128, 32, 8, 3), (128, 128, 32, 8, 4)]


@triton.jit
def grouped_tf32(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                 SWAP: tl.constexpr):
    """sgemm_tiled in TF32 with its tiles visited GROUP_M row panels at a time, so that the
    blocks resident together share B's column panels in L2 (4096² FP32 B is 64 MB: more than
    the H200's 60 MB of L2, re-read from HBM by every wave when tiles run row by row)."""
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP_M * tiles_n)
    first_m = group * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * tiles_n)) % rows
    pid_n = (pid % (GROUP_M * tiles_n)) // rows
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BN, BM) if SWAP else (BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_tile = tl.load(a, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0.0)
        b_tile = tl.load(b, mask=(rk[:, None] < K - k0) & (rn[None, :] < N), other=0.0)
        if SWAP:  # Cᵀ = Bᵀ·Aᵀ: B's tile becomes the left operand, which wgmma may take from registers
            acc = tl.dot(tl.trans(b_tile), tl.trans(a_tile), acc, input_precision="tf32")
        else:
            acc = tl.dot(a_tile, b_tile, acc, input_precision="tf32")
        a += BK * stride_ak
        b += BK * stride_bk
    if SWAP:
        acc = tl.trans(acc)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def timed(fn, flush):
    for _ in range(5):
        flush()
        fn()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(SAMPLES)]
    for start, end in pairs:
        flush()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs)


def setup(precision_name: str):
    """The SGEMM problem at the command line's M N K (default 4096³) and ``precision_name``: inputs,
    reference, an L2 flush (a 2 × L2 read, as ``study`` does) and cuBLAS timed at that precision.
    Returns (problem, shape, precision, tensors, ref, scale, flops, flush, cuBLAS ms, cuBLAS output)."""
    args = [v for v in sys.argv[1:] if not v.startswith("--")]
    m, n, k = (int(v) for v in args[:3]) if len(args) >= 3 else (4096, 4096, 4096)
    problem = ladder("sgemm").problem
    shape, precision = problem.parse_shape(f"{m}x{n}x{k}"), problem.precision(precision_name)
    tensors = problem.make_inputs(shape, precision, 0, "cuda")
    ref, scale = problem.reference(tensors, precision)
    buf = torch.zeros(2 * torch.cuda.get_device_properties(0).L2_cache_size // 8, dtype=torch.int64, device="cuda")
    flush = lambda: buf.sum()  # noqa: E731
    lib = backend("cublas").prepare(implementation("sgemm/torch_matmul/cublas"), problem, tensors, shape, precision)
    with lib.context():
        base = timed(lib.fn, flush)
    return problem, shape, precision, tensors, ref, scale, 2 * m * n * k, flush, base, lib.out


def main() -> None:
    grouped_only = "--grouped-only" in sys.argv
    problem, shape, tf32, tensors, ref, scale, flops, flush, base, _ = setup("tf32")
    m, n, k = shape["M"], shape["N"], shape["K"]
    print(f"cuBLAS TF32 {m}x{n}x{k}: {base:.4f} ms, {flops / base / 1e9:,.0f} TFLOPS", flush=True)

    twin = implementation("sgemm/v4_double_buffer/triton")
    # B as the ladder stores it (row-major: N contiguous) and K-major (column-major, strides (1, K)):
    # TF32 wgmma reads B from shared memory only K-major (PTX ISA, wgmma operand layouts).
    layouts = {"B row": tensors, "B col": problem.with_layout(tensors, {"B": "col"})}
    sets = () if grouped_only else (("ladder", LADDER), ("deeper", DEEPER))
    for (group, points), (layout, operands) in itertools.product(sets, layouts.items()):
        for bm, bn, bk, warps, stages in points:
            config = dict(BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages)
            label = f"{layout} {group:6s} {bm:3d}x{bn:3d}x{bk:2d} w{warps} s{stages}"
            try:
                launch = backend("triton").prepare(twin, problem, operands, shape, tf32, config=config)
                with launch.context():
                    launch.fn()
                    torch.cuda.synchronize()
                    verdict = problem.verify(launch.out, ref, scale, tf32)
                    ms = timed(launch.fn, flush)
            except Exception as exc:  # an out-of-resources config is a finding, not a crash
                print(f"{label}  failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}", flush=True)
                continue
            asm = _last_compiled(twin.target.kernel)
            print(f"{label}  {'wgmma' if 'wgmma.mma_async' in asm.get('ptx', '') else 'mma.sync' if 'mma.sync' in asm.get('ptx', '') else 'no-mma'}"
                  f"  smem {asm.get('shared', 0) // 1024:3d} KB spills {asm.get('spills', '?')}"
                  f"  gate {'ok' if verdict.ok else 'WRONG'}  {ms:.4f} ms  {flops / ms / 1e9:7,.0f} TFLOPS"
                  f"  {base / ms:.2f}x cuBLAS", flush=True)

    for (layout, operands), swap, (bm, bn, bk, warps, stages) in itertools.product(layouts.items(), (False, True),
                                                                                  GROUPED):
        a, b = operands["A"], operands["B"]
        out = torch.full((m, n), float("nan"), device="cuda")
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)

        def fn():
            grouped_tf32[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               out.stride(0), out.stride(1), BM=bm, BN=bn, BK=bk, GROUP_M=8, SWAP=swap,
                               num_warps=warps, num_stages=stages)

        label = f"{layout} grouped{' swapped' if swap else ''} {bm:3d}x{bn:3d}x{bk:2d} w{warps} s{stages}"
        try:
            fn()
            torch.cuda.synchronize()
            verdict = problem.verify(out, ref, scale, tf32)
            ms = timed(fn, flush)
        except Exception as exc:
            print(f"{label}  failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}", flush=True)
            continue
        print(f"{label}  gate {'ok' if verdict.ok else 'WRONG'}  {ms:.4f} ms  {flops / ms / 1e9:7,.0f} TFLOPS"
              f"  {base / ms:.2f}x cuBLAS", flush=True)


def _last_compiled(kernel) -> dict:
    """PTX, shared bytes and spills of the variant of ``kernel`` compiled last (Triton 3.x keeps
    them per device in ``device_caches``; an unknown layout of that cache gives an empty dict)."""
    newest = None
    try:
        for per_device in kernel.device_caches.values():
            for compiled in per_device[0].values():
                newest = compiled
    except (AttributeError, IndexError, TypeError):
        return {}
    if newest is None:
        return {}
    return {"ptx": newest.asm.get("ptx", ""), "shared": newest.metadata.shared,
            "spills": getattr(newest, "n_spills", "?")}

if __name__ == "__main__":
    main()

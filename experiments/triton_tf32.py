"""Why is a Triton TF32 GEMM far behind cuBLAS, and what closes the gap? (issue: the cuBLAS study)

Times the SGEMM ladder's ``tl.dot`` kernel (``triton_kernels/sgemm.py: sgemm_tiled``, the v2–v4
twins) in TF32 at 4096³ over the ladder's own configs (one or two stages, BK 16/32, as the CUDA
rungs they mirror) and over deeper pipelines and wider tiles, next to cuBLAS TF32
(``torch.matmul`` with the TF32 switch on). For each config it prints what the compiler made of
it (with B row-major as the ladder stores it, and K-major) — warpgroup MMA (``wgmma``) or ``mma.sync`` in the PTX, shared memory, spills — whether the
result passes the study's TF32 gate, and the median of 100 cold samples (L2 flushed by a 2 × L2
read, as ``study`` does). docs/ladders/sgemm.md quotes one run.

    python experiments/triton_tf32.py [M N K]      (repository root, on a GPU)
"""

import itertools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from study.backends import backend  # noqa: E402
from study.registry import implementation, ladder  # noqa: E402

SAMPLES = 100
# (BM, BN, BK, warps, stages): the ladder's twins' points first, then what a tensor-core kernel wants.
LADDER = [(128, 128, 16, 8, 1), (128, 128, 16, 8, 2), (128, 128, 32, 8, 2), (128, 256, 16, 8, 2)]
DEEPER = [(128, 128, 32, 8, 3), (128, 128, 32, 8, 4), (128, 256, 32, 8, 3), (256, 128, 32, 8, 3),
          (128, 128, 64, 8, 3), (128, 256, 64, 8, 2), (128, 256, 32, 4, 3), (64, 256, 32, 4, 4),
          (128, 128, 32, 4, 4), (256, 128, 64, 8, 2)]


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


def main() -> None:
    m, n, k = (int(v) for v in sys.argv[1:4]) if len(sys.argv) >= 4 else (4096, 4096, 4096)
    problem = ladder("sgemm").problem
    shape, tf32 = problem.parse_shape(f"{m}x{n}x{k}"), problem.precision("tf32")
    tensors = problem.make_inputs(shape, tf32, 0, "cuda")
    ref, scale = problem.reference(tensors, tf32)
    flops = 2 * m * n * k
    buf = torch.zeros(2 * torch.cuda.get_device_properties(0).L2_cache_size // 8, dtype=torch.int64, device="cuda")
    flush = lambda: buf.sum()  # noqa: E731

    lib = backend("cublas").prepare(implementation("sgemm/torch_matmul/cublas"), problem, tensors, shape, tf32)
    with lib.context():
        base = timed(lib.fn, flush)
    print(f"cuBLAS TF32 {m}x{n}x{k}: {base:.4f} ms, {flops / base / 1e9:,.0f} TFLOPS", flush=True)

    twin = implementation("sgemm/v4_double_buffer/triton")
    # B as the ladder stores it (row-major: N contiguous) and K-major (column-major, strides (1, K)):
    # TF32 wgmma reads B from shared memory only K-major (PTX ISA, wgmma operand layouts).
    layouts = {"B row": tensors, "B col": problem.with_layout(tensors, {"B": "col"})}
    for (group, points), (layout, operands) in itertools.product((("ladder", LADDER), ("deeper", DEEPER)),
                                                                  layouts.items()):
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

"""Why is Triton's 3xTF32 (``input_precision="tf32x3"``) slower than FP32 FFMA here? (issue: SGEMM past cuBLAS)

Times the v8 twin (``triton_kernels/sgemm.py: sgemm_3xtf32``) over its space at one shape, with
B row-major as the problem stores it and K-major (column-major, strides (1, K)), next to cuBLAS
FP32. For each config: which MMA instruction the PTX holds (``wgmma`` or ``mma.sync``) and how
many, shared memory, spills, the FP32 gate's error (max |C − ref| / (|A|·|B|)) and the median of
100 cold samples (L2 flushed as ``study`` does). The TF32 experiment (experiments/triton_tf32.py)
found TF32 wgmma fast only with B K-major; this one asks whether the three products of tf32x3
follow the same rule, and what the split costs. docs/ladders/sgemm.md quotes one run.

    python experiments/triton_tf32x3.py [M N K]        (repository root, on a GPU)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from experiments.triton_tf32 import _last_compiled, setup, timed  # noqa: E402
from study.backends import backend  # noqa: E402
from study.catalog import implementation  # noqa: E402


def main() -> None:
    problem, shape, fp32, tensors, ref, scale, flops, flush, base, lib_out = setup("fp32")
    m, n, k = shape["M"], shape["N"], shape["K"]
    lib_err = problem.verify(lib_out, ref, scale, fp32).err
    print(f"cuBLAS FP32 {m}x{n}x{k}: {base:.4f} ms, {flops / base / 1e9:,.1f} TFLOPS, gate error {lib_err:.2e}",
          flush=True)

    twin = implementation("sgemm/v8_3xtf32/triton")
    layouts = {"B row": tensors, "B col": problem.with_layout(tensors, {"B": "col"})}
    for layout, operands in layouts.items():
        for config in twin.space:
            label = (f"{layout} {config['BM']:3d}x{config['BN']:3d}x{config['BK']:2d} w{config['num_warps']} "
                     f"s{config['num_stages']}")
            try:
                launch = backend("triton").prepare(twin, problem, operands, shape, fp32, config=dict(config))
                with launch.context():
                    launch.fn()
                    torch.cuda.synchronize()
                    verdict = problem.verify(launch.out, ref, scale, fp32)
                    ms = timed(launch.fn, flush)
            except Exception as exc:  # an out-of-resources config is a finding, not a crash
                print(f"{label}  failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}", flush=True)
                continue
            asm = _last_compiled(twin.target.kernel)
            ptx = asm.get("ptx", "")
            mma = (f"wgmma x{ptx.count('wgmma.mma_async')}" if "wgmma.mma_async" in ptx
                   else f"mma.sync x{ptx.count('mma.sync')}" if "mma.sync" in ptx else "no-mma")
            print(f"{label}  {mma:14s} smem {asm.get('shared', 0) // 1024:3d} KB spills {asm.get('spills', '?')}"
                  f"  gate {'ok' if verdict.ok else 'WRONG'} error {verdict.err:.2e}  {ms:.4f} ms"
                  f"  {flops / ms / 1e9:7,.1f} TFLOPS  {base / ms:.2f}x cuBLAS FP32", flush=True)


if __name__ == "__main__":
    main()

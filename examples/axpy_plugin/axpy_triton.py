"""The Triton twin of axpy v0 (docs/extending.md): one program per BLOCK elements, the same
arithmetic (FP32, one rounding to the storage type)."""

import triton
import triton.language as tl


@triton.jit
def axpy_blocks(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (alpha * x + y).to(out_ptr.dtype.element_ty), mask=mask)


V0_BLOCKS = {"BLOCK": 1024, "num_warps": 8, "num_stages": 1}  # 256 threads × 4 elements, as the CUDA rung's block
BLOCKS_SPACE = [V0_BLOCKS, {"BLOCK": 512, "num_warps": 4, "num_stages": 1},
                {"BLOCK": 2048, "num_warps": 8, "num_stages": 1}]

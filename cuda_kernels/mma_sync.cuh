// The warp-level tensor-core product (sm_80 and later) that hgemm v6 issues and the mma.sync
// ceiling loop times (cuda_kernels/microbench/mma_sync_loop.cu): one HMMA.16816.F32 per warp,
// FP32 accumulators, FP16 operands or BF16 with STORAGE_BF16. Fragments as the PTX ISA lays them
// out for m16n8k16 (docs/ladders/hgemm.md, v6): A four .b32 registers of two halves, B two, C/D four
// floats. Inline PTX only.
#pragma once

// d += A (16 × 16, row) · B (16 × 8, col)
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if defined(STORAGE_BF16)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
#else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
#endif
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

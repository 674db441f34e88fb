// A deliberately faulting kernel for the crash-isolation tests; never part of a ladder.
// It writes 4 TiB past C: an illegal address, which poisons the CUDA context of the
// process that launched it. Loaded through STUDY_PLUGINS=faulty_op (tests/faulty_op.py).
// config: BM=1 BN=32 THREADS=32
#include "common.cuh"

extern "C" __global__ void fault_v0_illegal_address(const float* A, const float* B, float* C,
                                                    int M, int N, int K, int lda, int ldb, int ldc) {
    C[(size_t)1 << 40] = 1.0f;
}

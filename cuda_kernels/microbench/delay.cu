// Lead work for every batch of samples: the GPU busy-waits NS nanoseconds (%globaltimer)
// while the host queues the batch. Without it, the first sample after a synchronisation
// includes the host's launch latency: the GPU finishes the untimed flush and records the
// start event before the kernel is queued. On the H200 that first sample was the outlier of
// every batch (about 4 % of all samples, up to +80 %). nvbench solves the same problem with a
// kernel that blocks on a host flag. Not a rung.
// config: THREADS=32
#include "common.cuh"

extern "C" __global__ void delay_kernel(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

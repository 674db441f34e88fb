// Thread-block clusters (sm_90): a block's rank in its cluster and the cluster-wide barrier, shared by
// the kernels that run as clusters (softmax v6 and v7, hgemm v11). Facts and sources: docs/toolchain.md 6.7.
#pragma once

// This block's rank in its cluster (the rank mapa and a multicast mask name it by).
__device__ __forceinline__ int cluster_rank() {
    unsigned r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return (int)r;
}

// Every thread of every block of the cluster arrives (release: its earlier memory accesses are
// ordered before the arrival) ...
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}

// ... and waits until all have (acquire: what they wrote before arriving is visible after).
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }

// The float at the same shared-memory offset as `p` in block `rank` of the cluster (DSMEM: mapa turns
// the offset into that block's window). Needs common.cuh (smem_addr).
__device__ __forceinline__ float cluster_load(const float* p, int rank) {
    unsigned remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr(p)), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
    return v;
}

// Tangled by `kernelbook tangle` from book/src/labs/lab1-bandwidth-ceiling.md:317 (sha256 aaa5c543327ce77f). Edit the book, not this file.
// A persistent grid: each block keeps STAGES chunks of `chunk` bytes in flight through a ring of
// shared-memory buffers, one mbarrier each, refilling a buffer as soon as the engine has read it
// back out. Block b moves chunks b, b + gridDim.x, b + 2 gridDim.x, ...
#ifndef STAGES
#define STAGES 8
#endif

__device__ __forceinline__ unsigned shared_address(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void load_chunk(unsigned buffer, const char *from, int chunk,
                                           unsigned bar) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(chunk)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1], %2, [%3];" ::"r"(buffer), "l"(from), "r"(chunk), "r"(bar)
                 : "memory");
}

extern "C" __global__ void copy_bulk_ring(char *__restrict__ dst, const char *__restrict__ src,
                                          long long bytes, int chunk) {
    extern __shared__ __align__(128) char ring[];
    __shared__ unsigned long long landed[STAGES];  // one mbarrier per buffer
    if (threadIdx.x != 0) return;
    long long chunks = bytes / chunk;
    long long mine = blockIdx.x < chunks ? (chunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    auto at = [&](long long k) { return (blockIdx.x + k * gridDim.x) * (long long)chunk; };
    for (int s = 0; s < STAGES; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(&landed[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int s = 0; s < STAGES && s < mine; ++s)
        load_chunk(shared_address(ring + s * chunk), src + at(s), chunk,
                   shared_address(&landed[s]));
    for (long long k = 0; k < mine; ++k) {
        int s = k % STAGES;
        unsigned parity = (k / STAGES) & 1;  // the buffer's k / STAGES-th use
        asm volatile("{\n .reg .pred done;\n WAIT_%=:\n"
                     " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                     " @!done bra WAIT_%=;\n}" ::"r"(shared_address(&landed[s])), "r"(parity)
                     : "memory");
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     ::"l"(dst + at(k)), "r"(shared_address(ring + s * chunk)), "r"(chunk)
                     : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        // Refill the buffer written out one step ago, once the engine has read it.
        long long next = k - 1 + STAGES;
        if (k >= 1 && next < mine) {
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            int r = (k - 1) % STAGES;
            load_chunk(shared_address(ring + r * chunk), src + at(next), chunk,
                       shared_address(&landed[r]));
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

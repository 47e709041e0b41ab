// Tangled by `kernelbook tangle` from book/src/labs/lab1-bandwidth-ceiling.md:91 (sha256 d67461febccad5be). Edit the book, not this file.
// One thread per block: the copy engine moves `chunk` bytes into shared memory, in `piece`-byte
// requests that complete on one mbarrier, then writes them back out.
__device__ __forceinline__ unsigned shared_address(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void copy_bulk(char *__restrict__ dst, const char *__restrict__ src,
                                     int chunk, int piece) {
    extern __shared__ __align__(128) char stage[];
    __shared__ unsigned long long landed;  // the mbarrier
    if (threadIdx.x != 0) return;
    const char *from = src + (size_t)blockIdx.x * chunk;
    char *to = dst + (size_t)blockIdx.x * chunk;
    unsigned bar = shared_address(&landed);
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    // One arrival that expects `chunk` bytes: the phase completes when they have all landed.
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(chunk)
                 : "memory");
    for (int at = 0; at < chunk; at += piece)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1], %2, [%3];"
                     ::"r"(shared_address(stage + at)), "l"(from + at), "r"(piece), "r"(bar)
                     : "memory");
    asm volatile("{\n .reg .pred done;\n WAIT_%=:\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
                 " @!done bra WAIT_%=;\n}" ::"r"(bar) : "memory");
    for (int at = 0; at < chunk; at += piece)
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     ::"l"(to + at), "r"(shared_address(stage + at)), "r"(piece) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    // The block's shared memory must outlive the engine's reads of it.
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

// Tangled by `kernelbook tangle` from book/src/labs/hierarchy-on-your-gpu.md:52 (sha256 e7e074f4a1fff529). Edit the book, not this file.
__device__ unsigned long long chase_slot(unsigned long long k, unsigned long long nodes) {
    unsigned long long mask = nodes - 1;
    int bits = __popcll(mask);
    unsigned long long x = k & mask;
    x = (x * 0x9E3779B1ull) & mask;
    x ^= x >> max(bits / 2, 1);
    x = (x * 0x85EBCA6Bull) & mask;
    x ^= x >> max(bits / 3, 1);
    return x & mask;
}

// Slot k of the lap points at slot k + 1; slots sit `spacing` words apart.
extern "C" __global__ void chase_init(unsigned *chain, unsigned nodes, unsigned spacing) {
    unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nodes) {
        unsigned long long from = chase_slot(k, nodes);
        unsigned long long to = chase_slot((k + 1) & (nodes - 1), nodes);
        chain[from * spacing] = (unsigned)(to * spacing);
    }
}

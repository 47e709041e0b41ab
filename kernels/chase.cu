// Tangled by `kernelbook tangle` from book/src/labs/hierarchy-on-your-gpu.md:16 (sha256 d49b4b59ef007757). Edit the book, not this file.
// The order the chain visits its slots: an odd multiply and an xor-shift, twice, which
// permutes 0..nodes-1 (nodes a power of two) and scatters neighbours. The runner's CPU
// reference computes the same order to check where the chase ends.
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

// One thread follows the chain: `warm` untimed steps (a whole lap, for a chain that can fit
// in a cache), then `steps` timed loads.
extern "C" __global__ void chase(unsigned *out, unsigned long long *cycles,
                                 const unsigned *chain, unsigned warm, int steps) {
    unsigned p = 0;                            // slot 0 is where every lap starts
    for (unsigned i = 0; i < warm; ++i) {
        p = chain[p];                          // warm-up: leaves the chain in the caches it fits
    }
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i) {
        p = chain[p];                          // the address of load i+1 is the value of load i
    }
    long long t1 = clock64();
    out[0] = p;                                // checked against the CPU; keeps the loop alive
    cycles[0] = (unsigned long long)(t1 - t0);
}

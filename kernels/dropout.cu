// Tangled by `kernelbook tangle` from book/src/practice/llm-connection.md:102 (sha256 1b2341a6781906b1). Edit the book, not this file.
// Stateless dropout hash (murmur3's 32-bit finaliser of the index, mixed with the seed).
__device__ unsigned dropout_hash(unsigned seed, unsigned i) {
    unsigned h = i ^ (seed * 0x9E3779B9u);
    h ^= h >> 16; h *= 0x85EBCA6Bu;
    h ^= h >> 13; h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// Unfused, stage 3 of 3: drop an element when its hash is below `threshold`, scale the rest.
extern "C" __global__ void dropout(float *__restrict__ y, const float *__restrict__ x, int n,
                                   unsigned threshold, unsigned seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float scale = 4294967296.0f / (4294967296.0f - (float)threshold);
        y[i] = dropout_hash(seed, i) < threshold ? 0.0f : x[i] * scale;
    }
}

// Tangled by `kernelbook tangle` from book/src/practice/llm-connection.md:123 (sha256 32201d3d2c57d29c). Edit the book, not this file.
__device__ unsigned dropout_hash(unsigned seed, unsigned i) {
    unsigned h = i ^ (seed * 0x9E3779B9u);
    h ^= h >> 16; h *= 0x85EBCA6Bu;
    h ^= h >> 13; h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// Fused: one launch, one read and one write per element; v never leaves a register.
extern "C" __global__ void bias_gelu_dropout(float *__restrict__ y, const float *__restrict__ x,
                                             const float *__restrict__ bias, int n, int cols,
                                             unsigned threshold, unsigned seed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] + bias[i % cols];
        v = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
        float scale = 4294967296.0f / (4294967296.0f - (float)threshold);
        y[i] = dropout_hash(seed, i) < threshold ? 0.0f : v * scale;
    }
}

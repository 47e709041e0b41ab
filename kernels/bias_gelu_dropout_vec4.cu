// Tangled by `kernelbook tangle` from book/src/practice/llm-connection.md:194 (sha256 fb63a99976fa364e). Edit the book, not this file.
__device__ unsigned dropout_hash(unsigned seed, unsigned i) {
    unsigned h = i ^ (seed * 0x9E3779B9u);
    h ^= h >> 16; h *= 0x85EBCA6Bu;
    h ^= h >> 13; h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

// GELU then dropout of element i, exactly as bias_gelu_dropout computes it.
__device__ __forceinline__ float gelu_dropout(float v, unsigned i, unsigned threshold,
                                              unsigned seed, float scale) {
    v = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    return dropout_hash(seed, i) < threshold ? 0.0f : v * scale;
}

// Fused, four neighbouring elements per thread: one 16-byte load of x and of the bias, one
// 16-byte store of y. n and cols must be multiples of 4.
extern "C" __global__ void bias_gelu_dropout_vec4(float *__restrict__ y,
                                                  const float *__restrict__ x,
                                                  const float *__restrict__ bias, int n,
                                                  int cols, unsigned threshold, unsigned seed) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;  // this thread's float4
    if (4 * q < n) {
        float4 v = reinterpret_cast<const float4 *>(x)[q];
        float4 b = reinterpret_cast<const float4 *>(bias)[q % (cols / 4)];
        float scale = 4294967296.0f / (4294967296.0f - (float)threshold);
        unsigned i = 4u * q;
        float4 out = make_float4(gelu_dropout(v.x + b.x, i + 0, threshold, seed, scale),
                                 gelu_dropout(v.y + b.y, i + 1, threshold, seed, scale),
                                 gelu_dropout(v.z + b.z, i + 2, threshold, seed, scale),
                                 gelu_dropout(v.w + b.w, i + 3, threshold, seed, scale));
        reinterpret_cast<float4 *>(y)[q] = out;
    }
}

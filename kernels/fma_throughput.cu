// Tangled by `kernelbook tangle` from book/src/practice/memory-wall.md:227 (sha256 7abb38ec7baf29a4). Edit the book, not this file.
#define CHAINS 8

extern "C" __global__ void fma_throughput(float *__restrict__ out,
                                          const float *__restrict__ in, int n, int rounds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i];
    float v[CHAINS];
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) v[k] = x + (float)k;
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int k = 0; k < CHAINS; ++k) v[k] = fmaf(v[k], 0.9999f, 0.0001f);   // 2 FLOPs
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < CHAINS; ++k) s += v[k];
    out[i] = s;
}

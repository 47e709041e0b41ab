// Tangled by `kernelbook tangle` from book/src/labs/lab1-bandwidth-ceiling.md:65 (sha256 12760cbde4ff6d5c). Edit the book, not this file.
extern "C" __global__ void copy_float4_ilp4(float4 *__restrict__ dst,
                                            const float4 *__restrict__ src, int n4) {
    int stride = gridDim.x * blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n4; i += stride) dst[i] = src[i];
}

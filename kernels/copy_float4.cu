// Tangled by `kernelbook tangle` from book/src/labs/lab1-bandwidth-ceiling.md:36 (sha256 7768ae68b1311ec8). Edit the book, not this file.
extern "C" __global__ void copy_float4(float4 *__restrict__ dst,
                                       const float4 *__restrict__ src, int n4) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        dst[i] = src[i];
    }
}

// Tangled by `kernelbook tangle` from book/src/hierarchy/coalescing.md:273 (sha256 207be08895bade7c). Edit the book, not this file.
extern "C" __global__ void copy_strided(float *__restrict__ out,
                                        const float *__restrict__ in, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[(size_t)i * stride];
    }
}

// Tangled by `kernelbook tangle` from book/src/hierarchy/coalescing.md:278 (sha256 28d4a660893bf61a). Edit the book, not this file.
extern "C" __global__ void copy_strided(float *__restrict__ out,
                                        const float *__restrict__ in, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[(size_t)i * stride];
    }
}

// Tangled by `kernelbook tangle` from book/src/hierarchy/coalescing.md:250 (sha256 d65fddaf5eb5d17d). Edit the book, not this file.
extern "C" __global__ void copy_strided(float *__restrict__ out,
                                        const float *__restrict__ in, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[(size_t)i * stride];
    }
}

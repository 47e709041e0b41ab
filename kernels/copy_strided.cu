// Tangled by `kernelbook tangle` from book/src/hierarchy/coalescing.md:283 (sha256 ca7948562b70e7e1). Edit the book, not this file.
extern "C" __global__ void copy_strided(float *__restrict__ out,
                                        const float *__restrict__ in, int n, int stride,
                                        int len_mask) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[((size_t)i * stride) & (size_t)len_mask];
    }
}

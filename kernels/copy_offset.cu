// Tangled by `kernelbook tangle` from book/src/labs/layout.md:17 (sha256 d0d9b4519b4db8a8). Edit the book, not this file.
// dst[i] = src[i + off]: the reads start 4 * off bytes past an aligned address, the writes do
// not move. A grid-stride loop, as copy_scalar.
extern "C" __global__ void copy_offset(float *__restrict__ dst, const float *__restrict__ src,
                                       int n, int off) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        dst[i] = src[i + off];
    }
}

// Tangled by `kernelbook tangle` from book/src/labs/reduction.md:143 (sha256 0ea09e487b9eb545). Edit the book, not this file.
// Rung 2: the same pairs as rung 1, added by the block's first threads: no divergence within a
// warp, but lanes 2 * stride words apart in shared memory.
extern "C" __global__ void reduce_strided_index(float *__restrict__ partials,
                                                const float *__restrict__ in) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[(size_t)blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        unsigned index = 2 * stride * tid;
        if (index < blockDim.x) s[index] += s[index + stride];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = s[0];
}

// Tangled by `kernelbook tangle` from book/src/labs/reduction.md:113 (sha256 3f04b68f449850b2). Edit the book, not this file.
// Rung 1: a block of 256 sums its 256 floats in shared memory; at each level the threads whose
// index is a multiple of 2 * stride add the element stride above theirs.
extern "C" __global__ void reduce_interleaved(float *__restrict__ partials,
                                              const float *__restrict__ in) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[(size_t)blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = s[0];
}

// Tangled by `kernelbook tangle` from book/src/labs/reduction.md:176 (sha256 bebc4587779e9b3d). Edit the book, not this file.
// Rung 3: at each level the first `stride` threads add the upper half of the remaining values
// onto the lower half: packed threads, consecutive words, no bank conflicts.
extern "C" __global__ void reduce_sequential(float *__restrict__ partials,
                                             const float *__restrict__ in) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[(size_t)blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = s[0];
}

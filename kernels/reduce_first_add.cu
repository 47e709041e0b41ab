// Tangled by `kernelbook tangle` from book/src/labs/reduction.md:201 (sha256 c3f477be30ef7f43). Edit the book, not this file.
// Rung 4: each thread loads two floats 256 apart and adds them before the tree; a block covers
// 512 floats.
extern "C" __global__ void reduce_first_add(float *__restrict__ partials,
                                            const float *__restrict__ in) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (blockDim.x * 2) + tid;
    s[tid] = in[i] + in[i + blockDim.x];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partials[blockIdx.x] = s[0];
}

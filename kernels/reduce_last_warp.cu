// Tangled by `kernelbook tangle` from book/src/labs/reduction.md:229 (sha256 9fcde8fd71a376c4). Edit the book, not this file.
// Rung 5: rung 4 with the tree stopped at 2 * WARP values; the first warp adds the last two
// halves and finishes with shuffles, without barriers.
#if defined(__HIPCC_RTC__) || defined(__AMDGCN__)
#define WARP 64  // an AMD CDNA wavefront; HIP's shuffles take no lane mask
#define SHFL_DOWN(v, d) __shfl_down((v), (d))
#else
#define WARP 32
#define SHFL_DOWN(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#endif

extern "C" __global__ void reduce_last_warp(float *__restrict__ partials,
                                            const float *__restrict__ in) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (blockDim.x * 2) + tid;
    s[tid] = in[i] + in[i + blockDim.x];
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > WARP; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < WARP) {
        float v = s[tid] + s[tid + WARP];
        for (int offset = WARP / 2; offset > 0; offset >>= 1) v += SHFL_DOWN(v, offset);
        if (tid == 0) partials[blockIdx.x] = v;
    }
}

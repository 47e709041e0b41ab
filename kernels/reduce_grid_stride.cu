// Tangled by `kernelbook tangle` from book/src/labs/reduction.md:270 (sha256 07d150dcbab1e7f4). Edit the book, not this file.
// Rung 6: a fixed grid; every thread sums float4s strided by the whole grid, each block combines
// its threads' sums with shuffles and adds them into total[0] with one atomicAdd.
#if defined(__HIPCC_RTC__) || defined(__AMDGCN__)
#define WARP 64  // an AMD CDNA wavefront; HIP's shuffles take no lane mask
#define SHFL_DOWN(v, d) __shfl_down((v), (d))
#else
#define WARP 32
#define SHFL_DOWN(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#endif

extern "C" __global__ void reduce_grid_stride(float *total, const float4 *__restrict__ in,
                                              int n4) {
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
        float4 q = in[i];
        v += (q.x + q.y) + (q.z + q.w);
    }
    for (int offset = WARP / 2; offset > 0; offset >>= 1) v += SHFL_DOWN(v, offset);
    __shared__ float warp_sums[1024 / WARP];
    unsigned lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / WARP ? warp_sums[lane] : 0.0f;
        for (int offset = WARP / 2; offset > 0; offset >>= 1) v += SHFL_DOWN(v, offset);
        if (lane == 0) atomicAdd(total, v);
    }
}

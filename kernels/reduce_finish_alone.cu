// Tangled by `kernelbook tangle` from book/src/labs/reduction.md:74 (sha256 c6c74d2cd426d081). Edit the book, not this file.
// reduce_finish under a name of its own, for the table's row that times it alone.
#if defined(__HIPCC_RTC__) || defined(__AMDGCN__)
#define WARP 64  // an AMD CDNA wavefront; HIP's shuffles take no lane mask
#define SHFL_DOWN(v, d) __shfl_down((v), (d))
#else
#define WARP 32
#define SHFL_DOWN(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#endif

extern "C" __global__ void reduce_finish_alone(float *__restrict__ total,
                                               const float *__restrict__ partials, int count) {
    const float4 *p4 = reinterpret_cast<const float4 *>(partials);
    float v = 0.0f;
#pragma unroll 8
    for (int i = threadIdx.x; i < count / 4; i += blockDim.x) {
        float4 q = p4[i];
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
        if (lane == 0) total[0] = v;
    }
}

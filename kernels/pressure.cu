// Tangled by `kernelbook tangle` from book/src/exercises/register-pressure.md:24 (sha256 ba2392c6f97efbaf). Edit the book, not this file.
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1        // set with -DMIN_BLOCKS=N
#endif
#define K 64                // live accumulators per thread

extern "C" __global__ void __launch_bounds__(256, MIN_BLOCKS)
pressure(float *__restrict__ out, const float *__restrict__ in, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[K];                               // fully unrolled below: K registers, if they fit
    float x = in[i];
#pragma unroll
    for (int k = 0; k < K; ++k) acc[k] = x + (float)k;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < K; ++k)             // every accumulator stays live across iterations
            acc[k] = fmaf(acc[k], 0.999f, 0.001f * acc[(k + 7) % K]);
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) s += acc[k];
    out[i] = s;
}

// Tangled by `kernelbook tangle` from book/src/exercises/drill-coalesce.md:18 (sha256 1d58681f1be71fde). Edit the book, not this file.
#define PER_THREAD 32

// Starter: each thread scales its own contiguous run of PER_THREAD elements.
// Launch: 256 threads per block, ceil(n / (256 * PER_THREAD)) blocks.
extern "C" __global__ void scale_strided(float *__restrict__ out,
                                 const float *__restrict__ in,
                                 float alpha, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int first = t * PER_THREAD;          // lane t starts PER_THREAD floats after lane t - 1
    for (int k = 0; k < PER_THREAD; ++k) {
        int i = first + k;
        if (i < n) out[i] = alpha * in[i];
    }
}

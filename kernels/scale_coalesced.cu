// Tangled by `kernelbook tangle` from book/src/exercises/drill-coalesce.md:84 (sha256 6177f06fbc22873b). Edit the book, not this file.
#define PER_THREAD 32

// Fixed: at every step the block's threads take blockDim.x consecutive elements,
// so lane t and lane t + 1 are 4 bytes apart. Same launch, same block ranges.
extern "C" __global__ void scale_coalesced(float *__restrict__ out,
                                 const float *__restrict__ in,
                                 float alpha, int n) {
    int first = blockIdx.x * blockDim.x * PER_THREAD + threadIdx.x;
    for (int k = 0; k < PER_THREAD; ++k) {
        int i = first + k * blockDim.x;
        if (i < n) out[i] = alpha * in[i];
    }
}

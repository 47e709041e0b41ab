// Tangled by `kernelbook tangle` from book/src/hierarchy/shared-memory.md:404 (sha256 11d0385e7fe02af5). Edit the book, not this file.
// Lane t of every warp reads shared words t * stride + 32 j (j = 0..31), reps / 32 rounds over:
// every read has the conflict degree gcd(stride, 32). reps must be a multiple of 32, and
// 31 * stride + 992 below WORDS (stride up to 100).
#define WORDS 4096

extern "C" __global__ void smem_stride_reads(unsigned *__restrict__ out,
                                             const unsigned *__restrict__ words, int stride,
                                             int reps) {
    __shared__ unsigned s[WORDS];
    for (int i = threadIdx.x; i < WORDS; i += blockDim.x) s[i] = words[i];
    __syncthreads();
    // volatile: each read below stays a shared load; none is hoisted out of the loop or merged.
    const volatile unsigned *p = s + (threadIdx.x % 32) * stride;
    unsigned even = 0, odd = 0;  // two sums, so that the adds do not wait on each other
    for (int r = 0; r < reps; r += 32) {
#pragma unroll
        for (int j = 0; j < 32; j += 2) {
            even += p[32 * j];
            odd += p[32 * (j + 1)];
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = even + odd;
}

// Tangled by `kernelbook tangle` from book/src/hierarchy/shared-memory.md:497 (sha256 e191325bb530da75). Edit the book, not this file.
// Lane t of every warp reads the WIDTH-word element t * stride + (32 / WIDTH) j (j = 0..31) of a
// shared array, reps / 32 rounds over. WIDTH is 2 (8-byte loads) or 4 (16-byte loads); reps must
// be a multiple of 32, and 31 * stride + 31 * 32 / WIDTH below 4096 / WIDTH.
#ifndef WIDTH
#define WIDTH 4
#endif
#define WORDS 4096
#define ROW (32 / WIDTH)
#if WIDTH == 4
typedef uint4 element;
__device__ __forceinline__ unsigned total(element v) { return (v.x + v.y) + (v.z + v.w); }
#else
typedef uint2 element;
__device__ __forceinline__ unsigned total(element v) { return v.x + v.y; }
#endif

extern "C" __global__ void smem_wide_stride_reads(unsigned *__restrict__ out,
                                                  const unsigned *__restrict__ words, int stride,
                                                  int reps) {
    __shared__ __align__(16) unsigned s[WORDS];
    for (int i = threadIdx.x; i < WORDS; i += blockDim.x) s[i] = words[i];
    __syncthreads();
    const element *p = reinterpret_cast<const element *>(s) + (threadIdx.x % 32) * stride;
    unsigned even = 0, odd = 0;
    for (int r = 0; r < reps; r += 32) {
        asm volatile("" ::: "memory");  // shared memory may have changed: load every element again
#pragma unroll
        for (int j = 0; j < 32; j += 2) {
            even += total(p[ROW * j]);
            odd += total(p[ROW * (j + 1)]);
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = even + odd;
}

// Tangled by `kernelbook tangle` from book/src/exercises/drill-halo.md:72 (sha256 218800c54689d005). Edit the book, not this file.
#define TILE 256

// Fixed: threads 0 and 1 also load the element before the block and the one after it (0
// beyond the ends of the array), before the barrier.
extern "C" __global__ void blur_halo(float *__restrict__ out,
                                     const float *__restrict__ in, int n) {
    __shared__ float tile[TILE + 2];
    int first = blockIdx.x * TILE;
    int i = first + threadIdx.x;
    tile[threadIdx.x + 1] = in[i];
    if (threadIdx.x == 0) tile[0] = first > 0 ? in[first - 1] : 0.0f;
    if (threadIdx.x == 1) tile[TILE + 1] = first + TILE < n ? in[first + TILE] : 0.0f;
    __syncthreads();
    out[i] = (tile[threadIdx.x] + tile[threadIdx.x + 1] + tile[threadIdx.x + 2]) * (1.0f / 3.0f);
}

// Tangled by `kernelbook tangle` from book/src/exercises/drill-halo.md:11 (sha256 18be6030bb87e748). Edit the book, not this file.
#define TILE 256

// Starter: each block copies its TILE elements into the middle of a TILE + 2 tile, waits for
// the whole tile, then each thread averages three slots of it.
// Launch: TILE threads per block, n / TILE blocks.
extern "C" __global__ void blur_no_halo(float *__restrict__ out,
                                        const float *__restrict__ in, int n) {
    __shared__ float tile[TILE + 2];
    int i = blockIdx.x * TILE + threadIdx.x;
    tile[threadIdx.x + 1] = in[i];
    __syncthreads();
    out[i] = (tile[threadIdx.x] + tile[threadIdx.x + 1] + tile[threadIdx.x + 2]) * (1.0f / 3.0f);
}

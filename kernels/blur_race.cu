// Tangled by `kernelbook tangle` from book/src/exercises/drill-race.md:13 (sha256 267fb5c9a375619a). Edit the book, not this file.
#define TILE 256

// Starter: each block copies its TILE elements and one neighbour on each side into shared
// memory, then each thread averages three slots of the tile.
// Launch: TILE threads per block, n / TILE blocks.
extern "C" __global__ void blur_race(float *__restrict__ out,
                                     const float *__restrict__ in, int n) {
    __shared__ float tile[TILE + 2];
    int i = blockIdx.x * TILE + threadIdx.x;
    tile[threadIdx.x + 1] = in[i];
    if (threadIdx.x == 0) tile[0] = i > 0 ? in[i - 1] : 0.0f;
    if (threadIdx.x == TILE - 1) tile[TILE + 1] = i + 1 < n ? in[i + 1] : 0.0f;
    out[i] = (tile[threadIdx.x] + tile[threadIdx.x + 1] + tile[threadIdx.x + 2]) * (1.0f / 3.0f);
}

// Tangled by `kernelbook tangle` from book/src/labs/lab2-transpose.md:108 (sha256 76b89e06d17d2546). Edit the book, not this file.
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_tiled(float *__restrict__ out,
                                           const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < n && y + j < n) {
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
        }
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;  // the transposed tile's origin
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < n && y + j < n) {
            out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
        }
    }
}

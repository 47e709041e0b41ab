// Tangled by `kernelbook tangle` from book/src/exercises/stretch-tile-sweep.md:21 (sha256 42c0817823fd531e). Edit the book, not this file.
// Padded transpose, TILE x TILE tiles, blocks of TILE x BLOCK_ROWS threads.
// Build with e.g. -DTILE=16 -DBLOCK_ROWS=8. Grid: (n / TILE, n / TILE); n a multiple of TILE.
#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

extern "C" __global__ void transpose_tile(float *__restrict__ out,
                                          const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;   // origin of the transposed tile
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Tangled by `kernelbook tangle` from book/src/labs/lab2-transpose.md:357 (sha256 3fd21a826e2126c0). Edit the book, not this file.
#define TILE 64
// Rows of the tile each pass of a block covers: 16 rows of 16 threads is four float4 per thread;
// a lab variant may set 32 (two) or 64 (one float4 per thread, 1024 threads).
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 16
#endif

extern "C" __global__ void transpose_vec4_64(float *__restrict__ out,
                                             const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + 4 * threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        float4 v = *reinterpret_cast<const float4 *>(&in[(size_t)(y + j) * n + x]);
        float *row = tile[threadIdx.y + j];
        row[4 * threadIdx.x + 0] = v.x;
        row[4 * threadIdx.x + 1] = v.y;
        row[4 * threadIdx.x + 2] = v.z;
        row[4 * threadIdx.x + 3] = v.w;
    }
    __syncthreads();
    x = blockIdx.y * TILE + 4 * threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int c = threadIdx.y + j;
        float4 v = make_float4(tile[4 * threadIdx.x + 0][c], tile[4 * threadIdx.x + 1][c],
                               tile[4 * threadIdx.x + 2][c], tile[4 * threadIdx.x + 3][c]);
        *reinterpret_cast<float4 *>(&out[(size_t)(y + j) * n + x]) = v;
    }
}

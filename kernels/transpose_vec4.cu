// Tangled by `kernelbook tangle` from book/src/labs/lab2-transpose.md:231 (sha256 46ba62bc74dd4df3). Edit the book, not this file.
#define TILE 32
#define BLOCK_ROWS 16

extern "C" __global__ void transpose_vec4(float *__restrict__ out,
                                          const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE + 1];
    // threadIdx.x picks a group of 4 columns, threadIdx.y a row: blockDim = (TILE / 4, BLOCK_ROWS)
    int x = blockIdx.x * TILE + 4 * threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x + 3 < n && y + j < n) {
            float4 v = *reinterpret_cast<const float4 *>(&in[(y + j) * n + x]);
            float *row = tile[threadIdx.y + j];
            row[4 * threadIdx.x + 0] = v.x;
            row[4 * threadIdx.x + 1] = v.y;
            row[4 * threadIdx.x + 2] = v.z;
            row[4 * threadIdx.x + 3] = v.w;
        }
    }
    __syncthreads();
    x = blockIdx.y * TILE + 4 * threadIdx.x;  // the transposed tile's origin
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x + 3 < n && y + j < n) {
            int c = threadIdx.y + j;
            float4 v = make_float4(tile[4 * threadIdx.x + 0][c], tile[4 * threadIdx.x + 1][c],
                                   tile[4 * threadIdx.x + 2][c], tile[4 * threadIdx.x + 3][c]);
            *reinterpret_cast<float4 *>(&out[(y + j) * n + x]) = v;
        }
    }
}

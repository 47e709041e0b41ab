// Tangled by `kernelbook tangle` from book/src/labs/lab2-transpose.md:178 (sha256 bca212db826bc2c0). Edit the book, not this file.
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_swizzled(float *__restrict__ out,
                                              const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE];  // no pad: word c of row r is stored at column c ^ r
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int r = threadIdx.y + j;
        if (x < n && y + j < n) {
            tile[r][threadIdx.x ^ r] = in[(y + j) * n + x];  // a row: 32 banks, permuted
        }
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int c = threadIdx.y + j;
        if (x < n && y + j < n) {
            out[(y + j) * n + x] = tile[threadIdx.x][c ^ threadIdx.x];  // a column: banks c ^ t
        }
    }
}

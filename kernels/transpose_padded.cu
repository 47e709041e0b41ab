// Tangled by `kernelbook tangle` from book/src/labs/lab2-transpose.md:139 (sha256 03d2078569d81328). Edit the book, not this file.
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_padded(float *__restrict__ out,
                                            const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE + 1];  // 33-word rows: column c, row r is in bank (r + c) % 32
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < n && y + j < n) {
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
        }
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < n && y + j < n) {
            out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
        }
    }
}

// Tangled by `kernelbook tangle` from book/src/labs/lab2-transpose.md:79 (sha256 55f998c01a618dcd). Edit the book, not this file.
#define TILE 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_naive(float *__restrict__ out,
                                           const float *__restrict__ in, int n) {
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        if (x < n && y + j < n) {
            out[x * n + (y + j)] = in[(y + j) * n + x];
        }
    }
}

// Tangled by `kernelbook tangle` from book/src/exercises/drill-bank-conflict.md:32 (sha256 837bbdf991027ba6). Edit the book, not this file.
#define TILE 32
#define BLOCK_ROWS 8

// Starter: grid (n / 32, n / 32), block (32, 8).
// out has n / 32 rows of n floats: out[t * n + c] = sum of in[32t .. 32t + 31][c].
extern "C" __global__ void column_sums(float *__restrict__ out,
                                       const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE];   // tile[c][r]: column c of the strip, stored as a row
    int c  = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int r = threadIdx.y + j;
        tile[threadIdx.x][r] = in[(size_t)(r0 + r) * n + c];   // coalesced global read
    }
    __syncthreads();
    if (threadIdx.y == 0) {              // one warp does the sums
        float s = 0.0f;
        for (int r = 0; r < TILE; ++r) {
            s += tile[threadIdx.x][r];
        }
        out[(size_t)blockIdx.y * n + c] = s;
    }
}

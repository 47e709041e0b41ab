// Tangled by `kernelbook tangle` from book/src/exercises/drill-bank-conflict.md:188 (sha256 89dffd0b99dad64d). Edit the book, not this file.
#define TILE 32
#define BLOCK_ROWS 8

// Fix A: the starter with 33-word rows; bank (x + r) mod 32 in the store and in the load.
extern "C" __global__ void column_sums_padded(float *__restrict__ out,
                                              const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int c  = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int r = threadIdx.y + j;
        tile[threadIdx.x][r] = in[(size_t)(r0 + r) * n + c];
    }
    __syncthreads();
    if (threadIdx.y == 0) {
        float s = 0.0f;
        for (int r = 0; r < TILE; ++r) {
            s += tile[threadIdx.x][r];
        }
        out[(size_t)blockIdx.y * n + c] = s;
    }
}
